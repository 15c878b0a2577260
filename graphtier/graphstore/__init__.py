"""GraphStore, the one door to a dataset: its topology, features, labels and splits over GPU, host and disk tiers."""

from graphtier.graphstore.store import SAMPLE_ON, GraphStore

__all__ = ["SAMPLE_ON", "GraphStore"]
