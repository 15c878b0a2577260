"""Node features in host memory (RAM or a memory-mapped file), gathered by a parallel CPU kernel.

This is the baseline feature path of DGL and PyG ("cpu-gather"): the rows of a mini-batch are
gathered on the CPU into a reusable staging buffer (pinned when CUDA is present, so the copy to the
GPU can run asynchronously), then copied to the device by the trainer.
"""

from __future__ import annotations

import numpy as np
import torch

from graphtier.dataset.advice import outgrows_page_cache
from graphtier.errors import OptionError
from graphtier.memory.features._gather_kernels import as_raw_bits, gather_rows_checked
from graphtier.memory.features._mean_kernels import gather_mean_rows
from graphtier.memory.features.arena import StagingArena
from graphtier.memory.features.source import FeatureSource, TierTraffic
from graphtier.memory.features.threads import GatherTeam


class HostFeatureStore(FeatureSource):
    """Gather rows of a host feature table into the reusable buffers of a :class:`StagingArena`.

    Args:
        table: float32/float16 [N, D] array (an ``np.memmap`` works: pages are read on demand).
        ring_size: pinned buffers are reused no sooner than ``ring_size`` calls later (the pipeline's
            queue depth + 3); any buffer only once no tensor references it (see :mod:`graphtier.memory.features.arena`).
        pin: allocate the staging buffers in pinned (page-locked) memory; needs CUDA.
        max_batch_rows: an upper bound of the rows of one call (caps the arena's geometric growth).

    Counters ``rows_gathered`` and ``bytes_gathered`` accumulate over calls.
    """

    def __init__(
        self, table: np.ndarray, *, ring_size: int = 6, pin: bool = False, max_batch_rows: int | None = None
    ) -> None:
        if table.ndim != 2:
            raise OptionError(f"feature table must be 2-d [N, D], found shape {tuple(table.shape)}")
        if pin and not torch.cuda.is_available():
            raise OptionError("pinned staging buffers need CUDA, and no CUDA device is available")
        self.table = np.asarray(table)
        self._table_bits = as_raw_bits(self.table)
        num_rows, dim = (int(s) for s in self.table.shape)
        super().__init__(
            num_rows, dim, torch.from_numpy(np.empty(0, dtype=self.table.dtype)).dtype, torch.device("cpu")
        )
        self.pin = pin
        self.arena = StagingArena(self.dim, self.dtype, ring_size=ring_size, pin=pin, max_rows=max_batch_rows)
        self._team = GatherTeam(self.row_bytes, io_bound=outgrows_page_cache(self.table))
        self.rows_gathered = 0
        self.bytes_gathered = 0

    def _gather(self, ids: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Rows ``table[ids]``: ids int64 [B] (CPU) -> CPU tensor [B, D] in the table's dtype.

        The result is a view of an arena buffer, handed out again only once nothing references it.
        """
        ids_np = row_ids(ids)
        out = self.arena.take(ids_np.shape[0])
        out_bits = as_raw_bits(out.numpy())
        table_bits = self._table_bits
        out_of_range: list[int] = []

        def work(first: int, stop: int) -> None:
            out_of_range.append(gather_rows_checked(table_bits, ids_np, out_bits, first, stop))

        self._team.run(work, ids_np.shape[0])
        if any(out_of_range):
            raise_out_of_range(ids_np, self.num_rows)
        self.rows_gathered += int(ids_np.shape[0])
        self.bytes_gathered += int(ids_np.shape[0]) * self.row_bytes
        return out

    def _gather_mean(
        self, ids: torch.Tensor, rowptr: torch.Tensor, col: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        if self.table.dtype != np.float32:
            return None
        ids_np = row_ids(ids)
        pair = gather_mean(self._team, self.arena, self.table, self.table, self.num_rows, ids_np, rowptr, col)
        self.rows_gathered += int(ids_np.shape[0])
        self.bytes_gathered += int(ids_np.shape[0]) * self.row_bytes
        return pair

    def traffic(self) -> TierTraffic:
        """Cumulative bytes served: every row comes from the table as given (RAM or its memory map, the OS
        page cache decides), counted as the "host" tier."""
        return TierTraffic(host=self.bytes_gathered, requested=self.bytes_gathered)

    def describe(self) -> str:
        """One line: rows gathered on the CPU (into pinned buffers on CUDA)."""
        return f"{self.num_rows} rows x {self.dim} {self.dtype} gathered on the CPU{' (pinned)' if self.pin else ''}"

    def _close(self) -> None:
        """Drop the staging buffers."""
        self.arena.release()


def row_ids(ids: torch.Tensor | np.ndarray) -> np.ndarray:
    """Row ids as a 1-d integer numpy array (a view when possible): int [B] tensor (any device) or array.

    IndexError for another shape or dtype; the range is checked by the gather kernels.
    """
    if isinstance(ids, torch.Tensor):
        if ids.device.type != "cpu":
            ids = ids.cpu()
        ids_np = ids.numpy()
    else:
        ids_np = np.asarray(ids)
    if ids_np.ndim != 1:
        raise IndexError(f"feature row ids must be a 1-d tensor, found shape {tuple(ids_np.shape)}")
    if ids_np.dtype.kind not in "iu":
        raise IndexError(f"feature row ids must be integers, found dtype {ids_np.dtype}")
    if ids_np.dtype.itemsize < 4 or ids_np.dtype == np.uint64:
        ids_np = ids_np.astype(np.int64)
    return ids_np


def gather_mean(
    team: GatherTeam,
    arena: StagingArena,
    ram: np.ndarray,
    disk: np.ndarray,
    host_end: int,
    ids_np: np.ndarray,
    rowptr: torch.Tensor,
    col: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(agg, root)`` float32 [R, D] arena views of a first layer's inputs (see ``FeatureSource.gather_mean``),
    rows [0, host_end) read from ``ram`` and the rest from ``disk`` [N, D]; the destinations split between the
    team's threads. IndexError for ids out of range."""
    num_dst = int(rowptr.shape[0]) - 1
    agg, root = arena.take(num_dst), arena.take(num_dst)
    agg_np, root_np = agg.numpy(), root.numpy()
    rowptr_np, col_np = rowptr.numpy(), col.numpy()
    bad: list[int] = []

    def work(first: int, stop: int) -> None:
        bad.append(gather_mean_rows(ram, disk, host_end, ids_np, rowptr_np, col_np, agg_np, root_np, first, stop))

    team.run(work, num_dst)
    if any(bad):
        if ids_np.size and (int(ids_np.min()) < 0 or int(ids_np.max()) >= disk.shape[0]):
            raise_out_of_range(ids_np, int(disk.shape[0]))
        raise IndexError(f"block sources must be in [0, {ids_np.shape[0]}), found a column outside")
    return agg, root


def raise_out_of_range(ids_np: np.ndarray, num_rows: int) -> None:
    """IndexError naming the allowed range and the ids' actual [min, max] (the cold path after a kernel saw one)."""
    low, high = int(ids_np.min()), int(ids_np.max())
    raise IndexError(f"feature row ids must be in [0, {num_rows}), found [{low}, {high}]")
