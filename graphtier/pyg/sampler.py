"""PyG ``BaseSampler`` backed by graphtier's neighbour and link samplers (CPU, or GPU through a :class:`GraphStore`).

Link prediction: ``LinkNeighborLoader(stores, neighbor_sampler=GraphtierNeighborSampler(store, fanouts),
edge_label_index=..., neg_sampling="binary")`` samples with :class:`graphtier.sampling.link.sampler.LinkSampler`: the
negatives keep the positive's source and draw the destination (uniform or ``degree``), the endpoints' k-hop
neighbourhoods come from one node-sampler call, and the batch's target edges (and their reverse on an
undirected graph) are removed from message passing (PyG's and DGL's ``exclude='reverse_id'``). With
``edge_label_time`` every pair, and its negatives, is sampled at its time by the temporal sampler: no hop reads an
edge at or after it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch_geometric.sampler import (
    BaseSampler,
    EdgeSamplerInput,
    HeteroSamplerOutput,
    NegativeSampling,
    NodeSamplerInput,
    SamplerOutput,
)

from graphtier.dataset import Dataset
from graphtier.dataset.schema import reverse_relation
from graphtier.errors import OptionError
from graphtier.graphstore import GraphStore
from graphtier.graphstore.links import relation_link_sampler
from graphtier.pyg.feature_store import host_edge_features
from graphtier.sampling import MiniBatch
from graphtier.sampling.link.sampler import LinkSampler
from graphtier.sampling.typed_batch import TypedMiniBatch


def merged_output(batch: MiniBatch, num_seeds: int, metadata: Any) -> SamplerOutput:
    """PyG's merged subgraph of ``batch``: hop 1 (from the seeds) first, ``num_seeds`` distinct seeds first; the edges'
    dataset ids (CSC positions, PyG's ``e_id``) when the sampler records them."""
    blocks = batch.blocks[::-1]  # hop 1 (from the seeds) first, as PyG orders them
    if blocks:
        edge_index = torch.cat([blk.edge_index for blk in blocks], dim=1)
    else:
        edge_index = torch.empty((2, 0), dtype=torch.long, device=batch.n_id.device)
    edge_ids = [blk.edge_id for blk in blocks]  # the temporal sampler's edge ids: PyG's e_id
    return SamplerOutput(
        node=batch.n_id,
        row=edge_index[0],
        col=edge_index[1],
        edge=torch.cat(edge_ids) if blocks and all(e is not None for e in edge_ids) else None,
        batch=None,
        num_sampled_nodes=[num_seeds] + [blk.num_src - blk.num_dst for blk in blocks],
        num_sampled_edges=[blk.num_edges for blk in blocks],
        metadata=metadata,
    )


def typed_output(batch: TypedMiniBatch, metadata: Any) -> HeteroSamplerOutput:
    """PyG's merged typed subgraph of ``batch``: per node type its local ids (``node[t]``, the seeds first), per edge
    type ``(src, name, dst)`` the edges of every hop (hop 1 first) as rows of ``node[src]`` / ``node[dst]``, and
    their positions in the typed CSC (PyG's ``e_id``, the rows of ``edge_feat.npy``) when the sampler records them."""
    blocks = batch.blocks[::-1]  # hop 1 (from the seeds) first, as PyG orders them
    row, col, num_edges, edge = {}, {}, {}, {}
    for key in blocks[0].relations if blocks else ():
        edge_index = torch.cat([blk.relations[key].edge_index for blk in blocks], dim=1)
        row[key], col[key] = edge_index[0], edge_index[1]
        num_edges[key] = [blk.relations[key].num_edges for blk in blocks]
        edge_ids = [blk.relations[key].edge_id for blk in blocks]  # recorded when the store has edge features
        if all(e is not None for e in edge_ids):
            edge[key] = torch.cat(edge_ids)  # type: ignore[arg-type]
    seeds_of = blocks[0].num_dst if blocks else {t: int(ids.shape[0]) for t, ids in batch.n_id.items()}
    num_nodes = {t: [seeds_of[t]] + [blk.num_src[t] - blk.num_dst[t] for blk in blocks] for t in batch.n_id}
    return HeteroSamplerOutput(
        node=dict(batch.n_id),
        row=row,
        col=col,
        edge=edge or None,
        batch=None,
        num_sampled_nodes=num_nodes,
        num_sampled_edges=num_edges,
        metadata=metadata,
    )


def negatives_per_positive(neg_sampling: NegativeSampling) -> int:
    """``neg_sampling.amount`` as a whole number of negative destinations per positive."""
    amount = neg_sampling.amount
    if amount != int(amount) or amount < 1:
        raise OptionError.invalid("neg_sampling.amount", "a whole number >= 1 of negatives per positive", amount)
    if neg_sampling.src_weight is not None or neg_sampling.dst_weight is not None:
        raise OptionError(
            "neg_sampling: expected no src_weight/dst_weight (pass negative_sampling='degree' to "
            "GraphtierNeighborSampler for degree^0.75 negatives), found weights",
            options=("neg_sampling",),
        )
    return int(amount)


class GraphtierNeighborSampler(BaseSampler):
    """PyG ``BaseSampler`` backed by graphtier's parallel uniform neighbour sampler.

    Args:
        source: the graph: a Dataset (opened as a CPU :class:`GraphStore`: sampled on the CPU from its CSC) or a
            :class:`GraphStore` (sampled where the store samples: ``sample_on="gpu"`` gives batches on
            the GPU, read from its topology tiers, counted in ``store.traffic()``).
        fanouts: neighbours per hop, the first hop from the seeds first (PyG's ``num_neighbors``);
            -1 = all neighbours.
        seed: sampling seed; batches are reproducible for a seed.
        relation_fanouts: a typed dataset's per-relation overrides of ``fanouts`` (``"writes=5,cites=10/5"`` or a
            mapping, :func:`graphtier.sampling.relation_fanouts.parse_relation_fanouts`).

    A typed dataset's batches are ``HeteroSamplerOutput`` s: seeds are local ids of the target type (PyG's
    ``input_nodes=(target, ids)``), and the loader builds a ``HeteroData`` with one node store per type; its link
    batches take the pairs of one relation (``edge_label_index=((SRC, REL, DST), pairs)`` in local ids).

    Args (link batches):
        negative_sampling: how link batches draw negative destinations: "uniform" or "degree" (in-degree^0.75).
        temporal: batches with times: how each hop picks among the admissible edges, "uniform" or "recent"; the
            dataset needs edge times. Link batches (``LinkNeighborLoader(..., edge_label_time=...)``) admit the edges
            strictly before a pair's time; node seeds (``NeighborLoader(..., input_time=...)``, PyG's semantics)
            the edges at or before the seed's time.
    """

    def __init__(
        self,
        source: Dataset | GraphStore,
        fanouts: Sequence[int],
        *,
        seed: int = 0,
        num_threads: int | None = None,
        negative_sampling: str = "uniform",
        relation_fanouts: Any = None,
        temporal: str = "uniform",
    ) -> None:
        store = (
            source
            if isinstance(source, GraphStore)
            else GraphStore(source, None, num_threads=num_threads, edge_features=host_edge_features(source))
        )  # a dataset with edge features: the batches carry e_id (:class:`~graphtier.pyg.feature_store.EdgeAttrs`)
        self.store = store
        self.fanouts = list(fanouts)
        self.seed = seed
        self.negative_sampling = negative_sampling
        self.temporal = temporal
        self.relation_fanouts = relation_fanouts
        self._sample = store.sampler(fanouts, relation_fanouts, seed=seed)
        self.num_hops = len(fanouts)
        self._link_samplers: dict[Any, LinkSampler] = {}
        self._timed_nodes: Any = None
        self._batch_ids = itertools.count()

    def sample_from_nodes(self, index: NodeSamplerInput, **kwargs: Any) -> SamplerOutput | HeteroSamplerOutput:
        """Sample around ``index.node`` (distinct seed ids: global, or local ids of the target type of a typed
        dataset) and return PyG's merged subgraph (``HeteroSamplerOutput`` for a typed dataset)."""
        seeds = index.node.cpu().numpy().astype(np.int64, copy=False)
        if index.time is None:
            batch = self._sample(seeds, None)
        else:  # PyG's input_time: each seed's neighbourhood holds only edges at or before its time, on every hop
            if self._timed_nodes is None:
                self._timed_nodes = self.store.temporal_sampler(
                    self.fanouts, self.temporal, seed=self.seed, inclusive=True, relation_fanouts=self.relation_fanouts
                )
            times = index.time.cpu().numpy().astype(np.int64, copy=False)
            batch = self._timed_nodes(seeds, next(self._batch_ids), times)
        if isinstance(batch, TypedMiniBatch):
            target = batch.target
            if index.input_type not in (None, target):
                raise OptionError.invalid("input_nodes", f"seeds of the target type {target!r}", index.input_type)
            if int(batch.n_id[target].shape[0] if not batch.blocks else batch.blocks[-1].num_dst[target]) != len(seeds):
                raise OptionError("GraphtierNeighborSampler expects distinct seed nodes in a batch")
            return typed_output(batch, (index.input_id, index.time))
        if batch.num_nodes and int(batch.blocks[-1].num_dst if batch.blocks else batch.num_nodes) != seeds.shape[0]:
            raise OptionError("GraphtierNeighborSampler expects distinct seed nodes in a batch")
        return merged_output(batch, seeds.shape[0], (index.input_id, index.time))

    def sample_from_edges(
        self, index: EdgeSamplerInput, neg_sampling: NegativeSampling | None = None
    ) -> SamplerOutput | HeteroSamplerOutput:
        """Sample the pairs ``(index.row, index.col)`` (global ids; a typed dataset: local ids of the relation
        ``index.input_type``, a ``HeteroSamplerOutput``) as PyG's ``LinkLoader`` expects.

        ``neg_sampling`` ``binary`` or ``triplet`` (training): ``amount`` negatives per positive (source kept,
        destination drawn), the pairs' edges excluded from message passing; metadata ``(input_id,
        edge_label_index [2, M] rows of ``node``, edge_label [M] (``index.label`` or 1, then 0), time)``, or
        for ``triplet`` ``(input_id, src_index [P], dst_pos_index [P], dst_neg_index [P] or [P, amount],
        time)``. ``None`` (evaluation): the pairs as given with ``index.label`` (default 1), nothing excluded.
        """
        pairs = torch.stack([index.row, index.col], dim=1).cpu().numpy().astype(np.int64, copy=False)
        negatives = 0 if neg_sampling is None else negatives_per_positive(neg_sampling)
        link = self._pair_sampler(index, negatives)
        labels = None if index.label is None or negatives else index.label.cpu().numpy()
        times = None if index.time is None else index.time.cpu().numpy().astype(np.int64, copy=False)
        batch = link.sample_pairs(pairs, next(self._batch_ids), labels=labels, times=times)
        metadata = _link_metadata(index, batch, pairs.shape[0], negatives, neg_sampling)
        if isinstance(batch, TypedMiniBatch):
            return typed_output(batch, metadata)
        return merged_output(batch, batch.blocks[-1].num_dst if batch.blocks else batch.num_nodes, metadata)

    def _pair_sampler(self, index: EdgeSamplerInput, negatives: int) -> LinkSampler:
        """The link sampler of ``index``'s pairs (made once per edge type, negatives and timing): the store's over
        global ids, or on a typed dataset the sampler of the relation ``index.input_type`` ``(SRC, REL, DST)`` over
        local ids of SRC and DST, whose targets leave the relation and its reverse (``(DST, rev_REL, SRC)`` when the
        schema has it)."""
        timed = index.time is not None  # PyG's edge_label_time: every pair sampled at its time
        key = (index.input_type, negatives, timed)
        link = self._link_samplers.get(key)
        if link is not None:
            return link
        options: dict[str, Any] = {
            "labels": np.zeros(0, np.float32) if negatives == 0 else None,  # the evaluation mode
            "num_negatives": negatives,
            "negative_sampling": self.negative_sampling,
            "seed": self.seed,
            "times": np.empty(0, np.int64) if timed else None,
            "temporal": self.temporal,
            "exclude": not timed,  # a pair's own edge, at its time, is never read
        }
        if not self.store.is_hetero:
            if index.input_type is not None:
                raise OptionError("GraphtierNeighborSampler: a homogeneous graph's pairs have no edge type, found "
                                  f"{index.input_type!r}")  # fmt: skip
            link = self.store.make_link_sampler(self.fanouts, np.empty((0, 2), np.int64), **options)
        else:
            schema = self.store.dataset.schema
            try:
                relation = schema.relation(tuple(index.input_type))  # type: ignore[arg-type]
            except (KeyError, TypeError):
                known = ", ".join(str(r.type) for r in schema.relations)
                raise OptionError.invalid("edge_label_index", f"pairs of a relation of the schema ({known})",
                                          index.input_type) from None  # fmt: skip
            reverse = reverse_relation(schema, relation)
            link = relation_link_sampler(
                self.store, relation.type, self.fanouts, np.empty((0, 2), np.int64),
                reverse=None if reverse is None else reverse.type, relation_fanouts=self.relation_fanouts, **options,
            )  # fmt: skip
        self._link_samplers[key] = link
        return link


def _link_metadata(
    index: EdgeSamplerInput, batch: Any, num_pos: int, negatives: int, neg_sampling: NegativeSampling | None
) -> tuple[Any, ...]:
    """PyG's ``LinkLoader`` metadata of a link batch of ``num_pos`` positives: ``(input_id, edge_label_index [2, M]
    (rows of ``node``, or of ``node[SRC]`` / ``node[DST]``), edge_label [M] (``index.label`` or 1, then 0),
    edge_label_time [M] or None)``, or for ``triplet`` ``(input_id, src_index [P], dst_pos_index [P], dst_neg_index
    [P] or [P, amount], time)``."""
    if neg_sampling is not None and neg_sampling.is_triplet():
        dst_neg_index = batch.dst_index[num_pos:].view(num_pos, negatives).squeeze(-1)
        return (index.input_id, batch.src_index[:num_pos], batch.dst_index[:num_pos], dst_neg_index, index.time)
    edge_label = batch.label
    if index.label is not None:
        edge_label = torch.cat([index.label, index.label.new_zeros((batch.label.shape[0] - num_pos,))])
    edge_label_time = None  # each label's time: a negative is queried at its positive's
    if index.time is not None:
        edge_label_time = torch.cat([index.time, index.time.repeat_interleave(negatives)])
    return (index.input_id, torch.stack([batch.src_index, batch.dst_index]), edge_label, edge_label_time)
