"""UnifiedTensor: a host tensor registered with CUDA (``cudaHostRegister``) so GPU kernels read it directly.

Registration maps existing host memory into the GPU's address space without allocating (seed 000
Appendix A.2, Figure 12; seed 003 §4): a Triton kernel given the tensor then reads host memory over
PCIe ("zero-copy"), with no CPU gather and no staging copy.

CUDA tracks registrations by page: registering a range that overlaps an already registered one
fails (``cudaErrorHostMemoryAlreadyRegistered``), and memory must stay allocated until it is
unregistered. This module keeps a process-wide registry of registered page ranges: registering the
exact same range again shares the registration (reference counted), a partial overlap is refused
with an OptionError, and the tensor is kept alive until the last :meth:`UnifiedTensor.close` (or
garbage collection) unregisters it.
"""

from __future__ import annotations

import mmap
import threading
import weakref
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from graphtier.errors import OptionError

PAGE_BYTES = mmap.PAGESIZE


class HostRegistrar(Protocol):
    """Registers host memory with the GPU driver (a fake one is used in tests)."""

    def register(self, address: int, nbytes: int) -> None: ...

    def unregister(self, address: int) -> None: ...


class CudaHostRegistrar:
    """``cudaHostRegister`` / ``cudaHostUnregister`` through ``torch.cuda.cudart()``."""

    def register(self, address: int, nbytes: int) -> None:
        if not torch.cuda.is_available():
            raise OptionError("registering host memory for zero-copy access needs CUDA, and no CUDA device is available")
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

    def acquire(self, address: int, nbytes: int, registrar: HostRegistrar) -> tuple[int, int]:
        first_page = address // PAGE_BYTES
        end_page = -(-(address + nbytes) // PAGE_BYTES)
        key = (first_page, end_page)
        with self.lock:
            existing = self.entries.get(key)
            if existing is not None:
                existing.references += 1
                return key
            for (first, end), entry in self.entries.items():
                if first < end_page and first_page < end:
                    raise OptionError(
                        f"host memory [{address:#x}, {address + nbytes:#x}) overlaps a range already registered "
                        f"for zero-copy access [{entry.address:#x}, {entry.address + entry.nbytes:#x}) in different "
                        "pages: expected the same range or a disjoint one"
                    )
            registrar.register(address, nbytes)
            self.entries[key] = _Registration(first_page, end_page, address, nbytes, registrar)
            return key

    def release(self, key: tuple[int, int]) -> None:
        with self.lock:
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


REGISTRY = _Registry()


def _release(key: tuple[int, int] | None, keep_alive: torch.Tensor) -> None:
    if key is not None:
        REGISTRY.release(key)
    del keep_alive


def page_aligned_empty(rows: int, dim: int, dtype: torch.dtype) -> torch.Tensor:
    """An uninitialised CPU tensor [rows, dim] of ``dtype`` whose memory starts on a page and spans whole pages.

    Two such tensors never share a page, so each can be registered on its own.
    """
    itemsize = torch.empty(0, dtype=dtype).element_size()
    nbytes = rows * dim * itemsize
    padded = -(-max(nbytes, 1) // PAGE_BYTES) * PAGE_BYTES
    raw = np.empty(padded + PAGE_BYTES, dtype=np.uint8)
    start = (-raw.ctypes.data) % PAGE_BYTES
    aligned = torch.from_numpy(raw[start : start + padded])
    return aligned[:nbytes].view(dtype).view(rows, dim)


class UnifiedTensor:
    """A contiguous CPU tensor made readable by CUDA kernels (zero-copy over PCIe).

    Args:
        tensor: contiguous CPU tensor; it is kept alive while registered.
        registrar: the driver interface (default: CUDA through ``torch.cuda.cudart()``).

    ``.tensor`` is the registered CPU tensor: pass it to a Triton kernel as a pointer argument (the
    kernel reads host memory through the GPU's mapping). Tensors already in torch's pinned memory
    are mapped by construction and are not registered again. Use as a context manager or call
    :meth:`close` (idempotent).
    """

    def __init__(self, tensor: torch.Tensor, *, registrar: HostRegistrar | None = None) -> None:
        if tensor.device.type != "cpu":
            raise OptionError(f"UnifiedTensor: expected a CPU tensor, found one on {tensor.device}")
        if not tensor.is_contiguous():
            raise OptionError("UnifiedTensor: expected a contiguous tensor, found a strided view")
        self.tensor = tensor
        self.nbytes = int(tensor.numel() * tensor.element_size())
        registrar = registrar if registrar is not None else CudaHostRegistrar()
        already_pinned = torch.cuda.is_available() and tensor.is_pinned()
        key = None
        if self.nbytes > 0 and not already_pinned:
            key = REGISTRY.acquire(tensor.data_ptr(), self.nbytes, registrar)
        self._key = key
        self._finalizer = weakref.finalize(self, _release, key, tensor)

    @classmethod
    def from_rows(
        cls, table: np.ndarray, start: int, stop: int, *, registrar: HostRegistrar | None = None, chunk_rows: int = 1 << 16
    ) -> "UnifiedTensor":
        """Register rows [start, stop) of ``table`` (float32/float16 [N, D], RAM or memory map).

        A writeable in-RAM C-contiguous table is registered in place (no copy); anything else (a
        read-only memory map) is copied in chunks into page-aligned RAM first.
        """
        rows = table[start:stop]
        in_ram = not isinstance(table, np.memmap) and rows.flags.c_contiguous and rows.flags.writeable
        if in_ram:
            return cls(torch.from_numpy(rows), registrar=registrar)
        dtype = torch.from_numpy(np.empty(0, dtype=table.dtype)).dtype
        copy = page_aligned_empty(stop - start, int(table.shape[1]), dtype)
        copy_np = copy.numpy()
        for begin in range(0, stop - start, chunk_rows):
            end = min(stop - start, begin + chunk_rows)
            copy_np[begin:end] = rows[begin:end]
        return cls(copy, registrar=registrar)

    @property
    def registered(self) -> bool:
        """True while this tensor holds a registration (False after close or for torch-pinned memory)."""
        return self._key is not None and self._finalizer.alive

    def close(self) -> None:
        """Unregister (when this was the last user of the range) and drop the tensor; idempotent."""
        self._finalizer()
        self._key = None
        self.tensor = self.tensor.new_empty((0,) + tuple(self.tensor.shape[1:]))

    def __enter__(self) -> "UnifiedTensor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
