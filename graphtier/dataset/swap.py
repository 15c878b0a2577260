"""Moving a finished dataset directory into place without losing what was there, and tidying up after writers
that were killed.

A writer builds its output in a temporary sibling ``.NAME.tmp-PID-TAG`` (PID: the writing process, TAG: 8
random hex digits) and then either

* :func:`move_into_place`: renames it to ``NAME`` only if nothing is there (``renameat2(RENAME_NOREPLACE)``;
  elsewhere ``mkdir NAME`` as an exclusive claim, then a rename onto that empty directory), or
* :func:`exchange`: swaps it with the existing ``NAME`` in one step (``renameat2(RENAME_EXCHANGE)``), after
  which the temporary name holds the old dataset, to be deleted. Where the kernel or filesystem cannot
  exchange, two renames move the old directory aside to ``.NAME.tmp-PID-TAG.old`` first; an exception
  between them (Ctrl-C, SIGTERM) puts it back, and a SIGKILL between them is repaired by :func:`recover`.

:func:`remove_stale` (run by the next writer of ``NAME``) deletes the temporary siblings of writers whose
process no longer exists, after :func:`recover` has put back a dataset such a writer had moved aside.

A writer also :func:`track` s its temporary while it lives; :func:`remove_tracked` (the command line calls it
when an interrupt ends the run) deletes the ones still there, so an interrupt that arrives before the writer's
``with`` block is set up (or while it removes a swapped-out old dataset) leaves nothing behind either.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import re
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path

RENAME_NOREPLACE = 1
RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_UNSUPPORTED = (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP)
_TRACKED: set[Path] = set()
_TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.tmp-(?P<pid>\d+)-[0-9a-f]{8}(?P<aside>\.old)?$")


def _load_renameat2() -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        function = libc.renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


renameat2: Callable[..., int] | None = _load_renameat2()
"""libc's ``renameat2`` (Linux, glibc 2.28+), or None where it is missing; tests set it to None for the fallbacks."""


def _rename2(source: Path, target: Path, flags: int) -> bool:
    """``renameat2(source, target, flags)``; False when the system cannot do it, OSError when it refuses."""
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(target), flags) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), str(target))


def temp_name(target: Path) -> Path:
    """A fresh temporary sibling of ``target`` carrying this process's pid: ``.NAME.tmp-PID-TAG``."""
    return target.parent / f".{target.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def aside_name(temp: Path) -> Path:
    """Where the two-rename fallback of :func:`exchange` parks the old directory: ``TEMP.old``."""
    return temp.with_name(temp.name + ".old")


def move_into_place(temp: Path, target: Path) -> None:
    """Rename directory ``temp`` to ``target``; raise :class:`FileExistsError` if ``target`` exists.

    Atomic: of two writers racing for one ``target`` exactly one succeeds and nothing is replaced.
    """
    if _rename2(temp, target, RENAME_NOREPLACE):
        return
    os.mkdir(target)  # the exclusive claim: FileExistsError when anything is there
    try:
        os.rename(temp, target)  # replaces the empty directory just made
    except BaseException:
        if os.path.lexists(temp):
            _remove_empty(target)
        raise


def _remove_empty(directory: Path) -> None:
    try:
        os.rmdir(directory)
    except OSError:
        pass


def exchange(temp: Path, target: Path) -> None:
    """Swap directories ``temp`` and ``target``: ``target`` gets the new one, ``temp`` then holds the old one.

    :class:`FileNotFoundError` when ``target`` has gone. Without ``RENAME_EXCHANGE`` the old directory is
    moved aside first (see the module docstring); any exception, KeyboardInterrupt included, leaves either
    the old or the new directory at ``target``.
    """
    if _rename2(temp, target, RENAME_EXCHANGE):
        return
    aside = aside_name(temp)
    try:
        os.rename(target, aside)
        os.rename(temp, target)
    except BaseException:
        if os.path.lexists(aside):
            if os.path.lexists(temp):  # the new directory did not move: put the old one back
                os.rename(aside, target)
            else:
                os.rename(aside, temp)
        raise
    os.rename(aside, temp)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists (one of another user counts as alive)."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def stale_siblings(target: Path) -> list[tuple[Path, bool]]:
    """The temporary siblings of ``target`` left by dead writers, each with whether it is a moved-aside ``.old``."""
    try:
        names = os.listdir(target.parent)
    except OSError:
        return []
    found = []
    for name in sorted(names):
        match = _TEMP_NAME.match(name)
        if match and match["name"] == target.name and not pid_alive(int(match["pid"])):
            found.append((target.parent / name, match["aside"] is not None))
    return found


def recover(target: Path) -> bool:
    """Put back the dataset a killed writer had moved aside (only while ``target`` is missing); True if it did."""
    if os.path.lexists(target):
        return False
    for path, moved_aside in stale_siblings(target):
        if moved_aside:
            try:
                move_into_place(path, target)
            except OSError:  # another process recovered it first, or created target
                return False
            return True
    return False


def remove_stale(target: Path) -> list[Path]:
    """:func:`recover` ``target``, then delete the temporary siblings dead writers left; returns those deleted."""
    try:
        recover(target)
    except OSError:
        pass
    removed = []
    for path, _ in stale_siblings(target):
        remove_tree(path)
        removed.append(path)
    return removed


def track(temp: Path) -> None:
    """Record ``temp`` as this process's live temporary (before it is created) until :func:`untrack`."""
    _TRACKED.add(temp)


def untrack(temp: Path) -> None:
    """Forget ``temp`` (removed, or moved into place)."""
    _TRACKED.discard(temp)


def remove_tracked() -> None:
    """Delete every temporary this process still tracks (called when an interrupt ends the run)."""
    for temp in sorted(_TRACKED):
        remove_tree(temp)
        untrack(temp)


def remove_tree(path: Path) -> None:
    """Delete a temporary directory (or file) and everything in it; missing is fine."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except OSError:
            pass
