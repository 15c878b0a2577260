"""Uniform neighbour sampling (GraphSAGE style) into layer-wise bipartite blocks.

Hop ``h`` (``fanouts[h]``, PyG order: ``fanouts[0]`` = neighbours of the seeds) samples up to
``fanouts[h]`` in-neighbours without replacement of every node found so far, in parallel over those
destination nodes (chunks claimed by a :class:`ThreadTeam`); new nodes are then appended to ``n_id``
in first-seen order through an N-sized ``local id`` scratch array that is reset after the batch by
touching only the batch's nodes. Steady state allocates no per-hop arrays: work arrays live in a
per-call :class:`Workspace`, and the returned tensors are carved from an :class:`OutputRing` buffer.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator, Sequence

import numba
import numpy as np
import torch

from graphtier._threads import DEFAULT_MIN_CHUNK, ThreadTeam
from graphtier.errors import OptionError
from graphtier.sampling import _neighbor_kernels as kernels
from graphtier.sampling.batch import Block, MiniBatch
from graphtier.sampling.buffers import Carver, OutputRing, Workspace, WorkspacePool
from graphtier.sampling.fanouts import (  # noqa: F401 - re-exported: bounds, default and parser live in fanouts.py
    DEFAULT_FANOUTS,
    MAX_FANOUT,
    check_fanouts,
    format_fanouts,
)
from graphtier.sampling.seeds import as_seed_array


def check_num_threads(num_threads: int | None) -> int:
    """Threads to use: ``num_threads``, or numba's current count when None; OptionError if out of range."""
    limit = numba.config.NUMBA_NUM_THREADS
    if num_threads is None:
        return numba.get_num_threads()
    if isinstance(num_threads, bool) or not isinstance(num_threads, (int, np.integer)):
        raise OptionError(f"num_threads: expected an integer in [1, {limit}], found {num_threads!r}")
    if not 1 <= num_threads <= limit:
        raise OptionError(f"num_threads: expected an integer in [1, {limit}], found {num_threads}")
    return int(num_threads)


def run_split(team: ThreadTeam | None, work: Callable[[int, int], None], count: int) -> None:
    """``work(first, stop)`` over ``[0, count)``: one call without a ``team``, else split between its threads."""
    if team is None:
        work(0, count)
    else:
        team.run(work, count)


def check_seed(seed: int) -> int:
    """A sampler's ``seed`` as an int; OptionError unless an integer (a bool is not)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise OptionError(f"seed: expected an integer, found {seed!r}")
    return int(seed)


def next_batch_id(batch_id: int | None, counter: Iterator[int]) -> int:
    """``batch_id`` as an int, or the next value of the sampler's ``counter`` when None; OptionError unless a
    non-negative integer or None."""
    if batch_id is None:
        return next(counter)
    if isinstance(batch_id, bool) or not isinstance(batch_id, (int, np.integer)) or batch_id < 0:
        raise OptionError(f"batch_id: expected a non-negative integer or None, found {batch_id!r}")
    return int(batch_id)


def check_graph(indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """CSC arrays as plain ndarrays (memory maps stay mapped): indptr int64 [N + 1], indices int32/int64 [E]."""
    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    if indptr.ndim != 1 or indptr.dtype != np.int64 or indptr.shape[0] < 1:
        raise OptionError(f"indptr: expected a non-empty 1-d int64 array, found {indptr.dtype} {indptr.shape}")
    if indices.ndim != 1 or indices.dtype not in (np.int32, np.int64):
        raise OptionError(f"indices: expected a 1-d int32 or int64 array, found {indices.dtype} {indices.shape}")
    if int(indptr[-1]) != indices.shape[0] or int(indptr[0]) != 0:
        raise OptionError(
            f"indptr: expected indptr[0] == 0 and indptr[-1] == len(indices) == {indices.shape[0]}, "
            f"found {int(indptr[0])} and {int(indptr[-1])}"
        )
    return np.ascontiguousarray(indptr), np.ascontiguousarray(indices)


# Parallel loops over fewer items than this run on one thread: waking a second thread costs more
# than it saves, and far more when the machine is busy (an OpenMP region waits for every thread).
PARALLEL_MIN_ITEMS = DEFAULT_MIN_CHUNK
# The parallel relabel does about three times the memory work of the sequential one (ownership
# scan, lookup, publish), so it only pays with several threads: at 2 threads it measured ~3x
# slower than the sequential relabel.
PARALLEL_RELABEL_MIN_THREADS = 4


def threads_for(items: int, num_threads: int) -> int:
    """Threads to use for a parallel loop over ``items`` items: 1 for small loops, else ``num_threads``."""
    return 1 if items < PARALLEL_MIN_ITEMS else num_threads


@contextlib.contextmanager
def numba_threads(count: int) -> Iterator[None]:
    """Run numba parallel loops of the calling thread on ``count`` threads (numba's setting is per thread)."""
    previous = numba.get_num_threads()
    if count == previous:
        yield
        return
    numba.set_num_threads(count)
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def hop_spans(
    team: ThreadTeam | None,
    indptr: np.ndarray,
    dst_nodes: np.ndarray,
    fanout: int,
    workspace: Workspace | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(offsets int64 [D + 1], starts int64 [D], degrees int64 [D])`` of one hop (see kernels.list_spans).

    With a ``workspace`` the arrays are its reused work arrays (valid until its next use), else fresh.
    """
    d = dst_nodes.shape[0]
    if workspace is None:
        starts, degrees, counts = (np.empty(d, dtype=np.int64) for _ in range(3))
        offsets = np.empty(d + 1, dtype=np.int64)
    else:
        starts, degrees = workspace.array("starts", d), workspace.array("degrees", d)
        counts, offsets = workspace.array("counts", d), workspace.array("offsets", d + 1)

    def work(first: int, stop: int) -> None:
        kernels.list_spans(indptr, dst_nodes, fanout, starts, degrees, counts, first, stop)

    run_split(team, work, d)
    offsets[0] = 0
    np.cumsum(counts, out=offsets[1:])
    return offsets, starts, degrees


NO_EDGE_IDS = np.empty(0, dtype=np.int64)
"""The ``edge_ids`` argument of ``kernels.sample_sources`` when a sampler does not record edge ids."""


def hop_sources(
    team: ThreadTeam | None,
    indices: np.ndarray,
    spans: tuple[np.ndarray, np.ndarray, np.ndarray],
    fanout: int,
    stream: np.uint64,
    sources: np.ndarray,
    destinations: np.ndarray,
    edge_ids: np.ndarray = NO_EDGE_IDS,
) -> None:
    """Fill ``sources``/``destinations`` (int64 [E]) for one hop (see kernels.sample_sources), and ``edge_ids``
    (int64 [E], each edge's CSC position) unless it is empty."""
    offsets, starts, degrees = spans

    def work(first: int, stop: int) -> None:
        kernels.sample_sources(
            indices, starts, degrees, fanout, stream, offsets, sources, destinations, first, stop, edge_ids
        )

    if team is None:
        work(0, starts.shape[0])
    else:
        # chunks of about 16k draws: enough work per claim, fine enough to balance hubs
        team.run(work, starts.shape[0], max(256, 16384 // max(1, fanout if fanout > 0 else 16)))


def hop_sources_relabelled(
    team: ThreadTeam,
    indices: np.ndarray,
    spans: tuple[np.ndarray, np.ndarray, np.ndarray],
    fanout: int,
    stream: np.uint64,
    edge_index: np.ndarray,
    local_id: np.ndarray,
    n_id: np.ndarray,
    count: int,
    edge_ids: np.ndarray = NO_EDGE_IDS,
) -> int:
    """Sample one hop into ``edge_index`` (int64 [2, E]) and relabel row 0 while the hop is still being sampled.

    Destinations are cut into chunks that the helpers and the caller claim in order; the caller
    relabels (sequentially, in edge order: the result of :func:`hop_sources` + ``kernels.relabel``)
    each chunk as soon as it and all before it are sampled, and samples a chunk itself whenever the
    next one is not ready. Two threads thus overlap the relabel with the draws instead of running
    it after them. Appends new nodes to ``n_id`` (capacity >= count + E); returns the new count. ``edge_ids``: as
    in :func:`hop_sources`.
    """
    offsets, starts, degrees = spans
    num_dst = starts.shape[0]
    sources, destinations = edge_index[0], edge_index[1]
    # chunks of about 4k draws: small enough for the relabel to start early, large enough per claim
    chunk = max(128, 4096 // max(1, fanout if fanout > 0 else 16))
    num_chunks = -(-num_dst // chunk)
    done = [threading.Event() for _ in range(num_chunks)]
    claims = itertools.count()
    errors: list[BaseException] = []

    def sample_chunk(c: int) -> None:
        try:
            first = c * chunk
            kernels.sample_sources(
                indices,
                starts,
                degrees,
                fanout,
                stream,
                offsets,
                sources,
                destinations,
                first,
                min(num_dst, first + chunk),
                edge_ids,
            )
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            errors.append(exc)
        finally:
            done[c].set()

    def helper() -> None:
        while (c := next(claims)) < num_chunks:
            sample_chunk(c)

    team.submit(helper)
    for c in range(num_chunks):
        while not done[c].is_set():
            claimed = next(claims)
            if claimed < num_chunks:
                sample_chunk(claimed)
            else:
                done[c].wait()
        if errors:
            raise errors[0]
        low, high = int(offsets[c * chunk]), int(offsets[min(num_dst, (c + 1) * chunk)])
        count = int(kernels.relabel(sources[low:high], local_id, n_id, count))
    return count


class NeighborSampler:
    """Uniform neighbour sampler (GraphSAGE): seeds -> ``len(fanouts)`` hops of bipartite blocks.

    Args:
        indptr: int64 [N + 1] CSC column pointers (numpy or memory map, CPU).
        indices: int32/int64 [E] in-neighbour ids, sorted per node.
        fanouts: PyG order, ``fanouts[0]`` = neighbours drawn per seed; -1 = all neighbours.
        seed: base of the counter-based random stream.
        num_threads: threads per batch (default: numba's current setting): large hops are split
            between the calling thread and ``num_threads - 1`` helper threads (:class:`ThreadTeam`).
        with_edge_ids: every block records ``edge_id`` (int64 [E], each edge's CSC position: the row of its
            time and features); chosen once, so a sampler without them does no extra work per edge.

    The same ``(seed, batch_id, seeds)`` gives the same batch for any thread count. The kernels
    release the GIL, so a background thread can sample while another trains, and concurrent
    :meth:`sample` calls are safe (each uses its own :class:`Workspace`). Work arrays and the memory of
    the returned tensors are reused across batches (:mod:`graphtier.sampling.buffers`); a batch the
    caller still references is never overwritten.
    """

    def __init__(
        self,
        indptr: np.ndarray,
        indices: np.ndarray,
        fanouts: Sequence[int],
        *,
        seed: int = 0,
        num_threads: int | None = None,
        with_edge_ids: bool = False,
    ) -> None:
        self.indptr, self.indices = check_graph(indptr, indices)
        self.with_edge_ids = bool(with_edge_ids)
        self.num_nodes = self.indptr.shape[0] - 1
        self.fanouts = check_fanouts(fanouts)
        self.seed = check_seed(seed)
        self.num_threads = check_num_threads(num_threads)
        self._workspaces = WorkspacePool(self.num_nodes)
        self._outputs = OutputRing()
        self._team = ThreadTeam(self.num_threads - 1, name="graphtier-sampler") if self.num_threads > 1 else None
        self._batch_counter = itertools.count()
        # hops use the parallel relabel from this many threads on (tests lower it to cover that path)
        self.parallel_relabel_min_threads = PARALLEL_RELABEL_MIN_THREADS

    def sample(self, seeds: np.ndarray | torch.Tensor, batch_id: int | None = None) -> MiniBatch:
        """Sample a mini-batch for ``seeds`` (int [B] global ids, numpy or CPU tensor).

        ``batch_id`` selects the random stream; None takes the next value of an internal counter.
        Returns a :class:`MiniBatch` of CPU int64 tensors with ``len(fanouts)`` blocks.
        """
        seed_array = as_seed_array(seeds, self.num_nodes)
        batch_id = next_batch_id(batch_id, self._batch_counter)
        workspace = self._workspaces.take()
        carver = Carver(self._outputs.take())
        # a failed batch may leave ids in the scratch: its workspace is dropped, not given back
        n_id, edge_indices, edge_ids, layer_sizes, seed_index = self._sample(
            seed_array, int(batch_id), workspace, carver
        )
        self._workspaces.give_back(workspace)
        self._outputs.need(carver.used)
        # layer_sizes[h] = nodes known before hop h; the block of hop h maps sizes[h+1] -> sizes[h]
        blocks = [
            Block(edge_indices[h], int(layer_sizes[h + 1]), int(layer_sizes[h]), edge_ids[h] if edge_ids else None)
            for h in reversed(range(len(self.fanouts)))
        ]
        return MiniBatch(
            n_id=n_id,
            blocks=blocks,
            seed_index=seed_index,
            seeds=torch.from_numpy(seed_array.copy()),
        )

    def _sample(
        self, seeds: np.ndarray, batch_id: int, workspace: Workspace, carver: Carver
    ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor], list[int], torch.Tensor]:
        """The batch's tensors, carved from the output buffer: n_id [n], edge_index [2, E_h] per hop, edge_id [E_h]
        per hop (none without ``with_edge_ids``), rows known before each hop, seed_index [B]."""
        local_id = workspace.local_id
        seed_index = carver.take(seeds.shape[0])
        n_id = workspace.array("n_id", seeds.shape[0])  # the growing node list (global ids); copied out at the end
        count = 0
        try:
            count = int(kernels.unique_seeds(seeds, local_id, n_id, seed_index.numpy()))
            layer_sizes = [count]
            edge_indices, edge_ids = [], []
            for hop, fanout in enumerate(self.fanouts):
                dst_nodes = n_id[:count]
                team = self._team if count >= PARALLEL_MIN_ITEMS else None
                spans = hop_spans(team, self.indptr, dst_nodes, fanout, workspace)
                num_edges = int(spans[0][-1])
                edge_tensor = carver.take(2 * num_edges).view(2, num_edges)
                edge_index = edge_tensor.numpy()
                ids = NO_EDGE_IDS
                if self.with_edge_ids:
                    edge_ids.append(carver.take(num_edges))
                    ids = edge_ids[-1].numpy()
                relabel_threads = threads_for(num_edges, self.num_threads)
                if relabel_threads < self.parallel_relabel_min_threads:
                    relabel_threads = 1
                if local_id.dtype == np.int32 and num_edges >= 2**31 - 2:
                    relabel_threads = 1  # relabel_parallel's markers would not fit the int32 scratch
                # the parallel relabel reads the global ids from a separate array
                sources = workspace.array("sources", num_edges) if relabel_threads > 1 else edge_index[0]
                stream = np.uint64(kernels.stream_key(self.seed, batch_id, hop))
                n_id = workspace.array("n_id", count + num_edges, keep=count)
                if team is not None and relabel_threads == 1:
                    count = hop_sources_relabelled(
                        team, self.indices, spans, fanout, stream, edge_index, local_id, n_id, count, ids
                    )
                    layer_sizes.append(count)
                    edge_indices.append(edge_tensor)
                    continue
                hop_sources(team, self.indices, spans, fanout, stream, sources, edge_index[1], ids)
                if relabel_threads > 1:
                    with numba_threads(relabel_threads):
                        count = int(
                            kernels.relabel_parallel(sources, local_id, n_id, count, relabel_threads, edge_index[0])
                        )
                else:
                    count = int(kernels.relabel(edge_index[0], local_id, n_id, count))
                layer_sizes.append(count)
                edge_indices.append(edge_tensor)
        finally:
            kernels.reset_local_ids(local_id, n_id, 0, count)
        n_id_out = carver.take(count)
        n_id_out.numpy()[:] = n_id[:count]
        return n_id_out, edge_indices, edge_ids, layer_sizes, seed_index
