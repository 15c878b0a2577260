"""One layer of a typed (heterogeneous) GNN on a :class:`~graphtier.sampling.typed_batch.TypedBlock`.

Every layer maps the per-type inputs ``x[t]`` [block.num_src[t], d_t] to per-type outputs [block.num_dst[t], out]
as a sum over the relations into each type plus a term of the destination itself:

* :class:`RGCNLayer` (R-GCN, Schlichtkrull et al. 2018): ``h_v' = W_0^{type(v)} h_v + b + sum_r W_r mean_{u in
  N_r(v)} h_u``, optionally with ``W_r = sum_b a_rb V_b`` (basis decomposition). Bases are shared by the relations
  whose SOURCE width is equal: from the second layer on that is every relation; in the first layer, featured types
  of different widths get one set of bases per width (so nothing is projected before the first layer).
* :class:`HeteroSAGELayer` (PyG's ``HeteroConv`` of ``SAGEConv``, ``aggr="sum"``): per relation
  ``lin_l(mean_r) + lin_r(h_v)``, summed; a type with no incoming relation keeps a linear self term.
* :class:`RGATLayer` (the MLPerf IGBH R-GAT: ``HeteroConv`` of ``GATConv(add_self_loops=False)``, summed) plus a
  linear skip term of the destination per type: attention over each relation's sampled in-edges.

R-GCN and HeteroSAGE aggregate with the CSR kernels of :mod:`graphtier.train.nn.aggregate` (the mean over each
relation's sampled in-neighbours first, at the input width, then the linear map on the destinations only). The
attention weights of R-GAT depend on the parameters, so its aggregation is edge-wise in CSR order
(:mod:`graphtier.train.nn.edge_ops`: every sum in a fixed order, so a seeded run repeats with any thread count).

``out_types``: the types the layer computes (None: all); the last layer of a model computes only the target type,
and an earlier one only the types that the next layer reads, so that every parameter is used.

``projected``: types whose input of this layer is already of the output width and needs no linear map (the
``onehot`` featureless types in the first layer: their table IS the first layer's weight): every weight that
would read them is the identity. Relations whose destination type has no destination in the block, and
relations absent from the block (no sampled edge), contribute nothing; R-GCN's and R-GAT's self terms and
HeteroSAGE's root terms still apply to every destination.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from graphtier.dataset.schema import Relation, Schema
from graphtier.sampling.typed_batch import TypedBlock
from graphtier.train.nn.aggregate import BlockCSR, aggregate, block_csr, mean_weights
from graphtier.train.nn.edge_ops import edge_softmax, gather_destinations, gather_sources, sum_by_destination


def type_key(schema: Schema, name: str) -> str:
    """The ``ModuleDict`` key of node type ``name`` (its position: type names may hold '.')."""
    return f"t{schema.type_names.index(name)}"


def relation_key(index: int) -> str:
    """The ``ModuleDict`` key of the relation at ``index`` in the schema."""
    return f"r{index}"


def _linear_or_identity(in_dim: int, out_dim: int, projected: bool, bias: bool = True) -> nn.Module:
    if projected:
        if in_dim != out_dim:
            raise ValueError(f"a projected input must have the output width {out_dim}, found {in_dim}")
        return nn.Identity()
    return nn.Linear(in_dim, out_dim, bias=bias)


@dataclass(frozen=True)
class LinearTerm:
    """One linear map ``x W^T + b`` of a layer: ``weight`` float [out, in] (None: the identity), ``bias`` float [out]
    (None: no bias)."""

    weight: Tensor | None
    bias: Tensor | None


@dataclass(frozen=True)
class AttentionTerm:
    """One relation's GAT of :class:`RelationGAT` without edge inputs: ``src`` / ``dst`` the linear maps of the source
    and destination inputs to ``heads * channels``, ``att_src`` / ``att_dst`` float [1, heads, channels] the
    attention vectors; ``concat``: the heads concatenated, else averaged."""

    src: LinearTerm
    dst: LinearTerm
    att_src: Tensor
    att_dst: Tensor
    heads: int
    channels: int
    concat: bool


@dataclass(frozen=True)
class LayerTerms:
    """A layer's output of one type as terms computed from whole tables (before the activation): ``h_v = sum_{term
    in root} term(x_v) + sum_{(r, term) in means} term(mean_{u in N_r(v)} x_u) + sum_{(r, att) in attention}
    GAT_r(v)``, with the mean 0 and the attention sum 0 for a node without in-neighbours in relation ``r`` (an index
    into the schema's relations)."""

    root: list[LinearTerm]
    means: list[tuple[int, LinearTerm]]
    attention: list[tuple[int, AttentionTerm]] = field(default_factory=list)


def linear_term(module: nn.Module) -> LinearTerm:
    """The :class:`LinearTerm` of an ``nn.Linear``, ``nn.Identity`` or a projected input's bias-only map."""
    if isinstance(module, nn.Linear):
        return LinearTerm(module.weight, module.bias)
    if isinstance(module, _BiasOnly):
        return LinearTerm(None, module.bias)
    if isinstance(module, nn.Identity):
        return LinearTerm(None, None)
    raise TypeError(f"not a linear map: {type(module).__name__}")


class TypedLayer(nn.Module):
    """What every typed layer shares: the schema, the in/out widths, and the walk over a block's relations."""

    def __init__(
        self,
        schema: Schema,
        in_dims: Mapping[str, int],
        out_dim: int,
        projected: frozenset[str],
        out_types: Sequence[str] | None,
    ) -> None:
        super().__init__()
        self.schema = schema
        self.in_dims = dict(in_dims)
        self.out_dim = out_dim
        self.projected = projected
        self.out_types = [t for t in schema.type_names if out_types is None or t in out_types]
        self.incoming = {t: [i for i, r in enumerate(schema.relations) if r.dst == t] for t in self.out_types}
        for t in self.out_types:
            for index in self.incoming[t]:
                if schema.relations[index].src not in self.in_dims:
                    raise ValueError(f"typed layer: no input width for {schema.relations[index]}'s source type")

    def edges(self, block: TypedBlock, index: int, x: Mapping[str, Tensor]) -> tuple[Relation, BlockCSR] | None:
        """Relation ``index``'s CSR in ``block``, or None when it has no destination or no edge there."""
        rel = self.schema.relations[index]
        sampled = block.relations.get(rel.type)
        if sampled is None or block.num_dst[rel.dst] == 0 or sampled.num_edges == 0:
            return None
        return rel, block_csr(sampled)

    def neighbour_mean(self, block: TypedBlock, index: int, x: Mapping[str, Tensor]) -> Tensor | None:
        """float [block.num_dst[dst], in_dims[src]]: the mean of relation ``index``'s sampled in-neighbours
        in ``block`` per destination, or None when it has no destination or no edge there."""
        found = self.edges(block, index, x)
        if found is None:
            return None
        rel, csr = found
        source = x[rel.src]
        return aggregate(source, csr, mean_weights(csr, source.dtype))

    def type_linears(self, types: Sequence[str]) -> nn.ModuleDict:
        """Per type of ``types`` (keyed by :func:`type_key`) a linear map of its input to ``out_dim`` (the
        identity for a projected type)."""
        return nn.ModuleDict(
            {type_key(self.schema, t): _linear_or_identity(self.in_dims[t], self.out_dim, t in self.projected)
             for t in types}
        )  # fmt: skip

    def forward(self, x: Mapping[str, Tensor], block: TypedBlock) -> dict[str, Tensor]:
        """``x[t]`` float [>= block.num_src[t], in_dims[t]] -> ``{t: [block.num_dst[t], out_dim]}`` per output type."""
        out: dict[str, Tensor] = {}
        for t in self.out_types:
            count = block.num_dst[t]
            if count == 0:
                ref = next(iter(x.values()))
                out[t] = ref.new_zeros((0, self.out_dim))
                continue
            out[t] = self.type_output(x, block, t)
        return out

    def type_output(self, x: Mapping[str, Tensor], block: TypedBlock, t: str) -> Tensor:
        raise NotImplementedError

    def terms(self, t: str) -> LayerTerms | None:
        """Type ``t``'s output as terms of whole tables (:class:`LayerTerms`), or None for a layer that reads edge
        inputs."""
        return None


class RGCNLayer(TypedLayer):
    """R-GCN layer (see the module); ``num_bases`` > 0: basis decomposition of the relation weights."""

    def __init__(
        self,
        schema: Schema,
        in_dims: Mapping[str, int],
        out_dim: int,
        projected: frozenset[str] = frozenset(),
        out_types: Sequence[str] | None = None,
        num_bases: int = 0,
    ) -> None:
        super().__init__(schema, in_dims, out_dim, projected, out_types)
        self.num_bases = num_bases
        self.self_weight = self.type_linears(self.out_types)
        self.weight = nn.ParameterDict()  # full [out, in] weight per relation (no bases)
        self.bases = nn.ParameterDict()  # [num_bases, out, width] per source width
        self.coefficients = nn.ParameterDict()  # [num_bases] per relation
        for index, rel in enumerate(schema.relations):
            if rel.src in projected or rel.dst not in self.incoming:
                continue
            width = in_dims[rel.src]
            key = relation_key(index)
            if num_bases > 0:
                if f"w{width}" not in self.bases:
                    bases = torch.empty(num_bases, out_dim, width)
                    for b in range(num_bases):
                        nn.init.kaiming_uniform_(bases[b], a=math.sqrt(5))
                    self.bases[f"w{width}"] = nn.Parameter(bases)
                self.coefficients[key] = nn.Parameter(torch.full((num_bases,), 1.0 / math.sqrt(num_bases)))
            else:
                weight = torch.empty(out_dim, width)
                nn.init.kaiming_uniform_(weight, a=math.sqrt(5))
                self.weight[key] = nn.Parameter(weight)

    def relation_weight(self, index: int) -> Tensor | None:
        """float [out, in] weight ``W_r`` of relation ``index`` (None: its source is projected, W_r = identity)."""
        key = relation_key(index)
        if key in self.weight:
            return self.weight[key]
        if key not in self.coefficients:
            return None
        width = self.in_dims[self.schema.relations[index].src]
        return torch.einsum("b,boi->oi", self.coefficients[key], self.bases[f"w{width}"])

    def type_output(self, x: Mapping[str, Tensor], block: TypedBlock, t: str) -> Tensor:
        count = block.num_dst[t]
        out = self.self_weight[type_key(self.schema, t)](x[t][:count])
        for index in self.incoming[t]:
            agg = self.neighbour_mean(block, index, x)
            if agg is None:
                continue
            weight = self.relation_weight(index)
            out = out + (agg if weight is None else agg @ weight.t())
        return out

    def terms(self, t: str) -> LayerTerms:
        root = [linear_term(self.self_weight[type_key(self.schema, t)])]
        return LayerTerms(root, [(index, LinearTerm(self.relation_weight(index), None)) for index in self.incoming[t]])


class HeteroSAGELayer(TypedLayer):
    """Per-relation GraphSAGE (mean, root weight), summed over the relations into a type (see the module)."""

    def __init__(
        self,
        schema: Schema,
        in_dims: Mapping[str, int],
        out_dim: int,
        projected: frozenset[str] = frozenset(),
        out_types: Sequence[str] | None = None,
    ) -> None:
        super().__init__(schema, in_dims, out_dim, projected, out_types)
        self.lin_l = nn.ModuleDict()
        self.lin_r = nn.ModuleDict()
        for index, rel in enumerate(schema.relations):
            if rel.dst not in self.incoming:
                continue
            key = relation_key(index)
            source = _linear_or_identity(in_dims[rel.src], out_dim, rel.src in projected)
            if isinstance(source, nn.Identity):
                source = _BiasOnly(out_dim)
            self.lin_l[key] = source
            self.lin_r[key] = _linear_or_identity(in_dims[rel.dst], out_dim, rel.dst in projected, bias=False)
        self.self_weight = self.type_linears([t for t in self.out_types if not self.incoming[t]])

    def type_output(self, x: Mapping[str, Tensor], block: TypedBlock, t: str) -> Tensor:
        count = block.num_dst[t]
        root = x[t][:count]
        if not self.incoming[t]:
            return self.self_weight[type_key(self.schema, t)](root)
        out: Tensor | None = None
        for index in self.incoming[t]:
            key = relation_key(index)
            mean = self.neighbour_mean(block, index, x)
            term = self.lin_r[key](root)
            if mean is None:  # no sampled neighbour: the mean is 0, lin_l gives its bias
                mean = root.new_zeros((count, self.in_dims[self.schema.relations[index].src]))
            term = term + self.lin_l[key](mean)
            out = term if out is None else out + term
        assert out is not None
        return out

    def terms(self, t: str) -> LayerTerms:
        if not self.incoming[t]:
            return LayerTerms([linear_term(self.self_weight[type_key(self.schema, t)])], [])
        keys = [(index, relation_key(index)) for index in self.incoming[t]]
        return LayerTerms(
            [linear_term(self.lin_r[key]) for _, key in keys],
            [(index, linear_term(self.lin_l[key])) for index, key in keys],
        )


class _BiasOnly(nn.Module):
    """The identity plus a learnable bias (a projected input's ``lin_l``)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x: Tensor) -> Tensor:
        return x + self.bias


class RelationGAT(nn.Module):
    """``GATConv((d_src, d_dst), channels, heads, add_self_loops=False, bias=False, edge_dim=)`` of PyG on a relation's
    CSR.

    ``projected_src`` / ``projected_dst``: that side's input is already ``heads * channels`` wide (no linear map).
    ``edge_dim``: each edge's features (float [E, edge_dim], CSR order) add ``att_edge . W_e e`` to its attention
    logit, as PyG's ``edge_dim``; None: no edge input.
    """

    def __init__(
        self,
        src_dim: int,
        dst_dim: int,
        channels: int,
        heads: int,
        *,
        concat: bool,
        dropout: float,
        projected_src: bool = False,
        projected_dst: bool = False,
        edge_dim: int | None = None,
    ) -> None:
        super().__init__()
        self.heads, self.channels, self.concat, self.dropout = heads, channels, concat, dropout
        self.edge_dim = edge_dim
        width = heads * channels
        if edge_dim:
            self.lin_edge = nn.Linear(edge_dim, width, bias=False)
            self.att_edge = nn.Parameter(torch.empty(1, heads, channels))
            nn.init.xavier_uniform_(self.lin_edge.weight)
            nn.init.xavier_uniform_(self.att_edge)
        self.lin_src = _linear_or_identity(src_dim, width, projected_src, bias=False)
        self.lin_dst = _linear_or_identity(dst_dim, width, projected_dst, bias=False)
        self.att_src = nn.Parameter(torch.empty(1, heads, channels))
        self.att_dst = nn.Parameter(torch.empty(1, heads, channels))
        nn.init.xavier_uniform_(self.att_src)
        nn.init.xavier_uniform_(self.att_dst)
        for lin in (self.lin_src, self.lin_dst):
            if isinstance(lin, nn.Linear):
                nn.init.xavier_uniform_(lin.weight)

    def forward(self, x_src: Tensor, x_dst: Tensor, csr: BlockCSR, edge_attr: Tensor | None = None) -> Tensor:
        """``x_src`` [>= num_src, d_src], ``x_dst`` [num_dst, d_dst] (and with ``edge_dim`` ``edge_attr`` [E,
        edge_dim] in CSR order) -> [num_dst, heads * channels or channels]."""
        heads, channels = self.heads, self.channels
        h_src = self.lin_src(x_src[: csr.num_src]).view(-1, heads, channels)
        h_dst = self.lin_dst(x_dst).view(-1, heads, channels)
        score_src = (h_src * self.att_src).sum(-1)
        score_dst = (h_dst * self.att_dst).sum(-1)
        # every edge-wise gather and per-destination sum in a fixed order: a seeded run repeats (edge_ops)
        logits = gather_sources(score_src, csr) + gather_destinations(score_dst, csr)
        if self.edge_dim:
            if edge_attr is None:
                raise ValueError("R-GAT built with edge_dim needs each relation block's edge_attr")
            h_edge = self.lin_edge(edge_attr.to(h_src.dtype)).view(-1, heads, channels)
            logits = logits + (h_edge * self.att_edge).sum(-1)
        alpha = nn.functional.leaky_relu(logits, 0.2)
        alpha = edge_softmax(alpha, csr)
        alpha = nn.functional.dropout(alpha, self.dropout, training=self.training)
        messages = gather_sources(h_src, csr) * alpha.unsqueeze(-1)
        out = sum_by_destination(messages, csr)
        return out.reshape(csr.num_dst, heads * channels) if self.concat else out.mean(dim=1)


class RGATLayer(TypedLayer):
    """R-GAT layer: per-relation GAT summed, plus a linear skip term per destination type (see the module).

    ``heads`` heads of ``out_dim // heads`` channels concatenated (``concat``), or averaged heads of ``out_dim``.
    """

    def __init__(
        self,
        schema: Schema,
        in_dims: Mapping[str, int],
        out_dim: int,
        projected: frozenset[str] = frozenset(),
        out_types: Sequence[str] | None = None,
        *,
        heads: int,
        concat: bool,
        dropout: float,
        edge_dim: int | None = None,
    ) -> None:
        super().__init__(schema, in_dims, out_dim, projected, out_types)
        channels = out_dim // heads if concat else out_dim
        self.convs = nn.ModuleDict(
            {
                relation_key(index): RelationGAT(
                    in_dims[rel.src],
                    in_dims[rel.dst],
                    channels,
                    heads,
                    concat=concat,
                    dropout=dropout,
                    projected_src=rel.src in projected,
                    projected_dst=rel.dst in projected,
                    edge_dim=edge_dim,
                )
                for index, rel in enumerate(schema.relations)
                if rel.dst in self.incoming
            }
        )
        self.skip = self.type_linears(self.out_types)

    def type_output(self, x: Mapping[str, Tensor], block: TypedBlock, t: str) -> Tensor:
        count = block.num_dst[t]
        root = x[t][:count]
        out = self.skip[type_key(self.schema, t)](root)
        for index in self.incoming[t]:
            found = self.edges(block, index, x)
            if found is None:
                continue
            rel, csr = found
            edge_attr = block.relations[rel.type].edge_attr
            out = out + self.convs[relation_key(index)](x[rel.src], root, csr, edge_attr)
        return out

    def terms(self, t: str) -> LayerTerms | None:
        convs = [(index, self.convs[relation_key(index)]) for index in self.incoming[t]]
        if any(conv.edge_dim for _, conv in convs):
            return None
        attention = [
            (index, AttentionTerm(linear_term(conv.lin_src), linear_term(conv.lin_dst), conv.att_src, conv.att_dst,
                                  conv.heads, conv.channels, conv.concat))
            for index, conv in convs
        ]  # fmt: skip
        return LayerTerms([linear_term(self.skip[type_key(self.schema, t)])], [], attention)
