"""UnifiedTensor: a host tensor registered with CUDA (``cudaHostRegister``) so GPU kernels read it directly.

Registration maps existing host memory into the GPU's address space without allocating (Data Tiering
Appendix A.2, Figure 12; PyTorch-Direct §4): a Triton kernel given the tensor then reads host memory over
PCIe ("zero-copy"), with no CPU gather and no staging copy.

CUDA tracks registrations by page: registering a range that overlaps an already registered one
fails (``cudaErrorHostMemoryAlreadyRegistered``), and memory must stay allocated until it is
unregistered. This module keeps a process-wide registry of registered page ranges: registering the
exact same range again shares the registration (reference counted), a partial overlap is refused
with an OptionError, and the tensor is kept alive until the last :meth:`UnifiedTensor.close` (or
garbage collection) unregisters it.

Large tensors are registered in chunks of at most :data:`REGISTER_CHUNK_BYTES` (whole pages, counted
from the tensor's first page), each its own ``cudaHostRegister`` call and registry entry: a single
call over tens of GB is known to fail (quiver#102), and bounded chunks keep a failure cheap to undo.
Two tensors over the same pages get the same chunks and share them; a chunk that overlaps a
registered range without matching it is refused; a failure part-way unregisters the chunks already
registered before it raises.

GPU readiness (issue 22):

* The registry, not ``Tensor.is_pinned()``, decides: CUDA reports every address inside registered
  memory as pinned, so a second tensor over part of a registered one must still share (or be refused
  by) the registry. ``is_pinned()`` is trusted only for memory the registry does not cover (torch's
  own pinned allocations, mapped by construction).
* Memory is unregistered only after the GPU is done with it: :meth:`UnifiedTensor.record_use`
  records a CUDA event after a launch that reads the tensor, and every release path (``close``,
  the finalizer, garbage collection) synchronizes those events before ``cudaHostUnregister``.
* The kernels index every chunk from one base pointer, so each chunk's device address must equal
  its host address (``cuMemHostGetDevicePointer``); otherwise the registration is undone and refused.
* Only page-aligned RAM that graphtier allocated (:func:`page_aligned_empty`) is registered in
  place; anything else (a heap array sharing pages with other objects, a file-backed memory map)
  is copied into such memory first.
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import threading
import weakref
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from graphtier.errors import OptionError

PAGE_BYTES = mmap.PAGESIZE
REGISTER_CHUNK_BYTES = 1 << 30


class HostRegistrar(Protocol):
    """Registers host memory with the GPU driver (a fake one is used in tests)."""

    def register(self, address: int, nbytes: int) -> None: ...

    def unregister(self, address: int) -> None: ...

    def device_pointer(self, address: int) -> int:
        """The device address of registered host memory at ``address`` (equal to it on UVA systems)."""
        ...


@functools.cache
def _cuda_driver() -> ctypes.CDLL:
    """The CUDA driver library (loaded by torch's CUDA runtime already; opened here for one query)."""
    return ctypes.CDLL("libcuda.so.1")


class CudaHostRegistrar:
    """``cudaHostRegister`` / ``cudaHostUnregister`` through ``torch.cuda.cudart()``."""

    def register(self, address: int, nbytes: int) -> None:
        if not torch.cuda.is_available():
            raise OptionError(
                "registering host memory for zero-copy access needs CUDA, and no CUDA device is available"
            )
        error = int(torch.cuda.cudart().cudaHostRegister(address, nbytes, 0))
        if error != 0:
            raise OptionError(
                f"cudaHostRegister of {nbytes} bytes at {address:#x} failed with CUDA error {error} "
                "(expected 0; too much memory locked? check `ulimit -l`)"
            )

    def unregister(self, address: int) -> None:
        error = int(torch.cuda.cudart().cudaHostUnregister(address))
        if error != 0:
            raise RuntimeError(f"cudaHostUnregister at {address:#x} failed with CUDA error {error}")

    def device_pointer(self, address: int) -> int:
        pointer = ctypes.c_uint64(0)
        try:
            query = _cuda_driver().cuMemHostGetDevicePointer_v2
        except (OSError, AttributeError) as exc:
            raise OptionError(
                f"zero-copy access needs the CUDA driver's cuMemHostGetDevicePointer, found none ({exc})"
            ) from None
        error = int(query(ctypes.byref(pointer), ctypes.c_void_p(address), ctypes.c_uint(0)))
        if error != 0:
            raise OptionError(f"cuMemHostGetDevicePointer at {address:#x} failed with CUDA error {error} (expected 0)")
        return int(pointer.value)


@dataclass
class _Registration:
    first_page: int
    end_page: int
    address: int
    nbytes: int
    registrar: HostRegistrar
    references: int = 1


class _Registry:
    """Process-wide table of registered page ranges, keyed by (first page, end page)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: dict[tuple[int, int], _Registration] = {}

    def acquire(self, address: int, nbytes: int, registrar: HostRegistrar, chunk_bytes: int) -> list[tuple[int, int]]:
        """Register bytes [address, address + nbytes) in chunks of ``chunk_bytes`` (rounded down to whole pages).

        Returns the registry keys (first page, end page) of the chunks, in address order. All or
        nothing: an overlap is refused before any call, and a registrar failure releases the chunks
        acquired by this call before the error propagates.
        """
        first_page = address // PAGE_BYTES
        end_page = -(-(address + nbytes) // PAGE_BYTES)
        chunk_pages = max(1, int(chunk_bytes) // PAGE_BYTES)
        keys = [(page, min(end_page, page + chunk_pages)) for page in range(first_page, end_page, chunk_pages)]
        with self.lock:
            for first, end in keys:
                if (first, end) in self.entries:
                    continue
                for (other_first, other_end), entry in self.entries.items():
                    if other_first < end and first < other_end:
                        raise OptionError(
                            f"host memory [{address:#x}, {address + nbytes:#x}) overlaps a range already registered "
                            f"for zero-copy access [{entry.address:#x}, {entry.address + entry.nbytes:#x}) in "
                            "different pages: expected the same range or a disjoint one"
                        )
            acquired: list[tuple[int, int]] = []
            try:
                for key in keys:
                    existing = self.entries.get(key)
                    if existing is not None:
                        existing.references += 1
                    else:
                        start = max(address, key[0] * PAGE_BYTES)
                        stop = min(address + nbytes, key[1] * PAGE_BYTES)
                        registrar.register(start, stop - start)
                        self.entries[key] = _Registration(key[0], key[1], start, stop - start, registrar)
                        acquired.append(key)
                        _check_device_pointer(registrar, start, stop - start)
                        continue
                    acquired.append(key)
            except BaseException:
                for key in reversed(acquired):
                    self._release_locked(key)
                raise
            return keys

    def release(self, keys: list[tuple[int, int]]) -> None:
        """Drop one reference to each chunk; unregister the chunks nobody uses any more."""
        with self.lock:
            for key in reversed(keys):
                self._release_locked(key)

    def _release_locked(self, key: tuple[int, int]) -> None:
        entry = self.entries.get(key)
        if entry is None:
            return
        entry.references -= 1
        if entry.references == 0:
            del self.entries[key]
            entry.registrar.unregister(entry.address)

    def is_registered(self, address: int) -> bool:
        page = address // PAGE_BYTES
        with self.lock:
            return any(first <= page < end for first, end in self.entries)

    def covers_any(self, address: int, nbytes: int) -> bool:
        """True when a page of bytes [address, address + nbytes) lies in a registered range."""
        first_page = address // PAGE_BYTES
        end_page = -(-(address + nbytes) // PAGE_BYTES)
        with self.lock:
            return any(first < end_page and first_page < end for first, end in self.entries)


REGISTRY = _Registry()


def _check_device_pointer(registrar: HostRegistrar, address: int, nbytes: int) -> None:
    """OptionError unless the device sees the registered chunk at its host address (one base pointer for all chunks)."""
    device_address = int(registrar.device_pointer(address))
    if device_address != address:
        raise OptionError(
            f"zero-copy access: registered host memory [{address:#x}, {address + nbytes:#x}) has device address "
            f"{device_address:#x}, expected the host address (this GPU cannot use host pointers for registered memory)"
        )


class _PendingReads:
    """CUDA events recorded after the launches that read a registered tensor, one per stream (the latest)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: dict[Hashable, torch.cuda.Event] = {}

    def record(self, stream: Hashable) -> None:
        event = torch.cuda.Event()
        event.record(stream)
        with self.lock:
            self.events[stream] = event

    def wait(self) -> None:
        """Block until every recorded read has finished on the GPU."""
        with self.lock:
            events, self.events = list(self.events.values()), {}
        for event in events:
            event.synchronize()


def _release(keys: list[tuple[int, int]], keep_alive: torch.Tensor, pending: _PendingReads) -> None:
    """Wait for the GPU's reads, then drop the registration references (the finalizer: holds no UnifiedTensor)."""
    try:
        pending.wait()
    finally:
        if keys:
            REGISTRY.release(keys)
        del keep_alive


# page-aligned allocations made by page_aligned_empty, by start address (weak: gone with their memory)
_ALLOCATIONS: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()


def is_graphtier_allocation(address: int, nbytes: int) -> bool:
    """True when bytes [address, address + nbytes) lie inside a live :func:`page_aligned_empty` allocation."""
    for start, allocation in list(_ALLOCATIONS.items()):
        if start <= address and address + nbytes <= start + allocation.nbytes:
            return True
    return False


def page_aligned_empty(rows: int, dim: int | None, dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised CPU tensor [rows, dim] (or [rows] when ``dim`` is None) of ``dtype`` whose memory
    starts on a page and spans whole pages.

    Two such tensors never share a page, so each can be registered on its own.
    """
    itemsize = torch.empty(0, dtype=dtype).element_size()
    nbytes = rows * (1 if dim is None else dim) * itemsize
    padded = -(-max(nbytes, 1) // PAGE_BYTES) * PAGE_BYTES
    raw = np.empty(padded + PAGE_BYTES, dtype=np.uint8)
    start = (-raw.ctypes.data) % PAGE_BYTES
    aligned_np = raw[start : start + padded]
    _ALLOCATIONS[aligned_np.ctypes.data] = aligned_np  # kept alive by the tensor below, as long as its storage
    aligned = torch.from_numpy(aligned_np)
    flat = aligned[:nbytes].view(dtype)
    return flat if dim is None else flat.view(rows, dim)


class UnifiedTensor:
    """A contiguous CPU tensor made readable by CUDA kernels (zero-copy over PCIe).

    Args:
        tensor: contiguous CPU tensor. Memory from :func:`page_aligned_empty` is registered in place
            and kept alive while registered; torch's own pinned memory is used as it is; any other
            tensor is copied into page-aligned memory first (registration pins whole pages, which a
            heap or file-backed tensor shares with memory graphtier does not own).
        registrar: the driver interface (default: CUDA through ``torch.cuda.cudart()``).
        chunk_bytes: the most bytes one registration call covers (default :data:`REGISTER_CHUNK_BYTES`).

    ``.tensor`` is the registered CPU tensor: pass it to a Triton kernel as a pointer argument (the
    kernel reads host memory through the GPU's mapping), then call :meth:`record_use` on the stream
    of the launch. Use as a context manager or call :meth:`close` (idempotent).
    """

    def __init__(
        self, tensor: torch.Tensor, *, registrar: HostRegistrar | None = None, chunk_bytes: int | None = None
    ) -> None:
        if tensor.device.type != "cpu":
            raise OptionError(f"UnifiedTensor: expected a CPU tensor, found one on {tensor.device}")
        if not tensor.is_contiguous():
            raise OptionError("UnifiedTensor: expected a contiguous tensor, found a strided view")
        self.nbytes = int(tensor.numel() * tensor.element_size())
        registrar = registrar if registrar is not None else CudaHostRegistrar()
        chunk_bytes = chunk_bytes if chunk_bytes is not None else REGISTER_CHUNK_BYTES
        keys: list[tuple[int, int]] = []
        if self.nbytes > 0:
            address = tensor.data_ptr()
            # CUDA calls any address inside registered memory pinned: ask the registry first
            torch_pinned = (
                not REGISTRY.covers_any(address, self.nbytes) and torch.cuda.is_available() and tensor.is_pinned()
            )
            if not torch_pinned:
                if not is_graphtier_allocation(address, self.nbytes):
                    copy = page_aligned_empty(tensor.numel(), None, tensor.dtype).view(tensor.shape)
                    tensor = copy.copy_(tensor)
                keys = REGISTRY.acquire(tensor.data_ptr(), self.nbytes, registrar, chunk_bytes)
        self.tensor = tensor
        self._keys = keys
        self._pending = _PendingReads()
        self._finalizer = weakref.finalize(self, _release, keys, tensor, self._pending)

    def record_use(self, stream: Hashable) -> None:
        """Record a CUDA event on ``stream`` (a ``torch.cuda.Stream``) after a launch that reads ``.tensor``.

        The registration is released (unregistered) only once the latest event of every stream has
        completed. Nothing to do for torch-pinned memory (never unregistered here).
        """
        if self.registered:
            self._pending.record(stream)

    @classmethod
    def from_rows(
        cls,
        table: np.ndarray,
        start: int,
        stop: int,
        *,
        registrar: HostRegistrar | None = None,
        chunk_rows: int = 1 << 16,
        chunk_bytes: int | None = None,
    ) -> UnifiedTensor:
        """Register rows [start, stop) of ``table`` (a 2-d [N, D] table or a 1-d [N] array, RAM or memory map).

        Rows of a :func:`page_aligned_empty` allocation are registered in place (no copy); anything
        else (a heap array, a memory map) is copied in chunks of ``chunk_rows`` into page-aligned RAM
        first. ``chunk_bytes`` bounds each registration call (default :data:`REGISTER_CHUNK_BYTES`).
        """
        if table.ndim not in (1, 2):
            raise OptionError(f"UnifiedTensor.from_rows: expected a 1-d or 2-d array, found shape {tuple(table.shape)}")
        rows = table[start:stop]
        in_place = (
            not isinstance(table, np.memmap)
            and rows.flags.c_contiguous
            and rows.flags.writeable
            and is_graphtier_allocation(rows.ctypes.data, rows.nbytes)
        )
        if in_place:
            return cls(torch.from_numpy(rows), registrar=registrar, chunk_bytes=chunk_bytes)
        dtype = torch.from_numpy(np.empty(0, dtype=table.dtype)).dtype
        copy = page_aligned_empty(stop - start, int(table.shape[1]) if table.ndim == 2 else None, dtype)
        copy_np = copy.numpy()
        for begin in range(0, stop - start, chunk_rows):
            end = min(stop - start, begin + chunk_rows)
            copy_np[begin:end] = rows[begin:end]
        return cls(copy, registrar=registrar, chunk_bytes=chunk_bytes)

    @property
    def registered(self) -> bool:
        """True while this tensor holds a registration (False after close or for torch-pinned memory)."""
        return bool(self._keys) and self._finalizer.alive

    @property
    def num_chunks(self) -> int:
        """Registration calls (chunks) this tensor holds; 0 after close or for torch-pinned memory."""
        return len(self._keys) if self._finalizer.alive else 0

    def close(self) -> None:
        """Unregister (when this was the last user of the range) and drop the tensor; idempotent."""
        self._finalizer()
        self._keys = []
        self.tensor = self.tensor.new_empty((0,) + tuple(self.tensor.shape[1:]))

    def __enter__(self) -> UnifiedTensor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
