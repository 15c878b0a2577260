"""Mini-batch samplers: uniform neighbour sampling (GraphSAGE), time-bounded sampling and ShaDow k-hop subgraphs.

One class per role for any schema: :class:`NeighborSampler` and :class:`TemporalNeighborSampler` on the CPU,
:class:`DeviceNeighborSampler` and :class:`DeviceTemporalSampler` where the graph is (the same batches). Without a
``schema`` they return :class:`MiniBatch` objects of layer-wise :class:`Block` s ready for PyG bipartite convs;
with a dataset's schema, per-relation :class:`TypedMiniBatch` es::

    sampler = NeighborSampler(ds.indptr, ds.indices, fanouts=[15, 10, 5], seed=0)
    for seeds in iter_seed_batches(ds.train_idx, 1024, shuffle=True, seed=0, epoch=epoch):
        mb = sampler.sample(seeds)
    typed = NeighborSampler(ds.indptr, ds.indices, [10, 5], schema=ds.schema)  # a typed dataset

One sub-package per role, each importing only earlier ones: :mod:`.neighbor` (CPU neighbour sampling, the hop parts
and random kernels every sampler shares), :mod:`.device`, :mod:`.temporal`, :mod:`.link` and :mod:`.shadow`; the
modules here (batches, seeds, fanouts, buffers, relation layouts, spec) are the base they all use.
"""

from graphtier._choices import TEMPORAL_STRATEGIES
from graphtier.sampling.batch import Block, MiniBatch
from graphtier.sampling.device.device_hops import DenseTopology, Topology
from graphtier.sampling.device.sampler import DeviceNeighborSampler
from graphtier.sampling.fanouts import (
    DEFAULT_FANOUTS,
    MAX_FANOUT,
    Fanouts,
    check_fanouts,
    format_fanouts,
)
from graphtier.sampling.neighbor.sampler import NeighborSampler
from graphtier.sampling.seeds import iter_seed_batches
from graphtier.sampling.shadow.sampler import ShadowSampler
from graphtier.sampling.spec import SAMPLER_KINDS, SAMPLER_NAMES, SamplerSpec
from graphtier.sampling.temporal.sampler import TemporalNeighborSampler
from graphtier.sampling.temporal.temporal_device import DeviceTemporalSampler
from graphtier.sampling.typed_batch import TypedBlock, TypedMiniBatch

__all__ = [
    "DEFAULT_FANOUTS",
    "MAX_FANOUT",
    "SAMPLER_KINDS",
    "SAMPLER_NAMES",
    "Block",
    "DenseTopology",
    "DeviceNeighborSampler",
    "DeviceTemporalSampler",
    "Fanouts",
    "MiniBatch",
    "NeighborSampler",
    "SamplerSpec",
    "TEMPORAL_STRATEGIES",
    "TemporalNeighborSampler",
    "TypedBlock",
    "TypedMiniBatch",
    "ShadowSampler",
    "Topology",
    "check_fanouts",
    "format_fanouts",
    "iter_seed_batches",
]
