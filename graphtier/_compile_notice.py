"""One line when graphtier's numba kernels are compiled (the first run after installing), and the time it took.

Every kernel is ``@numba.njit(cache=True)``: the first run compiles them (about 20 s on 2 cores) and
writes numba's cache next to the modules, later runs load it. Without a notice the first run looks hung, and its
throughput figures would silently include the compilation: :func:`compile_seconds` is the time spent compiling
graphtier's kernels so far in this process, which a stage's final line (:mod:`graphtier._progress`) and an epoch's
line subtract from nothing but name (``including 17 s of first-run kernel compilation``).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any

NOTICE = "graphtier: compiling kernels, first run only (about 20 s)..."

_installed = False
_shown = False
_stream: Any = None  # where the notice goes (None: sys.stderr as it is when the notice is printed)
_timing = False
_lock = threading.Lock()
_depth = 0  # nested compile events (a kernel compiling the njit functions it calls) count once
_started = 0.0
_seconds = 0.0


def _is_ours(ev: Any) -> bool:
    dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
    module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
    return module.startswith("graphtier")


def compile_seconds() -> float:
    """Seconds this process spent compiling graphtier's numba kernels (0 when :func:`track_compile_time` was
    never called, or every kernel came from numba's cache)."""
    with _lock:
        return _seconds + (time.perf_counter() - _started if _depth else 0.0)


def track_compile_time() -> None:
    """Count the time of graphtier kernel compilations from now on (:func:`compile_seconds`). Idempotent.

    One numba listener per process does both jobs: it times graphtier's compilations and, once
    :func:`install_compile_notice` was called, prints :data:`NOTICE` at the first of them."""
    global _timing
    if _timing:
        return
    from numba.core import event

    class _Listener(event.Listener):
        def on_start(self, ev: Any) -> None:
            global _depth, _started, _shown
            if not _is_ours(ev):
                return
            with _lock:
                if _depth == 0:
                    _started = time.perf_counter()
                _depth += 1
            if _installed and not _shown:
                _shown = True
                try:  # stderr as it is now (a caller may have replaced it since); a notice never fails a compile
                    print(NOTICE, file=_stream if _stream is not None else sys.stderr, flush=True)
                except (OSError, ValueError):  # a closed or broken stream
                    pass

        def on_end(self, ev: Any) -> None:
            global _depth, _seconds
            if _is_ours(ev):
                with _lock:
                    _depth = max(_depth - 1, 0)
                    if _depth == 0:
                        _seconds += time.perf_counter() - _started

    event.register("numba:compile", _Listener())
    _timing = True


def install_compile_notice(stream: Any = None) -> None:
    """Print :data:`NOTICE` once, on ``stream`` (stderr by default), when a graphtier kernel is compiled, on a
    terminal and in a log alike (the run that compiles is slower, and its log says why); also starts
    :func:`track_compile_time`.

    Kernels loaded from numba's on-disk cache do not trigger it. Idempotent.
    """
    global _installed, _stream
    track_compile_time()
    if _installed:
        return
    _stream = stream
    _installed = True


def compile_text(seconds: float) -> str:
    """``"including 17.2 s of first-run kernel compilation"`` for ``seconds`` >= 0.05, else ""."""
    return f"including {seconds:.1f} s of first-run kernel compilation" if seconds >= 0.05 else ""
