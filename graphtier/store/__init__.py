"""Feature stores (where node features live and how a mini-batch's rows are gathered) and the tiered topology."""

from graphtier.store.arena import StagingArena, batch_rows_bound
from graphtier.store.factory import (
    FEATURE_MODES,
    TIER_NAMES,
    FeatureStore,
    make_feature_store,
)
from graphtier.store.host import HostFeatureStore
from graphtier.store.placement import TierPlan, parse_budget, plan_tiers
from graphtier.store.tiered import TieredFeatureStore
from graphtier.store.topology import TieredTopology, make_topology

__all__ = [
    "FEATURE_MODES",
    "TIER_NAMES",
    "FeatureStore",
    "HostFeatureStore",
    "StagingArena",
    "TierPlan",
    "TieredFeatureStore",
    "TieredTopology",
    "batch_rows_bound",
    "make_feature_store",
    "make_topology",
    "parse_budget",
    "plan_tiers",
]
