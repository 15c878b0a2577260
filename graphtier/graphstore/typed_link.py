"""The graph store's link sampler of a typed dataset: pairs of the edge split's relation
(:class:`~graphtier.sampling.typed_link.TypedLinkSampler` over the store's CPU typed neighbour sampler)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from graphtier.errors import OptionError
from graphtier.graphstore.samplers import relation_fanouts_key
from graphtier.sampling.link import NegativeDestinations
from graphtier.sampling.typed_batch import TypedMiniBatch
from graphtier.sampling.typed_link import SampleGlobal, TimedSampleGlobal, TypedLinkSampler
from graphtier.sampling.typed_neighbor import TypedNeighborSampler
from graphtier.sampling.typed_temporal import TypedTemporalNeighborSampler

if TYPE_CHECKING:
    from graphtier.graphstore.store import GraphStore


def typed_link_sampler(
    store: GraphStore,
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
) -> TypedLinkSampler:
    """The :class:`TypedLinkSampler` of ``pairs`` (int64 [P, 2] local ids of the split relation's endpoint
    types) on ``store``'s typed dataset: as :meth:`GraphStore.link_sampler` (``labels`` None: training, with
    negatives of the destination type, ``degree``: by in-degree in the relation, and the targets excluded), the
    neighbourhoods from a CPU :class:`TypedNeighborSampler` of ``fanouts`` / ``relation_fanouts``; with ``times``
    (int64 [P], a split by time) from a :class:`TypedTemporalNeighborSampler` of strategy ``temporal`` at each pair's
    time. ``exclude``: remove the training targets from the blocks."""
    dataset, schema = store.dataset, store.dataset.schema
    link = dataset.link
    if link is None or "relation" not in link.meta:
        raise OptionError(f"{{task=link}}: {dataset.path} has no edge split of a relation (prepare manifest "
                          "--edge-split ... --split-relation SRC,REL,DST)", options=("task",))  # fmt: skip
    if store.topology is not None:
        raise OptionError("{sample_on=gpu}: link prediction on a typed dataset samples on the CPU",
                          options=("sample_on",))  # fmt: skip
    relation = schema.relation(tuple(link.meta["relation"]))  # type: ignore[arg-type]
    reverse = link.meta.get("reverse")
    reverse_type = None if reverse is None else (relation.dst, str(reverse), relation.src)
    seed = store.seed if seed is None else int(seed)
    indptr, indices = store.csc
    key = relation_fanouts_key(schema, tuple(fanouts), relation_fanouts)
    tally = store._host_tally
    sample_global: SampleGlobal | TimedSampleGlobal
    if times is None:
        inner = TypedNeighborSampler(indptr, indices, schema, dict(key), seed=seed, num_threads=store.num_threads,
                                     with_edge_ids=store.edge_features is not None)  # fmt: skip

        def sample_global(seeds: np.ndarray, batch_id: int) -> tuple[TypedMiniBatch, np.ndarray]:
            batch, rows = inner.sample_global(seeds, batch_id)
            if tally is not None:
                tally.add(batch)
            return batch, rows
    else:
        if dataset.edge_time is None or dataset.edge_time_order is None:
            raise OptionError(f"{{temporal}}: {dataset.path} has no edge times", options=("temporal",))
        timed = TypedTemporalNeighborSampler(indptr, indices, dataset.edge_time, dataset.edge_time_order, schema,
                                             dict(key), strategy=temporal, seed=seed)  # fmt: skip

        def sample_global(seeds: np.ndarray, batch_id: int, seed_time: np.ndarray) -> tuple[TypedMiniBatch, np.ndarray]:  # type: ignore[misc]
            batch, rows = timed.sample_global(seeds, batch_id, seed_time)
            if tally is not None:
                tally.add(batch)
            return batch, rows

    negatives = None
    if labels is None and num_negatives:
        degrees = None
        if negative_sampling == "degree":
            start = relation.row_offset
            degrees = np.diff(np.asarray(indptr[start : start + schema.node_type(relation.dst).count + 1]))
        negatives = NegativeDestinations(negative_sampling, link.dst_range, degrees)
    return TypedLinkSampler(
        sample_global, schema, relation.type, pairs, labels=labels, num_negatives=num_negatives,
        negatives=negatives, reverse=reverse_type, seed=seed, times=times, exclude=exclude,
    )  # fmt: skip
