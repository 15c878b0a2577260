"""fwr on a typed graph: the homogeneous case is today's score exactly; typed graphs match a dense reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier.errors import OptionError
from graphtier.graph.scores import fanout_weighted_reads
from graphtier.graph.typed_scores import split_by_relation, split_by_type, typed_fanout_weighted_reads
from tests.conftest import write_labelled_graph
from tests.typed_data import write_typed_dataset


def _reference(data, fanouts: dict, batch_size: int, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Dense numpy reference: per hop, per relation, the probability that no destination draws each node."""
    schema = data.schema
    n = schema.num_nodes
    indptr = np.asarray(data.indptr)
    indices = np.asarray(data.indices)
    train = np.asarray(data.train_idx) + schema.target_type.offset
    chance = np.zeros(n)
    chance[train] = min(1.0, batch_size / train.size)
    count = np.zeros(n)
    count[train] = 1.0
    batches = -(-train.size // batch_size)
    q = chance.copy() if mode == "batch" else count.copy()
    total = q.copy()
    entries = np.zeros(indptr.shape[0] - 1)
    for hop in range(len(next(iter(fanouts.values())))):
        log_miss = np.zeros(n)
        drawn = np.zeros(n)
        for rel in schema.relations:
            dst = schema.node_type(rel.dst)
            f = fanouts[rel.type][hop]
            for v in range(dst.count):
                row = rel.row_offset + v
                sources = indices[indptr[row] : indptr[row + 1]]
                deg = sources.size
                if deg == 0:
                    continue
                p = 1.0 if f < 0 else min(1.0, f / deg)
                weight = q[dst.offset + v]
                entries[row] += weight * (deg if f < 0 else min(f, deg))
                for u in sources:
                    if mode == "batch":
                        log_miss[u] += np.log1p(-min(1.0, weight * p)) if weight * p < 1 else -np.inf
                    else:
                        drawn[u] += weight * p
        if mode == "batch":
            q = 1.0 - (1.0 - q) * np.exp(log_miss)
        else:
            q = drawn
            total += q
    if mode == "batch":
        return q * batches, entries * batches
    return total, entries


@pytest.mark.parametrize("mode", ["batch", "sum"])
def test_homogeneous_dataset_gives_todays_fwr_exactly(tmp_path: Path, mode: str) -> None:
    data = write_labelled_graph(tmp_path / "g", num_nodes=300)
    expected = fanout_weighted_reads(data.indptr, data.indices, data.train_idx, [5, 3], batch_size=32, mode=mode)
    got = typed_fanout_weighted_reads(
        data.indptr, data.indices, data.schema, data.train_idx, [5, 3], batch_size=32, mode=mode
    )
    np.testing.assert_array_equal(got.node_reads, expected)
    assert split_by_type(got.node_reads, data.schema)["_N"] is not None


@pytest.mark.parametrize("mode", ["batch", "sum"])
def test_typed_fwr_matches_the_dense_reference(tmp_path: Path, mode: str) -> None:
    data = write_typed_dataset(tmp_path / "t")
    fanouts = {r.type: [3, 2] for r in data.schema.relations}
    fanouts[("paper", "cites", "paper")] = [-1, 1]
    fanouts[("author", "writes", "paper")] = [2, 5]
    got = typed_fanout_weighted_reads(
        data.indptr, data.indices, data.schema, data.train_idx, fanouts, batch_size=16, mode=mode
    )
    nodes, entries = _reference(data, fanouts, 16, mode)
    np.testing.assert_allclose(got.node_reads, nodes, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.list_entries, entries, rtol=1e-10, atol=1e-12)
    by_type = split_by_type(got.node_reads, data.schema)
    assert by_type["subject"].shape == (6,) and by_type["subject"].sum() > 0  # reached through paper->subject
    by_rel = split_by_relation(got.list_entries, data.schema)
    assert by_rel[("paper", "about", "subject")].shape == (6,)


def test_per_relation_fanouts_must_name_every_relation_with_equal_hops(tmp_path: Path) -> None:
    data = write_typed_dataset(tmp_path / "t", add_reverse=False)
    rels = [r.type for r in data.schema.relations]
    with pytest.raises(OptionError, match="missing"):
        typed_fanout_weighted_reads(data.indptr, data.indices, data.schema, data.train_idx, {rels[0]: [2]})
    uneven = {r: [2] for r in rels}
    uneven[rels[0]] = [2, 2]
    with pytest.raises(OptionError, match="same number of hops"):
        typed_fanout_weighted_reads(data.indptr, data.indices, data.schema, data.train_idx, uneven)
