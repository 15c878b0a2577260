"""Import a MATLAB ``.mat`` file: ``graphtier prepare mat SOURCE OUTPUT``.

Many attributed-graph datasets (ACM, BlogCatalog, Flickr, the fraud graphs, ...) are shared as a
``.mat`` holding a square adjacency matrix (sparse or dense; entry ``[u, v] != 0`` is an edge
``u -> v``), a feature matrix [N, D] (sparse or dense) and labels: a vector of class ids or a
one-hot matrix [N, K]. The file is read with :func:`scipy.io.loadmat` (MATLAB v4 to v7.2; v7.3
files are HDF5 and are refused with a message saying how to re-save them).

Keys default to the first present of :data:`ADJACENCY_KEYS`, :data:`FEATURE_KEYS` and
:data:`LABEL_KEYS`; ``adjacency_key``/``features_key``/``labels_key`` pick others, and ``"none"``
skips features or labels.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.format import Dataset
from graphtier.dataset.importers.assemble import finish
from graphtier.dataset.importers.assemble.options import ImportOptions
from graphtier.dataset.importers.common import edges, node_data, textio
from graphtier.dataset.importers.common.mat_splits import NONE, choose_split_keys, read_split_variables
from graphtier.dataset.importers.common.mat_variables import (
    ADJACENCY_KEYS,
    FEATURE_KEYS,
    LABEL_KEYS,
    load_mat,
    pick_variable,
    read_adjacency,
    read_features,
    read_mat_labels,
    unused_variables,
)
from graphtier.dataset.importers.formats.csr_npz import compressed_edge_chunks
from graphtier.dataset.importers.formats.mat_typed import import_mat_relations
from graphtier.dataset.importers.split.splits import save_splits
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import OptionError


def import_mat(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    name: str | None = None,
    overwrite: bool = False,
    adjacency_key: str | Sequence[str] | None = None,
    features_key: str | None = None,
    labels_key: str | None = None,
    split_keys: str | Sequence[str] | None = None,
    options: ImportOptions | None = None,
    progress: Progress = NO_PROGRESS,
    **option_values: Any,
) -> Dataset:
    """Import the graph in the MATLAB file ``source`` into the dataset directory ``output``.

    Args:
        source: a ``.mat`` (v4 to v7.2) file.
        adjacency_key, features_key, labels_key: variable names (default: the first present of
            :data:`ADJACENCY_KEYS`, :data:`FEATURE_KEYS`, :data:`LABEL_KEYS`); ``"none"`` skips
            features or labels. Several adjacency keys (HAN's ``["PAP", "PLP"]``) make a typed dataset: one
            node type, one relation per key (:func:`~graphtier.dataset.importers.formats.mat_typed.import_mat_relations`).
        split_keys: the file's own split, ``"train_idx,val_idx,test_idx"`` or three names (0- or 1-based
            detected, see :func:`read_split_variables`); ``"none"``: not read. Default: the variables of
            :data:`SPLIT_GUESSES` when all three are present and no random ``split`` is asked for; what
            happened to a split the file holds is said in ``meta.json`` (``source.split``).
        options, option_values: the shared :class:`ImportOptions`, as for the edge-list importer;
            ``labels``/``features`` files replace the variables (row k = node k of the adjacency),
            ``labels_column`` takes a column of a 2-d labels variable or file, ``unlabelled_value`` is the
            class id that means "no label" (Facebook100 uses 0); synthetic features or labels need the
            file to have none (``features_key``/``labels_key`` ``"none"``).
        progress: reports building the CSC, copying the features and validating.

    Returns:
        The written :class:`Dataset` (``meta.source.options`` names the variables used,
        ``meta.source.unused_variables`` the others with their shapes).
    """
    path = textio.require_file(source, ".mat file")
    options = ImportOptions.of(options, option_values)
    labels, features = options.labels, options.features
    if labels is not None and labels_key not in (None, NONE):
        raise OptionError(f"--labels and --labels-key: expected at most one, found both ({labels}, {labels_key!r})")
    if features is not None and features_key not in (None, NONE):
        raise OptionError(
            f"--features and --features-key: expected at most one, found both ({features}, {features_key!r})"
        )
    variables = load_mat(path)
    adjacency_keys = [adjacency_key] if adjacency_key is None or isinstance(adjacency_key, str) else list(adjacency_key)
    if len(adjacency_keys) > 1:
        return import_mat_relations(
            path,
            variables,
            output,
            name=name,
            overwrite=overwrite,
            adjacency_keys=adjacency_keys,
            features_key=features_key,
            labels_key=labels_key,
            split_keys=split_keys,
            options=options,
            progress=progress,
        )
    split_vars, split_note = choose_split_keys(variables, split_keys, options.split)
    adj_key = pick_variable(
        variables, path, adjacency_keys[0] if adjacency_keys else None, ADJACENCY_KEYS, "--adjacency-key", required=True
    )
    feat_key = (
        None
        if features is not None
        else pick_variable(variables, path, features_key, FEATURE_KEYS, "--features-key", required=False)
    )
    lab_key = (
        None
        if labels is not None
        else pick_variable(variables, path, labels_key, LABEL_KEYS, "--labels-key", required=False)
    )
    assert adj_key is not None
    if feat_key is not None and options.synthetic_features:
        raise OptionError(
            f"--synthetic-features: {path} already has features ({feat_key!r}); pass --features-key none to replace them"
        )
    if lab_key is not None and options.synthetic_labels:
        raise OptionError(
            f"--synthetic-labels: {path} already has labels ({lab_key!r}); pass --labels-key none to replace them"
        )
    options.check_inputs(labels_in_source=lab_key is not None, label_sources=("labels_key", "labels"))
    indptr_in, indices_in, n = read_adjacency(variables[adj_key], path, adj_key)
    idmap = edges.IdMap(num_nodes=n)
    feature_rows = read_features(variables[feat_key], path, feat_key, n) if feat_key is not None else None
    if lab_key is not None:
        parsed_labels = read_mat_labels(
            variables[lab_key], path, lab_key, n, column=options.labels_column, unlabelled=options.unlabelled_value
        )
    elif labels is not None:
        parsed_labels = node_data.read_raw_labels(
            labels, options.labels_layout, column=options.labels_column, unlabelled=options.unlabelled_value
        ).to_labels(labels, idmap)
    else:
        parsed_labels = None
    splits = None
    if split_vars is not None:
        splits, split_note = read_split_variables(variables, path, split_vars, n)
    unused = unused_variables(variables, (adj_key, feat_key, lab_key, *(split_vars or ())))
    del variables
    built = edges.build_csc(
        compressed_edge_chunks(indptr_in, indices_in, "csr"),
        n,
        undirected=options.undirected,
        keep_duplicates=options.keep_duplicates,
        drop_self_loops=options.drop_self_loops,
        progress=progress,
        num_input_edges=int(indptr_in[-1]),
    )
    del indptr_in, indices_in
    indptr, indices, edge_counts = built.indptr, built.indices, built.counts
    del built
    format_options = {
        "adjacency_key": adj_key,
        "features_key": feat_key,
        "labels_key": lab_key,
        "split_keys": list(split_vars) if split_vars else None,
    }
    with DatasetWriter(output, overwrite=overwrite) as writer:
        writer.source_notes["unused_variables"] = unused
        if split_note:
            writer.source_notes["split"] = split_note
        if splits is not None:
            save_splits(writer, splits)
        feature_source: Any = feature_rows
        if features is not None:
            feature_source = node_data.read_feature_matrix(features, writer.tmp / "features.scratch")
        writer.save("indptr", indptr)
        writer.save("indices", indices)
        num_edges = int(indices.shape[0])
        del indices
        return finish.finish_edge_import(
            writer,
            idmap,
            importer="mat",
            source=path,
            name=name,
            num_edges=num_edges,
            edge_counts=edge_counts,
            labels=parsed_labels,
            features=feature_source,
            options=options,
            format_options=format_options,
            progress=progress,
        )
