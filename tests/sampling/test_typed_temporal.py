"""TemporalNeighborSampler with a schema: on random typed graphs with edge times, no sampled edge is at or after its row's
bound on any hop or relation, every edge is a real one with its CSC position, a neighbour inherits its destination's
bound, -1 takes every admissible edge, ``recent`` the latest, and a batch repeats for the same arguments."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphtier.dataset.edges._edge_time_kernels import edge_time_order
from graphtier.errors import OptionError
from graphtier.sampling import DenseTopology
from graphtier.sampling.link.sampler import LinkSampler
from graphtier.sampling.temporal.sampler import TemporalNeighborSampler
from graphtier.sampling.temporal.temporal_device import DeviceTemporalSampler
from tests.interpreted import HAS_TRITON, load_interpreted
from tests.sampling.test_edge_ids import assert_real_typed_edges
from tests.sampling.test_temporal import check_input_rows
from tests.sampling.test_typed_device import assert_identical_typed
from tests.sampling.test_typed_neighbor import RELATIONS, random_typed_graph

PICKS = load_interpreted("sampling/device/_device_kernels.py") if HAS_TRITON else None
CUTS = load_interpreted("sampling/temporal/_temporal_device_kernels.py") if HAS_TRITON else None


def timed_typed_graph(papers: int, authors: int, degree: int, seed: int):  # noqa: ANN201
    indptr, indices, schema = random_typed_graph({"paper": papers, "author": authors, "field": 3}, degree, seed)
    edge_time = np.random.default_rng(seed).integers(0, 20, indices.shape[0]).astype(np.int64)
    return indptr, indices, schema, edge_time, edge_time_order(indptr, edge_time)


def check_batch(mb, indptr, indices, schema, edge_time, inclusive: bool, fanouts) -> None:  # noqa: ANN001
    assert_real_typed_edges(mb, indptr, indices, schema)
    n_time = {t: v.numpy() for t, v in mb.n_time.items()}
    inputs: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {t: [] for t in n_time}  # the last hop's sources
    for hop, block in enumerate(reversed(mb.blocks)):  # seed hop first
        for key, rel in block.relations.items():
            relation = next(r for r in schema.relations if r.type == key)
            src, dst = rel.edge_index.numpy()
            bound = n_time[relation.dst][dst]
            times = edge_time[rel.edge_id.numpy()]
            assert np.all(times <= bound) if inclusive else np.all(times < bound)  # never the future
            if hop < len(mb.blocks) - 1:
                np.testing.assert_array_equal(n_time[relation.src][src], bound)  # the neighbour inherits the bound
            else:
                inputs[relation.src].append((src, bound))
            if fanouts[key][hop] == -1:  # every admissible edge of every destination row
                rows = relation.row_offset + mb.n_id[relation.dst].numpy()[: block.num_dst[relation.dst]]
                row_bounds = n_time[relation.dst][: block.num_dst[relation.dst]]
                admissible = [int(np.sum(edge_time[indptr[r] : indptr[r + 1]] <= b if inclusive else
                                         edge_time[indptr[r] : indptr[r + 1]] < b)) for r, b in zip(rows, row_bounds)]  # fmt: skip
                np.testing.assert_array_equal(np.diff(rel.rowptr.numpy()), admissible)

    for t, parts in inputs.items():  # relation-major: the order in which the sampler numbers them
        sources = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
        bounds = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
        check_input_rows(mb.n_id[t].numpy(), n_time[t], mb.blocks[0].num_dst[t], sources, bounds)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    papers=st.integers(1, 30), authors=st.integers(0, 20), degree=st.integers(0, 5), graph_seed=st.integers(0, 2**16),
    hops=st.integers(1, 3), fanout=st.sampled_from([-1, 1, 2, 4]), batch=st.integers(0, 10),
    inclusive=st.booleans(), recent=st.booleans(), one_time=st.booleans(), seed=st.integers(0, 2**31),
)  # fmt: skip
def test_no_typed_hop_reads_the_future(
    papers, authors, degree, graph_seed, hops, fanout, batch, inclusive, recent, one_time, seed
) -> None:  # noqa: ANN001
    indptr, indices, schema, edge_time, order = timed_typed_graph(papers, authors, degree, graph_seed)
    fanouts = {rel: [fanout] * hops for rel in RELATIONS}
    rng = np.random.default_rng(graph_seed + 1)
    seeds = rng.integers(0, papers, batch)
    times = np.full(batch, 10, np.int64) if one_time else rng.integers(0, 22, batch)
    sampler = TemporalNeighborSampler(indptr, indices, edge_time, order, fanouts, schema=schema,
                                           strategy="recent" if recent else "uniform", inclusive=inclusive, seed=seed)  # fmt: skip
    mb = sampler.sample(seeds, times, batch_id=3)
    assert len(mb.blocks) == hops
    target = mb.n_id["paper"].numpy()
    np.testing.assert_array_equal(target[mb.seed_index.numpy()], seeds)  # each seed's row is that seed
    np.testing.assert_array_equal(mb.n_time["paper"].numpy()[mb.seed_index.numpy()], times)  # at its time
    check_batch(mb, indptr, indices, schema, edge_time, inclusive, fanouts)
    again = sampler.sample(seeds, times, batch_id=3)
    for a, b in zip(mb.blocks, again.blocks):
        for key, rel in a.relations.items():
            assert torch.equal(rel.edge_id, b.relations[key].edge_id) and torch.equal(rel.col, b.relations[key].col)
    if recent and fanout > 0:  # the latest admissible edges of every row
        first = mb.blocks[-1]
        for key, rel in first.relations.items():
            relation = next(r for r in schema.relations if r.type == key)
            rowptr = rel.rowptr.numpy()
            for d in range(rowptr.shape[0] - 1):
                r = relation.row_offset + target[d] if relation.dst == "paper" else None
                if r is None:
                    continue
                bound = mb.n_time["paper"].numpy()[d]
                lst = edge_time[indptr[r] : indptr[r + 1]]
                ok = np.sort(lst[lst <= bound] if inclusive else lst[lst < bound])
                got = np.sort(edge_time[rel.edge_id.numpy()[rowptr[d] : rowptr[d + 1]]])
                np.testing.assert_array_equal(got, ok[len(ok) - len(got) :])


def test_bad_arguments_are_one_line() -> None:
    indptr, indices, schema, edge_time, order = timed_typed_graph(10, 5, 3, 1)
    with pytest.raises(OptionError, match="indptr"):
        TemporalNeighborSampler(indptr[:-1], indices, edge_time, order, {rel: [2] for rel in RELATIONS}, schema=schema)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    papers=st.integers(1, 25), authors=st.integers(1, 15), degree=st.integers(0, 5), graph_seed=st.integers(0, 2**16),
    batch=st.integers(1, 8), negatives=st.integers(0, 2), recent=st.booleans(), seed=st.integers(0, 2**31),
)  # fmt: skip
def test_timed_typed_link_batches_never_read_a_pairs_future(
    papers, authors, degree, graph_seed, batch, negatives, recent, seed
) -> None:  # noqa: ANN001
    """Pairs of (author, writes, paper) at their times: each endpoint's row is that node at that time
    (``sample_global``), every hop of every relation strictly before its row's bound, so a positive's own edge
    (at the pair's time) is never read."""
    indptr, indices, schema, edge_time, order = timed_typed_graph(papers, authors, degree, graph_seed)
    fanouts = {rel: [3, 2] for rel in RELATIONS}
    timed = TemporalNeighborSampler(indptr, indices, edge_time, order, fanouts, schema=schema,
                                         strategy="recent" if recent else "uniform", seed=seed)  # fmt: skip
    rng = np.random.default_rng(graph_seed)
    pairs = np.stack([rng.integers(0, authors, 12), rng.integers(0, papers, 12)], axis=1)
    times = rng.integers(0, 22, 12)
    sampler = LinkSampler(timed.sample_global, pairs, schema=schema, relation=("author", "writes", "paper"),
                          num_negatives=negatives, reverse=("paper", "rev_writes", "author"), seed=seed,
                          times=times, exclude=False)  # fmt: skip
    ids = rng.integers(0, 12, batch)
    mb = sampler.sample(ids, batch_id=2)
    check_batch(mb, indptr, indices, schema, edge_time, False, fanouts)
    n_id, n_time = mb.n_id, mb.n_time
    assert n_time is not None
    k = negatives
    src_rows, dst_rows = mb.src_index.numpy(), mb.dst_index.numpy()
    np.testing.assert_array_equal(n_id["author"].numpy()[src_rows[:batch]], pairs[ids, 0])
    np.testing.assert_array_equal(n_id["paper"].numpy()[dst_rows[:batch]], pairs[ids, 1])
    pair_time = np.concatenate([times[ids], np.repeat(times[ids], k)])
    np.testing.assert_array_equal(n_time["author"].numpy()[src_rows], pair_time)  # every score at its pair's time
    np.testing.assert_array_equal(n_time["paper"].numpy()[dst_rows], pair_time)
    assert mb.label.tolist() == [1.0] * batch + [0.0] * (batch * k)
    with pytest.raises(OptionError, match="times"):
        LinkSampler(timed.sample_global, pairs, schema=schema, relation=("author", "writes", "paper"), times=times[:-1])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    papers=st.integers(1, 25), authors=st.integers(0, 15), degree=st.integers(0, 5), graph_seed=st.integers(0, 2**16),
    hops=st.integers(1, 3), fanout=st.sampled_from([-1, 1, 3]), batch=st.integers(0, 8), inclusive=st.booleans(),
    recent=st.booleans(), interpreted=st.booleans(), seed=st.integers(0, 2**31),
)  # fmt: skip
def test_the_device_typed_temporal_sampler_is_the_cpu_one(
    papers, authors, degree, graph_seed, hops, fanout, batch, inclusive, recent, interpreted, seed
) -> None:  # noqa: ANN001
    """DeviceTemporalSampler with a schema (here on the CPU: the torch cut twin with numba picks, or the interpreted
    Triton kernels) gives the CPU sampler's batches, node seeds and global seeds alike."""
    indptr, indices, schema, edge_time, order = timed_typed_graph(papers, authors, degree, graph_seed)
    fanouts = {rel: [fanout] * hops for rel in RELATIONS}
    options = {"strategy": "recent" if recent else "uniform", "inclusive": inclusive, "seed": seed}
    cpu = TemporalNeighborSampler(indptr, indices, edge_time, order, fanouts, schema=schema, **options)
    kernels = {"picks": "numba"}
    if interpreted and HAS_TRITON:
        kernels = {"picks": "triton", "kernels": PICKS, "cut_kernels": CUTS}
    # a list of fanouts is every relation's: the same batches as the mapping the CPU sampler has
    device = DeviceTemporalSampler(DenseTopology(indptr, indices), edge_time, order, [fanout] * hops, schema=schema,
                                   **options, **kernels)  # fmt: skip
    rng = np.random.default_rng(graph_seed + 2)
    seeds, times = rng.integers(0, papers, batch), rng.integers(0, 22, batch)
    global_seeds = rng.integers(0, schema.num_nodes, batch)
    (got, rows), (want, want_rows) = (
        device.sample_global(global_seeds, 5, times),
        cpu.sample_global(global_seeds, 5, times),
    )
    assert np.array_equal(rows.numpy(), want_rows)
    for got, want in ((device.sample(seeds, times, 4), cpu.sample(seeds, times, 4)), (got, want)):
        assert_identical_typed(got, want)
        assert all(torch.equal(got.n_time[t], want.n_time[t]) for t in want.n_time)
        for blk, expected in zip(got.blocks, want.blocks):
            assert all(torch.equal(blk.relations[k].edge_id, rel.edge_id) for k, rel in expected.relations.items())


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_the_device_typed_temporal_sampler_on_cuda_is_the_cpu_one() -> None:
    """Compiled Triton cuts and picks on a GPU: the CPU typed temporal sampler's batches, node and global seeds."""
    device = torch.device("cuda", torch.cuda.current_device())
    indptr, indices, schema, edge_time, order = timed_typed_graph(3_000, 2_000, 8, 3)
    fanouts = {rel: [10, 4] for rel in RELATIONS}
    cpu = TemporalNeighborSampler(indptr, indices, edge_time, order, fanouts, schema=schema, seed=7)
    gpu = DeviceTemporalSampler(DenseTopology(indptr, indices, device=device), edge_time, order, fanouts, schema=schema,
                                     seed=7)  # fmt: skip
    rng = np.random.default_rng(0)
    seeds, times = rng.integers(0, 3_000, 512), rng.integers(0, 22, 512)
    got, want = gpu.sample(seeds, times, 1), cpu.sample(seeds, times, 1)
    assert got.seed_index.device == device
    assert_identical_typed(got, want)
    assert all(torch.equal(got.n_time[t].cpu(), want.n_time[t]) for t in want.n_time)
    global_seeds = rng.integers(0, schema.num_nodes, 512)
    (got, rows), (want, want_rows) = (
        gpu.sample_global(global_seeds, 2, times),
        cpu.sample_global(global_seeds, 2, times),
    )
    assert_identical_typed(got, want)
    assert np.array_equal(rows.cpu().numpy(), want_rows)


def test_temporal_samplers_take_per_relation_fanouts_only_with_a_schema() -> None:
    indptr, indices, schema, edge_time, order = timed_typed_graph(10, 5, 2, 0)
    mapping = {rel: [2] for rel in RELATIONS}
    with pytest.raises(OptionError, match="per-relation fanouts need a schema"):
        TemporalNeighborSampler(indptr, indices, edge_time, order, mapping)
    with pytest.raises(OptionError, match="per-relation fanouts need a schema"):
        DeviceTemporalSampler(DenseTopology(indptr, indices), edge_time, order, mapping)
    plain = TemporalNeighborSampler(indptr, indices, edge_time, order, [2])
    with pytest.raises(OptionError, match="sample_global: this sampler has no schema"):
        plain.sample_global(np.arange(3), 0, 5)
