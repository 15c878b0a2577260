"""Device-side temporal neighbour sampling: the batches of :class:`TemporalNeighborSampler`, computed where the graph is.

A :class:`DeviceTemporalSampler` reads the graph through a :class:`~graphtier.sampling.device.sampler.Topology` and keeps
the edge times in each list's time order (``time_by_order = edge_time[edge_time_order]``) and ``edge_time_order``
whole on the topology's device (16 bytes an edge). Per hop, for the ``R`` rows (node, time bound) known so far:

* the cut: how many of a row's in-edges are admissible (earlier than its bound, or at most it with ``inclusive``),
  a binary search in the row's slice of ``time_by_order``: the Triton kernel
  (:mod:`graphtier.sampling.temporal._temporal_device_kernels`) on CUDA, or its torch twin :func:`temporal_cuts_torch`;
* the picks: a row with more admissible edges than ``fanout`` takes Floyd picks over its admissible prefix (the
  device sampler's :func:`~graphtier.sampling.device.sampler.draw_picks`, key ``node_key(stream, row)``) or its ``fanout``
  latest (``recent``); the others take the whole prefix, in time order;
* the picked positions give ``edge_id = edge_time_order[position]`` and the sources (``gather_positions``), which
  inherit their destination's bound; the (node, bound) pairs get rows in first-seen order (:func:`first_seen_pairs`,
  sorts instead of the CPU sampler's node-indexed scratch), the last hop's sources one row per node
  (:func:`first_seen_inputs`).

These are the CPU kernels' draws and numbering (:mod:`graphtier.sampling.temporal._temporal_kernels`), so a batch equals,
tensor for tensor, ``TemporalNeighborSampler(...).sample(seeds, seed_time, batch_id)`` of the same seed.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Mapping, Sequence
from types import ModuleType

import numpy as np
import torch

from graphtier.dataset.schema import RelationType, Schema
from graphtier.errors import OptionError
from graphtier.sampling.batch import Block, MiniBatch
from graphtier.sampling.device.device_hops import (
    Topology,
    check_topology,
    draw_picks,
    edge_layout,
    first_seen_inputs,
    first_seen_pairs,
    resolve_picks,
    seeds_on_device,
)
from graphtier.sampling.neighbor import _neighbor_kernels as cpu_kernels
from graphtier.sampling.neighbor.hops import (
    check_edge_times,
    check_seed,
    homogeneous_fanouts,
    is_recent,
    next_batch_id,
    seed_times,
    typed_hops,
)
from graphtier.sampling.temporal.typed_temporal_device import DeviceTypedTemporalHops
from graphtier.sampling.typed_batch import TypedMiniBatch


def temporal_cuts_torch(
    nodes: torch.Tensor,
    bounds: torch.Tensor,
    indptr: torch.Tensor,
    time_by_order: torch.Tensor,
    inclusive: bool,
    steps: int,
) -> torch.Tensor:
    """Torch twin of :func:`graphtier.sampling.temporal._temporal_device_kernels.temporal_cuts_triton` (same arguments, any
    device): the admissible edge count of every row, int64 [R] -- every row's binary search in lock step."""
    start = indptr[nodes]
    lo, hi = start.clone(), indptr[nodes + 1]
    last = max(int(time_by_order.shape[0]) - 1, 0)
    for _ in range(int(steps)):
        active = lo < hi
        mid = (lo + hi) >> 1
        t = time_by_order[mid.clamp(max=last)] if time_by_order.numel() else torch.zeros_like(mid)
        admit = t <= bounds if inclusive else t < bounds
        lo = torch.where(active & admit, mid + 1, lo)
        hi = torch.where(active & ~admit, mid, hi)
    return lo - start


class DeviceTemporalSampler:
    """Time-bounded neighbour sampler of any schema on ``topology.device``, batch for batch identical to
    :class:`~graphtier.sampling.temporal.sampler.TemporalNeighborSampler` built with the same arguments.

    Args:
        topology: the graph (:class:`~graphtier.sampling.device.device_hops.Topology`, e.g. ``DenseTopology`` or the
            store's tiered one; with a ``schema`` every relation's CSC back to back).
        edge_time: int64 [E], each edge's time, CSC order (numpy or tensor; copied whole to the topology's device).
        edge_time_order: int64 [E], each list's CSC positions sorted by time (likewise).
        fanouts: as :class:`~graphtier.sampling.temporal.sampler.TemporalNeighborSampler`'s (a list, or with a ``schema``
            a mapping per relation type).
        schema: None, or the dataset's schema: per-relation sampling into typed batches
            (:class:`~graphtier.sampling.temporal.typed_temporal_device.DeviceTypedTemporalHops`).
        strategy: ``"uniform"`` or ``"recent"``.
        inclusive: admit edges at the bound (``<=``), else strictly earlier.
        seed: base of the counter-based random stream (the CPU sampler's).
        picks: the Floyd picks, as :class:`~graphtier.sampling.device.sampler.DeviceNeighborSampler`'s.
        kernels: the picks' Triton module, as :class:`~graphtier.sampling.device.sampler.DeviceNeighborSampler`'s.
        cut_kernels: a module with ``temporal_cuts_triton`` to use instead of the compiled
            :mod:`graphtier.sampling.temporal._temporal_device_kernels` (tests pass the interpreted one). None: the compiled
            kernel on CUDA with ``picks`` "triton", else the torch twin :func:`temporal_cuts_torch`.
    """

    def __init__(
        self,
        topology: Topology,
        edge_time: np.ndarray | torch.Tensor,
        edge_time_order: np.ndarray | torch.Tensor,
        fanouts: Sequence[int] | Mapping[RelationType, Sequence[int]],
        *,
        schema: Schema | None = None,
        strategy: str = "uniform",
        inclusive: bool = False,
        seed: int = 0,
        picks: str = "auto",
        kernels: ModuleType | None = None,
        cut_kernels: ModuleType | None = None,
    ) -> None:
        check_topology(topology)
        self.topology = topology
        self.device = torch.device(topology.device)
        as_numpy = [t.cpu().numpy() if isinstance(t, torch.Tensor) else t for t in (edge_time, edge_time_order)]
        times, order = check_edge_times(as_numpy[0], as_numpy[1], topology.num_edges)
        self.edge_time_order = torch.from_numpy(order.copy()).to(self.device)
        self.time_by_order = torch.from_numpy(times[order]).to(self.device)
        self.schema = schema
        self.recent = is_recent(strategy)
        self.inclusive = bool(inclusive)
        self.seed = check_seed(seed)
        self.picks, self._kernels = resolve_picks(picks, kernels, self.device)
        if cut_kernels is None and self.picks == "triton" and self.device.type == "cuda":
            from graphtier.sampling.temporal import _temporal_device_kernels as cut_kernels
        self._cuts = temporal_cuts_torch if cut_kernels is None else cut_kernels.temporal_cuts_triton
        degrees = topology.indptr[1:] - topology.indptr[:-1]
        self._steps = int(degrees.max()).bit_length() if degrees.numel() else 0
        self._batch_counter = itertools.count()
        self._typed: DeviceTypedTemporalHops | None = None
        if schema is not None:
            self._typed = DeviceTypedTemporalHops(topology, schema, fanouts, self.seed, self.hop, self.times_on_device)
            self.fanouts: list[int] | dict[RelationType, Sequence[int]] = dict(self._typed.layout.fanouts)
        else:
            self.fanouts = homogeneous_fanouts(fanouts)

    def sample(
        self, seeds: np.ndarray | torch.Tensor, seed_time: np.ndarray | torch.Tensor | int, batch_id: int | None = None
    ) -> MiniBatch | TypedMiniBatch:
        """Sample a mini-batch for ``seeds`` (int [B] global ids; with a ``schema`` local ids of its target type) at
        ``seed_time`` (int [B], or one int for all).

        Returns a :class:`MiniBatch` of int64 tensors on ``topology.device``: ``n_id`` and ``n_time`` [R] (rows:
        distinct (node, time) pairs, the distinct seeds first), one block per hop with ``edge_id``, ``seed_index``
        [B] (with a schema a :class:`TypedMiniBatch`); the batch of the CPU sampler with the same seed, batch_id,
        seeds and times.
        """
        batch_id = next_batch_id(batch_id, self._batch_counter)
        if self._typed is not None:
            return self._typed.sample(seeds, seed_time, int(batch_id))
        seed_tensor = seeds_on_device(seeds, self.topology.num_nodes, self.device)
        times = self.times_on_device(seed_time, int(seed_tensor.shape[0]))
        with torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext():
            empty = seed_tensor[:0]
            node, bound, seed_index = first_seen_pairs((empty, empty), (seed_tensor, times))
            blocks = []
            for hop, fanout in enumerate(self.fanouts):
                stream = cpu_kernels.stream_key(self.seed, int(batch_id), hop)
                sources, destinations, edge_id, rowptr = self.hop(node, bound, fanout, stream)
                relabel = first_seen_inputs if hop == len(self.fanouts) - 1 else first_seen_pairs  # inputs: by node
                node, bound, local = relabel((node, bound), (sources, bound[destinations]))
                blocks.append(
                    Block.from_grouped(rowptr, torch.stack((local, destinations)), int(node.shape[0]), edge_id)
                )
        blocks.reverse()
        return MiniBatch(n_id=node, blocks=blocks, seed_index=seed_index, seeds=seed_tensor, n_time=bound)

    def sample_global(
        self, global_seeds: np.ndarray | torch.Tensor, batch_id: int, seed_time: np.ndarray | torch.Tensor | int
    ) -> tuple[TypedMiniBatch, torch.Tensor]:
        """With a ``schema``: seeds of any types (global ids) at their times, as
        :meth:`TemporalNeighborSampler.sample_global`, the rows on the device; OptionError without a schema."""
        return typed_hops(self._typed).sample_global(global_seeds, int(batch_id), seed_time)

    def times_on_device(self, seed_time: np.ndarray | torch.Tensor | int, count: int) -> torch.Tensor:
        """Seed times as int64 [count] on the device (:func:`seed_times`'s checks; device tensors checked there)."""
        if isinstance(seed_time, torch.Tensor) and seed_time.device.type != "cpu":
            if seed_time.dtype.is_floating_point or seed_time.dtype.is_complex or seed_time.dtype == torch.bool:
                raise OptionError(f"seed_time: expected integer times, found dtype {seed_time.dtype}")
            if seed_time.dim() == 0:
                seed_time = seed_time.expand(count)
            if seed_time.shape != (count,):
                raise OptionError(
                    f"seed_time: expected one time per seed ({count}), found shape {tuple(seed_time.shape)}"
                )
            return seed_time.to(device=self.device, dtype=torch.int64).contiguous()
        return torch.from_numpy(seed_times(seed_time, count)).to(self.device)

    def hop(
        self, nodes: torch.Tensor, bounds: torch.Tensor, fanout: int, stream: int
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One hop of the rows ``nodes`` (int64 [R] CSC rows on the device) at ``bounds`` (int64 [R]) with ``fanout``
        (-1: every admissible edge) and the random ``stream`` (:func:`~graphtier.sampling.neighbor._neighbor_kernels.
        stream_key`): (sources, destinations, edge_id, rowptr) on the device: int64 [E] source ids as the CSC holds
        them, destination rows (indices into ``nodes``) and the picked edges' CSC positions, grouped by destination
        row, in time order for whole prefixes and ``recent``; int64 [R + 1] each row's first edge (a typed sampler
        calls it per relation)."""
        indptr = self.topology.indptr
        starts = indptr[nodes]
        admitted = self._cuts(nodes, bounds, indptr, self.time_by_order, self.inclusive, self._steps)
        counts = admitted if fanout < 0 else torch.clamp(admitted, max=fanout)
        offsets, num_edges, destinations = edge_layout(counts)
        # every edge's position in time order as if its row took the end of its prefix (the whole prefix when
        # it has at most ``fanout`` edges, the latest ``fanout`` for ``recent``); uniform picks overwrite the rest
        shift = starts - offsets[:-1] + (admitted - counts)
        positions = torch.arange(num_edges, device=self.device) + shift[destinations]
        if fanout > 0 and not self.recent:
            picked = torch.nonzero(counts < admitted).flatten()
            if picked.numel():
                draw_picks(self._kernels, picked, (starts, admitted, offsets), stream, fanout, positions,
                           self.topology.num_edges)  # fmt: skip
        edge_id = self.edge_time_order[positions]
        return self.topology.gather_positions(edge_id), destinations, edge_id, offsets
