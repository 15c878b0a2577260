"""The random edge split (graphtier/dataset/importers/split/holdout.py): hold_out_edges and --edge-split on every writer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset import Dataset
from graphtier.dataset.csc import csc_to_edges, edges_to_csc
from graphtier.dataset.importers import ImportOptions, import_edgelist
from graphtier.dataset.importers.split.holdout import hold_out_edges
from graphtier.dataset.synthetic.generate import generate
from graphtier.errors import OptionError
from tests.cli.helpers import run
from tests.conftest import shared_data


def edge_set(indptr: np.ndarray, indices: np.ndarray) -> set[tuple[int, int]]:
    src, dst = csc_to_edges(indptr, indices)
    return set(zip(src.tolist(), dst.tolist()))


def random_graph(n: int, m: int, seed: int, *, symmetric: bool) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    return edges_to_csc(src, dst, n, dedup=True)


def pairs_of(array: np.ndarray) -> set[tuple[int, int]]:
    return {(int(s), int(d)) for s, d in np.asarray(array).tolist()}


@pytest.mark.parametrize("k", [0, 7])
def test_undirected_split_holds_out_both_directions(k: int) -> None:
    indptr, indices = random_graph(200, 1500, 0, symmetric=True)
    full = edge_set(indptr, indices)
    held = hold_out_edges(indptr, indices, (0.7, 0.1, 0.2), seed=3, eval_negatives=k)
    assert held.split.undirected and held.split.meta["method"] == "random"
    graph = edge_set(held.indptr, held.indices)
    train, valid, test = (pairs_of(held.split.pairs(s).positives) for s in ("train", "valid", "test"))
    candidates = {(s, d) for s, d in full if s < d}
    assert train | valid | test == candidates and len(train) + len(valid) + len(test) == len(candidates)
    c = len(candidates)
    assert len(valid) == int(np.floor(c * 0.8 + 1e-9)) - int(np.floor(c * 0.7 + 1e-9))
    assert len(test) == c - int(np.floor(c * 0.8 + 1e-9))
    for s, d in valid | test:
        assert (s, d) not in graph and (d, s) not in graph
    for s, d in train:
        assert (s, d) in graph and (d, s) in graph
    assert graph == full - (valid | test) - {(d, s) for s, d in valid | test}
    assert held.removed == 2 * (len(valid) + len(test))
    assert {(s, s) for s in range(200) if (s, s) in full} <= graph  # self-loops stay, never held out
    for split in ("valid", "test"):
        pairs = held.split.pairs(split)
        negatives = pairs.negative_pairs()
        assert negatives.shape[0] == pairs.num_positives * (k or 1)
        assert pairs.per_positive == (k > 0)
        for s, d in negatives.tolist():
            assert s != d and (s, d) not in full and (d, s) not in full


def test_directed_split_removes_one_direction_and_is_seeded() -> None:
    indptr, indices = random_graph(150, 900, 1, symmetric=False)
    full = edge_set(indptr, indices)
    held = hold_out_edges(indptr, indices, (0.8, 0.1, 0.1), seed=5, undirected=False)
    again = hold_out_edges(indptr, indices, (0.8, 0.1, 0.1), seed=5, undirected=False)
    other = hold_out_edges(indptr, indices, (0.8, 0.1, 0.1), seed=6, undirected=False)
    for split in ("train", "valid", "test"):
        np.testing.assert_array_equal(held.split.pairs(split).positives, again.split.pairs(split).positives)
    np.testing.assert_array_equal(held.split.pairs("test").negatives, again.split.pairs("test").negatives)
    assert pairs_of(held.split.pairs("test").positives) != pairs_of(other.split.pairs("test").positives)
    graph = edge_set(held.indptr, held.indices)
    held_out = pairs_of(held.split.pairs("valid").positives) | pairs_of(held.split.pairs("test").positives)
    assert graph == full - held_out  # a reverse edge stays
    assert pairs_of(held.split.pairs("train").positives) == {(s, d) for s, d in graph if s != d}


def test_too_few_edges_is_an_option_error() -> None:
    indptr, indices = edges_to_csc(np.array([0, 1, 2]), np.array([1, 2, 0]), 3)
    with pytest.raises(OptionError, match=r"^edge_split=: expected at least one valid edge for the fraction 0.1"):
        hold_out_edges(indptr, indices, (0.8, 0.1, 0.1), seed=0)


def test_negatives_of_a_complete_graph_are_an_option_error() -> None:
    n = 12
    src, dst = np.meshgrid(np.arange(n), np.arange(n))
    indptr, indices = edges_to_csc(src.reshape(-1), dst.reshape(-1), n, drop_self_loops=True)
    with pytest.raises(OptionError, match=r"^eval_negatives=: expected .* negative pairs .* too dense"):
        hold_out_edges(indptr, indices, (0.5, 0.25, 0.25), seed=0)
    with pytest.raises(OptionError, match=r"^eval_negatives=: expected 3 negative destinations .* too dense"):
        hold_out_edges(indptr, indices, (0.5, 0.25, 0.25), seed=0, eval_negatives=3)


def test_options_are_checked_before_any_work() -> None:
    with pytest.raises(OptionError, match=r"edge_split=: expected three fractions in \[0, 1\] summing to 1"):
        ImportOptions(edge_split="0.5,0.2,0.1")
    with pytest.raises(
        OptionError, match=r"eval_negatives=: expected an edge split \(edge_split= or edge_split_files="
    ):
        ImportOptions(eval_negatives=5).check_inputs()  # at the start of every importer (MovieLens has its own split)
    with pytest.raises(OptionError, match=r"eval_negatives= expected an integer >= 0"):
        ImportOptions(edge_split="0.8,0.1,0.1", eval_negatives=-1)
    assert ImportOptions(edge_split="0.8,0.1,0.1").edge_split == (0.8, 0.1, 0.1)


@pytest.mark.parametrize(
    ("fractions", "held"), [((1.0, 0.0, 0.0), (0, 0)), ((0.9, 0.1, 0.0), (1, 0)), ((0.9, 0.0, 0.1), (0, 1))]
)
def test_a_zero_valid_or_test_share_is_an_empty_split(tmp_path: Path, fractions: tuple, held: tuple) -> None:
    """``--edge-split 1,0,0`` (train on every edge) and a zero valid or test share: empty pair files, no error."""
    indptr, indices = random_graph(100, 600, 1, symmetric=True)
    split = hold_out_edges(indptr, indices, fractions, seed=0).split
    for name, nonempty in zip(("valid", "test"), held):
        pairs = split.pairs(name)
        assert (pairs.positives.shape[0] > 0) == bool(nonempty) and pairs.negatives.shape[0] == pairs.positives.shape[0]
    assert split.pairs("train").positives.shape[0] > 0
    dataset = generate(tmp_path / "g", nodes=200, avg_degree=4, feature_dim=4, edge_split=",".join(map(str, fractions)))
    assert Dataset.open(dataset.path).link is not None


def test_a_zero_training_share_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(OptionError, match=r"^edge_split=: expected a training share > 0 .* found \(0.0, 0.5, 0.5\)"):
        ImportOptions(edge_split=(0, 0.5, 0.5))
    (tmp_path / "g.txt").write_text("0 1\n1 2\n2 0\n")
    code, out, err = run(
        ["prepare", "edgelist", str(tmp_path / "g.txt"), str(tmp_path / "o"), "--edge-split", "0,0.5,0.5"], capsys
    )
    assert code == 2 and err.strip() == (
        "graphtier: error: --edge-split: expected a training share > 0 (the pairs a link model learns from), "
        "found (0.0, 0.5, 0.5)"
    )
    assert not (tmp_path / "o").exists()


def test_edgelist_import_with_edge_split_keeps_the_node_split(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    edges = rng.integers(0, 300, (1200, 2))
    (tmp_path / "g.txt").write_text("".join(f"{s} {d}\n" for s, d in edges.tolist()))
    dataset = import_edgelist(
        tmp_path / "g.txt",
        tmp_path / "out",
        undirected=True,
        edge_split="0.8,0.1,0.1",
        split="0.5,0.25,0.25",
        synthetic_labels=3,
        seed=4,
    )
    reopened = Dataset.open(dataset.path)
    assert reopened.link is not None and reopened.train_idx is not None
    assert reopened.num_edges == int(reopened.indptr[-1]) == reopened.meta["num_edges"]
    assert reopened.meta["source"]["options"]["edge_split"] == [0.8, 0.1, 0.1]
    graph = edge_set(reopened.indptr, reopened.indices)
    for s, d in reopened.link.pairs("test").positives.tolist():
        assert (s, d) not in graph and (d, s) not in graph


def test_generate_with_edge_split(tmp_path: Path) -> None:
    dataset = generate(tmp_path / "g", nodes=500, avg_degree=6, feature_dim=4, edge_split=(0.8, 0.1, 0.1))
    assert dataset.link is not None and dataset.link.undirected
    assert dataset.meta["link"]["train"] == dataset.link.pairs("train").num_positives > 0
    with pytest.raises(OptionError, match="edge_split=: expected three fractions"):
        generate(tmp_path / "h", nodes=500, avg_degree=6, edge_split="0.8,0.3")


def test_prepare_planetoid_cora_with_edge_split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cora = shared_data("cora")
    out = tmp_path / "cora"
    code, printed, err = run(
        ["prepare", "planetoid", str(cora), str(out), "--edge-split", "0.85,0.05,0.1", "--eval-negatives", "20"],
        capsys,
    )
    assert code == 0, err
    assert "note: edge split: 4,486 train, 264 valid, 528 test pairs; 1,584 stored edges" in printed
    dataset = Dataset.open(out)
    link = json.loads((out / "meta.json").read_text())["link"]
    assert link["fractions"] == [0.85, 0.05, 0.1] and link["eval_negatives"] == 20 and link["undirected"]
    assert (link["train"], link["valid"], link["test"]) == (4486, 264, 528)  # Cora's 5,278 undirected edges
    assert dataset.num_edges == 10556 - 2 * (264 + 528)
    assert dataset.link.pairs("test").negatives.shape == (528, 20)
    assert dataset.train_idx is not None and dataset.train_idx.shape[0] == 140  # the public node split stays
    code, _, err = run(["prepare", "planetoid", str(cora), str(tmp_path / "x"), "--edge-split", "0.9,0.2,0.1"], capsys)
    assert code == 2 and "graphtier: error: --edge-split: expected three fractions" in err


def test_prepare_edgelist_with_only_an_edge_split_needs_no_node_split(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edges = np.random.default_rng(1).integers(0, 100, (400, 2))
    (tmp_path / "g.txt").write_text("".join(f"{s} {d}\n" for s, d in edges.tolist()))
    args = ["prepare", "edgelist", str(tmp_path / "g.txt"), str(tmp_path / "out"), "--undirected"]
    code, printed, err = run([*args, "--edge-split", "0.8,0.1,0.1", "--eval-negatives", "3"], capsys)
    assert code == 0, err
    assert "note: edge split:" in printed and "no train/valid/test split" not in printed
    assert Dataset.open(tmp_path / "out").link.pairs("valid").negatives.shape[1] == 3
    code, printed, err = run([*args, "--eval-negatives", "3", "--overwrite"], capsys)
    assert (
        code == 2
        and "graphtier: error: --eval-negatives: expected an edge split (--edge-split or --edge-split-files)" in err
    )
