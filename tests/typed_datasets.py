"""A small typed (heterogeneous) dataset for tests: papers citing papers, authors writing papers, subjects."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphtier.dataset import Dataset, DatasetWriter
from graphtier.dataset.typed_graph import TypedEdges, TypedNodes, write_typed_graph


def write_typed_dataset(
    output: Path,
    *,
    papers: int = 120,
    authors: int = 80,
    subjects: int = 6,
    num_classes: int = 3,
    seed: int = 0,
    add_reverse: bool = True,
) -> Dataset:
    """Papers (features 8 x float32, labels, splits), authors (features 4 x float16), subjects (featureless);
    relations paper-cites-paper, author-writes-paper, paper-about-subject (+ reverses)."""
    rng = np.random.default_rng(seed)
    types = [
        TypedNodes("paper", papers, rng.normal(size=(papers, 8)).astype(np.float32)),
        TypedNodes("author", authors, rng.normal(size=(authors, 4)).astype(np.float16)),
        TypedNodes("subject", subjects, None),
    ]
    cites = 4 * papers
    writes = 3 * papers
    relations = [
        TypedEdges(("paper", "cites", "paper"), rng.integers(0, papers, cites), rng.integers(0, papers, cites)),
        TypedEdges(
            ("author", "writes", "paper"),
            (rng.pareto(1.5, writes) * 5).astype(np.int64) % authors,
            rng.integers(0, papers, writes),
        ),
        TypedEdges(("paper", "about", "subject"), np.arange(papers), rng.integers(0, subjects, papers)),
    ]
    order = rng.permutation(papers)
    with DatasetWriter(output) as writer:
        schema = write_typed_graph(writer, types, relations, target="paper", add_reverse=add_reverse)
        writer.save("labels", rng.integers(0, num_classes, papers).astype(np.int64))
        writer.save("train_idx", np.sort(order[: papers // 2]).astype(np.int64))
        writer.save("valid_idx", np.sort(order[papers // 2 : 3 * papers // 4]).astype(np.int64))
        writer.save("test_idx", np.sort(order[3 * papers // 4 :]).astype(np.int64))
        return writer.finish(
            {
                "name": "typed",
                "num_nodes": schema.num_nodes,
                "num_edges": schema.num_edges,
                "directed": True,
                "feature_dim": 0,
                "feature_dtype": "float32",
                "num_classes": num_classes,
                "hetero": schema.to_meta(),
                "source": {"importer": "tests.typed_datasets.write_typed_dataset", "options": {"seed": seed}},
            }
        )
