"""The analytic typed fwr against the typed sampler: exact on a typed tree, close on a small typed graph."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset.schema import Schema
from graphtier.dataset.typed_graph import TypedEdges, build_typed_csc
from graphtier.errors import OptionError
from graphtier.graph.typed_scores import typed_fanout_weighted_reads
from graphtier.tiering.access import analyze_access
from graphtier.tiering.hotness import compute_scores
from graphtier.tiering.replay import Replay
from graphtier.tiering.typed_reads import count_typed_reads
from tests.cli.helpers import run
from tests.conftest import write_labelled_graph
from tests.typed_data import write_typed_dataset


def typed_tree(seed: int) -> tuple[np.ndarray, np.ndarray, Schema]:
    """Papers in a citation tree under paper 0, each author writing one paper, each subject tagging one paper:
    every node but the root has exactly one out-edge, so every node is reached along one path only."""
    rng = np.random.default_rng(seed)
    counts = {"paper": 30, "author": 25, "subject": 8}
    children = np.arange(1, 30)
    parents = np.array([rng.integers(0, max(1, v // 2)) for v in children])
    edges = [
        TypedEdges(("paper", "cites", "paper"), children, parents),
        TypedEdges(("author", "writes", "paper"), np.arange(25), rng.integers(0, 12, 25)),
        TypedEdges(("subject", "tags", "paper"), np.arange(8), rng.integers(0, 6, 8)),
    ]
    indptr, indices, sizes = build_typed_csc(counts, edges)
    schema = Schema.build(
        [(name, count, 0, "float32") for name, count in counts.items()],
        [(e.type, n) for e, n in zip(edges, sizes, strict=True)],
        "paper",
    )
    return indptr, indices, schema


def test_typed_fwr_equals_the_sampled_read_probability_on_a_tree() -> None:
    indptr, indices, schema = typed_tree(4)
    fanouts = {
        ("paper", "cites", "paper"): [2, 1],
        ("author", "writes", "paper"): [1, 2],
        ("subject", "tags", "paper"): [1, 1],
    }
    expected = typed_fanout_weighted_reads(indptr, indices, schema, np.array([0]), fanouts, batch_size=1)
    epochs = 1500
    measured = count_typed_reads(
        indptr, indices, schema, np.array([0]), fanouts=fanouts, batch_size=1, epochs=epochs, seed=2
    )
    reads = measured.features / epochs
    p = expected.node_reads
    sigma = np.sqrt(np.maximum(p * (1 - p), 1e-4) / epochs)
    assert np.all(np.abs(reads - p) <= 5 * sigma + 1e-9), np.abs(reads - p).max()
    assert np.all(p[measured.features == 0] < 0.01)
    assert p[schema.node_type("author").offset :].sum() > 1  # authors and subjects are read
    entries = measured.list_entries / epochs
    np.testing.assert_allclose(entries, expected.list_entries, atol=0.15)


def test_typed_fwr_is_close_to_the_sampled_reads_per_type(tmp_path: Path) -> None:
    data = write_typed_dataset(tmp_path / "t")
    fanouts = [3, 2]
    expected = typed_fanout_weighted_reads(
        data.indptr, data.indices, data.schema, data.train_idx, fanouts, batch_size=8
    )
    epochs = 40
    measured = count_typed_reads(
        data.indptr, data.indices, data.schema, data.train_idx, fanouts=fanouts, batch_size=8, epochs=epochs, seed=1
    )
    for t in data.schema.node_types:
        predicted = expected.node_reads[t.offset : t.stop]
        counted = measured.features[t.offset : t.stop] / epochs
        assert abs(predicted.sum() - counted.sum()) <= 0.1 * counted.sum(), t.name
        assert np.corrcoef(predicted, counted)[0, 1] > 0.9, t.name
    assert abs(expected.list_entries.sum() - measured.list_entries.sum() / epochs) <= 0.1 * expected.list_entries.sum()


def test_presample_and_degree_scores_of_a_typed_dataset(tmp_path: Path) -> None:
    data = write_typed_dataset(tmp_path / "t")
    result = compute_scores(data, "presample", replay=Replay(fanouts=[3, 2], batch_size=16, epochs=2, seed=5))
    counted = count_typed_reads(
        data.indptr, data.indices, data.schema, data.train_idx, fanouts=[3, 2], batch_size=16, epochs=2, seed=5
    )
    np.testing.assert_array_equal(result.scores, counted.features)
    degree = compute_scores(data, "degree").scores
    np.testing.assert_array_equal(degree, np.bincount(np.asarray(data.indices), minlength=data.num_nodes))


def test_analyze_a_typed_dataset_in_total_and_per_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_typed_dataset(tmp_path / "t")
    analysis = analyze_access(
        data, methods=["fwr", "presample"], replay=Replay(fanouts=[3, 2], batch_size=8, epochs=1, seed=0)
    )
    assert set(analysis.curves_by_type) == {"paper", "author", "subject"}
    assert sum(analysis.reads_by_type.values()) == analysis.total_reads
    assert analysis.curves_by_type["author"]["ideal"]["50"] >= analysis.curves_by_type["author"]["fwr"]["50"]
    code, out, err = run(["analyze", str(data.path), "--fanouts", "3,2", "--batch-size", "8"], capsys)
    assert code == 0, err
    assert "subject: 6 nodes" in out and "rpr" not in out


def test_fanouts_per_relation_reach_every_tiering_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_typed_dataset(tmp_path / "t")
    # authors are drawn only through writes: fewer draws there, fewer author reads
    fewer_authors = compute_scores(
        data, "fwr", replay=Replay(fanouts=[3, 2], relation_fanouts="writes=1/1", batch_size=8)
    )
    assert fewer_authors.params["fanouts_per_relation"]["author___writes___paper"] == [1, 1]
    base = compute_scores(data, "fwr", replay=Replay(fanouts=[3, 2], batch_size=8))
    author = data.schema.node_type("author")
    assert fewer_authors.scores[author.offset : author.stop].sum() < base.scores[author.offset : author.stop].sum()
    for command in (["score"], ["analyze"], ["plan", "--gpu-memory", "8GiB", "--host-memory", "8GiB"]):
        argv = [*command, str(data.path), "--fanouts", "3,2", "--fanouts-per-relation", "writes=1/1"]
        code, out, err = run(argv, capsys)
        assert code == 0, (command, err)
        code, out, err = run([*argv[:-1], "nope=2"], capsys)
        assert code == 2 and "--fanouts-per-relation" in err and "nope" in err, (command, err)
    homogeneous = tmp_path / "h"

    write_labelled_graph(homogeneous)
    code, out, err = run(["score", str(homogeneous), "--fanouts-per-relation", "x=1"], capsys)
    assert code == 2 and "one relation" in err


def test_a_score_a_typed_dataset_lacks_is_named_as_the_caller_spelled_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 34: ``analyze --score rpr`` on a typed dataset named ``--method`` (score's old alias); every command
    names its own option ``--score``, a Python caller the argument it passed."""
    data = write_typed_dataset(tmp_path / "t")
    for argv in (
        ["analyze", str(data.path)],
        ["score", str(data.path)],
        ["reorder", str(data.path), str(tmp_path / "r")],
    ):
        code, out, err = run([*argv, "--score", "rpr"], capsys)
        assert code == 2 and err.startswith("graphtier: error: --score: 'rpr' is not defined on the typed"), (argv, err)
        assert "--method" not in err and len(err.strip().splitlines()) == 1, err
    with pytest.raises(OptionError, match=r"^methods=: 'rpr' is not defined"):
        analyze_access(data, methods=["rpr"], replay=Replay(fanouts=[3, 2], batch_size=8))
    with pytest.raises(OptionError, match=r"^methods=: expected names from"):
        analyze_access(data, methods=["nope"], replay=Replay(fanouts=[3, 2], batch_size=8))
    with pytest.raises(OptionError, match=r"^method=: 'rpr' is not defined"):
        compute_scores(data, "rpr")
