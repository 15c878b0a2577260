"""Edge features gathered per batch: ``store.gather_edges(block.edge_id)`` is ``edge_feat[edge_id]`` in every
feature mode and tier, the edge table's bytes per tier are counted apart from the node features', the samplers
record edge ids only when the store has edge features, and a dataset without usable edge features is refused in
one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier.dataset import Dataset
from graphtier.errors import OptionError
from graphtier.graphstore import GraphStore
from graphtier.graphstore.edge_features import batch_edges_bound, edge_feature_table
from graphtier.memory import TIER_NAMES
from graphtier.sampling import iter_seed_batches
from graphtier.train.loop.feed import add_edge_inputs

FANOUTS = [5, 3]
MODES = [
    ("cpu-gather", {}),
    ("zero-copy", {}),  # without CUDA: the CPU gather (one log line)
    ("tiered", {}),  # every row in RAM
    ("tiered", {"ram_budget": "0"}),  # every row from the memory map (disk tier)
    ("tiered", {"ram_budget": "40%"}),  # a RAM prefix, the rest from disk
]


def with_edge_features(dataset: Dataset, dim: int, dtype: str = "float32", seed: int = 0) -> Dataset:
    """``dataset`` with an ``edge_feat.npy`` [E, dim] of random rows and its meta.json entry (the data layer's
    contract: one row per edge in CSC order), reopened."""
    table = np.random.default_rng(seed).standard_normal((dataset.num_edges, dim)).astype(dtype)
    np.save(dataset.path / "edge_feat.npy", table)
    meta_path = dataset.path / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["edge_features"] = {"dim": dim, "dtype": dtype, "columns": [f"c{i}" for i in range(dim)]}
    meta_path.write_text(json.dumps(meta))
    return Dataset.open(dataset.path)


def batches(store: GraphStore, dataset: Dataset, count: int = 4):  # noqa: ANN201
    seeds = list(iter_seed_batches(np.asarray(dataset.train_idx), 37, shuffle=True, seed=0, epoch=1))[:count]
    return [store.sample(s, FANOUTS, batch_id=i) for i, s in enumerate(seeds)]


@pytest.mark.parametrize(("mode", "budgets"), MODES)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_gathered_edge_rows_are_the_rows_of_the_sampled_edges_in_every_tier(
    tiny_dataset: Dataset, mode: str, budgets: dict, dtype: str
) -> None:
    dataset = with_edge_features(tiny_dataset, 6, dtype)
    table = np.asarray(edge_feature_table(dataset))
    row_bytes = 6 * np.dtype(dtype).itemsize
    with GraphStore.open(dataset, features_on=mode, edge_features=True, log=lambda _: None, **budgets) as store:
        edges = 0
        for batch in batches(store, dataset):
            for block in batch.blocks:
                rows = store.gather_edges(block.edge_id)
                assert rows.dtype == getattr(torch, dtype)
                assert np.array_equal(rows.numpy(), table[block.edge_id.numpy()])
                edges += block.num_edges
        traffic = store.traffic()
        assert "edge features: " in store.describe()
    tiers = traffic["edge_features"]
    assert edges > 0 and tiers["requested"] == edges * row_bytes
    assert sum(tiers[t] for t in TIER_NAMES) == tiers["requested"]
    assert traffic["features"]["requested"] == 0  # no node row was gathered: edge bytes are counted apart
    if budgets.get("ram_budget") == "0":
        assert tiers["disk"] == tiers["requested"]
    elif budgets.get("ram_budget") == "40%":
        assert tiers["disk"] > 0 and tiers["host"] > 0
    else:
        assert tiers["disk"] == 0


def test_a_store_without_edge_features_samples_no_edge_ids(tiny_dataset: Dataset) -> None:
    dataset = with_edge_features(tiny_dataset, 3)
    with GraphStore.open(dataset, features_on="cpu-gather", log=lambda _: None) as store:
        batch = batches(store, dataset, 1)[0]
        assert all(block.edge_id is None for block in batch.blocks)
        assert "edge_features" not in store.traffic()
        with pytest.raises(OptionError, match="opened without edge features"):
            store.gather_edges(torch.zeros(1, dtype=torch.int64))


def test_link_batches_of_the_store_carry_edge_rows(tiny_link_dataset: Dataset) -> None:
    dataset = with_edge_features(tiny_link_dataset, 4)
    table = np.asarray(edge_feature_table(dataset))
    with GraphStore.open(dataset, features_on="tiered", ram_budget="50%", edge_features=True,
                         log=lambda _: None) as store:  # fmt: skip
        pairs = store.link_split("train").positives
        batch = store.link_sampler(FANOUTS, pairs)(np.arange(64), 0)
        assert batch.excluded_edges > 0
        add_edge_inputs(batch, store, features=True, ages=True)
        for block in batch.blocks:
            assert np.array_equal(block.edge_attr.numpy(), table[block.edge_id.numpy()])
            assert block.edge_age is None  # not a temporal batch


def test_missing_and_unusable_edge_tables_are_refused_in_one_line(tiny_dataset: Dataset, tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"has no edge_feat\.npy") as missing:
        GraphStore.open(tiny_dataset, features_on="cpu-gather", edge_features=True, log=lambda _: None)
    assert "\n" not in str(missing.value) and "edge_features" in str(missing.value)
    wide = with_edge_features(tiny_dataset, 2, "float64")
    with pytest.raises(OptionError, match="float64, expected float16 or float32"):
        GraphStore.open(wide, features_on="cpu-gather", edge_features=True, log=lambda _: None)


def test_edge_bound_covers_every_hop() -> None:
    assert batch_edges_bound(10, [5, 3], 10**6, 10**9) == 10 * 6 * 3  # hop 2 draws 3 per row of 60
    assert batch_edges_bound(10, [5, 3], 20, 10**9) == max(10 * 5, 20 * 3)  # rows capped by the graph
    assert batch_edges_bound(10, [5, 3], 10**6, 7) == 7  # never more than the graph's edges
    assert batch_edges_bound(10, [-1, 3], 10**6, 10**9) is None


def test_the_loader_hands_out_blocks_with_edge_rows(tiny_dataset: Dataset) -> None:
    from graphtier import Loader

    dataset = with_edge_features(tiny_dataset, 5, "float16")
    table = np.asarray(edge_feature_table(dataset)).astype(np.float32)
    loader = Loader(dataset, fanouts=(4, 2), batch_size=64, device="cpu", prefetch=0, features_on="tiered",
                    ram_budget="0", edge_features=True)  # fmt: skip
    try:
        batch = next(iter(loader))
        for block in batch.blocks:
            assert block.edge_attr.dtype == torch.float32
            assert np.array_equal(block.edge_attr.numpy(), table[block.edge_id.numpy()])
    finally:
        loader.close()


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_an_edge_table_in_read_order_is_read_by_position_on_the_positions_device(device: str) -> None:
    """``MappedRows`` (a table with ``edge_row.npy``) gathers ``table[row_map[positions]]`` whether the CSC positions
    are on the CPU or, with GPU sampling, on CUDA (the map is copied there once), in a tiered store with GPU rows."""
    from graphtier.graphstore.edge_features import MappedRows
    from graphtier.memory import make_feature_store

    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    rng = np.random.default_rng(5)
    table = rng.standard_normal((3000, 8)).astype(np.float32)
    row_map = rng.permutation(3000).astype(np.int32)
    where = torch.device(device) if device == "cpu" else torch.device("cuda", torch.cuda.current_device())
    inner = make_feature_store(table, "tiered", device=where, gpu_budget="10%", log=lambda _: None)
    with MappedRows(inner, row_map) as rows:
        for _ in range(2):  # the second pass reuses the map already on the device
            positions = torch.from_numpy(rng.integers(0, 3000, 500)).to(where)
            got = rows.gather(positions)
            expected = table[row_map[positions.cpu().numpy()]]
            np.testing.assert_array_equal(got.cpu().numpy(), expected)
        assert rows.traffic()["requested"] == 2 * 500 * 8 * 4
