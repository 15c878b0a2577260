"""The task a run trains: what varies between node classification and link prediction, in one place each.

The trainer's one epoch loop, the :class:`~graphtier.train.loop.collective.Collective`'s loss, the producer's
targets and the evaluation call a :class:`Task` instead of hard-coding node classification:

- ``train_seeds``: what an epoch's batches are cut from (node ids of the train split; rows of ``link_train``);
- ``train_sampler``: the sampler of those seeds (the node sampler; the store's link sampler);
- ``targets``: the targets of a sampled batch (labels of the seeds; the batch's pair labels, 1/0);
- ``outputs``: what the loss compares to them (logits of the seeds' rows; one logit per pair from the decoder);
- ``loss`` (cross entropy; BCE with logits), ``correct`` (argmax == label; (logit > 0) == label);
- ``evaluate`` (per epoch, sampled) and ``final`` (exact layer-wise inference where asked for; always for links)
  with their report keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from graphtier.dataset.edges.link_split import LinkPairs
from graphtier.dataset.edges.node_time import target_node_times
from graphtier.graphstore import GraphStore
from graphtier.sampling import MiniBatch
from graphtier.sampling.link.sampler import LinkMiniBatch
from graphtier.sampling.link.typed_link import TypedLinkMiniBatch
from graphtier.train.loop.edge_target import EdgeTarget
from graphtier.train.loop.feed import DeviceBatch, SampleFn
from graphtier.train.loop.link_metrics import auc, average_precision, hits_at_k, mrr
from graphtier.train.nn.link_model import LinkModel
from graphtier.train.options.spec import TaskSpec

CLASS_METRICS = ("acc", "macro_f1", "micro_f1")
"""The node-classification metrics of a split, reported as ``{split}_{metric}``."""


def class_metric_keys(split: str) -> list[str]:
    """``[f"{split}_acc", f"{split}_macro_f1", f"{split}_micro_f1"]``: the report keys of :data:`CLASS_METRICS`."""
    return [f"{split}_{name}" for name in CLASS_METRICS]


NodeSamplerFactory = Callable[[tuple[int, ...], int], SampleFn]
"""``(fanouts, seed) -> sample``: the run's node sampler (its kind, its depth)."""


class Task:
    """Node classification (this base class is :class:`NodeTask`'s interface); see the module."""

    name = "node"
    uses_workload = True  # multi-process balancing by the estimated workload of each training node
    score_key = "valid_acc"  # the per-epoch metric that picks the best epoch
    higher_is_better = True  # of score_key

    def train_seeds(self, store: GraphStore) -> np.ndarray:
        """int64 [T]: the ids an epoch's seed batches are cut from."""
        raise NotImplementedError

    def train_sampler(
        self, store: GraphStore, make_sampler: NodeSamplerFactory, fanouts: tuple[int, ...], seed: int
    ) -> SampleFn:
        """The training sampler ``(seeds, batch_id) -> MiniBatch`` of :meth:`train_seeds`."""
        raise NotImplementedError

    def targets(self, store: GraphStore, seeds: np.ndarray, batch: MiniBatch) -> torch.Tensor:
        """CPU targets of a sampled batch (called in the producer thread)."""
        raise NotImplementedError

    def outputs(self, model: nn.Module, out: torch.Tensor, batch: DeviceBatch) -> torch.Tensor:
        """What the loss compares to ``batch.y``, from the model's output ``out`` [rows, ...] of ``batch``."""
        raise NotImplementedError

    def loss(self, outputs: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
        """The loss of ``outputs`` against targets ``y`` (``reduction``: mean or sum)."""
        raise NotImplementedError

    def correct(self, outputs: torch.Tensor, y: torch.Tensor) -> int:
        """How many of the batch's targets the outputs predict right (train accuracy's numerator)."""
        raise NotImplementedError

    def targets_per_seed(self) -> int:
        """Targets (rows of ``y``) per training seed: the global batch's loss divisor is seeds times this."""
        return 1

    def epoch_keys(self) -> list[str]:
        """Report keys of the per-epoch evaluation (None when an epoch is not evaluated)."""
        return [key for split in ("valid", "test") for key in class_metric_keys(split)]


class NodeTask(Task):
    """Node classification: seeds are train nodes, targets their labels, cross-entropy, accuracy."""

    def train_seeds(self, store: GraphStore) -> np.ndarray:
        return store.split("train")

    def train_sampler(
        self, store: GraphStore, make_sampler: NodeSamplerFactory, fanouts: tuple[int, ...], seed: int
    ) -> SampleFn:
        return make_sampler(fanouts, seed)

    def targets(self, store: GraphStore, seeds: np.ndarray, batch: MiniBatch) -> torch.Tensor:
        """int64 [B] labels of the seeds."""
        return torch.from_numpy(np.asarray(store.labels(seeds), dtype=np.int64))

    def outputs(self, model: nn.Module, out: torch.Tensor, batch: DeviceBatch) -> torch.Tensor:
        """Logits float [B, C] of the seeds' rows."""
        return out[batch.seed_index]

    def loss(self, outputs: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
        return F.cross_entropy(outputs, y, reduction=reduction)

    def correct(self, outputs: torch.Tensor, y: torch.Tensor) -> int:
        return int((outputs.argmax(dim=1) == y).sum())


def timed_node_sampler(
    store: GraphStore, fanouts: tuple[int, ...], strategy: str, seed: int, relation_fanouts: Any = None
) -> SampleFn:
    """``(seeds, batch_id) -> MiniBatch``: node seeds sampled each at its node's time (``node_time[seed]``), the node
    sampler of ``--temporal`` node classification (training and sampled evaluation; ``strategy`` uniform or recent).
    A typed dataset: seeds are local ids of the target type, ``relation_fanouts`` as for its untimed sampler.

    The cut admits edges AT the seed's time (``<=``): an edge is never older than its later end, so a node's own
    edges are at or after its time, and a strict cut would leave a node with none (arXiv: a 2019 paper reads the
    papers it cites, 2019 or earlier; never a later paper citing it)."""
    timed = store.temporal_sampler(fanouts, strategy, seed=seed, inclusive=True, relation_fanouts=relation_fanouts)
    node_time = store.dataset.node_time
    assert node_time is not None  # TrainConfig.validate_node refuses --temporal without node times
    schema = store.dataset.schema

    def sample(seeds: np.ndarray, batch_id: int) -> MiniBatch:
        return timed(seeds, batch_id, target_node_times(node_time, schema, seeds))

    return sample


@dataclass(frozen=True)
class PairTimes:
    """When the pairs of a time split (``link.meta["split_by"] == "time"``) are scored.

    The dataset's graph holds every edge with its time, the held-out ones included, so a sampler must cut at a
    time. With a ``strategy`` (``--temporal``) each pair is sampled at its own time (neighbours strictly earlier);
    without, every pair at ``static_time`` (the first validation time): the model sees the training period's graph
    as a static snapshot, the untimed baseline, with the training targets excluded as on a random split.
    """

    strategy: str
    static_time: int | None

    def of(self, pairs: LinkPairs, negatives: bool) -> np.ndarray:
        """int64 [P] (or [P + Q] with ``negatives``, in :func:`eval_pairs` order): the time of each pair."""
        count = pairs.num_positives + (pairs.negative_pairs().shape[0] if negatives else 0)
        if self.static_time is not None:
            return np.full(count, self.static_time, np.int64)
        positive = np.asarray(pairs.positive_times, dtype=np.int64)
        negative = pairs.negative_pair_times() if negatives else None
        return positive if negative is None else np.concatenate([positive, negative.astype(np.int64, copy=False)])

    @property
    def exclude(self) -> bool:
        """Whether training removes its target edges from the blocks (a snapshot reads them; a pair's own time
        does not)."""
        return self.static_time is not None


def pair_times(store: GraphStore, temporal: str | None) -> PairTimes | None:
    """The :class:`PairTimes` of the store's time split (``temporal``: ``--temporal``'s strategy), None on a random
    split."""
    link = store.dataset.link
    if link is None or link.meta.get("split_by") != "time":
        return None
    return PairTimes(temporal or "uniform", None if temporal else int(link.meta["valid_from"]))


class LinkTask(Task):
    """Link prediction on the dataset's edge split (:class:`TaskSpec` options: negatives, Hits@K); ``times``: the
    split's :class:`PairTimes` (a time split), or None; ``target``: the pairs' :class:`EdgeTarget` (``--link-target``:
    labelled pairs, no negatives), or None (edge existence)."""

    name = "link"
    uses_workload = False  # the workload estimate is per node: ranks share pairs by count

    def __init__(
        self, spec: TaskSpec, per_positive: bool = False, times: PairTimes | None = None,
        target: EdgeTarget | None = None, relation_fanouts: Any = None,
    ) -> None:  # fmt: skip
        self.spec = spec
        self.target = target
        self.relation_fanouts = relation_fanouts  # a typed dataset's training overrides of the fanouts
        self.per_positive = per_positive and target is None
        self.score_key = target.score_key if target else "valid_mrr" if self.per_positive else "valid_auc"
        self.higher_is_better = target.higher_is_better if target else True
        self.times = times

    @property
    def train_negatives(self) -> int:
        """Negatives drawn per training pair: none with an edge-level target (the labelled pairs supervise)."""
        return 0 if self.target is not None else self.spec.num_negatives

    def train_seeds(self, store: GraphStore) -> np.ndarray:
        """int64 [P]: rows of ``link_train.npy``."""
        return np.arange(store.link_split("train").num_positives, dtype=np.int64)

    def train_sampler(
        self, store: GraphStore, make_sampler: NodeSamplerFactory, fanouts: tuple[int, ...], seed: int
    ) -> SampleFn:
        """The store's link sampler over the training pairs (negatives drawn, target edges excluded; a time split:
        at the :class:`PairTimes`; a typed dataset: pairs of its split relation, with ``relation_fanouts``)."""
        pairs = store.link_split("train")
        times = None if self.times is None else self.times.of(pairs, False)
        return store.link_sampler(
            fanouts, np.asarray(pairs.positives), num_negatives=self.train_negatives, relation_fanouts=self.relation_fanouts,
            negative_sampling=self.spec.negative_sampling, seed=seed, **self._time_options(times),
        )  # fmt: skip

    def pair_sampler(
        self, store: GraphStore, fanouts: tuple[int, ...], pairs: np.ndarray, labels: np.ndarray, seed: int,
        relation_fanouts: Any = None, times: np.ndarray | None = None,
    ) -> SampleFn:  # fmt: skip
        """The evaluation sampler of ``pairs`` (int64 [P, 2]) with ``labels`` (float32 [P]): nothing excluded;
        ``times`` (int64 [P], :meth:`eval_times`) on a time split; ``relation_fanouts`` a typed dataset's."""
        return store.link_sampler(fanouts, pairs, labels=labels, seed=seed, relation_fanouts=relation_fanouts,
                                  **self._time_options(times))  # fmt: skip

    def eval_times(self, store: GraphStore, split: str) -> np.ndarray | None:
        """int64 [P + Q]: the times of ``split``'s :func:`eval_pairs` on a time split, else None."""
        return None if self.times is None else self.times.of(store.link_split(split), self.target is None)

    def eval_pairs(self, store: GraphStore, split: str) -> tuple[np.ndarray, np.ndarray]:
        """int64 [P + Q, 2] pairs and float32 [P + Q] labels that evaluate ``split``: :func:`eval_pairs` (positives
        then negatives, 1/0), or with an edge-level target its positives [P] and their targets."""
        pairs = store.link_split(split)
        if self.target is None:
            return eval_pairs(pairs)
        return np.asarray(pairs.positives, dtype=np.int64), self.target.values(split)

    def _time_options(self, times: np.ndarray | None) -> dict[str, Any]:
        """The time options of the store's link sampler (none on a random split)."""
        if self.times is None or times is None:
            return {}
        return {"times": times, "temporal": self.times.strategy, "exclude": self.times.exclude}

    def targets(self, store: GraphStore, seeds: np.ndarray, batch: MiniBatch) -> torch.Tensor:
        """float32 [M] pair labels (1 positive, 0 negative), or the targets [B] of the seeds (rows of
        ``link_train.npy``) with an edge-level target."""
        assert isinstance(batch, (LinkMiniBatch, TypedLinkMiniBatch))
        if self.target is not None:
            return torch.from_numpy(self.target.values("train", seeds)).to(batch.label.device)
        return batch.label

    def outputs(self, model: nn.Module, out: torch.Tensor, batch: DeviceBatch) -> torch.Tensor:
        """Logits float [M]: the decoder's score of each pair's source and destination embeddings."""
        assert isinstance(model, LinkModel) and batch.src_index is not None and batch.dst_index is not None
        # index_select, not out[index]: the backward of indexing adds the rows of a node in several pairs in a
        # thread-dependent order on the CPU (the same seed gave other losses run to run); index_add_ does not
        return model.score(out.index_select(0, batch.src_index), out.index_select(0, batch.dst_index))

    def loss(self, outputs: torch.Tensor, y: torch.Tensor, reduction: str = "mean") -> torch.Tensor:
        if self.target is not None:
            return self.target.loss(outputs, y, reduction)
        return F.binary_cross_entropy_with_logits(outputs, y, reduction=reduction)

    def correct(self, outputs: torch.Tensor, y: torch.Tensor) -> int:
        if self.target is not None:
            return self.target.correct(outputs, y)
        return int(((outputs > 0).to(y.dtype) == y).sum())

    def targets_per_seed(self) -> int:
        return 1 + self.train_negatives

    def epoch_keys(self) -> list[str]:
        if self.target is not None:
            return self.target.epoch_keys()
        keys = ["valid_auc", "valid_ap", f"valid_hits@{self.spec.hits_k}"]
        return keys + (["valid_mrr"] if self.per_positive else [])

    def metrics(self, split: str, positive: np.ndarray, negative: np.ndarray) -> dict[str, float | None]:
        """``{split}_auc``, ``_ap``, ``_hits@K`` (+ ``_mrr`` with per-positive negatives) of the scores.

        ``positive`` [P]; ``negative`` [Q] (negative pairs) or [P, K] (each positive's own negatives).
        """
        k = self.spec.hits_k
        flat = negative.reshape(-1)
        out: dict[str, float | None] = {
            f"{split}_auc": auc(positive, flat),
            f"{split}_ap": average_precision(positive, flat),
            f"{split}_hits@{k}": hits_at_k(positive, negative, k) if negative.size else None,
        }
        if negative.ndim == 2:
            out[f"{split}_mrr"] = mrr(positive, negative)
        return out


class TypedLinkTask(LinkTask):
    """Link prediction on the edge split of one relation ``(SRC, REL, DST)`` of a typed dataset: the pairs' local
    ids; batches from the store's link sampler (:func:`~graphtier.graphstore.links.typed_link_sampler`); the model's output a dict of
    embeddings per type, scored ``SRC`` row against ``DST`` row. ``relation_fanouts``: the run's
    ``fanouts_per_relation`` of the training sampler; ``times``: as :class:`LinkTask`'s (a split by time)."""

    def __init__(
        self, spec: TaskSpec, relation: tuple[str, str, str], per_positive: bool = False, relation_fanouts: Any = None,
        target: EdgeTarget | None = None, times: PairTimes | None = None,
    ) -> None:  # fmt: skip
        super().__init__(spec, per_positive, times=times, target=target, relation_fanouts=relation_fanouts)
        self.relation = relation

    def outputs(self, model: nn.Module, out: Any, batch: DeviceBatch) -> torch.Tensor:
        """Logits float [M]: the decoder's score of each pair's SRC and DST embeddings (``out``: a dict per type)."""
        assert isinstance(model, LinkModel) and batch.src_index is not None and batch.dst_index is not None
        src, _, dst = self.relation
        return model.score(out[src][batch.src_index], out[dst][batch.dst_index])


def eval_pairs(pairs: LinkPairs) -> tuple[np.ndarray, np.ndarray]:
    """int64 [P + Q, 2] the positives then the negative pairs of an evaluation split, and float32 labels (1/0)."""
    positives = np.asarray(pairs.positives, dtype=np.int64)
    negatives = pairs.negative_pairs().astype(np.int64, copy=False)
    labels = np.concatenate([np.ones(positives.shape[0], np.float32), np.zeros(negatives.shape[0], np.float32)])
    return np.concatenate([positives, negatives]), labels


def split_scores(pairs: LinkPairs, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scores [P + Q] in :func:`eval_pairs` order -> (positive [P], negative [Q] or [P, K] per positive)."""
    p = pairs.num_positives
    positive, negative = scores[:p], scores[p:]
    if pairs.per_positive and pairs.negatives is not None:
        negative = negative.reshape(p, int(pairs.negatives.shape[1]))
    return positive, negative


def make_task(spec: TaskSpec, store: GraphStore, relation_fanouts: Any = None, temporal: str | None = None) -> Task:
    """The :class:`Task` of ``spec`` for the dataset of ``store`` (a typed dataset's link task: the relation of
    its edge split, ``relation_fanouts`` for its training sampler; a time split: ``temporal``, the strategy of
    ``--temporal`` or None for the static snapshot)."""
    if spec.task == "node":
        return NodeTask()
    link = store.dataset.link
    per_positive = bool(link is not None and link.eval_negatives > 0)
    target = None
    if spec.link_target is not None:
        target = EdgeTarget.of(store.dataset, spec.link_target, spec.link_threshold)
    if not store.is_hetero:
        return LinkTask(spec, per_positive=per_positive, times=pair_times(store, temporal), target=target)
    relation = tuple(link.meta["relation"]) if link is not None and "relation" in link.meta else ("", "", "")
    times = pair_times(store, temporal)
    return TypedLinkTask(spec, relation, per_positive, relation_fanouts, target, times)  # type: ignore[arg-type]


def evaluate_link_scores(task: LinkTask, split: str, pairs: LinkPairs, scores: np.ndarray) -> dict[str, Any]:
    """The metrics of ``split`` from the scores of its pairs (:meth:`LinkTask.eval_pairs`; empty dict without
    positives)."""
    if pairs.num_positives == 0:
        return {}
    if task.target is not None:
        return task.target.metrics(split, scores)
    return task.metrics(split, *split_scores(pairs, scores))
