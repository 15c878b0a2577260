"""OGB's heterogeneous raw layout (ogbn-mag) through ``prepare ogb``: small gzip files written by the test."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset import Dataset
from graphtier.dataset.importers.formats.ogb import import_ogb
from graphtier.errors import DatasetError, OptionError
from tests.cli.helpers import run

COUNTS = {"author": 4, "field_of_study": 3, "institution": 2, "paper": 6}
EDGES = {
    ("author", "affiliated_with", "institution"): [(0, 0), (1, 1), (2, 1), (3, 0)],
    ("author", "writes", "paper"): [(0, 0), (0, 1), (1, 2), (2, 3), (3, 4), (3, 5)],
    ("paper", "cites", "paper"): [(1, 0), (2, 0), (3, 1), (5, 4)],
    ("paper", "has_topic", "field_of_study"): [(0, 0), (1, 2), (2, 1), (3, 0), (4, 2), (5, 1)],
}


def _gz(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as stream:
        stream.write("".join(f"{line}\n" for line in lines))


def write_mag(root: Path) -> np.ndarray:
    """A tiny ogbn-mag-like folder; returns the paper features [6, 2]."""
    raw = root / "raw"
    _gz(raw / "num-node-dict.csv.gz", [",".join(COUNTS), ",".join(str(c) for c in COUNTS.values())])
    for (src, rel, dst), pairs in EDGES.items():
        folder = raw / "relations" / f"{src}___{rel}___{dst}"
        _gz(folder / "edge.csv.gz", [f"{s},{d}" for s, d in pairs])
        _gz(folder / "num-edge-list.csv.gz", [str(len(pairs))])
        _gz(folder / "edge_reltype.csv.gz", ["0"] * len(pairs))
    feats = np.arange(12, dtype=np.float32).reshape(6, 2) / 4
    _gz(raw / "node-feat" / "paper" / "node-feat.csv.gz", [",".join(f"{v:g}" for v in row) for row in feats])
    _gz(raw / "node-label" / "paper" / "node-label.csv.gz", ["0", "1", "2", "1", "0", "2"])
    for split, ids in (("train", [0, 1, 2]), ("valid", [3]), ("test", [4, 5])):
        _gz(root / "split" / "time" / "paper" / f"{split}.csv.gz", [str(i) for i in ids])
    return feats


def test_ogb_mag_layout(tmp_path: Path) -> None:
    feats = write_mag(tmp_path / "mag")
    ds = import_ogb(tmp_path / "mag", tmp_path / "out")
    schema = ds.schema
    assert ds.is_hetero and schema.target == "paper" and ds.num_classes == 3
    assert [(t.name, t.count, t.feature_dim) for t in schema.node_types] == [
        ("author", 4, 0),
        ("field_of_study", 3, 0),
        ("institution", 2, 0),
        ("paper", 6, 2),
    ]
    assert [(r.type, r.num_edges) for r in schema.relations] == [(k, len(v)) for k, v in EDGES.items()]
    assert np.array_equal(ds.type_features["paper"], feats)
    assert ds.labels.tolist() == [0, 1, 2, 1, 0, 2]
    assert ds.train_idx.tolist() == [0, 1, 2] and ds.test_idx.tolist() == [4, 5]
    indptr, sources = ds.relation_csc(schema.relation("cites"))
    local = indptr - indptr[0]
    paper = schema.node_type("paper").offset
    assert (sources[local[0] : local[1]] - paper).tolist() == [1, 2]
    assert ds.meta["source"]["importer"] == "ogb"


def test_ogb_mag_add_reverse_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_mag(tmp_path / "mag")
    code, out, err = run(["prepare", "ogb", str(tmp_path / "mag"), str(tmp_path / "out"), "--add-reverse"], capsys)
    assert code == 0, err
    schema = Dataset.open(tmp_path / "out").schema
    assert len(schema.relations) == 8
    assert schema.relation("rev_writes").type == ("paper", "rev_writes", "author")


def test_ogb_mag_bad_input(tmp_path: Path) -> None:
    write_mag(tmp_path / "mag")
    folder = tmp_path / "mag" / "raw" / "relations" / "author___writes___paper"
    _gz(folder / "edge.csv.gz", ["0,0", "4,1"])
    _gz(folder / "num-edge-list.csv.gz", ["2"])
    with pytest.raises(DatasetError, match=r"edge\.csv\.gz: relation \('author', 'writes', 'paper'\): expected author"):
        import_ogb(tmp_path / "mag", tmp_path / "out")
    _gz(folder / "num-edge-list.csv.gz", ["3"])
    with pytest.raises(DatasetError, match=r"relation \('author', 'writes', 'paper'\): expected 3 edges"):
        import_ogb(tmp_path / "mag", tmp_path / "out")
    (tmp_path / "mag" / "raw" / "relations" / "author___writes___journal").mkdir()
    with pytest.raises(DatasetError, match="unknown node type 'journal'"):
        import_ogb(tmp_path / "mag", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_ogb_mag_refuses_homogeneous_options(tmp_path: Path) -> None:
    write_mag(tmp_path / "mag")
    with pytest.raises(OptionError, match="undirected"):
        import_ogb(tmp_path / "mag", tmp_path / "out", undirected=True)


def test_add_reverse_on_homogeneous_ogb_is_refused(tmp_path: Path) -> None:
    raw = tmp_path / "ogb" / "raw"
    _gz(raw / "edge.csv.gz", ["0,1"])
    _gz(raw / "num-node-list.csv.gz", ["2"])
    with pytest.raises(OptionError, match="add_reverse=: expected a heterogeneous OGB layout"):
        import_ogb(tmp_path / "ogb", tmp_path / "out", add_reverse=True)


def test_ogb_mag_paper_years_become_node_and_edge_times(tmp_path: Path) -> None:
    write_mag(tmp_path / "mag")
    years = [2015, 2016, 2017, 2018, 2019, 2019]
    _gz(tmp_path / "mag" / "raw" / "node_year" / "paper" / "node_year.csv.gz", [str(y) for y in years])
    ds = import_ogb(tmp_path / "mag", tmp_path / "out", add_reverse=True)
    schema = ds.schema
    paper = schema.node_type("paper")
    expected = np.full(ds.num_nodes, 2015)  # a type without years exists from the earliest year
    expected[paper.offset : paper.offset + paper.count] = years
    assert ds.node_time.tolist() == expected.tolist()
    assert ds.meta["node_time"] == {"unit": "year", "min": 2015, "max": 2019}
    for rel in schema.relations:  # every edge, reverse relations too, at its later end's year
        indptr, sources = ds.relation_csc(rel)
        dst = schema.node_type(rel.dst)
        times = np.asarray(ds.edge_time)[indptr[0] : indptr[-1]]
        ends = np.repeat(np.arange(dst.count) + dst.offset, np.diff(indptr))
        assert times.tolist() == np.maximum(expected[sources], expected[ends]).tolist(), rel


def test_typed_temporal_node_classification_trains_on_mag_years(tmp_path: Path) -> None:
    from graphtier.train import train

    write_mag(tmp_path / "mag")
    _gz(tmp_path / "mag" / "raw" / "node_year" / "paper" / "node_year.csv.gz", ["2015", "2016", "2017", "2018",
                                                                                 "2019", "2019"])  # fmt: skip
    ds = import_ogb(tmp_path / "mag", tmp_path / "out", add_reverse=True)
    options = dict(model="rgcn", fanouts=(3, 3), hidden=8, epochs=2, batch_size=2, quiet=True, num_threads=1,
                   featureless="embedding", seed=0)  # fmt: skip
    timed = train(ds, temporal="uniform", **options).report
    static = train(ds, **options).report
    assert all(np.isfinite(e["loss"]) for e in timed["epochs"]) and timed["final"]["test_acc"] is not None
    assert [e["loss"] for e in timed["epochs"]] != [e["loss"] for e in static["epochs"]]  # the cut removes edges
