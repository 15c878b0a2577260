"""GraphStore on a typed dataset: one feature source per featured type, dict gathers, budgets shared by the types."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier.dataset import Dataset
from graphtier.graphstore import GraphStore
from graphtier.graphstore.typed_features import (
    ExpectedReads,
    TypedFeatures,
    split_budget_rows,
    split_placement_budgets,
    typed_rows_bound,
)
from graphtier.memory import FEATURE_MODES, TIER_NAMES, PlacementSpec
from graphtier.memory.plan.typed_budget import TypeTable, split_feature_budget
from tests.typed_data import write_typed_labelled_graph

MODE_OPTIONS = {
    "cpu-gather": {},
    "zero-copy": {"ram_budget": "50%"},
    "tiered": {"gpu_budget": "30%", "ram_budget": "50%"},
    "tiered+cache": {"gpu_budget": "20%", "cache_budget": "1KB", "ram_budget": "60%"},
}


@pytest.fixture(scope="module")
def typed_dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return write_typed_labelled_graph(tmp_path_factory.mktemp("typed") / "typed")


def local_ids(dataset: Dataset, rng: np.random.Generator) -> dict[str, torch.Tensor]:
    return {
        t.name: torch.from_numpy(rng.choice(t.count, size=min(t.count, 40), replace=False).astype(np.int64))
        for t in dataset.schema.node_types
    }


def test_mode_list_is_covered() -> None:
    assert set(MODE_OPTIONS) == set(FEATURE_MODES)


@pytest.mark.parametrize("mode", sorted(MODE_OPTIONS))
def test_every_mode_gathers_each_featured_type_and_counts_its_bytes(typed_dataset: Dataset, mode: str) -> None:
    placement = PlacementSpec(features_on=mode, **MODE_OPTIONS[mode])
    rng = np.random.default_rng(0)
    with GraphStore.open(typed_dataset, placement, batch_size=16, fanouts=[3, 2], log=lambda _: None) as store:
        assert isinstance(store.features, TypedFeatures)
        expected_bytes = 0
        for _ in range(3):
            n_id = local_ids(typed_dataset, rng)
            x = store.gather(n_id)
            assert set(x) == {"paper", "author"}  # subject is featureless: absent
            for name, rows in x.items():
                table = np.asarray(typed_dataset.type_features[name])
                assert str(rows.dtype) == f"torch.{table.dtype}"
                assert np.array_equal(rows.numpy(), table[n_id[name].numpy()])
            batch_bytes = store.feature_bytes(n_id)
            assert batch_bytes == 40 * 8 * 4 + 40 * 4 * 2
            expected_bytes += batch_bytes
        traffic = store.traffic()["features"]
        by_type = store.features.traffic_by_type()
    assert traffic["requested"] == expected_bytes
    assert sum(traffic[t] for t in TIER_NAMES) == traffic["requested"]
    assert by_type["paper"]["requested"] == 3 * 40 * 8 * 4
    assert store.row_bytes == 8 * 4 + 4 * 2


def test_labels_and_splits_are_local_ids_of_the_target_type(typed_dataset: Dataset) -> None:
    with GraphStore.open(typed_dataset, features_on="cpu-gather", log=lambda _: None) as store:
        train = store.split("train")
        assert train.max() < typed_dataset.schema.target_type.count
        assert np.array_equal(store.labels(train), np.asarray(typed_dataset.labels)[train])


def test_budgets_are_one_pool_gpu_by_reads_per_byte_ram_by_table_bytes() -> None:
    tables = {"paper": (1000, 512), "author": (2000, 64)}  # 512 000 + 128 000 bytes
    rows = split_budget_rows(tables, 320_000)  # half of the bytes: half of each table's rows
    assert rows == {"paper": 500, "author": 1000}
    assert split_budget_rows(tables, 10**9) == {"paper": 1000, "author": 2000}
    placement = PlacementSpec(features_on="tiered", gpu_budget="320000B", ram_budget="50%")
    budgets = split_placement_budgets(tables, placement, torch.device("cpu"), log=lambda _: None)
    # GPU, uniform reads: an author row is read as often for an eighth of the bytes, so all authors go first
    assert budgets["author"]["gpu_budget"] == f"{2000 * 64}B"
    assert budgets["paper"] == {"gpu_budget": f"{375 * 512}B", "cache_budget": None, "ram_budget": f"{500 * 512}B"}
    # reads: papers read 10 times each outweigh authors read once per byte (10/512 > 1/64)
    reads = {"paper": np.full(1000, 10.0), "author": np.ones(2000)}
    budgets = split_placement_budgets(tables, placement, torch.device("cpu"), reads=lambda: reads, log=lambda _: None)
    assert budgets["paper"]["gpu_budget"] == f"{625 * 512}B" and budgets["author"]["gpu_budget"] == "0B"
    # a mode that takes no budget gets none (make_feature_store would refuse one)
    plain = split_placement_budgets(tables, PlacementSpec(), torch.device("cpu"), log=lambda _: None)
    assert plain["paper"] == {"gpu_budget": None, "cache_budget": None, "ram_budget": None}


def test_the_budget_split_holds_in_the_built_sources(typed_dataset: Dataset) -> None:
    placement = PlacementSpec(features_on="tiered", gpu_budget="50%", ram_budget="100%")
    with GraphStore.open(typed_dataset, placement, log=lambda _: None) as store:
        sources = store.features.sources  # 50% of 300 * 32 + 120 * 8 bytes: every author row first (uniform reads)
        assert sources["author"].device_rows == 120 and sources["paper"].device_rows == (5280 - 960) // 32


def test_the_gpu_budget_follows_the_training_reads(typed_dataset: Dataset) -> None:
    placement = PlacementSpec(features_on="tiered", gpu_budget=f"{20 * 32}B", ram_budget="100%")
    seeds = np.asarray(typed_dataset.train_idx)[:2]  # two seeds: few authors read, many never
    quiet = {"batch_size": 16, "fanouts": [3, 2], "log": lambda _: None}
    reads = ExpectedReads(typed_dataset, seeds, [3, 2], batch_size=16).by_type()
    assert reads is not None
    assert reads["subject"].shape == (6,) and 0 < np.count_nonzero(reads["author"]) < 120
    tables = {"paper": TypeTable(32, 300, reads["paper"]), "author": TypeTable(8, 120, reads["author"])}
    expected = split_feature_budget(tables, 20 * 32)
    uniform = split_feature_budget({name: TypeTable(t.row_bytes, t.rows) for name, t in tables.items()}, 20 * 32)
    assert expected != uniform
    with GraphStore.open(typed_dataset, placement, train_seeds=seeds, **quiet) as store:
        assert {name: source.device_rows for name, source in store.features.sources.items()} == expected
    with GraphStore.open(typed_dataset, placement, **quiet) as store:  # no seeds known: every row read alike
        assert {name: source.device_rows for name, source in store.features.sources.items()} == uniform


def test_describe_says_the_node_order(typed_dataset: Dataset) -> None:
    with GraphStore.open(typed_dataset, features_on="tiered", gpu_budget="10%", log=lambda _: None) as store:
        assert "node order original" in store.describe()


def test_rows_bound_per_type_is_at_most_its_count(typed_dataset: Dataset) -> None:
    bounds = typed_rows_bound(typed_dataset.schema, 4, [2, 2])
    assert bounds == {"paper": 300, "author": 120, "subject": 6}
    assert typed_rows_bound(typed_dataset.schema, 1, [0])["paper"] == 1


def test_homogeneous_store_keeps_one_source(tiny_dataset: Dataset) -> None:
    with GraphStore.open(tiny_dataset, features_on="cpu-gather", log=lambda _: None) as store:
        ids = torch.arange(5)
        assert store.feature_bytes(ids) == 5 * store.row_bytes
        assert store.gather(ids).shape == (5, tiny_dataset.feature_dim)


def test_typed_store_of_a_path(tmp_path: Path) -> None:
    path = tmp_path / "typed"
    write_typed_labelled_graph(path, papers=30, authors=10)
    with GraphStore.open(str(path), features_on="cpu-gather", log=lambda _: None) as store:
        assert "paper" in store.describe()
