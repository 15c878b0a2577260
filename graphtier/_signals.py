"""SIGTERM handled like Ctrl-C: ``kill``, ``timeout``, batch schedulers and container runtimes send SIGTERM.

Python's default for SIGTERM ends the process at once, skipping every ``finally`` and ``except
KeyboardInterrupt``: temporary files and directories stay behind and a half-done swap is not rolled back.
:func:`terminate_as_interrupt` makes SIGTERM raise :class:`KeyboardInterrupt` in the main thread, so the
same clean-up paths run for both signals. The CLI installs it before any command runs.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM (a KeyboardInterrupt, so Ctrl-C paths run)."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(f"signal {signum}")


def terminate_as_interrupt() -> bool:
    """Make SIGTERM raise :class:`Terminated` (a KeyboardInterrupt) in the main thread.

    Only replaces the default handler (a handler the embedding program set is kept) and only from the main
    thread (signal handlers can be set nowhere else). Returns True when the handler was installed.
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        return signal.getsignal(signal.SIGTERM) is _raise_terminated
    signal.signal(signal.SIGTERM, _raise_terminated)
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
