"""Mini-batch GNN training with a sampling/gather pipeline, stage timing, evaluation and checkpoints."""

from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import numba
import numpy as np
import torch
import torch.nn.functional as F

from graphtier.dataset import Dataset
from graphtier.errors import OptionError
from graphtier.sampling import (
    MiniBatch,
    NeighborSampler,
    ShadowSampler,
    iter_seed_batches,
)
from graphtier.sampling.shadow import first_seen_unique
from graphtier.store import TIER_NAMES, FeatureStore, batch_rows_bound, make_feature_store
from graphtier.train.balancer import LoadBalancer, cached_workload, estimate_workload, split_by_workload
from graphtier.train.config import TrainConfig
from graphtier.train.comm import (
    DistContext,
    ShareSchedule,
    all_gather_floats,
    all_reduce_gradients,
    all_reduce_sum,
    broadcast_parameters,
    fail_now,
    slowdown_factor,
)
from graphtier.train.inference import layerwise_inference
from graphtier.train.models import build_model
from graphtier.train.pipeline import BatchProducer, PreparedBatch
from graphtier.train.report import RunReport, environment_info
from graphtier.train.result import TrainResult
from graphtier.train.saved import save_model

CHECKPOINT_FILE = "checkpoint.pt"
# Options that must match for a checkpoint to be resumed.
CHECKPOINT_KEYS = ("model", "sampler", "fanouts", "num_layers", "hidden", "heads", "norm", "batch_size", "seed")
# Main-thread stages wait + transfer + train + other add up to total; sample and extract are the
# producer thread's busy time, which overlaps them (docs/report-format.md).
STAGES = ("sample", "extract", "wait", "transfer", "train", "other", "total")

EpochCallback = Callable[[dict[str, Any]], None]
ProgressFactory = Callable[[str, int], Callable[[int, dict[str, Any]], None]]


@dataclass
class _EpochTally:
    """The sums one rank accumulates over an epoch's training steps."""

    stage: dict[str, float] = field(default_factory=lambda: dict.fromkeys(STAGES, 0.0))
    loss_sum: float = 0.0
    correct: int = 0
    seen: int = 0
    feature_bytes: int = 0
    sampled_edges: int = 0

    def add(self, item: PreparedBatch, wait_seconds: float, transfer_seconds: float, train_seconds: float) -> None:
        """Count one step's stage times and bytes (loss and accuracy are added by the caller)."""
        self.stage["sample"] += item.sample_seconds
        self.stage["extract"] += item.extract_seconds
        self.stage["wait"] += wait_seconds
        self.stage["transfer"] += transfer_seconds
        self.stage["train"] += train_seconds
        self.feature_bytes += item.feature_bytes
        self.sampled_edges += item.batch.num_sampled_edges

    def record(self, batches: int, total_seconds: float, loss_sum: float, correct: float, seen: float) -> dict[str, Any]:
        """The epoch's report entry from these sums and the (possibly all-rank) loss/accuracy totals."""
        self.stage["total"] = total_seconds
        # everything else the training loop spent: bookkeeping, progress, producer start/stop
        # (and, in multi-process runs, the gradient all-reduce and the optimizer step)
        busy = self.stage["wait"] + self.stage["transfer"] + self.stage["train"]
        self.stage["other"] = max(0.0, total_seconds - busy)
        return {
            "loss": loss_sum / max(seen, 1),
            "train_acc": correct / max(seen, 1),
            "stage_seconds": self.stage,
            "feature_bytes": self.feature_bytes,
            "batches": batches,
            "sampled_edges": self.sampled_edges,
            "batches_per_s": batches / total_seconds if total_seconds > 0 else 0.0,
        }


def _seed_only_sampler(seeds: np.ndarray, batch_id: int) -> MiniBatch:
    """MLP batches: the unique seeds (first-seen order) and no blocks (no neighbours are read)."""
    seed_array = np.array(seeds, dtype=np.int64)
    n_id, seed_index = first_seen_unique(seed_array)
    return MiniBatch(
        n_id=torch.from_numpy(n_id),
        blocks=[],
        seed_index=torch.from_numpy(seed_index),
        seeds=torch.from_numpy(seed_array),
    )


class Trainer:
    """Train one model on one dataset as described by a :class:`TrainConfig`.

    ``fit()`` runs the epochs and returns the run report (a dict, also written to ``config.report``).
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
    ) -> None:
        config.validate(dataset)
        self.dist = dist
        self.dataset = dataset
        self.config = config
        self.on_epoch = on_epoch
        self.progress = progress
        self.device = torch.device(config.device)
        self.producer_threads: int | None = config.num_threads
        if dist is not None:
            self.producer_threads = config.cpu_threads or max(1, (os.cpu_count() or 1) // dist.world)
            numba.set_num_threads(self.producer_threads)
        if self.producer_threads is not None:
            torch.set_num_threads(self.producer_threads)
        torch.manual_seed(config.seed)
        np.random.seed(config.seed % 2**32)
        assert dataset.features is not None and dataset.labels is not None and dataset.train_idx is not None
        self.indptr = np.asarray(dataset.indptr)
        self.indices = np.asarray(dataset.indices)
        self.labels = np.asarray(dataset.labels)
        self.train_idx = np.asarray(dataset.train_idx)
        self.valid_idx = np.asarray(dataset.valid_idx) if dataset.valid_idx is not None else np.empty(0, np.int64)
        self.test_idx = np.asarray(dataset.test_idx) if dataset.test_idx is not None else np.empty(0, np.int64)
        self.features: FeatureStore = make_feature_store(
            dataset.features,
            config.features_on,
            device=self.device,
            gpu_budget=config.gpu_budget,
            cache_budget=config.cache_budget,
            peer_partitions=config.peer_partitions,
            ram_budget=config.ram_budget,
            ring_size=config.prefetch + 3,
            max_batch_rows=batch_rows_bound(config.batch_size, config.fanouts, dataset.num_nodes),
            log=self._log,
        )
        self.degree = (
            torch.from_numpy(np.diff(self.indptr).astype(np.float32)).to(self.device)
            if config.model == "gcn"
            else None
        )
        self.model = build_model(
            config.model,
            dataset.feature_dim,
            config.hidden,
            dataset.num_classes,
            config.num_layers,
            dropout=config.dropout,
            norm=config.norm,
            heads=config.heads,
        ).to(self.device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        self.train_sample = self._make_sampler(config.fanouts, config.seed)
        eval_fanouts = config.eval_fanouts or config.fanouts
        self.eval_sample = self._make_sampler(eval_fanouts, config.seed + 7919)
        self.report = RunReport(config=config.to_dict(), dataset=dataset, environment=environment_info(self.device))
        self.balancer: LoadBalancer | None = None
        self.workload: np.ndarray | None = None
        if dist is not None:
            broadcast_parameters(dist, self.model)
            self.balancer = LoadBalancer(dist.devices, config.balance, cpu_share=config.cpu_share, shares=config.shares)
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
        if config.checkpoint is not None:
            self._maybe_resume(Path(config.checkpoint))

    def _log(self, line: str) -> None:
        """One informational line (feature placement, fallbacks) unless --quiet; rank 0 only."""
        if not self.config.quiet and (self.dist is None or self.dist.is_main):
            print(line, flush=True)

    @staticmethod
    def _traffic_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
        return {tier: after[tier] - before.get(tier, 0) for tier in TIER_NAMES}

    # ------------------------------------------------------------------ sampling
    def _make_sampler(self, fanouts: tuple[int, ...], seed: int) -> Callable[[np.ndarray, int], MiniBatch]:
        cfg = self.config
        if cfg.model == "mlp":
            return _seed_only_sampler
        if cfg.sampler == "shadow":
            return ShadowSampler(
                self.indptr, self.indices, list(fanouts), cfg.num_layers, seed=seed, num_threads=self.producer_threads
            ).sample
        return NeighborSampler(self.indptr, self.indices, list(fanouts), seed=seed, num_threads=self.producer_threads).sample

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
            self.features.gather,
            self.labels,
            first_batch_id=first_batch_id,
            depth=self.config.prefetch,
            row_bytes=self.features.row_bytes,
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
        if self.degree is not None:
            degree = self.degree[batch.n_id.to(self.device, non_blocking=non_blocking)]
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return x, blocks, y, seed_index, degree

    def _epoch_batches(self, epoch: int) -> list[np.ndarray]:
        return list(
            iter_seed_batches(self.train_idx, self.config.batch_size, shuffle=True, seed=self.config.seed, epoch=epoch)
        )

    def train_epoch(self, epoch: int) -> dict[str, Any]:
        """Train one epoch; returns loss, train accuracy, stage seconds, feature bytes, batch count."""
        if self.dist is not None:
            return self._train_epoch_distributed(epoch)
        self.model.train()
        seed_batches = self._epoch_batches(epoch)
        tally = _EpochTally()
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

    # ------------------------------------------------------------------ multi-process (seed 002)
    def _training_workload(self) -> np.ndarray:
        """float64 [len(train_idx)]: estimated workload of each training node (cached next to the dataset)."""
        assert self.dist is not None
        cfg = self.config
        kind = "seed-only" if cfg.model == "mlp" else cfg.sampler
        key = {"sampler": kind, "fanouts": list(cfg.fanouts), "layers": cfg.num_layers, "seed": cfg.seed,
               "samples": cfg.workload_samples}
        sampler = self._make_sampler(cfg.fanouts, cfg.seed + 104729)

        def compute() -> np.ndarray:
            return estimate_workload(
                self.train_idx, sampler=kind, indptr=self.indptr, indices=self.indices, fanouts=cfg.fanouts,
                sample=sampler, samples=cfg.workload_samples,
            )

        log = (lambda line: print(f"[rank 0] {line}", flush=True)) if not cfg.quiet else None
        if self.dist.is_main:
            workload = cached_workload(self.dataset.path, key, self.train_idx, compute, log)
            torch.distributed.barrier()
        else:
            torch.distributed.barrier()
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
        window = cfg.rebalance_every
        schedule = ShareSchedule(balancer.shares)
        slow = slowdown_factor(rank)

        def my_batches() -> Iterator[np.ndarray]:
            for index, seeds in enumerate(global_batches):
                shares = schedule.shares_for(index // window)
                workload = self._seed_workload(seeds) if balancer.uses_workload else None
                yield split_by_workload(seeds, workload, shares)[rank]

        def sample(seeds: np.ndarray, batch_id: int) -> MiniBatch:
            return self.train_sample(seeds, batch_id * world + rank)

        tally = _EpochTally()
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
                if slow > 1.0:  # test-only hook: this rank's transfer and forward/backward take `slow` times longer
                    time.sleep((slow - 1.0) * (t2 - t0))
                # the time this rank needed to reach the all-reduce (its finish time), waiting excluded
                compute = time.perf_counter() - iteration_start
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

    # ------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def predict_sampled(self, node_ids: np.ndarray, label: str = "eval") -> torch.Tensor:
        """Predicted classes (int64 [len(node_ids)], CPU) from sampled mini-batches (eval fanouts)."""
        self.model.eval()
        if node_ids.size == 0:
            return torch.empty(0, dtype=torch.int64)
        size = self.config.eval_batch_size
        seed_batches = [node_ids[i : i + size] for i in range(0, node_ids.shape[0], size)]
        tick = self.progress(label, len(seed_batches)) if self.progress else None
        predictions = []
        for step, item in enumerate(self._producer(seed_batches, self.eval_sample, 0, training=False)):
            x, blocks, _, seed_index, degree = self._to_device(item)
            predictions.append(self.model(x, blocks, degree)[seed_index].argmax(dim=1).cpu())
            if tick:
                tick(step + 1, {})
        return torch.cat(predictions)

    def accuracy_sampled(self, node_ids: np.ndarray, label: str = "eval") -> float | None:
        """Sampled-inference accuracy on ``node_ids`` (None when empty); shared over ranks when distributed."""
        if node_ids.size == 0:
            return None
        if self.dist is not None:
            mine = node_ids[self.dist.rank :: self.dist.world]
            correct = float((self.predict_sampled(mine, label).numpy() == self.labels[mine]).sum()) if mine.size else 0.0
            total = all_reduce_sum(self.dist, torch.tensor([correct, float(mine.size)], dtype=torch.float64))
            return float(total[0] / total[1])
        predicted = self.predict_sampled(node_ids, label)
        return float((predicted.numpy() == self.labels[node_ids]).mean())

    @torch.no_grad()
    def full_graph_logits(self) -> torch.Tensor:
        """float32 [N, C] logits from exact layer-wise full-neighbour inference (CPU tensor)."""
        tick = self.progress("inference", 1) if self.progress else None
        return layerwise_inference(
            self.model,
            self.features.gather,  # each gathered block is used before the ring slot comes round again
            self.indptr,
            self.indices,
            num_nodes=self.dataset.num_nodes,
            device=self.device,
            degree=self.degree,
            chunk_size=self.config.eval_batch_size,
            progress=(lambda done, total: tick(done, {})) if tick else None,
        )

    # ------------------------------------------------------------------ checkpoints
    def _checkpoint_state(self, epoch: int) -> dict[str, Any]:
        return {
            "epoch": epoch,
            "config": self.config.to_dict(),
            "dataset": {"num_nodes": self.dataset.num_nodes, "num_edges": self.dataset.num_edges},
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "best_valid": self.best_valid,
            "best_epoch": self.best_epoch,
            "best_state": self.best_state,
            "epochs": self.report.epochs,
            "torch_rng": torch.get_rng_state(),
        }

    def save_checkpoint(self, epoch: int) -> Path:
        """Write ``checkpoint.pt`` atomically into the checkpoint directory; returns its path."""
        assert self.config.checkpoint is not None
        directory = Path(self.config.checkpoint)
        if self.dist is not None and not self.dist.is_main:
            return directory / CHECKPOINT_FILE
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / CHECKPOINT_FILE
        tmp = directory / f".{CHECKPOINT_FILE}.tmp-{os.getpid()}"
        torch.save(self._checkpoint_state(epoch), tmp)
        os.replace(tmp, target)
        return target

    def _maybe_resume(self, directory: Path) -> None:
        path = directory / CHECKPOINT_FILE
        if not path.is_file():
            return
        try:
            state = torch.load(path, map_location=self.device, weights_only=False)
        except Exception as exc:
            raise OptionError(f"{path}: not a readable graphtier checkpoint ({exc})") from None
        saved = state.get("config", {})
        current = self.config.to_dict()
        for key in CHECKPOINT_KEYS:
            if saved.get(key) != current.get(key):
                raise OptionError(
                    f"{path}: field {key!r} is {saved.get(key)!r} in the checkpoint but {current.get(key)!r} in "
                    "this run (use another --checkpoint directory)"
                )
        if state.get("dataset") != {"num_nodes": self.dataset.num_nodes, "num_edges": self.dataset.num_edges}:
            raise OptionError(f"{path}: checkpoint was made on another dataset ({state.get('dataset')})")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.best_valid = state["best_valid"]
        self.best_epoch = state["best_epoch"]
        self.best_state = state["best_state"]
        self.report.epochs = list(state["epochs"])
        self.report.resumed_from = {"path": str(path), "epoch": int(state["epoch"])}
        torch.set_rng_state(state["torch_rng"])
        self.start_epoch = int(state["epoch"]) + 1

    # ------------------------------------------------------------------ main loop
    def fit(self) -> dict[str, Any]:
        """Run the remaining epochs, evaluate, and return (and write) the run report.

        The feature store is closed at the end (its buffers and host registrations released).
        """
        try:
            return self._fit()
        finally:
            self.features.close()

    def _fit(self) -> dict[str, Any]:
        cfg = self.config
        wall_start = time.perf_counter()
        has_valid = self.valid_idx.size > 0
        for epoch in range(self.start_epoch, cfg.epochs + 1):
            record: dict[str, Any] = {"epoch": epoch}
            traffic_before = dict(self.features.traffic())
            record.update(self.train_epoch(epoch))
            record["feature_bytes_by_tier"] = self._traffic_delta(traffic_before, dict(self.features.traffic()))
            if self.dist is not None:  # all ranks' reads, like feature_bytes
                summed = all_reduce_sum(
                    self.dist,
                    torch.tensor([float(record["feature_bytes_by_tier"][t]) for t in TIER_NAMES], dtype=torch.float64),
                )
                record["feature_bytes_by_tier"] = {t: int(v) for t, v in zip(TIER_NAMES, summed.tolist())}
            hit_ratio = getattr(self.features, "cache_hit_ratio", None)
            if hit_ratio is not None:
                record["cache_hit_ratio"] = float(hit_ratio)
            record["valid_acc"] = None
            record["test_acc"] = None
            if epoch % cfg.eval_every == 0 or epoch == cfg.epochs:
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
            if cfg.checkpoint is not None:
                self.save_checkpoint(epoch)
            if cfg.report is not None:
                self.report.write(cfg.report)
        if self.best_state is not None:
            self.model.load_state_dict(self.best_state)
        if cfg.save_model is not None and (self.dist is None or self.dist.is_main):
            save_model(cfg.save_model, self.model, cfg.to_dict(), self.dataset)
        final: dict[str, Any] = {"epoch": self.best_epoch, "method": "sampled"}
        if cfg.full_inference and cfg.sampler == "neighbor" and (self.dist is None or self.dist.is_main):
            logits = self.full_graph_logits()
            predicted = logits.argmax(dim=1).numpy()
            final["method"] = "full"
            final["valid_acc"] = float((predicted[self.valid_idx] == self.labels[self.valid_idx]).mean()) if has_valid else None
            final["test_acc"] = (
                float((predicted[self.test_idx] == self.labels[self.test_idx]).mean()) if self.test_idx.size else None
            )
        else:
            final["valid_acc"] = self.accuracy_sampled(self.valid_idx, "valid")
            final["test_acc"] = self.accuracy_sampled(self.test_idx, "test")
        self.report.final = final
        self.report.wall_seconds += time.perf_counter() - wall_start
        if cfg.report is not None:
            self.report.write(cfg.report)
        return self.report.to_dict()


def train(dataset: Dataset | str | os.PathLike[str], config: TrainConfig | None = None, **options: Any) -> TrainResult:
    """Train on ``dataset`` (a Dataset or a path); return the model and the run report (:class:`TrainResult`).

    ``options`` override fields of ``config`` (or of the default :class:`TrainConfig`), e.g.
    ``train("data/cora", model="gcn", fanouts=(10, 10), epochs=50)``.
    """
    if not isinstance(dataset, Dataset):
        dataset = Dataset.open(dataset)
    base = config.to_dict() if config is not None else {}
    base.pop("num_layers", None)
    base.update(options)
    if "fanouts" in base:
        base["fanouts"] = tuple(base["fanouts"])
    if base.get("eval_fanouts") is not None:
        base["eval_fanouts"] = tuple(base["eval_fanouts"])
    trainer = Trainer(dataset, TrainConfig(**base))
    report = trainer.fit()
    trainer.model.eval()
    return TrainResult(trainer.model, report, trainer.config)

