"""The feature-source interface: ``FeatureSource`` (what every feature store is) and ``TierTraffic`` (its bytes).

As in DGL GraphBolt (``Feature.read`` over ``_read``-style implementations) and PyG (``FeatureStore.get_tensor``
calling the abstract ``_get_tensor``), the public methods live here once and wrap the abstract ones that each
implementation writes: :meth:`FeatureSource.gather` checks the store is open and calls ``_gather``;
:meth:`FeatureSource.close` is idempotent and calls ``_close`` once. Implementations: ``host.py``
(:class:`HostFeatureStore`), ``tiered.py`` (:class:`TieredFeatureStore`, also the zero-copy and disk tiers) and
the wrapper ``cached.py`` (:class:`CachedFeatures`, a row cache in front of any source).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Self

import numpy as np
import torch

from graphtier.errors import OptionError
from graphtier.memory.plan.placement import TIER_NAMES

TRAFFIC_KEYS = (*TIER_NAMES, "requested")


@dataclass(frozen=True, eq=False)
class TierTraffic(Mapping[str, int]):
    """Bytes served per tier (``gpu``, ``gpu-peer``, ``cache``, ``host``, ``disk``) and ``requested`` in all.

    A frozen record with ``+`` and ``-`` (per field). It reads as a mapping from the tier names of
    :data:`graphtier.memory.plan.placement.TIER_NAMES` plus ``"requested"`` to bytes (``traffic["gpu-peer"]``,
    ``dict(traffic)``, equality with such a dict), so reports keep their keys.
    """

    gpu: int = 0
    gpu_peer: int = 0
    cache: int = 0
    host: int = 0
    disk: int = 0
    requested: int = 0

    @classmethod
    def of_rows(cls, row_bytes: int, **rows: int) -> TierTraffic:
        """Traffic of ``rows`` per field (``gpu=3, host=2``) rows of ``row_bytes`` bytes each."""
        return cls(**{name: int(count) * int(row_bytes) for name, count in rows.items()})

    @classmethod
    def served_by(cls, tier: str, nbytes: int) -> TierTraffic:
        """``nbytes`` requested and all served by ``tier`` (a name of TIER_NAMES, e.g. ``"gpu-peer"``)."""
        if tier not in TIER_NAMES:
            raise KeyError(tier)
        return cls(**{tier.replace("-", "_"): int(nbytes)}, requested=int(nbytes))

    def __add__(self, other: TierTraffic) -> TierTraffic:
        return TierTraffic(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def __sub__(self, other: TierTraffic) -> TierTraffic:
        return TierTraffic(*(getattr(self, f.name) - getattr(other, f.name) for f in fields(self)))

    def __getitem__(self, key: str) -> int:
        if key not in TRAFFIC_KEYS:
            raise KeyError(key)
        return int(getattr(self, key.replace("-", "_")))

    def __iter__(self) -> Iterator[str]:
        return iter(TRAFFIC_KEYS)

    def __len__(self) -> int:
        return len(TRAFFIC_KEYS)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self) == dict(other)

    __hash__ = None  # type: ignore[assignment]

    def as_dict(self) -> dict[str, int]:
        """``{tier: bytes}`` over TIER_NAMES plus ``"requested"`` (for reports and JSON)."""
        return dict(self)

    def by_tier(self) -> dict[str, int]:
        """``{tier: bytes}`` over TIER_NAMES only (the report's ``*_bytes_by_tier``)."""
        return {tier: self[tier] for tier in TIER_NAMES}


class FeatureSource(ABC):
    """A read-only [N, D] table of node features, gathered by row id onto ``output_device``.

    Subclasses call ``super().__init__(num_rows, dim, dtype, output_device)`` and implement
    :meth:`_gather`, :meth:`traffic` and :meth:`_close`; they may override :meth:`describe`, and
    ``device_rows`` when a prefix of the rows is already in device memory. Use as a context manager
    or call :meth:`close`.
    """

    def __init__(self, num_rows: int, dim: int, dtype: torch.dtype, output_device: torch.device) -> None:
        self.num_rows = int(num_rows)
        self.dim = int(dim)
        self.dtype = dtype
        self.output_device = torch.device(output_device)
        self.row_bytes = self.dim * torch.empty(0, dtype=dtype).element_size()
        self._closed = False

    # ------------------------------------------------------------------ public (wrapping)
    def gather(self, ids: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Rows ``table[ids]``: ids int [B] (CPU tensor or array) -> [B, D] of ``dtype`` on ``output_device``.

        IndexError for ids outside [0, num_rows) or not 1-d integers; OptionError once closed.
        """
        if self._closed:
            raise OptionError(f"{type(self).__name__}: the feature store is closed")
        return self._gather(ids)

    def gather_mean(
        self, ids: torch.Tensor, rowptr: torch.Tensor, col: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """A GraphSAGE first layer's inputs read straight from the table, or None where this source cannot.

        ``ids`` int64 [S] (CPU) the input block's source nodes, destinations first; ``rowptr`` int64 [R + 1] and
        ``col`` int64 [E] (CPU) its CSR over the R destinations. Returns ``(agg, root)``, float32 [R, D] each on
        the CPU: ``root = table[ids[:R]]`` and ``agg[r]`` the mean of ``table[ids[col[e]]]`` over ``r``'s edges
        (the floats of gathering ``table[ids]`` and averaging its rows), without the [S, D] gather. The traffic
        counts the rows of ``ids``, as :meth:`gather` does. IndexError for ids out of range.
        """
        if self._closed:
            raise OptionError(f"{type(self).__name__}: the feature store is closed")
        return self._gather_mean(ids, rowptr, col)

    def _gather_mean(
        self, ids: torch.Tensor, rowptr: torch.Tensor, col: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        """The sources that read float32 rows in host memory implement this (see :meth:`gather_mean`)."""
        return None

    def close(self) -> None:
        """Release what this source owns (buffers, registrations, device memory); idempotent."""
        if self._closed:
            return
        self._closed = True
        self._close()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` has run."""
        return self._closed

    @property
    def device_rows(self) -> int:
        """Rows [0, device_rows) are served from the output device's own memory (a cache adds nothing there)."""
        return 0

    @property
    def cache_hit_ratio(self) -> float | None:
        """Hits / lookups of a row cache in this source, None when it has none (:class:`CachedFeatures` has one)."""
        return None

    def describe(self) -> str:
        """One line: what the source is and where its rows live."""
        return f"{type(self).__name__}: {self.num_rows} rows x {self.dim} {self.dtype} on {self.output_device}"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ implementations
    @abstractmethod
    def _gather(self, ids: torch.Tensor | np.ndarray) -> torch.Tensor:
        """The gather of an open source (see :meth:`gather`)."""

    @abstractmethod
    def traffic(self) -> TierTraffic:
        """Cumulative bytes served per tier; the tiers add up to ``requested``."""

    @abstractmethod
    def _close(self) -> None:
        """Release what the source owns; called once by :meth:`close`."""


def bytes_by_tier_by_type(
    before: Mapping[str, TierTraffic], after: Mapping[str, TierTraffic]
) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """The bytes each tier served between two readings of per-type traffic (typed datasets: one feature source
    per node type, ``{type: source.traffic()}``): ``(total {tier: bytes}, {type: {tier: bytes}})``.

    The total is the report's ``feature_bytes_by_tier``, the per-type split its ``feature_bytes_by_tier_by_type``.
    A type in ``after`` but not ``before`` counts from zero.
    """
    by_type = {name: (traffic - before.get(name, TierTraffic())).by_tier() for name, traffic in after.items()}
    total = {tier: sum(part[tier] for part in by_type.values()) for tier in TIER_NAMES}
    return total, by_type
