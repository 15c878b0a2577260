"""The split a ``.mat`` holds (HAN's ``train_idx``/``val_idx``/``test_idx``): which variables, read how, and
what to say when a random ``--split`` replaces it or split-like variables stay unused."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from graphtier.errors import DatasetError, OptionError

NONE = "none"
"""The value of a key option that means "do not use any"."""

SPLIT_GUESSES = (
    ("train_idx", "idx_train", "train_index", "train"),
    ("val_idx", "valid_idx", "idx_val", "val_index", "valid_index", "val", "valid"),
    ("test_idx", "idx_test", "test_index", "test"),
)
"""Names of a file's own split variables, tried in this order (HAN's ACM3025: train_idx, val_idx, test_idx)."""


def split_like_keys(variables: dict[str, Any]) -> list[str]:
    """The variables whose names look like a split (``train*``, ``val*``, ``test*``, ``idx_*``), sorted."""
    prefixes = ("train", "val", "test", "idx_")
    return sorted(k for k in variables if k.lower().startswith(prefixes))


def guess_split_keys(variables: dict[str, Any]) -> tuple[str, str, str] | None:
    """The file's own ``(train, valid, test)`` variables when each of :data:`SPLIT_GUESSES` finds one, else None."""
    found = [next((k for k in names if k in variables), None) for names in SPLIT_GUESSES]
    return None if None in found else (found[0], found[1], found[2])  # type: ignore[return-value]


def parse_split_keys(text: str | Sequence[str]) -> tuple[str, str, str] | None:
    """``"train_idx,val_idx,test_idx"`` (or three names) -> the names; ``"none"`` -> None (no file split)."""
    names = [k.strip() for k in text.split(",")] if isinstance(text, str) else [str(k) for k in text]
    if names == [NONE]:
        return None
    if len(names) != 3 or not all(names):
        raise OptionError(f"--split-keys: expected three variable names TRAIN,VALID,TEST (or none), found {text!r}")
    return names[0], names[1], names[2]


def read_split_variables(
    variables: dict[str, Any], path: Path, keys: Sequence[str], num_nodes: int
) -> tuple[list[np.ndarray], str]:
    """The split the file holds: the index vectors ``keys`` (train, valid, test; any shape with one non-trivial
    axis, HAN's are [1, K]) as 0-based int64 node ids, and a sentence saying what was read. 0- or 1-based is
    detected: 1-based (MATLAB) when no id is 0 and the largest equals ``num_nodes``, else 0-based."""
    import scipy.sparse as sp

    raw = []
    for key in keys:
        if key not in variables:
            raise DatasetError(f"{path}: --split-keys {key!r}: no such variable; the file has {sorted(variables)}")
        value = variables[key]
        array = np.asarray(value.toarray() if sp.issparse(value) else value)
        if array.dtype.kind not in "iuf" or sum(d > 1 for d in array.shape) > 1:
            raise DatasetError(
                f"{path}: --split-keys {key!r}: expected a vector of node ids, found {array.dtype} {array.shape}"
            )
        ids = array.reshape(-1)
        if ids.size and (not np.all(np.isfinite(ids)) or np.any(ids != np.round(ids))):
            raise DatasetError(f"{path}: --split-keys {key!r}: expected integer node ids, found fractional values")
        raw.append(ids.astype(np.int64))
    every = np.concatenate(raw)
    low, high = (int(every.min()), int(every.max())) if every.size else (0, 0)
    one_based = every.size > 0 and low >= 1 and high == num_nodes
    base = "1-based (no id is 0 and the largest is N): shifted to 0-based" if one_based else "0-based"
    splits = [ids - 1 for ids in raw] if one_based else raw
    for key, ids in zip(keys, splits, strict=True):
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= num_nodes):
            raise DatasetError(
                f"{path}: --split-keys {key!r}: expected node ids in [0, {num_nodes}) (or 1-based [1, {num_nodes}]), "
                f"found values in [{int(ids.min()) + one_based}, {int(ids.max()) + one_based}]"
            )
    sizes = ", ".join(f"{key} {ids.size:,}" for key, ids in zip(keys, splits, strict=True))
    return splits, f"the file's own split ({sizes} ids, {base})"


def choose_split_keys(
    variables: dict[str, Any], split_keys: str | Sequence[str] | None, random_split: Any
) -> tuple[tuple[str, str, str] | None, str | None]:
    """Which split variables to read (None: none) and what to say about the file's split: ``split_keys``
    (``--split-keys``; ``"none"`` reads none) wins; without it the file's own split (:func:`guess_split_keys`)
    is used unless ``random_split`` (``--split``) replaces it, which is said, as are split-like variables
    that are not used."""
    like = split_like_keys(variables)
    if split_keys is not None:
        keys = parse_split_keys(split_keys)
        if keys is not None and random_split is not None:
            raise OptionError(f"--split-keys and --split: expected at most one, found both ({','.join(keys)})")
        return keys, None
    if random_split is not None:
        return None, (f"the random --split replaces the split the file holds ({', '.join(like)})" if like else None)
    guessed = guess_split_keys(variables)
    if guessed is not None:
        return guessed, None
    if like:
        return None, (
            f"the file holds split-like variables ({', '.join(like)}), not used: "
            "pass --split-keys TRAIN,VALID,TEST to use them"
        )
    return None, None
