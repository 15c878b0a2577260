"""Typed (heterogeneous) GNNs on :class:`~graphtier.sampling.typed_batch.TypedMiniBatch`: R-GCN, R-GAT, HeteroSAGE.

:func:`build_typed_model` builds one. Its ``forward(x, blocks, n_id)`` takes

* ``x``: per featured node type, float [blocks[0].num_src[t], in_dims[t]] (rows of ``n_id[t]``; float16 is cast to
  the model's dtype); featureless types (``in_dims[t] == 0``) are absent or ignored;
* ``blocks``: the mini-batch's :class:`~graphtier.sampling.typed_batch.TypedBlock` list, input layer first;
* ``n_id``: per type, int64 local ids [blocks[0].num_src[t]] (looks up the featureless types' tables);

and returns the logits of the target type's destinations of the last block, float [blocks[-1].num_dst[target],
num_classes] (row ``i`` for ``n_id[target][i]``; index them with the batch's ``seed_index``). All tensors on the
model's device. The layers are those of :mod:`graphtier.train.nn.typed_layers`; hidden layers end with a per-type
normalisation (``norm``) and the fused ReLU + dropout of :mod:`graphtier.train.nn.dropout`. The last layer computes the
target type only.

Featureless types (``featureless``):

* ``embedding``: a learnable [count, hidden] table (N(0, 1) init) looked up with ``n_id[t]``, then the normal first
  layer;
* ``onehot``: a learnable [count, width of the first layer's output] table that IS the first layer's weight for that
  type (the product of a one-hot input with a weight matrix is a row of it): every first-layer weight that reads the
  type is the identity;
* ``zeros``: a constant zero input of width 1 (only the structure, through the biases, reaches the output).

The learnable tables of ``embedding`` and ``onehot`` are :class:`~graphtier.train.nn.tiered_embedding.TieredEmbedding`:
a hot prefix of rows on the compute device, the rest in host memory, trained by a sparse row-wise Adam (not by the
model's optimizer; :func:`~graphtier.train.nn.tiered_embedding.attach_sparse_adam`). :func:`learnable_widths` gives
their widths before the model is built.

``mlp`` is the features-only baseline on a typed dataset: an MLP on the target type's features of the seeds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from torch import Tensor, nn

from graphtier.dataset.schema import Schema
from graphtier.errors import OptionError
from graphtier.sampling.typed_batch import TypedBlock
from graphtier.train.nn.dropout import ReLUDropout
from graphtier.train.nn.models import MLP, norm_layer
from graphtier.train.nn.tiered_embedding import TieredEmbedding
from graphtier.train.nn.typed_layers import HeteroSAGELayer, RGATLayer, RGCNLayer, TypedLayer, type_key
from graphtier.train.options.spec import FEATURELESS_MODES, TYPED_MODEL_NAMES, check_edge_inputs, check_gat_heads


def needed_types(schema: Schema, num_layers: int, outputs: Sequence[str] | None = None) -> list[list[str]]:
    """Per layer boundary the node types whose rows matter, in schema order: entry ``num_layers`` is the target
    (or the types ``outputs``), entry ``i`` the types that layer ``i`` reads (those of entry ``i + 1`` and the
    sources of relations into them); entry 0 is the input."""
    needed = [[schema.target] if outputs is None else [t for t in schema.type_names if t in outputs]]
    for _ in range(num_layers):
        wanted = set(needed[0]) | {r.src for r in schema.relations if r.dst in needed[0]}
        needed.insert(0, [t for t in schema.type_names if t in wanted])
    return needed


def learnable_widths(
    schema: Schema, in_dims: Mapping[str, int], featureless: str, hidden: int, num_classes: int, num_layers: int
) -> dict[str, int]:
    """Width of the learnable table of every featureless type the first layer reads (``embedding``: ``hidden``;
    ``onehot``: the first layer's output width); empty for ``zeros``."""
    if featureless not in ("embedding", "onehot"):
        return {}
    width = hidden if featureless == "embedding" or num_layers > 1 else num_classes
    return {t: width for t in needed_types(schema, num_layers)[0] if int(in_dims[t]) == 0}


class TypedInputs(nn.Module):
    """The first layer's input of each node type in ``types``: its features, or its featureless input (see the module).

    Attributes:
        dims: input width of every type for the first layer.
        projected: the ``onehot`` types (their input is already the first layer's output width).
        zeros: the featureless types of ``zeros`` (input: a zero column).
    """

    def __init__(
        self,
        schema: Schema,
        in_dims: Mapping[str, int],
        featureless: str,
        hidden: int,
        first_out: int,
        types: Sequence[str],
    ) -> None:
        super().__init__()
        self.schema = schema
        self.featureless = featureless
        self.dims: dict[str, int] = {}
        self.tables = nn.ModuleDict()
        projected = set()
        zeros = set()
        for t in types:
            dim = int(in_dims[t])
            if dim > 0:
                self.dims[t] = dim
                continue
            count = schema.node_type(t).count
            if featureless == "embedding":
                self.tables[type_key(schema, t)] = TieredEmbedding(count, hidden)
                self.dims[t] = hidden
            elif featureless == "onehot":
                self.tables[type_key(schema, t)] = TieredEmbedding(count, first_out, init="xavier_uniform")
                self.dims[t] = first_out
                projected.add(t)
            else:
                self.dims[t] = 1
                zeros.add(t)
        self.projected = frozenset(projected)
        self.zeros = frozenset(zeros)

    @property
    def featured(self) -> list[str]:
        """The types whose input is their features (``x[t]``)."""
        return [t for t in self.dims if t not in self.zeros and type_key(self.schema, t) not in self.tables]

    def forward(
        self,
        x: Mapping[str, Tensor],
        n_id: Mapping[str, Tensor],
        rows: Mapping[str, int],
        dtype: torch.dtype,
        types: Sequence[str] | None = None,
    ) -> dict[str, Tensor]:
        """Per type float ``dtype`` [rows[t], dims[t]]: ``x[t]`` (first ``rows[t]`` rows, cast to ``dtype``), or the
        featureless input of ``n_id[t]``; for every input type, or those of ``types``."""
        out: dict[str, Tensor] = {}
        for t, dim in self.dims.items():
            if types is not None and t not in types:
                continue
            count = rows[t]
            key = type_key(self.schema, t)
            if key in self.tables:
                out[t] = self.tables[key](n_id[t][:count])
            elif t in self.zeros:
                out[t] = torch.zeros((count, 1), dtype=dtype, device=n_id[t].device)
            else:
                if t not in x:
                    raise ValueError(f"typed model: no input features for node type {t!r}")
                features = x[t][:count]
                if features.shape[1] != dim:
                    raise ValueError(f"typed model: node type {t!r} has {features.shape[1]} features, expected {dim}")
                out[t] = features if features.dtype == dtype else features.to(dtype)
        return out


class TypedGNN(nn.Module):
    """A stack of typed layers applied block by block (see the module for ``forward``)."""

    def __init__(
        self,
        kind: str,
        schema: Schema,
        in_dims: Mapping[str, int],
        hidden: int,
        num_classes: int,
        num_layers: int,
        *,
        dropout: float = 0.5,
        featureless: str = "embedding",
        num_bases: int = 0,
        heads: int = 4,
        norm: str = "none",
        outputs: Sequence[str] | None = None,
        edge_dim: int | None = None,
    ) -> None:
        super().__init__()
        self.kind = kind
        self.edge_dim = edge_dim  # R-GAT: the width of each relation block's edge_attr (None: no edge input)
        self.edge_input_dim = edge_dim or 0
        self.outputs = None if outputs is None else tuple(outputs)
        self.schema = schema
        self.target = schema.target
        self.num_layers = num_layers
        widths = [hidden] * (num_layers - 1) + [num_classes]
        needed = needed_types(schema, num_layers, outputs)
        self.inputs = TypedInputs(schema, in_dims, featureless, hidden, widths[0], needed[0])
        self.activation = ReLUDropout(dropout)
        self.layers = nn.ModuleList()
        self.norms = nn.ModuleList()
        dims = dict(self.inputs.dims)
        for layer, out_dim in enumerate(widths):
            last = layer == num_layers - 1
            projected = self.inputs.projected if layer == 0 else frozenset()
            out_types = needed[layer + 1]
            self.layers.append(self._layer(kind, dims, out_dim, projected, out_types, last, num_bases, heads, dropout))
            if not last:
                self.norms.append(nn.ModuleDict({type_key(schema, t): norm_layer(norm, out_dim) for t in out_types}))
            dims = {t: out_dim for t in out_types}

    def _layer(
        self,
        kind: str,
        dims: dict[str, int],
        out_dim: int,
        projected: frozenset[str],
        out_types: list[str],
        last: bool,
        num_bases: int,
        heads: int,
        dropout: float,
    ) -> TypedLayer:
        if kind == "rgcn":
            return RGCNLayer(self.schema, dims, out_dim, projected, out_types, num_bases=num_bases)
        if kind == "hsage":
            return HeteroSAGELayer(self.schema, dims, out_dim, projected, out_types)
        return RGATLayer(
            self.schema,
            dims,
            out_dim,
            projected,
            out_types,
            heads=1 if last else heads,
            concat=not last,
            dropout=dropout,
            edge_dim=self.edge_dim,
        )

    def layer(self, index: int, x: Mapping[str, Tensor], block: TypedBlock) -> dict[str, Tensor]:
        """Layer ``index`` on ``x[t]`` [block.num_src[t], d] -> ``{t: [block.num_dst[t], d']}`` for the layer's
        ``out_types``, activation (and normalisation) included for a hidden layer."""
        out = self.layers[index](x, block)
        return {t: self.finish_layer(index, t, h) for t, h in out.items()}

    def finish_layer(self, index: int, node_type: str, h: Tensor) -> Tensor:
        """Layer ``index``'s normalisation and activation of its output ``h`` [n, d'] of ``node_type`` (the identity
        for the last layer)."""
        if index == self.num_layers - 1:
            return h
        return self.activation(self.norms[index][type_key(self.schema, node_type)](h))

    def forward(
        self, x: Mapping[str, Tensor], blocks: Sequence[TypedBlock], n_id: Mapping[str, Tensor]
    ) -> Tensor | dict[str, Tensor]:
        """Logits float [blocks[-1].num_dst[target], num_classes] (see the module); built with ``outputs`` (a link
        encoder): ``{t: float [blocks[-1].num_dst[t], num_classes]}`` for each type of ``outputs``."""
        if len(blocks) != self.num_layers:
            raise OptionError(f"model has {self.num_layers} layers but the mini-batch has {len(blocks)} blocks")
        h = self.inputs(x, n_id, blocks[0].num_src, next(self.parameters()).dtype)
        for index, block in enumerate(blocks):
            h = self.layer(index, h, block)
        return h[self.target] if self.outputs is None else {t: h[t] for t in self.outputs}


class TypedMLP(nn.Module):
    """Features-only baseline on a typed dataset: :class:`~graphtier.train.nn.models.MLP` on the target's features."""

    def __init__(
        self, schema: Schema, in_dim: int, hidden: int, num_classes: int, num_layers: int, *, dropout: float, norm: str
    ) -> None:
        super().__init__()
        self.target = schema.target
        self.mlp = MLP(in_dim, hidden, num_classes, num_layers, dropout=dropout, norm=norm)
        self.num_layers = num_layers

    def forward(
        self, x: Mapping[str, Tensor], blocks: Sequence[TypedBlock] = (), n_id: Mapping[str, Tensor] | None = None
    ) -> Tensor:
        """``x[target]`` float [n, in_dim] -> logits [blocks[-1].num_dst[target] (all n without blocks), C]."""
        features = x[self.target]
        rows = blocks[-1].num_dst[self.target] if blocks else features.shape[0]
        weight = self.mlp.net[0].weight
        return self.mlp.net(features[:rows].to(weight.dtype))


def build_typed_model(
    name: str,
    schema: Schema,
    *,
    in_dims: Mapping[str, int],
    hidden: int,
    num_classes: int,
    num_layers: int,
    dropout: float = 0.5,
    featureless: str = "embedding",
    num_bases: int = 0,
    heads: int = 4,
    norm: str = "none",
    outputs: Sequence[str] | None = None,
    edge_dim: int | None = None,
) -> nn.Module:
    """Build typed model ``name`` (:data:`TYPED_MODEL_NAMES` or ``mlp``) for ``schema``.

    Args:
        in_dims: feature width of every node type of ``schema`` (0 = featureless).
        hidden, num_classes: widths of the hidden layers and of the output.
        num_layers: number of layers (= blocks of a mini-batch).
        dropout: on hidden activations (and R-GAT's attention).
        featureless: :data:`FEATURELESS_MODES` (see the module).
        num_bases: R-GCN basis decomposition (0: a full weight per relation).
        heads: R-GAT attention heads of the hidden layers (``hidden`` must be a multiple).
        norm: ``none``, ``batch`` or ``layer`` between layers.
        outputs: the node types whose last-layer rows the model returns, as a dict (a link encoder: a relation's
            endpoint types; ``num_classes`` is then the embedding width); None: the target's logits.
        edge_dim: R-GAT only: the width of the edge features each relation block carries (``edge_attr``), added to
            the attention logits as PyG's ``GATConv(edge_dim=)``; None: no edge input.

    Raises OptionError naming the option on a bad value.
    """
    if name not in (*TYPED_MODEL_NAMES, "mlp"):
        raise OptionError.invalid("model", f"one of {', '.join((*TYPED_MODEL_NAMES, 'mlp'))}", name)
    if featureless not in FEATURELESS_MODES:
        raise OptionError.invalid("featureless", f"one of {', '.join(FEATURELESS_MODES)}", featureless)
    check_edge_inputs(name, edge_dim, 0, complete=False)
    if num_layers < 1:
        raise OptionError.invalid("layers", "at least 1", num_layers)
    if num_bases < 0:
        raise OptionError.invalid("num_bases", "a non-negative integer", num_bases)
    if hidden < 1:
        raise OptionError.invalid("hidden", "a positive integer", hidden)
    missing = [t for t in schema.type_names if t not in in_dims]
    if missing:
        raise ValueError(f"build_typed_model: in_dims lacks node types {missing}")
    if name == "mlp":
        if in_dims[schema.target] == 0:
            raise OptionError(
                f"{{model}} 'mlp' needs features of the target type {schema.target!r}, which has none",
                options=("model",),
            )
        return TypedMLP(schema, in_dims[schema.target], hidden, num_classes, num_layers, dropout=dropout, norm=norm)
    if name == "rgat":
        check_gat_heads(hidden, heads)
    return TypedGNN(
        name,
        schema,
        in_dims,
        hidden,
        num_classes,
        num_layers,
        dropout=dropout,
        featureless=featureless,
        num_bases=num_bases,
        heads=heads,
        norm=norm,
        outputs=outputs,
        edge_dim=edge_dim,
    )
