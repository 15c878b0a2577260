"""Multi-process training on CPU ranks (gloo): exact synchronous SGD with uneven shares, the dynamic
load balancer against a slowed rank, and clean failure of one rank."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier import Dataset, OptionError
from graphtier.sampling import MiniBatch
from graphtier.train import TrainConfig, Trainer
from graphtier.train.loop.launch import RankFailed, launch, parse_devices, parse_shares
from tests.conftest import write_labelled_graph

pytestmark = pytest.mark.slow


def _params(checkpoint_dir: Path) -> dict[str, torch.Tensor]:
    return torch.load(checkpoint_dir / "checkpoint.pt", weights_only=False)["model"]


def test_uneven_shares_give_the_single_process_step(tiny_dataset: Dataset, tmp_path: Path) -> None:
    """One global batch, two CPU ranks with 30%/70% of its workload: the parameters after the step equal
    those of one single-process step on the whole batch."""
    whole_batch = int(tiny_dataset.train_idx.shape[0])
    common = dict(
        fanouts=(-1, -1),
        batch_size=whole_batch,
        epochs=1,
        hidden=16,
        dropout=0.0,
        lr=0.01,
        eval_every=1,
        eval_batch_size=1000,
    )
    single_dir, multi_dir = tmp_path / "single", tmp_path / "multi"
    Trainer(tiny_dataset, TrainConfig(checkpoint=str(single_dir), **common)).fit()
    report = launch(
        str(tiny_dataset.path),
        TrainConfig(checkpoint=str(multi_dir), devices=("cpu", "cpu"), balance="static", shares=(0.3, 0.7), **common),
    )
    assert report is not None
    seeds = [rank["seeds"] for rank in report["ranks"]]
    assert sum(seeds) == whole_batch and min(seeds) < 0.45 * whole_batch  # really uneven
    single, multi = _params(single_dir), _params(multi_dir)
    assert single.keys() == multi.keys()
    for name in single:
        assert torch.max(torch.abs(single[name] - multi[name])) <= 1e-5, name


def simulated_device_seconds(rank: int, batch: MiniBatch) -> float:
    """A simulated device per rank: 1 us per sampled edge and per seed, rank 1 twice as slow as rank 0.

    Module level, so that the spawned ranks can import it; deterministic (the sampling is seeded), so the
    balancer's decisions do not depend on the machine's load."""
    work = float(batch.num_sampled_edges + np.asarray(batch.seeds).shape[0])
    return (2.0 if rank == 1 else 1.0) * work * 1e-6


def _balancer_run(dataset_path: Path, balance: str, seed: int = 0) -> dict:
    report = launch(
        str(dataset_path),
        TrainConfig(
            fanouts=(15, 10),
            batch_size=800,
            epochs=5,
            hidden=16,
            devices=("cpu", "cpu"),
            balance=balance,
            rebalance_every=8,
            eval_every=5,
            cpu_threads=1,
            quiet=True,
            seed=seed,
        ),
        step_seconds=simulated_device_seconds,
    )
    assert report is not None
    return report


def test_dynamic_balancer_equalises_a_slowed_rank(tmp_path: Path) -> None:
    """Rank 1 is a simulated device twice as slow per unit of work (simulated step times, not wall time): the
    dynamic balancer gives it about a third of the work and the ranks finish within 10% of each other after
    at most 3 rebalances; without balancing they stay 2x apart."""
    dataset = write_labelled_graph(tmp_path / "g", num_nodes=12800, avg_degree=16, feature_dim=8)
    dynamic = _balancer_run(dataset.path, "dynamic")
    history = dynamic["balancer"]["ratio_history"]
    assert len(history) >= 5
    # history[k] holds the compute times of window k, run with the shares of rebalance k - 1
    assert history[1]["imbalance"] > 0.25  # it started clearly unbalanced
    assert min(entry["imbalance"] for entry in history[1:5]) <= 0.10, history
    assert all(entry["imbalance"] <= 0.10 for entry in history[-2:]), history  # and it stays balanced
    assert 0.25 < dynamic["balancer"]["final_shares"][1] < 0.4  # the slow rank got about a third
    off = _balancer_run(dataset.path, "off")
    assert all(entry["imbalance"] > 0.10 for entry in off["balancer"]["ratio_history"][1:])
    assert off["balancer"]["final_shares"] == [0.5, 0.5]
    for report in (dynamic, off):
        assert {"device", "seeds", "compute_seconds", "wait_seconds"} <= set(report["ranks"][0])


def rank_1_fails_at_iteration_1(rank: int, iteration: int) -> None:
    """A step hook (module level, so that the spawned ranks can import it): rank 1 raises at its second step."""
    if (rank, iteration) == (1, 1):
        raise RuntimeError(f"test hook: rank {rank} fails at iteration {iteration}")


def test_a_failing_rank_stops_all_ranks(tiny_dataset: Dataset) -> None:
    with pytest.raises(RankFailed, match=r"rank 1 \(cpu\) failed: RuntimeError: test hook"):
        launch(
            str(tiny_dataset.path),
            TrainConfig(fanouts=(5, 5), batch_size=50, hidden=8, devices=("cpu", "cpu")),
            step_hook=rank_1_fails_at_iteration_1,
        )


def test_device_and_share_parsing() -> None:
    assert parse_devices("cpu, cpu") == ("cpu", "cpu")
    assert parse_shares("0.25,0.75") == (0.25, 0.75)
    assert parse_shares("0.1,0.2,0.7") == (0.1, 0.2, 0.7)  # 1 within 1e-6 despite binary rounding
    for bad in ("0.3,0.3", "1,3", "0.5,0.500002"):
        with pytest.raises(OptionError, match="shares= expected values summing to 1"):
            parse_shares(bad)
    with pytest.raises(OptionError, match="devices="):
        parse_devices("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(OptionError, match="CUDA is not available"):
            parse_devices("cpu,cuda:0")
    with pytest.raises(OptionError, match="shares="):
        parse_shares("0.5,-1")


def test_shares_must_match_devices(tiny_dataset: Dataset) -> None:
    with pytest.raises(OptionError, match="shares="):
        TrainConfig(devices=("cpu", "cpu"), shares=(1.0,)).validate(tiny_dataset)
    with pytest.raises(OptionError, match="summing to 1"):
        TrainConfig(devices=("cpu", "cpu"), shares=(0.3, 0.3)).validate(tiny_dataset)


def test_a_diverging_distributed_run_stops_every_rank_with_one_line(tiny_dataset: Dataset) -> None:
    config = TrainConfig(fanouts=(5, 5), batch_size=50, hidden=8, devices=("cpu", "cpu"), lr=1e30, epochs=3)
    with pytest.raises(
        RankFailed, match=r"rank \d \(cpu\) failed: .*training loss became (nan|inf).*lower --lr"
    ) as info:
        launch(str(tiny_dataset.path), config)
    assert "\n" not in str(info.value).strip()
