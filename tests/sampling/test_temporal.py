"""TemporalNeighborSampler: no sampled edge is at or after its row's time on any hop, rows inherit their seed's
time, every sampled edge is a real edge read by its id, and the untimed case equals the plain sampler."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.errors import OptionError
from graphtier.sampling import NeighborSampler, TemporalNeighborSampler
from graphtier.sampling.neighbor._neighbor_kernels import stream_key
from graphtier.sampling.temporal._input_rows_kernels import relabel_inputs_py
from graphtier.sampling.temporal._temporal_kernels import relabel_pairs_py, temporal_hop_py

from .test_temporal_kernels import timed_csc


def check_batch(mb, indptr, indices, time, seeds, seed_time, inclusive: bool) -> None:  # noqa: ANN001
    n_id, n_time = mb.n_id.numpy(), mb.n_time.numpy()
    assert np.array_equal(n_id[mb.seed_index.numpy()], seeds)
    assert np.array_equal(n_time[mb.seed_index.numpy()], seed_time)
    assert len(set(zip(n_id.tolist(), n_time.tolist()))) == n_id.shape[0]  # a row is a distinct (node, time)
    for outer, inner in zip(mb.blocks, mb.blocks[1:]):
        assert outer.num_dst == inner.num_src
    assert mb.blocks[-1].num_dst == len(set(zip(seeds.tolist(), seed_time.tolist())))
    for h, block in enumerate(mb.blocks):
        s, d = block.edge_index.numpy()
        e = block.edge_id.numpy()
        assert np.all(s < block.num_src) and np.all(d < block.num_dst)
        assert np.all(indices[e] == n_id[s])  # the edge's source is the row's node
        assert np.all((e >= indptr[n_id[d]]) & (e < indptr[n_id[d] + 1]))  # ... and it points into the dst row
        assert np.all(time[e] <= n_time[d]) if inclusive else np.all(time[e] < n_time[d])  # never the future
        if h > 0:  # a neighbour that is sampled from inherits its destination's bound
            assert np.all(n_time[s] == n_time[d])
            continue
        check_input_rows(n_id, n_time, block.num_dst, s, n_time[d])


def check_input_rows(n_id: np.ndarray, n_time: np.ndarray, num_dst: int, s: np.ndarray, bound: np.ndarray) -> None:
    """The last hop's sources (rows ``s`` of the input block's edges, in edge order, reached at their destinations'
    ``bound``) are one row per node: a node with a row before the hop (the first ``num_dst`` rows) takes its first
    one; a new node one row, at the bound of the first edge that reached it."""
    first: dict[int, int] = {}
    for row, node in enumerate(n_id[:num_dst].tolist()):
        first.setdefault(node, row)
    assert len(set(n_id[num_dst:].tolist())) == n_id.shape[0] - num_dst
    assert not set(n_id[num_dst:].tolist()) & set(first)
    seen = set()
    for src, b in zip(s.tolist(), bound.tolist()):
        node = int(n_id[src])
        if node in first:
            assert src == first[node]
        elif src not in seen:
            seen.add(src)
            assert n_time[src] == b


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 30),
    e=st.integers(0, 250),
    fanouts=st.lists(st.sampled_from([-1, 1, 2, 4]), min_size=1, max_size=3),
    strategy=st.sampled_from(["uniform", "recent"]),
    inclusive=st.booleans(),
)
def test_no_hop_of_a_batch_reads_the_future(
    seed: int, n: int, e: int, fanouts: list[int], strategy: str, inclusive: bool
) -> None:
    rng = np.random.default_rng(seed)
    indptr, indices, time, order = timed_csc(rng, n, e, horizon=40)
    sampler = TemporalNeighborSampler(indptr, indices, time, order, fanouts, strategy=strategy, inclusive=inclusive)
    seeds = rng.integers(0, n, 6).astype(np.int64)
    seed_time = rng.integers(0, 45, 6).astype(np.int64)
    mb = sampler.sample(seeds, seed_time, batch_id=3)
    check_batch(mb, indptr, indices, time, seeds, seed_time, inclusive)
    again = sampler.sample(seeds, seed_time, batch_id=3)
    assert np.array_equal(again.n_id.numpy(), mb.n_id.numpy())
    for a, b in zip(again.blocks, mb.blocks):
        assert np.array_equal(a.edge_id.numpy(), b.edge_id.numpy())


def reference_batch(indptr, indices, time, order, fanouts, seeds, seed_time, recent, inclusive, seed, batch_id):  # noqa: ANN001, ANN201
    """The batch by the plain-Python reference, hop by hop: (rows [(node, time)], seed rows, per hop (src row,
    dst row, edge id)); hop h serves every row known before it, as the sampler does; the last hop's sources are
    numbered by node."""
    seed_rows, known = relabel_pairs_py(seeds, seed_time, [])
    hops = []
    for hop, fanout in enumerate(fanouts):
        dst = np.array([p[0] for p in known], np.int64)
        bound = np.array([p[1] for p in known], np.int64)
        stream = stream_key(seed, batch_id, hop)
        src, src_bound, edge_id, dst_index = temporal_hop_py(
            indptr, indices, time, order, dst, bound, fanout, recent, inclusive, stream
        )
        relabel = relabel_inputs_py if hop == len(fanouts) - 1 else relabel_pairs_py  # the input rows: by node
        src_rows, known = relabel(src, src_bound, known)
        hops.append((src_rows, dst_index, edge_id))
    return known, seed_rows, hops


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    n=st.integers(1, 30),
    e=st.integers(0, 250),
    fanouts=st.lists(st.sampled_from([-1, 1, 2, 4]), min_size=1, max_size=3),
    strategy=st.sampled_from(["uniform", "recent"]),
    inclusive=st.booleans(),
    times=st.sampled_from(["each", "one", "past", "last"]),
    links=st.booleans(),
)
def test_every_path_equals_the_reference_batch(
    seed: int, n: int, e: int, fanouts: list[int], strategy: str, inclusive: bool, times: str, links: bool
) -> None:
    """Seeds of several times (the (node, time) hash), of one time (the node-indexed relabel), all after every
    edge (no search) and all at the last edge's time (the search, which must cut it unless ``inclusive``); node
    seeds, or link seeds (both endpoints of edges, at the edges' times or at one time): the sampler's batch is
    the reference's, row for row and edge for edge, and no hop reads the future."""
    rng = np.random.default_rng(seed)
    indptr, indices, time, order = timed_csc(rng, n, e, horizon=40)
    if links and e:
        pick = rng.integers(0, e, 4)
        dst = np.repeat(np.arange(n), np.diff(indptr))
        seeds = np.concatenate([indices[pick], dst[pick]]).astype(np.int64)
        seed_time = np.concatenate([time[pick], time[pick]])
    else:
        seeds = rng.integers(0, n, 6).astype(np.int64)
        seed_time = rng.integers(0, 45, 6).astype(np.int64)
    last = int(time.max()) if e else 0
    if times != "each":
        seed_time = np.full(seeds.shape[0], {"one": seed_time[0], "past": last + 1, "last": last}[times], np.int64)
    sampler = TemporalNeighborSampler(indptr, indices, time, order, fanouts, strategy=strategy, inclusive=inclusive)
    mb = sampler.sample(seeds, seed_time, batch_id=5)
    check_batch(mb, indptr, indices, time, seeds, seed_time, inclusive)
    rows, seed_rows, hops = reference_batch(
        indptr, indices, time, order, fanouts, seeds, seed_time, strategy == "recent", inclusive, 0, 5
    )
    assert list(zip(mb.n_id.tolist(), mb.n_time.tolist())) == rows
    assert mb.seed_index.tolist() == seed_rows.tolist()
    for block, (src_rows, dst_index, edge_id) in zip(reversed(mb.blocks), hops):
        assert block.edge_index[0].tolist() == src_rows.tolist()
        assert block.edge_index[1].tolist() == dst_index.tolist()
        assert block.edge_id.tolist() == edge_id.tolist()
    again = sampler.sample(seeds, seed_time, batch_id=5)  # the reused workspace, table and outputs: the same batch
    assert again.n_id.tolist() == mb.n_id.tolist() and again.n_time.tolist() == mb.n_time.tolist()
    for a, b in zip(again.blocks, mb.blocks):
        assert a.edge_id.tolist() == b.edge_id.tolist() and a.edge_index.tolist() == b.edge_index.tolist()


def test_link_seeds_at_their_edge_time_never_see_their_own_edge() -> None:
    """Seeds at the times of their own edges (both endpoints, as a link task samples them)."""
    rng = np.random.default_rng(5)
    indptr, indices, time, order = timed_csc(rng, 50, 2000, horizon=300)
    dst = np.repeat(np.arange(50), np.diff(indptr))
    pick = rng.choice(indices.shape[0], 64, replace=False)
    seeds = np.concatenate([indices[pick], dst[pick]]).astype(np.int64)
    seed_time = np.concatenate([time[pick], time[pick]])
    mb = TemporalNeighborSampler(indptr, indices, time, order, [5, 5]).sample(seeds, seed_time)
    check_batch(mb, indptr, indices, time, seeds, seed_time, inclusive=False)
    for p in pick:  # a target edge at time t is read by no row whose bound is t
        rows = mb.n_time.numpy()
        for block in mb.blocks:
            s, d = block.edge_index.numpy()
            hits = block.edge_id.numpy() == p
            assert np.all(rows[d[hits]] > time[p])


def test_stamps_that_run_out_clear_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table reused past its last stamp is cleared and starts again: the batches are those of a new sampler."""
    import graphtier.sampling.temporal.sampler as temporal

    rng = np.random.default_rng(8)
    indptr, indices, time, order = timed_csc(rng, 60, 1500, horizon=200)
    batches = [(rng.integers(0, 60, 12), rng.integers(0, 220, 12)) for _ in range(7)]
    monkeypatch.setattr(temporal, "MAX_STAMP", 3)  # stamps 0, 1, 2, then the table is cleared
    reused = TemporalNeighborSampler(indptr, indices, time, order, [4, 3], seed=2)
    for b, (seeds, seed_time) in enumerate(batches):
        got = reused.sample(seeds, seed_time, batch_id=b)
        fresh = TemporalNeighborSampler(indptr, indices, time, order, [4, 3], seed=2).sample(seeds, seed_time, b)
        assert np.array_equal(got.n_id, fresh.n_id) and np.array_equal(got.n_time, fresh.n_time)
        for mine, theirs in zip(got.blocks, fresh.blocks):
            assert np.array_equal(mine.edge_index, theirs.edge_index)


def test_past_only_full_fanout_equals_the_untimed_sampler() -> None:
    """Every edge earlier than every seed time and fanout -1: the same edges as NeighborSampler's full hop."""
    rng = np.random.default_rng(2)
    indptr, indices, time, order = timed_csc(rng, 40, 600, horizon=100)
    seeds = np.arange(0, 40, 3, dtype=np.int64)
    timed = TemporalNeighborSampler(indptr, indices, time, order, [-1]).sample(seeds, 10**6)
    plain = NeighborSampler(indptr, indices, [-1]).sample(seeds)

    def edges(mb) -> list[tuple[int, int]]:  # noqa: ANN001
        s, d = mb.blocks[0].edge_index.numpy()
        n_id = mb.n_id.numpy()
        return sorted(zip(n_id[s].tolist(), n_id[d].tolist()))

    assert edges(timed) == edges(plain)


def test_a_seed_before_every_edge_has_no_neighbours() -> None:
    rng = np.random.default_rng(1)
    indptr, indices, time, order = timed_csc(rng, 10, 100, horizon=50)
    mb = TemporalNeighborSampler(indptr, indices, time + 100, order, [3, 3]).sample(np.arange(10), 100)
    assert all(b.num_edges == 0 for b in mb.blocks) and mb.num_nodes == 10


def test_bad_arguments_name_the_argument() -> None:
    rng = np.random.default_rng(0)
    indptr, indices, time, order = timed_csc(rng, 10, 50, horizon=20)
    with pytest.raises(OptionError, match="edge_time: expected an int64 array of 50"):
        TemporalNeighborSampler(indptr, indices, time[:-1], order, [2])
    with pytest.raises(OptionError, match="edge_time_order: expected an int64"):
        TemporalNeighborSampler(indptr, indices, time, order.astype(np.int32), [2])
    with pytest.raises(OptionError, match="strategy: expected one of uniform, recent"):
        TemporalNeighborSampler(indptr, indices, time, order, [2], strategy="latest")
    sampler = TemporalNeighborSampler(indptr, indices, time, order, [2])
    with pytest.raises(OptionError, match=r"seed_time: expected one time per seed \(3\)"):
        sampler.sample(np.arange(3), np.arange(2))
    with pytest.raises(OptionError, match="seed_time: expected integer times"):
        sampler.sample(np.arange(3), np.array([1.5, 2.0, 3.0]))
