"""TieredFeatureStore: one feature table spread over GPU memory, peer GPUs, host RAM and disk.

The table is hotness-sorted (``graphtier reorder`` puts hot rows first), so each tier is a range of
row ids (see :mod:`graphtier.memory.plan.placement`) and a gather picks each row's source by comparing
its id with the boundaries (Data Tiering §4.1 and Listing 1; XGNN §4.3 for the interleaved
partitions). From the caller's side it is one ``[N, D]`` table: ``gather(ids)`` equals ``table[ids]``.

On CUDA: the "gpu" tier is a device tensor, the interleaved tier lives on ``peer_partitions``
devices (partition 0 on the compute device), the "host" tier is a :class:`UnifiedTensor` read
zero-copy by the Triton kernel (128-byte aligned, PyTorch-Direct §4.5), the "disk" tier is gathered
on the CPU from the memory map and copied.

Without CUDA the same plan and accounting are kept: the "gpu", "gpu-peer" and "host" tiers are all host
memory, so they are one RAM array of rows [0, host_end) (the table as given, or a RAM copy of that prefix of a
memory-mapped table when there is a disk tier) and only the per-tier counts tell them apart; the "disk" tier
is read from the memory map on demand; the gather is a numba kernel with the plain gather's copy loop.

Each path owns its buffers in one object (:class:`_CpuTiers`, :class:`_CudaTiers`) that closes what it
holds. The row cache of ``tiered+cache`` is not here: it wraps the store (:class:`graphtier.memory.features.cached.CachedFeatures`).
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np
import torch

from graphtier.dataset.advice import outgrows_page_cache
from graphtier.errors import OptionError
from graphtier.memory.features._gather_kernels import as_raw_bits, gather_rows_checked
from graphtier.memory.features._tiered_kernels import tiered_gather_rows
from graphtier.memory.features.arena import StagingArena
from graphtier.memory.features.host import gather_mean, raise_out_of_range, row_ids
from graphtier.memory.features.source import FeatureSource, TierTraffic
from graphtier.memory.features.threads import GatherTeam
from graphtier.memory.features.unified import HostRegistrar, UnifiedTensor
from graphtier.memory.plan.placement import TIER_NAMES, TierPlan

UPLOAD_CHUNK_BYTES = 1 << 28


def torch_dtype_of(array: np.ndarray | np.dtype) -> torch.dtype:
    """The torch dtype of a numpy array's dtype, or of a numpy dtype (float32 -> torch.float32, ...)."""
    return torch.from_numpy(np.empty(0, dtype=getattr(array, "dtype", array))).dtype


def upload_rows(rows: np.ndarray, device: torch.device, dtype: np.dtype | None = None) -> torch.Tensor:
    """Copy host rows [R, ...] (RAM or memory map, any strides) to a new tensor on ``device``.

    Converted to ``dtype`` (default: the rows' own), in chunks of about UPLOAD_CHUNK_BYTES, so a memory-mapped
    table never needs a whole host copy.
    """
    dtype = np.dtype(dtype if dtype is not None else rows.dtype)
    out = torch.empty(rows.shape, dtype=torch_dtype_of(dtype), device=device)
    row_bytes = dtype.itemsize * int(np.prod(rows.shape[1:], dtype=np.int64))
    chunk = max(1, UPLOAD_CHUNK_BYTES // max(row_bytes, 1))
    for begin in range(0, rows.shape[0], chunk):
        end = min(rows.shape[0], begin + chunk)
        part = np.array(rows[begin:end], dtype=dtype)  # a writeable copy of one bounded chunk
        out[begin:end].copy_(torch.from_numpy(part))
    return out


def check_ids(ids: torch.Tensor | np.ndarray, num_rows: int) -> np.ndarray:
    """Validate row ids (int [B], CPU) against [0, num_rows): int numpy [B], IndexError naming the range.

    The gather paths do not call this (their kernels check the range in the same pass); it is for
    paths that index with the ids before any kernel runs (the CUDA path).
    """
    ids_np = row_ids(ids)
    if ids_np.size:
        low, high = int(ids_np.min()), int(ids_np.max())
        if low < 0 or high >= num_rows:
            raise_out_of_range(ids_np, num_rows)
    return ids_np.astype(np.int64, copy=False)


class _CpuTiers:
    """The CPU path: every tier in host memory; the "gpu", "gpu-peer" and "host" tiers are one RAM array."""

    def __init__(
        self, table: np.ndarray, plan: TierPlan, dtype: torch.dtype, ring_size: int, max_rows: int | None
    ) -> None:
        self.plan = plan
        # rows [0, host_end) in RAM: the table itself, or a RAM copy of that prefix of a memory map with a disk tier
        if plan.disk_rows > 0 and isinstance(table, np.memmap):
            self.ram_np = ram_copy(table, 0, plan.host_end)
        else:
            self.ram_np = np.asarray(table)
        self.table = np.asarray(table)
        self.bits = (as_raw_bits(self.ram_np), as_raw_bits(self.table))
        self.arena = StagingArena(int(table.shape[1]), dtype, ring_size=ring_size, max_rows=max_rows)
        self.team = GatherTeam(plan.row_bytes, io_bound=plan.disk_rows > 0 and outgrows_page_cache(self.table))

    def gather(self, ids_np: np.ndarray) -> tuple[torch.Tensor, TierTraffic]:
        """(rows [B, D] in an arena buffer, bytes per tier) of row ids int [B]; IndexError out of range."""
        plan = self.plan
        out = self.arena.take(ids_np.shape[0])
        if ids_np.shape[0] == 0:
            return out, TierTraffic()
        ram, disk = self.bits
        out_bits = as_raw_bits(out.numpy())
        bounds = (plan.local_rows, plan.peer_end, plan.peer_partitions, plan.host_end)
        counts: list[tuple[int, int, int, int, int]] = []

        def work(first: int, stop: int) -> None:
            counts.append(tiered_gather_rows(ram, disk, *bounds, ids_np, out_bits, first, stop))

        self.team.run(work, ids_np.shape[0])
        gpu, gpu_peer, host_rows, disk_rows, out_of_range = (sum(column) for column in zip(*counts))
        if out_of_range:
            raise_out_of_range(ids_np, plan.num_rows)
        traffic = TierTraffic.of_rows(
            plan.row_bytes, gpu=gpu, gpu_peer=gpu_peer, host=host_rows, disk=disk_rows, requested=ids_np.shape[0]
        )
        return out, traffic

    def gather_mean(
        self, ids_np: np.ndarray, rowptr: torch.Tensor, col: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, TierTraffic] | None:
        """``(agg, root, bytes per tier of the rows of ids)`` of a first layer (float32 tables), else None."""
        ram, disk = self.ram_np, self.table
        if ram.dtype != np.float32:
            return None
        agg, root = gather_mean(self.team, self.arena, ram, disk, self.plan.host_end, ids_np, rowptr, col)
        return agg, root, traffic_of(self.plan, ids_np)

    def close(self) -> None:
        """Drop the RAM copies and the staging buffers."""
        self.arena.release()
        self.bits = ()
        self.ram_np = self.table = np.empty((0, 0), np.float32)


class _CudaTiers:
    """The CUDA path: GPU prefix, peer partitions, registered host tier (zero-copy) and the memory-mapped disk tier."""

    def __init__(
        self,
        table: np.ndarray,
        plan: TierPlan,
        device: torch.device,
        dtype: torch.dtype,
        ring_size: int,
        max_rows: int | None,
        log: Callable[[str], None],
        registrar: HostRegistrar | None,
    ) -> None:
        if not torch.cuda.is_available():
            raise OptionError(f"--device {device}: CUDA is not available on this machine")
        try:
            from graphtier.memory.features import _triton_kernels
        except ImportError:
            raise OptionError(
                "--features-on tiered/zero-copy on CUDA needs the triton package, found it missing: pip install triton"
            ) from None
        self.kernels = _triton_kernels
        self.plan, self.dtype, self.dim = plan, dtype, int(table.shape[1])
        self.ring_size, self.max_rows = ring_size, max_rows
        index = device.index if device.index is not None else torch.cuda.current_device()
        self.device = torch.device("cuda", index)
        count = torch.cuda.device_count()
        if plan.peer_partitions > count:
            raise OptionError(
                f"--peer-partitions: expected at most {count} (the CUDA devices here), found {plan.peer_partitions}"
            )
        self.peer_devices = [torch.device("cuda", (index + p) % count) for p in range(plan.peer_partitions)]
        for peer in self.peer_devices[1:]:
            if not torch.cuda.can_device_access_peer(self.device, peer):
                log(f"{self.device} cannot access {peer} directly (no P2P/NVLink): peer rows are staged by copies")
        with torch.cuda.device(self.device):
            self.local = upload_rows(table[: plan.local_rows], self.device)
            self.peers = [
                upload_rows(table[plan.local_rows + p : plan.peer_end : plan.peer_partitions], dev)
                for p, dev in enumerate(self.peer_devices)
            ]
            self.host = UnifiedTensor.from_rows(table, plan.peer_end, plan.host_end, registrar=registrar)
            # an empty host tier is passed as a null device pointer: an unregistered host pointer is refused
            self.host_arg = (
                self.host.tensor if plan.host_rows > 0 else torch.empty((0, self.dim), dtype=dtype, device=self.device)
            )
        self.disk_bits = as_raw_bits(np.asarray(table))
        # pinned staging of disk rows, allocated on the first call that reads the disk tier
        self.disk_arena: StagingArena | None = None
        self.team = GatherTeam(plan.row_bytes, io_bound=plan.disk_rows > 0 and outgrows_page_cache(table))

    def gather(self, ids_np: np.ndarray) -> tuple[torch.Tensor, TierTraffic]:
        """(new device tensor [B, D], bytes per tier) of checked row ids int64 [B], on the device's current stream."""
        plan = self.plan
        with torch.cuda.device(self.device):
            ids_t = torch.from_numpy(ids_np).to(self.device)
            out = torch.empty((ids_np.shape[0], self.dim), dtype=self.dtype, device=self.device)
            positions = torch.arange(ids_np.shape[0], device=self.device)
            self.kernels.tiered_gather_triton(
                self.local, self.host_arg, ids_t, positions, out, host_start=plan.peer_end
            )
            self.host.record_use(torch.cuda.current_stream(self.device))  # unregistered only once this read is done
            positions_np = np.arange(ids_np.shape[0])
            if plan.peer_end > plan.local_rows:
                self._gather_peers(ids_np, positions_np, out)
            if plan.disk_rows > 0:
                self._gather_disk(ids_np, positions_np, out)
        return out, traffic_of(plan, ids_np)

    def _gather_peers(self, ids_np: np.ndarray, positions_np: np.ndarray, out: torch.Tensor) -> None:
        plan = self.plan
        in_peer = (ids_np >= plan.local_rows) & (ids_np < plan.peer_end)
        if not in_peer.any():
            return
        offsets = ids_np[in_peer] - plan.local_rows
        targets = positions_np[in_peer]
        partition = offsets % plan.peer_partitions
        for p, (part, dev) in enumerate(zip(self.peers, self.peer_devices)):
            mine = partition == p
            if not mine.any():
                continue
            rows_on_peer = part[torch.from_numpy(offsets[mine] // plan.peer_partitions).to(dev)]
            out[torch.from_numpy(targets[mine]).to(self.device)] = rows_on_peer.to(self.device)

    def _gather_disk(self, ids_np: np.ndarray, positions_np: np.ndarray, out: torch.Tensor) -> None:
        on_disk = ids_np >= self.plan.host_end
        if not on_disk.any():
            return
        disk_ids = ids_np[on_disk]
        if self.disk_arena is None:
            self.disk_arena = StagingArena(
                self.dim, self.dtype, ring_size=self.ring_size, pin=True, max_rows=self.max_rows
            )
        staging = self.disk_arena.take(disk_ids.shape[0])
        staging_bits, disk_bits = as_raw_bits(staging.numpy()), self.disk_bits
        self.team.run(
            lambda first, stop: gather_rows_checked(disk_bits, disk_ids, staging_bits, first, stop), disk_ids.shape[0]
        )  # the ids were checked before
        out[torch.from_numpy(positions_np[on_disk]).to(self.device)] = staging.to(self.device, non_blocking=True)
        torch.cuda.current_stream(self.device).synchronize()  # the staging buffer is reused later

    def close(self) -> None:
        """Unregister the host tier (after the GPU's reads), free the device tiers and the pinned staging."""
        self.host.close()
        empty = torch.empty((0, self.dim), dtype=self.dtype, device=self.device)
        self.local, self.peers, self.host_arg = empty, [], empty
        if self.disk_arena is not None:
            self.disk_arena.release()


class TieredFeatureStore(FeatureSource):
    """Gather rows of a hotness-sorted table placed in tiers by ``plan``.

    Args:
        table: float32/float16 [N, D] (RAM array or ``np.memmap``); read-only while the store is open.
        plan: the tier boundaries (:func:`graphtier.memory.plan.placement.plan_tiers`); its ``cache_rows`` are
            for a :class:`graphtier.memory.features.cached.CachedFeatures` around this store, not used here.
        device: the compute device; CUDA runs the GPU path, anything else the CPU path.
        ring_size: pinned staging buffers are reused no sooner than ``ring_size`` calls later; every
            staging buffer only once nothing references it (:class:`graphtier.memory.features.arena.StagingArena`).
        max_batch_rows: an upper bound of the rows of one call (caps the arena's geometric growth).
        log: receives one-line progress messages.
        registrar: the host-memory registrar (tests pass a fake one).
    """

    def __init__(
        self,
        table: np.ndarray,
        plan: TierPlan,
        *,
        device: torch.device,
        ring_size: int = 6,
        log: Callable[[str], None] = print,
        registrar: HostRegistrar | None = None,
        max_batch_rows: int | None = None,
    ) -> None:
        if table.ndim != 2:
            raise OptionError(f"feature table must be 2-d [N, D], found shape {tuple(table.shape)}")
        if table.dtype not in (np.float32, np.float16):
            raise OptionError(f"feature table dtype: expected float32 or float16, found {table.dtype}")
        num_rows, dim = (int(s) for s in table.shape)
        if plan.num_rows != num_rows or plan.row_bytes != dim * table.dtype.itemsize:
            raise AssertionError("tier plan made for another table")
        device = torch.device(device)
        dtype = torch_dtype_of(table)
        ring_size = max(1, ring_size)
        self.table = table
        self.plan = plan
        self._lock = threading.Lock()
        self._traffic = TierTraffic()
        self._tiers: _CpuTiers | _CudaTiers
        if device.type == "cuda":
            self._tiers = _CudaTiers(table, plan, device, dtype, ring_size, max_batch_rows, log, registrar)
            device = self._tiers.device
        else:
            self._tiers = _CpuTiers(table, plan, dtype, ring_size, max_batch_rows)
        super().__init__(num_rows, dim, dtype, device if device.type == "cuda" else torch.device("cpu"))
        self.device = device
        self.on_cuda = device.type == "cuda"
        log(plan.describe() + f" on {self.output_device}")

    @property
    def device_rows(self) -> int:
        """Rows in the GPU tiers (local and peer): [0, plan.peer_end)."""
        return self.plan.peer_end

    def _gather(self, ids: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Rows ``table[ids]``: ids int64 [B] (CPU) -> [B, D] in the table's dtype on ``output_device``.

        CPU path: the result is a view of an arena buffer, handed out again only once nothing references
        it (:class:`graphtier.memory.features.arena.StagingArena`). CUDA path: a new
        device tensor, written on the current stream of the compute device. Thread-safe (one call at a time).
        """
        ids_np = check_ids(ids, self.num_rows) if self.on_cuda else row_ids(ids)
        with self._lock:
            out, traffic = self._tiers.gather(ids_np)
            self._traffic = self._traffic + traffic
        return out

    def _gather_mean(
        self, ids: torch.Tensor, rowptr: torch.Tensor, col: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        if not isinstance(self._tiers, _CpuTiers):
            return None
        ids_np = row_ids(ids)
        with self._lock:
            result = self._tiers.gather_mean(ids_np, rowptr, col)
            if result is None:
                return None
            agg, root, traffic = result
            self._traffic = self._traffic + traffic
        return agg, root

    def traffic(self) -> TierTraffic:
        """Cumulative bytes served per tier; the tiers add up to ``requested``."""
        with self._lock:
            return self._traffic

    def describe(self) -> str:
        """One line: the tier plan and the device."""
        return self.plan.describe() + f" on {self.output_device}"

    def _close(self) -> None:
        with self._lock:
            self._tiers.close()


def traffic_of(plan: TierPlan, ids_np: np.ndarray) -> TierTraffic:
    """Bytes per tier of reading the rows ``ids_np`` (int [B], in range) once each under ``plan``."""
    rows = dict(zip(TIER_NAMES, (int(count) for count in plan.tier_counts(ids_np))))
    return TierTraffic.of_rows(
        plan.row_bytes, gpu=rows["gpu"], gpu_peer=rows["gpu-peer"], host=rows["host"], disk=rows["disk"],
        requested=ids_np.shape[0],
    )  # fmt: skip


def ram_copy(table: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Rows [start, stop) of ``table`` in RAM: a copy of a memory map (np.ascontiguousarray would return a view of it)."""
    rows = table[start:stop]
    return np.array(rows) if isinstance(table, np.memmap) else np.ascontiguousarray(rows)
