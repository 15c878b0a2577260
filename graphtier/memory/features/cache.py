"""A set-associative row cache with CLOCK replacement, in device memory on CUDA (host memory on the CPU).

Rows outside the GPU tiers are cached in ``capacity`` slots grouped into sets of ``ways`` slots; row
``r`` may live in any slot of set ``r % num_sets``. Each slot has a reference bit, set when a lookup hits
it. Misses are admitted in bulk: in every set that receives k new rows, a CLOCK hand sweeps from its
position, evicting slots whose reference bit is clear and clearing (giving a second chance to) the
referenced slots it passes, until it has k victims; rows admitted together never evict each other. This
is the sequential CLOCK algorithm with the batch's new rows protected until the batch is in (a test
compares the two). All operations are whole-tensor operations (no Python loop over rows), so they run on
the GPU as they are.

Invariant (the cache never returns a stale row): for every slot ``s`` with ``tags[s] >= 0``,
``rows[s]`` is the row ``tags[s]`` of the table. :meth:`RowCache.insert` keeps it by writing each
admitted row and its tag to the same slot from the same source rows; the feature table is read-only
while a store is open.
"""

from __future__ import annotations

import torch

from graphtier.errors import OptionError

DEFAULT_WAYS = 8


class RowCache:
    """``capacity`` rows of ``dim`` values of ``dtype`` on ``device``, tagged with their row ids.

    ``tags`` (int64 [capacity], -1 = empty) and ``rows`` ([capacity, dim]) are flat over the slots; slot
    ``set * ways + way``. Counters ``lookups`` and ``hits`` accumulate over :meth:`lookup` calls.
    """

    def __init__(
        self, capacity: int, dim: int, dtype: torch.dtype, device: torch.device, *, ways: int = DEFAULT_WAYS
    ) -> None:
        if capacity < 1:
            raise OptionError(f"--cache-budget: the cache needs at least one row, found capacity {capacity}")
        self.device = torch.device(device)
        self.ways = max(1, min(int(ways), int(capacity)))
        self.num_sets = int(capacity) // self.ways
        self.capacity = self.num_sets * self.ways
        self.tags = torch.full((self.capacity,), -1, dtype=torch.int64, device=self.device)
        self.rows = torch.zeros((self.capacity, dim), dtype=dtype, device=self.device)
        self.referenced = torch.zeros(self.capacity, dtype=torch.bool, device=self.device)
        self.hands = torch.zeros(self.num_sets, dtype=torch.int64, device=self.device)
        self._ways = torch.arange(self.ways, device=self.device)
        self.lookups = 0
        self.hits = 0

    @property
    def hit_ratio(self) -> float:
        """Hits / lookups over the cache's life (0.0 before the first lookup)."""
        return self.hits / self.lookups if self.lookups else 0.0

    @property
    def nbytes(self) -> int:
        return int(self.rows.numel() * self.rows.element_size() + self.tags.numel() * 9 + self.hands.numel() * 8)

    def _find(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(present bool [B], slot int64 [B]) of row ids int64 [B]; the slot is meaningful where present."""
        sets = torch.remainder(ids, self.num_sets)
        candidates = sets.unsqueeze(1) * self.ways + self._ways  # [B, ways]
        match = self.tags[candidates] == ids.unsqueeze(1)
        present = match.any(dim=1)
        way = match.to(torch.int8).argmax(dim=1)
        return present, sets * self.ways + way

    def lookup(self, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(hit mask bool [B], slots int64 [B]) for row ids int64 [B] on the cache's device.

        Hits set their slot's reference bit (CLOCK's "recently used").
        """
        hit, slots = self._find(ids)
        self.referenced[slots[hit]] = True
        self.lookups += int(ids.shape[0])
        self.hits += int(hit.sum())
        return hit, slots

    def read(self, slots: torch.Tensor) -> torch.Tensor:
        """Rows held in ``slots`` (int64 [K] on the cache's device) -> [K, D]."""
        return self.rows[slots]

    def insert(self, ids: torch.Tensor, rows: torch.Tensor) -> None:
        """Admit ``rows`` ([K, D], the table's rows ``ids`` int64 [K]) by CLOCK replacement in their sets.

        Ids already cached and repeated ids are admitted once (in order of first occurrence); when a set
        receives more new rows than it has ways, the last ``ways`` of them are kept.
        """
        if ids.shape[0] == 0:
            return
        # one entry per distinct id (its first occurrence), not already cached
        unique_ids, inverse = torch.unique(ids, return_inverse=True)
        first = torch.full((unique_ids.shape[0],), ids.shape[0], dtype=torch.int64, device=ids.device)
        first.scatter_reduce_(0, inverse, torch.arange(ids.shape[0], device=ids.device), reduce="amin")
        present, _ = self._find(unique_ids)
        chosen = first[~present]
        if chosen.numel() == 0:
            return
        chosen = chosen.sort().values  # ids order
        new_ids = ids[chosen]
        sets = torch.remainder(new_ids, self.num_sets)
        # rank of each new row among the new rows of its set, counted from the last one
        order = torch.sort(sets * ids.shape[0] + torch.arange(new_ids.shape[0], device=ids.device)).indices
        sorted_sets = sets[order]
        counts = torch.bincount(sorted_sets, minlength=self.num_sets)
        ends = torch.cumsum(counts, 0)
        from_end = ends[sorted_sets] - 1 - torch.arange(sorted_sets.shape[0], device=ids.device)
        keep = from_end < self.ways
        order, sorted_sets, from_end = order[keep], sorted_sets[keep], from_end[keep]
        admitted = counts.clamp(max=self.ways)
        # CLOCK victims of every touched set: sweeping from the hand, unreferenced slots are taken in clock
        # order; if a set needs more than it has, the sweep comes round again to the (now cleared) others.
        touched = torch.nonzero(admitted).flatten()
        slot_base = touched.unsqueeze(1) * self.ways
        distance = torch.remainder(self._ways.unsqueeze(0) - self.hands[touched].unsqueeze(1), self.ways)
        referenced = self.referenced[slot_base + self._ways]
        sweep_key = referenced.to(torch.int64) * self.ways + distance  # first sweep, then second sweep
        victim_ways = torch.argsort(sweep_key, dim=1)  # [T, ways] in eviction order
        need = admitted[touched]
        rows_index = torch.arange(touched.shape[0], device=ids.device)
        last_way = victim_ways[rows_index, need - 1]
        last_distance = distance[rows_index, last_way]
        # the hand passed (and cleared) every slot up to its last victim; a set that needed more than its
        # unreferenced slots went round once, clearing them all
        unreferenced = (~referenced).sum(dim=1)
        passed = torch.where(
            (need <= unreferenced).unsqueeze(1), distance <= last_distance.unsqueeze(1), torch.ones_like(referenced)
        )
        self.referenced[(slot_base + self._ways)[passed]] = False
        self.hands[touched] = torch.remainder(last_way + 1, self.ways)
        # the k-th newest row of a set (from_end = k) takes the set's (need - 1 - k)-th victim
        position_of_set = torch.full((self.num_sets,), -1, dtype=torch.int64, device=ids.device)
        position_of_set[touched] = torch.arange(touched.shape[0], device=ids.device)
        rows_of_set = position_of_set[sorted_sets]
        victim = victim_ways[rows_of_set, admitted[sorted_sets] - 1 - from_end]
        slots = sorted_sets * self.ways + victim
        source = chosen[order]
        self.rows[slots] = rows[source]
        self.tags[slots] = ids[source]
        self.referenced[slots] = False

    def release(self) -> None:
        """Free the cache's memory (every tensor emptied); counters are kept, lookups find nothing."""
        empty = torch.empty(0, dtype=torch.int64, device=self.device)
        self.tags, self.hands, self.referenced = empty, empty, empty.to(torch.bool)
        self.rows = self.rows[:0]
        self.capacity = self.num_sets = 0

    def clear(self) -> None:
        """Forget every row (tags to -1, reference bits cleared); counters are kept."""
        self.tags.fill_(-1)
        self.referenced.fill_(False)
        self.hands.zero_()
