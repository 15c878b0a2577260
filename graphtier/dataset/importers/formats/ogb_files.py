"""The small files of OGB's raw layouts (homogeneous and heterogeneous): finding ``<stem>.csv[.gz]``, single
integers (``num-node-list``, ``num-edge-list``) and the split scheme folder.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphtier.dataset.importers.common import textio
from graphtier.errors import DatasetError, OptionError


def find_raw(root: Path, stem: str, required: bool) -> Path | None:
    """``root/<stem>.csv.gz`` or ``root/<stem>.csv``; :class:`DatasetError` when required and absent."""
    for candidate in (root / f"{stem}.csv.gz", root / f"{stem}.csv"):
        if candidate.is_file():
            return candidate
    if required:
        raise DatasetError(f"{root / (stem + '.csv.gz')}: file not found (OGB raw layout)")
    return None


def read_single_int(path: Path) -> int:
    """The integer on the first data line of ``path`` (for example ``num-node-list.csv.gz``)."""
    values = [
        block
        for block in textio.iter_int_rows(
            path, 1, allow_extra_columns=False, skip_header=False, expected="one integer per line"
        )
    ]
    flat = np.concatenate(values)[:, 0] if values else np.empty(0, np.int64)
    if flat.shape[0] != 1:
        raise DatasetError(f"{path}: expected one integer (a homogeneous graph), found {flat.shape[0]} lines")
    return int(flat[0])


def choose_scheme(root: Path, scheme: str | None) -> Path | None:
    """The ``split/<scheme>`` folder: the named one, or the only one; None without a split folder."""
    split_root = root / "split"
    if scheme is not None:
        folder = split_root / scheme
        if not folder.is_dir():
            raise DatasetError(f"{folder}: split scheme folder not found")
        return folder
    if not split_root.is_dir():
        return None
    schemes = sorted(p.name for p in split_root.iterdir() if p.is_dir())
    if len(schemes) == 1:
        return split_root / schemes[0]
    if not schemes:
        return None
    raise OptionError(f"{split_root}: expected one split scheme, found {', '.join(schemes)}; pass --scheme")


def read_int_list(path: Path, expected: str) -> np.ndarray:
    """int64 [K]: one integer per line of ``path`` (``expected`` describes a line for the error)."""
    return textio.read_int_rows(path, 1, allow_extra_columns=False, skip_header=False, expected=expected, column=0)


def read_node_years(path: Path, num_nodes: int) -> np.ndarray:
    """int64 [N]: ``node_year`` (ogbn-arxiv, ogbn-papers100M): one integer year per node, in node order."""
    years = read_int_list(path, "one integer year per line")
    if years.shape[0] != num_nodes:
        raise DatasetError(f"{path}: expected {num_nodes} years (one per node), found {years.shape[0]}")
    return years
