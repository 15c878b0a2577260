"""Train/valid/test splits: parsing ``--split`` fractions, random splits over labelled nodes, saving them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import OptionError

# ---------------------------------------------------------------------------- splits and features


def parse_fractions(text: str, option: str = "split", *, exact: bool = False) -> tuple[float, float, float]:
    """``"0.6,0.2,0.2"`` -> ``(0.6, 0.2, 0.2)``; :class:`OptionError` naming ``option`` unless three fractions
    summing to <= 1 (to 1 when ``exact``)."""
    parts = [p.strip() for p in str(text).split(",")]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise OptionError(
            f"{{{option}}}: expected three fractions like 0.6,0.2,0.2, found {text!r}", options=(option,)
        ) from None
    if len(values) != 3:
        raise OptionError(
            f"{{{option}}}: expected three fractions (train,valid,test), found {len(values)} in {text!r}",
            options=(option,),
        )
    check_fractions(values, option, exact=exact)
    return values  # type: ignore[return-value]


def check_fractions(fractions: Sequence[float], option: str = "split", *, exact: bool = False) -> None:
    """Raise :class:`OptionError` naming ``option`` unless ``fractions`` are three numbers in [0, 1] summing to
    at most 1 (to 1, within 1e-6, when ``exact``)."""
    total = sum(fractions) if len(fractions) == 3 else 0.0
    if (
        len(fractions) != 3
        or any(not (0.0 <= f <= 1.0) for f in fractions)
        or total > 1.0 + 1e-9
        or (exact and abs(total - 1.0) > 1e-6)
    ):
        summing = "summing to 1" if exact else "summing to at most 1"
        raise OptionError(
            f"{{{option}}}: expected three fractions in [0, 1] {summing}, found {tuple(fractions)}",
            options=(option,),
        )


def random_split(
    num_nodes: int,
    fractions: Sequence[float],
    seed: int,
    labelled_mask: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random train/valid/test split of the nodes (only labelled ones when a mask is given).

    Args:
        num_nodes: N.
        fractions: ``(train, valid, test)`` fractions of the candidate nodes, summing to <= 1.
        seed: the split is a pure function of ``(num_nodes, fractions, seed, labelled_mask)``.
        labelled_mask: bool [N] or None; only ``True`` nodes are assigned.

    Returns:
        Three disjoint sorted int64 arrays of node ids. Sizes are ``floor(c * cumulative fraction)``
        differences, so a split of fractions summing to 1 covers every candidate.
    """
    check_fractions(fractions)
    if labelled_mask is not None:
        mask = np.asarray(labelled_mask, dtype=np.bool_)
        if mask.shape != (num_nodes,):
            raise OptionError(f"labelled_mask: expected shape ({num_nodes},), found {mask.shape}")
        candidates = np.flatnonzero(mask).astype(np.int64)
    else:
        candidates = np.arange(num_nodes, dtype=np.int64)
    rng = np.random.default_rng(seed)
    order = rng.permutation(candidates)
    bounds = split_bounds(order.shape[0], fractions)
    parts = tuple(np.sort(order[bounds[i] : bounds[i + 1]]) for i in range(3))
    return parts  # type: ignore[return-value]


def split_bounds(count: int, fractions: Sequence[float]) -> list[int]:
    """``[0, b1, b2, b3]``: where ``count`` ordered candidates are cut into train/valid/test by ``fractions``
    (``floor(count * cumulative fraction)``; fractions summing to 1 cover every candidate). Shared by the random
    split and the time split (:mod:`graphtier.dataset.importers.split.time_holdout`)."""
    cum = np.cumsum(np.asarray(fractions, dtype=np.float64))
    return [0] + [min(count, int(np.floor(count * f + 1e-9))) for f in cum]


def save_splits(writer: DatasetWriter, splits: Sequence[np.ndarray | None]) -> None:
    """Write ``train_idx``/``valid_idx``/``test_idx`` (int64) for the splits that are not None."""
    for split_name, idx in zip(("train", "valid", "test"), splits):
        if idx is not None:
            writer.save(f"{split_name}_idx", np.asarray(idx, dtype=np.int64))
