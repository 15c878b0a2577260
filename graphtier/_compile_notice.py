"""One line on the terminal when graphtier's numba kernels are compiled (the first run after installing).

Every kernel is ``@numba.njit(cache=True)``: the first run compiles them (about 20 s on 2 cores) and
writes numba's cache next to the modules, later runs load it. Without a notice the first run looks hung.
"""

from __future__ import annotations

import sys
from typing import Any

NOTICE = "graphtier: compiling kernels, first run only (about 20 s)..."

_installed = False
_shown = False


def install_compile_notice(stream: Any = None) -> None:
    """Print :data:`NOTICE` once, on ``stream`` (stderr by default), when a graphtier kernel is compiled.

    Kernels loaded from numba's on-disk cache do not trigger it. Nothing is printed when the stream is not
    a terminal (pipes, logs and tests get the same output on every run). Idempotent.
    """
    global _installed
    if _installed:
        return
    out = stream if stream is not None else sys.stderr
    if not (hasattr(out, "isatty") and out.isatty()):
        return
    from numba.core import event

    class _Notice(event.Listener):
        def on_start(self, ev: Any) -> None:
            global _shown
            dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
            module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
            if not _shown and module.startswith("graphtier"):
                _shown = True
                print(NOTICE, file=out, flush=True)

        def on_end(self, ev: Any) -> None:
            pass

    event.register("numba:compile", _Notice())
    _installed = True
