"""CachedFeatures: a row cache in front of any feature source (GraphBolt's ``GPUCachedFeature(fallback)``).

A gather looks the rows up in a :class:`graphtier.memory.features.cache.RowCache` on the fallback's output device,
reads the misses (and the rows the fallback already serves from device memory, ``fallback.device_rows``,
which are never cached) from the fallback in one call, writes them into the output and admits the
missed rows into the cache. From the caller's side it is the fallback's table: ``gather(ids)`` equals
``table[ids]``. Bytes: cache hits count as the "cache" tier, everything else as the fallback counted it.
"""

from __future__ import annotations

import threading

import numpy as np
import torch

from graphtier.memory.features.arena import StagingArena
from graphtier.memory.features.cache import DEFAULT_WAYS, RowCache
from graphtier.memory.features.host import raise_out_of_range, row_ids
from graphtier.memory.features.source import FeatureSource, TierTraffic
from graphtier.memory.plan.placement import format_bytes


class CachedFeatures(FeatureSource):
    """``fallback`` behind a CLOCK row cache of ``capacity`` rows (set-associative, ``ways`` per set).

    Args:
        fallback: the source of the rows; owned: closing the wrapper closes it.
        capacity: cache rows (at least 1).
        ring_size: reuse distance of the CPU output buffers (as the fallback's).
        max_batch_rows: an upper bound of the rows of one call (caps the output arena's growth).
        ways: slots per cache set.

    ``hit_ratio`` (hits / lookups of cacheable rows so far) and ``cache`` (the :class:`RowCache`) are public.
    """

    def __init__(
        self,
        fallback: FeatureSource,
        capacity: int,
        *,
        ring_size: int = 6,
        max_batch_rows: int | None = None,
        ways: int = DEFAULT_WAYS,
    ) -> None:
        super().__init__(fallback.num_rows, fallback.dim, fallback.dtype, fallback.output_device)
        self.fallback = fallback
        self.cache = RowCache(capacity, self.dim, self.dtype, self.output_device, ways=ways)
        on_cpu = self.output_device.type == "cpu"
        self._arena = (
            StagingArena(self.dim, self.dtype, ring_size=ring_size, max_rows=max_batch_rows) if on_cpu else None
        )
        self._lock = threading.Lock()
        self._hit_bytes = 0

    @property
    def hit_ratio(self) -> float:
        """Cache hits / cache lookups over the wrapper's life (0.0 before the first lookup)."""
        return self.cache.hit_ratio

    @property
    def cache_hit_ratio(self) -> float:
        """The same as :attr:`hit_ratio` (the :class:`FeatureSource` name every source answers)."""
        return self.cache.hit_ratio

    @property
    def device_rows(self) -> int:
        return self.fallback.device_rows

    def _gather(self, ids: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Rows ``table[ids]``: ids int [B] (CPU) -> [B, D] on ``output_device`` (CPU: a view of an arena buffer)."""
        ids_np = row_ids(ids).astype(np.int64, copy=False)
        if ids_np.size and (int(ids_np.min()) < 0 or int(ids_np.max()) >= self.num_rows):
            raise_out_of_range(ids_np, self.num_rows)  # the cache is probed before the fallback checks
        with self._lock:
            if self._arena is not None:
                out = self._arena.take(ids_np.shape[0])
            else:
                out = torch.empty((ids_np.shape[0], self.dim), dtype=self.dtype, device=self.output_device)
            if ids_np.shape[0] == 0:
                return out
            ids_t = torch.from_numpy(ids_np).to(self.output_device)
            cacheable = ids_t >= self.fallback.device_rows
            cacheable_positions = torch.nonzero(cacheable).flatten()
            hit, slots = self.cache.lookup(ids_t[cacheable_positions])
            hit_positions = cacheable_positions[hit]
            if hit_positions.numel():
                out[hit_positions] = self.cache.read(slots[hit])
            miss_positions = cacheable_positions[~hit]
            fetch = torch.cat([torch.nonzero(~cacheable).flatten(), miss_positions])
            if fetch.numel():
                out[fetch] = self.fallback.gather(ids_np[fetch.cpu().numpy()])
            self.cache.insert(ids_t[miss_positions], out[miss_positions])
            self._hit_bytes += int(hit_positions.numel()) * self.row_bytes
        return out

    def traffic(self) -> TierTraffic:
        """The fallback's bytes plus the cache hits (tier "cache", also counted as requested)."""
        with self._lock:
            hits = self._hit_bytes
        return self.fallback.traffic() + TierTraffic(cache=hits, requested=hits)

    def describe(self) -> str:
        """The fallback's line, then the cache's size and hit ratio so far."""
        return (
            f"{self.fallback.describe()}; cache {format_bytes(self.cache.nbytes)}, hit ratio {self.cache.hit_ratio:.3f}"
        )

    def _close(self) -> None:
        with self._lock:
            self.fallback.close()
            self.cache.release()
            if self._arena is not None:
                self._arena.release()
