"""LinkSampler with a schema: pairs of one relation give the batches the former TypedLinkSampler gave (rows, labels,
negatives, excluded edges, all rebuilt here from ``sample_global`` and the negatives' stream), on the CPU and the
device sampler alike; a wrong mix of homogeneous and typed arguments is one line naming the argument."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphtier.errors import OptionError
from graphtier.sampling import DenseTopology, DeviceNeighborSampler, NeighborSampler
from graphtier.sampling.link.pairs import NegativeDestinations
from graphtier.sampling.link.sampler import LinkSampler
from graphtier.sampling.link.typed_link import TypedLinkMiniBatch
from tests.sampling.test_typed_neighbor import RELATIONS, random_typed_graph

WRITES, REV_WRITES = ("author", "writes", "paper"), ("paper", "rev_writes", "author")
NEGATIVE_STREAM = 0x4E45  # PairTable.draw_negatives' stream tag


def writes_graph(seed: int):  # noqa: ANN201
    """(indptr, indices, schema, pairs int64 [P, 2]: every (author, paper) edge of writes, local ids)."""
    indptr, indices, schema = random_typed_graph({"paper": 40, "author": 25, "field": 3}, 4, seed)
    rel, papers = schema.relation(WRITES), schema.node_type("paper")
    rows = np.asarray(indptr[rel.row_offset : rel.row_offset + papers.count + 1])
    authors = np.asarray(indices[rows[0] : rows[-1]]) - schema.node_type("author").offset
    return indptr, indices, schema, np.stack([authors, np.repeat(np.arange(papers.count), np.diff(rows))], 1)


def edges(block, key) -> list[tuple[int, int]]:  # noqa: ANN001
    """(source row, destination row) of relation ``key``'s edges in ``block``, in CSR order."""
    if key not in block.relations:
        return []
    return [tuple(e) for e in block.relations[key].edge_index.cpu().numpy().T.tolist()]


@pytest.mark.parametrize("on_device", [False, True])
@pytest.mark.parametrize("graph_seed", [1, 5])
def test_typed_batches_are_the_pairs_of_sample_global_without_their_edges(graph_seed: int, on_device: bool) -> None:
    indptr, indices, schema, pairs = writes_graph(graph_seed)
    fanouts = {rel: [-1, 3] for rel in RELATIONS}  # whole first-hop lists: every target edge is sampled
    if on_device:
        nodes = DeviceNeighborSampler(DenseTopology(indptr, indices), fanouts, schema=schema, seed=graph_seed)
    else:
        nodes = NeighborSampler(indptr, indices, fanouts, schema=schema, seed=graph_seed, num_threads=1)
    k, seed, batch_id = 2, 3, 4
    link = LinkSampler(nodes.sample_global, pairs, schema=schema, relation=WRITES, reverse=REV_WRITES,
                       num_negatives=k, seed=seed)  # fmt: skip
    ids = np.random.default_rng(graph_seed).choice(pairs.shape[0], 16, replace=False)
    mb = link.sample(ids, batch_id)

    b, paper, author = ids.size, schema.node_type("paper"), schema.node_type("author")
    negatives = NegativeDestinations("uniform", (0, paper.count)).draw(
        np.random.default_rng([seed, batch_id, NEGATIVE_STREAM]), b * k
    )
    seeds = np.concatenate([pairs[ids, 0] + author.offset, pairs[ids, 1] + paper.offset, negatives + paper.offset])
    plain, rows = nodes.sample_global(seeds, batch_id)
    rows = torch.as_tensor(rows).cpu()
    assert isinstance(mb, TypedLinkMiniBatch) and (mb.src_type, mb.dst_type) == ("author", "paper")
    assert torch.equal(mb.src_index.cpu(), torch.cat([rows[:b], rows[:b].repeat_interleave(k)]))
    assert torch.equal(mb.dst_index.cpu(), rows[b:])
    assert mb.label.tolist() == [1.0] * b + [0.0] * (b * k)
    assert mb.pair_ids.cpu().tolist() == ids.tolist()
    assert all(torch.equal(mb.n_id[t].cpu(), plain.n_id[t].cpu()) for t in schema.type_names)

    targets = set(zip(rows[:b].tolist(), rows[b : 2 * b].tolist()))  # (author row, paper row)
    removed, reversed_removed = 0, 0
    for got, before in zip(mb.blocks, plain.blocks):
        assert set(got.relations) == set(before.relations)
        for key in before.relations:
            kept = edges(before, key)
            if key == WRITES:
                kept = [e for e in kept if e not in targets]
            elif key == REV_WRITES:
                kept = [e for e in kept if (e[1], e[0]) not in targets]
            assert edges(got, key) == kept, key  # only targets left, order kept
            removed += len(edges(before, key)) - len(kept)
            reversed_removed += (len(edges(before, key)) - len(kept)) * (key == REV_WRITES)
    assert mb.excluded_edges == removed >= b  # each target in the seed hop at least
    assert reversed_removed > 0  # these graphs have a target's reverse among their rev_writes edges


def test_typed_evaluation_batches_keep_their_labels_and_every_edge() -> None:
    indptr, indices, schema, pairs = writes_graph(1)
    nodes = NeighborSampler(indptr, indices, {rel: [-1, 3] for rel in RELATIONS}, schema=schema, seed=1, num_threads=1)
    labels = np.linspace(0, 1, pairs.shape[0]).astype(np.float32)
    link = LinkSampler(nodes.sample_global, pairs, schema=schema, relation=WRITES, reverse=REV_WRITES, labels=labels)
    mb = link.sample(np.arange(10), 0)
    offsets = [schema.node_type("author").offset, schema.node_type("paper").offset]
    plain, _ = nodes.sample_global((pairs[:10] + offsets).T.reshape(-1), 0)  # sources, then destinations
    assert mb.excluded_edges == 0 and mb.label.shape[0] == 10
    assert torch.equal(mb.label, torch.from_numpy(labels[:10]))
    for got, before in zip(mb.blocks, plain.blocks):
        assert all(edges(got, key) == edges(before, key) for key in before.relations)


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"num_nodes": 10, "relation": WRITES}, "relation"),
        ({"num_nodes": 10, "reverse": REV_WRITES}, "reverse"),
        ({}, "num_nodes"),
        ({"schema": True, "relation": WRITES, "num_nodes": 10}, "num_nodes"),
        ({"schema": True}, "relation"),
        ({"schema": True, "relation": ("author", "reads", "paper")}, "relation"),
        ({"schema": True, "relation": WRITES, "reverse": ("author", "knows", "author")}, "reverse"),
    ],
)
def test_a_wrong_mix_of_arguments_is_one_line_naming_it(arguments: dict, named: str) -> None:
    _, _, schema, pairs = writes_graph(1)
    if arguments.get("schema"):
        arguments = {**arguments, "schema": schema}
    with pytest.raises(OptionError, match=f"^{named}: ") as error:
        LinkSampler(lambda seeds, batch_id: None, pairs, **arguments)  # type: ignore[arg-type, return-value]
    assert "\n" not in str(error.value)
