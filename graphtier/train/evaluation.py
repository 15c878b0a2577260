"""Evaluation of a model: sampled inference accuracy (shared over ranks) and exact layer-wise full-graph logits."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from graphtier.graphstore import GraphStore
from graphtier.train.collective import Collective
from graphtier.train.feed import BatchFeed, SampleFn
from graphtier.train.inference import layerwise_inference

ProgressFactory = Callable[[str, int], Callable[[int, dict[str, Any]], None]]
"""``(label, total steps) -> tick(done, fields)``: a progress display per phase (train, valid, test, ...)."""


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


class Evaluator:
    """Accuracy of a model on the store's splits, with the sampler and batch size of evaluation.

    Args:
        store: the graph's store (splits, labels, topology, gather).
        feed: turns seed batches into device batches (:class:`BatchFeed`).
        sample: the evaluation sampler (eval fanouts).
        collective: shares the nodes out over ranks and sums the counts (does nothing in one process).
        batch_size: seeds per evaluation mini-batch and nodes per chunk of layer-wise inference.
        degree: float [N] full-graph in-degrees on the device for layer-wise GCN inference, else None.
        progress: makes a progress display per phase, or None.
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
        progress: ProgressFactory | None = None,
    ) -> None:
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

    @torch.no_grad()
    def predict_sampled(self, model: nn.Module, node_ids: np.ndarray, label: str = "eval") -> torch.Tensor:
        """Predicted classes (int64 [len(node_ids)], CPU) from sampled mini-batches (eval fanouts)."""
        model.eval()
        if node_ids.size == 0:
            return torch.empty(0, dtype=torch.int64)
        size = self.batch_size
        seed_batches = [node_ids[i : i + size] for i in range(0, node_ids.shape[0], size)]
        tick = self.progress(label, len(seed_batches)) if self.progress else None
        predictions = []
        for step, item in enumerate(self.feed.producer(seed_batches, self.sample, 0, training=False)):
            batch = self.feed.to_device(item)
            predictions.append(model(batch.x, batch.blocks, batch.degree)[batch.seed_index].argmax(dim=1).cpu())
            if tick:
                tick(step + 1, {})
        return torch.cat(predictions)

    def accuracy(self, model: nn.Module, split: str) -> float | None:
        """Sampled-inference accuracy on the store's ``split`` (train, valid, test); None when it is empty.

        Each rank predicts its share of the nodes; the counts are summed over the ranks."""
        node_ids = self.split(split)
        if node_ids.size == 0:
            return None
        mine = self.collective.shard(node_ids)
        correct = (
            float((self.predict_sampled(model, mine, split).numpy() == self.store.labels(mine)).sum())
            if mine.size
            else 0.0
        )
        total = self.collective.sum(torch.tensor([correct, float(mine.size)], dtype=torch.float64))
        return float(total[0] / total[1])

    @torch.no_grad()
    def full_graph_logits(self, model: nn.Module) -> torch.Tensor:
        """float32 [N, C] logits from exact layer-wise full-neighbour inference (CPU tensor)."""
        tick = self.progress("inference", 1) if self.progress else None
        indptr, indices = self.store.csc
        return layerwise_inference(
            model,
            self.store.gather,  # each gathered block is used before the ring slot comes round again
            indptr,
            indices,
            num_nodes=self.store.num_nodes,
            device=self.feed.device,
            degree=self.degree,
            chunk_size=self.batch_size,
            progress=(lambda done, total: tick(done, {})) if tick else None,
        )

    def full_accuracy(self, model: nn.Module) -> dict[str, float | None]:
        """``{"valid_acc", "test_acc"}`` of exact layer-wise inference (None for an empty split)."""
        predicted = self.full_graph_logits(model).argmax(dim=1).numpy()
        accuracy: dict[str, float | None] = {}
        for split in ("valid", "test"):
            node_ids = self.split(split)
            hits = predicted[node_ids] == self.store.labels(node_ids)
            accuracy[f"{split}_acc"] = float(hits.mean()) if node_ids.size else None
        return accuracy
