"""Evaluation of the trainer's model: sampled inference accuracy and exact layer-wise full-graph logits."""

from __future__ import annotations

import numpy as np
import torch

from graphtier.train.comm import (
    all_reduce_sum,
)
from graphtier.train.inference import layerwise_inference


def majority_class_accuracy(
    train_labels: np.ndarray, eval_labels: np.ndarray
) -> tuple[int | None, float | None]:
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


class Evaluation:
    """Sampled prediction and accuracy (shared over ranks) and full-graph logits.

    Mixed into :class:`graphtier.train.trainer.Trainer`; uses its ``config``, ``model``, ``dataset``, ``dist``,
    samplers, producer and feature store.
    """

    @torch.no_grad()
    def predict_sampled(self, node_ids: np.ndarray, label: str = "eval") -> torch.Tensor:
        """Predicted classes (int64 [len(node_ids)], CPU) from sampled mini-batches (eval fanouts)."""
        self.model.eval()
        if node_ids.size == 0:
            return torch.empty(0, dtype=torch.int64)
        size = self.config.sampling.eval_batch_size
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
            correct = float((self.predict_sampled(mine, label).numpy() == self.store.labels(mine)).sum()) if mine.size else 0.0
            total = all_reduce_sum(self.dist, torch.tensor([correct, float(mine.size)], dtype=torch.float64))
            return float(total[0] / total[1])
        predicted = self.predict_sampled(node_ids, label)
        return float((predicted.numpy() == self.store.labels(node_ids)).mean())

    @torch.no_grad()
    def full_graph_logits(self) -> torch.Tensor:
        """float32 [N, C] logits from exact layer-wise full-neighbour inference (CPU tensor)."""
        tick = self.progress("inference", 1) if self.progress else None
        indptr, indices = self.store.csc
        return layerwise_inference(
            self.model,
            self.store.gather,  # each gathered block is used before the ring slot comes round again
            indptr,
            indices,
            num_nodes=self.store.num_nodes,
            device=self.device,
            degree=self.degree,
            chunk_size=self.config.sampling.eval_batch_size,
            progress=(lambda done, total: tick(done, {})) if tick else None,
        )
