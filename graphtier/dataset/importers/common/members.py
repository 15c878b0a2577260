"""``PATH:KEY``: one array inside a container file, wherever an importer takes a file.

Papers ship several arrays in one file: the members of an ``.npz`` (``train_val_test_idx.npz:train_idx``) or
the variables of a MATLAB ``.mat`` (``ACM3025.mat:PAP``). :func:`file_or_member` turns such a text into a
:class:`MemberPath` (a ``Path`` whose text is ``PATH:KEY``, so messages name it as the user wrote it); the
whole text is tried as a path first, so a file whose name holds ``:`` still works. :func:`load_member` reads
the member: a numeric ``numpy`` array, or, for a sparse ``.mat`` variable, a checked scipy sparse matrix.
Readers see a member as an array (:func:`sniff` calls it ``npy``).
Nothing is unpickled (``allow_pickle=False``; ``loadmat`` builds plain arrays). A missing key is a one-line
error listing the keys present.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from graphtier.dataset.importers.common.filekind import sniff_file
from graphtier.dataset.importers.common.mat_variables import load_mat
from graphtier.dataset.importers.common.sparse import checked_sparse
from graphtier.dataset.resources import require_memory
from graphtier.errors import DatasetError

CONTAINER_KINDS = ("npz", "mat")


class MemberPath(type(Path())):  # type: ignore[misc]
    """``PATH:KEY``: the member ``key`` of the container file ``container`` (an ``.npz`` or a ``.mat``).

    Its text (``str``) is ``PATH:KEY``; ``exists``/``is_file`` ask about the container. Build it with
    :func:`file_or_member`.
    """

    container: Path
    key: str

    def exists(self, *args: Any, **kwargs: Any) -> bool:
        return self.container.exists()

    def is_file(self) -> bool:
        return self.container.is_file()


def member_path(container: Path, key: str) -> MemberPath:
    """The :class:`MemberPath` of ``key`` in ``container``."""
    path = MemberPath(f"{container}:{key}")
    path.container = Path(container)
    path.key = key
    return path


def file_or_member(value: str | os.PathLike[str]) -> Path:
    """``value`` as a path: a :class:`MemberPath` when it reads ``PATH:KEY`` (the whole text is not an existing
    file, ``PATH`` is, and ``PATH`` is an ``.npz`` or a ``.mat`` by content), else ``Path(value)``."""
    if isinstance(value, MemberPath):
        return value
    text = os.fspath(value)
    path = Path(text)
    if ":" not in text or path.exists():
        return path
    prefix, _, key = text.rpartition(":")
    if not prefix or not key or "/" in key or os.sep in key:
        return path
    container = Path(prefix)
    if not container.is_file():
        return path
    if sniff_file(container)[0] not in CONTAINER_KINDS:
        return path
    return member_path(container, key)


def npz_member_bytes(path: MemberPath) -> int | None:
    """Bytes the ``.npz`` member ``path`` takes once loaded, read from its ``.npy`` header without loading it
    (``None`` where the header cannot be read: the load then reports the damage)."""
    try:
        with zipfile.ZipFile(path.container) as archive, archive.open(f"{path.key}.npy") as member:
            version = np.lib.format.read_magic(member)
            reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = reader(member)
    except (KeyError, ValueError, OSError, zipfile.BadZipFile, EOFError):
        return None
    return int(np.prod(shape, dtype=object)) * dtype.itemsize


def sniff(path: Path) -> tuple[str, str]:
    """``(kind, description)`` of the content of ``path``
    (:func:`~graphtier.dataset.importers.common.filekind.sniff_file`); a :class:`MemberPath` (``PATH:KEY``) is an
    array: ``npy``."""
    if isinstance(path, MemberPath):
        return "npy", f"an array ({path})"
    return sniff_file(path)


def _npz_member(path: MemberPath) -> np.ndarray:
    try:
        archive = np.load(path.container, allow_pickle=False)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise DatasetError(f"{path.container}: not a readable .npz archive ({exc})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise DatasetError(f"{path}: expected an .npz archive, found a single array")
    with archive:
        if path.key not in archive.files:
            raise DatasetError(f"{path}: no member {path.key!r} in {path.container}; it has {sorted(archive.files)}")
        needed = npz_member_bytes(path)
        if needed is not None:  # checked before the member is inflated: a compressed member can be any size
            require_memory(needed, f"reading {path}")
        try:
            return archive[path.key]
        except ValueError as exc:
            if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
                raise DatasetError(f"{path}: expected a numeric array, found an object (pickled) array") from None
            raise DatasetError(f"{path}: not a readable array ({exc})") from None
        except Exception as exc:  # a damaged member
            raise DatasetError(f"{path}: not a readable array ({exc})") from None


def load_member(path: MemberPath) -> Any:
    """The member ``path`` names: a numeric ``numpy`` array, or (a sparse ``.mat`` variable) a checked scipy
    CSR/CSC matrix (:func:`~graphtier.dataset.importers.common.sparse.checked_sparse`)."""
    kind, description = sniff_file(path.container)
    if kind == "npz":
        value: Any = _npz_member(path)
    elif kind == "mat":
        variables = load_mat(path.container, [path.key])  # one variable read, not the whole file
        if path.key not in variables:
            present = sorted(load_mat(path.container))
            raise DatasetError(f"{path}: no variable {path.key!r} in {path.container}; it has {present}")
        value = variables[path.key]
    else:
        raise DatasetError(f"{path}: expected PATH:KEY of an .npz or a .mat file, found {description}")
    if sp.issparse(value):
        return checked_sparse(value, path)
    array = np.asarray(value)
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == np.bool_):
        raise DatasetError(f"{path}: expected a numeric array, found {array.dtype} (a cell, struct or text?)")
    return array


def load_dense_member(path: MemberPath, what: str) -> np.ndarray:
    """:func:`load_member` for a reader of dense arrays (ids, labels, pairs): a sparse member is densified when
    it is a vector (one row or one column), else refused."""
    value = load_member(path)
    if sp.issparse(value):
        if 1 not in value.shape:
            raise DatasetError(f"{path}: {what}: expected a dense array, found a sparse {value.shape} matrix")
        return np.asarray(value.toarray())
    return value
