"""``graphtier info`` on a heterogeneous dataset: per node type and per relation counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import run
from tests.conftest import write_labelled_graph
from tests.typed_data import write_tiny_typed


def test_info_lists_types_and_relations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = write_tiny_typed(tmp_path / "typed")
    code, out, err = run(["info", str(tmp_path / "typed"), "--json"], capsys)
    assert code == 0, err
    info = json.loads(out)
    hetero = info["hetero"]
    assert hetero["target"] == "paper"
    assert [(t["name"], t["count"], t["feature_dim"]) for t in hetero["node_types"]] == [
        ("paper", 40, 8),
        ("author", 20, 0),
        ("field", 5, 0),
    ]
    assert hetero["node_types"][0]["feature_bytes"] == 40 * 8 * 4
    assert [tuple(r["type"]) for r in hetero["relations"]] == [r.type for r in ds.schema.relations]
    assert [r["num_edges"] for r in hetero["relations"]] == [r.num_edges for r in ds.schema.relations]
    assert sum(r["num_edges"] for r in hetero["relations"]) == info["num_edges"]
    assert info["in_degree"]["mean"] == pytest.approx(info["num_edges"] / info["num_nodes"])
    assert "features_paper" in info["arrays"] and info["symmetric"] is None
    code, out, err = run(["info", str(tmp_path / "typed")], capsys)
    assert code == 0, err
    assert "type paper" in out and "40 nodes, 8 float32 features" in out and "type field" in out
    assert "relation rev_writes" in out and "(paper -> author)" in out


def test_info_homogeneous_has_no_hetero_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_labelled_graph(tmp_path / "plain", num_nodes=50)
    code, out, err = run(["info", str(tmp_path / "plain"), "--json"], capsys)
    assert code == 0 and json.loads(out)["hetero"] is None
    code, out, err = run(["info", str(tmp_path / "plain")], capsys)
    assert "type " not in out and "relation " not in out
