"""The graph store's link samplers: batches of rows of a pair table, with their negatives and neighbourhoods.

:func:`link_sampler` is the one door (``GraphStore.link_sampler`` calls it): a homogeneous dataset's pairs are
global ids (:class:`~graphtier.sampling.link.sampler.LinkSampler` over the store's neighbour sampler, or on a split by time
its time-bounded sampler); a typed dataset's are those of its edge split's relation, in the endpoint types' local ids
(:func:`typed_link_sampler`: the same :class:`~graphtier.sampling.link.sampler.LinkSampler` built with the schema and the
relation, over the store's sampler built with the schema). Either runs on the CPU or on the device of the store's
tiered topology (the same batches).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, Protocol

import numpy as np
import torch

from graphtier.dataset import Dataset
from graphtier.dataset.schema import RelationType
from graphtier.errors import OptionError
from graphtier.graphstore.samplers import build_typed_sampler, link_negatives, relation_fanouts_key, temporal_sampler
from graphtier.memory import FeatureSource
from graphtier.sampling.device.device_hops import Topology
from graphtier.sampling.link.pairs import NegativeDestinations
from graphtier.sampling.link.sampler import LinkSampler
from graphtier.sampling.typed_batch import TypedMiniBatch


class PairStore(Protocol):
    """What a link sampler reads of a :class:`~graphtier.graphstore.GraphStore` (its dataset, samplers, placement)."""

    dataset: Dataset
    seed: int
    num_nodes: int
    num_threads: int | None
    topology: Topology | None
    edge_features: FeatureSource | None
    picks: str
    kernels: ModuleType | None

    @property
    def csc(self) -> tuple[np.ndarray, np.ndarray]: ...

    def sampler(
        self, fanouts: Sequence[int], relation_fanouts: Any = None, *, seed: int | None = None
    ) -> Callable[..., Any]: ...

    def temporal_sampler(
        self, fanouts: Sequence[int], strategy: str = "uniform", *, seed: int | None = None
    ) -> Any: ...

    def count_reads(self, batch: Any) -> None: ...


def link_sampler(
    store: PairStore,
    fanouts: Sequence[int],
    pairs: np.ndarray,
    *,
    relation_fanouts: str | Mapping[Any, Any] | None = None,
    labels: np.ndarray | None = None,
    num_negatives: int = 1,
    negative_sampling: str = "uniform",
    seed: int | None = None,
    times: np.ndarray | None = None,
    temporal: str = "uniform",
    exclude: bool = True,
) -> LinkSampler:
    """The link sampler of ``pairs`` on ``store`` (``sample(pair_ids, batch_id)``, ``sample_pairs(pairs, batch_id)``).

    ``pairs``: int64 [P, 2], global ids, or on a typed dataset local ids of its edge split's relation (its
    ``sample`` then gives :class:`~graphtier.sampling.link.typed_link.TypedLinkMiniBatch` es). Without ``labels``
    (training): ``num_negatives`` negatives per positive (``negative_sampling`` uniform or by in-degree), the batch's
    target edges excluded from message passing (``exclude``); with ``labels`` (float [P], evaluation) the pairs as
    given; with ``times`` (int64 [P]) each pair is sampled at its time by the time-bounded sampler of strategy
    ``temporal``. ``relation_fanouts``: a typed dataset's per-relation overrides of ``fanouts`` (OptionError, one
    line, on a homogeneous dataset). ``seed`` (None: the store's) picks the negatives' and the sampler's streams."""
    options: dict[str, Any] = {"labels": labels, "num_negatives": num_negatives, "seed": seed, "times": times,
                               "negative_sampling": negative_sampling, "temporal": temporal, "exclude": exclude}  # fmt: skip
    if store.dataset.is_hetero:
        return typed_link_sampler(store, fanouts, pairs, relation_fanouts=relation_fanouts, **options)
    if relation_fanouts is not None:
        raise OptionError(f"relation_fanouts: {store.dataset.path} has one relation; pass fanouts")
    seed = store.seed if seed is None else int(seed)
    link, dataset = store.dataset.link, store.dataset
    negatives = link_negatives(dataset, store.csc[0], negative_sampling, num_negatives * (labels is None))
    return LinkSampler(
        store.sampler(fanouts, seed=seed) if times is None else store.temporal_sampler(fanouts, temporal, seed=seed),
        pairs,
        num_nodes=store.num_nodes,
        labels=labels,
        num_negatives=num_negatives,
        negatives=negatives,
        undirected=link.undirected if link is not None else not dataset.directed,
        seed=seed,
        exclusion="numba" if store.topology is None else "torch",
        times=times,
        exclude=exclude,
    )


def typed_link_sampler(store: PairStore, fanouts: Sequence[int], pairs: np.ndarray, **options: Any) -> LinkSampler:
    """The typed :class:`LinkSampler` of ``pairs`` (int64 [P, 2] local ids of the split relation's endpoint
    types) on ``store``'s typed dataset: :func:`relation_link_sampler` of the edge split's relation, its reverse
    the split's (``link.reverse``), ``options`` its keyword arguments. OptionError (one line) without the edge split
    of a relation."""
    dataset, schema = store.dataset, store.dataset.schema
    link = dataset.link
    if link is None or "relation" not in link.meta:
        raise OptionError(f"{{task=link}}: {dataset.path} has no edge split of a relation (prepare manifest "
                          "--edge-split ... --split-relation SRC,REL,DST)", options=("task",))  # fmt: skip
    relation = schema.relation(tuple(link.meta["relation"]))  # type: ignore[arg-type]
    reverse = link.meta.get("reverse")
    reverse_type = None if reverse is None else (relation.dst, str(reverse), relation.src)
    return relation_link_sampler(store, relation.type, fanouts, pairs, reverse=reverse_type, **options)


def relation_link_sampler(
    store: PairStore,
    relation_type: RelationType,
    fanouts: Sequence[int],
    pairs: np.ndarray,
    *,
    reverse: RelationType | None = None,
    relation_fanouts: str | Mapping[Any, Any] | None = None,
    labels: np.ndarray | None = None,
    num_negatives: int = 1,
    negative_sampling: str = "uniform",
    seed: int | None = None,
    times: np.ndarray | None = None,
    temporal: str = "uniform",
    exclude: bool = True,
) -> LinkSampler:
    """The :class:`LinkSampler` (with the schema) of ``pairs`` (int64 [P, 2] local ids) of relation ``relation_type`` on
    ``store``'s typed dataset: as :func:`link_sampler` (``labels`` None: training, with negatives of the
    destination type, ``degree``: by in-degree in the relation, and the targets excluded from the relation and from
    ``reverse``), the neighbourhoods from the store's typed sampler of ``fanouts`` / ``relation_fanouts`` (on the
    CPU, or on the device of its tiered topology: the same batches); with ``times`` (int64 [P], a split by time)
    from the typed time-bounded sampler of strategy ``temporal`` at each pair's time (on the CPU or the device).
    ``exclude``: remove the training targets from the blocks."""
    dataset, schema = store.dataset, store.dataset.schema
    relation = schema.relation(tuple(relation_type))  # type: ignore[arg-type]
    seed = store.seed if seed is None else int(seed)
    indptr, indices = store.csc
    key = relation_fanouts_key(schema, tuple(fanouts), relation_fanouts)
    inner: Any
    if times is None:
        inner = build_typed_sampler(indptr, indices, schema, key, seed, store.num_threads, topology=store.topology,
                                    picks=store.picks, kernels=store.kernels,
                                    with_edge_ids=store.edge_features is not None)  # fmt: skip
    else:
        if dataset.edge_time is None or dataset.edge_time_order is None:
            raise OptionError(f"{{temporal}}: {dataset.path} has no edge times", options=("temporal",))
        inner = temporal_sampler(dataset, fanouts, temporal, seed, False, topology=store.topology,
                                 picks=store.picks, kernels=store.kernels, relation_fanouts=relation_fanouts)  # fmt: skip

    def sample_global(*args: Any) -> tuple[TypedMiniBatch, np.ndarray | torch.Tensor]:
        batch, rows = inner.sample_global(*args)  # (seeds, batch id[, seed times])
        store.count_reads(batch)
        return batch, rows

    negatives = None
    if labels is None and num_negatives:
        degrees = None
        if negative_sampling == "degree":
            start = relation.row_offset
            degrees = np.diff(np.asarray(indptr[start : start + schema.node_type(relation.dst).count + 1]))
        negatives = NegativeDestinations(negative_sampling, (0, schema.node_type(relation.dst).count), degrees)
    return LinkSampler(
        sample_global, pairs, schema=schema, relation=relation.type, reverse=reverse, labels=labels,
        num_negatives=num_negatives, negatives=negatives, seed=seed, times=times, exclude=exclude,
    )  # fmt: skip
