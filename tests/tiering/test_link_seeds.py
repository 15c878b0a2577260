"""Tiering for link prediction: seed weights, fwr and wrpr from link seeds against the link sampler, analyze/plan."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset.csc import edges_to_csc
from graphtier.dataset.edges.link_split import LinkPairs, LinkSplit
from graphtier.dataset.format import Dataset
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError, OptionError
from graphtier.graph.scores import (
    fanout_weighted_reads,
    fanout_weighted_reads_reference,
    seed_count_initial_scores,
    seeded_fanout_weighted_reads,
    weighted_initial_scores,
    weighted_reverse_pagerank,
)
from graphtier.graph.seed_weights import link_seed_weights, node_seed_weights
from graphtier.sampling.link.pairs import NegativeDestinations
from graphtier.sampling.seeds import iter_seed_batches
from graphtier.tiering.access import analyze_access
from graphtier.tiering.hotness import compute_scores
from graphtier.tiering.reads import count_feature_reads
from graphtier.tiering.replay import Replay
from graphtier.tiering.seeds import EpochSeeds, negative_chances


def write_link_dataset(
    root: Path,
    indptr: np.ndarray,
    indices: np.ndarray,
    pairs: np.ndarray,
    *,
    dst_range: tuple[int, int] | None = None,
    features: bool = False,
) -> Dataset:
    """A dataset of the CSC graph with ``pairs`` (int64 [P, 2]) as its link_train.npy (LinkSplit.save)."""
    num_nodes = int(indptr.shape[0]) - 1
    with DatasetWriter(root) as writer:
        writer.save("indptr", indptr)
        writer.save("indices", indices)
        if features:
            writer.save("features", np.ones((num_nodes, 4), dtype=np.float32))
        split = LinkSplit(
            {"eval_negatives": 0, "dst_range": list(dst_range or (0, num_nodes)), "undirected": False},
            {"train": LinkPairs(np.asarray(pairs, dtype=np.int64))},
        )
        link = split.save(writer)
        meta = {
            "name": "link-test",
            "num_nodes": num_nodes,
            "num_edges": int(indices.shape[0]),
            "directed": True,
            "feature_dim": 4 if features else 0,
            "feature_dtype": "float32" if features else None,
            "num_classes": 0,
            "source": {"kind": "test"},
            "link": link,
        }
        return writer.finish(meta)


def tree_with_random_pairs(root: Path, num_nodes: int = 300, num_pairs: int = 200, seed: int = 0) -> Dataset:
    """A random tree (each node lists its children) and training pairs of random nodes, none a (child, parent)
    edge: the pairs' endpoints are independent of the nodes that draw them (fwr's independence assumption)."""
    rng = np.random.default_rng(seed)
    children = np.arange(1, num_nodes)
    parents = np.array([rng.integers(0, max(1, v // 2) if v > 3 else v) for v in children])
    indptr, indices = edges_to_csc(children, parents, num_nodes)
    parent_of = np.concatenate([[-1], parents])
    pairs = rng.integers(0, num_nodes, (3 * num_pairs, 2))
    pairs = pairs[(parent_of[pairs[:, 0]] != pairs[:, 1]) & (parent_of[pairs[:, 1]] != pairs[:, 0])][:num_pairs]
    pairs[0] = (7, 7)  # a self-pair holds its node once
    return write_link_dataset(root, indptr, indices, pairs, dst_range=(10, num_nodes))


def power_law_link_dataset(root: Path, num_nodes: int = 3000, avg_degree: int = 8, seed: int = 0, **kw) -> Dataset:
    """A power-law graph whose training pairs are 10% of its edges ``(src, dst)`` (src in dst's list)."""
    rng = np.random.default_rng(seed)
    num_edges = num_nodes * avg_degree
    src = rng.permutation(num_nodes)[np.minimum((rng.pareto(1.2, num_edges) * 3).astype(np.int64), num_nodes - 1)]
    indptr, indices = edges_to_csc(src, rng.integers(0, num_nodes, num_edges), num_nodes, dedup=True)
    owners = np.repeat(np.arange(num_nodes), np.diff(indptr))
    pick = rng.choice(indices.shape[0], indices.shape[0] // 10, replace=False)
    pairs = np.stack([indices[pick].astype(np.int64), owners[pick]], axis=1)
    return write_link_dataset(root, indptr, indices, pairs, **kw)


def replay_seed_counts(data: Dataset, seeds: EpochSeeds, batch_size: int, epochs: int) -> np.ndarray:
    """float64 [N]: batches per epoch in which each node is a seed of the link sampler (mean over epochs)."""
    sample = seeds.sampler(data, [1], seed=3)
    counts = np.zeros(data.num_nodes)
    batch_id = 0
    for epoch in range(epochs):
        for ids in iter_seed_batches(seeds.seed_ids(data), batch_size, shuffle=True, seed=3, epoch=epoch):
            counts[np.unique(sample(ids, batch_id).seeds.numpy())] += 1
            batch_id += 1
    return counts / epochs


@pytest.mark.parametrize(("how", "negatives"), [("uniform", 1), ("degree", 2), ("uniform", 0)])
def test_link_seed_chance_is_the_link_samplers(tmp_path: Path, how: str, negatives: int) -> None:
    data = tree_with_random_pairs(tmp_path / "g")
    seeds = EpochSeeds("link", negatives, how)
    weights = seeds.weights(data, 20)  # 200 pairs: 10 full batches
    expected = weights.batch_chance * weights.num_batches
    epochs = 150
    measured = replay_seed_counts(data, seeds, 20, epochs)
    q = weights.batch_chance
    sigma = np.sqrt(np.maximum(q * (1 - q), 1e-4) * weights.num_batches / epochs)
    assert np.all(np.abs(measured - expected) <= 5 * sigma), np.abs(measured - expected).max()
    in_pairs = np.bincount(data.link.pairs("train").positives.reshape(-1), minlength=data.num_nodes) > 0
    assert np.all(expected[:10][~in_pairs[:10]] == 0)  # below dst_range (10, N): no negative lands there


@pytest.mark.parametrize(("how", "negatives"), [("uniform", 1), ("degree", 2)])
def test_link_fwr_equals_the_link_samplers_reads(tmp_path: Path, how: str, negatives: int) -> None:
    """One hop on a tree (no second path, endpoints independent): fwr is the replay's read rate within 5 sigma."""
    data = tree_with_random_pairs(tmp_path / "g", seed=1)
    seeds = EpochSeeds("link", negatives, how)
    fanouts, batch, epochs = [2], 20, 150
    expected = compute_scores(data, "fwr", replay=Replay(fanouts=fanouts, batch_size=batch, seeds=seeds)).scores
    measured = (
        count_feature_reads(
            data.indptr,
            data.indices,
            seeds.seed_ids(data),
            fanouts=fanouts,
            batch_size=batch,
            epochs=epochs,
            seed=5,
            sample=seeds.sampler(data, fanouts, 5),
        )
        / epochs
    )
    q = expected / 10
    sigma = np.sqrt(np.maximum(q * (1 - q), 1e-4) * 10 / epochs)
    assert np.all(np.abs(measured - expected) <= 5 * sigma), np.abs(measured - expected).max()


def test_negative_chances_are_the_negative_samplers(tmp_path: Path) -> None:
    degrees = np.array([0, 3, 1, 0, 8, 2])
    for how in ("uniform", "degree"):
        chances = negative_chances(how, (1, 6), degrees, 6)
        draws = NegativeDestinations(how, (1, 6), degrees).draw(np.random.default_rng(0), 200_000)
        np.testing.assert_allclose(np.bincount(draws, minlength=6) / draws.size, chances, atol=0.005)
        assert chances[0] == 0 and chances.sum() == pytest.approx(1.0)


def test_link_fwr_kernels_match_the_reference_and_node_weights_are_unchanged(tmp_path: Path) -> None:
    data = power_law_link_dataset(tmp_path / "g", num_nodes=800)
    weights = EpochSeeds("link", 3, "degree").weights(data, 64)
    for mode in ("batch", "sum"):
        np.testing.assert_allclose(
            seeded_fanout_weighted_reads(data.indptr, data.indices, weights, [5, 3], mode=mode),
            fanout_weighted_reads_reference(data.indptr, data.indices, weights, [5, 3], mode=mode),
            rtol=1e-9,
            atol=1e-12,
        )
    train = np.arange(0, 800, 7)
    node = node_seed_weights(800, train, 16)
    np.testing.assert_array_equal(
        seeded_fanout_weighted_reads(data.indptr, data.indices, node, [5, 3]),
        fanout_weighted_reads(data.indptr, data.indices, train, [5, 3], batch_size=16),
    )
    np.testing.assert_allclose(seed_count_initial_scores(node.epoch_count), weighted_initial_scores(800, train))


def test_link_seed_weights_count_endpoints_and_negatives() -> None:
    pairs = np.array([[0, 1], [1, 2], [2, 2]])
    chance = np.full(4, 0.25)
    weights = link_seed_weights(4, pairs, 3, num_negatives=2, negative_chance=chance)
    np.testing.assert_allclose(weights.epoch_count, [1, 2, 3, 0] + 3 * 2 * chance)
    # every pair is in the one batch: the endpoints are seeds; node 3 only when one of 3 * 2 negatives hits it
    np.testing.assert_allclose(weights.batch_chance, [1, 1, 1, 1 - 0.75**6])
    weights = link_seed_weights(4, pairs, 1, num_negatives=0, negative_chance=None)
    np.testing.assert_allclose(weights.batch_chance, [1 / 3, 2 / 3, 2 / 3, 0])  # (2, 2) is one pair
    assert weights.num_batches == 3


def test_link_scores_and_analysis_rank_close_to_the_ideal(tmp_path: Path) -> None:
    data = power_law_link_dataset(tmp_path / "g")
    seeds = EpochSeeds("link", 1, "uniform")
    analysis = analyze_access(
        data,
        methods=["degree", "wrpr", "fwr"],
        replay=Replay(fanouts=[10, 5], batch_size=64, epochs=10, seed=3, seeds=seeds),
    )
    curves = analysis.curves
    assert curves["fwr"]["10"] >= curves["ideal"]["10"] - 0.03
    assert curves["fwr"]["10"] >= curves["degree"]["10"]
    assert analysis.config["task"] == "link" and analysis.config["num_negatives"] == 1
    wrpr = compute_scores(data, "wrpr", replay=Replay(seeds=seeds))
    assert wrpr.params["task"] == "link"
    node_like = weighted_reverse_pagerank(data.indptr, data.indices, np.arange(10))
    assert not np.allclose(wrpr.scores, node_like)


def test_link_task_errors(tmp_path: Path) -> None:
    from tests.tiering.test_access import power_law_dataset

    plain = power_law_dataset(tmp_path / "plain", num_nodes=200)
    seeds = EpochSeeds("link")
    for call in (
        lambda: compute_scores(plain, "fwr", replay=Replay(seeds=seeds)),
        lambda: analyze_access(plain, methods=["fwr"], replay=Replay(seeds=seeds)),
    ):
        with pytest.raises(DatasetError, match=r"meta.json: task='link' needs an edge split .* found none$") as info:
            call()
        assert "\n" not in str(info.value)
    with pytest.raises(OptionError, match="task"):
        EpochSeeds("edge")
    with pytest.raises(OptionError, match="num_negatives"):
        EpochSeeds("link", -1)
    with pytest.raises(OptionError, match="negative_sampling"):
        EpochSeeds("link", 1, "popular")
