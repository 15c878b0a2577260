"""SIGTERM handled like Ctrl-C: ``kill``, ``timeout``, batch schedulers and container runtimes send SIGTERM.

Python's default for SIGTERM ends the process at once, skipping every ``finally`` and ``except
KeyboardInterrupt``: temporary files and directories stay behind and a half-done swap is not rolled back.
:func:`terminate_as_interrupt` makes SIGTERM raise :class:`KeyboardInterrupt` in the main thread, so the
same clean-up paths run for both signals. The CLI installs it before any command runs.

Neither signal is raised where C code called back into Python and cannot pass an exception on: during an
import (an extension such as torch runs Python code from C++ while it loads, and an exception thrown into that
code aborts the whole process: ``terminate called after throwing pybind11::error_already_set``, exit -6, no
clean-up) and inside llvmlite's ctypes callbacks (numba loading compiled kernels: the exception is printed as
"ignored" and the interrupt lost). The handler re-sends the signal to the process a moment later instead,
until the code is out of there.
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM (a KeyboardInterrupt, so Ctrl-C paths run)."""


RETRY_SECONDS = 0.05
"""How long a signal that arrived where it cannot be raised waits before it is sent again."""
_LLVMLITE = f"{os.sep}llvmlite{os.sep}"


def _cannot_raise_here(frame: FrameType | None) -> bool:
    """Whether the interrupted code runs inside an import or an llvmlite callback (see the module docstring)."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith("<frozen importlib._bootstrap") or _LLVMLITE in filename:
            return True
        frame = frame.f_back
    return False


def _interrupt(signum: int, frame: FrameType | None) -> None:
    if not threading.main_thread().is_alive():  # the interpreter is shutting down: the run is over
        return
    if _cannot_raise_here(frame):
        retry = threading.Timer(RETRY_SECONDS, os.kill, (os.getpid(), signum))
        retry.daemon = True  # never keeps a finished process waiting
        retry.start()
        return
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(f"signal {signum}")


def terminate_as_interrupt() -> bool:
    """Make SIGTERM raise :class:`Terminated` (a KeyboardInterrupt) in the main thread, and SIGINT (when Python's
    own handler has it) raise KeyboardInterrupt as before; both wait until they can be raised (see above).

    Only replaces the default handler (a handler the embedding program set is kept) and only from the main
    thread (signal handlers can be set nowhere else). Returns True when the handler was installed.
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # Ctrl-C: the same, deferred past imports
        signal.signal(signal.SIGINT, _interrupt)
    if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        return signal.getsignal(signal.SIGTERM) is _interrupt
    signal.signal(signal.SIGTERM, _interrupt)
    return True


def interrupt_behind(error: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt (Ctrl-C, SIGTERM) that a compiled function turned into ``error``, or None.

    A signal whose Python handler runs inside a numba dispatcher call makes the call fail with
    ``SystemError: ... returned a result with an exception set``, the interrupt as its cause or context.
    """
    cause: BaseException | None = error
    for _ in range(8):
        cause = (cause.__cause__ or cause.__context__) if cause is not None else None
        if isinstance(cause, KeyboardInterrupt):
            return cause
    return None


class deferred_interrupts:  # noqa: N801 - used as a context manager, like contextlib's
    """Hold SIGINT and SIGTERM back inside the ``with`` block; a signal that arrived is re-sent on exit.

    For a few steps that must all happen or none (renaming a set of outputs into place): Ctrl-C or SIGTERM
    inside the block takes effect right after it, through the handler that was in place. Outside the main
    thread (where handlers cannot be set) the block runs unprotected.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.previous: dict[int, object] = {}
        self.arrived: list[int] = []

    def _hold(self, signum: int, frame: FrameType | None) -> None:
        self.arrived.append(signum)

    def __enter__(self) -> "deferred_interrupts":
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self.previous[signum] = signal.signal(signum, self._hold)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self.previous.items():
            if handler is not None:  # None: a handler set outside Python, which cannot be put back from here
                signal.signal(signum, handler)  # type: ignore[arg-type]
        self.previous.clear()
        for signum in dict.fromkeys(self.arrived):
            signal.raise_signal(signum)
        self.arrived.clear()
