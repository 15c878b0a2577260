"""TieredTopology: a graph's CSC topology (``indptr``, ``indices``) spread over GPU memory, host RAM and disk.

After ``graphtier reorder`` the hottest nodes have the smallest ids, so their in-neighbour lists
are a prefix of ``indices``; the tiers are therefore ranges of *positions* in ``indices`` (a
:class:`TierPlan` over its E entries of ``itemsize`` bytes, no peer partitions, no cache)::

    [0, local_rows)        "gpu"   a device tensor
    [peer_end, host_end)   "host"  host RAM registered for zero-copy reads (:class:`UnifiedTensor`)
    [host_end, E)          "disk"  read from the memory map on demand

``indptr`` (int64 [N + 1]) always lives whole on the compute device: a sampler reads two entries
per destination, and it is small next to ``indices`` (8 bytes per node against the in-degree times
4 or 8). It is not part of the budget.

On CUDA :meth:`TieredTopology.gather_positions` runs a Triton kernel (:mod:`graphtier.memory.topology._topology_kernels`)
that reads the "gpu" and "host" tiers directly, and the "disk" positions are gathered on the CPU
from the memory map and copied in. Passing ``kernels`` (e.g. the kernel module interpreted with
``TRITON_INTERPRET=1``) runs the same path on the CPU, the host tier registered through
``registrar`` (tests pass a fake one). Without CUDA and without ``kernels`` the plan and the
accounting are the same but every tier is RAM or the memory map, gathered with numpy indexing.

A typed graph's GPU tier is a prefix of each relation's rows, several position ranges (``gpu_ranges``, a
:class:`~graphtier.memory.topology.position_ranges.GpuRanges`): the plan is then over the *tier order* (those ranges
first, then every other position ascending), each position mapped to it before the tiers are chosen; the
device tier holds the ranges back to back, the host tier the next positions of the tier order.

Traffic (:meth:`TieredTopology.traffic`, a :class:`TierTraffic`) counts bytes per tier plus
"requested": ``itemsize`` bytes of ``indices`` per gathered position in the tier that served it,
and 16 bytes per destination reported with :meth:`TieredTopology.count_indptr_reads` (two int64
entries of ``indptr``), counted in the "gpu" tier where the plan puts ``indptr`` (on the CPU path
too, which keeps the plan's accounting). The tiers always add up to "requested".
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from types import ModuleType
from typing import Self

import numpy as np
import torch

from graphtier.errors import OptionError
from graphtier.memory.features.source import TierTraffic
from graphtier.memory.features.tiered import torch_dtype_of, upload_rows
from graphtier.memory.features.unified import HostRegistrar, UnifiedTensor, page_aligned_empty
from graphtier.memory.plan.placement import (
    TierPlan,
    auto_device_bytes,
    format_bytes,
    parse_budget,
    plan_tiers,
)
from graphtier.memory.topology.position_ranges import GpuRanges

INDPTR_ENTRY_BYTES = 8
# sorted reads pay when more than this share of a call's positions is read off the GPU: on an H200
# (docs/benchmarks.md, 2026-11-28) sorting costs ~0.14 ns a position and saves ~9 ns a zero-copy read
# (97 -> 691 M positions/s all on the host; 12,816 -> 4,507 M/s all on the GPU); break-even near 1.6%
SORT_ABOVE_OFF_GPU_SHARE = 1 / 50
# a sampler reads indptr[v] and indptr[v + 1] of every destination v
INDPTR_BYTES_PER_DESTINATION = 2 * INDPTR_ENTRY_BYTES


def check_topology_arrays(indptr: np.ndarray, indices: np.ndarray) -> None:
    """OptionError unless indptr is integer [N + 1] from 0 to E and indices int32/int64 [E] (endpoints only)."""
    if indptr.ndim != 1 or indptr.shape[0] < 1 or indptr.dtype.kind not in "iu":
        raise OptionError(f"indptr: expected an int64 [N + 1] array, found {indptr.dtype} {tuple(indptr.shape)}")
    if indices.ndim != 1 or indices.dtype not in (np.int32, np.int64):
        raise OptionError(
            f"indices: expected an int32 or int64 [E] array, found {indices.dtype} {tuple(indices.shape)}"
        )
    first, last = int(indptr[0]), int(indptr[-1])
    if first != 0 or last != indices.shape[0]:
        raise OptionError(
            f"indptr: expected it to run from 0 to len(indices) = {indices.shape[0]}, found {first} to {last}"
        )


class TieredTopology:
    """Neighbour lists of a CSC graph read by absolute position from tiers placed by ``plan``.

    A :class:`graphtier.sampling.Topology`: what :class:`graphtier.sampling.DeviceNeighborSampler` samples from.

    Args:
        indptr: integer [N + 1] (int64 kept as is), RAM or memory map.
        indices: int32/int64 [E], RAM or memory map; read-only while the topology is open.
        plan: a :class:`TierPlan` over the E entries of ``indices`` (row_bytes = itemsize, one partition).
        device: the compute device; CUDA runs the device path, anything else the CPU path.
        registrar: the host-memory registrar of the host tier (tests pass a fake one).
        log: receives one-line progress messages.
        kernels: the kernel module (default :mod:`graphtier.memory.topology._topology_kernels` on CUDA); given on
            the CPU it runs the device path there (tests pass the interpreted module).
        sorted_reads: gather the positions in ascending order (sort, gather, scatter back), so the
            zero-copy and disk reads walk memory forward. None (the default): per call, sort when more than
            :data:`SORT_ABOVE_OFF_GPU_SHARE` of the positions are read from host RAM or disk.
        gpu_ranges: the positions of the "gpu" tier (``plan.local_rows`` entries in all); None: the prefix
            ``[0, plan.local_rows)``. Several ranges make ``plan`` a plan over the tier order (module docstring).

    Attributes: ``indptr`` (torch int64 [N + 1] on ``device``), ``num_nodes``, ``num_edges``,
    ``device``, ``plan``, ``indices_dtype``, ``gpu_ranges``.
    """

    def __init__(
        self,
        indptr: np.ndarray,
        indices: np.ndarray,
        plan: TierPlan,
        *,
        device: torch.device | str,
        registrar: HostRegistrar | None = None,
        log: Callable[[str], None] = print,
        kernels: ModuleType | None = None,
        sorted_reads: bool | None = None,
        gpu_ranges: GpuRanges | None = None,
    ) -> None:
        check_topology_arrays(indptr, indices)
        if plan.num_rows != indices.shape[0] or plan.row_bytes != indices.dtype.itemsize:
            raise AssertionError("tier plan made for another indices array")
        if plan.peer_partitions != 1 or plan.cache_rows != 0:
            raise OptionError("topology tiers: expected a plan without peer partitions or cache")
        if gpu_ranges is None:
            gpu_ranges = GpuRanges.prefix(plan.local_rows, plan.num_rows)
        if gpu_ranges.gpu_entries != plan.local_rows or gpu_ranges.num_positions != plan.num_rows:
            raise AssertionError("gpu ranges made for another tier plan")
        self.gpu_ranges = gpu_ranges
        self.num_nodes = int(indptr.shape[0]) - 1
        self.num_edges = int(indices.shape[0])
        self.plan = plan
        self.indices_dtype = torch_dtype_of(indices)
        self.itemsize = int(indices.dtype.itemsize)
        self.sorted_reads = sorted_reads
        self.device = torch.device(device)
        self.log = log
        self._lock = threading.Lock()
        self._traffic = TierTraffic()
        self._closed = False
        self._host: UnifiedTensor | None = None
        if self.device.type == "cuda":
            if not torch.cuda.is_available():
                raise OptionError(
                    f"{{device={self.device}}}: CUDA is not available on this machine", options=("device",)
                )
            index = self.device.index if self.device.index is not None else torch.cuda.current_device()
            self.device = torch.device("cuda", index)
            if kernels is None:
                try:
                    from graphtier.memory.topology import _topology_kernels as kernels
                except ImportError:
                    raise OptionError(
                        "the topology on CUDA needs the triton package, found it missing: pip install triton"
                    ) from None
        self._kernels = kernels
        self.on_device = kernels is not None
        # indptr lives whole on the compute device in the plan; the CPU twin keeps the plan's accounting
        self.indptr_tier = "gpu"
        if self.on_device:
            self._setup_device(indptr, indices, registrar)
        else:
            self._setup_cpu(indptr, indices)
        log(self.describe())

    # ------------------------------------------------------------------ setup
    def _setup_device(self, indptr: np.ndarray, indices: np.ndarray, registrar: HostRegistrar | None) -> None:
        plan = self.plan
        with torch.cuda.device(self.device) if self.device.type == "cuda" else nullcontext():
            self.indptr = upload_rows(indptr, self.device, np.dtype(np.int64))
            ranges = self.gpu_ranges
            if ranges.is_prefix:
                self._local = upload_rows(indices[: plan.local_rows], self.device)
                self._host = UnifiedTensor.from_rows(indices, plan.peer_end, plan.host_end, registrar=registrar)
            else:  # the tiers in tier order: the GPU ranges back to back, then the host positions
                self._local = upload_rows(ranges.copy_tier_order(indices, 0, plan.local_rows), self.device)
                host = page_aligned_empty(plan.host_rows, None, self.indices_dtype)
                ranges.copy_tier_order(indices, plan.peer_end, plan.host_end, out=host.numpy())
                self._host = UnifiedTensor(host, registrar=registrar)
            # an empty host tier is passed as an empty device tensor: an unregistered host pointer is refused
            self._host_arg = (
                self._host.tensor
                if plan.host_rows > 0
                else torch.empty(0, dtype=self.indices_dtype, device=self.device)
            )
        self._disk = indices

    def _setup_cpu(self, indptr: np.ndarray, indices: np.ndarray) -> None:
        plan = self.plan
        reusable = indptr.dtype == np.int64 and not isinstance(indptr, np.memmap) and indptr.flags.writeable
        indptr_ram = np.ascontiguousarray(indptr) if reusable else np.array(indptr, dtype=np.int64)
        self.indptr = torch.from_numpy(indptr_ram)
        if not self.gpu_ranges.is_prefix:
            self._ram = self.gpu_ranges.copy_tier_order(indices, 0, plan.host_end)  # RAM in tier order
        elif plan.disk_rows > 0 and isinstance(indices, np.memmap):
            self._ram = np.array(indices[: plan.host_end])  # the "gpu" and "host" tiers copied into RAM
        else:
            self._ram = np.asarray(indices[: plan.host_end])
        self._disk = indices

    # ------------------------------------------------------------------ gather
    def _check_positions(self, positions: torch.Tensor | np.ndarray) -> torch.Tensor:
        if not isinstance(positions, torch.Tensor):
            positions = torch.from_numpy(np.asarray(positions))
        if positions.dim() != 1:
            raise IndexError(f"edge positions must be a 1-d tensor, found shape {tuple(positions.shape)}")
        if positions.dtype.is_floating_point or positions.dtype.is_complex or positions.dtype == torch.bool:
            raise IndexError(f"edge positions must be integers, found dtype {positions.dtype}")
        return positions.to(device=self.device, dtype=torch.int64).contiguous()

    def gather_positions(self, positions: torch.Tensor) -> torch.Tensor:
        """``indices[positions]`` as int64: positions int64 [M] (absolute into indices, on ``device``) -> int64 [M] on ``device``.

        IndexError when a position is outside [0, num_edges). Thread-safe (one call at a time).
        """
        if self._closed:
            raise OptionError("topology is closed")
        positions = self._check_positions(positions)
        count = int(positions.shape[0])
        if count == 0:
            return torch.empty(0, dtype=torch.int64, device=self.device)
        order = self.gpu_ranges.to_tier_order(positions)  # positions themselves for a prefix
        low, high, below_local, below_host = self._position_stats(positions, order)
        if low < 0 or high >= self.num_edges:
            raise IndexError(f"edge positions must be in [0, {self.num_edges}), found [{low}, {high}]")
        with self._lock:
            if self._sorts(count, below_local):
                out = self._gather_sorted(positions, order, count - below_host)
            else:
                out = self._gather(positions, order, count - below_host)
            self._traffic = self._traffic + TierTraffic.of_rows(
                self.itemsize, gpu=below_local, host=below_host - below_local, disk=count - below_host, requested=count
            )
        return out

    def _sorts(self, count: int, below_local: int) -> bool:
        """Whether a call of ``count`` positions, ``below_local`` of them in the GPU tier, gathers sorted."""
        if self.sorted_reads is not None:
            return self.sorted_reads
        return (count - below_local) > SORT_ABOVE_OFF_GPU_SHARE * count

    def _position_stats(self, positions: torch.Tensor, order: torch.Tensor) -> tuple[int, int, int, int]:
        """(min, max of positions, count of tier order < local_rows, < host_end) of non-empty positions; one
        synchronisation on CUDA."""
        plan = self.plan
        if positions.device.type == "cpu":  # numpy: no thread-pool start-up per call
            values, ordered = positions.numpy(), order.numpy()
            below_local = int(np.count_nonzero(ordered < plan.local_rows))
            below_host = int(np.count_nonzero(ordered < plan.host_end))
            return int(values.min()), int(values.max()), below_local, below_host
        stats = torch.stack(
            [positions.min(), positions.max(), (order < plan.local_rows).sum(), (order < plan.host_end).sum()]
        ).tolist()
        low, high, below_local, below_host = (int(v) for v in stats)
        return low, high, below_local, below_host

    def _gather_sorted(self, positions: torch.Tensor, order: torch.Tensor, disk_count: int) -> torch.Tensor:
        """Gather in ascending position order, then put each value back at its caller's index."""
        prefix = order is positions
        if positions.device.type == "cpu":
            values = positions.numpy()
            index = np.argsort(values, kind="stable")
            out = np.empty(values.shape[0], dtype=np.int64)
            ordered = torch.from_numpy(values[index])
            tiered = ordered if prefix else torch.from_numpy(order.numpy()[index])
            out[index] = self._gather(ordered, tiered, disk_count).numpy()
            return torch.from_numpy(out)
        ordered, index = torch.sort(positions)
        out = torch.empty_like(positions)
        out[index] = self._gather(ordered, ordered if prefix else order[index], disk_count)
        return out

    def _gather(self, positions: torch.Tensor, order: torch.Tensor, disk_count: int) -> torch.Tensor:
        """Values at ``positions`` (int64 [M]) whose tier order is ``order`` (int64 [M], same device)."""
        if not self.on_device:
            return self._gather_cpu(positions, order)
        out = torch.empty(positions.shape[0], dtype=torch.int64, device=self.device)
        with torch.cuda.device(self.device) if self.device.type == "cuda" else nullcontext():
            self._kernels.gather_positions_triton(
                self._local, self._host_arg, order, out, host_start=self.plan.peer_end
            )
            if self.device.type == "cuda" and self._host is not None:  # unregistered only once this read is done
                self._host.record_use(torch.cuda.current_stream(self.device))
            if disk_count:
                on_disk = torch.nonzero(order >= self.plan.host_end).flatten()
                disk_positions = positions[on_disk].cpu().numpy()
                values = torch.from_numpy(np.asarray(self._disk[disk_positions], dtype=np.int64))
                out[on_disk] = values.to(self.device)
        return out

    def _gather_cpu(self, positions: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
        positions_np, order_np = positions.numpy(), order.numpy()
        host_end = self.plan.host_end
        if self.plan.disk_rows == 0 or int(order_np.max()) < host_end:
            return torch.from_numpy(np.asarray(self._ram[order_np], dtype=np.int64))
        out = np.empty(positions_np.shape[0], dtype=np.int64)
        in_ram = order_np < host_end
        out[in_ram] = self._ram[order_np[in_ram]]
        out[~in_ram] = np.asarray(self._disk[positions_np[~in_ram]])
        return torch.from_numpy(out)

    def count_indptr_reads(self, num_destinations: int) -> None:
        """Count a sampler's reads of ``indptr``: two int64 entries (16 bytes) per destination, in ``indptr_tier``."""
        if num_destinations < 0:
            raise ValueError(f"num_destinations must be >= 0, found {num_destinations}")
        nbytes = INDPTR_BYTES_PER_DESTINATION * int(num_destinations)
        with self._lock:
            self._traffic = self._traffic + TierTraffic.served_by(self.indptr_tier, nbytes)

    # ------------------------------------------------------------------ reporting
    def traffic(self) -> TierTraffic:
        """Cumulative bytes read per tier; the tiers add up to ``requested``."""
        with self._lock:
            return self._traffic

    def describe(self) -> str:
        """One line: graph size, where indptr lives and the tier plan of indices."""
        plan = self.plan
        indptr_bytes = INDPTR_ENTRY_BYTES * (self.num_nodes + 1)

        def part(name: str, entries: int) -> str:
            share = 100.0 * entries / self.num_edges if self.num_edges else 0.0
            return f"{name} {format_bytes(entries * self.itemsize)} ({share:.1f}%)"

        ranges = "" if self.gpu_ranges.is_prefix else f" in {self.gpu_ranges.describe()}"

        return (
            f"topology: {self.num_nodes:,} nodes, {self.num_edges:,} edges ({str(self.indices_dtype).removeprefix('torch.')}) "
            f"on {self.device}{' via kernels' if self.on_device else ''}; indptr {format_bytes(indptr_bytes)} in "
            f"{self.indptr_tier}; indices: {part('gpu', plan.local_rows)}{ranges}, {part('host', plan.host_rows)}, "
            f"{part('disk', plan.disk_rows)}"
        )

    def close(self) -> None:
        """Release device tensors and the host registration; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._host is not None:
                self._host.close()
                self._host = None
            # drop the tiers of either path (the attributes a path did not set are created empty)
            self._local = self._host_arg = torch.empty(0, dtype=self.indices_dtype)
            self._ram = self._disk = np.empty(0, dtype=np.int64)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def auto_topology_bytes(
    device: torch.device, indptr_entries: int, in_flight_bytes: int, log: Callable[[str], None]
) -> int:
    """``auto`` device bytes for ``indices``: the auto device memory minus ``indptr`` and the batches in flight."""
    free, why = auto_device_bytes(device)
    indptr_bytes = INDPTR_ENTRY_BYTES * int(indptr_entries)
    usable = max(0, free - indptr_bytes - int(in_flight_bytes))
    log(
        f"auto topology budget: {format_bytes(usable)} ({why}, minus {format_bytes(indptr_bytes)} of indptr "
        f"and {format_bytes(in_flight_bytes)} for the batches in flight)"
    )
    return usable


def make_topology(
    indptr: np.ndarray,
    indices: np.ndarray,
    *,
    device: torch.device | str,
    topology_budget: str | None = None,
    ram_budget: str | None = None,
    registrar: HostRegistrar | None = None,
    log: Callable[[str], None] = print,
    kernels: ModuleType | None = None,
    sorted_reads: bool | None = None,
    in_flight_bytes: int = 0,
    gpu_ranges_for: Callable[[int], Sequence[tuple[int, int]]] | None = None,
) -> TieredTopology:
    """Plan the tiers of ``indices`` and build a :class:`TieredTopology` (arrays as there).

    ``topology_budget`` (device memory for a prefix of ``indices``) and ``ram_budget`` (host RAM for
    the next entries; None = all the rest) parse like ``--gpu-budget`` and ``--ram-budget``
    (:mod:`graphtier.memory.plan.placement`): bytes, a fraction of the entries, or "auto" (None = auto).
    On CUDA, auto is the device's free memory minus the reserve and minus ``indptr``, which is
    placed whole on the device, and minus ``in_flight_bytes`` (room for the batches in flight,
    :func:`graphtier.memory.features.arena.in_flight_bytes`); without CUDA auto is 0.

    ``gpu_ranges_for`` (a typed graph's split, :func:`graphtier.memory.plan.typed_budget.relation_gpu_ranges`) turns
    the GPU budget in bytes into the position ranges the "gpu" tier holds (at most that many bytes); None: the
    prefix of ``indices`` the budget covers. The host tier keeps the entries ``ram_budget`` gives it.
    """
    check_topology_arrays(indptr, indices)
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise OptionError(f"{{device={device}}}: CUDA is not available on this machine", options=("device",))
    budget_text = topology_budget if topology_budget is not None else "auto"
    budget = parse_budget(budget_text, "topology_budget")
    if budget.auto and device.type == "cuda":
        budget_text = f"{auto_topology_bytes(device, int(indptr.shape[0]), in_flight_bytes, log)}B"
    plan = plan_tiers(
        int(indices.shape[0]),
        int(indices.dtype.itemsize),
        device=device,
        gpu_budget=budget_text,
        ram_budget=ram_budget,
        log=log,
    )
    ranges = None
    if gpu_ranges_for is not None:
        ranges = GpuRanges(gpu_ranges_for(plan.local_rows * plan.row_bytes), plan.num_rows)
        if ranges.gpu_entries > plan.local_rows:
            raise AssertionError("gpu ranges over the topology budget")
        local = ranges.gpu_entries  # the host tier: all the rest, or as many entries as the RAM budget gave
        host_end = plan.num_rows if plan.disk_rows == 0 else local + plan.host_rows
        plan = TierPlan(plan.num_rows, plan.row_bytes, local_rows=local, peer_end=local, host_end=host_end)
    return TieredTopology(
        indptr, indices, plan, device=device, registrar=registrar, log=log, kernels=kernels, sorted_reads=sorted_reads,
        gpu_ranges=ranges,
    )  # fmt: skip
