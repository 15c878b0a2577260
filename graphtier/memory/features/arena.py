"""StagingArena: the reusable host buffers a feature store gathers rows into (one arena per store).

A gather writes [B, D] rows into host memory before anyone reads them. Allocating that memory per
call costs a page fault per 4 KiB page on first touch (and pinned allocations are slow), which made a
21k-row gather take 4x as long as the copy itself. The arena keeps a few slot buffers of one common
capacity (rows) that are allocated, touched (every page faulted in) and, on CUDA, pinned once:

* a request of more rows than the capacity grows it geometrically (x2, capped by ``max_rows`` when
  the request fits under that bound; past the bound, to the request plus a quarter: each of the batches in
  flight holds a slot, so doubling a slot of a billion-edge graph's evaluation batch costs GBs), so a run sees
  O(log B) allocations and none in steady state;
  slots are touched (every page faulted in) when allocated, never in a gather;
* a slot is handed out again only when no tensor or array outside the arena references its memory
  (its storage's use count) and, for pinned slots, only ``ring_size`` calls after it was last handed
  out (an asynchronous host-to-device copy may still read a buffer whose tensor is gone);
* among the free slots, unpinned arenas take the one released last (its lines are still in the CPU
  caches, as the single ``out`` buffer of ``torch.index_select(out=...)`` is), pinned arenas the oldest;
* when every slot is in use, one more slot of the same capacity is allocated: a consumer that keeps
  ``k`` outputs alive costs ``k + 1`` slots, and is never handed memory it still reads.

Without ``torch._C._storage_Use_Count`` (a private torch function) slots are reused strictly in
ring order, ``ring_size`` calls apart, which is the contract the trainer's pipeline was built on
(the trainer passes its prefetch depth + 3).
"""

from __future__ import annotations

import mmap
import threading
from collections.abc import Callable
from dataclasses import dataclass

import torch

from graphtier.errors import OptionError

PAGE_BYTES = mmap.PAGESIZE

_use_count: Callable[[int], int] | None = getattr(torch._C, "_storage_Use_Count", None)


def batch_rows_bound(batch_size: int, fanouts: list[int] | tuple[int, ...], num_nodes: int) -> int:
    """Upper bound of the rows a neighbour-sampled mini-batch gathers: batch * prod(fanout + 1), at most num_nodes.

    Every seed brings at most ``fanout`` new nodes per layer per frontier node, so layer ``l`` has at
    most ``batch * prod_{i<=l}(f_i + 1)`` nodes; a full-neighbour layer (fanout < 0) is bounded by the graph.
    """
    bound = int(batch_size)
    for fanout in fanouts:
        if fanout < 0 or bound >= num_nodes:
            return int(num_nodes)
        bound *= int(fanout) + 1
    return int(min(bound, num_nodes))


# device bytes of a sampled batch's block structure per row bound: the node's int64 id and its edge's two int64 endpoints
BLOCK_BYTES_PER_ROW = 24


def in_flight_bytes(rows_bound: int, row_bytes: int, prefetch: int) -> int:
    """Device bytes the batches in flight can take: (prefetch + 2) batches of ``rows_bound`` rows.

    Per row: ``row_bytes`` of gathered features plus :data:`BLOCK_BYTES_PER_ROW` of blocks (a batch
    samples at most one edge per row beyond its seeds). ``prefetch`` batches wait in the pipeline,
    one is trained on and one is being gathered; ``auto`` GPU budgets leave this much free.
    """
    return (max(0, int(prefetch)) + 2) * int(rows_bound) * (int(row_bytes) + BLOCK_BYTES_PER_ROW)


@dataclass
class _Slot:
    buffer: torch.Tensor  # [capacity, dim]
    storage: object  # the buffer's UntypedStorage (kept so its C handle stays valid)
    idle_count: int  # use count of the storage while only the arena references it
    last_call: int  # the call that last handed it out (-inf-like when never)


class StagingArena:
    """Reusable [rows, dim] host buffers of ``dtype`` for a feature store's gathers.

    Args:
        dim: row width (elements).
        dtype: element dtype of the buffers.
        ring_size: pinned buffers are handed out again at least this many calls later (the
            trainer's prefetch depth + 3); also the reuse distance when use counts are unavailable.
        pin: allocate page-locked (pinned) memory; needs CUDA.
        max_rows: an upper bound of the rows one call requests (:func:`batch_rows_bound`): geometric
            growth stops there; a larger request grows the capacity past it (x2 again).

    Counters: ``allocations`` (slot buffers allocated), ``allocated_bytes`` (their bytes in total).
    Thread-safe.
    """

    def __init__(
        self, dim: int, dtype: torch.dtype, *, ring_size: int = 6, pin: bool = False, max_rows: int | None = None
    ) -> None:
        if pin and not torch.cuda.is_available():
            raise OptionError("pinned staging buffers need CUDA, and no CUDA device is available")
        self.dim = int(dim)
        self.dtype = dtype
        self.ring_size = max(1, int(ring_size))
        self.pin = pin
        self.max_rows = None if max_rows is None else max(1, int(max_rows))
        self.capacity = 0
        self.allocations = 0
        self.allocated_bytes = 0
        self._slots: list[_Slot] = []
        self._calls = 0
        self._lock = threading.Lock()

    @property
    def slots(self) -> int:
        """Slot buffers currently held."""
        return len(self._slots)

    @property
    def nbytes(self) -> int:
        """Bytes of the slot buffers currently held."""
        return sum(slot.buffer.numel() * slot.buffer.element_size() for slot in self._slots)

    def reserve(self, rows: int) -> None:
        """Make every future slot hold at least ``rows`` rows (a size hint; allocates lazily)."""
        with self._lock:
            self._grow_to(int(rows))

    def take(self, rows: int) -> torch.Tensor:
        """A [rows, dim] view of a slot that nothing outside the arena uses; valid until the caller drops it.

        For pinned arenas the memory is not handed out again before ``ring_size`` further calls.
        """
        rows = int(rows)
        if rows == 0:
            return torch.empty((0, self.dim), dtype=self.dtype)
        with self._lock:
            self._calls += 1
            if rows > self.capacity:
                self._grow_to(rows)
            slot = self._free_slot()
            if slot is None:
                slot = self._allocate()
            slot.last_call = self._calls
            return slot.buffer[:rows]

    def release(self) -> None:
        """Drop every slot (memory returns once the callers drop their views); the arena stays usable."""
        with self._lock:
            self._slots = []

    # ------------------------------------------------------------------ internals
    def _grow_to(self, rows: int) -> None:
        if rows <= self.capacity:
            return
        grown = max(rows, 2 * self.capacity)
        if self.max_rows is not None and rows <= self.max_rows:
            grown = min(grown, self.max_rows)
        elif self.max_rows is not None:  # past the bound (larger evaluation batches): a quarter more, not double
            grown = rows + rows // 4
        self.capacity = grown
        # slots of the old capacity are dropped; views handed out keep their memory alive
        self._slots = []

    def _is_free(self, slot: _Slot) -> bool:
        age = self._calls - slot.last_call
        if _use_count is None:
            return age >= self.ring_size
        if self.pin and age < self.ring_size:
            return False
        return _use_count(slot.storage._cdata) == slot.idle_count  # type: ignore[attr-defined]

    def _free_slot(self) -> _Slot | None:
        best: _Slot | None = None
        for slot in self._slots:
            if not self._is_free(slot):
                continue
            if best is None:
                best = slot
            elif self.pin or _use_count is None:
                best = slot if slot.last_call < best.last_call else best  # oldest: ring order
            else:
                best = slot if slot.last_call > best.last_call else best  # released last: cache-warm
        return best

    def _allocate(self) -> _Slot:
        buffer = torch.empty((self.capacity, self.dim), dtype=self.dtype, pin_memory=self.pin)
        if not self.pin and buffer.numel():
            touch_pages(buffer)
        storage = buffer.untyped_storage()
        slot = _Slot(buffer, storage, 0, -(1 << 62))
        if _use_count is not None:
            slot.idle_count = _use_count(storage._cdata)  # type: ignore[attr-defined]
        self._slots.append(slot)
        self.allocations += 1
        self.allocated_bytes += buffer.numel() * buffer.element_size()
        return slot


def touch_pages(buffer: torch.Tensor) -> None:
    """Write one byte of every page of a contiguous CPU tensor so its page faults happen now, not in a gather."""
    flat = buffer.reshape(-1).view(torch.uint8)
    flat[::PAGE_BYTES].zero_()
