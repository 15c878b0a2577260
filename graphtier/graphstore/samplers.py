"""The graph store's sampler parts: typed sampling, seed-only batches and the CPU samplers' topology tally.

:meth:`GraphStore.sampler` hands a typed dataset's batches out as :class:`TypedMiniBatch` es (local ids per type)
through :func:`build_typed_sampler` (on the CPU, or on the device of the store's tiered topology), its temporal
samplers through :func:`build_temporal_sampler` (likewise; one sampler class per role, built with the schema). The topology bytes of the CPU samplers are counted by
:class:`HostTopologyTally` (every sampled edge reads one ``indices`` entry, every destination row, per relation
for a typed batch, two ``indptr`` entries, all from host memory).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np
import torch

from graphtier.dataset import Dataset
from graphtier.dataset.schema import RelationType, Schema
from graphtier.errors import OptionError
from graphtier.memory import TierTraffic
from graphtier.memory.topology.topology import INDPTR_BYTES_PER_DESTINATION
from graphtier.sampling.batch import MiniBatch
from graphtier.sampling.device.device_hops import Topology
from graphtier.sampling.device.sampler import DeviceNeighborSampler
from graphtier.sampling.link.pairs import NegativeDestinations
from graphtier.sampling.link.sampler import TimedNodeSampler
from graphtier.sampling.neighbor.sampler import NeighborSampler
from graphtier.sampling.relation_fanouts import parse_relation_fanouts
from graphtier.sampling.shadow.sampler import first_seen_unique
from graphtier.sampling.temporal.sampler import TemporalNeighborSampler
from graphtier.sampling.temporal.temporal_device import DeviceTemporalSampler
from graphtier.sampling.typed_batch import TypedMiniBatch

TypedSampler = Callable[[np.ndarray, int], TypedMiniBatch]


def relation_fanouts_key(
    schema: Schema, fanouts: Sequence[int], relation_fanouts: str | Mapping[Any, Any] | None
) -> tuple[tuple[RelationType, tuple[int, ...]], ...]:
    """The parsed fanouts of every relation (:func:`parse_relation_fanouts`) as a hashable cache key."""
    parsed = parse_relation_fanouts(relation_fanouts, schema, fanouts)
    return tuple((rel, tuple(hops)) for rel, hops in parsed.items())


def build_typed_sampler(
    indptr: np.ndarray,
    indices: np.ndarray,
    schema: Schema,
    fanouts_key: tuple[tuple[RelationType, tuple[int, ...]], ...],
    seed: int,
    num_threads: int | None,
    *,
    topology: Topology | None = None,
    picks: str = "auto",
    kernels: ModuleType | None = None,
    with_edge_ids: bool = False,
) -> NeighborSampler | DeviceNeighborSampler:
    """The sampler of ``schema`` with the fanouts of :func:`relation_fanouts_key`: a :class:`NeighborSampler` over
    the dataset's arrays, or with ``topology`` (the tiered back-to-back CSC) a :class:`DeviceNeighborSampler` on its
    device (``picks``/``kernels`` as there); both give the same batches (``with_edge_ids``: with each relation
    block's ``edge_id``)."""
    fanouts = dict(fanouts_key)
    if topology is not None:
        return DeviceNeighborSampler(topology, fanouts, schema=schema, seed=seed, picks=picks, kernels=kernels,
                                     with_edge_ids=with_edge_ids)  # fmt: skip
    return NeighborSampler(indptr, indices, fanouts, schema=schema, seed=seed, num_threads=num_threads,
                           with_edge_ids=with_edge_ids)  # fmt: skip


def typed_seed_only_batch(schema: Schema) -> TypedSampler:
    """``(seeds, batch_id) -> TypedMiniBatch`` of the unique seeds (local ids of the target type) and no blocks."""

    def sample(seeds: np.ndarray | torch.Tensor, batch_id: int | None = None) -> TypedMiniBatch:
        seed_array = np.array(seeds.cpu() if isinstance(seeds, torch.Tensor) else seeds, dtype=np.int64)
        n_id, seed_index = first_seen_unique(seed_array)
        empty = {t: torch.zeros(0, dtype=torch.int64) for t in schema.type_names}
        return TypedMiniBatch(
            n_id={**empty, schema.target: torch.from_numpy(n_id)},
            blocks=[],
            seed_index=torch.from_numpy(seed_index),
            seeds=torch.from_numpy(seed_array),
            target=schema.target,
        )

    return sample


def sampled_topology_reads(batch: MiniBatch | TypedMiniBatch) -> tuple[int, int]:
    """``(sampled edges, destination rows read)`` of a batch: a typed batch reads one ``indptr`` row per
    (relation, destination), a homogeneous one per destination."""
    if isinstance(batch, TypedMiniBatch):
        rows = sum(rel.rowptr.shape[0] - 1 for blk in batch.blocks for rel in blk.relations.values())
        return batch.num_sampled_edges, int(rows)
    return batch.num_sampled_edges, sum(block.num_dst for block in batch.blocks)


class HostTopologyTally:
    """Topology bytes read by the CPU sampler: all from host memory (the dataset's arrays or their memory map)."""

    def __init__(self, index_bytes: int) -> None:
        self.index_bytes = index_bytes
        self._lock = threading.Lock()
        self._host = 0

    def add(self, batch: MiniBatch | TypedMiniBatch) -> None:
        edges, destinations = sampled_topology_reads(batch)
        nbytes = edges * self.index_bytes + destinations * INDPTR_BYTES_PER_DESTINATION
        with self._lock:
            self._host += nbytes

    def traffic(self) -> TierTraffic:
        with self._lock:
            return TierTraffic.served_by("host", self._host)


def seed_only_batch(seeds: np.ndarray | torch.Tensor, batch_id: int | None = None) -> MiniBatch:
    """A batch of the unique ``seeds`` (first-seen order) and no blocks: no neighbour is read (MLP)."""
    seed_array = np.array(seeds, dtype=np.int64)
    n_id, seed_index = first_seen_unique(seed_array)
    return MiniBatch(
        n_id=torch.from_numpy(n_id),
        blocks=[],
        seed_index=torch.from_numpy(seed_index),
        seeds=torch.from_numpy(seed_array),
    )


def build_temporal_sampler(
    dataset: Dataset,
    fanouts: list[int],
    strategy: str,
    seed: int,
    host_tally: HostTopologyTally | None,
    inclusive: bool = False,
    *,
    topology: Topology | None = None,
    picks: str = "auto",
    kernels: ModuleType | None = None,
    relation_fanouts: str | Mapping[Any, Any] | None = None,
) -> TimedNodeSampler:
    """``sample(seeds, batch_id, seed_time) -> MiniBatch`` over the dataset's CSC and edge times (``inclusive``: edges
    at a row's time too): a :class:`TemporalNeighborSampler` on the CPU, its reads counted in ``host_tally``; with
    ``topology`` (the store's tiered one) a :class:`DeviceTemporalSampler` on its device (``picks``/``kernels`` as
    there; the same batches), its ``indptr`` reads counted by the topology (:func:`temporal_sampler`). A typed
    dataset's are built with its schema (``fanouts`` overridden per relation by ``relation_fanouts``; its seeds are
    local ids of the target type) and give :class:`TypedMiniBatch` es. OptionError (one line) when the dataset has no
    edge times."""
    if dataset.edge_time is None or dataset.edge_time_order is None:
        raise OptionError(
            f"{{temporal}}: {dataset.path} has no edge times (prepare it with --time-column)", options=("temporal",)
        )
    inner = temporal_sampler(dataset, fanouts, strategy, seed, inclusive, topology=topology, picks=picks,
                             kernels=kernels, relation_fanouts=relation_fanouts)  # fmt: skip

    def sample(seeds: np.ndarray, batch_id: int, seed_time: np.ndarray) -> MiniBatch:
        batch = inner.sample(seeds, seed_time, batch_id)
        count_topology_reads(batch, host_tally, topology)
        return batch  # type: ignore[return-value]

    return sample


def count_topology_reads(
    batch: MiniBatch | TypedMiniBatch, host_tally: HostTopologyTally | None, topology: Topology | None
) -> None:
    """Count a sampled batch's topology reads: the CPU sampler's in ``host_tally`` (the store has one when it
    samples on the CPU), a device sampler's ``indptr`` reads by its tiered ``topology``."""
    if host_tally is not None:
        host_tally.add(batch)
    else:
        assert topology is not None
        topology.count_indptr_reads(sampled_topology_reads(batch)[1])  # type: ignore[attr-defined]


def temporal_sampler(
    dataset: Dataset,
    fanouts: Sequence[int],
    strategy: str,
    seed: int,
    inclusive: bool,
    *,
    topology: Topology | None = None,
    picks: str = "auto",
    kernels: ModuleType | None = None,
    relation_fanouts: str | Mapping[Any, Any] | None = None,
) -> TemporalNeighborSampler | DeviceTemporalSampler:
    """The time-bounded sampler of ``dataset`` (which has edge times): a :class:`TemporalNeighborSampler` on the
    CPU, or with ``topology`` (the store's tiered one) a :class:`DeviceTemporalSampler` on its device (the same
    batches). A typed dataset's is built with its schema and per-relation fanouts (``fanouts`` overridden by
    ``relation_fanouts``, :func:`parse_relation_fanouts`)."""
    schema = dataset.schema if dataset.is_hetero else None
    per_relation = fanouts if schema is None else parse_relation_fanouts(relation_fanouts, schema, fanouts)
    arrays = (dataset.edge_time, dataset.edge_time_order)
    options: dict[str, Any] = {"schema": schema, "strategy": strategy, "inclusive": inclusive, "seed": seed}
    if topology is not None:
        return DeviceTemporalSampler(topology, *arrays, per_relation, picks=picks, kernels=kernels, **options)
    return TemporalNeighborSampler(dataset.indptr, dataset.indices, *arrays, per_relation, **options)


def link_negatives(dataset: Dataset, indptr: np.ndarray, how: str, num_negatives: int) -> NegativeDestinations | None:
    """How a training link sampler draws negative destinations (``how``: uniform or degree, from the edge split's
    ``dst_range``), or None without negatives."""
    if not num_negatives:
        return None
    link = dataset.link
    dst_range = link.dst_range if link is not None else (0, int(indptr.shape[0]) - 1)
    return NegativeDestinations(how, dst_range, np.diff(indptr) if how == "degree" else None)
