"""Temporal link prediction on a typed dataset: a relation's edges split by time (``--split-by time
--split-relation``, manifest and ``prepare movielens --typed``), each pair sampled at its time with the typed
temporal sampler, EdgeBank on the relation, and the static snapshot without ``--temporal``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier import Dataset, OptionError
from graphtier.dataset.edges.edgebank import edgebank_scores, edgebank_split_scores
from graphtier.dataset.importers.formats.movielens import import_movielens
from graphtier.graphstore import GraphStore
from graphtier.graphstore.links import typed_link_sampler
from graphtier.memory import make_topology
from graphtier.train import train
from graphtier.train.loop.task import TypedLinkTask, make_task
from graphtier.train.options.spec import TaskSpec
from tests.dataset.importers.helpers import assert_user_error, run_cli
from tests.dataset.importers.movielens_files import write_movielens
from tests.dataset.importers.test_manifest_time import write_manifest

RELATION = ("user", "rates", "item")


@pytest.fixture(scope="module")
def typed_split(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    root = tmp_path_factory.mktemp("typed-time")
    result = run_cli("prepare", "manifest", str(write_manifest(root)), str(root / "ds"), "--add-reverse",
                     "--edge-split", "0.6,0.2,0.2", "--split-relation", "user,rates,item", "--split-by", "time")  # fmt: skip
    assert result.returncode == 0, result.stderr
    return Dataset.open(root / "ds")


def relation_edges(dataset: Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Local (src, dst) and time of every stored edge of the split relation."""
    schema = dataset.schema
    rel = schema.relation(RELATION)
    indptr, indices = np.asarray(dataset.indptr), np.asarray(dataset.indices)
    count = schema.node_type(rel.dst).count
    ptr = indptr[rel.row_offset : rel.row_offset + count + 1]
    dst = np.repeat(np.arange(count), np.diff(ptr))
    src = indices[ptr[0] : ptr[-1]] - schema.node_type(rel.src).offset
    return src, dst, np.asarray(dataset.edge_time)[ptr[0] : ptr[-1]]


def test_a_relation_splits_by_time_and_keeps_its_edges(typed_split: Dataset) -> None:
    link = typed_split.link
    assert link is not None and link.by_time and link.meta["relation"] == list(RELATION)
    assert link.meta["reverse"] == "rev_rates" and link.meta["held_out_edges"] == 0
    src, dst, time = relation_edges(typed_split)
    events = sorted(zip(src.tolist(), dst.tolist(), time.tolist()))
    pairs = {name: link.pairs(name) for name in ("train", "valid", "test")}
    held = sorted(
        (int(s), int(d), int(t))
        for p in pairs.values()
        for (s, d), t in zip(np.asarray(p.positives).tolist(), np.asarray(p.positive_times).tolist())
    )
    assert held == events  # every edge of the relation, once, at its time; none left the graph
    assert int(np.max(pairs["train"].positive_times)) <= link.meta["valid_from"] <= link.meta["test_from"]
    assert int(np.min(pairs["test"].positive_times)) == link.meta["test_from"]
    edge_set = set(zip(src.tolist(), dst.tolist()))
    negatives = pairs["test"].negative_pairs()
    assert negatives.shape[0] == pairs["test"].num_positives
    assert not any((int(s), int(d)) in edge_set for s, d in negatives)  # never an edge of the relation
    assert int(negatives[:, 0].max()) < 30 and int(negatives[:, 1].max()) < 20  # local user / item ids


def test_edgebank_on_a_relation_is_the_earliest_edge_before_each_pair(typed_split: Dataset) -> None:
    src, dst, time = relation_edges(typed_split)
    earliest: dict[tuple[int, int], int] = {}
    for s, d, t in zip(src.tolist(), dst.tolist(), time.tolist()):
        earliest[(s, d)] = min(t, earliest.get((s, d), t))
    pairs = np.array([[s, d] for s in range(30) for d in range(20)], dtype=np.int64)
    at = np.full(pairs.shape[0], 45, dtype=np.int64)
    expected = [float(earliest.get((int(s), int(d)), 10**9) < 45) for s, d in pairs]
    np.testing.assert_array_equal(edgebank_scores(typed_split, pairs, at), expected)
    positive, negative = edgebank_split_scores(typed_split, "test")
    assert positive.shape == (typed_split.link.pairs("test").num_positives,) and not negative.any()
    with pytest.raises(OptionError, match="pairs: expected local ids of item in \\[0, 20\\), found up to 25"):
        edgebank_scores(typed_split, np.array([[0, 25]]), np.array([1]))


@pytest.mark.parametrize("temporal", ["recent", None])
def test_typed_temporal_link_training(typed_split: Dataset, temporal: str | None) -> None:
    store = GraphStore.open(typed_split, seed=0)
    task = make_task(TaskSpec(task="link"), store, temporal=temporal)
    assert isinstance(task, TypedLinkTask) and task.times is not None
    batch = task.train_sampler(store, None, (4, 4), 0)(np.arange(40), 0)  # type: ignore[arg-type]
    times = np.asarray(typed_split.link.pairs("train").positive_times)[:40]
    expected = times if temporal else np.full(40, typed_split.link.meta["valid_from"])
    np.testing.assert_array_equal(batch.n_time["user"].numpy()[batch.src_index.numpy()[:40]], expected)
    report = train(typed_split, task="link", model="hsage", epochs=2, batch_size=64, hidden=16, fanouts=(4, 4),
                   temporal=temporal, lr=0.01, seed=0)  # fmt: skip
    final = report["final"]
    assert final["method"] == ("temporal" if temporal else "static snapshot")
    for key in ("test_auc", "test_ap", "valid_auc", "test_edgebank_auc"):
        assert final[key] is not None and 0.0 <= final[key] <= 1.0, key


def test_typed_temporal_link_from_the_cli_and_its_errors(typed_split: Dataset, tmp_path: Path) -> None:
    done = run_cli("train", str(typed_split.path), "--task", "link", "--model", "rgcn", "--temporal", "uniform",
                   "--epochs", "1", "--fanouts", "3,3", "--hidden", "8", "--batch-size", "128")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "at each pair's time" in done.stdout and "EdgeBank test auc" in done.stdout
    exact = run_cli("train", str(typed_split.path), "--task", "link", "--model", "rgcn", "--temporal", "uniform",
                    "--full-inference", "--epochs", "1")  # fmt: skip
    assert_user_error(exact, "scores by sampling at each seed's time", "--full-inference")
    node = run_cli("train", str(typed_split.path), "--task", "node", "--model", "rgcn", "--temporal", "uniform")
    assert node.returncode == 2 and "Traceback" not in node.stderr


def test_typed_movielens_splits_its_ratings_by_time(tmp_path: Path) -> None:
    folder, ratings = write_movielens(tmp_path / "ml")
    dataset = import_movielens(folder, tmp_path / "d", typed=True, split_by="time", edge_split=(0.7, 0.15, 0.15))
    link = dataset.link
    assert link is not None and link.by_time and link.meta["relation"] == list(RELATION)
    counts = [link.pairs(name).num_positives for name in ("train", "valid", "test")]
    assert sum(counts) == ratings.shape[0] and dataset.schema.relation(RELATION).num_edges == ratings.shape[0]
    test = link.pairs("test")
    assert int(np.min(test.positive_times)) >= int(np.max(link.pairs("train").positive_times))
    assert int(test.negative_pairs()[:, 1].max()) < 40  # local item ids
    shown = run_cli("info", str(dataset.path))
    assert shown.returncode == 0 and "relation rates (user -> item)" in shown.stdout
    assert "split by time" in " ".join(shown.stdout.split()) and "left rev_rates" not in shown.stdout


def test_timed_typed_link_batches_on_a_device_topology_are_the_cpu_ones(typed_split: Dataset) -> None:
    """A store over a tiered topology (here on the CPU: what --sample-on gpu builds on CUDA) samples the typed time
    split with DeviceTemporalSampler with the schema: the CPU store's batches, node times included."""
    pairs = typed_split.link.pairs("train")
    positives, times = np.asarray(pairs.positives), np.asarray(pairs.positive_times)
    options = {"num_negatives": 2, "times": times, "temporal": "recent", "exclude": False}
    with GraphStore.open(typed_split, num_threads=1, seed=4) as store:
        expected = typed_link_sampler(store, (3, 3), positives, **options).sample(np.arange(30), 2)
    topology = make_topology(typed_split.indptr, typed_split.indices, device=torch.device("cpu"),
                             topology_budget="50%", log=lambda _: None)  # fmt: skip
    store = GraphStore(typed_split, None, topology=topology, seed=4, picks="numba")
    batch = typed_link_sampler(store, (3, 3), positives, **options).sample(np.arange(30), 2)
    for name in ("src_index", "dst_index", "label"):
        assert torch.equal(getattr(batch, name), getattr(expected, name)), name
    for t in expected.n_id:
        assert torch.equal(batch.n_id[t], expected.n_id[t]) and torch.equal(batch.n_time[t], expected.n_time[t])
    for got, want in zip(batch.blocks, expected.blocks):
        for key, rel in want.relations.items():
            assert torch.equal(got.relations[key].col, rel.col) and torch.equal(got.relations[key].edge_id, rel.edge_id)
    assert store.traffic()["topology"].requested > 0
