"""Predictions of a saved model for every node of a dataset (exact layer-wise inference)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch

from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import Dataset
from graphtier.errors import OptionError
from graphtier.memory import make_feature_store
from graphtier.train.infer.inference import check_layerwise, full_in_degree, layerwise_outputs, reads_features_in_order
from graphtier.train.infer.typed_inference import typed_layerwise_outputs, typed_output_tables
from graphtier.train.infer.typed_tables import reads_by_tables
from graphtier.train.nn.link_model import encoder_of
from graphtier.train.persist.saved import SavedModel, check_fingerprint, load_model

ROWS_PER_BLOCK = 1 << 20
"""Rows of the logits turned into classes or probabilities at a time (a module constant: tests shrink it)."""


@dataclass
class Predictions:
    """The output of :func:`predict`, all on the CPU, one row per node in the dataset's node order (a typed
    model: per node of the target type, by local id).

    Attributes:
        logits: float32 [N, C]; for a link model (``--task link``) the node embeddings [N, hidden].
        embeddings: float32 [N, H], the input of the last layer, or None when not asked for.
    """

    logits: np.ndarray
    embeddings: np.ndarray | None = None

    @property
    def classes(self) -> np.ndarray:
        """int64 [N]: the predicted class of every node (computed in row blocks: ``logits`` may be a memory map)."""
        classes = np.empty(self.logits.shape[0], dtype=np.int64)
        for start in range(0, self.logits.shape[0], ROWS_PER_BLOCK):
            stop = start + ROWS_PER_BLOCK
            classes[start:stop] = np.asarray(self.logits[start:stop]).argmax(axis=1)
        return classes

    @property
    def probabilities(self) -> np.ndarray:
        """float32 [N, C]: softmax of the logits (rows sum to 1), computed in row blocks."""
        probabilities = np.empty(self.logits.shape, dtype=np.float32)
        for start in range(0, self.logits.shape[0], ROWS_PER_BLOCK):
            stop = start + ROWS_PER_BLOCK
            probabilities[start:stop] = torch.softmax(torch.from_numpy(np.array(self.logits[start:stop])), dim=1)
        return probabilities


def predict(
    model: SavedModel | str | os.PathLike[str],
    dataset: Dataset | str | os.PathLike[str],
    *,
    device: str = "cpu",
    chunk_size: int = 4096,
    embeddings: bool = False,
    progress: Progress = NO_PROGRESS,
    scratch_dir: str | os.PathLike[str] | None = None,
) -> Predictions:
    """Run a saved model (a :class:`SavedModel` or the path of a ``--save-model`` file) on every node.

    The dataset must be the one the model was trained on (same fingerprint: graph, node order,
    features), else OptionError. Inference is exact: every layer over all in-neighbours of all
    nodes, one chunk of ``chunk_size`` destination nodes at a time (the result does not depend on it);
    ``device`` runs the model. A GCN is normalised by full-graph in-degrees whichever ``--gcn-degrees``
    it was trained with (see :mod:`graphtier.train.infer.inference`). A link model's output is its encoder's:
    the embeddings of all nodes, in ``logits``. A typed model (``saved.schema``) predicts every node of the
    target type (:func:`typed_layerwise_outputs`; rows are the target's local ids); a typed link model embeds the
    nodes of its relation's two types, the rows of the sources' type then those of the destinations' type (one
    table when they are one type; :class:`~graphtier.train.infer.link_predict.PairSpace`). ``progress`` reports the
    stage ``inference: layer-wise``.

    ``scratch_dir`` (a directory): every layer's outputs [N, H] (a typed model: every type's) go to unlinked
    memory-mapped files there instead of RAM (see :func:`~graphtier.train.infer.inference.layerwise_outputs`), as do the
    learnable tables of a ``model`` given by path (:func:`~graphtier.train.persist.saved.load_model`), so the returned
    ``logits`` and ``embeddings`` are memory maps; up to three [N, H] float32 tables (3 x N x H x 4 bytes: a layer's
    input and output, and a GCN layer's scaled inputs or a narrowing layer's projected ones) must fit on its disk.
    """
    saved = model if isinstance(model, SavedModel) else load_model(model, tables_dir=scratch_dir)
    data = dataset if isinstance(dataset, Dataset) else Dataset.open(dataset)
    check_fingerprint(saved, data)
    if chunk_size < 1:
        raise OptionError(f"--chunk-size expected a positive integer, found {chunk_size}")
    target = torch.device(device)
    if target.type == "cuda" and not torch.cuda.is_available():
        raise OptionError(f"--device {device}: CUDA is not available on this machine (use --device cpu)")
    if saved.schema is not None:
        return _typed_predict(saved, data, target, chunk_size, embeddings, progress, scratch_dir)
    check_layerwise(encoder_of(saved.model), f"--model {saved.path}")
    if data.features is None:
        raise OptionError(f"{data.path}: dataset has no features (feature_dim 0); the model needs them")
    net = saved.model.to(target)
    indptr = np.asarray(data.indptr)
    # GCN: full-graph in-degrees with either --gcn-degrees (saved.gcn_degrees): exact inference sees the
    # whole graph, where a node's block in-degree is its full in-degree (graphtier.train.infer.inference)
    degree = full_in_degree(indptr, target) if saved.config["model"] == "gcn" else None
    encoder = encoder_of(net)
    store = make_feature_store(
        data.features,
        "cpu-gather",
        device=target,
        ring_size=3,
        random_access=not reads_features_in_order(encoder, target),
    )
    try:
        logits, hidden = layerwise_outputs(
            encoder, store.gather, indptr, np.asarray(data.indices), num_nodes=data.num_nodes, device=target,
            degree=degree, chunk_size=chunk_size, keep_embeddings=embeddings, progress=progress,
            scratch_dir=scratch_dir,
        )  # fmt: skip
    finally:
        store.close()
        saved.model.to("cpu")
    return Predictions(logits=logits.numpy(), embeddings=hidden.numpy() if hidden is not None else None)


def _typed_predict(
    saved: SavedModel, data: Dataset, target: torch.device, chunk_size: int, embeddings: bool, progress: Progress,
    scratch_dir: str | os.PathLike[str] | None = None,
) -> Predictions:  # fmt: skip
    """:func:`predict` of a typed model on ``target``: exact layer-wise logits of every node of the target type."""
    encoder = encoder_of(saved.model)
    check_layerwise(encoder, f"--model {saved.path}")
    in_order = reads_by_tables(encoder, target)  # the feature tables are read in order: keep the kernel's read-ahead
    stores = {
        name: make_feature_store(table, "cpu-gather", device=target, ring_size=3, random_access=not in_order)
        for name, table in data.type_features.items()
        if table is not None
    }
    try:
        if saved.link_relation is not None:  # a link encoder: the pair space's table (PairSpace)
            src, _, dst = saved.link_relation
            tables = typed_output_tables(
                encoder_of(saved.model.to(target)), lambda node_type, ids: stores[node_type].gather(ids),
                np.asarray(data.indptr), np.asarray(data.indices), data.schema, device=target, chunk_size=chunk_size,
                progress=progress, scratch_dir=scratch_dir,
            )  # fmt: skip
            table = tables[src] if src == dst else torch.cat([tables[src], tables[dst]])
            return Predictions(logits=table.numpy(), embeddings=None)
        logits, hidden = typed_layerwise_outputs(
            saved.model.to(target), lambda node_type, ids: stores[node_type].gather(ids), np.asarray(data.indptr),
            np.asarray(data.indices), data.schema, device=target, chunk_size=chunk_size, keep_embeddings=embeddings,
            progress=progress, scratch_dir=scratch_dir,
        )  # fmt: skip
    finally:
        for store in stores.values():
            store.close()
        saved.model.to("cpu")
    return Predictions(logits=logits.numpy(), embeddings=hidden.numpy() if hidden is not None else None)
