"""TieredFeatureStore: one feature table spread over GPU memory, peer GPUs, host RAM and disk.

The table is hotness-sorted (``graphtier reorder`` puts hot rows first), so each tier is a range of
row ids (see :mod:`graphtier.store.placement`) and a gather picks each row's source by comparing
its id with the boundaries (seed 000 §4.1 and Listing 1; seed 004 §4.3 for the interleaved
partitions). From the caller's side it is one ``[N, D]`` table: ``gather(ids)`` equals ``table[ids]``.

On CUDA: the "gpu" tier is a device tensor, the interleaved tier lives on ``peer_partitions``
devices (partition 0 on the compute device), the "host" tier is a :class:`UnifiedTensor` read
zero-copy by the Triton kernel (128-byte aligned, seed 003 §4.5), the "disk" tier is gathered
on the CPU from the memory map and copied, and the optional row cache lives in device memory.

Without CUDA the same plan and accounting are kept: every tier lives in host memory (the "gpu"
and "gpu-peer" tiers as RAM copies, the peers interleaved exactly as on the devices), the "host"
tier is RAM (a RAM copy of a memory-mapped table when there is a disk tier, else the table as
given) and the "disk" tier is read from the memory map on demand; the gather is a numba kernel.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np
import torch

from graphtier.errors import OptionError
from graphtier.store._gather_kernels import as_raw_bits, gather_rows_checked
from graphtier.store._tiered_kernels import interleave_partitions, tiered_gather_rows, tiered_gather_rows_in_order
from graphtier.store.arena import StagingArena
from graphtier.store.cache import RowCache
from graphtier.store.host import raise_out_of_range, row_ids
from graphtier.store.placement import TIER_NAMES, TierPlan, format_bytes
from graphtier.store.threads import GatherTeam
from graphtier.store.unified import HostRegistrar, UnifiedTensor

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


class TieredFeatureStore:
    """Gather rows of a hotness-sorted table placed in tiers by ``plan``.

    Args:
        table: float32/float16 [N, D] (RAM array or ``np.memmap``); read-only while the store is open.
        plan: the tier boundaries (:func:`graphtier.store.placement.plan_tiers`).
        device: the compute device; CUDA runs the GPU path, anything else the CPU path.
        ring_size: pinned staging buffers are reused no sooner than ``ring_size`` calls later; every
            staging buffer only once nothing references it (:class:`graphtier.store.arena.StagingArena`).
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
        self.num_rows, self.dim = (int(s) for s in table.shape)
        self.row_bytes = self.dim * table.dtype.itemsize
        if plan.num_rows != self.num_rows or plan.row_bytes != self.row_bytes:
            raise AssertionError("tier plan made for another table")
        self.table = table
        self.plan = plan
        self.dtype = torch_dtype_of(table)
        self.device = torch.device(device)
        self.on_cuda = self.device.type == "cuda"
        self.output_device = self.device if self.on_cuda else torch.device("cpu")
        self.log = log
        self._lock = threading.Lock()
        self._traffic = dict.fromkeys(TIER_NAMES, 0)
        self._requested = 0
        self._closed = False
        self._ring_size = max(1, ring_size)
        self._max_batch_rows = max_batch_rows
        self.arena: StagingArena | None = None
        self._team = GatherTeam(self.row_bytes)
        self.cache: RowCache | None = None
        if self.on_cuda:
            self._setup_cuda(registrar)
        else:
            self._setup_cpu()
            self.arena = StagingArena(self.dim, self.dtype, ring_size=self._ring_size, max_rows=max_batch_rows)
        if plan.cache_rows > 0:
            self.cache = RowCache(plan.cache_rows, self.dim, self.dtype, self.output_device)
        log(plan.describe() + f" on {self.output_device}")

    # ------------------------------------------------------------------ setup
    def _ram_copy(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) in RAM: a copy of a memory map (np.ascontiguousarray would return a view of it)."""
        rows = self.table[start:stop]
        return np.array(rows) if isinstance(self.table, np.memmap) else np.ascontiguousarray(rows)

    def _setup_cpu(self) -> None:
        plan, table = self.plan, self.table
        self._local_np = self._ram_copy(0, plan.local_rows)
        self._peers_np = interleave_partitions(self._ram_copy(plan.local_rows, plan.peer_end), plan.peer_partitions)
        if plan.disk_rows > 0 and isinstance(table, np.memmap):
            self._host_np = self._ram_copy(plan.peer_end, plan.host_end)
        else:
            self._host_np = np.asarray(table[plan.peer_end : plan.host_end])
        self._disk_np = np.asarray(table)
        self._bits = tuple(as_raw_bits(a) for a in (self._local_np, self._peers_np, self._host_np, self._disk_np))

    def _setup_cuda(self, registrar: HostRegistrar | None) -> None:
        if not torch.cuda.is_available():
            raise OptionError(f"--device {self.device}: CUDA is not available on this machine")
        try:
            from graphtier.store import _triton_kernels
        except ImportError:
            raise OptionError(
                "--features-on tiered/zero-copy on CUDA needs the triton package, found it missing: pip install triton"
            ) from None
        self._kernels = _triton_kernels
        plan = self.plan
        index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        self.device = torch.device("cuda", index)
        self.output_device = self.device
        count = torch.cuda.device_count()
        if plan.peer_partitions > count:
            raise OptionError(
                f"--peer-partitions: expected at most {count} (the CUDA devices here), found {plan.peer_partitions}"
            )
        self._peer_devices = [torch.device("cuda", (index + p) % count) for p in range(plan.peer_partitions)]
        for peer in self._peer_devices[1:]:
            if not torch.cuda.can_device_access_peer(self.device, peer):
                self.log(f"{self.device} cannot access {peer} directly (no P2P/NVLink): peer rows are staged by copies")
        with torch.cuda.device(self.device):
            self._local = upload_rows(self.table[: plan.local_rows], self.device)
            self._peers = [
                upload_rows(self.table[plan.local_rows + p : plan.peer_end : plan.peer_partitions], dev)
                for p, dev in enumerate(self._peer_devices)
            ]
            self._host = UnifiedTensor.from_rows(self.table, plan.peer_end, plan.host_end, registrar=registrar)
            # an empty host tier is passed as a null device pointer: an unregistered host pointer is refused
            self._host_arg = (
                self._host.tensor if plan.host_rows > 0 else torch.empty((0, self.dim), dtype=self.dtype, device=self.device)
            )
        self._disk_bits = as_raw_bits(np.asarray(self.table))
        # pinned staging of disk rows, allocated on the first call that reads the disk tier
        self._disk_arena: StagingArena | None = None

    # ------------------------------------------------------------------ helpers
    def _account(self, requested: int, counts: tuple[int, ...], cache_hits: int) -> None:
        """Add the bytes of this call per tier: kernel counts (gpu, gpu-peer, host, disk, ...), cache hits."""
        row_bytes = self.row_bytes
        traffic = self._traffic
        traffic["gpu"] += int(counts[0]) * row_bytes
        traffic["gpu-peer"] += int(counts[1]) * row_bytes
        traffic["host"] += int(counts[2]) * row_bytes
        traffic["disk"] += int(counts[3]) * row_bytes
        traffic["cache"] += cache_hits * row_bytes
        self._requested += requested * row_bytes

    # ------------------------------------------------------------------ gather
    def gather(self, ids: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Rows ``table[ids]``: ids int64 [B] (CPU) -> [B, D] in the table's dtype on ``output_device``.

        CPU path: the result is a view of an arena buffer, handed out again only once nothing references
        it (:class:`graphtier.store.arena.StagingArena`). CUDA path: a new
        device tensor, written on the current stream of the compute device. Thread-safe (one call at a time).
        """
        if self._closed:
            raise OptionError("feature store is closed")
        if self.on_cuda:
            ids_np = check_ids(ids, self.num_rows)
            with self._lock:
                return self._gather_cuda(ids_np)
        ids_np = row_ids(ids)
        with self._lock:
            return self._gather_cpu(ids_np)

    def _split_cached(self, ids_t: torch.Tensor, out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Serve cache hits into ``out``; return (positions to fetch, positions of cold misses, hits)."""
        assert self.cache is not None
        cold = ids_t >= self.plan.peer_end
        cold_positions = torch.nonzero(cold).flatten()
        hot_positions = torch.nonzero(~cold).flatten()
        hit, slots = self.cache.lookup(ids_t[cold_positions])
        hit_positions = cold_positions[hit]
        if hit_positions.numel():
            out[hit_positions] = self.cache.read(slots[hit])
        miss_positions = cold_positions[~hit]
        fetch = torch.cat([hot_positions, miss_positions])
        return fetch, miss_positions, int(hit_positions.numel())

    def _gather_cpu(self, ids_np: np.ndarray) -> torch.Tensor:
        plan = self.plan
        assert self.arena is not None
        out = self.arena.take(ids_np.shape[0])
        if ids_np.shape[0] == 0:
            return out
        local, peers, host, disk = self._bits
        out_bits = as_raw_bits(out.numpy())
        bounds = (plan.local_rows, plan.peer_end, plan.host_end)
        counts: list[tuple[int, int, int, int, int]] = []
        if self.cache is None:

            def work(first: int, stop: int) -> None:
                counts.append(tiered_gather_rows_in_order(local, peers, host, disk, *bounds, ids_np, out_bits, first, stop))

            self._team.run(work, ids_np.shape[0])
            totals = tuple(sum(column) for column in zip(*counts))
            if totals[4]:
                raise_out_of_range(ids_np, self.num_rows)
            self._account(ids_np.shape[0], totals, 0)
            return out
        ids_np = ids_np.astype(np.int64, copy=False)
        low, high = int(ids_np.min()), int(ids_np.max())
        if low < 0 or high >= self.num_rows:  # the cache is probed before any kernel runs
            raise_out_of_range(ids_np, self.num_rows)
        ids_t = torch.from_numpy(ids_np)
        fetch, misses, hits = self._split_cached(ids_t, out)
        fetch_np = fetch.numpy()
        fetch_ids = ids_np[fetch_np]

        def work_at(first: int, stop: int) -> None:
            counts.append(tiered_gather_rows(local, peers, host, disk, *bounds, fetch_ids, fetch_np, out_bits, first, stop))

        self._team.run(work_at, fetch_ids.shape[0])
        self.cache.insert(ids_t[misses], out[misses])
        self._account(ids_np.shape[0], tuple(sum(column) for column in zip(*counts)) or (0,) * 5, hits)
        return out

    def _gather_cuda(self, ids_np: np.ndarray) -> torch.Tensor:
        plan = self.plan
        with torch.cuda.device(self.device):
            ids_t = torch.from_numpy(ids_np).to(self.device)
            out = torch.empty((ids_np.shape[0], self.dim), dtype=self.dtype, device=self.device)
            hits = 0
            if self.cache is not None:
                fetch, misses, hits = self._split_cached(ids_t, out)
            else:
                fetch = torch.arange(ids_np.shape[0], device=self.device)
                misses = None
            fetch_ids = ids_t[fetch]
            self._kernels.tiered_gather_triton(
                self._local, self._host_arg, fetch_ids, fetch, out, host_start=plan.peer_end
            )
            self._host.record_use(torch.cuda.current_stream(self.device))  # unregistered only once this read is done
            fetch_ids_np = fetch_ids.cpu().numpy()
            fetch_np = fetch.cpu().numpy()
            if plan.peer_end > plan.local_rows:
                self._gather_peers(fetch_ids_np, fetch_np, out)
            if plan.disk_rows > 0:
                self._gather_disk(fetch_ids_np, fetch_np, out)
            if self.cache is not None and misses is not None:
                self.cache.insert(ids_t[misses], out[misses])
            static = self.plan.tier_counts(fetch_ids_np)
            counts = tuple(int(static[TIER_NAMES.index(tier)]) for tier in ("gpu", "gpu-peer", "host", "disk"))
            self._account(ids_np.shape[0], counts, hits)
        return out

    def _gather_peers(self, ids_np: np.ndarray, positions_np: np.ndarray, out: torch.Tensor) -> None:
        plan = self.plan
        in_peer = (ids_np >= plan.local_rows) & (ids_np < plan.peer_end)
        if not in_peer.any():
            return
        offsets = ids_np[in_peer] - plan.local_rows
        targets = positions_np[in_peer]
        partition = offsets % plan.peer_partitions
        for p, (part, dev) in enumerate(zip(self._peers, self._peer_devices)):
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
        if self._disk_arena is None:
            self._disk_arena = StagingArena(
                self.dim, self.dtype, ring_size=self._ring_size, pin=True, max_rows=self._max_batch_rows
            )
        staging = self._disk_arena.take(disk_ids.shape[0])
        staging_bits, disk_bits = as_raw_bits(staging.numpy()), self._disk_bits
        self._team.run(
            lambda first, stop: gather_rows_checked(disk_bits, disk_ids, staging_bits, first, stop), disk_ids.shape[0]
        )  # the ids were checked before
        out[torch.from_numpy(positions_np[on_disk]).to(self.device)] = staging.to(self.device, non_blocking=True)
        torch.cuda.current_stream(self.device).synchronize()  # the staging buffer is reused later

    # ------------------------------------------------------------------ reporting
    def traffic(self) -> dict[str, int]:
        """Cumulative bytes served per tier (keys TIER_NAMES) plus "requested"; the tiers add up to it."""
        with self._lock:
            result = dict(self._traffic)
            result["requested"] = self._requested
        return result

    @property
    def cache_hit_ratio(self) -> float | None:
        """Cache hits / cache lookups, or None without a cache."""
        return self.cache.hit_ratio if self.cache is not None else None

    def describe(self) -> str:
        """One line: the tier plan, the device and the cache hit ratio so far."""
        text = self.plan.describe() + f" on {self.output_device}"
        if self.cache is not None:
            text += f"; cache {format_bytes(self.cache.nbytes)}, hit ratio {self.cache.hit_ratio:.3f}"
        return text

    def close(self) -> None:
        """Release device tensors, registrations and buffers; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            host = getattr(self, "_host", None)
            if host is not None:
                host.close()
            for name in ("_local", "_peers", "_host", "_host_arg", "_bits", "_local_np", "_peers_np", "_host_np"):
                if hasattr(self, name):
                    delattr(self, name)
            for arena in (self.arena, getattr(self, "_disk_arena", None)):
                if arena is not None:
                    arena.release()
            self.cache = None

    def __enter__(self) -> "TieredFeatureStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
