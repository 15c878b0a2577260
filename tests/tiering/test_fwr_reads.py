"""The fwr score against the real sampler: exact on trees, close to the measured ranking on a power-law graph."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier._choices import DEFAULT_SCORE, SCORE_METHODS
from graphtier.dataset.csc import edges_to_csc
from graphtier.graph.scores import fanout_weighted_reads
from graphtier.tiering.access import analyze_access
from graphtier.tiering.hotness import compute_scores
from graphtier.tiering.reads import count_feature_reads
from graphtier.tiering.replay import Replay
from tests.tiering.test_access import power_law_dataset

pytest.importorskip("graphtier.sampling.neighbor.sampler")


def random_tree(num_nodes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """CSC of a random tree rooted at 0: every node lists its children (drawn by the sampler)."""
    rng = np.random.default_rng(seed)
    parents = np.array([rng.integers(0, max(1, v // 2) if v > 3 else v) for v in range(1, num_nodes)])
    return edges_to_csc(np.arange(1, num_nodes), parents, num_nodes)


def test_fwr_equals_sampled_read_probability_on_a_tree() -> None:
    indptr, indices = random_tree(40, seed=5)
    fanouts = [2, 3]
    expected = fanout_weighted_reads(indptr, indices, np.array([0]), fanouts, batch_size=1)
    epochs = 1500
    counts = count_feature_reads(indptr, indices, np.array([0]), fanouts=fanouts, batch_size=1, epochs=epochs, seed=9)
    measured = counts / epochs
    sigma = np.sqrt(np.maximum(expected * (1 - expected), 1e-4) / epochs)
    assert np.all(np.abs(measured - expected) <= 5 * sigma + 1e-9), np.abs(measured - expected).max()
    assert np.all(expected[counts == 0] < 0.01)  # nothing readable is scored 0 by chance


def test_fwr_ranks_close_to_the_ideal_and_above_wrpr(tmp_path: Path) -> None:
    data = power_law_dataset(tmp_path / "g", num_nodes=4000, train_share=0.02)
    analysis = analyze_access(
        data, methods=["wrpr", "fwr", "presample"], replay=Replay(fanouts=[10, 5], batch_size=32, epochs=20, seed=3)
    )
    curves = analysis.curves
    assert curves["fwr"]["10"] >= curves["wrpr"]["10"]
    assert curves["fwr"]["10"] >= curves["ideal"]["10"] - 0.03
    assert curves["fwr"]["10"] >= curves["presample"]["10"] - 0.02


def test_compute_scores_dispatches_fwr(tmp_path: Path) -> None:
    assert DEFAULT_SCORE in SCORE_METHODS and {"fwr", "fwr-sum"} <= set(SCORE_METHODS)
    data = power_law_dataset(tmp_path / "g", num_nodes=500)
    result = compute_scores(data, "fwr", replay=Replay(fanouts=[5, 5], batch_size=4))
    direct = fanout_weighted_reads(data.indptr, data.indices, data.train_idx, [5, 5], batch_size=4)
    np.testing.assert_array_equal(result.scores, direct)
    assert result.params["mode"] == "batch" and result.params["fanouts"] == [5, 5]
    assert compute_scores(data, "fwr-sum", replay=Replay(fanouts=[5, 5])).params["mode"] == "sum"
