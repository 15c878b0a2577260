"""One epoch of synchronous SGD over several ranks with uneven, balanced sub-batches (seed 002)."""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Iterator

import numpy as np
import torch
import torch.nn.functional as F

from graphtier.sampling import (
    MiniBatch,
)
from graphtier.train.balancer import (
    cached_workload,
    estimate_workload,
    split_by_workload,
)
from graphtier.train.comm import (
    ShareSchedule,
    all_gather_floats,
    all_reduce_gradients,
    all_reduce_sum,
    barrier,
    broadcast_parameters,
    fail_now,
)
from graphtier.train.report import NonFiniteLossError
from graphtier.train.tally import EpochTally

StepSeconds = Callable[[int, MiniBatch], float]
"""``(rank, mini-batch) -> seconds``: the compute time a rank's training step on its sub-batch is recorded as,
in place of the measured time (a simulated device for deterministic tests of the load balancer)."""


class DistributedEpochs:
    """The trainer's multi-process epoch: workload estimate, per-rank sub-batches, all-reduce, rebalancing.

    Mixed into :class:`graphtier.train.trainer.Trainer`; uses its ``config``, ``model``, ``dataset``, ``dist``,
    samplers, producer and feature store.
    """

    def _training_workload(self) -> np.ndarray:
        """float64 [len(train_idx)]: estimated workload of each training node (cached next to the dataset)."""
        assert self.dist is not None
        cfg = self.config
        kind = "seed-only" if cfg.network.model == "mlp" else cfg.sampling.sampler
        key = {"sampler": kind, "fanouts": list(cfg.sampling.fanouts), "layers": cfg.num_layers, "seed": cfg.run.seed,
               "samples": cfg.distributed.workload_samples}
        sampler = self._make_sampler(cfg.sampling.fanouts, cfg.run.seed + 104729)

        indptr, indices = self.store.csc

        def compute() -> np.ndarray:
            return estimate_workload(
                self.train_idx, sampler=kind, indptr=indptr, indices=indices, fanouts=cfg.sampling.fanouts,
                sample=sampler, samples=cfg.distributed.workload_samples,
            )

        log = (lambda line: print(f"[rank 0] {line}", flush=True)) if not cfg.run.quiet else None
        if self.dist.is_main:
            workload = cached_workload(self.dataset.path, key, self.train_idx, compute, log)
            barrier(self.dist)
        else:
            barrier(self.dist)
            workload = cached_workload(self.dataset.path, key, self.train_idx, compute, None)
        return workload

    def _seed_workload(self, seeds: np.ndarray) -> np.ndarray | None:
        if self.workload is None:
            return None
        positions = self._train_order[np.searchsorted(self._sorted_train, seeds)]
        return self.workload[positions]

    def _train_epoch_distributed(self, epoch: int) -> dict[str, Any]:
        """One epoch of synchronous SGD over all ranks with uneven, balanced sub-batches.

        Every rank builds the same global batches; rank k trains on its sub-batch, its loss is the sum of
        per-seed losses divided by the global batch size, and the summed gradients therefore equal the
        gradient of the mean loss over the global batch.
        """
        dist_ctx, balancer, cfg = self.dist, self.balancer, self.config
        assert dist_ctx is not None and balancer is not None
        self.model.train()
        rank, world = dist_ctx.rank, dist_ctx.world
        global_batches = self._epoch_batches(epoch)
        window = cfg.distributed.rebalance_every
        schedule = ShareSchedule(balancer.shares)

        def my_batches() -> Iterator[np.ndarray]:
            for index, seeds in enumerate(global_batches):
                shares = schedule.shares_for(index // window)
                workload = self._seed_workload(seeds) if balancer.uses_workload else None
                yield split_by_workload(seeds, workload, shares)[rank]

        def sample(seeds: np.ndarray, batch_id: int) -> MiniBatch:
            return self.train_sample(seeds, batch_id * world + rank)

        tally = EpochTally()
        epoch_compute = epoch_wait = 0.0
        window_times: list[float] = []
        window_work = 0.0
        first_id = (epoch - 1) * len(global_batches)
        tick = self.progress("train", len(global_batches)) if self.progress else None
        start = time.perf_counter()
        producer = self._producer(my_batches(), sample, first_id)
        iteration_start = time.perf_counter()
        waiting_since = iteration_start
        try:
            for index, item in enumerate(producer):
                global_size = int(global_batches[index].shape[0])
                t0 = time.perf_counter()
                x, blocks, y, seed_index, degree = self._to_device(item)
                t1 = time.perf_counter()
                self.optimizer.zero_grad(set_to_none=True)
                local = int(y.shape[0])
                if local:
                    logits = self.model(x, blocks, degree)[seed_index]
                    batch_loss = F.cross_entropy(logits, y, reduction="sum")
                    (batch_loss / global_size).backward()
                    tally.loss_sum += float(batch_loss.detach())
                    tally.correct += int((logits.argmax(dim=1) == y).sum())
                t2 = time.perf_counter()
                if fail_now(rank, index):
                    raise RuntimeError(f"test hook: rank {rank} fails at iteration {index}")
                # the time this rank needed to reach the all-reduce (its finish time), waiting excluded
                compute = time.perf_counter() - iteration_start
                if self.step_seconds is not None:
                    compute = self.step_seconds(rank, item.batch)
                waited = all_reduce_gradients(dist_ctx, self.model)
                self.optimizer.step()
                tally.add(item, t0 - waiting_since, t1 - t0, t2 - t1)
                tally.seen += local
                epoch_compute += compute
                epoch_wait += waited
                if not (epoch == self.start_epoch and index == 0):  # the first step warms up (JIT, caches)
                    window_times.append(compute)
                    seed_work = self._seed_workload(np.asarray(item.batch.seeds))
                    window_work += float(seed_work.sum()) if seed_work is not None else float(local)
                last_in_window = (index + 1) % window == 0 or index + 1 == len(global_batches)
                if last_in_window:
                    # the median step time times the steps: robust to a step stalled by the OS
                    steps = max(len(window_times), 1)
                    window_compute = float(np.median(window_times)) * steps if window_times else 0.0
                    gathered = all_gather_floats(dist_ctx, [window_compute, window_work]).numpy()
                    balancer.update(first_id + index + 1, gathered[:, 0], gathered[:, 1], steps)
                    schedule.publish(index // window + 1, balancer.shares.copy())
                    # rank 0's parameters and BatchNorm statistics again: CPU and CUDA kernels round differently
                    # and each rank's BatchNorm sees only its sub-batch, so the replicas would drift apart
                    broadcast_parameters(dist_ctx, self.model)
                    window_times, window_work = [], 0.0
                if tick:
                    tick(index + 1, {})
                iteration_start = time.perf_counter()
                waiting_since = iteration_start
        finally:
            schedule.cancel()
            producer.close()
        total_seconds = time.perf_counter() - start
        totals = all_reduce_sum(
            dist_ctx,
            torch.tensor(
                [tally.loss_sum, float(tally.correct), float(tally.seen), float(tally.feature_bytes),
                 float(tally.sampled_edges)],
                dtype=torch.float64,
            ),
        )
        if not math.isfinite(float(totals[0])):  # every rank sees the same sum, so every rank stops here
            raise NonFiniteLossError(
                f"--lr {self.config.optim.lr}: the training loss became {float(totals[0])} in epoch {epoch} "
                "(the model diverged; try a lower --lr)"
            )
        # every rank's bytes and sampled edges count (float64 is exact for counts below 2^53)
        tally.feature_bytes, tally.sampled_edges = int(totals[3]), int(totals[4])
        per_rank = all_gather_floats(dist_ctx, [float(tally.seen), epoch_compute, epoch_wait]).numpy()
        ranks = [
            {
                "rank": r,
                "device": dist_ctx.devices[r],
                "seeds": int(per_rank[r, 0]),
                "compute_seconds": float(per_rank[r, 1]),
                "wait_seconds": float(per_rank[r, 2]),
            }
            for r in range(world)
        ]
        self.report.add_rank_totals(ranks)
        record = tally.record(len(global_batches), total_seconds, *(float(v) for v in totals[:3]))
        record.update(ranks=ranks, cpu_share=balancer.cpu_share(), shares=[float(v) for v in balancer.shares])
        return record
