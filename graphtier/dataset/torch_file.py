"""Reading and writing the torch files of graphtier (checkpoints, saved models) safely.

Reading never executes code (``weights_only=True``: tensors and plain containers only), puts every
tensor on the CPU whatever device wrote it, and checks the CRC-32 of every member of the zip archive
first (``torch.load`` does not), so flipped bytes are refused instead of loaded. Writing is atomic.

It lives in the dataset layer because input files are torch files too (OGB's link split
``split/<scheme>/*.pt``); :mod:`graphtier.train.persist.torch_file` re-exports it for checkpoints and saved models.
torch is imported on first use, so importing the dataset layer does not load torch.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any

from graphtier.dataset.outputs import atomic_write
from graphtier.errors import GraphtierError, OptionError


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:160]}"


def verify_archive(path: Path, label: str, what: str, error: type[GraphtierError] = OptionError) -> None:
    """Raise ``error`` naming ``label`` unless ``path`` is a zip archive whose members all match their CRC-32.

    ``what`` names the expected content in the error. Reads the whole file once (as loading it does).
    """
    try:
        is_zip = zipfile.is_zipfile(path)
    except OSError as exc:
        raise error(f"{label}: cannot read ({_one_line(exc)})") from None
    if not is_zip:
        raise error(f"{label}: not a {what} (not a zip archive as torch.save writes)")
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError, RuntimeError) as exc:
        raise error(f"{label}: damaged file ({_one_line(exc)})") from None
    if bad is not None:
        raise error(f"{label}: damaged file: member {bad!r} fails its CRC-32 check")


def load_torch_file(path: Path, label: str, what: str, error: type[GraphtierError] = OptionError) -> Any:
    """The object stored in ``path`` (tensors on the CPU, memory maps of the file), read without executing code.

    ``label`` names the file in errors (e.g. ``--model m.pt``), ``what`` the expected content
    (``graphtier checkpoint``); any unreadable, damaged or code-carrying file is an ``error`` (one line;
    :class:`OptionError` for a file given by an option, :class:`DatasetError` for a dataset's input file).
    """
    import torch

    verify_archive(path, label, what, error)
    try:
        # memory-mapped: a saved learnable table of a billion-edge graph (GBs) is read through the page cache,
        # page by page where it is copied to, never all at once into the process's own memory
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the same user mistake
        raise error(f"{label}: not a {what} ({_one_line(exc)})") from None


def save_torch_file(path: str | os.PathLike[str], state: Any) -> Path:
    """``torch.save(state)`` to ``path`` atomically (a temporary sibling renamed over it); returns the path."""
    import torch

    return atomic_write(path, lambda tmp: torch.save(state, tmp))
