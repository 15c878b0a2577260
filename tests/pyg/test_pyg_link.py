"""PyG's LinkNeighborLoader over graphtier's stores and link sampler: batches without their target edges, training."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch_geometric.loader import LinkNeighborLoader
from torch_geometric.nn.models import GraphSAGE

from graphtier import Dataset
from graphtier.errors import OptionError
from graphtier.pyg import GraphtierFeatureStore, GraphtierGraphStore, GraphtierNeighborSampler
from tests.sampling.test_link import graph_pairs


def link_loader(dataset: Dataset, pairs: np.ndarray, **options) -> LinkNeighborLoader:
    sampler = GraphtierNeighborSampler(dataset, [-1, 4], seed=2, negative_sampling=options.pop("how", "uniform"))
    return LinkNeighborLoader(
        (GraphtierFeatureStore(dataset), GraphtierGraphStore(dataset)),
        num_neighbors=[-1, 4],
        neighbor_sampler=sampler,
        edge_label_index=(None, torch.from_numpy(pairs.T.copy())),  # (edge type, pairs) over a store pair
        **options,
    )


def test_link_neighbor_loader_batches_point_at_their_pairs_and_hide_their_edges(tiny_dataset: Dataset) -> None:
    indptr, indices = np.asarray(tiny_dataset.indptr), np.asarray(tiny_dataset.indices)
    pairs = graph_pairs(indptr, indices, undirected=True)
    loader = link_loader(tiny_dataset, pairs, batch_size=64, shuffle=True, neg_sampling="binary", how="degree")
    for step, batch in zip(range(3), loader):
        n_id = batch.n_id.numpy()
        assert np.unique(n_id).size == n_id.size
        assert batch.x.shape == (n_id.size, tiny_dataset.feature_dim)
        chosen = pairs[batch.input_id.numpy()]
        ends = n_id[batch.edge_label_index.numpy()]
        assert np.array_equal(ends[:, :64].T, chosen) and np.array_equal(ends[0, 64:], chosen[:, 0])
        assert batch.edge_label.tolist() == [1.0] * 64 + [0.0] * 64
        edges = set(zip(n_id[batch.edge_index[0].numpy()].tolist(), n_id[batch.edge_index[1].numpy()].tolist()))
        targets = {(int(u), int(v)) for u, v in chosen}
        assert not edges & (targets | {(v, u) for u, v in targets})
        for u, v in list(edges)[:200]:  # sampled neighbours are real neighbours
            assert u in indices[indptr[v] : indptr[v + 1]]
        # the first hop takes whole lists: without the exclusion each target's source would be its neighbour
        assert sum(int(u) in indices[indptr[v] : indptr[v + 1]] for u, v in chosen) == 64


def test_evaluation_and_triplet_batches(tiny_dataset: Dataset) -> None:
    pairs = graph_pairs(np.asarray(tiny_dataset.indptr), np.asarray(tiny_dataset.indices), undirected=True)[:30]
    labels = torch.tensor([1.0, 0.0] * 15)
    loader = link_loader(tiny_dataset, pairs, edge_label=labels, batch_size=30)
    batch = next(iter(loader))
    assert torch.equal(batch.edge_label, labels)
    assert np.array_equal(batch.n_id.numpy()[batch.edge_label_index.numpy()].T, pairs)
    triplets = next(iter(link_loader(tiny_dataset, pairs, batch_size=10, neg_sampling=("triplet", 3))))
    assert triplets.dst_neg_index.shape == (10, 3)
    assert np.array_equal(triplets.n_id[triplets.src_index].numpy(), pairs[triplets.input_id.numpy(), 0])
    assert np.array_equal(triplets.n_id[triplets.dst_pos_index].numpy(), pairs[triplets.input_id.numpy(), 1])
    with pytest.raises(OptionError, match="neg_sampling.amount"):
        next(iter(link_loader(tiny_dataset, pairs, batch_size=10, neg_sampling=("binary", 0.5))))


def test_sage_with_a_dot_decoder_trains_through_link_neighbor_loader(tiny_dataset: Dataset) -> None:
    torch.manual_seed(0)
    pairs = graph_pairs(np.asarray(tiny_dataset.indptr), np.asarray(tiny_dataset.indices), undirected=True)[:600]
    loader = link_loader(tiny_dataset, pairs, batch_size=200, shuffle=True, neg_sampling="binary")
    model = GraphSAGE(tiny_dataset.feature_dim, 32, num_layers=2, out_channels=32)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for _ in range(4):
        total = 0.0
        for batch in loader:
            optimizer.zero_grad()
            h = model(batch.x, batch.edge_index)
            scores = (h[batch.edge_label_index[0]] * h[batch.edge_label_index[1]]).sum(-1)
            loss = F.binary_cross_entropy_with_logits(scores, batch.edge_label)
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        losses.append(total)
    assert losses[-1] < 0.8 * losses[0]
