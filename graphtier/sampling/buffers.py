"""Memory a sampler reuses across batches: per-call work arrays and a ring of output buffers.

Allocating a batch's arrays afresh costs a page fault per 4 KiB page on first touch; on the 2M-node
graph (fanouts 15,10,5, batch 1024: ~330k edges, ~8 MB of arrays per batch) that was about a third of
the sampling time. Two kinds of memory are reused:

* :class:`Workspace` (one per concurrent ``sample`` call): the N-sized ``local id`` scratch and the
  arrays that never leave the sampler (list spans, offsets, the growing ``n_id``), grown geometrically;
* :class:`OutputRing`: int64 buffers that the returned :class:`~graphtier.sampling.batch.MiniBatch`
  tensors are views of. A buffer is handed out again only when no tensor (or numpy array made from
  one) outside the ring references its memory, which the storage's use count tells, as in
  :mod:`graphtier.memory.features.arena`: a consumer that keeps ``k`` batches alive (the trainer prefetches a few
  ahead) holds ``k`` buffers, and a batch is never overwritten while referenced. At most
  ``max_slots`` buffers are kept; past that, or without the (private) torch use-count function,
  batches get fresh memory as before.
"""

from __future__ import annotations

import mmap
import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

_use_count: Callable[[int], int] | None = getattr(torch._C, "_storage_Use_Count", None)

# Slots a ring keeps: the trainer's prefetch depth plus the batch in use, with room to spare.
DEFAULT_MAX_SLOTS = 8


def touch_pages(array: np.ndarray) -> None:
    """Write every page of a contiguous array once so that its page faults happen now (contents undefined)."""
    flat = array.reshape(-1).view(np.uint8)
    flat[:: mmap.PAGESIZE] = 0


class Workspace:
    """The per-call scratch of a sampler: ``local_id`` (N-sized, all -1 between calls) and named work arrays.

    :meth:`array` returns a view of ``size`` elements of a buffer that only grows (x2), so that steady
    state allocates nothing. Contents are undefined unless ``keep`` is set when it grows.
    """

    def __init__(self, num_nodes: int) -> None:
        dtype = np.int32 if num_nodes < 2**31 else np.int64
        self.local_id = np.full(num_nodes, -1, dtype=dtype)
        self._arrays: dict[str, np.ndarray] = {}

    def array(self, name: str, size: int, dtype: type = np.int64, keep: int = 0) -> np.ndarray:
        """``size`` elements of work array ``name``; when it must grow, its first ``keep`` elements are copied."""
        current = self._arrays.get(name)
        if current is None or current.shape[0] < size or current.dtype != dtype:
            grown = np.empty(max(size, 2 * current.shape[0] if current is not None else size, 1024), dtype=dtype)
            touch_pages(grown)
            if current is not None and keep:
                grown[:keep] = current[:keep]
            self._arrays[name] = current = grown
        return current[:size]


class WorkspacePool:
    """One :class:`Workspace` per concurrent call: a sampler used from one thread keeps a single one."""

    def __init__(self, num_nodes: int) -> None:
        self.num_nodes = num_nodes
        self._free: list[Workspace] = []
        self._lock = threading.Lock()

    def take(self) -> Workspace:
        """A workspace whose ``local_id`` is all -1; give it back with :meth:`give_back` (only if still all -1)."""
        with self._lock:
            if self._free:
                return self._free.pop()
        return Workspace(self.num_nodes)

    def give_back(self, workspace: Workspace) -> None:
        with self._lock:
            self._free.append(workspace)


@dataclass
class _Slot:
    buffer: torch.Tensor  # int64 [capacity]
    storage: object  # the buffer's UntypedStorage (kept so its C handle stays valid)
    idle_count: int  # use count of the storage while only the ring references it
    last_taken: int


class OutputRing:
    """Reusable int64 buffers that mini-batch tensors are carved from (see the module docstring). Thread-safe."""

    def __init__(self, max_slots: int = DEFAULT_MAX_SLOTS) -> None:
        self.max_slots = max_slots
        self.capacity = 0  # elements per slot; set by the first batch's need
        self.allocations = 0
        self._slots: list[_Slot] = []
        self._taken = 0
        self._lock = threading.Lock()

    @property
    def slots(self) -> int:
        """Buffers currently held by the ring."""
        return len(self._slots)

    def take(self) -> torch.Tensor | None:
        """A flat int64 [capacity] view of a buffer nothing else references, or None (then allocate fresh).

        The view itself counts as a use: the buffer stays taken until the view and everything carved
        from it are gone.
        """
        if _use_count is None:
            return None
        with self._lock:
            if self.capacity == 0:
                return None
            self._taken += 1
            best: _Slot | None = None
            for slot in self._slots:
                free = _use_count(slot.storage._cdata) == slot.idle_count  # type: ignore[attr-defined]
                if free and (best is None or slot.last_taken > best.last_taken):  # released last: cache-warm
                    best = slot
            if best is None:
                if len(self._slots) >= self.max_slots:
                    return None
                buffer = torch.empty(self.capacity, dtype=torch.int64)
                touch_pages(buffer.numpy())
                storage = buffer.untyped_storage()
                best = _Slot(buffer, storage, _use_count(storage._cdata), 0)  # type: ignore[attr-defined]
                self._slots.append(best)
                self.allocations += 1
            best.last_taken = self._taken
            return best.buffer[:]

    def need(self, elements: int) -> None:
        """Tell the ring a batch needed ``elements``; slots grow (x1.5, dropping the old ones) when short."""
        with self._lock:
            if elements > self.capacity:
                self.capacity = max(elements + elements // 4, self.capacity + self.capacity // 2)
                self._slots = []  # views handed out keep their memory alive


class Carver:
    """Cuts consecutive int64 tensors out of a flat buffer, or allocates them when it is None or full."""

    def __init__(self, buffer: torch.Tensor | None) -> None:
        self.buffer = buffer
        self.used = 0  # elements requested, whether carved or allocated

    def take(self, size: int) -> torch.Tensor:
        """An int64 [size] tensor (contents undefined)."""
        start = self.used
        self.used += size
        if self.buffer is not None and self.used <= self.buffer.shape[0]:
            return self.buffer[start : self.used]
        return torch.empty(size, dtype=torch.int64)
