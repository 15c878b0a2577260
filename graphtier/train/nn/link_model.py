"""The link-prediction model: a node encoder (any model of :func:`build_model`) and a pair decoder.

The encoder's output width is ``hidden``: its last layer gives each node's embedding (no activation), so
``forward(x, blocks, degree)`` is the encoder's and exact layer-wise inference of the encoder
(:func:`graphtier.train.infer.inference.layerwise_outputs`) gives the exact embeddings of all nodes. ``score(h_src,
h_dst)`` turns two rows of embeddings into one logit per pair: ``dot`` (their inner product, as GAE and
DGL's link examples) or ``mlp`` (their Hadamard product through Linear-ReLU-Linear, as OGB's baselines). A model
of edge-level targets (``--link-target``) adds a learned scalar ``bias`` to every score (a rating's mean, the
log-odds of a label), started at the training targets' baseline by :func:`start_link_bias`.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from torch import Tensor, nn

from graphtier.dataset.schema import Schema
from graphtier.sampling.batch import Block
from graphtier.train.nn.models import build_model
from graphtier.train.nn.typed_models import build_typed_model
from graphtier.train.options.spec import TASK_NAMES, TaskSpec


class LinkModel(nn.Module):
    """Encoder + decoder: ``forward`` gives node embeddings [rows, hidden], ``score`` pair logits [M] (``bias``:
    plus a learned scalar: the predicted value or logit of an edge-level target)."""

    def __init__(self, encoder: nn.Module, decoder: str, hidden: int, bias: bool = False) -> None:
        super().__init__()
        TaskSpec(task="link", decoder=decoder)  # checks the decoder's name
        self.encoder = encoder
        self.decoder = decoder
        self.num_layers = int(getattr(encoder, "num_layers"))
        self.kind = getattr(encoder, "kind", "mlp")
        self.predictor: nn.Module | None = None
        if decoder == "mlp":
            self.predictor = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.bias = nn.Parameter(torch.zeros(())) if bias else None

    @property
    def edge_input_dim(self) -> int:
        """The width of the edge vector the encoder's layers read (:attr:`~graphtier.train.nn.models.BlockGNN.edge_input_dim`); 0: none."""
        return int(getattr(self.encoder, "edge_input_dim", 0))

    def forward(self, x: Tensor, blocks: Sequence[Block] = (), degree: Tensor | None = None) -> Tensor:
        """Embeddings float [blocks[-1].num_dst, hidden] of the batch's output rows (the encoder's output)."""
        return self.encoder(x, blocks, degree)

    def score(self, h_src: Tensor, h_dst: Tensor) -> Tensor:
        """Logits float [M] of the pairs whose embeddings are the rows of ``h_src``, ``h_dst`` (both [M, hidden])."""
        if self.predictor is None:
            out = (h_src * h_dst).sum(dim=-1)
        else:
            out = self.predictor(h_src * h_dst).squeeze(-1)
        return out if self.bias is None else out + self.bias


def start_link_bias(model: nn.Module, value: float) -> None:
    """Set the scalar ``bias`` of a :class:`LinkModel` of edge-level targets to ``value`` (no-op without one)."""
    if isinstance(model, LinkModel) and model.bias is not None:
        with torch.no_grad():
            model.bias.fill_(value)


def encoder_of(model: nn.Module) -> nn.Module:
    """The module whose output layer-wise inference computes: a link model's encoder, else the model itself."""
    return model.encoder if isinstance(model, LinkModel) else model


def build_task_model(
    task: str,
    name: str,
    in_dim: int,
    hidden: int,
    out_dim: int,
    num_layers: int,
    *,
    decoder: str = "dot",
    dropout: float = 0.5,
    norm: str = "none",
    heads: int = 4,
    bias: bool = False,
    edge_dim: int | None = None,
    time_encoding: int = 0,
    time_encoding_fixed: bool = False,
) -> nn.Module:
    """The model of ``task``: :func:`build_model` for ``node`` (``out_dim`` classes), a :class:`LinkModel` whose
    encoder outputs ``hidden``-wide embeddings for ``link`` (``out_dim`` unused; ``bias``: edge-level targets).
    ``edge_dim``, ``time_encoding`` and ``time_encoding_fixed``: the edge inputs of GAT and GINE (:func:`build_model`)."""
    if task not in TASK_NAMES:
        raise ValueError(f"unknown task {task!r}")
    options = {"dropout": dropout, "norm": norm, "heads": heads, "edge_dim": edge_dim, "time_encoding": time_encoding,
               "time_encoding_fixed": time_encoding_fixed}  # fmt: skip
    if task == "node":
        return build_model(name, in_dim, hidden, out_dim, num_layers, **options)  # type: ignore[arg-type]
    encoder = build_model(name, in_dim, hidden, hidden, num_layers, **options)  # type: ignore[arg-type]
    return LinkModel(encoder, decoder, hidden, bias)


def build_typed_link_model(
    name: str, schema: Schema, relation: tuple[str, str, str], decoder: str, bias: bool = False, **options: Any
) -> LinkModel:
    """A typed link model of ``relation`` ``(SRC, REL, DST)``: a :class:`LinkModel` whose encoder is the typed
    model ``name`` (:func:`~graphtier.train.nn.typed_models.build_typed_model` with ``options``; its ``num_classes``
    becomes ``hidden``) returning a dict of ``hidden``-wide embeddings of the types SRC and DST."""
    hidden = int(options["hidden"])
    encoder = build_typed_model(
        name, schema, **{**options, "num_classes": hidden, "outputs": (relation[0], relation[2])}
    )
    return LinkModel(encoder, decoder, hidden, bias)


@torch.no_grad()
def score_pairs(model: LinkModel, embeddings: Tensor, pairs: Tensor, *, chunk_size: int = 65536) -> Tensor:
    """float32 [P] logits of ``pairs`` (int64 [P, 2] node ids, CPU) from all nodes' ``embeddings`` [N, hidden].

    Pairs are scored ``chunk_size`` at a time on the decoder's device (its parameters'; the CPU for ``dot``).
    """
    model.eval()
    params = list(model.parameters())
    device = params[0].device if params else torch.device("cpu")
    out = torch.empty(pairs.shape[0], dtype=torch.float32)
    for start in range(0, pairs.shape[0], chunk_size):
        chunk = pairs[start : start + chunk_size]
        h_src = embeddings[chunk[:, 0]].to(device).float()
        h_dst = embeddings[chunk[:, 1]].to(device).float()
        out[start : start + chunk.shape[0]] = model.score(h_src, h_dst).float().cpu()
    return out
