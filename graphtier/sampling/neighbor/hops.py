"""The parts every CPU sampler's hops are made of: the argument checks, thread splits, spans and draws.

A hop of :class:`~graphtier.sampling.neighbor.sampler.NeighborSampler` (any schema), of the temporal and ShaDow samplers,
and the checks of the device samplers are built from these: a sampler's ``indptr``/``indices``, ``seed``,
``num_threads``, ``batch_id``, edge times, seed times and temporal ``strategy`` are checked here, one hop's list spans (:func:`hop_spans`) and draws
(:func:`hop_sources`, or :func:`hop_sources_relabelled` with the relabel overlapped) run here, split between the
threads of a :class:`ThreadTeam`.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import numba
import numpy as np
import torch

from graphtier._choices import TEMPORAL_STRATEGIES
from graphtier._threads import DEFAULT_MIN_CHUNK, ThreadTeam
from graphtier.errors import OptionError
from graphtier.sampling.buffers import Workspace
from graphtier.sampling.fanouts import check_fanouts
from graphtier.sampling.neighbor import _neighbor_kernels as kernels

Hops = TypeVar("Hops")


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


def check_edge_times(edge_time: np.ndarray, order: np.ndarray, num_edges: int) -> tuple[np.ndarray, np.ndarray]:
    """``edge_time`` and ``edge_time_order`` as int64 arrays [E]; OptionError naming the argument otherwise."""
    arrays = []
    for name, array in (("edge_time", edge_time), ("edge_time_order", order)):
        array = np.asarray(array)
        if array.ndim != 1 or array.dtype != np.int64 or array.shape[0] != num_edges:
            raise OptionError(
                f"{name}: expected an int64 array of {num_edges} entries (one per edge), "
                f"found {array.dtype} {tuple(array.shape)}"
            )
        arrays.append(np.ascontiguousarray(array))
    return arrays[0], arrays[1]


def seed_times(times: np.ndarray | torch.Tensor | int, count: int) -> np.ndarray:
    """Seed times as int64 [count] (a scalar is every seed's time); OptionError unless integers of that length."""
    array = times.detach().cpu().numpy() if isinstance(times, torch.Tensor) else np.asarray(times)
    if array.ndim == 0:
        array = np.full(count, array)
    if array.dtype.kind not in "iu":
        raise OptionError(f"seed_time: expected integer times, found dtype {array.dtype}")
    if array.shape != (count,):
        raise OptionError(f"seed_time: expected one time per seed ({count}), found shape {tuple(array.shape)}")
    return np.ascontiguousarray(array, dtype=np.int64)


def is_recent(strategy: str) -> bool:
    """Whether ``strategy`` (one of :data:`TEMPORAL_STRATEGIES`) takes the most recent edges rather than a uniform
    draw; OptionError (one line) naming ``strategy`` otherwise."""
    if strategy not in TEMPORAL_STRATEGIES:
        raise OptionError(f"strategy: expected one of {', '.join(TEMPORAL_STRATEGIES)}, found {strategy!r}")
    return strategy == "recent"


def homogeneous_fanouts(fanouts: Sequence[int] | Mapping[Any, Sequence[int]]) -> list[int]:
    """The fanouts of a sampler built without a schema (:func:`check_fanouts`); OptionError naming ``fanouts`` for a
    per-relation mapping, which needs a schema."""
    if isinstance(fanouts, Mapping):
        raise OptionError.invalid("fanouts", "a list of ints (per-relation fanouts need a schema)", fanouts)
    return check_fanouts(fanouts)


def typed_hops(typed: Hops | None) -> Hops:
    """A sampler's typed hops, for :meth:`sample_global`; OptionError (one line) when it was built without a
    schema."""
    if typed is None:
        raise OptionError("sample_global: this sampler has no schema; sample() takes global ids")
    return typed


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
