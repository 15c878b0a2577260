"""Edge features through PyG's FeatureStore: ``edge_attr`` indexed by edge ids, and ``EdgeAttrs`` on PyG's own
loaders (``NeighborLoader``, ``LinkNeighborLoader``) fed by graphtier's sampler."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch_geometric.data import TensorAttr
from torch_geometric.loader import LinkNeighborLoader, NeighborLoader

from graphtier import Dataset, OptionError
from graphtier.dataset.synthetic import generate as synthetic
from graphtier.pyg import EdgeAttrs, GraphtierFeatureStore, GraphtierGraphStore, GraphtierNeighborSampler


@pytest.fixture(scope="module")
def attributed(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return synthetic.generate(tmp_path_factory.mktemp("ea") / "g", nodes=300, avg_degree=5, feature_dim=4,
                              edge_feature_dim=3, seed=2, train_fraction=0.3)  # fmt: skip


def _check_batch(batch: object, ds: Dataset) -> None:
    e_id = batch.e_id.numpy()  # type: ignore[attr-defined]
    assert e_id.shape[0] == batch.edge_index.shape[1] > 0  # type: ignore[attr-defined]
    np.testing.assert_array_equal(batch.edge_attr.numpy(), np.asarray(ds.edge_features)[e_id])  # type: ignore[attr-defined]
    n_id, edge_index = batch.n_id.numpy(), batch.edge_index.numpy()  # type: ignore[attr-defined]
    dst_of = np.repeat(np.arange(ds.num_nodes), np.diff(ds.indptr))
    np.testing.assert_array_equal(n_id[edge_index[0]], np.asarray(ds.indices)[e_id])  # each edge is the one e_id names
    np.testing.assert_array_equal(n_id[edge_index[1]], dst_of[e_id])


def test_pyg_neighbor_loader_reads_edge_attrs_by_edge_id(attributed: Dataset) -> None:
    fs, gs = GraphtierFeatureStore(attributed), GraphtierGraphStore(attributed)
    assert fs.get_tensor_size(TensorAttr(group_name=None, attr_name="edge_attr")) == (attributed.num_edges, 3)
    assert [a.attr_name for a in fs.get_all_tensor_attrs()] == ["x", "y"]  # PyG would index edge_attr by node ids
    loader = NeighborLoader((fs, gs), num_neighbors=[4, 3], input_nodes=torch.from_numpy(attributed.split("train")),
                            batch_size=32, neighbor_sampler=GraphtierNeighborSampler(attributed, [4, 3]),
                            transform=EdgeAttrs(fs))  # fmt: skip
    batches = 0
    for batch in loader:
        _check_batch(batch, attributed)
        batches += 1
    assert batches == -(-attributed.split("train").shape[0] // 32)


def test_pyg_link_loader_reads_edge_attrs(attributed: Dataset) -> None:
    fs, gs = GraphtierFeatureStore(attributed), GraphtierGraphStore(attributed)
    dst = np.repeat(np.arange(attributed.num_nodes), np.diff(attributed.indptr))[:64]
    pairs = torch.from_numpy(np.stack([np.asarray(attributed.indices)[:64], dst]).astype(np.int64))
    loader = LinkNeighborLoader((fs, gs), num_neighbors=[3, 3], neighbor_sampler=GraphtierNeighborSampler(attributed, [3, 3]),
                                edge_label_index=(None, pairs), batch_size=16, neg_sampling="binary",
                                transform=EdgeAttrs(fs))  # fmt: skip
    for batch in loader:
        _check_batch(batch, attributed)


def test_edge_attrs_need_edge_features(tmp_path: Path) -> None:
    plain = synthetic.generate(tmp_path / "plain", nodes=50, avg_degree=3, feature_dim=2, seed=0)
    with pytest.raises(OptionError, match="no edge features"):
        EdgeAttrs(GraphtierFeatureStore(plain))
