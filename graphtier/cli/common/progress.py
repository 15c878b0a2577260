"""The two displays of a stage's progress (:mod:`graphtier._progress`): a transient rich bar when stderr is a
terminal, periodic one-line updates (every ``GRAPHTIER_PROGRESS_INTERVAL`` seconds, default 10) in a log."""

from __future__ import annotations

import os
import time
from typing import Any, Callable

import click

from graphtier._progress import NO_PROGRESS, Clock, Progress, Stage, count_text, duration_text
from graphtier.errors import OptionError

INTERVAL_VARIABLE = "GRAPHTIER_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 10.0


class LogProgress(Progress):
    """A stage's line every ``interval`` seconds at most (0: after every advance), each through ``write`` (a line
    without its newline). A stage that printed a line, or ran ``interval`` seconds or longer, ends with a final
    line and its total time; quicker stages print nothing."""

    def __init__(self, write: Callable[[str], None], interval: float, clock: Clock = time.monotonic) -> None:
        super().__init__(clock)
        self.write = write
        self.interval = interval
        self._last_line: dict[Stage, float] = {}  # stage -> when it last printed (its start before the first line)
        self._printed: set[Stage] = set()

    def started(self, stage: Stage) -> None:
        self._last_line[stage] = stage.started_at

    def advanced(self, stage: Stage) -> None:
        now = self.clock()
        if now - self._last_line.get(stage, stage.started_at) >= self.interval:
            self._last_line[stage] = now
            self._printed.add(stage)
            fields = stage.fields_text()
            self.write(f"graphtier: {stage.line()}" + (f", {fields}" if fields else ""))

    def finished(self, stage: Stage, completed: bool) -> None:
        self._last_line.pop(stage, None)
        printed = stage in self._printed
        self._printed.discard(stage)
        if completed and (printed or stage.elapsed() >= self.interval):
            self.write(f"graphtier: {stage.final_line()}")


class BarProgress(Progress):
    """A transient rich bar per open stage on ``console``: description, bar, done/total, rate with its unit,
    elapsed time, ETA and the stage's fields (one live display, shared by nested stages)."""

    def __init__(self, console: Any, clock: Clock = time.monotonic) -> None:
        from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        super().__init__(clock)
        self._display = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[count]}"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA {task.fields[eta]}"),
            TextColumn("{task.fields[extra]}"),
            console=console,
            transient=True,
        )
        self._tasks: dict[Stage, Any] = {}

    def started(self, stage: Stage) -> None:
        if not self._tasks:
            self._display.start()
        self._tasks[stage] = self._display.add_task(stage.description, total=stage.total, **self._fields(stage))

    def advanced(self, stage: Stage) -> None:
        task = self._tasks.get(stage)
        if task is not None:
            self._display.update(task, completed=stage.done, **self._fields(stage))

    def finished(self, stage: Stage, completed: bool) -> None:
        task = self._tasks.pop(stage, None)
        if task is not None:
            self._display.remove_task(task)
        if not self._tasks:
            self._display.stop()

    @staticmethod
    def _fields(stage: Stage) -> dict[str, str]:
        total = f"/{count_text(stage.total)}" if stage.total is not None else ""
        eta = stage.eta()
        return {
            "count": f"{count_text(stage.done)}{total} {stage.unit}",
            "rate": stage.rate_text(),
            "eta": duration_text(eta) if eta is not None else "?",
            "extra": stage.fields_text(),
        }


def log_interval() -> float | None:
    """Seconds between log lines: ``GRAPHTIER_PROGRESS_INTERVAL`` (a number >= 0), default 10; None for ``off``
    (no progress at all, bar or lines)."""
    text = os.environ.get(INTERVAL_VARIABLE)
    if text is None or not text.strip():
        return DEFAULT_INTERVAL
    if text.strip().lower() == "off":
        return None
    try:
        interval = float(text)
    except ValueError:
        interval = -1.0
    if not interval >= 0:  # also rejects nan
        raise OptionError(f"{INTERVAL_VARIABLE} expected a number of seconds >= 0 or off, found {text!r}")
    return interval


def cli_progress(quiet: bool = False) -> Progress:
    """The progress display of a command: nothing with ``--quiet``, a rich bar when stderr is a terminal, else a
    line on stderr every :func:`log_interval` seconds per stage (nothing when that is ``off``)."""
    interval = log_interval()
    if quiet or interval is None:
        return NO_PROGRESS
    from rich.console import Console

    console = Console(stderr=True)
    if console.is_terminal:
        return BarProgress(console)
    return LogProgress(lambda line: click.echo(line, err=True), interval)
