"""A tiny heterogeneous dataset for CLI tests: 3 node types (paper with features and labels, author, field)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphtier.dataset import Dataset, DatasetWriter
from graphtier.dataset.typed_graph import TypedEdges, TypedNodes, write_typed_graph


def write_tiny_typed(output: Path, *, papers: int = 40, seed: int = 0) -> Dataset:
    """``papers`` papers (8 float32 features, 3 classes, split 50/25/25%), papers/2 authors, 5 fields; relations
    cites, writes, has_topic and their reverses."""
    rng = np.random.default_rng(seed)
    authors, fields = papers // 2, 5
    types = [
        TypedNodes("paper", papers, rng.normal(size=(papers, 8)).astype(np.float32)),
        TypedNodes("author", authors),
        TypedNodes("field", fields),
    ]
    e = papers * 2
    relations = [
        TypedEdges(("paper", "cites", "paper"), rng.integers(0, papers, e), rng.integers(0, papers, e)),
        TypedEdges(("author", "writes", "paper"), rng.integers(0, authors, e), rng.integers(0, papers, e)),
        TypedEdges(("paper", "has_topic", "field"), np.arange(papers), rng.integers(0, fields, papers)),
    ]
    order = rng.permutation(papers)
    with DatasetWriter(output) as writer:
        schema = write_typed_graph(writer, types, relations, target="paper", add_reverse=True)
        writer.save("labels", rng.integers(0, 3, papers).astype(np.int64))
        writer.save("train_idx", np.sort(order[: papers // 2]).astype(np.int64))
        writer.save("valid_idx", np.sort(order[papers // 2 : 3 * papers // 4]).astype(np.int64))
        writer.save("test_idx", np.sort(order[3 * papers // 4 :]).astype(np.int64))
        return writer.finish(
            {
                "name": "tiny-typed",
                "num_nodes": schema.num_nodes,
                "num_edges": schema.num_edges,
                "directed": True,
                "feature_dim": 0,
                "feature_dtype": "float32",
                "num_classes": 3,
                "source": {"generator": "tests"},
                "hetero": schema.to_meta(),
            }
        )
