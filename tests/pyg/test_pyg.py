"""PyG integration: PyG's own NodeLoader trains a PyG model through graphtier's sampler and stores."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.data import TensorAttr
from torch_geometric.loader import NodeLoader
from torch_geometric.nn.models import GraphSAGE

from graphtier import Dataset
from graphtier.pyg import GraphtierFeatureStore, GraphtierGraphStore, GraphtierNeighborSampler, neighbor_loader


def test_stores_answer_like_plain_indexing(tiny_dataset: Dataset) -> None:
    features = GraphtierFeatureStore(tiny_dataset)
    ids = torch.tensor([5, 0, 399, 5])
    x = features.get_tensor(TensorAttr(group_name=None, attr_name="x", index=ids))
    np.testing.assert_array_equal(x.numpy(), tiny_dataset.features[ids.numpy()])
    y = features.get_tensor(TensorAttr(group_name=None, attr_name="y", index=ids))
    assert y.tolist() == tiny_dataset.labels[ids.numpy()].tolist()
    assert features.get_tensor_size(TensorAttr(group_name=None, attr_name="x")) == tuple(tiny_dataset.features.shape)
    graph = GraphtierGraphStore(tiny_dataset)
    (attr,) = graph.get_all_edge_attrs()
    rows, colptr = graph.get_edge_index(attr)
    assert colptr.tolist() == tiny_dataset.indptr.tolist() and rows.shape[0] == tiny_dataset.num_edges


def test_sampler_output_layout(tiny_dataset: Dataset) -> None:
    loader = NodeLoader(
        (GraphtierFeatureStore(tiny_dataset), GraphtierGraphStore(tiny_dataset)),
        GraphtierNeighborSampler(tiny_dataset, [4, 3]),
        input_nodes=torch.arange(0, 40),
        batch_size=16,
    )
    batch = next(iter(loader))
    assert batch.batch_size == 16
    assert batch.n_id[:16].tolist() == list(range(16))
    assert batch.num_sampled_nodes[0] == 16 and len(batch.num_sampled_edges) == 2
    assert batch.x.shape == (batch.n_id.shape[0], tiny_dataset.feature_dim)
    src, dst = batch.n_id[batch.edge_index[0]].numpy(), batch.n_id[batch.edge_index[1]].numpy()
    indptr, indices = tiny_dataset.indptr, tiny_dataset.indices
    for s, d in zip(src, dst):
        assert s in indices[indptr[d] : indptr[d + 1]]


def test_pyg_model_trains_through_node_loader(tiny_dataset: Dataset) -> None:
    torch.manual_seed(0)
    loader = neighbor_loader(tiny_dataset, [5, 5], input_nodes="train", batch_size=50)
    model = GraphSAGE(tiny_dataset.feature_dim, 32, num_layers=2, out_channels=tiny_dataset.num_classes)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(8):
        total = 0.0
        for batch in loader:
            optimizer.zero_grad()
            out = model(batch.x, batch.edge_index)[: batch.batch_size]
            loss = F.cross_entropy(out, batch.y[: batch.batch_size])
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        losses.append(total)
    assert losses[-1] < 0.7 * losses[0]
    model.eval()
    correct = seen = 0
    with torch.no_grad():
        for batch in neighbor_loader(tiny_dataset, [-1, -1], input_nodes="test", batch_size=100, shuffle=False):
            pred = model(batch.x, batch.edge_index)[: batch.batch_size].argmax(1)
            correct += int((pred == batch.y[: batch.batch_size]).sum())
            seen += batch.batch_size
    assert correct / seen > 0.6


def test_loader_over_a_graph_store_gives_the_dataset_loaders_batches(tiny_dataset: Dataset) -> None:
    from graphtier import GraphStore

    with GraphStore.open(tiny_dataset, features_on="tiered", feature_budget="0", log=lambda _: None) as store:
        through_store = neighbor_loader(store, [4, 3], input_nodes="train", batch_size=64, shuffle=False, seed=2)
        plain = neighbor_loader(tiny_dataset, [4, 3], input_nodes="train", batch_size=64, shuffle=False, seed=2)
        for got, expected in zip(through_store, plain):
            assert torch.equal(got.n_id, expected.n_id)
            assert torch.equal(got.edge_index, expected.edge_index)
            assert torch.equal(got.x, expected.x) and torch.equal(got.y, expected.y)
        traffic = store.traffic()
    assert traffic["topology"]["host"] > 0 and traffic["features"]["host"] > 0
