"""Uniform neighbour sampling of a typed (heterogeneous) graph into typed blocks (:class:`TypedMiniBatch`).

Hop ``h`` expands every node found so far (all types; the seeds, of the target type, first): a node ``v`` of type
``t`` draws up to ``fanouts[r][h]`` in-neighbours without replacement through every relation ``r`` whose
destination type is ``t`` (row ``r.row_offset + local(v)`` of the back-to-back CSC). The hop is ONE list of work
items over all relations, relation-major (:mod:`graphtier.sampling._typed_kernels`), so each kernel runs once per
hop, split between threads by a :class:`ThreadTeam`. A node reached through any relation joins the batch once
(by global id, first-seen order over the hop's edges); its type's local ids then follow that order, so the
destinations of every type are a prefix of its sources.

Randomness: item ``i`` of hop ``h`` of batch ``b`` draws with the key ``node_key(stream_key(seed, b, h), i)``,
whatever thread handles it. With one relation (a homogeneous dataset's :meth:`Schema.homogeneous`) the items are
the nodes in batch order, so the batches are those of :class:`~graphtier.sampling.NeighborSampler`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from graphtier._threads import ThreadTeam
from graphtier.dataset.schema import RelationType, Schema
from graphtier.errors import OptionError
from graphtier.sampling import _neighbor_kernels as kernels
from graphtier.sampling import _typed_kernels as typed_kernels
from graphtier.sampling.buffers import Workspace, WorkspacePool
from graphtier.sampling.fanouts import Fanouts
from graphtier.sampling.neighbor import (
    NO_EDGE_IDS,
    PARALLEL_MIN_ITEMS,
    check_graph,
    check_num_threads,
    check_seed,
    hop_sources,
    next_batch_id,
    run_split,
)
from graphtier.sampling.seeds import as_seed_array
from graphtier.sampling.typed_batch import RelationBlock, TypedBlock, TypedMiniBatch


def check_typed_fanouts(fanouts: Mapping[RelationType, Sequence[int]], schema: Schema) -> np.ndarray:
    """int64 [H, R]: the fanout of every relation (schema order) at every hop; OptionError naming ``fanouts``
    unless ``fanouts`` maps each relation type of ``schema`` (and nothing else) to fanouts of one common length."""
    if not isinstance(fanouts, Mapping):
        raise OptionError.invalid("fanouts", "a mapping {(src, name, dst): fanouts} (parse_relation_fanouts)", fanouts)
    known = {rel.type for rel in schema.relations}
    extra = [key for key in fanouts if tuple(key) not in known]
    if extra:
        raise OptionError.invalid("fanouts", f"relation types of the schema ({sorted(known)})", extra[0])
    given = {tuple(key): value for key, value in fanouts.items()}
    missing = [rel.type for rel in schema.relations if rel.type not in given]
    if missing:
        raise OptionError(
            f"{{fanouts}} expected fanouts for every relation, missing {missing[0]}", options=("fanouts",)
        )
    table = [Fanouts.parse(given[rel.type], "fanouts") for rel in schema.relations]
    lengths = {len(hops) for hops in table}
    if len(lengths) != 1:
        raise OptionError.invalid("fanouts", "the same number of hops for every relation", sorted(lengths), show=False)
    return np.array(table, dtype=np.int64).T.copy()


class TypedNeighborSampler:
    """Uniform per-relation neighbour sampler of a typed graph (see the module).

    Args:
        indptr: int64 [schema.num_rows + 1], every relation's in-edge CSC back to back (numpy or memory map).
        indices: int32/int64 [E] GLOBAL source ids, sorted per row.
        schema: the dataset's :class:`Schema` (:meth:`Schema.homogeneous` for a homogeneous graph).
        fanouts: per relation type its fanouts (seed hop first, -1 = all), every relation the same number of
            hops (:func:`graphtier.sampling.relation_fanouts.parse_relation_fanouts` builds it).
        seed: base of the counter-based random stream.
        num_threads: threads per batch (default: numba's setting); the batch does not depend on it.
        with_edge_ids: every relation block records ``edge_id`` (each edge's position in the typed CSC: the row of
            ``edge_feat.npy``); chosen once, the sampling is the same either way.
    """

    def __init__(
        self,
        indptr: np.ndarray,
        indices: np.ndarray,
        schema: Schema,
        fanouts: Mapping[RelationType, Sequence[int]],
        *,
        seed: int = 0,
        num_threads: int | None = None,
        with_edge_ids: bool = False,
    ) -> None:
        self.indptr, self.indices = check_graph(indptr, indices)
        self.with_edge_ids = bool(with_edge_ids)
        if self.indptr.shape[0] != schema.num_rows + 1:
            raise OptionError(
                f"indptr: expected {schema.num_rows + 1} entries (the schema's relation rows + 1), "
                f"found {self.indptr.shape[0]}"
            )
        self.schema = schema
        self.fanout_table = check_typed_fanouts(fanouts, schema)  # int64 [H, R]
        self.fanouts = {rel.type: Fanouts(self.fanout_table[:, r].tolist()) for r, rel in enumerate(schema.relations)}
        self.seed = check_seed(seed)
        self.num_threads = check_num_threads(num_threads)
        self.num_hops = int(self.fanout_table.shape[0])
        types = schema.type_names
        self._type_offsets = schema.offsets()
        self._target = types.index(schema.target)
        self._rel_dst = np.array([types.index(rel.dst) for rel in schema.relations], dtype=np.int64)
        self._row_offset = np.array([rel.row_offset for rel in schema.relations], dtype=np.int64)
        self._workspaces = WorkspacePool(schema.num_nodes)
        self._team = ThreadTeam(self.num_threads - 1, name="graphtier-sampler") if self.num_threads > 1 else None
        self._batch_counter = itertools.count()

    def sample(self, seeds: np.ndarray | torch.Tensor, batch_id: int | None = None) -> TypedMiniBatch:
        """Sample a batch for ``seeds`` (int [B], LOCAL ids of the target type, numpy or CPU tensor).

        ``batch_id`` selects the random stream (None: the next value of an internal counter). Returns a
        :class:`TypedMiniBatch` of CPU int64 tensors with ``num_hops`` blocks and one relation block per relation.
        """
        target = self.schema.target_type
        local_seeds = as_seed_array(seeds, target.count)
        batch_id = next_batch_id(batch_id, self._batch_counter)
        workspace = self._workspaces.take()
        # a failed batch may leave ids in the scratch: its workspace is dropped, not given back
        global_seeds = local_seeds + self._type_offsets[self._target]
        batch, _ = self._sample(global_seeds, local_seeds, int(batch_id), workspace, typed_rows=False)
        self._workspaces.give_back(workspace)
        return batch

    def sample_global(self, global_seeds: np.ndarray, batch_id: int) -> tuple[TypedMiniBatch, np.ndarray]:
        """Sample a batch for seeds of any types: ``global_seeds`` int64 [B] (type offsets added, as
        :meth:`Schema.offsets`). Returns the batch (its ``seeds`` the global ids, ``seed_index`` their rows in
        first-seen order over all types) and int64 [B] each seed's output row among the rows of its own type
        (``rows[i]`` indexes the model's output of ``schema.type_of(global_seeds[i])``): link prediction's pairs."""
        global_seeds = np.ascontiguousarray(global_seeds, dtype=np.int64)
        if global_seeds.size and (int(global_seeds.min()) < 0 or int(global_seeds.max()) >= self.schema.num_nodes):
            raise OptionError.invalid("seeds", f"global ids in [0, {self.schema.num_nodes})", "out of range ids")
        workspace = self._workspaces.take()
        batch, rows = self._sample(global_seeds, global_seeds, int(batch_id), workspace, typed_rows=True)
        self._workspaces.give_back(workspace)
        return batch, rows

    def _sample(
        self, global_seeds: np.ndarray, seeds: np.ndarray, batch_id: int, workspace: Workspace, *, typed_rows: bool
    ) -> tuple[TypedMiniBatch, np.ndarray]:
        num_types = len(self.schema.node_types)
        local_id = workspace.local_id
        batch_size = global_seeds.shape[0]
        n_id = workspace.array("n_id", batch_size)  # global ids, first-seen order
        node_type = workspace.array("node_type", batch_size)
        type_position = workspace.array("type_position", batch_size)
        seed_index = np.empty(batch_size, dtype=np.int64)
        type_count = np.zeros(num_types, dtype=np.int64)
        layer_counts: list[np.ndarray] = []
        hop_relations: list[dict[RelationType, RelationBlock]] = []
        count = 0
        try:
            count = int(kernels.unique_seeds(global_seeds, local_id, n_id, seed_index))
            typed_kernels.assign_types(n_id, 0, count, self._type_offsets, node_type, type_position, type_count)
            rows = type_position[seed_index] if typed_rows else seed_index  # per type (seeds of one type: the same)
            layer_counts.append(type_count.copy())
            for hop in range(self.num_hops):
                relations, sources, num_edges = self._hop(hop, batch_id, workspace, count, type_count)
                n_id = workspace.array("n_id", count + num_edges, keep=count)
                new_count = int(kernels.relabel(sources, local_id, n_id, count))
                node_type = workspace.array("node_type", new_count, keep=count)
                type_position = workspace.array("type_position", new_count, keep=count)
                typed_kernels.assign_types(
                    n_id, count, new_count, self._type_offsets, node_type, type_position, type_count
                )
                count = new_count
                columns = type_position[sources]  # each edge's source row among its type's sources
                positions = workspace.array("edge_ids", num_edges) if self.with_edge_ids else None
                hop_relations.append({key: RelationBlock(rowptr, torch.from_numpy(columns[low:high]),
                                                         None if positions is None else
                                                         torch.from_numpy(positions[low:high].copy()))
                                      for key, (rowptr, low, high) in relations.items()})  # fmt: skip
                layer_counts.append(type_count.copy())
        finally:
            kernels.reset_local_ids(local_id, n_id, 0, count)
        names = self.schema.type_names
        types = node_type[:count]
        ids = n_id[:count]
        n_id_out = {name: torch.from_numpy(ids[types == t] - self._type_offsets[t]) for t, name in enumerate(names)}
        blocks = [
            TypedBlock(
                num_src={name: int(layer_counts[h + 1][t]) for t, name in enumerate(names)},
                num_dst={name: int(layer_counts[h][t]) for t, name in enumerate(names)},
                relations=hop_relations[h],
            )
            for h in reversed(range(self.num_hops))
        ]
        batch = TypedMiniBatch(
            n_id=n_id_out,
            blocks=blocks,
            seed_index=torch.from_numpy(seed_index),
            seeds=torch.from_numpy(seeds.copy()),
            target=self.schema.target,
        )
        return batch, rows

    def _hop(
        self, hop: int, batch_id: int, workspace: Workspace, count: int, type_count: np.ndarray
    ) -> tuple[dict[RelationType, tuple[torch.Tensor, int, int]], np.ndarray, int]:
        """Draw hop ``hop`` for the ``count`` nodes found so far: per relation ``(rowptr, first edge, stop edge)``,
        the global source id of every edge (int64 [E], a work array) and E."""
        n_id = workspace.array("n_id", count)
        node_type = workspace.array("node_type", count)
        type_position = workspace.array("type_position", count)
        # the frontier's local ids grouped by type, each type in its batch order
        type_start = np.zeros(len(type_count) + 1, dtype=np.int64)
        np.cumsum(type_count, out=type_start[1:])
        frontier_local = workspace.array("frontier_local", count)
        frontier_local[type_start[node_type] + type_position] = n_id - self._type_offsets[node_type]
        # relation-major items: relation r has one item per frontier node of its destination type
        item_start = np.zeros(len(self._rel_dst) + 1, dtype=np.int64)
        np.cumsum(type_count[self._rel_dst], out=item_start[1:])
        rel_type_start = type_start[self._rel_dst]
        fanout = self.fanout_table[hop]
        num_items = int(item_start[-1])
        starts, degrees = workspace.array("starts", num_items), workspace.array("degrees", num_items)
        counts, offsets = workspace.array("counts", num_items), workspace.array("offsets", num_items + 1)
        team = self._team if num_items >= PARALLEL_MIN_ITEMS else None

        def spans(first: int, stop: int) -> None:
            typed_kernels.typed_spans(
                self.indptr, frontier_local, item_start, rel_type_start, self._row_offset, fanout,
                starts, degrees, counts, first, stop,
            )  # fmt: skip

        run_split(team, spans, num_items)
        offsets[0] = 0
        np.cumsum(counts, out=offsets[1:])
        num_edges = int(offsets[-1])
        sources = workspace.array("sources", num_edges)
        destinations = workspace.array("destinations", num_edges)
        positive = fanout[fanout > 0]
        widest = int(positive.max()) if positive.size else -1  # Floyd draws at most this many per item
        stream = np.uint64(kernels.stream_key(self.seed, batch_id, hop))
        edge_ids = workspace.array("edge_ids", num_edges) if self.with_edge_ids else NO_EDGE_IDS
        hop_sources(team, self.indices, (offsets, starts, degrees), widest, stream, sources, destinations, edge_ids)
        relations = {}
        for r, rel in enumerate(self.schema.relations):
            first, stop = int(item_start[r]), int(item_start[r + 1])
            low, high = int(offsets[first]), int(offsets[stop])
            relations[rel.type] = (torch.from_numpy(offsets[first : stop + 1] - low), low, high)
        return relations, sources, num_edges
