"""The edge table in read order: ``reorder`` writes ``edge_feat.npy`` list by list in descending reads per edge
with ``edge_row.npy``, every reader (the store in every feature mode, PyG's edge attributes, the plan) finds each
edge's own row through it, a second reorder keeps them, and a bad map is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset import Dataset
from graphtier.dataset.edges._edge_row_kernels import lay_out_rows, lay_out_rows_py
from graphtier.dataset.edges.edge_rows import EDGE_ROW, read_order
from graphtier.errors import DatasetError, OptionError
from graphtier.graph.reorder import reorder_dataset
from graphtier.graphstore import GraphStore
from graphtier.sampling import iter_seed_batches
from graphtier.tiering.hotness import compute_scores, list_reads
from graphtier.tiering.replay import Replay

from ..conftest import write_labelled_graph

FANOUTS = [5, 3]


@settings(max_examples=60, deadline=None)
@given(degrees=st.lists(st.integers(0, 5), min_size=1, max_size=10), data=st.data())
def test_the_layout_kernel_equals_its_reference(degrees: list[int], data: st.DataObject) -> None:
    indptr = np.concatenate(([0], np.cumsum(degrees))).astype(np.int64)
    e = int(indptr[-1])
    lists = np.array(data.draw(st.permutations(range(len(degrees)))), np.int64)
    source_row = np.array(data.draw(st.permutations(range(e))), np.int64) if e else np.zeros(0, np.int64)
    rows, row_of = np.empty(e, np.int64), np.empty(e, np.int32)
    lay_out_rows(indptr, lists, source_row, rows, row_of)
    expected_rows, expected_row_of = lay_out_rows_py(indptr, lists, source_row)
    np.testing.assert_array_equal(rows, expected_rows)
    np.testing.assert_array_equal(row_of, expected_row_of)


def test_read_order_puts_the_densest_lists_first() -> None:
    indptr = np.array([0, 4, 4, 5, 7, 9], np.int64)  # lists of 4, 0, 1, 2 and 2 edges
    reads = np.array([8.0, 0.0, 6.0, 2.0, 4.0])  # 2, -, 6, 1 and 2 reads per edge
    np.testing.assert_array_equal(read_order(indptr, reads), [2, 0, 4, 3])  # ties by row; the empty list left out


def edge_coded(root: Path) -> Dataset:
    """A labelled graph whose edge features are (source, destination) of each edge in the ORIGINAL ids: a row
    found for an edge names the edge it belongs to."""
    dataset = write_labelled_graph(root, num_nodes=300, avg_degree=8, seed=5)
    indptr, indices = np.asarray(dataset.indptr), np.asarray(dataset.indices)
    dst = np.repeat(np.arange(dataset.num_nodes), np.diff(indptr))
    np.save(root / "edge_feat.npy", np.stack([indices, dst], axis=1).astype(np.float32))
    meta = json.loads((root / "meta.json").read_text())
    meta["edge_features"] = {"dim": 2, "dtype": "float32", "columns": ["src", "dst"]}
    (root / "meta.json").write_text(json.dumps(meta))
    return Dataset.open(root)


def expected_rows(dataset: Dataset, positions: np.ndarray) -> np.ndarray:
    """float32 [len(positions), 2]: (original source, original destination) of the edges at those CSC positions."""
    indptr, indices = np.asarray(dataset.indptr), np.asarray(dataset.indices)
    perm = np.asarray(dataset.extra["perm"]) if "perm" in dataset.extra else np.arange(dataset.num_nodes)
    dst = np.searchsorted(indptr, positions, side="right") - 1
    return np.stack([perm[indices[positions]], perm[dst]], axis=1).astype(np.float32)


def reordered(source: Dataset, output: Path, by_reads: bool = True) -> Dataset:
    scores = compute_scores(source, "fwr", replay=Replay(fanouts=FANOUTS)).scores
    reads = list_reads(source, replay=Replay(fanouts=FANOUTS)) if by_reads else None
    return reorder_dataset(source, output, scores, score_label="fwr", edge_list_reads=reads)[0]


@pytest.fixture
def in_read_order(tmp_path: Path) -> Dataset:
    return reordered(edge_coded(tmp_path / "g"), tmp_path / "r")


def test_reorder_writes_the_table_in_read_order_with_its_map(in_read_order: Dataset) -> None:
    dataset = in_read_order
    row_map = np.asarray(dataset.extra[EDGE_ROW])
    assert row_map.dtype == np.int32 and np.array_equal(np.sort(row_map), np.arange(dataset.num_edges))
    table = np.asarray(dataset.edge_features)
    positions = np.arange(dataset.num_edges)
    np.testing.assert_array_equal(table[row_map], expected_rows(dataset, positions))  # every edge finds its row
    reads = list_reads(dataset, replay=Replay(fanouts=FANOUTS))
    degree = np.diff(np.asarray(dataset.indptr))
    first_rows = row_map[np.asarray(dataset.indptr)[:-1][degree > 0]]
    density = (reads / np.maximum(degree, 1))[degree > 0][np.argsort(first_rows)]
    assert np.all(np.diff(density) <= 1e-9)  # lists in descending reads per edge, recomputed on the output


@pytest.mark.parametrize(("mode", "budgets"), [("tiered", {"ram_budget": "30%"}), ("cpu-gather", {})])
def test_the_store_gathers_each_sampled_edge_its_own_row(in_read_order: Dataset, mode: str, budgets: dict) -> None:
    dataset = in_read_order
    seeds = list(iter_seed_batches(np.asarray(dataset.train_idx), 29, shuffle=True, seed=0, epoch=0))[:3]
    with GraphStore.open(dataset, features_on=mode, edge_features=True, log=lambda _: None, **budgets) as store:
        for b, batch_seeds in enumerate(seeds):
            for block in store.sample(batch_seeds, FANOUTS, batch_id=b).blocks:
                rows = store.gather_edges(block.edge_id)
                np.testing.assert_array_equal(rows.numpy(), expected_rows(dataset, block.edge_id.numpy()))
        assert "read order" in store.describe()
        with pytest.raises(IndexError, match="CSC positions"):
            store.gather_edges(torch.tensor([dataset.num_edges]))


def test_a_second_reorder_reads_through_the_map(in_read_order: Dataset, tmp_path: Path) -> None:
    for by_reads in (True, False):
        again = reordered(in_read_order, tmp_path / f"again-{by_reads}", by_reads)
        table = np.asarray(again.edge_features)
        rows = np.asarray(again.extra[EDGE_ROW]) if by_reads else np.arange(again.num_edges)
        assert (EDGE_ROW in again.extra) == by_reads
        np.testing.assert_array_equal(table[rows], expected_rows(again, np.arange(again.num_edges)))


def test_pyg_edge_attributes_read_through_the_map(in_read_order: Dataset) -> None:
    from torch_geometric.data import TensorAttr

    from graphtier.pyg import GraphtierFeatureStore

    store = GraphtierFeatureStore(in_read_order)
    positions = torch.tensor([0, 5, in_read_order.num_edges - 1])
    rows = store.get_tensor(TensorAttr(group_name=None, attr_name="edge_attr", index=positions))
    np.testing.assert_array_equal(rows.numpy(), expected_rows(in_read_order, positions.numpy()))


def test_the_plan_serves_more_edge_reads_in_read_order(tmp_path: Path) -> None:
    from graphtier.tiering.plan.capacity import describe_device, plan_capacity
    from graphtier.tiering.plan.edges import format_edge_plan

    source = edge_coded(tmp_path / "g")
    plans = {}
    for by_reads in (True, False):
        dataset = reordered(source, tmp_path / f"r-{by_reads}", by_reads)
        plan = plan_capacity(
            dataset,
            describe_device("80GiB", host_memory="64GiB"),
            budgets=["10%", "100%"],
            replay=Replay(fanouts=FANOUTS, batch_size=29),
        )
        plans[by_reads] = plan.edges
    assert plans[True].read_order and not plans[False].read_order
    in_reads, in_csc = (plans[k].rows[0] for k in (True, False))
    assert in_reads.best_share == pytest.approx(in_csc.best_share)  # the same graph and reads
    assert in_reads.read_share > in_csc.read_share and in_reads.read_share <= in_reads.best_share + 1e-9
    assert plans[True].rows[1].read_share == pytest.approx(1.0)
    notes = {k: [line for line in format_edge_plan(plans[k]) if "note:" in line] for k in (True, False)}
    assert notes[True] == [] and "read order" in notes[False][0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.astype(np.int64), "expected int32"),
        (lambda m: np.where(m == 0, 1, m).astype(np.int32), "rows missing"),
        (lambda m: (m + 1).astype(np.int32), "found values in"),
    ],
)
def test_a_bad_map_is_refused_in_one_line(in_read_order: Dataset, change, message: str) -> None:  # noqa: ANN001
    path = in_read_order.path / f"{EDGE_ROW}.npy"
    np.save(path, change(np.load(path)))
    with pytest.raises(DatasetError, match=message) as error:
        Dataset.open(in_read_order.path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_a_map_without_an_edge_table_is_refused(tmp_path: Path) -> None:
    dataset = write_labelled_graph(tmp_path / "g", num_nodes=50)
    np.save(dataset.path / f"{EDGE_ROW}.npy", np.arange(dataset.num_edges, dtype=np.int32))
    with pytest.raises(DatasetError, match="unexpected file"):
        Dataset.open(dataset.path)


def test_edge_list_reads_of_the_wrong_shape_are_refused(in_read_order: Dataset, tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="edge_list_reads"):
        reorder_dataset(in_read_order, tmp_path / "x", np.zeros(in_read_order.num_nodes), score_label="s",
                        edge_list_reads=np.zeros(3))  # fmt: skip


def test_reorder_on_the_command_line_chooses_the_edge_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli.helpers import run

    source = edge_coded(tmp_path / "g")
    code, stdout, _ = run(["reorder", str(source.path), str(tmp_path / "r"), "--score", "degree"], capsys)
    assert code == 0 and "descending expected reads per edge" in stdout
    assert (tmp_path / "r" / f"{EDGE_ROW}.npy").is_file()
    code, stdout, _ = run(["info", str(tmp_path / "r")], capsys)
    assert code == 0 and "read order (edge_row.npy)" in stdout
    code, stdout, _ = run(["reorder", str(source.path), str(tmp_path / "c"), "--edge-order", "csc"], capsys)
    assert code == 0 and not (tmp_path / "c" / f"{EDGE_ROW}.npy").exists()
    for name in ("r", "c"):
        again = Dataset.open(tmp_path / name)
        rows = np.asarray(again.extra.get(EDGE_ROW, np.arange(again.num_edges)))
        np.testing.assert_array_equal(np.asarray(again.edge_features)[rows],
                                      expected_rows(again, np.arange(again.num_edges)))  # fmt: skip


def test_without_training_seeds_auto_keeps_the_csc_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli.helpers import run

    source = edge_coded(tmp_path / "g")  # no edge split: --task link has no training pairs
    args = ["reorder", str(source.path), str(tmp_path / "r"), "--score", "degree", "--task", "link"]
    code, _, err = run(args, capsys)
    assert code == 0 and "stays in CSC order" in err and not (tmp_path / "r" / f"{EDGE_ROW}.npy").exists()
    code, _, err = run([*args[:3], str(tmp_path / "r2"), *args[4:], "--edge-order", "reads"], capsys)
    assert code != 0 and err.count("\n") == 1 and "graphtier: error:" in err


def test_a_typed_dataset_keeps_each_list_s_rows_in_read_order(tmp_path: Path) -> None:
    """MovieLens-100k as a typed user/item graph with the ratings as edge features, reordered for its link task:
    every relation row's list holds the rows its list held before (the ratings of the same edges)."""
    from graphtier.dataset.importers.formats.movielens import import_movielens
    from graphtier.graph.reorder import relation_row_perm
    from graphtier.tiering.seeds import EpochSeeds

    from ..conftest import shared_data

    source = import_movielens(shared_data("movielens-100k") / "ml-100k", tmp_path / "ml", typed=True,
                              rating_features=True)  # fmt: skip
    seeds = EpochSeeds(task="link")
    scores = compute_scores(source, "fwr", replay=Replay(fanouts=FANOUTS, seeds=seeds)).scores
    out = reorder_dataset(
        source,
        tmp_path / "r",
        scores,
        score_label="fwr",
        edge_list_reads=list_reads(source, replay=Replay(fanouts=FANOUTS, seeds=seeds)),
    )[0]
    row_map = np.asarray(out.extra[EDGE_ROW])
    old_rows = relation_row_perm(np.asarray(out.extra["perm"]), out.schema)
    new_ptr, old_ptr = np.asarray(out.indptr), np.asarray(source.indptr)
    new_table, old_table = np.asarray(out.edge_features), np.asarray(source.edge_features)
    for r in np.flatnonzero(np.diff(new_ptr) > 0)[::37]:  # every 37th list
        got = new_table[row_map[new_ptr[r] : new_ptr[r + 1]]].argmax(axis=1)
        o = old_rows[r]
        expected = old_table[old_ptr[o] : old_ptr[o + 1]].argmax(axis=1)
        np.testing.assert_array_equal(np.sort(got), np.sort(expected))
    from graphtier.tiering.plan.typed import format_typed_plan, plan_typed

    plan = plan_typed(
        out,
        budgets=["20%"],
        topology_budget="0",
        gpu_usable_bytes=2**30,
        replay=Replay(fanouts=FANOUTS, batch_size=256, epochs=1, seed=0, seeds=seeds),
    )
    assert plan.edges is not None and plan.edges.read_order and plan.to_json()["edge_features"]["read_order"]
    row = plan.edges.rows[0]
    assert row.gpu_rows == out.num_edges // 5 and row.best_share - 0.05 <= row.read_share <= row.best_share + 1e-9
    assert "edge features:" in format_typed_plan(plan)
