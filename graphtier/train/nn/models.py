"""GNN models applied block by block: GraphSAGE (mean), GCN, GAT, GINE, and a features-only MLP.

A model takes the input features of a mini-batch's nodes ``x`` (float32 [num_src of the first
block, in_dim], on the model's device) and the batch's blocks (input layer first). Layer ``i``
computes what ``conv((x, x[:blocks[i].num_dst]), blocks[i].edge_index)`` of PyG computes, so the
output has one row per destination node of the last block. GraphSAGE and GCN aggregate with a
sparse x dense product over the block's CSR (:mod:`graphtier.train.nn.aggregate`, no per-edge
messages) and apply the PyG layer's own linear maps, so parameters and checkpoints are PyG's; GAT
and GINE keep PyG's edge-wise path and read the block's edge inputs (edge features, the time encoding of edge
ages: :mod:`graphtier.train.nn.time_encoding`) when the model is built with them, as PyG's layers with ``edge_dim``;
GAT built without them is the plain GAT (same parameters). Hidden layers end with a fused ReLU + dropout
(:mod:`graphtier.train.nn.dropout`). The MLP ignores the blocks and reads the rows of the last
block's destinations (the seeds) only: the baseline that shows what the graph adds.
"""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor, nn
from torch_geometric.nn import GATConv, GCNConv, GINEConv, SAGEConv

from graphtier.errors import OptionError
from graphtier.sampling.batch import Block
from graphtier.train.nn.aggregate import (
    FirstLayerInput,
    aggregate,
    aggregate_with_root,
    block_csr,
    gcn_weights,
    mean_weights,
)
from graphtier.train.nn.dropout import ReLUDropout, relu_dropout_gated
from graphtier.train.nn.time_encoding import EdgeInputs

# the model, norm and GCN-degree names are registered with the options that pick them (re-exported here)
from graphtier.train.options.spec import (  # noqa: F401
    EDGE_INPUT_MODELS,
    GCN_DEGREES,
    MODEL_NAMES,
    NORM_NAMES,
    ModelSpec,
    check_edge_inputs,
    check_gat_heads,
)


class BatchNorm(nn.BatchNorm1d):
    """``nn.BatchNorm1d`` that normalises a batch of one row by its running statistics when training.

    Batch statistics need two rows; the last, partial mini-batch of an epoch can hold a single seed
    (a train set of ``k * batch_size + 1`` nodes), where ``nn.BatchNorm1d`` raises. That row is
    normalised as in evaluation (running mean and variance, which it does not update); the affine
    weights still learn from it. Parameters and buffers are those of ``nn.BatchNorm1d``.
    """

    def forward(self, x: Tensor) -> Tensor:
        """``x``: float [rows, dim] on the layer's device; returns the same shape."""
        if self.training and x.shape[0] <= 1 and self.track_running_stats:
            return nn.functional.batch_norm(
                x, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0, self.eps
            )
        return super().forward(x)


def norm_layer(norm: str, dim: int) -> nn.Module:
    """The normalisation between layers (``--norm``): ``batch``, ``layer`` or ``none`` over ``dim`` features."""
    if norm == "batch":
        return BatchNorm(dim)
    if norm == "layer":
        return nn.LayerNorm(dim)
    return nn.Identity()


def _linear(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    """``x @ weight.T + bias`` as one fresh tensor (safe to accumulate into in place)."""
    if bias is None:
        return x @ weight.t()
    return torch.addmm(bias, x, weight.t())


class BlockGCNConv(nn.Module):
    """GCN layer (Kipf & Welling) on a bipartite block, built on PyG's ``GCNConv``.

    Edge ``j -> i`` gets weight ``(d_i / s_i) / sqrt((d_i + 1) (d_j + 1))`` and each destination a
    self-loop of weight ``1 / (d_i + 1)``, where ``s_i`` is the number of neighbours sampled for ``i``
    and ``d`` the ``degree`` passed in, which picks the normalisation (``--gcn-degrees``):

    * ``full`` (``degree`` = full-graph in-degrees): with all neighbours (fanout -1) this is exactly
      the symmetric-normalised GCN of the full graph; with sampling it is the unbiased estimate of it.
    * ``block`` (``degree`` None): the GCN of the block itself, ``d`` = the block's own in-degrees
      (``s`` for destinations, 0 for sources that are not destinations of the block), so edge weight
      ``1 / sqrt((s_i + 1)(s_j + 1))`` as DGL's GraphConv on blocks; ShaDow subgraphs use it too.
      At exact layer-wise inference every node is a destination of the (whole-graph) layer and has
      all its neighbours, so its block in-degree is its full in-degree: both choices give the same
      weights there (:func:`graphtier.train.infer.inference.layerwise_outputs`).
    """

    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.conv = GCNConv(in_dim, out_dim, normalize=False)

    def forward(
        self,
        x: Tensor,
        block: Block,
        degree: Tensor | None,
        gate_scale: float | None = None,
    ) -> Tensor:
        """[>= num_src, in_dim] -> [num_dst, out_dim]: ``(A_w x + self-loop) W + b``, aggregation first.

        Aggregating the in_dim-wide inputs and then applying the linear map to the destinations only
        equals PyG's ``propagate(lin(x))`` (both are linear) at a fraction of the cost (projecting
        first would multiply all num_src rows instead of the num_dst ones). ``gate_scale``: ``x`` comes
        from :func:`~graphtier.train.nn.dropout.relu_dropout_gated` (see :func:`aggregate`).
        """
        csr = block_csr(block)
        weight, loop_weight = gcn_weights(csr, degree, x.dtype)
        agg = aggregate(x, csr, weight, loop_weight, gate_scale)
        out = self.conv.lin(agg)
        if self.conv.bias is not None:
            out = out + self.conv.bias
        return out

    def forward_edges(self, x: Tensor, block: Block, degree: Tensor | None) -> Tensor:
        """The same layer through PyG's per-edge message path (the reference of :meth:`forward`)."""
        src, dst = block.edge_index[0], block.edge_index[1]
        num_dst = block.num_dst
        sampled = torch.zeros(num_dst, dtype=x.dtype, device=x.device)
        sampled.index_add_(0, dst, torch.ones_like(dst, dtype=x.dtype))
        if degree is None:
            full = torch.zeros(block.num_src, dtype=x.dtype, device=x.device)
            full.index_add_(0, dst, torch.ones_like(dst, dtype=x.dtype))
        else:
            full = degree[: block.num_src].to(x.dtype)
        scale = full[:num_dst] / sampled.clamp(min=1.0)
        inv_sqrt = (full + 1.0).rsqrt()
        weight = scale[dst] * inv_sqrt[dst] * inv_sqrt[src]
        loops = torch.arange(num_dst, device=x.device, dtype=block.edge_index.dtype)
        edge_index = torch.cat([block.edge_index, torch.stack([loops, loops])], dim=1)
        edge_weight = torch.cat([weight, 1.0 / (full[:num_dst] + 1.0)])
        # PyG's GCNConv propagates over all rows of x; only destination rows receive messages we keep.
        return self.conv(x, edge_index, edge_weight)[:num_dst]


class BlockGNN(nn.Module):
    """A stack of message-passing layers applied block by block.

    Args:
        kind: ``sage``, ``gcn``, ``gat`` or ``gine``.
        in_dim, hidden, out_dim: feature sizes.
        num_layers: number of layers (= number of blocks in a mini-batch).
        dropout: dropout on hidden activations (and GAT attention).
        norm: ``none``, ``batch`` or ``layer`` normalisation between layers.
        heads: attention heads of GAT's hidden layers (concatenated; the last layer averages).
        edge_dim: GAT / GINE: the width d_e of the blocks' ``edge_attr`` the layers read (None: none).
        time_dim: GAT / GINE: the width of the time encoding of the blocks' ``edge_age`` (0: none), one
            :class:`~graphtier.train.nn.time_encoding.TimeEncoding` shared by the layers (``time_fixed``: its
            frequencies are not learned). Every layer reads the edge vector ``[edge_attr, phi(edge_age)]``.
            GINE needs one of the two; GAT without either is the plain GAT.

    ``use_csr`` (attribute, default True): SAGE and GCN aggregate over the block's CSR; False takes
    PyG's per-edge message path (same result up to float rounding; kept as the tests' reference).
    """

    def __init__(
        self,
        kind: str,
        in_dim: int,
        hidden: int,
        out_dim: int,
        num_layers: int,
        *,
        dropout: float = 0.5,
        norm: str = "none",
        heads: int = 4,
        edge_dim: int | None = None,
        time_dim: int = 0,
        time_fixed: bool = False,
    ) -> None:
        super().__init__()
        if num_layers < 1:
            raise OptionError(f"model {kind!r}: expected at least 1 layer, found {num_layers}")
        self.kind = kind
        self.num_layers = num_layers
        self.edge_dim = edge_dim
        self.time_dim = time_dim
        check_edge_inputs(kind, edge_dim, time_dim)
        # registered only with edge inputs: a model without them has today's parameters and state-dict keys
        self.edge_inputs: EdgeInputs | None = None
        if edge_dim or time_dim:
            self.edge_inputs = EdgeInputs(edge_dim, time_dim, time_fixed=time_fixed)
        width = self.edge_input_dim or None
        self.use_csr = True
        self.activation = ReLUDropout(dropout)
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        dims = [in_dim] + [hidden] * (num_layers - 1) + [out_dim]
        for layer in range(num_layers):
            last = layer == num_layers - 1
            d_in, d_out = dims[layer], dims[layer + 1]
            if kind == "sage":
                conv: nn.Module = SAGEConv((d_in, d_in), d_out, aggr="mean")
            elif kind == "gcn":
                conv = BlockGCNConv(d_in, d_out)
            elif kind == "gat":
                if last:
                    conv = GATConv((d_in, d_in), d_out, heads=1, concat=False, dropout=dropout, edge_dim=width)
                else:
                    check_gat_heads(d_out, heads)
                    conv = GATConv(
                        (d_in, d_in),
                        d_out // heads,
                        heads=heads,
                        concat=True,
                        dropout=dropout,
                        edge_dim=width,
                    )
            elif kind == "gine":
                # GIN's two-layer MLP after the sum (1 + eps) x_i + sum_j relu(x_j + lin(e_ji)), eps = 0 (PyG's default)
                mlp = nn.Sequential(nn.Linear(d_in, d_out), nn.ReLU(), nn.Linear(d_out, d_out))
                conv = GINEConv(mlp, edge_dim=width)
            else:
                raise OptionError.invalid("model", f"one of {', '.join(MODEL_NAMES)}", kind)
            self.convs.append(conv)
            if not last:
                self.norms.append(norm_layer(norm, d_out))

    @property
    def edge_input_dim(self) -> int:
        """The width of the edge vector every layer reads (``edge_dim + time_dim``); 0: the model has no edge inputs."""
        return 0 if self.edge_inputs is None else self.edge_inputs.width

    def layer(self, index: int, x: Tensor, block: Block, degree: Tensor | None = None) -> Tensor:
        """Apply layer ``index`` to ``x`` [block.num_src, d] -> [block.num_dst, d'] (activation included)."""
        return self._layer(index, x, block, degree, None, False)[0]

    def _layer(
        self,
        index: int,
        x: Tensor | FirstLayerInput,
        block: Block,
        degree: Tensor | None,
        gate_scale: float | None,
        fuse: bool,
    ) -> tuple[Tensor, float | None]:
        """Layer ``index``; with ``fuse`` the hidden activation is left for the next layer to backpropagate.

        ``gate_scale`` not None: ``x`` came from :func:`relu_dropout_gated` and this layer's aggregation
        is its only reader. Returns the output and, when the activation was fused, its gate scale.
        """
        conv = self.convs[index]
        if self.kind == "gcn":
            out = conv(x, block, degree, gate_scale) if self.use_csr else conv.forward_edges(x, block, degree)
        elif self.kind == "sage" and self.use_csr:
            # SAGEConv(aggr="mean"): lin_l(mean of the sampled neighbours) + lin_r(the destination itself);
            # the second product accumulates into the first's output (no separate addition pass)
            if isinstance(x, FirstLayerInput):  # the producer read both from the feature table
                agg, root = x
            else:
                csr = block_csr(block)
                agg, root = aggregate_with_root(x, csr, mean_weights(csr, x.dtype), gate_scale)
            out = _linear(agg, conv.lin_l.weight, conv.lin_l.bias).addmm_(root, conv.lin_r.weight.t())
        elif self.edge_inputs is not None:
            edge_attr = self.edge_inputs(block, x.dtype)
            out = conv((x, x[: block.num_dst]), block.edge_index, edge_attr)
        else:
            out = conv((x, x[: block.num_dst]), block.edge_index)
        if fuse and index < self.num_layers - 1:
            return relu_dropout_gated(self.norms[index](out), self.activation.p, self.training)
        return self.finish_layer(index, out), None

    def finish_layer(self, index: int, out: Tensor) -> Tensor:
        """Layer ``index``'s output [n, d'] after its message passing: a hidden layer's norm and activation
        applied (ReLU, and dropout in training mode), the last layer's logits unchanged."""
        if index == self.num_layers - 1:
            return out
        return self.activation(self.norms[index](out))

    def forward(self, x: Tensor | FirstLayerInput, blocks: Sequence[Block], degree: Tensor | None = None) -> Tensor:
        """``x`` float [blocks[0].num_src, in_dim] -> logits [blocks[-1].num_dst, out_dim].

        GraphSAGE also takes a :class:`FirstLayerInput` as ``x`` (the first layer's mean and root rows).
        ``degree``: float [blocks[0].num_src] full-graph in-degrees of the batch's nodes (GCN only;
        None: every block's own in-degrees, ``--gcn-degrees block``).
        SAGE and GCN on the CSR path hand each hidden activation's backward pass to the next layer's
        aggregation kernel (its only reader), which applies the ReLU/dropout gate while writing the
        gradient (see :func:`relu_dropout_gated`).
        """
        if len(blocks) != self.num_layers:
            raise OptionError(f"model has {self.num_layers} layers but the mini-batch has {len(blocks)} blocks")
        fuse = self.use_csr and self.kind in ("sage", "gcn")
        gate_scale: float | None = None
        for index, block in enumerate(blocks):
            x, gate_scale = self._layer(index, x, block, degree, gate_scale, fuse)
        return x


class MLP(nn.Module):
    """Features-only baseline: ``num_layers`` linear layers on the seeds' own features."""

    def __init__(
        self,
        in_dim: int,
        hidden: int,
        out_dim: int,
        num_layers: int,
        *,
        dropout: float = 0.5,
        norm: str = "none",
    ) -> None:
        super().__init__()
        dims = [in_dim] + [hidden] * (num_layers - 1) + [out_dim]
        layers: list[nn.Module] = []
        for layer in range(num_layers):
            layers.append(nn.Linear(dims[layer], dims[layer + 1]))
            if layer < num_layers - 1:
                layers += [norm_layer(norm, dims[layer + 1]), ReLUDropout(dropout)]
        self.net = nn.Sequential(*layers)
        self.num_layers = num_layers

    def forward(self, x: Tensor, blocks: Sequence[Block] = (), degree: Tensor | None = None) -> Tensor:
        """``x`` float [n, in_dim] -> logits for the rows that are the last block's destinations."""
        rows = blocks[-1].num_dst if blocks else x.shape[0]
        return self.net(x[:rows])


def build_model(
    name: str,
    in_dim: int,
    hidden: int,
    out_dim: int,
    num_layers: int,
    *,
    dropout: float = 0.5,
    norm: str = "none",
    heads: int = 4,
    edge_dim: int | None = None,
    time_encoding: int = 0,
    time_encoding_fixed: bool = False,
) -> nn.Module:
    """Build model ``name`` (``sage``, ``gcn``, ``gat``, ``gine`` or ``mlp``); raises OptionError on a bad name/option.

    ``edge_dim`` (d_e of ``Block.edge_attr`` [E, d_e]) and ``time_encoding`` (the width of the encoding of
    ``Block.edge_age`` [E]; ``time_encoding_fixed``: not learned) are the edge inputs of GAT and GINE (see
    :class:`BlockGNN`); GINE needs one of them."""
    ModelSpec(
        model=name, hidden=hidden, heads=heads, norm=norm, dropout=dropout, edge_dim=edge_dim,
        time_encoding=time_encoding, time_encoding_fixed=time_encoding_fixed,
    )  # fmt: skip  # checks every option
    if name == "mlp":
        return MLP(in_dim, hidden, out_dim, num_layers, dropout=dropout, norm=norm)
    return BlockGNN(
        name,
        in_dim,
        hidden,
        out_dim,
        num_layers,
        dropout=dropout,
        norm=norm,
        heads=heads,
        edge_dim=edge_dim,
        time_dim=time_encoding,
        time_fixed=time_encoding_fixed,
    )
