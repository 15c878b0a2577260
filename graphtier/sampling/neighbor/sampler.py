"""Uniform neighbour sampling (GraphSAGE style) of any graph, homogeneous or typed, into layer-wise blocks.

One :class:`NeighborSampler` serves every schema. Without a ``schema`` it samples a homogeneous graph into a
:class:`MiniBatch` of global ids on the fast path below; with one (a typed dataset's, or
:meth:`Schema.homogeneous`) it samples every relation into a :class:`TypedMiniBatch` of local ids per type
(:class:`~graphtier.sampling.neighbor.typed_neighbor.TypedHops`). Which of the two runs is chosen once, when the sampler is
built. The draws are the same kernels: with one relation, both give the same edges.

The fast path: hop ``h`` (``fanouts[h]``, PyG order: ``fanouts[0]`` = neighbours of the seeds) samples up to
``fanouts[h]`` in-neighbours without replacement of every node found so far, in parallel over those
destination nodes (chunks claimed by a :class:`ThreadTeam`); new nodes are then appended to ``n_id``
in first-seen order through an N-sized ``local id`` scratch array that is reset after the batch by
touching only the batch's nodes. Steady state allocates no per-hop arrays: work arrays live in a
per-call :class:`Workspace`, and the returned tensors are carved from an :class:`OutputRing` buffer.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

import numpy as np
import torch

from graphtier._threads import ThreadTeam
from graphtier.dataset.schema import RelationType, Schema
from graphtier.sampling.batch import Block, MiniBatch
from graphtier.sampling.buffers import Carver, OutputRing, Workspace, WorkspacePool
from graphtier.sampling.fanouts import (  # noqa: F401 - re-exported: bounds, default and parser live in fanouts.py
    DEFAULT_FANOUTS,
    MAX_FANOUT,
    check_fanouts,
    format_fanouts,
)
from graphtier.sampling.neighbor import _neighbor_kernels as kernels
from graphtier.sampling.neighbor.hops import (
    NO_EDGE_IDS,
    PARALLEL_MIN_ITEMS,
    PARALLEL_RELABEL_MIN_THREADS,
    check_graph,
    check_num_threads,
    check_seed,
    homogeneous_fanouts,
    hop_sources,
    hop_sources_relabelled,
    hop_spans,
    next_batch_id,
    numba_threads,
    threads_for,
    typed_hops,
)
from graphtier.sampling.neighbor.typed_neighbor import TypedHops
from graphtier.sampling.seeds import as_seed_array
from graphtier.sampling.typed_batch import TypedMiniBatch


class NeighborSampler:
    """Uniform neighbour sampler (GraphSAGE) of any schema: seeds -> one bipartite block per hop.

    Args:
        indptr: int64 [N + 1] CSC column pointers (numpy or memory map, CPU); with a ``schema``, int64
            [schema.num_rows + 1], every relation's in-edge CSC back to back (a dataset's ``indptr``).
        indices: int32/int64 [E] in-neighbour ids (global ids), sorted per row.
        fanouts: PyG order, ``fanouts[0]`` = neighbours drawn per seed; -1 = all neighbours. With a ``schema``
            also a mapping of every relation type ``(src, name, dst)`` to its fanouts (PyG's dict form of
            ``num_neighbors``; :func:`~graphtier.sampling.relation_fanouts.parse_relation_fanouts` builds one from
            ``--fanouts-per-relation`` text); a list is every relation's.
        schema: None for a homogeneous graph (batches are :class:`MiniBatch` es of global ids); the dataset's
            :class:`~graphtier.dataset.schema.Schema` for per-relation sampling into :class:`TypedMiniBatch` es
            (seeds and ``n_id`` are local ids per type; a homogeneous dataset's is :meth:`Schema.homogeneous`).
        seed: base of the counter-based random stream.
        num_threads: threads per batch (default: numba's current setting): large hops are split
            between the calling thread and ``num_threads - 1`` helper threads (:class:`ThreadTeam`).
        with_edge_ids: every block (every relation block) records ``edge_id`` (int64 [E], each edge's CSC
            position: the row of its time and features); chosen once, so a sampler without them does no extra
            work per edge.

    The same ``(seed, batch_id, seeds)`` gives the same batch for any thread count. The kernels
    release the GIL, so a background thread can sample while another trains, and concurrent
    :meth:`sample` calls are safe (each uses its own :class:`Workspace`). Work arrays and the memory of
    the returned tensors are reused across batches (:mod:`graphtier.sampling.buffers`); a batch the
    caller still references is never overwritten.
    """

    def __init__(
        self,
        indptr: np.ndarray,
        indices: np.ndarray,
        fanouts: Sequence[int] | Mapping[RelationType, Sequence[int]],
        *,
        schema: Schema | None = None,
        seed: int = 0,
        num_threads: int | None = None,
        with_edge_ids: bool = False,
    ) -> None:
        self.indptr, self.indices = check_graph(indptr, indices)
        self.with_edge_ids = bool(with_edge_ids)
        self.num_nodes = self.indptr.shape[0] - 1 if schema is None else schema.num_nodes
        self.seed = check_seed(seed)
        self.num_threads = check_num_threads(num_threads)
        self.schema = schema
        self._workspaces = WorkspacePool(self.num_nodes)
        self._team = ThreadTeam(self.num_threads - 1, name="graphtier-sampler") if self.num_threads > 1 else None
        self._batch_counter = itertools.count()
        self._typed: TypedHops | None = None
        if schema is None:
            self.fanouts: list[int] | dict[RelationType, Sequence[int]] = homogeneous_fanouts(fanouts)
            self._outputs = OutputRing()
            # hops use the parallel relabel from this many threads on (tests lower it to cover that path)
            self.parallel_relabel_min_threads = PARALLEL_RELABEL_MIN_THREADS
        else:
            self._typed = TypedHops(
                self.indptr, self.indices, schema, fanouts, self.seed, self._team, self.with_edge_ids,
            )  # fmt: skip
            self.fanouts = dict(self._typed.layout.fanouts)

    @property
    def num_hops(self) -> int:
        """The number of hops (blocks) of a batch."""
        return len(self.fanouts) if self._typed is None else self._typed.layout.num_hops

    def sample(self, seeds: np.ndarray | torch.Tensor, batch_id: int | None = None) -> MiniBatch | TypedMiniBatch:
        """Sample a mini-batch for ``seeds`` (int [B], numpy or CPU tensor): global ids, or with a ``schema``
        local ids of its target type.

        ``batch_id`` selects the random stream; None takes the next value of an internal counter. Returns a
        :class:`MiniBatch` (with a schema a :class:`TypedMiniBatch`) of CPU int64 tensors with one block per hop.
        """
        batch_id = next_batch_id(batch_id, self._batch_counter)
        if self._typed is not None:
            return self._typed.sample(seeds, int(batch_id), self._workspaces)
        seed_array = as_seed_array(seeds, self.num_nodes)
        workspace = self._workspaces.take()
        carver = Carver(self._outputs.take())
        # a failed batch may leave ids in the scratch: its workspace is dropped, not given back
        n_id, rowptrs, edge_indices, edge_ids, layer_sizes, seed_index = self._sample(
            seed_array, int(batch_id), workspace, carver
        )
        self._workspaces.give_back(workspace)
        self._outputs.need(carver.used)
        # layer_sizes[h] = nodes known before hop h; the block of hop h maps sizes[h+1] -> sizes[h]
        blocks = [
            Block.from_grouped(rowptrs[h], edge_indices[h], int(layer_sizes[h + 1]), edge_ids[h] if edge_ids else None)
            for h in reversed(range(len(self.fanouts)))
        ]
        return MiniBatch(
            n_id=n_id,
            blocks=blocks,
            seed_index=seed_index,
            seeds=torch.from_numpy(seed_array.copy()),
        )

    def sample_global(self, global_seeds: np.ndarray, batch_id: int) -> tuple[TypedMiniBatch, np.ndarray]:
        """With a ``schema``: sample a batch for seeds of any types, ``global_seeds`` int64 [B] (type offsets
        added, as :meth:`Schema.offsets`). Returns the batch (its ``seeds`` the global ids, ``seed_index`` their
        rows in first-seen order over all types) and int64 [B] each seed's output row among the rows of its own
        type (``rows[i]`` indexes the model's output of ``schema.type_of(global_seeds[i])``): link prediction's
        pairs. OptionError without a schema (:meth:`sample` takes global ids there)."""
        return typed_hops(self._typed).sample_global(global_seeds, int(batch_id), self._workspaces)

    def _sample(
        self, seeds: np.ndarray, batch_id: int, workspace: Workspace, carver: Carver
    ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], list[int], torch.Tensor]:
        """The batch's tensors, carved from the output buffer: n_id [n], rowptr [D_h + 1] and edge_index [2, E_h]
        (edges grouped by destination) per hop, edge_id [E_h] per hop (none without ``with_edge_ids``), rows known
        before each hop, seed_index [B]."""
        local_id = workspace.local_id
        seed_index = carver.take(seeds.shape[0])
        n_id = workspace.array("n_id", seeds.shape[0])  # the growing node list (global ids); copied out at the end
        count = 0
        try:
            count = int(kernels.unique_seeds(seeds, local_id, n_id, seed_index.numpy()))
            layer_sizes = [count]
            rowptrs, edge_indices, edge_ids = [], [], []
            for hop, fanout in enumerate(self.fanouts):
                dst_nodes = n_id[:count]
                team = self._team if count >= PARALLEL_MIN_ITEMS else None
                spans = hop_spans(team, self.indptr, dst_nodes, fanout, workspace)
                num_edges = int(spans[0][-1])
                rowptrs.append(carver.take(count + 1))
                rowptrs[-1].numpy()[:] = spans[0]
                edge_tensor = carver.take(2 * num_edges).view(2, num_edges)
                edge_index = edge_tensor.numpy()
                ids = NO_EDGE_IDS
                if self.with_edge_ids:
                    edge_ids.append(carver.take(num_edges))
                    ids = edge_ids[-1].numpy()
                relabel_threads = threads_for(num_edges, self.num_threads)
                if relabel_threads < self.parallel_relabel_min_threads:
                    relabel_threads = 1
                if local_id.dtype == np.int32 and num_edges >= 2**31 - 2:
                    relabel_threads = 1  # relabel_parallel's markers would not fit the int32 scratch
                # the parallel relabel reads the global ids from a separate array
                sources = workspace.array("sources", num_edges) if relabel_threads > 1 else edge_index[0]
                stream = np.uint64(kernels.stream_key(self.seed, batch_id, hop))
                n_id = workspace.array("n_id", count + num_edges, keep=count)
                if team is not None and relabel_threads == 1:
                    count = hop_sources_relabelled(
                        team, self.indices, spans, fanout, stream, edge_index, local_id, n_id, count, ids
                    )
                    layer_sizes.append(count)
                    edge_indices.append(edge_tensor)
                    continue
                hop_sources(team, self.indices, spans, fanout, stream, sources, edge_index[1], ids)
                if relabel_threads > 1:
                    with numba_threads(relabel_threads):
                        count = int(
                            kernels.relabel_parallel(sources, local_id, n_id, count, relabel_threads, edge_index[0])
                        )
                else:
                    count = int(kernels.relabel(edge_index[0], local_id, n_id, count))
                layer_sizes.append(count)
                edge_indices.append(edge_tensor)
        finally:
            kernels.reset_local_ids(local_id, n_id, 0, count)
        n_id_out = carver.take(count)
        n_id_out.numpy()[:] = n_id[:count]
        return n_id_out, rowptrs, edge_indices, edge_ids, layer_sizes, seed_index
