"""Output paths checked before any work starts.

A command that writes files at the end of a long run (``train --save-model``, ``--report``,
``--checkpoint``, ``predict --output``, ``score --output``) calls :func:`check_outputs` first, so a
path that cannot be written (a parent that is a file, a read-only directory, a directory where a
file is expected, a kernel pseudo-filesystem), two options naming the same file, or an output that
would overwrite a file being read (a file of the input dataset, the model) is one
:class:`~graphtier.errors.OptionError` naming the option, before the work and not after it.

Missing parent directories are fine: the writers create them (``mkdir -p``); the check only makes
sure the nearest existing ancestor is a directory this process can write in.

Every output file is written by :func:`atomic_write`: a temporary sibling ``.NAME.tmp-PID`` renamed over
the target, so a reader (or an interrupt, SIGTERM included) sees the old file or the complete new one; the
temporary file is removed in a ``finally``, and temporaries left by dead processes are removed by the next
write of the same file.

A command with several outputs (``predict --output --scores --embeddings``) writes them as one
:class:`OutputSet`: every file goes to its temporary first, then the set is committed, so a reader sees
all of the old files or all of the new ones, never a mix of two runs. The commit writes a journal
``.graphtier-commit-PID-TAG.json`` into each target's directory (the temporaries and targets of the set)
before the renames, with SIGINT and SIGTERM held back until it is done; a run killed (SIGKILL) during the
renames leaves the journal, and the next write into that directory (:func:`recover_commits`, called by
:func:`remove_stale_temporaries`) finishes the renames: the set is rolled forward. A run killed before
the journal leaves only temporaries, removed by the next write: the old set stays.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from graphtier._signals import deferred_interrupts
from graphtier.dataset import resources
from graphtier.dataset.format import META_FILE, SPLITS
from graphtier.dataset.swap import pid_alive
from graphtier.dataset.writer import NPY_HEADER_BYTES
from graphtier.errors import OptionError

OutputKind = Literal["file", "dir"]
"""``file``: the option names a file written whole (temporary sibling + rename); ``dir``: a directory
that files are written into (created when missing)."""

PSEUDO_FILESYSTEMS = (Path("/proc"), Path("/sys"), Path("/dev"))
"""Kernel pseudo-filesystems: nothing graphtier writes belongs there."""

DATASET_FILES = (
    META_FILE, "indptr.npy", "indices.npy", "features.npy", "labels.npy", "perm.npy", "node_ids.npy",
    *(f"{split}_idx.npy" for split in SPLITS),
)  # fmt: skip
"""Names of the files a dataset directory may hold (beyond these, every ``*.npy`` in it is read too)."""

PathArg = str | os.PathLike[str] | None


def dataset_files(root: str | os.PathLike[str]) -> list[Path]:
    """The files of the dataset directory ``root`` that :meth:`Dataset.open` reads or may read: ``meta.json``,
    the well-known arrays (present or not) and every other ``*.npy`` in it."""
    directory = Path(root)
    files = {directory / name for name in DATASET_FILES}
    if directory.is_dir():
        files.update(directory.glob("*.npy"))
    return sorted(files)


def _is_under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _nearest_existing(path: Path) -> Path:
    """``path`` itself or its closest ancestor that exists (``/`` at worst)."""
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


def _given(option: str, path: PathArg) -> str:
    """The message token naming ``option`` (a Python argument name) with its value ``path``: rendered
    ``option='path'`` for a Python caller and ``--option path`` for the CLI (:class:`~graphtier.errors.GraphtierError`)."""
    return f"{{{option}={path}}}"


def _check_writable_directory(option: str, path: Path, directory: Path) -> None:
    """``directory`` (``path`` or an ancestor of it) must be a directory this process can create files in."""
    if not directory.is_dir():
        raise OptionError(f"{_given(option, path)}: {directory} is a file, not a directory", options=(option,))
    if not os.access(directory, os.W_OK | os.X_OK):
        reason = "is on a read-only file system" if _read_only_mount(directory) else "is not writable"
        raise OptionError(f"{_given(option, path)}: directory {directory} {reason}", options=(option,))


def _read_only_mount(directory: Path) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # pragma: no cover - no statvfs on this platform
        return False


def check_output(option: str, path: str | os.PathLike[str], kind: OutputKind = "file") -> Path:
    """Raise :class:`OptionError` (naming ``option``) unless ``path`` can be written as a ``kind``.

    ``option`` is the Python argument name (``save_model``); the message renders it as ``save_model='PATH'``
    for a Python caller and as the flag (``--save-model PATH``) for the CLI.
    Returns the absolute, symlink-resolved path. A ``file`` that exists must be a regular file (it
    is replaced); a ``dir`` that exists must be a directory. Missing parents are allowed when the
    nearest existing ancestor is a writable directory. Paths under /proc, /sys or /dev are refused.
    """
    given = Path(path)
    if str(path) == "":
        raise OptionError(f"{{{option}}}: expected a path, found an empty string", options=(option,))
    resolved = given.resolve()
    for pseudo in PSEUDO_FILESYSTEMS:
        if _is_under(resolved, pseudo):
            raise OptionError(
                f"{_given(option, given)}: is under {pseudo}, a kernel pseudo-filesystem; expected a path on a disk",
                options=(option,),
            )
    if kind == "file":
        if resolved.is_dir():
            raise OptionError(f"{_given(option, given)}: is a directory, expected a file path", options=(option,))
        if resolved.exists() and not resolved.is_file():
            raise OptionError(f"{_given(option, given)}: exists and is not a regular file", options=(option,))
        _check_writable_directory(option, given, _nearest_existing(resolved.parent))
    elif kind == "dir":
        if resolved.exists() and not resolved.is_dir():
            raise OptionError(f"{_given(option, given)}: exists and is not a directory", options=(option,))
        _check_writable_directory(option, given, _nearest_existing(resolved))
    else:
        raise ValueError(f"kind expected 'file' or 'dir', found {kind!r}")
    return resolved


def _same_file(a: Path, b: Path) -> bool:
    if a == b:
        return True
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def check_outputs(
    outputs: Sequence[tuple[str, PathArg, OutputKind]],
    *,
    inputs: Sequence[tuple[str, PathArg]] = (),
    dataset: PathArg = None,
) -> None:
    """Check every ``(option, path, kind)`` of ``outputs`` before the work starts (entries with path None are skipped).

    Raises :class:`OptionError` naming the option when a path cannot be written (:func:`check_output`),
    when two outputs name the same file, when an output would replace an input file (``inputs``:
    ``(option, path)`` of files the command reads) or a file of the ``dataset`` directory being read.
    Options are Python argument names, rendered as flags by the CLI (:func:`check_output`).
    """
    checked: list[tuple[str, Path, OutputKind]] = []
    for option, path, kind in outputs:
        if path is None:
            continue
        resolved = check_output(option, path, kind)
        for other_option, other, _ in checked:
            if _same_file(resolved, other):
                raise OptionError(
                    f"{_given(option, path)}: is the same path as {{{other_option}}}; give each output its own path",
                    options=(option, other_option),
                )
        checked.append((option, resolved, kind))
    read = [
        (f"the file given to {{{option}}}", option, Path(path).resolve()) for option, path in inputs if path is not None
    ]
    if dataset is not None:
        read += [(f"a file of the dataset {dataset}", None, file.resolve()) for file in dataset_files(dataset)]
    for option, resolved, kind in checked:
        if kind != "file":
            continue
        for what, input_option, source in read:
            if _same_file(resolved, source):
                raise OptionError(
                    f"{_given(option, source)}: is {what}, which is being read; write the output elsewhere",
                    options=(option,) if input_option is None else (option, input_option),
                )


def temporary_path(target: Path) -> Path:
    """The temporary sibling ``.NAME.tmp-PID`` that :func:`atomic_write` writes before the rename."""
    return target.parent / f".{target.name}.tmp-{os.getpid()}"


def remove_stale_temporaries(target: Path) -> list[Path]:
    """Remove ``.NAME.tmp-PID`` siblings of ``target`` whose process is dead; returns the removed paths.

    An interrupted :class:`OutputSet` commit in the directory is finished first (:func:`recover_commits`):
    its temporaries are the new outputs, not leftovers."""
    recover_commits(target.parent)
    removed = []
    prefix = f".{target.name}.tmp-"
    try:
        siblings = list(target.parent.iterdir())
    except OSError:
        return removed
    for sibling in siblings:
        suffix = sibling.name[len(prefix) :] if sibling.name.startswith(prefix) else ""
        if suffix.isdigit() and int(suffix) != os.getpid() and not pid_alive(int(suffix)):
            sibling.unlink(missing_ok=True)
            removed.append(sibling)
    return removed


def _begin(target: str | os.PathLike[str]) -> tuple[Path, Path]:
    """``(target, its temporary)`` of a new output: the folder made, stale temporaries of dead processes removed."""
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    return path, temporary_path(path)


def atomic_write(target: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` to write a temporary sibling of ``target``, then rename it over ``target``.

    The temporary file never outlives the call (removed in ``finally`` on any error or interrupt);
    stale temporaries of dead processes next to ``target`` are removed first. Returns ``target``.
    """
    path, tmp = _begin(target)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _npy_target(path: str | os.PathLike[str], array: np.ndarray, option: str) -> Path:
    """``path`` checked as the ``.npy`` output of ``option`` with room for ``array``; its directory created."""
    target = Path(path)
    if target.suffix != ".npy":
        raise OptionError(f"{{{option}}}: expected a file name ending in .npy, found {str(path)!r}", options=(option,))
    target.parent.mkdir(parents=True, exist_ok=True)
    resources.require_disk(
        target.parent, int(array.nbytes) + NPY_HEADER_BYTES, _given(option, target), options=(option,)
    )
    return target


def _write_npy(tmp: Path, array: np.ndarray) -> None:
    with open(tmp, "wb") as handle:  # a file object: np.save appends no ".npy" to the temporary name
        np.save(handle, array, allow_pickle=False)


def save_npy(path: str | os.PathLike[str], array: np.ndarray, option: str) -> Path:
    """Write ``array`` to the ``.npy`` file ``path`` (the value of ``option``) atomically; returns the path.

    Missing parent directories are created; the free disk space is checked first; the array goes to a
    temporary sibling file renamed into place, so an interrupt or a full disk leaves no half-written file.
    """
    target = _npy_target(path, array, option)
    atomic_write(target, lambda tmp: _write_npy(tmp, array))
    return target


JOURNAL_PREFIX = ".graphtier-commit-"
_JOURNAL = re.compile(r"^\.graphtier-commit-(?P<pid>\d+)-(?P<tag>[0-9a-f]{8})\.json(?P<partial>\.tmp)?$")


class OutputSet:
    """Output files of one command, committed together: all of them new, or (interrupted) all of them old.

    ``with OutputSet() as outputs: outputs.save_npy(...); ...; outputs.commit()``. Each file is written to its
    temporary ``.NAME.tmp-PID`` beside the target; :meth:`commit` renames them into place as one (see the module
    docstring); leaving the block without a commit (an error, an interrupt) removes the temporaries.
    """

    def __init__(self) -> None:
        self.staged: list[tuple[Path, Path]] = []  # (temporary, target)
        self.committed = False  # a journal is in place: the temporaries are the outputs now

    def __enter__(self) -> "OutputSet":
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.committed:  # after the commit point an unfinished rename is left to recover_commits
            for tmp, _ in self.staged:
                tmp.unlink(missing_ok=True)
        self.staged.clear()

    def save_npy(self, path: str | os.PathLike[str], array: np.ndarray, option: str) -> Path:
        """Write ``array`` (any dtype but object) to the temporary of the ``.npy`` output ``path`` (the value of
        ``option``), checked as :func:`save_npy` checks it; the target changes at :meth:`commit`."""
        return self.stage(_npy_target(path, array, option), lambda tmp: _write_npy(tmp, array))

    def stage(self, target: str | os.PathLike[str], write: Callable[[Path], None]) -> Path:
        """Call ``write(tmp)`` to write the temporary of ``target`` (any format, as :func:`atomic_write` does);
        the target changes at :meth:`commit`. Returns ``target``."""
        path, tmp = _begin(target)
        self.staged.append((tmp, path))
        write(tmp)
        return path

    def commit(self) -> list[Path]:
        """Rename every staged file into place as one step (journal first, signals held); returns the targets."""
        if not self.staged:
            return []
        tag = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        directories = sorted({target.parent.absolute() for _, target in self.staged})
        journals = [directory / f"{JOURNAL_PREFIX}{tag}.json" for directory in directories]
        record = {
            "renames": [[str(tmp.absolute()), str(target.absolute())] for tmp, target in self.staged],
            "journals": [str(j) for j in journals],
        }
        partials = [_partial(journal) for journal in journals]
        with deferred_interrupts():
            try:  # every journal is written whole before the first one is renamed into place
                for partial in partials:
                    partial.write_text(json.dumps(record))
            except OSError:
                for partial in partials:
                    partial.unlink(missing_ok=True)
                raise
            for partial, journal in zip(partials, journals):
                os.replace(partial, journal)  # from the first of these on, the set is committed
                self.committed = True
            for tmp, target in self.staged:
                os.replace(tmp, target)
            for journal in journals:
                journal.unlink(missing_ok=True)
        done = [target for _, target in self.staged]
        self.staged.clear()
        return done


def _partial(journal: Path) -> Path:
    return journal.with_name(journal.name + ".tmp")


def _read_journal(journal: Path) -> tuple[list[tuple[Path, Path]], list[Path]]:
    """(renames, journal copies) of a journal; nothing for a damaged one."""
    try:
        record = json.loads(journal.read_text())
        pairs = [(Path(tmp), Path(target)) for tmp, target in record["renames"]]
        copies = [Path(j) for j in record["journals"]]
    except (OSError, ValueError, TypeError, KeyError):
        return [], []
    return pairs, copies


def _replay(journal: Path, pid: str) -> None:
    """Finish the renames of a dead run's journal (see :func:`recover_commits`) and remove its copies; entries
    that are not a ``.NAME.tmp-PID`` sibling of their target (a damaged or crafted journal) are skipped."""
    pairs, copies = _read_journal(journal)
    for tmp, target in pairs:
        if tmp.parent == target.parent and tmp.name == f".{target.name}.tmp-{pid}" and os.path.lexists(tmp):
            os.replace(tmp, target)
    for copy in copies:
        if copy.name == journal.name:
            copy.unlink(missing_ok=True)
    journal.unlink(missing_ok=True)


def recover_commits(directory: Path) -> int:
    """Roll forward every :class:`OutputSet` commit with a journal in ``directory`` whose process died during it:
    the staged files are renamed into place. A journal still being written (``.json.tmp``, all written before any
    is renamed) means the commit began only if one of its copies in another directory is complete: that copy is
    replayed; the temporary is removed either way. Returns how many commits were rolled forward."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return 0
    replayed = 0
    for name in names:
        match = _JOURNAL.match(name)
        if not match or int(match["pid"]) == os.getpid() or pid_alive(int(match["pid"])):
            continue
        path = directory / name
        if match["partial"]:
            _, copies = _read_journal(path)
            complete = [c for c in copies if c.name == name.removesuffix(".tmp") and c.is_file()]
            for copy in complete[:1]:
                _replay(copy, match["pid"])
                replayed += 1
            path.unlink(missing_ok=True)
        elif path.is_file():
            _replay(path, match["pid"])
            replayed += 1
    return replayed
