"""The MAG-like typed generator (``graphtier generate --hetero mag``) and its bipartite edge kernel."""

from __future__ import annotations

import json
from pathlib import Path

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.dataset import resources
from graphtier.dataset.format import Dataset
from graphtier.dataset.synthetic import _synthetic_kernels as kernels
from graphtier.dataset.synthetic import generate as synthetic
from graphtier.dataset.synthetic import synthetic_mag
from graphtier.errors import OptionError, ResourceError
from tests.cli.helpers import run

RELATIONS = [rel for rel, _, _ in synthetic_mag.RELATIONS]


def _tables(count: int, classes: int, seed: int) -> synthetic_mag.Tables:
    labels = synthetic.node_classes(seed, count, classes)
    weights = synthetic.degree_weights(seed, count, 2.1, 30.0)
    return synthetic.class_tables(labels, weights, classes)


# ---------------------------------------------------------------------------------------------- kernel
@settings(max_examples=25, deadline=None)
@given(
    dst_count=st.integers(1, 120),
    src_count=st.integers(1, 120),
    classes=st.integers(1, 6),
    homophily=st.sampled_from([0.0, 0.5, 0.9, 1.0]),
    seed=st.integers(0, 1000),
    first=st.integers(0, 10**9),
)
def test_bipartite_kernel_matches_reference(
    dst_count: int, src_count: int, classes: int, homophily: float, seed: int, first: int
) -> None:
    dst_tables, src_tables = _tables(dst_count, classes, seed), _tables(src_count, classes, seed + 1)
    count = 400
    src = np.empty(count, dtype=np.int32)
    dst = np.empty(count, dtype=np.int32)
    key = kernels.stream_key(seed, 7)
    kernels.sample_bipartite_edges(np.uint64(key), np.int64(first), *dst_tables, *src_tables, homophily, src, dst)
    ref_src, ref_dst = kernels.sample_bipartite_edges_reference(key, first, count, dst_tables, src_tables, homophily)
    np.testing.assert_array_equal(src, ref_src)
    np.testing.assert_array_equal(dst, ref_dst)
    assert src.min() >= 0 and src.max() < src_count and dst.min() >= 0 and dst.max() < dst_count


def test_bipartite_kernel_keeps_communities_and_skips_empty_ones() -> None:
    classes = 4
    dst_labels = synthetic.node_classes(1, 500, classes)
    src_labels = np.array([0, 1, 1, 3, 3, 3], dtype=np.int64)  # class 2 has no sources
    dst_tables = synthetic.class_tables(dst_labels, np.ones(500), classes)
    src_tables = synthetic.class_tables(src_labels, np.ones(6), classes)
    count = 200_000
    src = np.empty(count, dtype=np.int32)
    dst = np.empty(count, dtype=np.int32)
    kernels.sample_bipartite_edges(np.uint64(5), np.int64(0), *dst_tables, *src_tables, 0.8, src, dst)
    same = src_labels[src] == dst_labels[dst]
    into_filled = dst_labels[dst] != 2
    assert same[into_filled].mean() == pytest.approx(0.8, abs=0.01)
    assert not same[~into_filled].any()  # destinations of the empty source class draw elsewhere


# ---------------------------------------------------------------------------------------------- dataset
def _generate(path: Path, **options: object) -> Dataset:
    defaults: dict[str, object] = dict(nodes=2000, feature_dim=16, seed=4, train_fraction=0.5)
    defaults.update(options)
    return synthetic_mag.generate_mag(path, **defaults)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def mag(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return _generate(tmp_path_factory.mktemp("mag") / "mag")


def test_types_relations_and_counts(mag: Dataset) -> None:
    reopened = Dataset.open(mag.path)  # validates every array against meta.json
    schema = reopened.schema
    assert reopened.is_hetero and schema.target == "paper"
    assert [(t.name, t.count) for t in schema.node_types] == [
        ("paper", 2000), ("author", 2000), ("institution", 40), ("field", 20)
    ]  # fmt: skip
    reverse = [(dst, f"rev_{name}", src) for src, name, dst in RELATIONS]
    assert [r.type for r in schema.relations] == RELATIONS + reverse
    assert set(reopened.type_features) == {"paper"} and reopened.type_features["paper"].shape == (2000, 16)
    assert reopened.labels.shape == (2000,) and reopened.num_classes == synthetic.DEFAULT_NUM_CLASSES
    drawn = json.loads((mag.path / "meta.json").read_text())["source"]["edges_drawn"]
    assert drawn == {"cites": 20000, "writes": 8000, "affiliated_with": 2000, "has_topic": 8000}
    for rel in schema.relations[:4]:
        assert 0.3 * drawn[rel.name] < rel.num_edges <= drawn[rel.name], rel  # repeated edges kept once (20 fields)
        back = schema.relation((rel.dst, f"rev_{rel.name}", rel.src))
        assert back.num_edges == rel.num_edges


def test_relation_ids_stay_in_their_types(mag: Dataset) -> None:
    schema = mag.schema
    for rel in schema.relations:
        indptr, indices = mag.relation_csc(rel)
        src = schema.node_type(rel.src)
        assert indices.size == rel.num_edges and indptr.size == schema.node_type(rel.dst).count + 1
        assert indices.min() >= src.offset and indices.max() < src.stop, rel
        if rel.src == rel.dst:
            rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr)) + src.offset
            assert not np.any(rows == indices), "self-citation"
        lists = np.split(np.asarray(indices), np.asarray(indptr[1:-1] - indptr[0]))
        assert all(np.all(np.diff(ids) > 0) for ids in lists), "sorted, no duplicates"


def test_papers_follow_power_law_and_communities(mag: Dataset) -> None:
    schema = mag.schema
    indptr, indices = mag.relation_csc(schema.relation("cites"))
    cited = np.diff(indptr)
    assert cited.max() > 8 * cited.mean()  # hubs
    labels = np.asarray(mag.labels)
    rows = np.repeat(np.arange(cited.size), cited)
    same = labels[np.asarray(indices)] == labels[rows]
    assert same.mean() > 0.7  # homophily 0.8 minus a little for the cross-community share of hubs


def test_graph_predicts_labels_better_than_paper_features(mag: Dataset) -> None:
    """Nearest centroid on a paper's own features vs on the mean of its cited and citing papers' features."""
    x = np.asarray(mag.type_features["paper"], dtype=np.float64)
    labels = np.asarray(mag.labels)
    train, test = mag.train_idx, mag.test_idx
    schema = mag.schema
    neighbour_sum = x.copy()
    for name in ("cites", "rev_cites"):
        indptr, indices = mag.relation_csc(schema.relation(name))
        rows = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
        np.add.at(neighbour_sum, rows, x[np.asarray(indices)])

    def accuracy(z: np.ndarray) -> float:
        centroids = np.stack([z[train][labels[train] == c].mean(0) for c in range(mag.num_classes)])
        return float((np.argmax(z[test] @ centroids.T, 1) == labels[test]).mean())

    own, with_graph = accuracy(x), accuracy(neighbour_sum)
    assert with_graph > own + 0.2, (own, with_graph)


def test_splits_are_papers(mag: Dataset) -> None:
    train, valid, test = mag.train_idx, mag.valid_idx, mag.test_idx
    assert (train.size, valid.size, test.size) == (1000, 20, 40)
    assert np.intersect1d(train, test).size == 0 and test.max() < 2000


def test_deterministic_for_seed_chunk_size_and_threads(mag: Dataset, tmp_path: Path) -> None:
    files = sorted(p.name for p in mag.path.glob("*.npy"))
    assert "features_paper.npy" in files
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        again = _generate(tmp_path / "again", chunk_edges=333)
    finally:
        numba.set_num_threads(previous)
    assert sorted(p.name for p in again.path.glob("*.npy")) == files
    for name in files:
        assert (again.path / name).read_bytes() == (mag.path / name).read_bytes(), name
    other = _generate(tmp_path / "other", seed=5)
    assert (other.path / "indices.npy").read_bytes() != (mag.path / "indices.npy").read_bytes()


def test_without_reverse_and_degrees(tmp_path: Path) -> None:
    dataset = _generate(tmp_path / "plain", nodes=300, add_reverse=False, degrees="cites=2,has_topic=0", feature_dim=0)
    assert [r.name for r in dataset.schema.relations] == ["cites", "writes", "affiliated_with", "has_topic"]
    assert dataset.schema.relation("has_topic").num_edges == 0 and dataset.type_features == {}
    assert [t.count for t in dataset.schema.node_types] == [300, 300, 6, 3]


@pytest.mark.parametrize(
    ("options", "flag"),
    [
        (dict(degrees="cites=-1"), "--relation-degrees"),
        (dict(degrees="knows=3"), "--relation-degrees"),
        (dict(degrees="cites"), "--relation-degrees"),
        (dict(nodes=0), "--nodes"),
        (dict(homophily=2.0), "--homophily"),
        (dict(edge_split="0.8,0.1,0.1"), "--split-relation"),
        (dict(split_relation="writes"), "--edge-split"),
        (dict(edge_split="0.8,0.1,0.1", split_relation="knows"), "--split-relation"),
        (dict(undirected=False), "--directed"),
    ],
)
def test_bad_options_raise_one_line_errors(tmp_path: Path, options: dict[str, object], flag: str) -> None:
    with pytest.raises(OptionError) as error:
        _generate(tmp_path / "bad", **options)
    assert flag in error.value.render(cli=True) and "\n" not in str(error.value)
    assert list(tmp_path.iterdir()) == []


def test_size_check_refuses_before_writing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory is checked against the drawn edges (linear) before anything is written."""
    monkeypatch.setattr(resources, "available_memory", lambda: 4 * 22_000)
    with pytest.raises(ResourceError, match="typed edges") as error:
        _generate(tmp_path / "big", nodes=1000)  # 22,000 drawn edges and their reverses need 4 bytes each at least
    assert "\n" not in str(error.value) and "available" in str(error.value)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------- CLI
def test_cli_generates_hetero_mag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cli"
    code, stdout, stderr = run(
        ["generate", "--hetero", "mag", str(out), "--nodes", "500", "--avg-degree", "3", "--feature-dim", "8", "-q"],
        capsys,
    )
    assert code == 0, stderr
    assert "500 paper, 500 author, 10 institution, 5 field" in stdout and "8 relations" in stdout
    meta = json.loads((out / "meta.json").read_text())
    assert meta["source"]["edges_drawn"]["cites"] == 1500 and meta["source"]["options"]["add_reverse"] is True


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--nodes", "100"], "--avg-degree"),
        (["--nodes", "100", "--avg-degree", "2", "--no-reverse"], "--add-reverse"),
        (["--nodes", "100", "--avg-degree", "2", "--relation-degrees", "cites=3"], "--relation-degrees"),
    ],
)
def test_cli_homogeneous_refuses_hetero_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], flag: str
) -> None:
    code, _, stderr = run(["generate", str(tmp_path / "g"), *argv], capsys)
    assert code == 2 and flag in stderr and stderr.count("\n") == 1
    assert not (tmp_path / "g").exists()
