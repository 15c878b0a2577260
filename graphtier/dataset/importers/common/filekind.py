"""What a file holds, told from its first bytes: npy, npz, gzip, mat, hdf5, pickle, text or binary."""

from __future__ import annotations

from pathlib import Path

from graphtier.errors import DatasetError

NPY_MAGIC = b"\x93NUMPY"
_MAGICS = (
    (NPY_MAGIC, "npy", "a .npy array"),
    (b"PK\x03\x04", "npz", "a zip archive (.npz?)"),
    (b"PK\x05\x06", "npz", "an empty zip archive"),
    (b"\x1f\x8b", "gzip", "gzip data"),
    (b"MATLAB", "mat", "a MATLAB .mat file"),
    (b"\x89HDF", "hdf5", "an HDF5 file (MATLAB v7.3?)"),
    (b"\x80", "pickle", "a Python pickle"),
)


def sniff_file(path: Path) -> tuple[str, str]:
    """``(kind, description)`` of the content of the file ``path``: npy, npz, gzip, mat, hdf5, pickle, text or
    binary."""
    try:
        with open(path, "rb") as stream:
            head = stream.read(4096)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot open ({exc.strerror})") from None
    for magic, kind, description in _MAGICS:
        if head.startswith(magic):
            return kind, description
    if b"\x00" in head:
        return "binary", "binary data"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end of the probe
            return "binary", "binary data"
    return "text", "text"
