"""Progress of long stages: what library code reports, and the throughput and ETA computed from it.

Library code takes a :class:`Progress` (default :data:`NO_PROGRESS`, which does nothing) and reports each long
loop as a stage, per chunk (never per row, never inside a numba kernel)::

    with progress.stage("reorder: permute features", total=num_rows, unit="rows") as bar:
        for start in range(0, num_rows, chunk):
            ...
            bar.advance(rows_in_chunk)

A renderer (the CLI's terminal bar or its log lines, :mod:`graphtier.cli.common.progress`) subclasses :class:`Progress`
and overrides :meth:`Progress.started`, :meth:`Progress.advanced` and :meth:`Progress.finished`. The rate, the ETA
and their spelling are computed here, once, for every renderer.
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any, Callable

from graphtier._compile_notice import compile_seconds, compile_text

Clock = Callable[[], float]
"""Seconds from an arbitrary origin (``time.monotonic``; tests pass a fake clock)."""


class Stage:
    """One stage of work being reported: a description, its done and total counts in ``unit``, and its clock.

    Use it as a context manager (``with progress.stage(...) as bar``); :meth:`advance` adds done work.
    ``fields`` holds extra text a renderer shows after the rate (e.g. ``loss``)."""

    __slots__ = ("description", "total", "unit", "done", "fields", "started_at", "compiled_at_start", "_progress")

    def __init__(self, progress: Progress, description: str, total: int | None, unit: str) -> None:
        self._progress = progress
        self.description = description
        self.total = total
        self.unit = unit
        self.done = 0
        self.fields: dict[str, Any] = {}
        self.started_at = progress.clock()
        self.compiled_at_start = compile_seconds()

    def __enter__(self) -> Stage:
        self.started_at = self._progress.clock()
        self.compiled_at_start = compile_seconds()
        self._progress.started(self)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._progress.finished(self, completed=kind is None)

    def advance(self, amount: int = 1, **fields: Any) -> None:
        """Add ``amount`` units of done work (and set ``fields``, e.g. ``loss=0.5``)."""
        self.done += amount
        if fields:
            self.fields.update(fields)
        self._progress.advanced(self)

    def elapsed(self) -> float:
        """Seconds since the stage started."""
        return max(self._progress.clock() - self.started_at, 0.0)

    def rate(self) -> float | None:
        """Units done per second so far, or None before any work is done."""
        elapsed = self.elapsed()
        return self.done / elapsed if self.done > 0 and elapsed > 0 else None

    def eta(self) -> float | None:
        """Seconds left at the rate so far (remaining / rate), or None without a total or a rate."""
        rate = self.rate()
        if self.total is None or rate is None:
            return None
        return max(self.total - self.done, 0) / rate

    def line(self) -> str:
        """The stage in one line: ``reorder: permute features 12.0M/40.0M rows (30%) 1.9M rows/s, ETA 0:00:15``."""
        count = count_text(self.done)
        if self.total is not None:
            count += f"/{count_text(self.total)} {self.unit}"
            if self.total > 0:
                count += f" ({100 * self.done // self.total}%)"
        else:
            count += f" {self.unit}"
        eta = self.eta()
        return f"{self.description} {count} {self.rate_text()}, ETA {duration_text(eta) if eta is not None else '?'}"

    def final_line(self) -> str:
        """The finished stage in one line: ``reorder: permute features 40.0M rows in 0:00:21 (1.9M rows/s)``; the
        time and rate of a stage that compiled kernels say so (``..., including 17.2 s of first-run kernel
        compilation``)."""
        compiled = compile_text(compile_seconds() - self.compiled_at_start)
        return f"{self.description} {count_text(self.done)} {self.unit} in {duration_text(self.elapsed())} " \
            f"({self.rate_text()}{', ' + compiled if compiled else ''})"  # fmt: skip

    def rate_text(self) -> str:
        """The rate with its unit, ``1.9M rows/s`` (``? rows/s`` before any work is done)."""
        rate = self.rate()
        return f"{count_text(rate) if rate is not None else '?'} {self.unit}/s"

    def fields_text(self) -> str:
        """The extra fields, ``loss 0.4321`` (floats with 4 decimals)."""
        return " ".join(f"{name} {value:.4f}" if isinstance(value, float) else f"{name} {value}"
                        for name, value in self.fields.items())  # fmt: skip


class Progress:
    """Where library code reports its stages. This base class shows nothing and costs next to nothing;
    renderers override :meth:`started`, :meth:`advanced` and :meth:`finished`.

    Args:
        clock: seconds from an arbitrary origin (default ``time.monotonic``).
    """

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock

    def stage(self, description: str, total: int | None = None, unit: str = "items") -> Stage:
        """A stage of ``total`` units (None: unknown) named ``description``, ``"reorder: permute features"``."""
        return Stage(self, description, None if total is None else int(total), unit)

    def started(self, stage: Stage) -> None:
        """Called when ``stage`` starts."""

    def advanced(self, stage: Stage) -> None:
        """Called after each :meth:`Stage.advance`."""

    def finished(self, stage: Stage, completed: bool) -> None:
        """Called when ``stage`` ends: ``completed`` False when it ended by an exception."""


NO_PROGRESS = Progress()
"""The default of every library function: reports nothing."""


def count_text(value: float) -> str:
    """``value`` in 4 significant characters: 950, 12.0K, 1.9M, 3.2G (and 0.50 for rates below 1)."""
    if value < 1 and value != 0:
        return f"{value:.2f}"
    for scale, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if value >= scale:
            return f"{value / scale:.1f}{suffix}"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def duration_text(seconds: float) -> str:
    """``seconds`` as H:MM:SS, ``0:00:15``."""
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
