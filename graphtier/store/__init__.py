"""Feature stores: where node features live and how a mini-batch's rows are gathered."""

from graphtier.store.arena import StagingArena, batch_rows_bound
from graphtier.store.factory import FEATURE_MODES, TIER_NAMES, FeatureStore, make_feature_store
from graphtier.store.host import HostFeatureStore
from graphtier.store.placement import TierPlan, parse_budget, plan_tiers
from graphtier.store.tiered import TieredFeatureStore

__all__ = [
    "FEATURE_MODES",
    "TIER_NAMES",
    "FeatureStore",
    "HostFeatureStore",
    "TierPlan",
    "StagingArena",
    "TieredFeatureStore",
    "batch_rows_bound",
    "make_feature_store",
    "parse_budget",
    "plan_tiers",
]
