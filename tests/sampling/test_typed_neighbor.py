"""The typed neighbour sampler: kernel == reference, real edges, counts, prefixes, determinism, homogeneous parity."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphtier.dataset.schema import Schema
from graphtier.dataset.typed_graph import TypedEdges, build_typed_csc
from graphtier.errors import OptionError
from graphtier.sampling.neighbor import _typed_kernels as typed_kernels
from graphtier.sampling.neighbor.sampler import NeighborSampler
from graphtier.sampling.neighbor.typed_reference import typed_sample_reference
from graphtier.sampling.relation_fanouts import parse_relation_fanouts
from graphtier.sampling.typed_batch import TypedMiniBatch
from tests.sampling.graphs import random_csc

RELATIONS = [("paper", "cites", "paper"), ("author", "writes", "paper"), ("paper", "rev_writes", "author"),
             ("field", "has", "paper"), ("author", "knows", "author")]  # fmt: skip


def random_typed_graph(counts: dict[str, int], degree: int, seed: int, relations=RELATIONS, skew: bool = True):
    """(indptr, indices, schema) of random relations between the types of ``counts`` (target: paper);
    ``skew``: power-law in-degrees."""
    rng = np.random.default_rng(seed)
    edges = []
    for src, name, dst in relations:
        n = counts[dst] * degree if counts[src] and counts[dst] else 0
        dst_ids = (rng.pareto(1.2, n) * 2).astype(np.int64) if skew else rng.integers(0, 2**40, n)
        edges.append(TypedEdges((src, name, dst), rng.integers(0, max(counts[src], 1), n),
                                dst_ids % max(counts[dst], 1)))  # fmt: skip
    indptr, indices, edge_counts = build_typed_csc(counts, edges, dedup=bool(seed % 2))
    schema = Schema.build([(t, c, 0, "float32") for t, c in counts.items()],
                          [(rel, e) for rel, e in zip(relations, edge_counts)], "paper")  # fmt: skip
    return indptr, indices, schema


def assert_matches_reference(mb: TypedMiniBatch, indptr, indices, schema, fanouts, seeds, seed, batch_id):
    n_id, blocks, seed_index = typed_sample_reference(indptr, indices, schema, fanouts, seeds, seed, batch_id)
    assert set(mb.n_id) == set(schema.type_names)
    for t in schema.type_names:
        assert mb.n_id[t].dtype == torch.int64
        np.testing.assert_array_equal(mb.n_id[t].numpy(), n_id[t])
    np.testing.assert_array_equal(mb.seed_index.numpy(), seed_index)
    assert len(mb.blocks) == len(blocks)
    for blk, (num_src, num_dst, relations) in zip(mb.blocks, blocks):
        assert blk.num_src == num_src and blk.num_dst == num_dst
        assert set(blk.relations) == set(relations)
        for key, (rowptr, col) in relations.items():
            np.testing.assert_array_equal(blk.relations[key].rowptr.numpy(), rowptr)
            np.testing.assert_array_equal(blk.relations[key].col.numpy(), col)


def assert_well_formed(mb: TypedMiniBatch, indptr, indices, schema, fanouts):
    """Every edge is a real edge of its relation, counts = min(deg, fanout), destinations prefix the sources."""
    num_hops = len(mb.blocks)
    for t in schema.type_names:
        ids = mb.n_id[t].numpy()
        assert len(np.unique(ids)) == len(ids) and mb.blocks[0].num_src[t] == len(ids)
        assert ids.size == 0 or (ids.min() >= 0 and ids.max() < schema.node_type(t).count)
    for i, blk in enumerate(mb.blocks):
        hop = num_hops - 1 - i
        for t in schema.type_names:
            assert blk.num_dst[t] <= blk.num_src[t]
            if i + 1 < num_hops:
                assert blk.num_dst[t] == mb.blocks[i + 1].num_src[t]
        for rel in schema.relations:
            rb = blk.relations[rel.type]
            assert rb.rowptr.shape[0] == blk.num_dst[rel.dst] + 1 and rb.rowptr[0] == 0
            col = rb.col.numpy()
            assert col.size == 0 or (col.min() >= 0 and col.max() < blk.num_src[rel.src])
            fanout = fanouts[rel.type][hop]
            src_ids = mb.n_id[rel.src].numpy()[col] + schema.node_type(rel.src).offset
            for r in range(blk.num_dst[rel.dst]):
                row = rel.row_offset + int(mb.n_id[rel.dst][r])
                neighbours = indices[indptr[row] : indptr[row + 1]]
                drawn = src_ids[int(rb.rowptr[r]) : int(rb.rowptr[r + 1])]
                deg = len(neighbours)
                assert len(drawn) == (deg if fanout < 0 else min(deg, fanout))
                values, counts = np.unique(drawn, return_counts=True)
                avail = dict(zip(*np.unique(neighbours, return_counts=True)))
                assert all(avail.get(u, 0) >= c for u, c in zip(values, counts))
    target = mb.n_id[schema.target].numpy()
    np.testing.assert_array_equal(target[mb.seed_index.numpy()], mb.seeds.numpy())


fanout_lists = st.lists(st.sampled_from([-1, 1, 2, 3, 40]), min_size=2, max_size=2)
TYPED_CASES = {  # random typed graphs, fanouts, seed batches and sampler seeds (see ``typed_case``)
    "papers": st.integers(1, 40),
    "authors": st.integers(0, 30),
    "fields": st.integers(0, 5),
    "degree": st.integers(0, 6),
    "hops": st.integers(1, 3),
    "per_relation": st.lists(fanout_lists, min_size=len(RELATIONS), max_size=len(RELATIONS)),
    "graph_seed": st.integers(0, 2**16),
    "batch": st.integers(0, 12),
    "seed": st.integers(-(2**40), 2**40),
    "batch_id": st.integers(0, 2**40),
}


def typed_case(
    papers: int, authors: int, fields: int, degree: int, hops: int, per_relation, graph_seed: int, batch: int
):
    """(indptr, indices, schema, fanouts, seeds) of one TYPED_CASES draw; seeds may repeat and may be empty."""
    indptr, indices, schema = random_typed_graph(
        {"paper": papers, "author": authors, "field": fields}, degree, graph_seed
    )
    fanouts = {rel: (hop_fanouts * 2)[:hops] for rel, hop_fanouts in zip(RELATIONS, per_relation)}
    seeds = np.random.default_rng(graph_seed).integers(0, papers, batch)
    return indptr, indices, schema, fanouts, seeds


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**TYPED_CASES)
def test_matches_reference_and_invariants(
    papers, authors, fields, degree, hops, per_relation, graph_seed, batch, seed, batch_id
):
    indptr, indices, schema, fanouts, seeds = typed_case(
        papers, authors, fields, degree, hops, per_relation, graph_seed, batch
    )
    sampler = NeighborSampler(indptr, indices, fanouts, schema=schema, seed=seed, num_threads=1)
    mb = sampler.sample(seeds, batch_id=batch_id)
    assert_matches_reference(mb, indptr, indices, schema, fanouts, seeds, seed, batch_id)
    assert_well_formed(mb, indptr, indices, schema, fanouts)


def test_large_graph_threads_agree_and_match_reference():
    """Hops big enough for the thread team: 1 and 2 threads give identical batches, both the reference's."""
    indptr, indices, schema = random_typed_graph({"paper": 6000, "author": 4000, "field": 30}, 8, 4, skew=False)
    fanouts = parse_relation_fanouts("cites=5/3,knows=-1", schema, [4, 2])
    seeds = np.random.default_rng(2).integers(0, 6000, 2500)
    one = NeighborSampler(indptr, indices, fanouts, schema=schema, seed=3, num_threads=1).sample(seeds, 7)
    two = NeighborSampler(indptr, indices, fanouts, schema=schema, seed=3, num_threads=2).sample(seeds, 7)
    for t in schema.type_names:
        assert torch.equal(one.n_id[t], two.n_id[t])
    for a, b in zip(one.blocks, two.blocks):
        for key in a.relations:
            assert torch.equal(a.relations[key].rowptr, b.relations[key].rowptr)
            assert torch.equal(a.relations[key].col, b.relations[key].col)
    assert_matches_reference(two, indptr, indices, schema, fanouts, seeds, 3, 7)
    assert one.num_sampled_edges > 10_000


@pytest.mark.parametrize("fanouts", [[3, 2], [-1, 1], [40, 5, 2]])
def test_homogeneous_schema_gives_the_neighbor_samplers_batches(fanouts):
    indptr, indices = random_csc(300, 3000, 5)
    schema = Schema.homogeneous(300, len(indices))
    seeds = np.random.default_rng(0).integers(0, 300, 50)
    plain = NeighborSampler(indptr, indices, fanouts, seed=11, num_threads=1).sample(seeds, batch_id=4)
    typed = NeighborSampler(indptr, indices, {("_N", "_E", "_N"): fanouts}, schema=schema, seed=11).sample(seeds, 4)
    assert torch.equal(typed.n_id["_N"], plain.n_id) and torch.equal(typed.seed_index, plain.seed_index)
    for a, b in zip(typed.blocks, plain.blocks):
        assert (a.num_src["_N"], a.num_dst["_N"]) == (b.num_src, b.num_dst)
        rel = a.relations[("_N", "_E", "_N")]  # the one block layout: the same Block, field for field
        assert type(rel) is type(b) and (rel.num_src, rel.num_dst) == (b.num_src, b.num_dst)
        assert torch.equal(rel.rowptr, b.rowptr) and torch.equal(rel.col, b.col)
        assert torch.equal(rel.edge_index, b.edge_index)


def test_deterministic_in_seed_and_batch_id():
    indptr, indices, schema = random_typed_graph({"paper": 200, "author": 150, "field": 5}, 5, 8)
    fanouts = parse_relation_fanouts(None, schema, [2, 2])
    sampler = NeighborSampler(indptr, indices, fanouts, schema=schema, seed=1)
    seeds = np.arange(0, 200, 7)

    def edges(mb):
        return [torch.cat([r.col for r in blk.relations.values()]) for blk in mb.blocks]

    first, again = sampler.sample(seeds, 3), sampler.sample(torch.from_numpy(seeds), 3)
    assert all(torch.equal(a, b) for a, b in zip(edges(first), edges(again)))
    other = sampler.sample(seeds, 4)
    assert not all(torch.equal(a, b) for a, b in zip(edges(first), edges(other)))
    assert sampler.sample(seeds).blocks[0].num_src  # batch_id None: the internal counter


def test_a_node_reached_through_two_relations_joins_once():
    # author 0 writes paper 0 and knows... paper 0 is cited by paper 1 and has field 0; author 0 also wrote paper 1
    counts = {"paper": 2, "author": 1, "field": 1}
    edges = [TypedEdges(("paper", "cites", "paper"), np.array([1]), np.array([0])),
             TypedEdges(("author", "writes", "paper"), np.array([0, 0]), np.array([0, 1])),
             TypedEdges(("field", "has", "paper"), np.array([0]), np.array([0]))]  # fmt: skip
    indptr, indices, edge_counts = build_typed_csc(counts, edges)
    schema = Schema.build([(t, c, 0, "float32") for t, c in counts.items()],
                          [(e.type, n) for e, n in zip(edges, edge_counts)], "paper")  # fmt: skip
    fanouts = parse_relation_fanouts(None, schema, [-1, -1])
    mb = NeighborSampler(indptr, indices, fanouts, schema=schema).sample([0], 0)
    assert mb.n_id["paper"].tolist() == [0, 1] and mb.n_id["author"].tolist() == [0]
    assert mb.n_id["field"].tolist() == [0]
    last = mb.blocks[-1]
    assert last.num_dst == {"paper": 1, "author": 0, "field": 0}
    assert last.relations[("author", "writes", "paper")].col.tolist() == [0]
    first = mb.blocks[0]  # hop 2: paper 1 is written by author 0 again: the same source row
    assert first.relations[("author", "writes", "paper")].rowptr.tolist() == [0, 1, 2]
    assert first.relations[("author", "writes", "paper")].col.tolist() == [0, 0]


def test_kernel_twins_agree():
    indptr, indices, schema = random_typed_graph({"paper": 50, "author": 20, "field": 3}, 4, 1)
    rng = np.random.default_rng(0)
    n_id = np.concatenate([rng.permutation(50)[:20], 50 + rng.permutation(20)[:7], [70, 72]]).astype(np.int64)
    rng.shuffle(n_id)
    offsets = schema.offsets()
    node_type, position = np.empty(len(n_id), np.int64), np.empty(len(n_id), np.int64)
    type_count = np.zeros(3, np.int64)
    typed_kernels.assign_types(n_id, 0, len(n_id), offsets, node_type, position, type_count)
    py_count = [0, 0, 0]
    assert typed_kernels.assign_types_py(n_id, 0, len(n_id), offsets, py_count) == list(zip(node_type, position))
    assert py_count == type_count.tolist()
    type_start = np.concatenate([[0], np.cumsum(type_count)])
    frontier = np.empty(len(n_id), np.int64)
    frontier[type_start[node_type] + position] = n_id - offsets[node_type]
    dst = np.array([["paper", "author", "field"].index(r.dst) for r in schema.relations])
    item_start = np.concatenate([[0], np.cumsum(type_count[dst])])
    rows = np.array([r.row_offset for r in schema.relations], np.int64)
    fanout = np.array([2, -1, 1, 3, 5], np.int64)
    out = [np.empty(item_start[-1], np.int64) for _ in range(3)]
    for first, stop in ((0, 7), (7, int(item_start[-1]))):  # split ranges: the relation search at `first`
        typed_kernels.typed_spans(indptr, frontier, item_start, type_start[dst], rows, fanout, *out, first, stop)
    expected = typed_kernels.typed_spans_py(indptr, frontier, item_start, type_start[dst], rows, fanout)
    for a, b in zip(out, expected):
        np.testing.assert_array_equal(a, b)


def test_bad_arguments_are_one_line_option_errors():
    indptr, indices, schema = random_typed_graph({"paper": 10, "author": 5, "field": 2}, 2, 0)
    good = parse_relation_fanouts(None, schema, [2])
    with pytest.raises(OptionError, match="missing"):
        NeighborSampler(indptr, indices, {k: v for k, v in list(good.items())[1:]}, schema=schema)
    with pytest.raises(OptionError, match="relation types"):
        NeighborSampler(indptr, indices, {**good, ("a", "b", "c"): [1]}, schema=schema)
    with pytest.raises(OptionError, match="same number of hops"):
        NeighborSampler(indptr, indices, {**good, RELATIONS[0]: [1, 2]}, schema=schema)
    with pytest.raises(OptionError, match="indptr"):
        NeighborSampler(indptr[:-1].copy(), indices[: indptr[-2]], good, schema=schema)
    sampler = NeighborSampler(indptr, indices, good, schema=schema)
    with pytest.raises(OptionError, match=r"seeds: expected node ids in \[0, 10\)"):
        sampler.sample([10], 0)
    with pytest.raises(OptionError, match="batch_id"):
        sampler.sample([1], -1)


@pytest.mark.parametrize("device", [False, True])
def test_one_class_for_any_schema(device: bool) -> None:
    """The public samplers take ``schema=``: a list of fanouts is every relation's (the mapping's batches), a mapping
    needs a schema, and ``sample_global`` is the typed samplers' (one line each otherwise)."""
    from graphtier.sampling import DenseTopology, DeviceNeighborSampler

    indptr, indices, schema = random_typed_graph({"paper": 120, "author": 80, "field": 4}, 4, 3)
    seeds = np.arange(0, 120, 5)

    def build(fanouts, **options):
        if device:
            return DeviceNeighborSampler(DenseTopology(indptr, indices), fanouts, seed=2, **options)
        return NeighborSampler(indptr, indices, fanouts, seed=2, **options)

    listed = build([3, 2], schema=schema)
    mapped = build(parse_relation_fanouts(None, schema, [3, 2]), schema=schema)
    assert listed.fanouts == mapped.fanouts == {rel.type: (3, 2) for rel in schema.relations}
    a, b = listed.sample(seeds, 5), mapped.sample(seeds, 5)
    assert isinstance(a, TypedMiniBatch) and all(torch.equal(a.n_id[t], b.n_id[t]) for t in a.n_id)
    for x, y in zip(a.blocks, b.blocks):
        assert all(torch.equal(x.relations[k].col, y.relations[k].col) for k in x.relations)
    batch, rows = listed.sample_global(seeds + schema.node_type("paper").offset, 5)
    assert torch.equal(torch.as_tensor(rows), a.seed_index)
    with pytest.raises(OptionError, match="per-relation fanouts need a schema"):
        build({RELATIONS[0]: [3, 2]})
    homogeneous = build([3, 2]) if device else NeighborSampler(*random_csc(50, 200, 1), [3, 2])
    with pytest.raises(OptionError, match="sample_global: this sampler has no schema"):
        homogeneous.sample_global(np.arange(3), 0)
