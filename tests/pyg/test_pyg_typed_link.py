"""PyG's LinkNeighborLoader on a typed dataset: pairs of one relation (``edge_label_index=((SRC, REL, DST), pairs)``)
sampled by graphtier's typed link sampler, the targets out of the relation and its reverse, negatives of the
destination type; with ``edge_label_time`` every pair at its time."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.loader import LinkNeighborLoader, NeighborLoader
from torch_geometric.sampler import EdgeSamplerInput

from graphtier import Dataset
from graphtier.dataset.importers.formats.manifest import import_manifest
from graphtier.errors import OptionError
from graphtier.pyg import GraphtierFeatureStore, GraphtierGraphStore, GraphtierNeighborSampler
from tests.dataset.importers.test_manifest_time import write_manifest

RATES = ("user", "rates", "item")


@pytest.fixture(scope="module")
def timed(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    root = tmp_path_factory.mktemp("pyg-typed-link")
    return import_manifest(write_manifest(root), root / "ds", add_reverse=True)


def relation_pairs(dataset: Dataset) -> tuple[np.ndarray, np.ndarray]:
    """The relation's stored edges as local (user, item) pairs, and their times."""
    schema = dataset.schema
    rel = schema.relation(RATES)
    ptr = np.asarray(dataset.indptr[rel.row_offset : rel.row_offset + schema.node_type("item").count + 1])
    dst = np.repeat(np.arange(ptr.shape[0] - 1), np.diff(ptr))
    src = np.asarray(dataset.indices[ptr[0] : ptr[-1]]) - schema.node_type("user").offset
    return np.stack([src, dst], axis=1).astype(np.int64), np.asarray(dataset.edge_time[ptr[0] : ptr[-1]])


def loader(dataset: Dataset, pairs: np.ndarray, **options) -> LinkNeighborLoader:
    return LinkNeighborLoader(
        (GraphtierFeatureStore(dataset), GraphtierGraphStore(dataset)),
        num_neighbors=[-1, 3],
        neighbor_sampler=GraphtierNeighborSampler(
            dataset, [-1, 3], seed=1, temporal=options.pop("temporal", "uniform")
        ),
        edge_label_index=(RATES, torch.from_numpy(pairs.T.copy())),
        **options,
    )


def test_typed_link_batches_point_at_their_pairs_and_hide_their_edges(timed: Dataset) -> None:
    pairs, _ = relation_pairs(timed)
    batch = next(iter(loader(timed, pairs, batch_size=40, neg_sampling="binary")))
    chosen = pairs[batch[RATES].input_id.numpy()]
    label_index = batch[RATES].edge_label_index
    users = batch["user"].n_id[label_index[0]].numpy()
    items = batch["item"].n_id[label_index[1]].numpy()
    assert np.array_equal(users[:40], chosen[:, 0]) and np.array_equal(items[:40], chosen[:, 1])
    assert np.array_equal(users[40:], chosen[:, 0]) and int(items.max()) < 20  # negatives: items, source kept
    assert batch[RATES].edge_label.tolist() == [1.0] * 40 + [0.0] * 40
    targets = {(int(u), int(i)) for u, i in chosen}
    for key, (u_row, i_row) in ((RATES, (0, 1)), (("item", "rev_rates", "user"), (1, 0))):
        edge_index = batch[key].edge_index
        edges = set(zip(batch["user"].n_id[edge_index[u_row]].tolist(), batch["item"].n_id[edge_index[i_row]].tolist()))
        assert not edges & targets  # neither direction of a target pair is a message edge


def test_timed_typed_pairs_and_refusals(timed: Dataset) -> None:
    pairs, times = relation_pairs(timed)
    batch = next(iter(loader(timed, pairs[:30], batch_size=30, neg_sampling="binary",
                             edge_label_time=torch.from_numpy(times[:30].copy()), time_attr="edge_time", temporal="recent")))  # fmt: skip
    at = times[:30][batch[RATES].input_id.numpy()]
    assert torch.equal(batch[RATES].edge_label_time, torch.from_numpy(np.concatenate([at, at])))
    sampler = GraphtierNeighborSampler(timed, [2])
    wrong = EdgeSamplerInput(None, torch.zeros(4, dtype=torch.long), torch.zeros(4, dtype=torch.long),
                             input_type=("user", "likes", "item"))  # fmt: skip
    with pytest.raises(OptionError, match="edge_label_index= expected pairs of a relation of the schema"):
        sampler.sample_from_edges(wrong)


def test_typed_node_seeds_with_times(timed: Dataset) -> None:
    """NeighborLoader(input_nodes=(target, ids), input_time=...) on a typed dataset: the typed temporal sampler, each
    relation's edges at or before the seed's time; a seed's first hop holds its whole cut lists."""
    seeds = torch.arange(0, 20, 3)
    times = torch.full((seeds.shape[0],), 45, dtype=torch.long)
    loader = NeighborLoader(
        (GraphtierFeatureStore(timed), GraphtierGraphStore(timed)), num_neighbors=[-1], input_nodes=("item", seeds),
        input_time=times, time_attr="edge_time", batch_size=1,
        neighbor_sampler=GraphtierNeighborSampler(timed, [-1], seed=2),
    )  # fmt: skip
    schema = timed.schema
    rel = schema.relation(RATES)
    indptr, edge_time = np.asarray(timed.indptr), np.asarray(timed.edge_time)
    for batch in loader:
        item = int(batch["item"].n_id[0])
        row = rel.row_offset + item
        expected = int(np.sum(edge_time[indptr[row] : indptr[row + 1]] <= 45))
        assert batch[RATES].edge_index.shape[1] == expected
