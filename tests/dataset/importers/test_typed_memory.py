"""Typed import in bounded memory: each relation goes through the homogeneous edge spill and CSC builder, with a
memory check before each allocation that names the relation and its file (issue 36)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset import resources
from graphtier.dataset.csc import edges_to_csc
from graphtier.dataset.importers.formats.manifest import import_manifest
from graphtier.dataset.typed_graph import TypedEdges, build_typed_csc, spill_relation, with_reverse
from graphtier.errors import ResourceError
from tests.cli.helpers import run


def _manifest(tmp_path: Path, edges: int) -> Path:
    rng = np.random.default_rng(0)
    np.save(tmp_path / "cites.npy", np.stack([rng.integers(0, 50, edges), rng.integers(0, 50, edges)], 1))
    (tmp_path / "writes.txt").write_text("0 1\n1 2\n2 3\n")
    manifest = {
        "nodes": {"paper": {"count": 50}, "author": {"count": 3}},
        "edges": [
            {"type": ["author", "writes", "paper"], "path": "writes.txt"},
            {"type": ["paper", "cites", "paper"], "path": "cites.npy"},
        ],
    }
    path = tmp_path / "m.json"
    path.write_text(json.dumps(manifest))
    return path


def test_spilled_relations_build_the_in_memory_csc(tmp_path: Path) -> None:
    """Spilled edges (both directions, several chunks) give the CSC of edges_to_csc with dedup, sources global."""
    rng = np.random.default_rng(1)
    src, dst = rng.integers(0, 7, 500), rng.integers(0, 40, 500)
    blocks = [(src[i : i + 64], dst[i : i + 64]) for i in range(0, 500, 64)]
    spilled = with_reverse([spill_relation(("a", "r", "b"), iter(blocks), tmp_path, "f.txt")])
    in_memory = with_reverse([TypedEdges(("a", "r", "b"), src, dst, "f.txt")])
    counts = {"a": 7, "b": 40}
    got, expected = build_typed_csc(counts, spilled), build_typed_csc(counts, in_memory)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)
    indptr, indices = edges_to_csc(src, dst, 40, dedup=True)
    np.testing.assert_array_equal(got[0][:41], indptr)
    np.testing.assert_array_equal(got[1][: indices.size], indices)
    reverse_indptr, reverse_indices = edges_to_csc(dst, src, 7, dedup=True)
    np.testing.assert_array_equal(got[1][indices.size :], reverse_indices + 7)  # global ids: b follows a
    assert got[2] == [indices.size, reverse_indices.size]


def test_each_relation_is_checked_before_its_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """The build of the second relation is refused (one line naming it, its file, bytes needed and available)."""
    relations = [
        TypedEdges(("a", "small", "b"), np.arange(10) % 10, np.arange(10) % 10, "small.txt"),
        TypedEdges(("a", "big", "a"), np.arange(3000) % 10, np.arange(3000) % 10, "big.npy"),
    ]
    monkeypatch.setattr(resources, "available_memory", lambda: 2000)
    with pytest.raises(ResourceError) as error:
        build_typed_csc({"a": 10, "b": 10}, relations)
    message = str(error.value)
    assert "\n" not in message and message.startswith("big.npy: relation ('a', 'big', 'a'): building the CSC")
    assert "12,088 bytes" in message and "available" in message  # 3,000 int32 indices and an int64 indptr of 11


def test_manifest_refused_before_allocating(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Memory too small for the typed CSC: one line naming the largest relation's file, nothing written."""
    manifest = _manifest(tmp_path, 20_000)
    monkeypatch.setattr(resources, "available_memory", lambda: 50_000)
    with pytest.raises(ResourceError) as error:
        import_manifest(manifest, tmp_path / "out")
    message = str(error.value)
    assert "\n" not in message and "cites.npy, 20,000 edges" in message
    assert "needs about" in message and "available" in message
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".*"))


def test_manifest_refusal_on_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = _manifest(tmp_path, 20_000)
    monkeypatch.setattr(resources, "available_memory", lambda: 50_000)
    code, _, stderr = run(["prepare", "manifest", str(manifest), str(tmp_path / "out")], capsys)
    assert code == 2 and stderr.count("\n") == 1 and stderr.startswith("graphtier: error: ")
    assert "typed CSC" in stderr and "cites.npy" in stderr and not (tmp_path / "out").exists()


def test_manifest_import_leaves_no_spill(tmp_path: Path) -> None:
    ds = import_manifest(_manifest(tmp_path, 2_000), tmp_path / "out")
    assert not list((tmp_path / "out").glob("*.spill"))
    assert [r.num_edges for r in ds.schema.relations][0] == 3
