"""Mini-batch GNN training with a sampling/gather pipeline, stage timing, evaluation and checkpoints."""

from __future__ import annotations

import copy
import math
import os
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import numba
import numpy as np
import torch
import torch.nn.functional as F

from graphtier._signals import interrupt_behind
from graphtier.dataset import Dataset
from graphtier.memory import GraphStore
from graphtier.sampling import (
    MiniBatch,
    iter_seed_batches,
)
from graphtier.store import TIER_NAMES
from graphtier.train.balancer import (
    LoadBalancer,
)
from graphtier.train.checkpoint import Checkpointing
from graphtier.train.comm import (
    DistContext,
    all_reduce_sum,
    broadcast_parameters,
)
from graphtier.train.config import TrainConfig
from graphtier.train.distributed_epoch import DistributedEpochs, StepSeconds
from graphtier.train.evaluation import Evaluation, majority_class_accuracy
from graphtier.train.host_memory import keep_freed_memory
from graphtier.train.inference import full_in_degree
from graphtier.train.models import build_model
from graphtier.train.pipeline import BatchProducer, PreparedBatch
from graphtier.train.report import NonFiniteLossError, RunReport, environment_info
from graphtier.train.result import TrainResult
from graphtier.train.saved import save_model
from graphtier.train.tally import EpochTally

EpochCallback = Callable[[dict[str, Any]], None]
ProgressFactory = Callable[[str, int], Callable[[int, dict[str, Any]], None]]


class Trainer(Checkpointing, Evaluation, DistributedEpochs):
    """Train one model on one dataset as described by a :class:`TrainConfig`.

    ``fit()`` runs the epochs and returns the run report (a dict, also written to ``config.run.report``).
    ``on_epoch`` is called with each epoch's record; ``progress`` makes a per-epoch progress callback.
    """

    def __init__(
        self,
        dataset: Dataset,
        config: TrainConfig,
        *,
        on_epoch: EpochCallback | None = None,
        progress: ProgressFactory | None = None,
        dist: DistContext | None = None,
        step_seconds: StepSeconds | None = None,
    ) -> None:
        config.validate(dataset)
        self.dist = dist
        self.step_seconds = step_seconds  # multi-process epoch: recorded step times of a simulated device
        self.dataset = dataset
        self.config = config
        self.on_epoch = on_epoch
        self.progress = progress
        self.device = torch.device(config.run.device)
        self.producer_threads: int | None = config.run.num_threads
        if dist is not None:
            self.producer_threads = config.distributed.cpu_threads or max(1, (os.cpu_count() or 1) // dist.world)
            numba.set_num_threads(self.producer_threads)
        if self.producer_threads is not None:
            torch.set_num_threads(self.producer_threads)
        torch.manual_seed(config.run.seed)
        np.random.seed(config.run.seed % 2**32)
        keep_freed_memory()  # per-step activations reuse freed heap memory instead of fresh mmap pages
        assert dataset.features is not None and dataset.labels is not None and dataset.train_idx is not None
        self.store = GraphStore.open(
            dataset,
            config.placement,
            device=self.device,
            seed=config.run.seed,
            num_threads=self.producer_threads,
            batch_size=config.sampling.batch_size,
            fanouts=config.sampling.fanouts,
            ring_size=config.run.prefetch + 3,
            prefetch=config.run.prefetch,
            log=self._log,
        )
        self.train_idx = self.store.split("train")
        self.valid_idx = self.store.split("valid")
        self.test_idx = self.store.split("test")
        # GCN: full-graph in-degrees, used by exact layer-wise inference with either --gcn-degrees and by
        # sampled blocks with "full"; "block" normalises a sampled block by its own degrees (None).
        self.degree = full_in_degree(self.store.csc[0], self.device) if config.network.model == "gcn" else None
        self.block_degree = self.degree if config.gcn_degrees_used == "full" else None
        self.model = build_model(
            config.network.model,
            dataset.feature_dim,
            config.network.hidden,
            dataset.num_classes,
            config.num_layers,
            dropout=config.network.dropout,
            norm=config.network.norm,
            heads=config.network.heads,
        ).to(self.device)
        # fused Adam: one kernel over all parameters instead of a dozen foreach passes (~0.4 ms a step on the CPU)
        fused = True if self.device.type in ("cpu", "cuda") else None
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=config.optim.lr, weight_decay=config.optim.weight_decay, fused=fused
        )
        self.train_sample = self._make_sampler(config.sampling.fanouts, config.run.seed)
        eval_fanouts = config.sampling.eval_fanouts or config.sampling.fanouts
        self.eval_sample = self._make_sampler(eval_fanouts, config.run.seed + 7919)
        self.report = RunReport(config=config.to_dict(), dataset=dataset, environment=environment_info(self.device))
        self.balancer: LoadBalancer | None = None
        self.workload: np.ndarray | None = None
        if dist is not None:
            broadcast_parameters(dist, self.model)
            self.balancer = LoadBalancer(dist.devices, config.distributed.balance, cpu_share=config.distributed.cpu_share, shares=config.distributed.shares)
            if self.balancer.uses_workload:
                self.workload = self._training_workload()
            self._train_order = np.argsort(self.train_idx, kind="stable")
            self._sorted_train = self.train_idx[self._train_order]
            self.report.balancer = self.balancer
            self.report.devices = list(dist.devices)
        self.best_valid = -1.0
        self.best_epoch = 0
        self.best_state: dict[str, torch.Tensor] | None = None
        self.start_epoch = 1
        if config.run.checkpoint is not None:
            self._maybe_resume(Path(config.run.checkpoint))

    def _log(self, line: str) -> None:
        """One informational line (feature placement, fallbacks) unless --quiet; rank 0 only."""
        if not self.config.run.quiet and (self.dist is None or self.dist.is_main):
            print(line, flush=True)

    # ------------------------------------------------------------------ sampling
    def _make_sampler(self, fanouts: tuple[int, ...], seed: int) -> Callable[[np.ndarray, int], MiniBatch]:
        cfg = self.config
        kind = "seed-only" if cfg.network.model == "mlp" else cfg.sampling.sampler
        return self.store.sampler(fanouts, seed=seed, kind=kind, num_layers=cfg.num_layers)

    def _producer(
        self,
        seed_batches: Iterable[np.ndarray],
        sample: Callable[[np.ndarray, int], MiniBatch],
        first_batch_id: int,
        training: bool = True,
    ) -> BatchProducer:
        csr = self.device.type == "cpu" and getattr(self.model, "kind", None) in ("sage", "gcn")
        return BatchProducer(
            seed_batches,
            sample,
            self.store.gather,
            self.store.labels,
            first_batch_id=first_batch_id,
            depth=self.config.run.prefetch,
            row_bytes=self.store.row_bytes,
            num_threads=self.producer_threads,
            block_csr=csr,
            block_transpose=csr and training,
        )

    # ------------------------------------------------------------------ one step
    def _to_device(self, item: PreparedBatch) -> tuple[torch.Tensor, list[Any], torch.Tensor, torch.Tensor, torch.Tensor | None]:
        non_blocking = self.device.type == "cuda"
        batch = item.batch
        x = item.x.to(self.device, non_blocking=non_blocking).float()
        blocks = [blk.to(self.device, non_blocking=non_blocking) for blk in batch.blocks]
        y = item.y.to(self.device, non_blocking=non_blocking)
        seed_index = batch.seed_index.to(self.device, non_blocking=non_blocking)
        degree = None
        if self.block_degree is not None:
            degree = self.block_degree[batch.n_id.to(self.device, non_blocking=non_blocking)]
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return x, blocks, y, seed_index, degree

    def _epoch_batches(self, epoch: int) -> list[np.ndarray]:
        return list(
            iter_seed_batches(self.train_idx, self.config.sampling.batch_size, shuffle=True, seed=self.config.run.seed, epoch=epoch)
        )

    def train_epoch(self, epoch: int) -> dict[str, Any]:
        """Train one epoch; returns loss, train accuracy, stage seconds, feature bytes, batch count."""
        if self.dist is not None:
            return self._train_epoch_distributed(epoch)
        self.model.train()
        seed_batches = self._epoch_batches(epoch)
        tally = EpochTally()
        tick = self.progress("train", len(seed_batches)) if self.progress else None
        start = time.perf_counter()
        producer = self._producer(seed_batches, self.train_sample, (epoch - 1) * len(seed_batches))
        waiting_since = time.perf_counter()
        for step, item in enumerate(producer):
            t0 = time.perf_counter()
            x, blocks, y, seed_index, degree = self._to_device(item)
            t1 = time.perf_counter()
            self.optimizer.zero_grad(set_to_none=True)
            logits = self.model(x, blocks, degree)[seed_index]
            loss = F.cross_entropy(logits, y)
            loss.backward()
            self.optimizer.step()
            loss_value = float(loss.detach())
            if not math.isfinite(loss_value):
                raise NonFiniteLossError(
                    f"--lr {self.config.optim.lr}: the training loss became {loss_value} at epoch {epoch}, batch {step + 1} "
                    "(the model diverged; try a lower --lr)"
                )
            t2 = time.perf_counter()
            tally.add(item, t0 - waiting_since, t1 - t0, t2 - t1)
            batch_size = int(y.shape[0])
            tally.loss_sum += loss_value * batch_size
            tally.correct += int((logits.argmax(dim=1) == y).sum())
            tally.seen += batch_size
            if tick:
                tick(step + 1, {"loss": loss_value})
            waiting_since = time.perf_counter()
        return tally.record(len(seed_batches), time.perf_counter() - start, tally.loss_sum, tally.correct, tally.seen)


    # ------------------------------------------------------------------ main loop
    def fit(self) -> dict[str, Any]:
        """Run the remaining epochs, evaluate, and return (and write) the run report.

        The feature store is closed at the end (its buffers and host registrations released).
        """
        lock = self.checkpoint_lock()
        try:
            if lock is not None:
                lock.acquire()
            return self._fit()
        except SystemError as error:
            raise interrupt_behind(error) or error
        finally:
            if lock is not None:
                lock.release()
            self.store.close()

    def _fit(self) -> dict[str, Any]:
        cfg = self.config
        wall_start = time.perf_counter()
        has_valid = self.valid_idx.size > 0
        for epoch in range(self.start_epoch, cfg.optim.epochs + 1):
            record: dict[str, Any] = {"epoch": epoch}
            traffic_before = self.store.traffic()
            record.update(self.train_epoch(epoch))
            traffic_after = self.store.traffic()
            for key, part in (("feature_bytes_by_tier", "features"), ("topology_bytes_by_tier", "topology")):
                record[key] = (traffic_after[part] - traffic_before[part]).by_tier()
                if self.dist is not None:  # all ranks' reads, like feature_bytes
                    summed = all_reduce_sum(
                        self.dist, torch.tensor([float(record[key][t]) for t in TIER_NAMES], dtype=torch.float64)
                    )
                    record[key] = {t: int(v) for t, v in zip(TIER_NAMES, summed.tolist())}
            hit_ratio = self.store.cache_hit_ratio
            if hit_ratio is not None:
                record["cache_hit_ratio"] = float(hit_ratio)
            record["valid_acc"] = None
            record["test_acc"] = None
            if epoch % cfg.run.eval_every == 0 or epoch == cfg.optim.epochs:
                eval_start = time.perf_counter()
                record["valid_acc"] = self.accuracy_sampled(self.valid_idx, "valid")
                record["test_acc"] = self.accuracy_sampled(self.test_idx, "test")
                record["eval_seconds"] = time.perf_counter() - eval_start
                score = record["valid_acc"] if has_valid else -record["loss"]
                if score is not None and score > self.best_valid:
                    self.best_valid = score
                    self.best_epoch = epoch
                    self.best_state = copy.deepcopy(self.model.state_dict())
            self.report.epochs.append(record)
            if self.on_epoch:
                self.on_epoch(record)
            if cfg.run.checkpoint is not None:
                self.save_checkpoint(epoch)
            if cfg.run.report is not None:
                self.report.write(cfg.run.report)
        if self.best_state is not None:
            self.model.load_state_dict(self.best_state)
        if cfg.run.save_model is not None and (self.dist is None or self.dist.is_main):
            save_model(cfg.run.save_model, self.model, cfg.to_dict(), self.dataset)
        final: dict[str, Any] = {"epoch": self.best_epoch, "method": "sampled"}
        if cfg.run.full_inference and cfg.sampling.sampler == "neighbor" and (self.dist is None or self.dist.is_main):
            logits = self.full_graph_logits()
            predicted = logits.argmax(dim=1).numpy()
            final["method"] = "full"
            labels = self.store.labels
            final["valid_acc"] = float((predicted[self.valid_idx] == labels(self.valid_idx)).mean()) if has_valid else None
            final["test_acc"] = float((predicted[self.test_idx] == labels(self.test_idx)).mean()) if self.test_idx.size else None
        else:
            final["valid_acc"] = self.accuracy_sampled(self.valid_idx, "valid")
            final["test_acc"] = self.accuracy_sampled(self.test_idx, "test")
        final["majority_class"], final["test_majority_acc"] = majority_class_accuracy(
            self.store.labels(self.train_idx), self.store.labels(self.test_idx)
        )
        self.report.final = final
        self.report.wall_seconds += time.perf_counter() - wall_start
        if cfg.run.report is not None:
            self.report.write(cfg.run.report)
        return self.report.to_dict()


def train(dataset: Dataset | str | os.PathLike[str], config: TrainConfig | None = None, **options: Any) -> TrainResult:
    """Train on ``dataset`` (a Dataset or a path); return the model and the run report (:class:`TrainResult`).

    ``options`` override fields of ``config`` (or of the default :class:`TrainConfig`), e.g.
    ``train("data/cora", model="gcn", fanouts=(10, 10), epochs=50)``.
    """
    if not isinstance(dataset, Dataset):
        dataset = Dataset.open(dataset)
    # options replace fields of the parts that own them (dataclasses.replace): the config is not
    # round-tripped through to_dict(), which records the resolved gcn_degrees instead of "auto"
    run_config = config.with_options(**options) if config is not None else TrainConfig(**options)
    trainer = Trainer(dataset, run_config)
    report = trainer.fit()
    trainer.model.eval()
    return TrainResult(trainer.model, report, trainer.config)

