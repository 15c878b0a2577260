"""Feature stores: where node features live and how a mini-batch's rows are gathered."""

from graphtier.store.host import HostFeatureStore

__all__ = ["HostFeatureStore"]
