"""Node features in host memory (RAM or a memory-mapped file), gathered by a parallel CPU kernel.

This is the baseline feature path of DGL and PyG ("cpu-gather"): the rows of a mini-batch are
gathered on the CPU into a reusable staging buffer (pinned when CUDA is present, so the copy to the
GPU can run asynchronously), then copied to the device by the trainer.
"""

from __future__ import annotations

import numpy as np
import torch

from graphtier.errors import OptionError
from graphtier.store._gather_kernels import as_raw_bits, gather_rows
from graphtier.store.placement import TIER_NAMES


class HostFeatureStore:
    """Gather rows of a host feature table into a ring of reusable staging buffers.

    Args:
        table: float32/float16 [N, D] array (an ``np.memmap`` works: pages are read on demand).
        ring_size: how many gathered batches may be alive at once (the pipeline's queue depth + 2);
            the buffer of call ``k`` is reused by call ``k + ring_size``.
        pin: allocate the staging buffers in pinned (page-locked) memory; needs CUDA.

    Counters ``rows_gathered`` and ``bytes_gathered`` accumulate over calls.
    """

    def __init__(self, table: np.ndarray, *, ring_size: int = 6, pin: bool = False) -> None:
        if table.ndim != 2:
            raise OptionError(f"feature table must be 2-d [N, D], found shape {tuple(table.shape)}")
        if pin and not torch.cuda.is_available():
            raise OptionError("pinned staging buffers need CUDA, and no CUDA device is available")
        self.table = np.asarray(table)
        self._table_bits = as_raw_bits(self.table)
        self.num_rows, self.dim = (int(s) for s in self.table.shape)
        self.dtype = torch.from_numpy(np.empty(0, dtype=self.table.dtype)).dtype
        self.row_bytes = self.dim * self.table.dtype.itemsize
        self.pin = pin
        self._ring: list[torch.Tensor | None] = [None] * max(1, ring_size)
        self._next = 0
        self.rows_gathered = 0
        self.bytes_gathered = 0
        self.output_device = torch.device("cpu")

    def _buffer(self, rows: int) -> torch.Tensor:
        slot = self._next
        self._next = (slot + 1) % len(self._ring)
        buf = self._ring[slot]
        if buf is None or buf.shape[0] < rows:
            capacity = max(rows, int(1.25 * (buf.shape[0] if buf is not None else 0)))
            buf = torch.empty((capacity, self.dim), dtype=self.dtype, pin_memory=self.pin)
            self._ring[slot] = buf
        return buf[:rows]

    def gather(self, ids: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Rows ``table[ids]``: ids int64 [B] (CPU) -> CPU tensor [B, D] in the table's dtype.

        The result is a view of a staging buffer that is reused ``ring_size`` calls later.
        """
        ids_np = ids.numpy() if isinstance(ids, torch.Tensor) else np.asarray(ids)
        if ids_np.size:
            low, high = int(ids_np.min()), int(ids_np.max())
            if low < 0 or high >= self.num_rows:
                raise IndexError(f"feature row ids must be in [0, {self.num_rows}), found [{low}, {high}]")
        out = self._buffer(ids_np.shape[0])
        gather_rows(self._table_bits, ids_np, as_raw_bits(out.numpy()))
        self.rows_gathered += int(ids_np.shape[0])
        self.bytes_gathered += int(ids_np.shape[0]) * self.row_bytes
        return out

    def traffic(self) -> dict[str, int]:
        """Cumulative bytes served per tier (graphtier.store.placement.TIER_NAMES) plus "requested".

        Every row comes from the table as given (RAM or its memory map, the OS page cache decides),
        counted as the "host" tier.
        """
        result = dict.fromkeys(TIER_NAMES, 0)
        result["host"] = self.bytes_gathered
        result["requested"] = self.bytes_gathered
        return result

    def close(self) -> None:
        """Drop the staging buffers (they are reallocated if ``gather`` is called again); idempotent."""
        self._ring = [None] * len(self._ring)
