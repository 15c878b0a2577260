"""An exclusive lock on a checkpoint directory: :class:`DirectoryLock` keeps two runs from writing one directory.

(Atomic file writes are :func:`graphtier.dataset.outputs.atomic_write`.)
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from graphtier.dataset.swap import pid_alive
from graphtier.errors import ResourceError

# the files of a --checkpoint directory: the checkpoint, and the lock of the run writing it
CHECKPOINT_FILE = "checkpoint.pt"
LOCK_FILE = "checkpoint.lock"


class DirectoryLock:
    """An exclusive lock on ``directory``: the file ``checkpoint.lock`` holding the owner's pid.

    Created with ``O_CREAT | O_EXCL``; a lock whose pid is dead is stale and taken over. ``acquire``
    raises ResourceError (one line naming the holder's pid) while another live process holds it;
    ``release`` removes the file only while it still names this process.
    """

    def __init__(self, directory: str | os.PathLike[str], option: str = "checkpoint") -> None:
        self.directory = Path(directory)
        self.path = self.directory / LOCK_FILE
        self.option = option
        self.held = False

    def holder(self) -> int | None:
        """The pid of the live process holding the lock, or None when it is free or stale (-1: unreadable)."""
        try:
            text = self.path.read_text().strip()
        except FileNotFoundError:
            return None
        except OSError:
            return -1
        if not text.isdigit():
            return -1
        pid = int(text)
        return pid if pid_alive(pid) else None

    def check(self) -> None:
        """Raise ResourceError when another run holds the lock (nothing is created)."""
        pid = self.holder()
        if pid is not None and not self.held:
            self._refuse(pid)

    def acquire(self) -> None:
        """Take the lock (taking over a stale one); ResourceError when a live process holds it."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                pid = self.holder()
                if pid is not None:
                    self._refuse(pid)
                self.path.unlink(missing_ok=True)  # stale: its process is dead
                continue
            except OSError as exc:
                if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                    raise ResourceError(
                        f"{self.option} {self.directory}: cannot create {self.path.name} ({exc.strerror})"
                    ) from None
                raise
            try:
                os.write(fd, f"{os.getpid()}\n".encode())
            finally:
                os.close(fd)
            self.held = True
            return
        raise ResourceError(f"{self.option} {self.directory}: could not take {self.path} (another run keeps taking it)")

    def release(self) -> None:
        """Remove the lock file if this process holds it."""
        if not self.held:
            return
        self.held = False
        try:
            if self.path.read_text().strip() == str(os.getpid()):
                self.path.unlink(missing_ok=True)
        except OSError:
            pass

    def _refuse(self, pid: int) -> None:
        who = "an unknown process (unreadable lock)" if pid < 0 else f"pid {pid}"
        mine = " (this process)" if pid == os.getpid() else ""
        raise ResourceError(
            f"{{{self.option}={self.directory}}}: in use by another run, {who}{mine}; wait for it or use another "
            f"directory (remove {self.path} if no run uses it)",
            options=(self.option,),
        )
