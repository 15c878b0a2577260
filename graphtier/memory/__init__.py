"""The global memory store: one object for a dataset's topology and features over GPU, host and disk tiers."""

from graphtier.memory.store import SAMPLE_ON, GraphStore

__all__ = ["SAMPLE_ON", "GraphStore"]
