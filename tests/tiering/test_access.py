"""Tests for graphtier.tiering.reads and graphtier.tiering.access (replay of the sampler and hit-ratio curves)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset.csc import edges_to_csc
from graphtier.dataset.format import Dataset
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError, OptionError
from graphtier.tiering.access import (
    HIT_PERCENTS,
    AccessAnalysis,
    analyze_access,
    cumulative_share,
    hit_ratio_curve,
    interpret_access,
    plot_access,
    top_size,
)
from graphtier.tiering.reads import count_feature_reads
from graphtier.tiering.replay import Replay

sampling = pytest.importorskip("graphtier.sampling.neighbor.sampler")


def power_law_dataset(
    root: Path,
    num_nodes: int = 3000,
    avg_degree: int = 8,
    train_share: float = 0.02,
    seed: int = 0,
    with_train: bool = True,
) -> Dataset:
    """A graph whose sources follow a power law, so some nodes are in many neighbour lists."""
    rng = np.random.default_rng(seed)
    num_edges = num_nodes * avg_degree
    src = np.minimum((rng.pareto(1.2, num_edges) * 3).astype(np.int64), num_nodes - 1)
    src = rng.permutation(num_nodes)[src]  # hubs at random ids
    dst = rng.integers(0, num_nodes, num_edges)
    indptr, indices = edges_to_csc(src, dst, num_nodes, dedup=True)
    with DatasetWriter(root) as writer:
        writer.save("indptr", indptr)
        writer.save("indices", indices)
        if with_train:
            train = np.sort(rng.choice(num_nodes, int(num_nodes * train_share), replace=False))
            writer.save("train_idx", train.astype(np.int64))
        meta = {
            "name": "powerlaw",
            "num_nodes": num_nodes,
            "num_edges": int(indices.shape[0]),
            "directed": True,
            "feature_dim": 0,
            "feature_dtype": None,
            "num_classes": 0,
            "source": {"kind": "test"},
        }
        return writer.finish(meta)


def reference_curve(scores: np.ndarray, counts: np.ndarray, percents: tuple[float, ...]) -> dict[str, float]:
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    total = counts.sum()
    result = {}
    for p in percents:
        k = max(1, int(len(scores) * p // 100))
        result[str(p)] = float(counts[order[:k]].sum() / total) if total else 0.0
    return result


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 20)), min_size=1, max_size=300))
def test_hit_ratio_curve_matches_reference_and_ideal_bounds_it(pairs: list[tuple[int, int]]) -> None:
    scores = np.array([p[0] for p in pairs], dtype=np.float64)
    counts = np.array([p[1] for p in pairs], dtype=np.int64)
    curve = hit_ratio_curve(scores, counts)
    assert curve == pytest.approx(reference_curve(scores, counts, HIT_PERCENTS))
    ideal = hit_ratio_curve(counts, counts)
    values = list(curve.values())
    assert all(0.0 <= v <= 1.0 for v in values)
    assert values == sorted(values)
    for key in curve:
        assert curve[key] <= ideal[key] + 1e-12
    x, y = cumulative_share(scores, counts, points=50)
    assert x[0] == 0 and x[-1] == 100 and y[0] == 0
    assert np.all(np.diff(y) >= 0)
    assert y[-1] == pytest.approx(1.0 if counts.sum() else 0.0)


def test_top_size() -> None:
    assert top_size(0, 10) == 0
    assert top_size(5, 1) == 1
    assert top_size(1000, 25) == 250
    assert top_size(1000, 100) == 1000


def test_count_feature_reads_matches_manual_replay(tmp_path: Path) -> None:
    from graphtier.sampling.neighbor.sampler import NeighborSampler
    from graphtier.sampling.seeds import iter_seed_batches

    data = power_law_dataset(tmp_path / "g", num_nodes=800)
    train = np.asarray(data.train_idx)
    counts = count_feature_reads(data.indptr, data.indices, train, fanouts=[5, 3], batch_size=4, epochs=2, seed=7)
    sampler = NeighborSampler(data.indptr, data.indices, [5, 3], seed=7)
    expected = np.zeros(800, dtype=np.int64)
    batch_id = 0
    for epoch in range(2):
        for seeds in iter_seed_batches(train, 4, shuffle=True, seed=7, epoch=epoch):
            np.add.at(expected, sampler.sample(seeds, batch_id).n_id.numpy(), 1)
            batch_id += 1
    np.testing.assert_array_equal(counts, expected)
    assert np.all(counts[train] >= 2)  # every seed is read once per epoch
    again = count_feature_reads(data.indptr, data.indices, train, fanouts=[5, 3], batch_size=4, epochs=2, seed=7)
    np.testing.assert_array_equal(counts, again)
    other = count_feature_reads(data.indptr, data.indices, train, fanouts=[5, 3], batch_size=4, epochs=2, seed=8)
    assert not np.array_equal(counts, other)


def test_analyze_access_curves_and_plot(tmp_path: Path) -> None:
    data = power_law_dataset(tmp_path / "g")
    analysis = analyze_access(data, replay=Replay(fanouts=[10, 5], batch_size=16, epochs=1, seed=3))
    assert set(analysis.curves) == {"degree", "rpr", "wrpr", "fwr", "fwr-sum", "presample", "ideal"}
    doc = analysis.to_json()
    assert doc["total_reads"] == int(analysis.counts.sum()) > 0
    assert list(doc["curves"]["wrpr"]) == ["1", "2", "5", "10", "20", "25", "50"]
    assert doc["config"]["presample_seed"] == 4
    for name, curve in analysis.curves.items():
        for key, value in curve.items():
            assert value <= analysis.curves["ideal"][key] + 1e-12, name
    # on a power-law graph every score beats a random tier of the same size by far
    assert analysis.curves["degree"]["10"] > 0.3
    plot_access(analysis, tmp_path / "plot.png")
    assert (tmp_path / "plot.png").read_bytes()[:4] == b"\x89PNG"


def _analysis(counts: np.ndarray, scores: dict[str, np.ndarray]) -> AccessAnalysis:
    curves = {name: hit_ratio_curve(values, counts) for name, values in scores.items()}
    curves["ideal"] = hit_ratio_curve(counts, counts)
    return AccessAnalysis(counts, scores, curves, config={})


def test_interpretation_names_the_best_score_and_its_lift() -> None:
    counts = np.ones(100, dtype=np.int64)
    counts[:10] = 10  # 10 hot nodes serve 100 of 190 reads
    line = interpret_access(_analysis(counts, {"degree": -np.arange(100.0), "rpr": np.arange(100.0)}))
    assert (
        line
        == "best score: degree, its top 10% of nodes serve 52.6% of the reads, 5.26x a uniform spread (ideal 52.6%)"
    )


def test_interpretation_says_a_hot_tier_will_not_help_when_reads_are_uniform() -> None:
    rng = np.random.default_rng(0)
    counts = np.full(1000, 10, dtype=np.int64) + rng.integers(0, 2, 1000)  # ~all nodes read, nearly evenly
    line = interpret_access(_analysis(counts, {"degree": rng.random(1000), "fwr": counts.astype(np.float64)}))
    assert line.startswith(
        "the replay reads ~all nodes (100%): a hot tier will not help at this batch size (best score fwr: "
    )
    assert line.endswith("; try a smaller --batch-size or a larger graph")
    counts[:500] = 0  # half the nodes never read, the rest evenly: the graph, not the batch size
    line = interpret_access(_analysis(counts, {"degree": rng.random(1000)}))
    assert line.startswith(
        "reads are spread nearly evenly: a hot tier will not help on this graph (best score degree: "
    )
    assert line.endswith("50% of the nodes read)")
    assert interpret_access(_analysis(np.zeros(5, np.int64), {"degree": np.ones(5)})).startswith("no feature reads")


def test_a_batch_that_covers_the_graph_gets_the_will_not_help_line(tmp_path: Path) -> None:
    from tests.conftest import write_labelled_graph

    small = write_labelled_graph(tmp_path / "small")  # 400 nodes, 200 train nodes: one batch of 1024 per epoch
    flat = interpret_access(
        analyze_access(small, methods=["degree", "fwr"], replay=Replay(fanouts=[25, 10], batch_size=1024))
    )
    assert flat.startswith("the replay reads ~all nodes (100%)")  # ... and each of them once
    assert "1.00x a uniform spread" in flat
    skewed = analyze_access(
        power_law_dataset(tmp_path / "g"), methods=["degree", "fwr"], replay=Replay(fanouts=[5, 5], batch_size=4)
    )
    assert interpret_access(skewed).startswith("best score: ")
    assert skewed.to_json()["interpretation"] == interpret_access(skewed)


def test_analyze_access_rejects_bad_input(tmp_path: Path) -> None:
    data = power_law_dataset(tmp_path / "g", num_nodes=200)
    with pytest.raises(OptionError, match="presample-seed"):
        analyze_access(data, presample_seed=1, replay=Replay(seed=1))
    with pytest.raises(OptionError, match="methods="):
        analyze_access(data, methods=["degree", "bogus"])
    no_train = power_law_dataset(tmp_path / "h", num_nodes=200, with_train=False)
    with pytest.raises(DatasetError, match="train_idx.npy"):
        analyze_access(no_train)
