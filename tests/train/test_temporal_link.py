"""--task link on a time split: --temporal samples each pair at its time (no edge at or after it is read), the
static snapshot reads the training period only, final metrics are sampled with EdgeBank beside them, and the
options a time split cannot honour are refused in one line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from graphtier import Dataset, OptionError
from graphtier.cli import cli
from graphtier.dataset.importers.formats.edgelist import import_edgelist
from graphtier.graphstore import GraphStore
from graphtier.train import TrainConfig, train
from graphtier.train.loop.task import LinkTask, make_task
from graphtier.train.options.spec import TaskSpec

SMALL = dict(task="link", batch_size=64, hidden=16, fanouts=(5, 5), eval_batch_size=256, lr=0.01)


def timed_edges(path: Path, nodes: int = 200, edges: int = 3000, seed: int = 0) -> Path:
    """A text edge list ``src dst time``: two communities, so that structure predicts links."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, nodes, edges)
    same = rng.random(edges) < 0.9
    other = rng.integers(0, nodes // 2, edges) * 2 + (src % 2)  # the source's community (parity)
    dst = np.where(same, other, rng.integers(0, nodes, edges))
    keep = src != dst
    time = rng.integers(1_000, 100_000, edges)
    np.savetxt(path, np.stack([src[keep], dst[keep], time[keep]], axis=1), fmt="%d")
    return path


@pytest.fixture(scope="module")
def time_split(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    root = tmp_path_factory.mktemp("timed")
    return import_edgelist(
        timed_edges(root / "edges.txt"), root / "ds", time_column=2, edge_split=(0.7, 0.15, 0.15), split_by="time",
        synthetic_features=16, seed=0,
    )  # fmt: skip


def train_batch(dataset: Dataset, temporal: str | None):  # noqa: ANN201
    store = GraphStore.open(dataset, seed=0)
    task = make_task(TaskSpec(task="link"), store, temporal=temporal)
    assert isinstance(task, LinkTask)
    sample = task.train_sampler(store, None, (5, 5), 0)  # type: ignore[arg-type]
    return store, task, sample(np.arange(200), 0)


@pytest.mark.parametrize("temporal", ["uniform", "recent"])
def test_a_temporal_batch_reads_only_the_past_of_each_pair(time_split: Dataset, temporal: str) -> None:
    _, task, batch = train_batch(time_split, temporal)
    times = np.asarray(time_split.link.pairs("train").positive_times)[:200]
    n_time = batch.n_time.numpy()
    assert np.array_equal(n_time[batch.src_index.numpy()[:200]], times)
    edge_time = np.asarray(time_split.edge_time)
    for block in batch.blocks:
        _, d = block.edge_index.numpy()
        assert np.all(edge_time[block.edge_id.numpy()] < n_time[d])
    assert batch.excluded_edges == 0 and task.times is not None and task.times.static_time is None


def test_the_static_snapshot_reads_the_training_period_without_the_targets(time_split: Dataset) -> None:
    _, task, batch = train_batch(time_split, None)
    valid_from = int(time_split.link.meta["valid_from"])
    assert task.times is not None and task.times.static_time == valid_from
    assert np.all(batch.n_time.numpy() == valid_from)
    edge_time = np.asarray(time_split.edge_time)
    for block in batch.blocks:
        if block.edge_id is not None:
            assert np.all(edge_time[block.edge_id.numpy()] < valid_from)
    assert batch.excluded_edges > 0  # the training targets are in the snapshot: removed as on a random split


@pytest.mark.parametrize("temporal", ["uniform", None])
def test_training_on_a_time_split_reports_sampled_metrics_and_edgebank(
    time_split: Dataset, temporal: str | None
) -> None:
    report = train(time_split, epochs=2, temporal=temporal, **SMALL)
    final = report["final"]
    assert final["method"] == ("temporal" if temporal else "static snapshot")
    for key in ("valid_auc", "test_auc", "test_ap", "test_edgebank_auc", "test_edgebank_ap"):
        assert final[key] is not None and 0.0 <= final[key] <= 1.0, key
    assert "test_popularity_auc" not in final  # an in-degree over the whole graph would read the future
    assert report["epochs"][-1]["loss"] < report["epochs"][0]["loss"]


def test_the_cli_trains_with_temporal_and_prints_edgebank(time_split: Dataset) -> None:
    result = CliRunner().invoke(
        cli, ["train", str(time_split.path), "--task", "link", "--temporal", "recent", "--epochs", "1", "--fanouts",
              "5,5", "--hidden", "8", "--batch-size", "128"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "EdgeBank test auc" in result.output and "sampled at each pair's time, recent" in result.output


def test_what_a_time_split_cannot_do_is_refused(time_split: Dataset, tiny_link_dataset: Dataset) -> None:
    with pytest.raises(OptionError, match="temporal.* needs a time split.*random split"):
        TrainConfig(temporal="uniform", **SMALL).validate(tiny_link_dataset)
    with pytest.raises(OptionError, match="a time split is scored by sampling at each pair's time"):
        TrainConfig(full_inference=True, **SMALL).validate(time_split)
    with pytest.raises(OptionError, match="temporal.*neighbour sampler in one process.*sampler='shadow'"):
        TrainConfig(temporal="uniform", sampler="shadow")
    with pytest.raises(OptionError, match="temporal= expected one of uniform, recent"):
        TrainConfig(temporal="latest", **SMALL)


def test_the_fingerprint_sees_other_edge_times(time_split: Dataset, tmp_path: Path) -> None:
    """A saved model or checkpoint of a timed dataset refuses the same graph with other times."""
    import shutil

    from graphtier.train.persist.fingerprint import dataset_fingerprint

    copy = tmp_path / "copy"
    shutil.copytree(time_split.path, copy)
    times = np.load(copy / "edge_time.npy")
    times[0] -= 1  # still within the list's order and the range, so the copy opens
    np.save(copy / "edge_time.npy", times)
    meta = Dataset.open(copy, validate=False)
    assert dataset_fingerprint(meta)["hash"] != dataset_fingerprint(time_split)["hash"]
