"""Small typed (heterogeneous) datasets on disk for tests of the typed store, sampler, trainer, PyG and CLI.

``write_typed_labelled_graph``: paper (featured, labelled: the target), author (featured, float16), subject
(featureless). Each paper is about the subject of its class (with some noise) and written by authors of mostly its
class; the paper features are a weak signal, so a model that reads the graph beats one that reads the paper features
alone. The other writers are smaller variants (random labels, or a class given by the field); see each docstring.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphtier.dataset import Dataset, DatasetWriter
from graphtier.dataset.typed_graph import TypedEdges, TypedNodes, write_typed_graph


def _write_typed(
    output: Path,
    types: list[TypedNodes],
    relations: list[TypedEdges],
    labels: np.ndarray,
    order: np.ndarray,
    *,
    name: str,
    num_classes: int,
    source: dict,
    add_reverse: bool = True,
) -> Dataset:
    """Write the typed graph with target ``paper``, its ``labels`` and the 50/25/25% splits of the permutation
    ``order`` of the papers to ``output``, and open it."""
    papers = labels.shape[0]
    with DatasetWriter(output) as writer:
        schema = write_typed_graph(writer, types, relations, target="paper", add_reverse=add_reverse)
        writer.save("labels", labels.astype(np.int64))
        writer.save("train_idx", np.sort(order[: papers // 2]).astype(np.int64))
        writer.save("valid_idx", np.sort(order[papers // 2 : 3 * papers // 4]).astype(np.int64))
        writer.save("test_idx", np.sort(order[3 * papers // 4 :]).astype(np.int64))
        return writer.finish(
            {
                "name": name,
                "num_nodes": schema.num_nodes,
                "num_edges": schema.num_edges,
                "directed": True,
                "feature_dim": 0,
                "feature_dtype": "float32",
                "num_classes": num_classes,
                "hetero": schema.to_meta(),
                "source": source,
            }
        )


def write_typed_labelled_graph(
    output: Path,
    *,
    papers: int = 300,
    authors: int = 120,
    num_classes: int = 3,
    noise: float = 3.0,
    seed: int = 0,
) -> Dataset:
    """Write the dataset (see the module) to ``output`` and open it; splits 50/25/25 of the papers."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, papers)
    author_class = rng.integers(0, num_classes, authors)
    subjects = 2 * num_classes  # two subjects per class
    paper_feat = (np.eye(num_classes, 8)[labels] + noise * rng.normal(size=(papers, 8))).astype(np.float32)
    author_feat = rng.normal(size=(authors, 4)).astype(np.float16)
    about_dst = np.where(
        rng.random(papers) < 0.85, 2 * labels + rng.integers(0, 2, papers), rng.integers(0, subjects, papers)
    )
    writes_src, writes_dst = [], []
    for paper in range(papers):
        same = np.flatnonzero(author_class == labels[paper])
        for _ in range(3):
            pool = same if rng.random() < 0.8 else np.arange(authors)
            writes_src.append(int(pool[rng.integers(0, pool.size)]))
            writes_dst.append(paper)
    cites_src = rng.integers(0, papers, 2 * papers)
    cites_dst = rng.integers(0, papers, 2 * papers)
    types = [TypedNodes("paper", papers, paper_feat), TypedNodes("author", authors, author_feat),
             TypedNodes("subject", subjects, None)]  # fmt: skip
    relations = [
        TypedEdges(("author", "writes", "paper"), np.array(writes_src), np.array(writes_dst)),
        TypedEdges(("paper", "about", "subject"), np.arange(papers), about_dst),
        TypedEdges(("paper", "cites", "paper"), cites_src, cites_dst),
    ]
    order = rng.permutation(papers)
    source = {"importer": "tests.typed_data.write_typed_labelled_graph", "options": {"seed": seed}}
    return _write_typed(
        output, types, relations, labels, order, name="typed-tiny", num_classes=num_classes, source=source
    )


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
    labels = rng.integers(0, 3, papers)
    return _write_typed(
        output, types, relations, labels, order, name="tiny-typed", num_classes=3, source={"generator": "tests"}
    )


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
    """Papers (features 8 x float32, random labels, splits), authors (features 4 x float16), subjects (featureless);
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
    labels = rng.integers(0, num_classes, papers)
    source = {"importer": "tests.typed_data.write_typed_dataset", "options": {"seed": seed}}
    return _write_typed(
        output,
        types,
        relations,
        labels,
        order,
        name="typed",
        num_classes=num_classes,
        source=source,
        add_reverse=add_reverse,
    )


def write_tiny_typed_dataset(
    output: Path, *, papers: int = 120, authors: int = 80, fields: int = 6, seed: int = 0
) -> Dataset:
    """Papers (8 float32 features), authors (4 float32 features), fields (featureless); cites, writes, has (+
    reverses); 3 classes: a paper's class is its field's mod 3, so the graph predicts it."""
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
    source = {"importer": "tests.typed_data.write_tiny_typed_dataset", "options": {"seed": seed}}
    return _write_typed(output, types, relations, labels, order, name="tiny-typed", num_classes=3, source=source)


def open_tiny_typed_dataset(tmp_path: Path) -> Dataset:
    """The ``write_tiny_typed_dataset`` dataset written under ``tmp_path / "typed"``."""
    return write_tiny_typed_dataset(tmp_path / "typed")
