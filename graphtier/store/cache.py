"""A direct-mapped row cache for the cold tiers, in device memory on CUDA (host memory on the CPU).

Rows outside the GPU tiers are looked up in ``capacity`` slots; row ``r`` can only live in slot
``r % capacity``. Every miss is admitted (the newest row of a slot wins), so recently used cold
rows are served from the cache until a conflicting row evicts them.

Invariant (the cache never returns a stale row): for every slot ``s`` with ``tags[s] >= 0``,
``rows[s]`` is the row ``tags[s]`` of the table. :meth:`RowCache.insert` keeps it by writing one
winner per slot, its row before its tag, from the same source rows; the feature table is
read-only while a store is open.
"""

from __future__ import annotations

import torch

from graphtier.errors import OptionError


class RowCache:
    """``capacity`` rows of ``dim`` values of ``dtype`` on ``device``, tagged with their row ids.

    Counters ``lookups`` and ``hits`` accumulate over :meth:`lookup` calls.
    """

    def __init__(self, capacity: int, dim: int, dtype: torch.dtype, device: torch.device) -> None:
        if capacity < 1:
            raise OptionError(f"--cache-budget: the cache needs at least one row, found capacity {capacity}")
        self.capacity = int(capacity)
        self.device = torch.device(device)
        self.tags = torch.full((self.capacity,), -1, dtype=torch.int64, device=self.device)
        self.rows = torch.zeros((self.capacity, dim), dtype=dtype, device=self.device)
        self.lookups = 0
        self.hits = 0

    @property
    def hit_ratio(self) -> float:
        """Hits / lookups over the cache's life (0.0 before the first lookup)."""
        return self.hits / self.lookups if self.lookups else 0.0

    @property
    def nbytes(self) -> int:
        return int(self.rows.numel() * self.rows.element_size() + self.tags.numel() * 8)

    def slots_of(self, ids: torch.Tensor) -> torch.Tensor:
        """The slot of each id: int64 [B] -> int64 [B] (same device)."""
        return torch.remainder(ids, self.capacity)

    def lookup(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(hit mask bool [B], slots int64 [B]) for row ids int64 [B] on the cache's device."""
        slots = self.slots_of(ids)
        hit = self.tags[slots] == ids
        self.lookups += int(ids.shape[0])
        self.hits += int(hit.sum())
        return hit, slots

    def read(self, slots: torch.Tensor) -> torch.Tensor:
        """Rows held in ``slots`` (int64 [K] on the cache's device) -> [K, D]."""
        return self.rows[slots]

    def insert(self, ids: torch.Tensor, rows: torch.Tensor) -> None:
        """Admit ``rows`` ([K, D], the table's rows ``ids`` int64 [K]) into their slots; one winner per slot."""
        if ids.shape[0] == 0:
            return
        slots = self.slots_of(ids)
        unique_slots, inverse = torch.unique(slots, return_inverse=True)
        order = torch.arange(ids.shape[0], device=ids.device)
        winner = torch.full((unique_slots.shape[0],), -1, dtype=torch.int64, device=ids.device)
        winner.scatter_reduce_(0, inverse, order, reduce="amax", include_self=True)
        self.rows[unique_slots] = rows[winner]
        self.tags[unique_slots] = ids[winner]

    def clear(self) -> None:
        """Forget every row (tags to -1); counters are kept."""
        self.tags.fill_(-1)
