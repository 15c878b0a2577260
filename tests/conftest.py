"""Shared test fixtures: small graphs and datasets built in a temporary directory."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset import Dataset, DatasetWriter
from graphtier.dataset.csc import edges_to_csc
from graphtier.dataset.edges.link_split import LinkPairs, LinkSplit
from tests.dataset.importers.helpers import REPO_ROOT, CliResult

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


def _non_edges(rng: np.random.Generator, edge_keys: np.ndarray, num_nodes: int, count: int) -> np.ndarray:
    """int64 [count, 2] uniform node pairs that are neither self-loops nor edges (keys src * N + dst, both ways)."""
    out = np.empty((0, 2), np.int64)
    while out.shape[0] < count:
        pairs = rng.integers(0, num_nodes, size=(2 * count + 16, 2))
        keys = pairs[:, 0] * num_nodes + pairs[:, 1]
        pairs = pairs[(pairs[:, 0] != pairs[:, 1]) & ~np.isin(keys, edge_keys)]
        out = np.concatenate([out, pairs])
    return out[:count].astype(np.int64)


def write_link_dataset(
    output: Path,
    source: Dataset,
    *,
    valid: float = 0.05,
    test: float = 0.1,
    eval_negatives: int = 0,
    seed: int = 0,
) -> Dataset:
    """``source`` (an undirected dataset) with a random edge split written by hand: the held-out valid/test edges
    (both directions) leave the graph, GAE-style negative pairs (or ``eval_negatives`` K per positive) are
    uniform non-edges of the full graph, ``link_train.npy`` lists the remaining edges once (src < dst)."""
    rng = np.random.default_rng(seed)
    n = source.num_nodes
    indptr, indices = np.asarray(source.indptr), np.asarray(source.indices)
    dst_all = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    src_all = indices.astype(np.int64)
    once = src_all < dst_all
    edges = np.stack([src_all[once], dst_all[once]], axis=1)[rng.permutation(int(once.sum()))]
    n_valid, n_test = int(round(valid * edges.shape[0])), int(round(test * edges.shape[0]))
    held = {"valid": edges[:n_valid], "test": edges[n_valid : n_valid + n_test]}
    train = edges[n_valid + n_test :]
    keys = src_all * n + dst_all  # the full graph's edges, both directions (undirected)
    splits = {"train": LinkPairs(train)}
    for name, positives in held.items():
        if eval_negatives:
            negatives = _non_edges(rng, keys, n, positives.shape[0] * eval_negatives)[:, 1]
            # a destination that is an edge of this source is possible but rare; fine for tests
            negatives = negatives.reshape(positives.shape[0], eval_negatives)
        else:
            negatives = _non_edges(rng, keys, n, positives.shape[0])
        splits[name] = LinkPairs(positives, negatives, per_positive=eval_negatives > 0)
    kept = np.concatenate([train, train[:, ::-1]])
    new_indptr, new_indices = edges_to_csc(kept[:, 0], kept[:, 1], n, dedup=True, drop_self_loops=True)
    meta = {k: v for k, v in source.meta.items() if k not in ("num_edges", "link")}
    link_meta = {"eval_negatives": eval_negatives, "dst_range": [0, n], "undirected": True, "method": "tests"}
    with DatasetWriter(output) as writer:
        writer.save("indptr", new_indptr)
        writer.save("indices", new_indices)
        writer.save("features", np.asarray(source.features))
        for name in ("labels", "train_idx", "valid_idx", "test_idx"):
            array = getattr(source, name)
            if array is not None:
                writer.save(name, np.asarray(array))
        meta["link"] = LinkSplit(link_meta, splits).save(writer)
        meta["num_edges"] = int(new_indices.shape[0])
        return writer.finish(meta)


@pytest.fixture
def tiny_link_dataset(tmp_path: Path) -> Dataset:
    """The 400-node tiny dataset with a hand-made 0.85/0.05/0.1 edge split (GAE negative pairs)."""
    return write_link_dataset(tmp_path / "tiny_link", write_labelled_graph(tmp_path / "tiny"))


@pytest.fixture
def tiny_dataset(tmp_path: Path) -> Dataset:
    """A 400-node, 4-class labelled dataset with a train/valid/test split."""
    return write_labelled_graph(tmp_path / "tiny")


# Runs graphtier's command-line entry point once per argv in one interpreter (one start-up of torch and PyG, ~5 s,
# instead of one per case), through the importer tests' in-process runner; anything that escapes the entry point
# ends the interpreter with its traceback. For tests of one-line errors; a test of signals or of a whole run
# uses its own process.
_CLI_RUNS = r"""
import json, sys
from dataclasses import asdict
from tests.dataset.importers.helpers import run_cli
print(json.dumps([asdict(run_cli(*argv)) for argv in json.loads(sys.argv[1])]))
"""


def run_cli_in_one_process(argvs: list[list[str]]) -> list[CliResult]:
    """``graphtier ARGV`` for each of ``argvs``, in one subprocess: exit code, stdout and stderr of each."""
    done = subprocess.run(
        [sys.executable, "-c", _CLI_RUNS, json.dumps(argvs)], capture_output=True, text=True, timeout=600, cwd=REPO_ROOT
    )
    assert done.returncode == 0, done.stderr
    return [CliResult(**result) for result in json.loads(done.stdout.strip().splitlines()[-1])]
