"""Mini-batch samplers: uniform neighbour sampling (GraphSAGE) and ShaDow k-hop subgraphs.

Both return :class:`MiniBatch` objects of layer-wise :class:`Block` s ready for PyG bipartite convs::

    sampler = NeighborSampler(ds.indptr, ds.indices, fanouts=[15, 10, 5], seed=0)
    for seeds in iter_seed_batches(ds.train_idx, 1024, shuffle=True, seed=0, epoch=epoch):
        mb = sampler.sample(seeds)
"""

from graphtier._choices import TEMPORAL_STRATEGIES
from graphtier.sampling.batch import Block, MiniBatch
from graphtier.sampling.device import DenseTopology, DeviceNeighborSampler, Topology
from graphtier.sampling.fanouts import (
    DEFAULT_FANOUTS,
    MAX_FANOUT,
    Fanouts,
    check_fanouts,
    format_fanouts,
)
from graphtier.sampling.neighbor import NeighborSampler
from graphtier.sampling.seeds import iter_seed_batches
from graphtier.sampling.shadow import ShadowSampler
from graphtier.sampling.spec import SAMPLER_KINDS, SAMPLER_NAMES, SamplerSpec
from graphtier.sampling.temporal import TemporalNeighborSampler
from graphtier.sampling.temporal_device import DeviceTemporalSampler
from graphtier.sampling.typed_temporal import TypedTemporalNeighborSampler
from graphtier.sampling.typed_temporal_device import DeviceTypedTemporalSampler

__all__ = [
    "DEFAULT_FANOUTS",
    "MAX_FANOUT",
    "SAMPLER_KINDS",
    "SAMPLER_NAMES",
    "Block",
    "DenseTopology",
    "DeviceNeighborSampler",
    "DeviceTemporalSampler",
    "DeviceTypedTemporalSampler",
    "Fanouts",
    "MiniBatch",
    "NeighborSampler",
    "SamplerSpec",
    "TEMPORAL_STRATEGIES",
    "TemporalNeighborSampler",
    "ShadowSampler",
    "Topology",
    "TypedTemporalNeighborSampler",
    "check_fanouts",
    "format_fanouts",
    "iter_seed_batches",
]
