"""What the training loop does together with other ranks: nothing in one process, synchronous SGD in a group.

The trainer (:mod:`graphtier.train.loop.trainer`) has one epoch loop. Everything that differs between one process
and several lives behind a :class:`Collective`: which seeds this process trains on, how its loss is scaled,
what happens between ``backward()`` and the end of the step, and how the epoch's totals are summed.

- :class:`SingleProcess`: the whole batch, the mean loss, the optimizer step; a non-finite loss stops the
  run at its batch.
- :class:`RankGroup` (Unified CPU-GPU Protocol): every rank builds the same global batches and trains on its share of each
  (cut by the load balancer's shares, published per rebalance window); its loss is the sum of per-seed losses
  divided by the global batch size, so the gradients summed by the all-reduce are those of the mean loss over
  the global batch. At each window's end the balancer updates the shares and rank 0's parameters are
  broadcast again. The epoch totals are summed over the ranks, and a non-finite sum stops every rank.
"""

from __future__ import annotations

import functools
import math
import os
import time
from typing import Any, Callable, Iterable, Iterator

import numpy as np
import torch
from torch import nn

from graphtier.graphstore import GraphStore
from graphtier.sampling import MiniBatch
from graphtier.train.dist.balancer import LoadBalancer, cached_workload, estimate_workload, split_by_workload
from graphtier.train.dist.comm import (
    DistContext,
    ShareSchedule,
    all_gather_floats,
    all_gather_rows,
    all_reduce_gradients,
    all_reduce_sum,
    barrier,
    broadcast_parameters,
    broadcast_tensor,
)
from graphtier.train.loop.feed import SampleFn
from graphtier.train.loop.pipeline import PreparedBatch
from graphtier.train.loop.report import NonFiniteLossError, RunReport
from graphtier.train.loop.tally import EpochTally
from graphtier.train.loop.task import NodeTask, Task
from graphtier.train.nn.tiered_embedding import tiered_embeddings
from graphtier.train.options.config import TrainConfig

StepSeconds = Callable[[int, MiniBatch], float]
"""``(rank, mini-batch) -> seconds``: the compute time a rank's training step on its sub-batch is recorded as,
in place of the measured time (a simulated device for deterministic tests of the load balancer)."""

StepHook = Callable[[int, int], None]
"""``(rank, iteration) -> None``: called on every rank after its backward pass, before the gradient all-reduce
(tests make one rank fail there). Spawned ranks import it, so it must be a module-level function."""

WORKLOAD_SEED_OFFSET = 104729  # the workload estimate's sampler draws other neighbours than training's


def rank_threads(config: TrainConfig, world: int) -> int:
    """Threads of one rank: ``--cpu-threads``, else the machine's cores split evenly over the ``world`` ranks."""
    return config.distributed.cpu_threads or max(1, (os.cpu_count() or 1) // world)


class EpochSteps:
    """One epoch's steps in one process (the base class: no other rank).

    Args:
        epoch: the epoch number (1-based), for messages.
        global_batches: the epoch's seed batches, the same on every rank.
        sample: the training sampler.
        tally: the sums this process accumulates (loss sums are added here).
        lr: ``--lr``, named in the non-finite loss message.
        task: the run's task (its loss).
    """

    def __init__(
        self, epoch: int, global_batches: list[np.ndarray], sample: SampleFn, tally: EpochTally, lr: float,
        task: Task,
    ) -> None:  # fmt: skip
        self.epoch = epoch
        self.task = task
        self.global_batches = global_batches
        self.tally = tally
        self.lr = lr
        self.sample: SampleFn = sample
        self.seed_batches: Iterable[np.ndarray] = global_batches

    def loss(self, outputs: torch.Tensor, y: torch.Tensor, index: int) -> torch.Tensor:
        """The loss to differentiate for batch ``index``: the task's mean loss over the batch."""
        return self.task.loss(outputs, y)

    def step(
        self, optimizer: torch.optim.Optimizer, loss: torch.Tensor | None, index: int, item: PreparedBatch, since: float
    ) -> tuple[float, dict[str, Any]]:
        """Apply the step after ``backward()``; returns the end of the train stage and the progress fields.

        ``since`` is when this iteration started waiting for its batch. Raises
        :class:`NonFiniteLossError` when the loss is not finite.
        """
        optimizer.step()
        assert loss is not None
        value = float(loss.detach())
        if not math.isfinite(value):
            raise NonFiniteLossError(
                f"--lr {self.lr}: the training loss became {value} at epoch {self.epoch}, batch {index + 1} "
                "(the model diverged; try a lower --lr)"
            )
        self.tally.loss_sum += value * int(item.y.shape[0])
        return time.perf_counter(), {"loss": value}

    def close(self) -> None:
        """Release what the producer may wait for (called before the producer is closed)."""

    def finish(self, total_seconds: float) -> dict[str, Any]:
        """The epoch's record from the tally."""
        tally = self.tally
        return tally.record(len(self.global_batches), total_seconds, tally.loss_sum, tally.correct, tally.seen)


class Collective:
    """The ranks the training loop works with; this base class is one process alone (:class:`SingleProcess`).

    ``is_main``: whether this process writes the outputs (checkpoint, saved model) and prints.
    ``task``: the run's task (its loss; :class:`NodeTask` when not given).
    """

    is_main = True

    def __init__(self, config: TrainConfig, task: Task | None = None) -> None:
        self.lr = config.optim.lr
        self.task: Task = task if task is not None else NodeTask()

    def epoch(
        self, epoch: int, global_batches: list[np.ndarray], sample: SampleFn, tally: EpochTally, warm_up: bool
    ) -> EpochSteps:
        """The steps of one epoch; ``warm_up`` marks the run's first epoch (its first step compiles, fills caches)."""
        return EpochSteps(epoch, global_batches, sample, tally, self.lr, self.task)

    def shard(self, node_ids: np.ndarray) -> np.ndarray:
        """This process's share of ``node_ids`` to evaluate: all of them."""
        return node_ids

    def sum(self, values: torch.Tensor) -> torch.Tensor:
        """``values`` summed over the ranks: ``values`` itself."""
        return values


class SingleProcess(Collective):
    """One process trains alone: the whole batch, the mean loss, nothing to sum."""


class RankGroup(Collective):
    """The ranks of a process group training one model with synchronous SGD and a load balancer.

    Construction broadcasts rank 0's parameters, sets up the balancer (recorded in ``report``) and, for
    workload-based balancing, estimates every training node's workload (cached next to the dataset).

    Args:
        ctx: this process's place in the group.
        config: the run's options (balance, shares, rebalance window, workload samples, ...).
        store: the graph's store (topology for the workload estimate, dataset path for its cache).
        model: this rank's replica.
        train_idx: int64 [T] training seeds (nodes; pair ids of a link task, balanced by count).
        make_sampler: ``(fanouts, seed) -> sampler`` of the run's kind, for the workload estimate.
        report: the run report (balancer, devices, per-rank totals).
        step_seconds: replaces each step's measured compute time (tests of the balancer), or None.
        step_hook: called after each backward pass (tests), or None.
        task: the run's task (its loss; whether a per-node workload estimate applies).
    """

    def __init__(
        self,
        ctx: DistContext,
        config: TrainConfig,
        store: GraphStore,
        model: nn.Module,
        train_idx: np.ndarray,
        make_sampler: Callable[[tuple[int, ...], int], SampleFn],
        report: RunReport,
        *,
        step_seconds: StepSeconds | None = None,
        step_hook: StepHook | None = None,
        task: Task | None = None,
    ) -> None:
        super().__init__(config, task)
        self.ctx = ctx
        self.config = config
        self.model = model
        self.report = report
        self.step_seconds = step_seconds
        self.step_hook = step_hook
        self.is_main = ctx.is_main
        broadcast_parameters(ctx, model)
        for _, table in tiered_embeddings(model):  # learnable tables: rank 0's rows, then every rank's row updates
            table.load_full("weight", broadcast_tensor(ctx, table.full("weight")))
            table.gather_gradient = functools.partial(all_gather_rows, ctx)
        self.balancer = LoadBalancer(
            ctx.devices,
            config.distributed.balance,
            cpu_share=config.distributed.cpu_share,
            shares=config.distributed.shares,
        )
        self.workload: np.ndarray | None = None
        # a typed dataset's batches are cut by seed count (the workload estimate models one relation)
        if self.balancer.uses_workload and self.task.uses_workload and not store.is_hetero:
            self.workload = self._training_workload(store, train_idx, make_sampler)
        self._train_order = np.argsort(train_idx, kind="stable")
        self._sorted_train = train_idx[self._train_order]
        report.balancer = self.balancer
        report.devices = list(ctx.devices)

    def _training_workload(
        self, store: GraphStore, train_idx: np.ndarray, make_sampler: Callable[[tuple[int, ...], int], SampleFn]
    ) -> np.ndarray:
        """float64 [len(train_idx)]: estimated workload of each training node (cached next to the dataset)."""
        cfg = self.config
        kind = "seed-only" if cfg.network.model == "mlp" else cfg.sampling.sampler
        key = {"sampler": kind, "fanouts": list(cfg.sampling.fanouts), "layers": cfg.num_layers, "seed": cfg.run.seed,
               "samples": cfg.distributed.workload_samples}  # fmt: skip
        sampler = make_sampler(cfg.sampling.fanouts, cfg.run.seed + WORKLOAD_SEED_OFFSET)
        indptr, indices = store.csc

        def compute() -> np.ndarray:
            return estimate_workload(
                train_idx, sampler=kind, indptr=indptr, indices=indices, fanouts=cfg.sampling.fanouts,
                sample=sampler, samples=cfg.distributed.workload_samples,
            )  # fmt: skip

        log = (lambda line: print(f"[rank 0] {line}", flush=True)) if not cfg.run.quiet else None
        if self.ctx.is_main:
            workload = cached_workload(store.dataset.path, key, train_idx, compute, log)
            barrier(self.ctx)
        else:
            barrier(self.ctx)
            workload = cached_workload(store.dataset.path, key, train_idx, compute, None)
        return workload

    def seed_workload(self, seeds: np.ndarray) -> np.ndarray | None:
        """float64 [len(seeds)] estimated workload of training nodes ``seeds`` (None without an estimate)."""
        if self.workload is None:
            return None
        positions = self._train_order[np.searchsorted(self._sorted_train, seeds)]
        return self.workload[positions]

    def epoch(
        self, epoch: int, global_batches: list[np.ndarray], sample: SampleFn, tally: EpochTally, warm_up: bool
    ) -> EpochSteps:
        return _RankEpochSteps(self, epoch, global_batches, sample, tally, warm_up)

    def shard(self, node_ids: np.ndarray) -> np.ndarray:
        """Every ``world``-th node from this rank's position."""
        return node_ids[self.ctx.rank :: self.ctx.world]

    def sum(self, values: torch.Tensor) -> torch.Tensor:
        """``values`` summed over all ranks (same shape, dtype and device)."""
        return all_reduce_sum(self.ctx, values)


class _RankEpochSteps(EpochSteps):
    """One epoch of this rank in a :class:`RankGroup`: sub-batches, scaled loss, all-reduce, rebalancing."""

    def __init__(
        self,
        group: RankGroup,
        epoch: int,
        global_batches: list[np.ndarray],
        sample: SampleFn,
        tally: EpochTally,
        warm_up: bool,
    ) -> None:
        super().__init__(epoch, global_batches, sample, tally, group.lr, group.task)
        self.group = group
        self.warm_up = warm_up
        ctx, balancer = group.ctx, group.balancer
        rank, world = ctx.rank, ctx.world
        self.window = group.config.distributed.rebalance_every
        self.schedule = ShareSchedule(balancer.shares)
        self.first_id = (epoch - 1) * len(global_batches)
        self.compute_seconds = self.wait_seconds = 0.0
        self.window_times: list[float] = []
        self.window_work = 0.0
        self._batch_loss: torch.Tensor | None = None

        def my_batches() -> Iterator[np.ndarray]:
            for index, seeds in enumerate(global_batches):
                shares = self.schedule.shares_for(index // self.window)
                workload = group.seed_workload(seeds)  # None: shares by seed count
                yield split_by_workload(seeds, workload, shares)[rank]

        def rank_sample(seeds: np.ndarray, batch_id: int) -> MiniBatch:
            return sample(seeds, batch_id * world + rank)

        self.seed_batches = my_batches()
        self.sample = rank_sample

    def loss(self, outputs: torch.Tensor, y: torch.Tensor, index: int) -> torch.Tensor:
        """This rank's summed task loss divided by the global batch's number of targets."""
        self._batch_loss = self.task.loss(outputs, y, reduction="sum")
        targets = int(self.global_batches[index].shape[0]) * self.task.targets_per_seed()
        return self._batch_loss / targets

    def step(
        self, optimizer: torch.optim.Optimizer, loss: torch.Tensor | None, index: int, item: PreparedBatch, since: float
    ) -> tuple[float, dict[str, Any]]:
        """Sum the gradients over the ranks, step, and at a window's end rebalance and re-broadcast."""
        group, tally = self.group, self.tally
        if self._batch_loss is not None:
            tally.loss_sum += float(self._batch_loss.detach())
            self._batch_loss = None
        train_end = time.perf_counter()
        if group.step_hook is not None:
            group.step_hook(group.ctx.rank, index)
        # the time this rank needed to reach the all-reduce (its finish time), waiting excluded
        compute = time.perf_counter() - since
        if group.step_seconds is not None:
            compute = group.step_seconds(group.ctx.rank, item.batch)
        waited = all_reduce_gradients(group.ctx, group.model)
        optimizer.step()
        self.compute_seconds += compute
        self.wait_seconds += waited
        if not (self.warm_up and index == 0):  # the first step warms up (JIT, caches)
            self.window_times.append(compute)
            seed_work = group.seed_workload(np.asarray(item.batch.seeds))
            self.window_work += float(seed_work.sum()) if seed_work is not None else float(item.y.shape[0])
        if (index + 1) % self.window == 0 or index + 1 == len(self.global_batches):
            self._end_window(index)
        return train_end, {}

    def _end_window(self, index: int) -> None:
        group = self.group
        # the median step time times the steps: robust to a step stalled by the OS
        steps = max(len(self.window_times), 1)
        window_compute = float(np.median(self.window_times)) * steps if self.window_times else 0.0
        gathered = all_gather_floats(group.ctx, [window_compute, self.window_work]).numpy()
        group.balancer.update(self.first_id + index + 1, gathered[:, 0], gathered[:, 1], steps)
        self.schedule.publish(index // self.window + 1, group.balancer.shares.copy())
        # rank 0's parameters and BatchNorm statistics again: CPU and CUDA kernels round differently
        # and each rank's BatchNorm sees only its sub-batch, so the replicas would drift apart
        broadcast_parameters(group.ctx, group.model)
        self.window_times, self.window_work = [], 0.0

    def close(self) -> None:
        self.schedule.cancel()

    def finish(self, total_seconds: float) -> dict[str, Any]:
        """The epoch's record with every rank's sums; every rank stops on a non-finite summed loss."""
        group, tally = self.group, self.tally
        ctx = group.ctx
        totals = all_reduce_sum(
            ctx,
            torch.tensor(
                [tally.loss_sum, float(tally.correct), float(tally.seen), float(tally.feature_bytes),
                 float(tally.sampled_edges)],
                dtype=torch.float64,
            ),
        )  # fmt: skip
        if not math.isfinite(float(totals[0])):  # every rank sees the same sum, so every rank stops here
            raise NonFiniteLossError(
                f"--lr {self.lr}: the training loss became {float(totals[0])} in epoch {self.epoch} "
                "(the model diverged; try a lower --lr)"
            )
        # every rank's bytes and sampled edges count (float64 is exact for counts below 2^53)
        tally.feature_bytes, tally.sampled_edges = int(totals[3]), int(totals[4])
        per_rank = all_gather_floats(ctx, [float(tally.seen), self.compute_seconds, self.wait_seconds]).numpy()
        ranks = [
            {
                "rank": r,
                "device": ctx.devices[r],
                "seeds": int(per_rank[r, 0]),
                "compute_seconds": float(per_rank[r, 1]),
                "wait_seconds": float(per_rank[r, 2]),
            }
            for r in range(ctx.world)
        ]
        group.report.add_rank_totals(ranks)
        record = tally.record(len(self.global_batches), total_seconds, *(float(v) for v in totals[:3]))
        record.update(
            ranks=ranks, cpu_share=group.balancer.cpu_share(), shares=[float(v) for v in group.balancer.shares]
        )
        return record
