"""PyG on a typed dataset: HeteroSamplerOutput, TensorAttr(group_name=type), NeighborLoader trains a hetero model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.data import TensorAttr
from torch_geometric.loader import NeighborLoader
from torch_geometric.nn import HeteroConv, SAGEConv
from torch_geometric.sampler import HeteroSamplerOutput, NodeSamplerInput

from graphtier.dataset import Dataset
from graphtier.pyg import GraphtierFeatureStore, GraphtierGraphStore, GraphtierNeighborSampler
from tests.typed_data import open_tiny_typed_dataset


@pytest.fixture
def typed_dataset(tmp_path: Path) -> Dataset:
    return open_tiny_typed_dataset(tmp_path)


def test_feature_and_graph_stores_answer_per_type(typed_dataset: Dataset) -> None:
    features = GraphtierFeatureStore(typed_dataset)
    ids = torch.tensor([3, 0, 3])
    x = features.get_tensor(TensorAttr(group_name="author", attr_name="x", index=ids))
    np.testing.assert_array_equal(x.numpy(), typed_dataset.type_features["author"][ids.numpy()])
    y = features.get_tensor(TensorAttr(group_name="paper", attr_name="y", index=ids))
    assert y.tolist() == typed_dataset.labels[ids.numpy()].tolist()
    attrs = {(a.group_name, a.attr_name) for a in features.get_all_tensor_attrs()}
    assert attrs == {("paper", "x"), ("author", "x"), ("paper", "y")}  # field is featureless
    assert features.get_tensor_size(TensorAttr(group_name="paper", attr_name="x")) == (120, 8)
    graph = GraphtierGraphStore(typed_dataset)
    edge_types = [attr.edge_type for attr in graph.get_all_edge_attrs()]
    assert edge_types == [rel.type for rel in typed_dataset.schema.relations]
    (attr,) = [a for a in graph.get_all_edge_attrs() if a.edge_type == ("author", "writes", "paper")]
    rows, colptr = graph.get_edge_index(attr)
    assert colptr.shape[0] == 121 and int(colptr[-1]) == rows.shape[0] and int(rows.max()) < 80


def test_sampler_returns_hetero_sampler_output_of_real_edges(typed_dataset: Dataset) -> None:
    sampler = GraphtierNeighborSampler(typed_dataset, [3, 2], relation_fanouts="cites=2")
    seeds = torch.tensor([4, 9, 17])
    out = sampler.sample_from_nodes(NodeSamplerInput(torch.arange(3), seeds, input_type="paper"))
    assert isinstance(out, HeteroSamplerOutput)
    assert out.node["paper"][:3].tolist() == seeds.tolist()
    assert out.num_sampled_nodes["paper"][0] == 3 and out.num_sampled_nodes["author"][0] == 0
    schema = typed_dataset.schema
    for rel in schema.relations:
        src = out.node[rel.src][out.row[rel.type]].numpy()
        dst = out.node[rel.dst][out.col[rel.type]].numpy()
        assert len(out.num_sampled_edges[rel.type]) == 2 and sum(out.num_sampled_edges[rel.type]) == len(src)
        indptr, indices = typed_dataset.relation_csc(rel)
        for s, d in zip(src, dst):
            assert s + schema.node_type(rel.src).offset in indices[indptr[d] - indptr[0] : indptr[d + 1] - indptr[0]]
    assert sum(len(v) for v in out.row.values()) > 0


class HeteroSAGE(torch.nn.Module):
    """Per-type input projections (a learnable table for the featureless type), two HeteroConv(SAGEConv) layers."""

    def __init__(self, dataset: Dataset, hidden: int, classes: int) -> None:
        super().__init__()
        schema = dataset.schema
        self.inputs = torch.nn.ModuleDict(
            {t.name: torch.nn.Linear(t.feature_dim, hidden) for t in schema.node_types if t.feature_dim}
        )
        self.tables = torch.nn.ModuleDict(
            {t.name: torch.nn.Embedding(t.count, hidden) for t in schema.node_types if not t.feature_dim}
        )
        self.convs = torch.nn.ModuleList(
            HeteroConv({rel.type: SAGEConv(hidden, hidden) for rel in schema.relations}, aggr="sum") for _ in range(2)
        )
        self.out = torch.nn.Linear(hidden, classes)

    def forward(self, batch) -> torch.Tensor:
        x = {t: layer(batch[t].x) for t, layer in self.inputs.items()}
        x.update({t: table(batch[t].n_id) for t, table in self.tables.items()})
        for i, conv in enumerate(self.convs):
            x = conv(x, batch.edge_index_dict)
            x = {t: h.relu() if i == 0 else h for t, h in x.items()}
        return self.out(x["paper"])


def test_neighbor_loader_trains_a_pyg_hetero_model(typed_dataset: Dataset) -> None:
    torch.manual_seed(0)
    stores = (GraphtierFeatureStore(typed_dataset), GraphtierGraphStore(typed_dataset))
    train = torch.from_numpy(np.asarray(typed_dataset.train_idx, dtype=np.int64).copy())
    loader = NeighborLoader(
        stores,
        num_neighbors=[4, 4],
        input_nodes=("paper", train),
        batch_size=20,
        shuffle=True,
        neighbor_sampler=GraphtierNeighborSampler(typed_dataset, [4, 4]),
    )
    model = HeteroSAGE(typed_dataset, 16, typed_dataset.num_classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    losses = []
    for _ in range(6):
        total = 0.0
        for batch in loader:
            size = batch["paper"].batch_size
            assert batch["paper"].x.shape[1] == 8 and "x" not in batch["field"]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(batch)[:size], batch["paper"].y[:size])
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        losses.append(total)
    assert losses[-1] < 0.7 * losses[0]


def test_neighbor_loader_reads_typed_edge_attrs_by_edge_id(typed_dataset: Dataset) -> None:
    """A typed dataset with edge features: every edge type of PyG's batch carries ``e_id`` (its positions in the
    typed CSC) and ``EdgeAttrs`` reads their rows; each edge is the one its ``e_id`` names."""
    import json

    from graphtier.pyg import EdgeAttrs

    positions = np.arange(typed_dataset.num_edges, dtype=np.float32)
    np.save(typed_dataset.path / "edge_feat.npy", np.stack([positions, -positions], axis=1))
    meta = json.loads((typed_dataset.path / "meta.json").read_text())
    meta["edge_features"] = {"dim": 2, "dtype": "float32", "columns": ["position", "minus"]}
    (typed_dataset.path / "meta.json").write_text(json.dumps(meta))
    ds = Dataset.open(typed_dataset.path)
    fs, gs = GraphtierFeatureStore(ds), GraphtierGraphStore(ds)
    schema = ds.schema
    assert all(a.attr_name != "edge_attr" for a in fs.get_all_tensor_attrs())  # read by e_id, not by node ids
    train = torch.from_numpy(np.asarray(ds.train_idx, dtype=np.int64).copy())
    loader = NeighborLoader((fs, gs), num_neighbors=[4, 3], input_nodes=("paper", train), batch_size=8,
                            neighbor_sampler=GraphtierNeighborSampler(ds, [4, 3]), transform=EdgeAttrs(fs))  # fmt: skip
    indptr, indices = np.asarray(ds.indptr), np.asarray(ds.indices)
    edges = 0
    for batch in loader:
        for rel in schema.relations:
            if rel.type not in batch.edge_types:
                continue
            store = batch[rel.type]
            e_id = store.e_id.numpy()
            np.testing.assert_array_equal(store.edge_attr.numpy()[:, 0], e_id)
            src, dst = store.edge_index.numpy()
            src_global = batch[rel.src].n_id.numpy()[src] + schema.node_type(rel.src).offset
            np.testing.assert_array_equal(indices[e_id], src_global)  # the source the CSC holds at e_id
            rows = rel.row_offset + batch[rel.dst].n_id.numpy()[dst]
            assert np.all((indptr[rows] <= e_id) & (e_id < indptr[rows + 1]))  # in the destination's list
            edges += e_id.shape[0]
    assert edges > 0
