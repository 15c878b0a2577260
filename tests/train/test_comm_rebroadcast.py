"""Replicas cannot drift apart (issue 22): at every rebalance window every rank takes rank 0's parameters and
buffers again. Two real gloo ranks on the CPU; rank 1's parameters are perturbed after the start-up broadcast,
as CPU and CUDA rounding would, and each rank's BatchNorm sees only its own sub-batch."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from graphtier import Dataset
from graphtier.train import TrainConfig, Trainer
from graphtier.train.dist.comm import DistContext

pytestmark = pytest.mark.slow  # two spawned ranks


def _rank(rank: int, dataset_path: str, config: TrainConfig, port: int, out_dir: str) -> None:
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        ctx = DistContext(rank=rank, world=2, devices=("cpu", "cpu"), backend="gloo")
        trainer = Trainer(Dataset.open(dataset_path), replace(config, quiet=True), dist=ctx)
        if rank == 1:
            with torch.no_grad():
                for param in trainer.model.parameters():
                    param.add_(1e-4)
        trainer.train_epoch(1)
        torch.save(trainer.model.state_dict(), Path(out_dir) / f"rank{rank}.pt")
        trainer.store.close()
    finally:
        dist.destroy_process_group()


def test_replicas_equal_rank_0_after_the_window(tiny_dataset: Dataset, tmp_path: Path) -> None:
    from graphtier.train.loop.launch import _free_port

    batches = 4
    config = TrainConfig(
        fanouts=(5, 5), batch_size=int(tiny_dataset.train_idx.shape[0]) // batches, epochs=1, hidden=8,
        norm="batch", devices=("cpu", "cpu"), balance="static", shares=(0.3, 0.7), rebalance_every=batches, cpu_threads=1,
    )  # fmt: skip
    mp.start_processes(
        _rank, args=(str(tiny_dataset.path), config, _free_port(), str(tmp_path)), nprocs=2, start_method="spawn"
    )
    first, second = (torch.load(tmp_path / f"rank{r}.pt") for r in (0, 1))
    assert first.keys() == second.keys()
    assert any(name.endswith("running_mean") for name in first)
    for name in first:
        assert torch.equal(first[name], second[name]), name
