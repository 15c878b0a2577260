"""Device-side uniform neighbour sampling: the batches of :class:`NeighborSampler`, computed where the graph is.

A :class:`DeviceNeighborSampler` reads the graph through a :class:`Topology` (column pointers on the
device, neighbour ids fetched by position, possibly from host memory) and does every step with torch
ops on that device, except the random picks: Floyd's algorithm in a Triton kernel
(:mod:`graphtier.sampling._device_kernels`) on CUDA, or the numba twin on the CPU. Both draw the CPU
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
from collections.abc import Sequence
from types import ModuleType
from typing import Protocol, runtime_checkable

import numpy as np
import torch

from graphtier.errors import OptionError
from graphtier.sampling import _neighbor_kernels as cpu_kernels
from graphtier.sampling.batch import Block, MiniBatch
from graphtier.sampling.neighbor import check_fanouts, check_graph, check_seed, next_batch_id
from graphtier.sampling.seeds import as_seed_array

PICKS = ("auto", "triton", "numba")


@runtime_checkable
class Topology(Protocol):
    """A CSC graph as the device sampler reads it.

    ``indptr``: int64 [N + 1] on ``device`` (the list of node ``v`` is positions
    ``[indptr[v], indptr[v + 1])``); ``gather_positions``: int64 [M] positions on ``device`` ->
    int64 [M] neighbour ids on ``device``.
    """

    indptr: torch.Tensor
    num_nodes: int
    num_edges: int
    device: torch.device

    def gather_positions(self, positions: torch.Tensor) -> torch.Tensor:
        """Neighbour ids (int64 [M], on ``device``) at absolute ``positions`` (int64 [M], on ``device``)."""
        ...


def _as_tensor(array: np.ndarray | torch.Tensor) -> torch.Tensor:
    if isinstance(array, torch.Tensor):
        return array
    array = np.asarray(array)
    return torch.from_numpy(array if array.flags.writeable else array.copy())


class DenseTopology:
    """:class:`Topology` over whole ``indptr``/``indices`` arrays held on one device.

    Args:
        indptr: int64 [N + 1] column pointers, numpy or tensor.
        indices: int32/int64 [E] in-neighbour ids, numpy or tensor (kept in its dtype).
        device: where to hold both (default: the tensors' device, the CPU for numpy arrays).
    """

    def __init__(
        self,
        indptr: np.ndarray | torch.Tensor,
        indices: np.ndarray | torch.Tensor,
        device: torch.device | str | None = None,
    ) -> None:
        if not isinstance(indptr, torch.Tensor) or not isinstance(indices, torch.Tensor):
            indptr, indices = check_graph(_as_tensor(indptr).cpu().numpy(), _as_tensor(indices).cpu().numpy())
        elif device is None and indptr.device != indices.device:
            raise OptionError(f"indices: expected a tensor on indptr's device {indptr.device}, found {indices.device}")
        self.device = torch.device(device) if device is not None else _as_tensor(indptr).device
        self.indptr = _as_tensor(indptr).to(self.device)
        self.indices = _as_tensor(indices).to(self.device)
        if self.indptr.dim() != 1 or self.indptr.dtype != torch.int64 or self.indptr.shape[0] < 1:
            raise OptionError(
                f"indptr: expected a non-empty 1-d int64 array, found {self.indptr.dtype} {tuple(self.indptr.shape)}"
            )
        if self.indices.dim() != 1 or self.indices.dtype not in (torch.int32, torch.int64):
            raise OptionError(
                f"indices: expected a 1-d int32 or int64 array, found {self.indices.dtype} {tuple(self.indices.shape)}"
            )
        first, last = int(self.indptr[0]), int(self.indptr[-1])
        if first != 0 or last != self.indices.shape[0]:
            raise OptionError(
                f"indptr: expected indptr[0] == 0 and indptr[-1] == len(indices) == {self.indices.shape[0]}, "
                f"found {first} and {last}"
            )
        self.num_nodes = int(self.indptr.shape[0]) - 1
        self.num_edges = int(self.indices.shape[0])

    def gather_positions(self, positions: torch.Tensor) -> torch.Tensor:
        """``indices[positions]`` as int64 (positions int64 [M] on ``device``)."""
        return self.indices[positions].to(torch.int64)


def first_seen_relabel(known: torch.Tensor, sources: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Number nodes in first-seen order: ``(n_id, local)`` for distinct ``known`` (int64 [K]) then ``sources`` (int64 [E]).

    ``n_id`` (int64 [K + new]) is ``known`` followed by the new nodes of ``sources`` in order of first
    occurrence; ``local`` (int64 [E]) is the index in ``n_id`` of each source. Same device as the inputs.
    This is the sequential relabel of the CPU sampler done with sorts instead of an N-sized scratch: a
    stable sort puts each node's first occurrence first in its run of equal ids.
    """
    nodes = torch.cat((known, sources))
    ordered, permutation = torch.sort(nodes, stable=True)
    run_start = torch.ones_like(ordered, dtype=torch.bool)
    torch.ne(ordered[1:], ordered[:-1], out=run_start[1:])
    run_of_sorted = torch.cumsum(run_start, 0) - 1
    first = permutation[run_start]  # first occurrence of each distinct node, by node id
    rank = torch.empty_like(first)
    order = torch.argsort(first)
    rank[order] = torch.arange(first.shape[0], device=nodes.device)
    local = torch.empty_like(nodes)
    local[permutation] = rank[run_of_sorted]
    return nodes[first[order]], local[known.shape[0] :]


def seeds_on_device(seeds: np.ndarray | torch.Tensor, num_nodes: int, device: torch.device) -> torch.Tensor:
    """Seeds as int64 [B] on ``device``, checked as :func:`as_seed_array` does (device tensors checked in place)."""
    if not isinstance(seeds, torch.Tensor) or seeds.device.type == "cpu":
        return torch.from_numpy(as_seed_array(seeds, num_nodes).copy()).to(device)
    if seeds.dtype.is_floating_point or seeds.dtype.is_complex or seeds.dtype == torch.bool:
        raise OptionError(f"seeds: expected an integer tensor, found dtype {seeds.dtype}")
    if seeds.dim() != 1:
        raise OptionError(f"seeds: expected a 1-d array, found shape {tuple(seeds.shape)}")
    seeds = seeds.to(device=device, dtype=torch.int64).contiguous()
    if seeds.numel():
        low, high = (int(v) for v in torch.aminmax(seeds))
        if low < 0 or high >= num_nodes:
            raise OptionError(f"seeds: expected node ids in [0, {num_nodes}), found values in [{low}, {high}]")
    return seeds


def check_topology(topology: Topology) -> None:
    """OptionError unless ``topology`` is a :class:`Topology` (a device sampler's graph)."""
    if not isinstance(topology, Topology):
        raise OptionError(
            f"topology: expected an object with indptr, num_nodes, num_edges, device and gather_positions, "
            f"found {type(topology).__name__}"
        )


def resolve_picks(picks: str, kernels: ModuleType | None, device: torch.device) -> tuple[str, ModuleType | None]:
    """``(picks, kernels)`` of a device sampler: ``picks`` checked ("auto" = "triton" on CUDA, else "numba") and the
    Triton kernel module to launch (``kernels`` if given, else the compiled one on CUDA; None for "numba")."""
    if picks not in PICKS:
        raise OptionError(f"picks: expected one of {', '.join(PICKS)}, found {picks!r}")
    if picks == "auto":
        picks = "triton" if device.type == "cuda" else "numba"
    if picks == "triton" and kernels is None:
        if device.type != "cuda":
            raise OptionError(f"picks: 'triton' needs a CUDA topology (or kernels=...), found device {device}")
        from graphtier.sampling import _device_kernels

        kernels = _device_kernels
    return picks, kernels if picks == "triton" else None


def draw_picks(
    kernels: ModuleType | None,
    picked: torch.Tensor,
    spans: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    stream: int,
    fanout: int,
    positions: torch.Tensor,
    max_degree: int,
) -> None:
    """Write ``fanout`` Floyd picks of every item of ``picked`` (int64 [M], items with fanout < degree) into
    ``positions`` (int64 [E]) at its offset; ``spans`` = (starts, degrees int64 [D], offsets int64 [D + 1]), all on
    one device. Item ``j`` draws with the key ``node_key(stream, j)``: the Triton kernel of ``kernels`` (fanouts up
    to its ``MAX_FANOUT``) or the numba twin (``kernels`` None; device tensors copied to the CPU and back).
    ``max_degree`` bounds the degrees (the edge count)."""
    starts, degrees, offsets = spans
    if kernels is not None and fanout <= kernels.MAX_FANOUT:
        kernels.floyd_picks_triton(picked, starts, degrees, offsets, stream, fanout, positions, max_degree=max_degree)
        return
    host = [t.cpu().contiguous() for t in (picked, starts, degrees, offsets)]
    out = positions.cpu() if positions.device.type != "cpu" else positions
    cpu_kernels.floyd_picks(*(t.numpy() for t in host), np.uint64(stream), fanout, out.numpy())
    if out is not positions:
        positions.copy_(out)


class DeviceNeighborSampler:
    """Uniform neighbour sampler on ``topology.device``, batch for batch identical to :class:`NeighborSampler`.

    Args:
        topology: the graph (:class:`Topology`, e.g. :class:`DenseTopology` or the store's tiered one).
        fanouts: PyG order, ``fanouts[0]`` = neighbours drawn per seed; -1 = all neighbours.
        seed: base of the counter-based random stream (the CPU sampler's).
        picks: "triton" (the Triton kernel: compiled on CUDA, or the module given as ``kernels``),
            "numba" (the numba twin on the CPU; device tensors are copied there and back), "auto" =
            "triton" on CUDA, else "numba".
        kernels: a module with ``floyd_picks_triton`` and ``MAX_FANOUT`` to use instead of the compiled
            :mod:`graphtier.sampling._device_kernels` (tests pass the module loaded with TRITON_INTERPRET=1).
        with_edge_ids: every block records ``edge_id`` (int64 [E] on the device, each edge's CSC position), as
            :class:`NeighborSampler` does with it.

    Hops with a fanout above the kernel's ``MAX_FANOUT`` draw their picks with the numba twin.
    """

    def __init__(
        self,
        topology: Topology,
        fanouts: Sequence[int],
        *,
        seed: int = 0,
        picks: str = "auto",
        kernels: ModuleType | None = None,
        with_edge_ids: bool = False,
    ) -> None:
        check_topology(topology)
        self.with_edge_ids = bool(with_edge_ids)
        self.topology = topology
        self.device = torch.device(topology.device)
        self.fanouts = check_fanouts(fanouts)
        self.seed = check_seed(seed)
        self.picks, self._kernels = resolve_picks(picks, kernels, self.device)
        self._batch_counter = itertools.count()

    def sample(self, seeds: np.ndarray | torch.Tensor, batch_id: int | None = None) -> MiniBatch:
        """Sample a mini-batch for ``seeds`` (int [B] global ids: numpy, CPU or device tensor).

        ``batch_id`` selects the random stream; None takes the next value of an internal counter.
        Returns a :class:`MiniBatch` of int64 tensors on ``topology.device`` with ``len(fanouts)`` blocks.
        """
        seed_tensor = seeds_on_device(seeds, self.topology.num_nodes, self.device)
        batch_id = next_batch_id(batch_id, self._batch_counter)
        # Triton launches on the current CUDA device: make it the topology's (the caller may be any thread)
        with torch.cuda.device(self.device) if self.device.type == "cuda" else contextlib.nullcontext():
            n_id, seed_index = first_seen_relabel(seed_tensor[:0], seed_tensor)
            layer_sizes = [int(n_id.shape[0])]
            edge_indices, edge_ids = [], []
            for hop, fanout in enumerate(self.fanouts):
                stream = cpu_kernels.stream_key(self.seed, int(batch_id), hop)
                sources, destinations, positions = self._hop(n_id, fanout, stream)
                n_id, local_sources = first_seen_relabel(n_id, sources)
                layer_sizes.append(int(n_id.shape[0]))
                edge_indices.append(torch.stack((local_sources, destinations)))
                edge_ids.append(positions if self.with_edge_ids else None)
        blocks = [
            Block(edge_indices[h], layer_sizes[h + 1], layer_sizes[h], edge_ids[h])
            for h in reversed(range(len(self.fanouts)))
        ]
        return MiniBatch(n_id=n_id, blocks=blocks, seed_index=seed_index, seeds=seed_tensor)

    def _hop(
        self, dst_nodes: torch.Tensor, fanout: int, stream: int
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(sources, destinations, positions), int64 [E] each on the device: global source ids, destination
        indices, and each edge's CSC position (its ``edge_id``)."""
        indptr = self.topology.indptr
        starts = indptr[dst_nodes]
        degrees = indptr[dst_nodes + 1] - starts
        counts = degrees if fanout < 0 else torch.clamp(degrees, max=fanout)
        offsets = torch.zeros(dst_nodes.shape[0] + 1, dtype=torch.int64, device=self.device)
        torch.cumsum(counts, 0, out=offsets[1:])
        num_edges = int(offsets[-1])
        destinations = torch.repeat_interleave(
            torch.arange(dst_nodes.shape[0], device=self.device), counts, output_size=num_edges
        )
        # every edge's position as if its destination took its whole list; the picks overwrite the rest
        positions = torch.arange(num_edges, device=self.device) + (starts - offsets[:-1])[destinations]
        if fanout > 0:
            picked = torch.nonzero(counts < degrees).flatten()
            if picked.numel():
                self._pick(picked, starts, degrees, offsets, stream, fanout, positions)
        return self.topology.gather_positions(positions), destinations, positions

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
