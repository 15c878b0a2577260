"""A ``.mat`` with several graphs over the same nodes (HAN's ``ACM3025.mat``: the metapath graphs ``PAP`` and
``PLP``), imported as a typed dataset: one node type, one relation per adjacency variable.

``graphtier prepare mat ACM3025.mat data/acm3025 --adjacency-key PAP --adjacency-key PLP`` calls
:func:`import_mat_relations` through :func:`~graphtier.dataset.importers.formats.mat.import_mat`. Relation ``K`` holds
the edges ``u -> v`` of entry ``[u, v] != 0`` of variable ``K``; features, labels and the file's own split are
read as for one adjacency.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import resources
from graphtier.dataset.finite import NonFiniteGuard
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers.assemble.options import ImportOptions
from graphtier.dataset.importers.assemble.typed_files import TypedImport, finish_typed_import
from graphtier.dataset.importers.assemble.typed_graph import TypedEdges, TypedNodes
from graphtier.dataset.importers.common import node_data
from graphtier.dataset.importers.common.edges import IdMap
from graphtier.dataset.importers.common.mat_splits import choose_split_keys, read_split_variables
from graphtier.dataset.importers.common.mat_variables import (
    FEATURE_KEYS,
    LABEL_KEYS,
    pick_variable,
    read_adjacency,
    read_features,
    read_mat_labels,
    unused_variables,
)
from graphtier.dataset.importers.split.splits import random_split
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError, OptionError

NODE_TYPE = "node"
"""The name of the one node type."""

TYPED_FIELDS = ("labels", "features", "labels_column", "unlabelled_value", "split", "seed", "non_finite")
"""The :class:`ImportOptions` a typed ``.mat`` import takes (edge handling and link splits are per relation and
not offered here)."""


def import_mat_relations(
    path: Path,
    variables: dict[str, Any],
    output: str | os.PathLike[str],
    *,
    name: str | None,
    overwrite: bool,
    adjacency_keys: Sequence[str],
    features_key: str | None,
    labels_key: str | None,
    split_keys: str | Sequence[str] | None,
    options: ImportOptions,
    progress: Progress = NO_PROGRESS,
) -> Dataset:
    """Import the ``.mat`` ``path`` (its ``variables`` already read) as one node type with one relation per
    variable of ``adjacency_keys`` (square, the same size); the other arguments as
    :func:`~graphtier.dataset.importers.formats.mat.import_mat`. Returns the written typed :class:`Dataset`."""
    options.check_accepted(TYPED_FIELDS, "mat importer with several --adjacency-key; the")
    if len(set(adjacency_keys)) != len(adjacency_keys):
        raise OptionError(f"--adjacency-key: expected distinct variables, found {list(adjacency_keys)}")
    split_vars, split_note = choose_split_keys(variables, split_keys, options.split)
    relations: list[TypedEdges] = []
    n: int | None = None
    for key in adjacency_keys:
        pick_variable(variables, path, key, (), "--adjacency-key", required=True)
        indptr, indices, size = read_adjacency(variables[key], path, key)
        if n is not None and size != n:
            raise DatasetError(
                f"{path}: variable {key!r}: expected a {n} x {n} adjacency (as {adjacency_keys[0]!r}), "
                f"found {size} x {size}"
            )
        n = size
        src = np.repeat(np.arange(size, dtype=np.int64), np.diff(indptr))
        relations.append(TypedEdges((NODE_TYPE, key, NODE_TYPE), src, indices.astype(np.int64), f"{path}:{key}"))
    assert n is not None
    feat_key = None
    if options.features is None:
        feat_key = pick_variable(variables, path, features_key, FEATURE_KEYS, "--features-key", required=False)
    lab_key = None
    if options.labels is None:
        lab_key = pick_variable(variables, path, labels_key, LABEL_KEYS, "--labels-key", required=False)
    options.check_inputs(labels_in_source=lab_key is not None, label_sources=("labels_key", "labels"))
    if lab_key is not None:
        labels = read_mat_labels(
            variables[lab_key], path, lab_key, n, column=options.labels_column, unlabelled=options.unlabelled_value
        )
    elif options.labels is not None:
        labels = node_data.read_raw_labels(
            options.labels, options.labels_layout, column=options.labels_column, unlabelled=options.unlabelled_value
        ).to_labels(options.labels, IdMap(num_nodes=n))
    else:
        labels = None
    splits: dict[str, np.ndarray] = {}
    if split_vars is not None:
        parts, split_note = read_split_variables(variables, path, split_vars, n)
        splits = dict(zip(("train", "valid", "test"), parts, strict=True))
    elif options.split is not None:
        mask = labels.values >= 0 if labels is not None else None
        splits = dict(zip(("train", "valid", "test"), random_split(n, options.split, options.seed, mask), strict=True))
    with DatasetWriter(output, overwrite=overwrite) as writer:
        guard = NonFiniteGuard(path if feat_key is not None else options.features or path, options.non_finite)
        feature_rows: Any = None
        if feat_key is not None:
            feature_rows = read_features(variables[feat_key], path, feat_key, n)
        elif options.features is not None:
            feature_rows = node_data.read_feature_matrix(options.features, writer.tmp / "features.scratch")
            if feature_rows.shape[0] != n:
                raise DatasetError(
                    f"{options.features}: --features: expected {n} rows (one per node), found {feature_rows.shape[0]}"
                )
        features = None
        if feature_rows is not None:
            rows, dim = feature_rows.shape
            resources.require_memory(rows * dim * 4, f"{path}: the features ({rows} x {dim})")
            dtype = feature_rows.dtype if feature_rows.dtype in (np.float16, np.float32) else np.dtype(np.float32)
            features = guard.apply(np.asarray(feature_rows[:rows]).astype(dtype, copy=False), 0)
        writer.source_notes["unused_variables"] = unused_variables(
            variables, (*adjacency_keys, feat_key, lab_key, *(split_vars or ()))
        )
        if split_note:
            writer.source_notes["split"] = split_note
        data = TypedImport(
            [TypedNodes(NODE_TYPE, n, features)],
            relations,
            NODE_TYPE,
            labels,
            splits,
            [p for p in (path, options.labels, options.features) if p is not None],
        )
        return finish_typed_import(
            writer,
            data,
            name=name,
            importer="mat",
            add_reverse=False,
            options={
                "adjacency_key": list(adjacency_keys),
                "features_key": feat_key,
                "labels_key": lab_key,
                "split_keys": list(split_vars) if split_vars else None,
                **options.to_meta(TYPED_FIELDS),
            },
            guards=[guard],
            progress=progress,
        )
