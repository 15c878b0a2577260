"""The graph store's link sampler of a typed dataset: pairs of the edge split's relation
(:class:`~graphtier.sampling.typed_link.TypedLinkSampler` over the store's typed neighbour sampler, or on a split
by time its typed time-bounded sampler, on the CPU or on the device of its tiered topology)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from graphtier.dataset.schema import RelationType
from graphtier.errors import OptionError
from graphtier.graphstore.samplers import build_typed_sampler, relation_fanouts_key, temporal_sampler
from graphtier.sampling.link import NegativeDestinations
from graphtier.sampling.typed_batch import TypedMiniBatch
from graphtier.sampling.typed_link import TypedLinkSampler

if TYPE_CHECKING:
    from graphtier.graphstore.store import GraphStore


def typed_link_sampler(
    store: GraphStore, fanouts: Sequence[int], pairs: np.ndarray, **options: Any
) -> TypedLinkSampler:
    """The :class:`TypedLinkSampler` of ``pairs`` (int64 [P, 2] local ids of the split relation's endpoint
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
    store: GraphStore,
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
) -> TypedLinkSampler:
    """The :class:`TypedLinkSampler` of ``pairs`` (int64 [P, 2] local ids) of relation ``relation_type`` on
    ``store``'s typed dataset: as :meth:`GraphStore.link_sampler` (``labels`` None: training, with negatives of the
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
                                    picks=store._picks, kernels=store._kernels,
                                    with_edge_ids=store.edge_features is not None)  # fmt: skip
    else:
        if dataset.edge_time is None or dataset.edge_time_order is None:
            raise OptionError(f"{{temporal}}: {dataset.path} has no edge times", options=("temporal",))
        inner = temporal_sampler(dataset, fanouts, temporal, seed, False, topology=store.topology,
                                 picks=store._picks, kernels=store._kernels, relation_fanouts=relation_fanouts)  # fmt: skip

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
    return TypedLinkSampler(
        sample_global, schema, relation.type, pairs, labels=labels, num_negatives=num_negatives,
        negatives=negatives, reverse=reverse, seed=seed, times=times, exclude=exclude,
    )  # fmt: skip
