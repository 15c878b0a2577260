"""Shared test fixtures: small graphs and datasets built in a temporary directory."""

from __future__ import annotations

import signal
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset import Dataset, DatasetWriter
from graphtier.dataset.csc import edges_to_csc

SHARED_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data"


def default_sigint() -> None:
    """``preexec_fn`` of a child whose Ctrl-C is under test: restore SIGINT's default disposition.

    A shell that starts pytest in the background ignores SIGINT, a child inherits that, and a Python started
    with SIGINT ignored never raises KeyboardInterrupt; with the default restored it installs its handler.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def shared_data(name: str) -> Path:
    """Path of a real dataset under ../shared/data; skips the test when it is not there."""
    path = (SHARED_DATA / name).resolve()
    if not path.exists():
        pytest.skip(f"real data {path} not available")
    return path


def write_labelled_graph(
    output: Path,
    *,
    num_nodes: int = 400,
    num_classes: int = 4,
    feature_dim: int = 16,
    avg_degree: int = 8,
    homophily: float = 0.9,
    noise: float = 2.0,
    seed: int = 0,
    feature_dtype: str = "float32",
) -> Dataset:
    """A small symmetric homophilous graph whose labels the neighbourhood predicts better than the features."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, num_nodes)
    num_edges = num_nodes * avg_degree // 2
    src = rng.integers(0, num_nodes, num_edges)
    same = rng.random(num_edges) < homophily
    by_class = [np.flatnonzero(labels == c) for c in range(num_classes)]
    dst = rng.integers(0, num_nodes, num_edges)
    for e in np.flatnonzero(same):
        members = by_class[labels[src[e]]]
        dst[e] = members[rng.integers(0, members.size)]
    both_src = np.concatenate([src, dst])
    both_dst = np.concatenate([dst, src])
    indptr, indices = edges_to_csc(both_src, both_dst, num_nodes, dedup=True, drop_self_loops=True)
    centroids = rng.normal(size=(num_classes, feature_dim))
    features = (centroids[labels] + noise * rng.normal(size=(num_nodes, feature_dim))).astype(feature_dtype)
    order = rng.permutation(num_nodes)
    n_train, n_valid = num_nodes // 2, num_nodes // 4
    with DatasetWriter(output) as writer:
        writer.save("indptr", indptr)
        writer.save("indices", indices)
        writer.save("features", features)
        writer.save("labels", labels.astype(np.int64))
        writer.save("train_idx", np.sort(order[:n_train]).astype(np.int64))
        writer.save("valid_idx", np.sort(order[n_train : n_train + n_valid]).astype(np.int64))
        writer.save("test_idx", np.sort(order[n_train + n_valid :]).astype(np.int64))
        return writer.finish(
            {
                "name": "tiny",
                "num_nodes": num_nodes,
                "num_edges": int(indices.shape[0]),
                "directed": False,
                "feature_dim": feature_dim,
                "feature_dtype": feature_dtype,
                "num_classes": num_classes,
                "source": {"importer": "tests.conftest.write_labelled_graph", "options": {"seed": seed}},
            }
        )


@pytest.fixture
def tiny_dataset(tmp_path: Path) -> Dataset:
    """A 400-node, 4-class labelled dataset with a train/valid/test split."""
    return write_labelled_graph(tmp_path / "tiny")
