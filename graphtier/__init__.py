"""graphtier: train GNNs on graphs whose features and topology do not fit in GPU memory.

The public Python API, re-exported here (as PyG does); everything under the subpackages that is not
listed in ``__all__`` is private. Names are loaded on first use (PEP 562), so ``import graphtier`` and
the command-line tool start without importing torch::

    import graphtier as gt
    ds = gt.Dataset.open("data/demo")
    sampler = gt.NeighborSampler(ds.indptr, ds.indices, fanouts=[15, 10, 5])
    report = gt.train(ds, model="sage", fanouts=(15, 10, 5), epochs=2)

Importing graphtier changes no process-wide setting; :func:`configure_threads` (before importing torch)
and :func:`configure_process` do, as the command line does when it starts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from graphtier._process import configure_process, configure_threads
from graphtier._version import __version__
from graphtier.errors import DatasetError, GraphtierError, OptionError

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # dataset
    "Dataset": "graphtier.dataset",
    "DatasetWriter": "graphtier.dataset",
    "generate": "graphtier.dataset.synthetic.generate",
    "generate_mag": "graphtier.dataset.synthetic.synthetic_mag",
    "edgebank_scores": "graphtier.dataset.edges.edgebank",
    # samplers
    "NeighborSampler": "graphtier.sampling",
    "DeviceNeighborSampler": "graphtier.sampling",
    "DeviceTemporalSampler": "graphtier.sampling",
    "ShadowSampler": "graphtier.sampling",
    "TemporalNeighborSampler": "graphtier.sampling",
    "MiniBatch": "graphtier.sampling",
    "Block": "graphtier.sampling",
    "TypedMiniBatch": "graphtier.sampling",
    "TypedBlock": "graphtier.sampling",
    "iter_seed_batches": "graphtier.sampling",
    "Fanouts": "graphtier.sampling",
    "SamplerSpec": "graphtier.sampling",
    # feature stores
    "FeatureSource": "graphtier.memory",
    "FeatureStore": "graphtier.memory",
    "CachedFeatures": "graphtier.memory",
    "TierTraffic": "graphtier.memory",
    "HostFeatureStore": "graphtier.memory",
    "TieredFeatureStore": "graphtier.memory",
    "make_feature_store": "graphtier.memory",
    "plan_tiers": "graphtier.memory",
    "TieredTopology": "graphtier.memory",
    "make_topology": "graphtier.memory",
    "PlacementSpec": "graphtier.memory",
    # the global store: topology and features together
    "GraphStore": "graphtier.graphstore",
    # tiering
    "compute_scores": "graphtier.tiering.hotness",
    "list_reads": "graphtier.tiering.hotness",
    "EpochSeeds": "graphtier.tiering.seeds",
    "Replay": "graphtier.tiering.replay",
    "reorder_dataset": "graphtier.graph.reorder",
    "cache_policy_table": "graphtier.tiering.cache.simulate",
    "CachePolicyTable": "graphtier.tiering.cache.simulate",
    # training
    "TrainConfig": "graphtier.train",
    "Trainer": "graphtier.train",
    "Loader": "graphtier.train",
    "train": "graphtier.train",
    "TrainResult": "graphtier.train",
    "build_model": "graphtier.train",
    "ModelSpec": "graphtier.train",
    "OptimSpec": "graphtier.train",
    "DistSpec": "graphtier.train",
    "RunSpec": "graphtier.train",
    # trained models
    "SavedModel": "graphtier.train",
    "Predictions": "graphtier.train",
    "load_model": "graphtier.train",
    "predict": "graphtier.train",
    # PyG adapters
    "GraphtierFeatureStore": "graphtier.pyg",
    "GraphtierGraphStore": "graphtier.pyg",
    "GraphtierNeighborSampler": "graphtier.pyg",
    "TieredPyGFeatureStore": "graphtier.pyg",
    "neighbor_loader": "graphtier.pyg",
}

__all__ = [
    "DatasetError",
    "GraphtierError",
    "OptionError",
    "__version__",
    "configure_process",
    "configure_threads",
    *_EXPORTS,
]

if TYPE_CHECKING:  # static analysers see the real names
    from graphtier.dataset import Dataset, DatasetWriter
    from graphtier.dataset.edges.edgebank import edgebank_scores
    from graphtier.dataset.synthetic.generate import generate
    from graphtier.dataset.synthetic.synthetic_mag import generate_mag
    from graphtier.graph.reorder import reorder_dataset
    from graphtier.graphstore import GraphStore
    from graphtier.memory import (
        CachedFeatures,
        FeatureSource,
        FeatureStore,
        HostFeatureStore,
        PlacementSpec,
        TieredFeatureStore,
        TieredTopology,
        TierTraffic,
        make_feature_store,
        make_topology,
        plan_tiers,
    )
    from graphtier.pyg import (
        GraphtierFeatureStore,
        GraphtierGraphStore,
        GraphtierNeighborSampler,
        TieredPyGFeatureStore,
        neighbor_loader,
    )
    from graphtier.sampling import (
        Block,
        DeviceNeighborSampler,
        DeviceTemporalSampler,
        Fanouts,
        MiniBatch,
        NeighborSampler,
        SamplerSpec,
        ShadowSampler,
        TemporalNeighborSampler,
        TypedBlock,
        TypedMiniBatch,
        iter_seed_batches,
    )
    from graphtier.tiering.cache.simulate import CachePolicyTable, cache_policy_table
    from graphtier.tiering.hotness import compute_scores, list_reads
    from graphtier.tiering.replay import Replay
    from graphtier.tiering.seeds import EpochSeeds
    from graphtier.train import (
        DistSpec,
        Loader,
        ModelSpec,
        OptimSpec,
        Predictions,
        RunSpec,
        SavedModel,
        TrainConfig,
        Trainer,
        TrainResult,
        build_model,
        load_model,
        predict,
        train,
    )


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'graphtier' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
