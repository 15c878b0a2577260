"""Feature sources (where node features live and how a mini-batch's rows are gathered) and the tiered topology.

Three sub-packages, importing one way: :mod:`.plan` (budgets, tier boundaries and the multi-GPU placement),
:mod:`.features` (the feature stores) and :mod:`.topology` (the graph's topology in tiers).
The interface is :class:`FeatureSource` (``features/source.py``); implementations: :class:`HostFeatureStore`,
:class:`TieredFeatureStore` (GPU, peer GPUs, zero-copy host, disk) and the :class:`CachedFeatures` wrapper.
``make_feature_store`` builds one by mode name from :data:`FEATURE_MODE_REGISTRY` (``features/modes.py``);
:class:`PlacementSpec` (``features/spec.py``) is the validated set of placement options (mode, budgets, sampling
device).
"""

from graphtier.memory.features.arena import StagingArena, batch_rows_bound
from graphtier.memory.features.cached import CachedFeatures
from graphtier.memory.features.host import HostFeatureStore
from graphtier.memory.features.modes import (
    FEATURE_MODE_REGISTRY,
    FEATURE_MODES,
    FeatureMode,
    make_feature_store,
    register_feature_mode,
)
from graphtier.memory.features.source import FeatureSource, TierTraffic
from graphtier.memory.features.spec import SAMPLE_ON, PlacementSpec
from graphtier.memory.features.tiered import TieredFeatureStore
from graphtier.memory.plan.placement import TIER_NAMES, TierPlan, parse_budget, plan_tiers
from graphtier.memory.topology.topology import TieredTopology, make_topology

# the name of the interface before it was an abstract class (kept for callers of the public API)
FeatureStore = FeatureSource

__all__ = [
    "FEATURE_MODES",
    "FEATURE_MODE_REGISTRY",
    "SAMPLE_ON",
    "TIER_NAMES",
    "CachedFeatures",
    "FeatureMode",
    "FeatureSource",
    "FeatureStore",
    "HostFeatureStore",
    "PlacementSpec",
    "StagingArena",
    "TierPlan",
    "TierTraffic",
    "TieredFeatureStore",
    "TieredTopology",
    "batch_rows_bound",
    "make_feature_store",
    "make_topology",
    "parse_budget",
    "plan_tiers",
    "register_feature_mode",
]
