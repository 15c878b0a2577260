"""--temporal with --sample-on gpu: the whole training path (node and link tasks) on the device temporal sampler, run
here in its device-on-cpu mode (a CUDA-less machine: the placement's CUDA check is lifted, the topology stays on the
CPU), trains on exactly the CPU sampler's batches."""

from __future__ import annotations

import pytest
import torch

from graphtier import Dataset
from graphtier.memory import PlacementSpec
from graphtier.train import TrainConfig, train
from tests.dataset.importers.helpers import assert_user_error, run_cli
from tests.train.test_temporal_link import SMALL as LINK
from tests.train.test_temporal_link import time_split  # noqa: F401  (the module's timed dataset)
from tests.train.test_temporal_node import SMALL as NODE
from tests.train.test_temporal_node import arxiv_like  # noqa: F401  (the module's node-timed dataset)


def both_ways(dataset: Dataset, monkeypatch: pytest.MonkeyPatch, **options: object) -> tuple[dict, dict]:
    """The reports of a run sampling on the CPU and of one sampling on the device path (device-on-cpu)."""
    on_cpu = train(dataset, TrainConfig(**options))
    monkeypatch.setattr(PlacementSpec, "check_device", lambda self, device: None)
    on_device = train(dataset, TrainConfig(sample_on="gpu", topology_budget="50%", **options))
    return on_cpu, on_device


def assert_same_training(on_cpu: dict, on_device: dict) -> None:
    assert len(on_device["epochs"]) == len(on_cpu["epochs"]) > 0
    for cpu_epoch, device_epoch in zip(on_cpu["epochs"], on_device["epochs"]):
        assert device_epoch["sampled_edges"] == cpu_epoch["sampled_edges"] > 0
        assert device_epoch["loss"] == pytest.approx(cpu_epoch["loss"], rel=1e-5)
        # the device path read the tiered topology (its GPU tier); the CPU path reads host memory only
        assert device_epoch["topology_bytes_by_tier"]["gpu"] > 0 == cpu_epoch["topology_bytes_by_tier"]["gpu"]


@pytest.mark.parametrize("strategy", ["uniform", "recent"])
def test_node_task_trains_on_the_cpu_samplers_batches(
    arxiv_like: Dataset,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    strategy: str,
) -> None:
    on_cpu, on_device = both_ways(arxiv_like, monkeypatch, temporal=strategy, **NODE)
    assert_same_training(on_cpu, on_device)
    assert on_device["final"]["test_acc"] == pytest.approx(on_cpu["final"]["test_acc"])


def test_link_task_trains_on_the_cpu_samplers_batches(
    time_split: Dataset,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    on_cpu, on_device = both_ways(time_split, monkeypatch, temporal="uniform", epochs=2, seed=0, **LINK)
    assert_same_training(on_cpu, on_device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
def test_the_cli_takes_temporal_with_gpu_sampling_and_names_the_missing_gpu(time_split: Dataset) -> None:  # noqa: F811
    """--temporal no longer refuses --sample-on gpu; without CUDA the one-line error names --sample-on."""
    result = run_cli("train", str(time_split.path), "--task", "link", "--temporal", "uniform", "--sample-on", "gpu")
    assert_user_error(result, "--sample-on gpu: needs a CUDA device")
    assert "--temporal" not in result.stderr
