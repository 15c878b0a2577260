"""Reordering a typed dataset: each type by its own score, relations remapped, features and labels follow."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset.format import Dataset
from graphtier.graph.reorder import order_by_type, relation_row_perm, reorder_dataset
from graphtier.graph.typed_scores import typed_fanout_weighted_reads
from graphtier.tiering.hotness import compute_scores
from graphtier.tiering.replay import Replay
from tests.cli.helpers import run
from tests.typed_data import write_typed_dataset


def _edges(data: Dataset, rel) -> set[tuple[int, int]]:
    """Global (src, dst) pairs of one relation."""
    indptr, sources = data.relation_csc(rel)
    dst = data.schema.node_type(rel.dst)
    rows = np.repeat(np.arange(dst.count), np.diff(np.asarray(indptr))) + dst.offset
    return set(zip(np.asarray(sources).tolist(), rows.tolist(), strict=True))


def test_reorder_is_an_isomorphism_per_relation(tmp_path: Path) -> None:
    source = write_typed_dataset(tmp_path / "t")
    scores = np.random.default_rng(1).random(source.num_nodes)
    out, _ = reorder_dataset(source, tmp_path / "r", scores, score_label="random")
    perm = np.asarray(out.extra["perm"])
    for t in source.schema.node_types:  # each type keeps its range, hottest first
        assert sorted(perm[t.offset : t.stop].tolist()) == list(range(t.offset, t.stop))
        assert np.all(np.diff(scores[perm[t.offset : t.stop]]) <= 0)
    for rel in source.schema.relations:
        mapped = {(int(perm[s]), int(perm[d])) for s, d in _edges(out, rel)}
        assert mapped == _edges(source, rel), rel
        indptr, sources = out.relation_csc(rel)
        for v in range(indptr.shape[0] - 1):
            assert np.all(np.diff(sources[indptr[v] : indptr[v + 1]]) > 0)
    for name, table in source.type_features.items():  # features follow their nodes
        t = source.schema.node_type(name)
        np.testing.assert_array_equal(out.type_features[name], np.asarray(table)[perm[t.offset : t.stop] - t.offset])
    target = source.schema.target_type
    old_of_new = perm[target.offset : target.stop] - target.offset
    np.testing.assert_array_equal(out.labels, np.asarray(source.labels)[old_of_new])
    for split in ("train", "valid", "test"):
        assert sorted(old_of_new[out.split(split)].tolist()) == sorted(source.split(split).tolist())
    Dataset.open(out.path).validate()


def test_reordered_scores_are_the_permuted_scores(tmp_path: Path) -> None:
    source = write_typed_dataset(tmp_path / "t")
    result = compute_scores(source, "fwr", replay=Replay(fanouts=[3, 2], batch_size=16))
    out, _ = reorder_dataset(source, tmp_path / "r", result.scores, score_label="fwr")
    perm = np.asarray(out.extra["perm"])
    again = typed_fanout_weighted_reads(out.indptr, out.indices, out.schema, out.train_idx, [3, 2], batch_size=16)
    np.testing.assert_allclose(again.node_reads, result.scores[perm], rtol=1e-9, atol=1e-12)


def test_row_perm_follows_the_destination_type(tmp_path: Path) -> None:
    source = write_typed_dataset(tmp_path / "t", add_reverse=False)
    schema = source.schema
    perm = order_by_type(np.arange(schema.num_nodes, dtype=np.float64), schema)  # reverse within each type
    rows = relation_row_perm(perm, schema)
    about = schema.relation("about")
    assert rows[about.row_offset : about.row_offset + 6].tolist() == list(
        range(about.row_offset + 5, about.row_offset - 1, -1)
    )


def test_cli_score_and_reorder_a_typed_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = write_typed_dataset(tmp_path / "t")
    code, out, err = run(["score", str(source.path), "--fanouts", "3,2", "--batch-size", "16"], capsys)
    assert code == 0, err
    assert "per type" in out and "subject" in out
    code, out, err = run(["reorder", str(source.path), str(tmp_path / "r"), "--fanouts", "3,2"], capsys)
    assert code == 0, err
    assert Dataset.open(tmp_path / "r").is_hetero
    code, out, err = run(["score", str(source.path), "--score", "rpr"], capsys)
    assert code == 2 and "typed dataset" in err and "\n" not in err.strip()
