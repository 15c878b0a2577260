"""Mini-batch GNN training: one epoch loop, with evaluation, checkpoints and other ranks as collaborators.

:class:`Trainer` composes a :class:`~graphtier.train.loop.feed.BatchFeed` (seed batches to device batches), a
:class:`~graphtier.train.loop.collective.Collective` (one process, or a rank of a process group), an
:class:`~graphtier.train.loop.evaluation.Evaluator` and, with ``--checkpoint``, a
:class:`~graphtier.train.persist.checkpoint.Checkpointer`. It reaches the data only through its
:class:`~graphtier.graphstore.GraphStore`. Process-wide settings (thread counts, the OpenMP wait policy, malloc
tuning) are the caller's: :func:`graphtier.configure_process`, which the command line and :func:`train` call.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any, Callable

import numpy as np
import torch

from graphtier._compile_notice import compile_seconds, track_compile_time
from graphtier._process import configure_process
from graphtier._progress import NO_PROGRESS, Progress
from graphtier._signals import interrupt_behind
from graphtier.dataset import Dataset
from graphtier.graphstore import GraphStore
from graphtier.memory import TIER_NAMES
from graphtier.memory.features.source import bytes_by_tier_by_type
from graphtier.sampling import iter_seed_batches
from graphtier.train.dist.comm import DistContext
from graphtier.train.infer.inference import full_in_degree
from graphtier.train.loop.collective import (
    Collective,
    RankGroup,
    SingleProcess,
    StepHook,
    StepSeconds,
    rank_threads,
)
from graphtier.train.loop.evaluation import Evaluator, majority_class_accuracy, split_scores
from graphtier.train.loop.feed import BatchFeed, SampleFn, edge_input_dim, require_edge_model
from graphtier.train.loop.report import RunReport, environment_info
from graphtier.train.loop.result import TrainResult
from graphtier.train.loop.tally import EpochTally
from graphtier.train.loop.task import LinkTask, class_metric_keys, make_task, timed_node_sampler
from graphtier.train.nn.link_model import start_link_bias
from graphtier.train.nn.run_model import (
    build_run_model,
    learnable_bytes_read,
    learnable_tables,
    place_learnable_tables,
)
from graphtier.train.nn.tiered_embedding import attach_sparse_adam, state_snapshot
from graphtier.train.options.config import TrainConfig
from graphtier.train.options.typed_checks import dense_relation_notes
from graphtier.train.persist.checkpoint import Checkpointer, RunProgress
from graphtier.train.persist.saved import save_model

EpochCallback = Callable[[dict[str, Any]], None]

EVAL_SEED_OFFSET = 7919  # the evaluation sampler draws other neighbours than training's


class Trainer:
    """Train one model on one dataset as described by a :class:`TrainConfig`.

    ``fit()`` runs the epochs and returns the run report (a dict, also written to ``config.run.report``).
    ``on_epoch`` is called with each epoch's record; ``progress`` reports each epoch's passes as stages.
    ``dist`` makes this process one rank of a process group (:mod:`graphtier.train.loop.launch` starts them);
    ``step_seconds`` and ``step_hook`` are for tests of that case (:class:`~graphtier.train.loop.collective.RankGroup`).
    The trainer seeds torch's default generator with ``config.run.seed``: the initial weights and the dropout
    keys come from it, and a checkpoint saves and restores its state.
    """

    def __init__(
        self,
        dataset: Dataset,
        config: TrainConfig,
        *,
        on_epoch: EpochCallback | None = None,
        progress: Progress = NO_PROGRESS,
        dist: DistContext | None = None,
        step_seconds: StepSeconds | None = None,
        step_hook: StepHook | None = None,
    ) -> None:
        config = config.for_dataset(dataset)  # --edge-features: the model's edge_dim is the edge table's width
        config.validate(dataset)
        self.dist = dist
        self.dataset = dataset
        self.config = config
        track_compile_time()  # a first run's epoch line says how much of its time was kernel compilation
        self.on_epoch = on_epoch
        self.progress = progress
        self.device = torch.device(config.run.device)
        self.producer_threads = config.run.num_threads if dist is None else rank_threads(config, dist.world)
        torch.manual_seed(config.run.seed)
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
            train_seeds=dataset.split("train") if dataset.is_hetero else None,  # the GPU budget across the types
            relation_fanouts=config.sampling.fanouts_per_relation,
            log=self._log,
            learnable=learnable_tables(config, dataset),  # featureless types' tables share the GPU budget
        )
        if dataset.is_hetero and config.network.model != "mlp":
            for note in dense_relation_notes(config, dataset.schema):
                self._log(note)
        self.task = make_task(config.objective, self.store, config.sampling.fanouts_per_relation,
                              config.sampling.temporal)  # fmt: skip
        self.train_idx = self.task.train_seeds(self.store)  # node ids, or rows of link_train.npy
        # GCN: full-graph in-degrees, used by exact layer-wise inference with either --gcn-degrees and by
        # sampled blocks with "full"; "block" normalises a sampled block by its own degrees (None).
        degree = full_in_degree(self.store.csc[0], self.device) if config.network.model == "gcn" else None
        self.typed = dataset.is_hetero or config.network.typed  # typed batches (TypedMiniBatch), a typed model
        self.model = build_run_model(config, dataset)
        if isinstance(self.task, LinkTask) and self.task.target is not None:  # start from the baseline's prediction
            start_link_bias(self.model, self.task.target.initial_bias())
        edge_features = config.placement.edge_features and require_edge_model(self.model, self.store)
        hot_rows = getattr(self.store.features, "learnable_rows", {})
        tables_dir = (
            None if config.placement.tables_on == "ram" else config.placement.scratch_dir or tempfile.gettempdir()
        )
        place_learnable_tables(self.model, dataset.schema, hot_rows, self._log, cold_dir=tables_dir,
                               device=self.device)  # before .to: only the hot rows move  # fmt: skip
        self.model.to(self.device)
        # fused Adam: one kernel over all parameters instead of a dozen foreach passes (~0.4 ms a step on the CPU)
        fused = True if self.device.type in ("cpu", "cuda") else None
        self.optimizer = torch.optim.Adam(
            self.model.parameters(), lr=config.optim.lr, weight_decay=config.optim.weight_decay, fused=fused
        )
        attach_sparse_adam(self.optimizer, self.model)  # the learnable tables: row-wise Adam on the touched rows
        self.train_sample = self.task.train_sampler(
            self.store, self._make_sampler, config.sampling.fanouts, config.run.seed
        )
        eval_fanouts = config.sampling.eval_fanouts or config.sampling.fanouts
        eval_sample = self._make_sampler(eval_fanouts, config.run.seed + EVAL_SEED_OFFSET)
        self.report = RunReport(config=config.to_dict(), dataset=dataset, environment=environment_info(self.device))
        # CSRs built by the producer, off the training loop: CPU SAGE/GCN blocks, and every typed batch's relations
        csr = self.device.type == "cpu" and (self.typed or getattr(self.model, "kind", None) in ("sage", "gcn"))
        self.feed = BatchFeed(
            self.store,
            self.device,
            prefetch=config.run.prefetch,
            num_threads=self.producer_threads,
            block_csr=csr,
            block_degree=degree if config.gcn_degrees_used == "full" else None,
            targets=lambda seeds, batch: self.task.targets(self.store, seeds, batch),
            first_layer_mean=csr and getattr(self.model, "kind", None) == "sage" and not self.typed,
            edge_features=edge_features,
            edge_ages=config.sampling.temporal is not None and bool(edge_features or edge_input_dim(self.model)),
        )
        self.collective: Collective = (
            SingleProcess(config, self.task)
            if dist is None
            else RankGroup(
                dist, config, self.store, self.model, self.train_idx, self._make_sampler, self.report,
                step_seconds=step_seconds, step_hook=step_hook, task=self.task,
            )
        )  # fmt: skip
        seed = config.run.seed + EVAL_SEED_OFFSET
        self.evaluator = Evaluator(
            self.store, self.feed, eval_sample, self.collective,
            batch_size=config.sampling.eval_batch_size, degree=degree, progress=progress, task=self.task,
            link_sampler=lambda pairs, labels, times: self.task.pair_sampler(  # type: ignore[attr-defined]
                self.store, eval_fanouts, pairs, labels, seed, self._relation_fanouts(eval_fanouts), times
            ),
        )  # fmt: skip
        self.progress_so_far = RunProgress()
        self.checkpointer: Checkpointer | None = None
        if config.run.checkpoint is not None:
            self.checkpointer = Checkpointer(
                config.run.checkpoint, dataset, writes=self.collective.is_main, log=self._log
            )
            self.resume()

    @property
    def start_epoch(self) -> int:
        """The first epoch ``fit()`` trains (after the checkpoint's last one when resumed)."""
        return self.progress_so_far.start_epoch

    def _log(self, line: str) -> None:
        """One informational line (feature placement, fallbacks) unless --quiet; rank 0 only."""
        if not self.config.run.quiet and (self.dist is None or self.dist.is_main):
            print(line, flush=True)

    def _make_sampler(self, fanouts: tuple[int, ...], seed: int) -> SampleFn:
        cfg = self.config
        kind = "seed-only" if cfg.network.model == "mlp" else cfg.sampling.sampler
        if cfg.sampling.temporal is not None and self.task.name == "node":
            relation = self._relation_fanouts(fanouts) if self.typed else None
            return timed_node_sampler(self.store, fanouts, cfg.sampling.temporal, seed, relation)
        if self.typed:
            return self.store.typed_sampler(fanouts, self._relation_fanouts(fanouts), seed=seed, kind=kind)
        return self.store.sampler(fanouts, seed=seed, kind=kind, num_layers=cfg.num_layers)

    def _relation_fanouts(self, fanouts: tuple[int, ...]) -> Any:
        """The per-relation fanouts of a sampler of ``fanouts``: they apply to training, and to evaluation unless
        --eval-fanouts is given."""
        sampling = self.config.sampling
        if sampling.eval_fanouts is not None and tuple(fanouts) == tuple(sampling.eval_fanouts):
            return None
        return sampling.fanouts_per_relation

    # ------------------------------------------------------------------ checkpoints
    def resume(self) -> bool:
        """Load the checkpoint directory's checkpoint, if it holds one, into the model, optimizer and progress.

        Called by the constructor; returns True when a checkpoint was loaded.
        """
        assert self.checkpointer is not None
        progress = self.checkpointer.resume(self.config.to_dict(), self.model, self.optimizer)
        if progress is None:
            return False
        self.progress_so_far = progress
        self.report.epochs = progress.epochs
        self.report.resumed_from = progress.resumed_from
        return True

    def save_checkpoint(self, epoch: int) -> None:
        """Write the checkpoint after ``epoch`` (atomically; rank 0 only)."""
        assert self.checkpointer is not None
        self.progress_so_far.epochs = self.report.epochs
        state = self.checkpointer.state(epoch, self.config.to_dict(), self.model, self.optimizer, self.progress_so_far)
        self.checkpointer.save(state)

    # ------------------------------------------------------------------ the epoch loop
    def train_epoch(self, epoch: int) -> dict[str, Any]:
        """Train one epoch; returns loss, train accuracy, stage seconds, feature bytes, batch count.

        The same loop in one process and in every rank of a group: ``self.collective`` cuts this rank's
        sub-batches, scales the loss and sums gradients and totals over the ranks.
        """
        self.model.train()
        global_batches = list(
            iter_seed_batches(
                self.train_idx, self.config.sampling.batch_size, shuffle=True, seed=self.config.run.seed, epoch=epoch
            )
        )
        tally = EpochTally()
        steps = self.collective.epoch(epoch, global_batches, self.train_sample, tally, epoch == self.start_epoch)
        start = time.perf_counter()
        producer = self.feed.producer(steps.seed_batches, steps.sample, (epoch - 1) * len(global_batches))
        waiting_since = time.perf_counter()
        with self.progress.stage(f"train epoch {epoch}", total=len(global_batches), unit="batches") as bar:
            try:
                for index, item in enumerate(producer):
                    t0 = time.perf_counter()
                    batch = self.feed.to_device(item)
                    t1 = time.perf_counter()
                    self.optimizer.zero_grad(set_to_none=True)
                    local = int(batch.y.shape[0])
                    loss = None
                    if local:  # a rank's share of a global batch may be empty
                        out = self.task.outputs(self.model, batch.forward(self.model), batch)
                        loss = steps.loss(out, batch.y, index)
                        loss.backward()
                        tally.correct += self.task.correct(out.detach(), batch.y)
                    t2, fields = steps.step(self.optimizer, loss, index, item, waiting_since)
                    tally.add(item, t0 - waiting_since, t1 - t0, t2 - t1)
                    tally.seen += local
                    bar.advance(1, **fields)
                    waiting_since = time.perf_counter()
            finally:
                steps.close()
                producer.close()
        return steps.finish(time.perf_counter() - start)

    # ------------------------------------------------------------------ main loop
    def fit(self) -> dict[str, Any]:
        """Run the remaining epochs, evaluate, and return (and write) the run report.

        The feature store is closed at the end (its buffers and host registrations released).
        """
        lock = self.checkpointer.lock if self.checkpointer is not None else None
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

    def _epoch_traffic(self, before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
        """Bytes per tier read during the epoch, summed over the ranks (like feature_bytes); a typed dataset's
        feature bytes also per node type (``feature_bytes_by_tier_by_type``)."""
        parts = {key: (after[part] - before[part]).by_tier() for key, part in (("feature_bytes_by_tier", "features"),
                 ("topology_bytes_by_tier", "topology"), ("edge_feature_bytes_by_tier", "edge_features"))
                 if part in after}  # fmt: skip
        if "features_by_type" in after:
            by_type = bytes_by_tier_by_type(before["features_by_type"], after["features_by_type"])[1]
            parts.update({("feature_bytes_by_tier_by_type", name): tiers for name, tiers in by_type.items()})
        keys = list(parts)
        values = torch.tensor([float(parts[key][t]) for key in keys for t in TIER_NAMES], dtype=torch.float64)
        summed = self.collective.sum(values).view(len(keys), len(TIER_NAMES)).tolist()
        record: dict[str, Any] = {}
        for key, row in zip(keys, summed):
            tiers = {t: int(v) for t, v in zip(TIER_NAMES, row)}
            if isinstance(key, tuple):
                record.setdefault(key[0], {})[key[1]] = tiers
            else:
                record[key] = tiers
        return record

    def _fit(self) -> dict[str, Any]:
        cfg = self.config
        best = self.progress_so_far
        wall_start = time.perf_counter()
        has_valid = self.evaluator.has_split("valid")
        task = self.task
        epoch_splits = ("valid",) if isinstance(task, LinkTask) else ("valid", "test")
        # links with --full-inference: every epoch's validation (which picks the best epoch) from exact embeddings
        exact_links = isinstance(task, LinkTask) and cfg.run.full_inference
        for epoch in range(self.start_epoch, cfg.optim.epochs + 1):
            record: dict[str, Any] = {"epoch": epoch}
            traffic_before = self.store.traffic()
            learnable_before = learnable_bytes_read(self.model, self.dataset.schema)
            compiled = compile_seconds()
            record.update(self.train_epoch(epoch))
            compiled = compile_seconds() - compiled
            if compiled >= 0.05:  # the epoch's time and batch/s include a first run's kernel compilation
                record["compile_seconds"] = compiled
            record.update(self._epoch_traffic(traffic_before, self.store.traffic()))
            learnable_after = learnable_bytes_read(self.model, self.dataset.schema)
            if learnable_after:  # rows the featureless types' learnable tables gathered, per tier
                record["embedding_bytes_by_tier_by_type"] = {
                    t: {tier: n - learnable_before[t][tier] for tier, n in tiers.items()}
                    for t, tiers in learnable_after.items()
                }
            hit_ratio = self.store.cache_hit_ratio
            if hit_ratio is not None:
                record["cache_hit_ratio"] = float(hit_ratio)
            record.update(dict.fromkeys(task.epoch_keys()))
            if epoch % cfg.run.eval_every == 0 or epoch == cfg.optim.epochs:
                eval_start = time.perf_counter()
                for split in epoch_splits:
                    record.update(self.evaluator.evaluate(self.model, split, exact_links))
                record["eval_seconds"] = time.perf_counter() - eval_start
                score = record[task.score_key] if has_valid else -record["loss"]
                if has_valid and score is not None and not task.higher_is_better:
                    score = -score  # RMSE: lower is better
                if score is not None and score > best.best_valid:
                    best.best_valid = score
                    best.best_epoch = epoch
                    # the model after the last epoch is the best one: nothing to copy, unless a checkpoint keeps it
                    final = epoch == cfg.optim.epochs and self.checkpointer is None
                    best.best_state = None if final else state_snapshot(self.model)
            self.report.epochs.append(record)
            if self.on_epoch:
                self.on_epoch(record)
            if self.checkpointer is not None:
                self.save_checkpoint(epoch)
            if cfg.run.report is not None:
                self.report.write(cfg.run.report)
        if best.best_state is not None:
            self.model.load_state_dict(best.best_state)
        is_main = self.collective.is_main
        if cfg.run.save_model is not None and is_main:
            save_model(cfg.run.save_model, self.model, cfg.to_dict(), self.dataset)
        final: dict[str, Any] = {"epoch": best.best_epoch, "method": "sampled"}
        # a time split: sampled at each pair's time; a model with edge inputs: sampled (layer-wise inference has none)
        if isinstance(task, LinkTask) and (task.times is not None or edge_input_dim(self.model)):
            timed = task.times is not None
            final["method"] = (
                ("temporal" if self.config.sampling.temporal else "static snapshot") if timed else "sampled"
            )
            final["best_epoch_by"] = f"sampled {task.score_key}" if has_valid else "training loss"
            if is_main:
                for split in ("valid", "test"):
                    final.update(self.evaluator.evaluate(self.model, split))
                if task.target is None and timed:  # EdgeBank scores existence at a time, not an edge's value
                    final.update(self.evaluator.edgebank_metrics())
                else:  # the popularity baseline, or an edge-level target's
                    final.update(self.evaluator.popularity_metrics())
            self._finish_report(final, wall_start)
            return self.report.to_dict()
        if isinstance(task, LinkTask):  # exact layer-wise embeddings of all nodes, always
            final["method"] = "full"
            final["best_epoch_by"] = (
                f"{'exact' if exact_links else 'sampled'} {task.score_key}" if has_valid else "training loss"
            )
            if is_main:
                final.update(self.evaluator.full_link_metrics(self.model))  # type: ignore[arg-type]
            self._finish_report(final, wall_start)
            return self.report.to_dict()
        if cfg.run.full_inference and cfg.sampling.sampler == "neighbor" and is_main:
            final["method"] = "full"
            final.update(self.evaluator.full_accuracy(self.model))
        else:
            # the best model was evaluated at its epoch, by the same sampled procedure: reuse those figures (a
            # second pass over valid + test would cost more than the epoch itself with a 1% training split)
            evaluated = next((r for r in self.report.epochs if r.get("epoch") == best.best_epoch), {})
            for split in ("valid", "test"):
                keys = class_metric_keys(split)
                reuse = best.best_epoch > 0 and all(evaluated.get(key) is not None for key in keys)
                final.update(
                    {key: evaluated[key] for key in keys} if reuse else self.evaluator.class_scores(self.model, split)
                )
        test_labels = self.store.labels(self.evaluator.split("test"))
        final["majority_class"], final["test_majority_acc"] = majority_class_accuracy(
            self.store.labels(self.train_idx), test_labels
        )
        if final["test_majority_acc"] is not None:
            constant = np.full(test_labels.shape, final["majority_class"], dtype=np.int64)
            baseline = split_scores(constant, test_labels, int(self.dataset.num_classes), "test")
            final["test_majority_macro_f1"] = baseline["test_macro_f1"]
            final["test_majority_micro_f1"] = baseline["test_micro_f1"]
        self._finish_report(final, wall_start)
        return self.report.to_dict()

    def _finish_report(self, final: dict[str, Any], wall_start: float) -> None:
        self.report.final = final
        self.report.wall_seconds += time.perf_counter() - wall_start
        if self.config.run.report is not None:
            self.report.write(self.config.run.report)


def train(dataset: Dataset | str | os.PathLike[str], config: TrainConfig | None = None, **options: Any) -> TrainResult:
    """Train on ``dataset`` (a Dataset or a path); return the model and the run report (:class:`TrainResult`).

    ``options`` override fields of ``config`` (or of the default :class:`TrainConfig`), e.g.
    ``train("data/cora", model="gcn", fanouts=(10, 10), epochs=50)``. Sets ``num_threads`` and the malloc
    tuning first, as the command line does (:func:`graphtier.configure_process`); torch is loaded by then, so
    for the OpenMP wait policy call :func:`graphtier.configure_threads` before importing torch.
    """
    if not isinstance(dataset, Dataset):
        dataset = Dataset.open(dataset)
    # options replace fields of the parts that own them (dataclasses.replace): the config is not
    # round-tripped through to_dict(), which records the resolved gcn_degrees instead of "auto"
    run_config = config.with_options(**options) if config is not None else TrainConfig(**options)
    run_config = run_config.for_dataset(dataset)
    run_config.validate(dataset)
    configure_process(run_config.run.num_threads, passive_wait=False)
    trainer = Trainer(dataset, run_config)
    report = trainer.fit()
    trainer.model.eval()
    return TrainResult(trainer.model, report, trainer.config)
