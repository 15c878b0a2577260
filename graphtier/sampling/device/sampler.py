"""Device-side uniform neighbour sampling: the batches of :class:`NeighborSampler`, computed where the graph is.

A :class:`DeviceNeighborSampler` reads the graph through a :class:`Topology` (column pointers on the
device, neighbour ids fetched by position, possibly from host memory) and does every step with torch
ops on that device, except the random picks: Floyd's algorithm in a Triton kernel
(:mod:`graphtier.sampling.device._device_kernels`) on CUDA, or the numba twin on the CPU. Both draw the CPU
sampler's counter-based random numbers, and new nodes are numbered in first-seen order, so a batch is
identical, tensor for tensor, to ``NeighborSampler(indptr, indices, fanouts, seed=seed).sample(seeds, batch_id)``.

Per hop, for the ``D`` nodes known so far: spans ``starts``/``degrees`` from ``indptr``, counts
``min(degree, fanout)``, ``offsets`` their prefix sum; a destination with ``count == degree`` takes
its whole list (``start + arange``), the others ``fanout`` Floyd picks; only the chosen positions are
then read (``gather_positions``), so a hub's list is never read whole.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Mapping, Sequence
from types import ModuleType

import numpy as np
import torch

from graphtier.dataset.schema import RelationType, Schema
from graphtier.sampling.batch import Block, MiniBatch
from graphtier.sampling.device.device_hops import (
    Topology,
    check_topology,
    draw_picks,
    edge_layout,
    first_seen_relabel,
    resolve_picks,
    seeds_on_device,
)
from graphtier.sampling.device.typed_device import DeviceTypedHops
from graphtier.sampling.neighbor import _neighbor_kernels as cpu_kernels
from graphtier.sampling.neighbor.hops import check_seed, homogeneous_fanouts, next_batch_id, typed_hops
from graphtier.sampling.typed_batch import TypedMiniBatch


class DeviceNeighborSampler:
    """Uniform neighbour sampler of any schema on ``topology.device``, batch for batch identical to
    :class:`NeighborSampler` built with the same arguments.

    Args:
        topology: the graph (:class:`Topology`, e.g. :class:`DenseTopology` or the store's tiered one); with a
            ``schema``, every relation's CSC back to back (``topology.num_nodes == schema.num_rows``).
        fanouts: PyG order, ``fanouts[0]`` = neighbours drawn per seed; -1 = all neighbours. With a ``schema`` a
            list for every relation or a mapping per relation type, as :class:`NeighborSampler` takes.
        schema: None (homogeneous: :class:`MiniBatch` es of global ids) or the dataset's schema (per-relation
            sampling into :class:`~graphtier.sampling.typed_batch.TypedMiniBatch` es,
            :class:`~graphtier.sampling.device.typed_device.DeviceTypedHops`); chosen once.
        seed: base of the counter-based random stream (the CPU sampler's).
        picks: "triton" (the Triton kernel: compiled on CUDA, or the module given as ``kernels``),
            "numba" (the numba twin on the CPU; device tensors are copied there and back), "auto" =
            "triton" on CUDA, else "numba".
        kernels: a module with ``floyd_picks_triton`` and ``MAX_FANOUT`` to use instead of the compiled
            :mod:`graphtier.sampling.device._device_kernels` (tests pass the module loaded with TRITON_INTERPRET=1).
        with_edge_ids: every block (relation block) records ``edge_id`` (int64 [E] on the device, each edge's CSC
            position), as :class:`NeighborSampler` does with it.

    Hops with a fanout above the kernel's ``MAX_FANOUT`` draw their picks with the numba twin.
    """

    def __init__(
        self,
        topology: Topology,
        fanouts: Sequence[int] | Mapping[RelationType, Sequence[int]],
        *,
        schema: Schema | None = None,
        seed: int = 0,
        picks: str = "auto",
        kernels: ModuleType | None = None,
        with_edge_ids: bool = False,
    ) -> None:
        check_topology(topology)
        self.with_edge_ids = bool(with_edge_ids)
        self.topology = topology
        self.schema = schema
        self.device = torch.device(topology.device)
        self.seed = check_seed(seed)
        self.picks, self._kernels = resolve_picks(picks, kernels, self.device)
        self._batch_counter = itertools.count()
        self._typed: DeviceTypedHops | None = None
        if schema is None:
            self.fanouts: list[int] | dict[RelationType, Sequence[int]] = homogeneous_fanouts(fanouts)
        else:
            self._typed = DeviceTypedHops(topology, schema, fanouts, self.seed, self._kernels, self.with_edge_ids)
            self.fanouts = dict(self._typed.layout.fanouts)

    def sample(self, seeds: np.ndarray | torch.Tensor, batch_id: int | None = None) -> MiniBatch | TypedMiniBatch:
        """Sample a mini-batch for ``seeds`` (int [B]: numpy, CPU or device tensor): global ids, or with a
        ``schema`` local ids of its target type.

        ``batch_id`` selects the random stream; None takes the next value of an internal counter.
        Returns a :class:`MiniBatch` (with a schema a :class:`TypedMiniBatch`) of int64 tensors on
        ``topology.device`` with one block per hop.
        """
        batch_id = next_batch_id(batch_id, self._batch_counter)
        if self._typed is not None:
            return self._typed.sample(seeds, int(batch_id))
        seed_tensor = seeds_on_device(seeds, self.topology.num_nodes, self.device)
        # Triton launches on the current CUDA device: make it the topology's (the caller may be any thread)
        with torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext():
            n_id, seed_index = first_seen_relabel(seed_tensor[:0], seed_tensor)
            blocks = []
            for hop, fanout in enumerate(self.fanouts):
                stream = cpu_kernels.stream_key(self.seed, int(batch_id), hop)
                sources, destinations, positions, offsets = self._hop(n_id, fanout, stream)
                n_id, local_sources = first_seen_relabel(n_id, sources)
                edge_index = torch.stack((local_sources, destinations))
                edge_id = positions if self.with_edge_ids else None
                blocks.append(Block.from_grouped(offsets, edge_index, int(n_id.shape[0]), edge_id))
        blocks.reverse()
        return MiniBatch(n_id=n_id, blocks=blocks, seed_index=seed_index, seeds=seed_tensor)

    def sample_global(
        self, global_seeds: np.ndarray | torch.Tensor, batch_id: int
    ) -> tuple[TypedMiniBatch, torch.Tensor]:
        """With a ``schema``: a batch for seeds of any types, as :meth:`NeighborSampler.sample_global`, the rows on
        the device; OptionError without a schema."""
        return typed_hops(self._typed).sample_global(global_seeds, int(batch_id))

    def _hop(
        self, dst_nodes: torch.Tensor, fanout: int, stream: int
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(sources, destinations, positions, offsets) on the device: int64 [E] global source ids, destination
        indices and each edge's CSC position (its ``edge_id``), and int64 [D + 1] the destinations' first edges."""
        indptr = self.topology.indptr
        starts = indptr[dst_nodes]
        degrees = indptr[dst_nodes + 1] - starts
        counts = degrees if fanout < 0 else torch.clamp(degrees, max=fanout)
        offsets, num_edges, destinations = edge_layout(counts)
        # every edge's position as if its destination took its whole list; the picks overwrite the rest
        positions = torch.arange(num_edges, device=self.device) + (starts - offsets[:-1])[destinations]
        if fanout > 0:
            picked = torch.nonzero(counts < degrees).flatten()
            if picked.numel():
                self._pick(picked, starts, degrees, offsets, stream, fanout, positions)
        return self.topology.gather_positions(positions), destinations, positions, offsets

    def _pick(
        self,
        picked: torch.Tensor,
        starts: torch.Tensor,
        degrees: torch.Tensor,
        offsets: torch.Tensor,
        stream: int,
        fanout: int,
        positions: torch.Tensor,
    ) -> None:
        """Write the Floyd picks of the destinations ``picked`` into ``positions`` (see :func:`draw_picks`)."""
        draw_picks(
            self._kernels, picked, (starts, degrees, offsets), stream, fanout, positions, self.topology.num_edges
        )
