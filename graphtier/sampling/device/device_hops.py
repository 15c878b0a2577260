"""The parts every device sampler is made of: the :class:`Topology` it reads, seeds on its device, the relabel in
first-seen order, and the random picks (Triton on CUDA, the numba twin elsewhere).

:class:`~graphtier.sampling.device.sampler.DeviceNeighborSampler` (any schema) and
:class:`~graphtier.sampling.temporal.temporal_device.DeviceTemporalSampler` are built from these.
"""

from __future__ import annotations

from types import ModuleType
from typing import Protocol, runtime_checkable

import numpy as np
import torch

from graphtier.errors import OptionError
from graphtier.sampling.neighbor import _neighbor_kernels as cpu_kernels
from graphtier.sampling.neighbor.hops import check_graph
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


def _sorted_runs(nodes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(permutation, run_of_sorted, first)`` of ``nodes`` (int64 [M]): the stable sort's permutation, the run of
    equal ids each sorted element lies in, and each run's first position in ``nodes`` (runs in node-id order; a
    stable sort keeps a node's first occurrence first in its run)."""
    ordered, permutation = torch.sort(nodes, stable=True)
    run_start = torch.ones_like(ordered, dtype=torch.bool)
    torch.ne(ordered[1:], ordered[:-1], out=run_start[1:])
    return permutation, torch.cumsum(run_start, 0) - 1, permutation[run_start]


def first_seen_relabel(known: torch.Tensor, sources: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Number nodes in first-seen order: ``(n_id, local)`` for distinct ``known`` (int64 [K]) then ``sources`` (int64 [E]).

    ``n_id`` (int64 [K + new]) is ``known`` followed by the new nodes of ``sources`` in order of first
    occurrence; ``local`` (int64 [E]) is the index in ``n_id`` of each source. Same device as the inputs.
    This is the sequential relabel of the CPU sampler done with sorts instead of an N-sized scratch: a
    stable sort puts each node's first occurrence first in its run of equal ids.
    """
    nodes = torch.cat((known, sources))
    permutation, run_of_sorted, first = _sorted_runs(nodes)
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
        from graphtier.sampling.device import _device_kernels

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


def first_seen_pairs(
    known: tuple[torch.Tensor, torch.Tensor], pairs: tuple[torch.Tensor, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Rows of (node, bound) pairs in first-seen order: ``(node, bound, local)``.

    ``known`` (node, bound) int64 [K] each are distinct rows; ``pairs`` (node, bound) int64 [S] each. Returns
    the rows' nodes and bounds (int64 [K + new]: ``known``, then the new pairs in order of first occurrence) and
    ``local`` (int64 [S], each pair's row), on the inputs' device: the pairs get one id each by a lexicographic
    sort (``torch.unique`` over rows) and :func:`first_seen_relabel` numbers them."""
    count = int(known[0].shape[0])
    stacked = torch.stack((torch.cat((known[0], pairs[0])), torch.cat((known[1], pairs[1]))), 1)
    distinct, ids = torch.unique(stacked, dim=0, return_inverse=True)
    order, local = first_seen_relabel(ids[:count], ids[count:])
    rows = distinct[order]
    return rows[:, 0].contiguous(), rows[:, 1].contiguous(), local


def first_seen_inputs(
    known: tuple[torch.Tensor, torch.Tensor], pairs: tuple[torch.Tensor, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The last hop's sources numbered by node (:mod:`graphtier.sampling.temporal._input_rows_kernels`): ``(node, bound,
    local)`` as :func:`first_seen_pairs` returns them. A source whose node has a known row takes the first such row;
    a new node takes one new row, in first-seen order, with the bound of its first source. ``known`` (node, bound)
    int64 [K] each (a node may have several rows), ``pairs`` (node, bound) int64 [S] each, on one device."""
    count = int(known[0].shape[0])
    nodes = torch.cat((known[0], pairs[0]))
    permutation, run_of_sorted, first = _sorted_runs(nodes)
    first_of = torch.empty_like(nodes)  # each element's node's first position
    first_of[permutation] = first[run_of_sorted]
    new_first, _ = torch.sort(first[first >= count])  # the new nodes' first sources, in first-seen order
    local = first_of[count:]
    local = torch.where(local < count, local, count + torch.searchsorted(new_first, local))
    new_bound = pairs[1][new_first - count]
    return torch.cat((known[0], nodes[new_first])), torch.cat((known[1], new_bound)), local


def edge_layout(counts: torch.Tensor) -> tuple[torch.Tensor, int, torch.Tensor]:
    """``(offsets, E, rows)`` of a hop whose row ``i`` takes ``counts[i]`` edges (int64 [R] on a device):
    ``offsets`` int64 [R + 1] their exclusive prefix sum, E the edge count, ``rows`` int64 [E] each edge's row, all on
    ``counts``' device (one host sync, for E)."""
    offsets = torch.zeros(counts.shape[0] + 1, dtype=torch.int64, device=counts.device)
    torch.cumsum(counts, 0, out=offsets[1:])
    num_edges = int(offsets[-1])
    rows = torch.repeat_interleave(torch.arange(counts.shape[0], device=counts.device), counts, output_size=num_edges)
    return offsets, num_edges, rows
