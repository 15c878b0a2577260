"""A tiny typed (heterogeneous) dataset on disk for store and PyG tests: papers (features, labels), authors
(features), fields (featureless); cites, writes and has, with reverse relations."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphtier.dataset import Dataset
from graphtier.dataset.typed_graph import TypedEdges, TypedNodes, write_typed_graph
from graphtier.dataset.writer import DatasetWriter


def write_tiny_typed_dataset(output: Path, *, papers: int = 120, authors: int = 80, fields: int = 6, seed: int = 0):
    """Write and open the dataset (3 classes; a paper's class is its field's mod 3, so the graph predicts it)."""
    rng = np.random.default_rng(seed)
    field_of = rng.integers(0, fields, papers)
    labels = field_of % 3
    paper_x = (np.eye(3)[labels] + 1.5 * rng.normal(size=(papers, 3))).astype(np.float32)
    paper_x = np.concatenate([paper_x, rng.normal(size=(papers, 5)).astype(np.float32)], axis=1)
    author_x = rng.normal(size=(authors, 4)).astype(np.float32)
    cites = (rng.integers(0, papers, papers * 3), rng.integers(0, papers, papers * 3))
    writes = (rng.integers(0, authors, papers * 2), rng.integers(0, papers, papers * 2))
    types = [TypedNodes("paper", papers, paper_x), TypedNodes("author", authors, author_x), TypedNodes("field", fields)]
    relations = [
        TypedEdges(("paper", "cites", "paper"), *cites),
        TypedEdges(("author", "writes", "paper"), *writes),
        TypedEdges(("field", "has", "paper"), field_of, np.arange(papers)),
    ]
    order = rng.permutation(papers)
    with DatasetWriter(output) as writer:
        schema = write_typed_graph(writer, types, relations, target="paper", add_reverse=True)
        writer.save("labels", labels.astype(np.int64))
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
                "hetero": schema.to_meta(),
                "source": {"importer": "tests.typed_graphs.write_tiny_typed_dataset", "options": {"seed": seed}},
            }
        )


def open_tiny_typed_dataset(tmp_path: Path) -> Dataset:
    """The dataset written under ``tmp_path / "typed"``."""
    return write_tiny_typed_dataset(tmp_path / "typed")
