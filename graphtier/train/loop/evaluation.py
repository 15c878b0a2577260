"""Evaluation of a model: sampled inference (accuracy shared over ranks; link scores of evaluation pairs) and
exact layer-wise full-graph outputs (logits, or a link model's embeddings, then the pairs' scores)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Callable

import numpy as np
import torch
from torch import nn

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.edges.edgebank import edgebank_split_scores
from graphtier.dataset.edges.link_split import LinkPairs
from graphtier.graphstore import GraphStore
from graphtier.train.infer.inference import layerwise_outputs
from graphtier.train.infer.pair_space import PairSpace, pair_space
from graphtier.train.infer.typed_inference import typed_layerwise_outputs, typed_output_tables
from graphtier.train.loop.collective import Collective
from graphtier.train.loop.feed import BatchFeed, DeviceBatch, SampleFn
from graphtier.train.loop.task import (
    LinkTask,
    NodeTask,
    Task,
    TypedLinkTask,
    class_metric_keys,
    eval_pairs,
    evaluate_link_scores,
)
from graphtier.train.nn.link_model import LinkModel, encoder_of, score_pairs
from graphtier.train.nn.typed_models import TypedGNN, TypedMLP

LinkSamplerFactory = Callable[[np.ndarray, np.ndarray, np.ndarray | None], SampleFn]
"""``(pairs int64 [P, 2], labels float32 [P], times int64 [P] or None) -> sample(pair_ids, batch_id)``: the
evaluation link sampler (``times``: when each pair is scored, on a time split)."""


def majority_class_accuracy(train_labels: np.ndarray, eval_labels: np.ndarray) -> tuple[int | None, float | None]:
    """The baseline of every accuracy: (the most common class of the train split, its accuracy on the eval split).

    ``train_labels``, ``eval_labels``: int [B] labels of the train split and of the evaluated split (-1 =
    unlabelled, ignored in the train split). The class is taken from the train split's labels (ties: the
    lowest class id), as a model would learn it, and scored on the eval split like the model's accuracy (share
    of those nodes whose label is that class). Returns (None, None) without labelled train nodes, (class, None)
    for an empty eval split.
    """
    train_labels = np.asarray(train_labels).astype(np.int64, copy=False)
    train_labels = train_labels[train_labels >= 0]
    if train_labels.size == 0:
        return None, None
    majority = int(np.bincount(train_labels).argmax())
    eval_labels = np.asarray(eval_labels)
    if eval_labels.size == 0:
        return majority, None
    return majority, float((eval_labels == majority).mean())


def class_counts(predicted: np.ndarray, labels: np.ndarray, num_classes: int) -> np.ndarray:
    """float64 [3, num_classes]: per class the true positives, the predictions and the labels of it.

    ``predicted``, ``labels``: int [B] classes of the same nodes; a label outside ``[0, num_classes)`` (-1:
    unlabelled) counts nowhere. Counts add up over batches and ranks; :func:`f1_scores` reads them.
    """
    predicted = np.asarray(predicted).astype(np.int64, copy=False)
    labels = np.asarray(labels).astype(np.int64, copy=False)
    keep = (labels >= 0) & (labels < num_classes)
    predicted, labels = predicted[keep], labels[keep]
    counts = np.zeros((3, num_classes), dtype=np.float64)
    counts[0] = np.bincount(labels[predicted == labels], minlength=num_classes)[:num_classes]
    counts[1] = np.bincount(predicted.clip(0, num_classes - 1), minlength=num_classes)[:num_classes]
    counts[2] = np.bincount(labels, minlength=num_classes)[:num_classes]
    return counts


def f1_scores(counts: np.ndarray) -> dict[str, float | None]:
    """``{"macro_f1", "micro_f1"}`` of :func:`class_counts` [3, C] (None for no labelled node).

    F1 of a class = 2 TP / (predicted + actual); macro-F1 is their mean over the classes that were predicted or
    present (as scikit-learn's ``f1_score(average="macro")``, 0 for a present class never predicted);
    micro-F1 pools the counts (for one label per node it equals the accuracy).
    """
    true_positive, predicted, actual = counts
    present = (predicted + actual) > 0
    if not present.any():
        return {"macro_f1": None, "micro_f1": None}
    per_class = 2.0 * true_positive[present] / (predicted[present] + actual[present])
    micro = 2.0 * true_positive.sum() / (predicted.sum() + actual.sum())
    return {"macro_f1": float(per_class.mean()), "micro_f1": float(micro)}


def split_scores(predicted: np.ndarray, labels: np.ndarray, num_classes: int, split: str) -> dict[str, float | None]:
    """``{split}_acc``, ``{split}_macro_f1``, ``{split}_micro_f1`` of int [B] predictions against labels (None when
    empty)."""
    if np.asarray(labels).size == 0:
        return dict.fromkeys(class_metric_keys(split))
    accuracy = float((np.asarray(predicted) == np.asarray(labels)).mean())
    return _class_scores(split, accuracy, class_counts(predicted, labels, num_classes))


def _class_scores(split: str, accuracy: float, counts: np.ndarray) -> dict[str, float | None]:
    """The report entries of :data:`~graphtier.train.loop.task.CLASS_METRICS` from the accuracy and the
    :func:`class_counts` [3, C] of ``split``."""
    return {f"{split}_acc": accuracy, **{f"{split}_{name}": value for name, value in f1_scores(counts).items()}}


class Evaluator:
    """Accuracy of a model on the store's splits, with the sampler and batch size of evaluation.

    Args:
        store: the graph's store (splits, labels, topology, gather).
        feed: turns seed batches into device batches (:class:`BatchFeed`).
        sample: the evaluation sampler (eval fanouts).
        collective: shares the nodes out over ranks and sums the counts (does nothing in one process).
        batch_size: seeds per evaluation mini-batch and nodes per chunk of layer-wise inference.
        degree: float [N] full-graph in-degrees on the device for layer-wise GCN inference, else None.
        progress: reports each evaluation pass as a stage (``valid``, ``test``, ``inference: layer-wise``).
        task: the run's task (:class:`NodeTask` when not given).
        link_sampler: builds the evaluation sampler of a link split's pairs (link task), or None.
    """

    def __init__(
        self,
        store: GraphStore,
        feed: BatchFeed,
        sample: SampleFn,
        collective: Collective,
        *,
        batch_size: int,
        degree: torch.Tensor | None,
        progress: Progress = NO_PROGRESS,
        task: Task | None = None,
        link_sampler: LinkSamplerFactory | None = None,
    ) -> None:
        self.task: Task = task if task is not None else NodeTask()
        self.link_sampler = link_sampler
        self._link_samplers: dict[str, tuple[SampleFn, int]] = {}  # split -> (sampler, pairs)
        self.store = store
        self.feed = feed
        self.sample = sample
        self.collective = collective
        self.batch_size = batch_size
        self.degree = degree
        self.progress = progress
        self._splits: dict[str, np.ndarray] = {}

    def split(self, name: str) -> np.ndarray:
        """Node ids (int64 numpy) of the store's split ``name``, read once."""
        if name not in self._splits:
            self._splits[name] = self.store.split(name)
        return self._splits[name]

    def has_split(self, name: str) -> bool:
        """Whether the task's split ``name`` has anything to evaluate (nodes, or positive pairs)."""
        if isinstance(self.task, LinkTask):
            return self.store.link_split(name).num_positives > 0
        return self.split(name).size > 0

    def evaluate(self, model: nn.Module, split: str, exact_links: bool = False) -> dict[str, float | None]:
        """The task's sampled metrics of ``split``: ``{split}_acc`` (with F1), or the link metrics
        (:meth:`LinkTask.metrics`); ``exact_links``: the link metrics of exact layer-wise embeddings instead."""
        if isinstance(self.task, LinkTask):
            pairs = self.store.link_split(split)
            if exact_links:
                assert isinstance(model, LinkModel)
                return self._exact_link_metrics(model, split, self.full_graph_logits(model))[0]
            return evaluate_link_scores(self.task, split, pairs, self.link_scores_sampled(model, split))
        return self.class_scores(model, split)

    def _sampled_batches(self, seed_batches: list[np.ndarray], sample: SampleFn, label: str) -> Iterator[DeviceBatch]:
        """The device batches of ``seed_batches`` drawn by ``sample`` (eval fanouts), with the progress of ``label``."""
        with self.progress.stage(label, total=len(seed_batches), unit="batches") as bar:
            for item in self.feed.producer(seed_batches, sample, 0, training=False):
                yield self.feed.to_device(item)
                bar.advance()

    @torch.no_grad()
    def link_scores_sampled(self, model: nn.Module, split: str) -> np.ndarray:
        """float32 [P + Q]: logits of the split's positives then negatives (:func:`eval_pairs` order), from
        sampled neighbourhoods (eval fanouts). Every rank scores every pair (the metrics need them all)."""
        model.eval()
        if split not in self._link_samplers:
            assert self.link_sampler is not None
            assert isinstance(self.task, LinkTask)
            pairs, labels = self.task.eval_pairs(self.store, split)
            times = self.task.eval_times(self.store, split)  # a time split: when each pair is scored
            self._link_samplers[split] = (self.link_sampler(pairs, labels, times), pairs.shape[0])
        sample, count = self._link_samplers[split]
        size = self.batch_size
        seed_batches = [np.arange(i, min(count, i + size), dtype=np.int64) for i in range(0, count, size)]
        scores = [
            self.task.outputs(model, batch.forward(model), batch).float().cpu()
            for batch in self._sampled_batches(seed_batches, sample, split)
        ]
        return torch.cat(scores).numpy() if scores else np.empty(0, np.float32)

    @torch.no_grad()
    def predict_sampled(self, model: nn.Module, node_ids: np.ndarray, label: str = "eval") -> torch.Tensor:
        """Predicted classes (int64 [len(node_ids)], CPU) from sampled mini-batches (eval fanouts)."""
        model.eval()
        if node_ids.size == 0:
            return torch.empty(0, dtype=torch.int64)
        size = self.batch_size
        seed_batches = [node_ids[i : i + size] for i in range(0, node_ids.shape[0], size)]
        predictions = [
            batch.forward(model)[batch.seed_index].argmax(dim=1).cpu()
            for batch in self._sampled_batches(seed_batches, self.sample, label)
        ]
        return torch.cat(predictions)

    def class_scores(self, model: nn.Module, split: str) -> dict[str, float | None]:
        """Sampled inference on the store's ``split``: ``{split}_acc``, ``{split}_macro_f1``, ``{split}_micro_f1``
        (None when the split is empty).

        Each rank predicts its share of the nodes; the per-class counts are summed over the ranks."""
        node_ids = self.split(split)
        if node_ids.size == 0:
            return dict.fromkeys(class_metric_keys(split))
        num_classes = int(self.store.dataset.num_classes)
        mine = self.collective.shard(node_ids)
        counts = np.zeros((3, num_classes), dtype=np.float64)
        correct = 0.0
        if mine.size:
            predicted, labels = self.predict_sampled(model, mine, split).numpy(), self.store.labels(mine)
            correct = float((predicted == labels).sum())
            counts = class_counts(predicted, labels, num_classes)
        local = torch.from_numpy(np.concatenate([[correct, float(mine.size)], counts.ravel()]))
        total = self.collective.sum(local).numpy()
        return _class_scores(split, float(total[0] / total[1]), total[2:].reshape(3, num_classes))

    @torch.no_grad()
    def full_graph_logits(self, model: nn.Module) -> torch.Tensor:
        """float32 [N, C] logits (a link model: [N, hidden] embeddings) from exact layer-wise full-neighbour
        inference (CPU tensor); a typed model: the logits of every node of the target type [count(target), C]; a
        typed link model: the embeddings of its relation's pair space
        (:class:`~graphtier.train.infer.link_predict.PairSpace`)."""
        indptr, indices = self.store.csc
        if isinstance(self.task, TypedLinkTask):  # the pair space's table: the SRC rows, then the DST rows
            src, _, dst = self.task.relation
            tables = typed_output_tables(
                encoder_of(model), lambda node_type, ids: self.store.gather({node_type: ids})[node_type], indptr,
                indices, self.store.dataset.schema, device=self.feed.device, chunk_size=self.batch_size,
                progress=self.progress,
            )  # fmt: skip
            return tables[src] if src == dst else torch.cat([tables[src], tables[dst]])
        if isinstance(model, (TypedGNN, TypedMLP)):
            return typed_layerwise_outputs(
                model, lambda node_type, ids: self.store.gather({node_type: ids})[node_type], indptr, indices,
                self.store.dataset.schema, device=self.feed.device, chunk_size=self.batch_size,
                progress=self.progress,
            )[0]  # fmt: skip
        return layerwise_outputs(
            encoder_of(model),
            self.store.gather,  # each gathered block is used before the ring slot comes round again
            indptr,
            indices,
            num_nodes=self.store.num_nodes,
            device=self.feed.device,
            degree=self.degree,
            chunk_size=self.batch_size,
            progress=self.progress,
        )[0]

    def full_accuracy(self, model: nn.Module) -> dict[str, float | None]:
        """``valid_``/``test_`` ``acc``, ``macro_f1``, ``micro_f1`` of exact layer-wise inference (None for an
        empty split)."""
        predicted = self.full_graph_logits(model).argmax(dim=1).numpy()
        scores: dict[str, float | None] = {}
        for split in ("valid", "test"):
            node_ids = self.split(split)
            labels = self.store.labels(node_ids)
            scores.update(split_scores(predicted[node_ids], labels, int(self.store.dataset.num_classes), split))
        return scores

    def _exact_link_metrics(
        self, model: LinkModel, split: str, embeddings: torch.Tensor
    ) -> tuple[dict[str, float | None], LinkPairs, np.ndarray]:
        """The link metrics of ``split`` scored by the decoder on exact ``embeddings`` [N, hidden]; also the split's
        pairs and its int64 [P, 2] evaluated pairs (positives then negatives)."""
        assert isinstance(self.task, LinkTask)
        pairs = self.store.link_split(split)
        every, _ = self.task.eval_pairs(self.store, split)
        in_space = every + np.array([0, self._space.shift], np.int64)
        scores = score_pairs(model, embeddings, torch.from_numpy(in_space), chunk_size=max(self.batch_size, 65536))
        return evaluate_link_scores(self.task, split, pairs, scores.numpy()), pairs, every

    def full_link_metrics(self, model: LinkModel) -> dict[str, float | None]:
        """Valid and test link metrics from exact layer-wise embeddings of all nodes, and the popularity
        baseline on the test pairs (score = the destination's in-degree in the training graph):
        ``test_popularity_auc``, ``_ap``, ``_hits@K`` (+ ``_mrr``)."""
        assert isinstance(self.task, LinkTask)
        embeddings = self.full_graph_logits(model)
        out: dict[str, float | None] = {}
        for split in ("valid", "test"):
            out.update(self._exact_link_metrics(model, split, embeddings)[0])
        out.update(self.popularity_metrics())
        return out

    def popularity_metrics(self) -> dict[str, float | None]:
        """The popularity baseline's test metrics (:meth:`_popularity` with each destination's in-degree in the
        training graph; a typed dataset: in the split relation)."""
        space = self._space
        return self._popularity(np.diff(np.asarray(space.csc[0])[space.shift :]).astype(np.float32))

    @functools.cached_property
    def _space(self) -> PairSpace:
        """The link task's :class:`PairSpace` (a homogeneous dataset: the store's graph)."""
        if isinstance(self.task, TypedLinkTask):
            return pair_space(self.store.dataset)
        n = self.store.num_nodes
        return PairSpace(self.store.csc, (0, n), False, 0, n, n)

    def _popularity(self, degree: np.ndarray) -> dict[str, float | None]:
        """The popularity baseline's test metrics (``test_popularity_*``): each test pair scored by ``degree``
        float32 [destinations] of its destination; with an edge-level target its baseline instead
        (:meth:`~graphtier.train.loop.edge_target.EdgeTarget.baseline`)."""
        assert isinstance(self.task, LinkTask)
        if self.task.target is not None:
            return self.task.target.baseline()
        pairs = self.store.link_split("test")
        every, _ = eval_pairs(pairs)
        popularity = evaluate_link_scores(self.task, "test", pairs, degree[every[:, 1]])
        return {key.replace("test_", "test_popularity_", 1): value for key, value in popularity.items()}

    def edgebank_metrics(self) -> dict[str, float | None]:
        """EdgeBank's test metrics (``test_edgebank_*``) on a time split: a test pair scores 1 when its edge is in
        the graph at a time before the pair's (Poursafaei et al., NeurIPS 2022: the memorising baseline)."""
        assert isinstance(self.task, LinkTask)
        positive, negative = edgebank_split_scores(self.store.dataset, "test")  # each pair at its own time
        metrics = self.task.metrics("test", positive, negative)
        return {key.replace("test_", "test_edgebank_", 1): value for key, value in metrics.items()}
