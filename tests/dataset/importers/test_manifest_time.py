"""A manifest relation's ``time`` column (issue 38): every relation's edges keep their times through the typed CSC
build, --add-reverse (a reverse edge shares its edge's time), the typed edge split and reorder; a relation without
times beside timed ones, or a bad time, is one line."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset import Dataset
from graphtier.dataset.importers.formats.manifest import import_manifest
from tests.dataset.importers.helpers import assert_user_error, run_cli


def write_manifest(root: Path, *, second_time: object = "when", rng_seed: int = 0) -> Path:
    rng = np.random.default_rng(rng_seed)
    users, items, tags = 30, 20, 5
    rates = "".join(
        f"{u},{i},{r},{t}\n" for u, i, r, t in zip(*(rng.integers(0, k, 300) for k in (users, items, 5, 90)))
    )
    (root / "rates.csv").write_text("user,item,rating,when\n" + rates)
    tagged = "".join(f"{i} {g} {t}\n" for i, g, t in zip(*(rng.integers(0, k, 60) for k in (items, tags, 40))))
    (root / "tagged.txt").write_text("item tag when\n" + tagged)
    edges = [
        {"type": ["user", "rates", "item"], "path": str(root / "rates.csv"), "time": "when"},
        {"type": ["item", "tagged", "tag"], "path": str(root / "tagged.txt")},
    ]
    if second_time is not None:
        edges[1]["time"] = second_time
    manifest = {
        "nodes": {"user": {"count": users}, "item": {"count": items}, "tag": {"count": tags}},
        "edges": edges,
        "target": "item",
    }
    path = root / "m.json"
    path.write_text(json.dumps(manifest))
    return path


def input_times(root: Path) -> dict[tuple[str, int, int], list[int]]:
    """(relation name, local src, local dst) -> the times of the input copies, sorted."""
    out: dict[tuple[str, int, int], list[int]] = defaultdict(list)
    for name, file, sep in (("rates", "rates.csv", ","), ("tagged", "tagged.txt", " ")):
        rows = np.loadtxt(root / file, delimiter=sep, skiprows=1, dtype=np.int64, ndmin=2)
        for row in rows:
            out[(name, int(row[0]), int(row[1]))].append(int(row[-1]))
    return {k: sorted(v) for k, v in out.items()}


def stored_times(dataset: Dataset) -> dict[tuple[str, int, int], list[int]]:
    """(relation name, local src, local dst) -> the stored times, via perm.npy when reordered."""
    schema = dataset.schema
    perm = np.asarray(dataset.extra["perm"]) if "perm" in dataset.extra else np.arange(dataset.num_nodes)
    out: dict[tuple[str, int, int], list[int]] = defaultdict(list)
    for rel in schema.relations:
        indptr, sources = dataset.relation_csc(rel)
        src_type, dst_type = schema.node_type(rel.src), schema.node_type(rel.dst)
        times = np.asarray(dataset.edge_time)[int(indptr[0]) : int(indptr[-1])]
        for v in range(dst_type.count):
            for k in range(int(indptr[v] - indptr[0]), int(indptr[v + 1] - indptr[0])):
                src = int(perm[int(sources[k])]) - src_type.offset
                dst = int(perm[dst_type.offset + v]) - dst_type.offset
                out[(rel.name, src, dst)].append(int(times[k]))
    return {k: sorted(v) for k, v in out.items()}


def test_relation_times_follow_their_edges(tmp_path: Path) -> None:
    ds = import_manifest(write_manifest(tmp_path), tmp_path / "d", add_reverse=True)
    want = {k: v[:1] for k, v in input_times(tmp_path).items()}  # repeats merged: the earliest time
    want |= {(f"rev_{name}", d, s): v for (name, s, d), v in want.items()}
    assert stored_times(ds) == want
    assert ds.meta["edge_time"]["min"] == min(v[0] for v in want.values())
    order, indptr, times = np.asarray(ds.edge_time_order), ds.indptr, np.asarray(ds.edge_time)
    for row in range(indptr.shape[0] - 1):
        positions = np.arange(indptr[row], indptr[row + 1])
        np.testing.assert_array_equal(order[positions], positions[np.lexsort((positions, times[positions]))])


def test_typed_edge_split_and_reorder_keep_the_times(tmp_path: Path) -> None:
    ds = import_manifest(
        write_manifest(tmp_path), tmp_path / "d", edge_split="0.8,0.1,0.1", split_relation="user,rates,item"
    )
    full = {k: v[:1] for k, v in input_times(tmp_path).items()}
    stored = stored_times(ds)
    assert len(stored) < len(full) and all(full[k] == v for k, v in stored.items())
    result = run_cli("reorder", str(ds.path), str(tmp_path / "r"), "--score", "degree")
    assert result.returncode == 0, result.stderr
    reordered = Dataset.open(tmp_path / "r")
    assert not np.array_equal(np.asarray(reordered.extra["perm"]), np.arange(ds.num_nodes))
    assert stored_times(reordered) == stored


def test_a_relation_without_times_beside_timed_ones_is_one_line(tmp_path: Path) -> None:
    result = run_cli("prepare", "manifest", str(write_manifest(tmp_path, second_time=None)), str(tmp_path / "o"))
    assert_user_error(result, "tagged.txt", "relation ('item', 'tagged', 'tag')", "expected edge times")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("time", "fragments"),
    [
        ("nope", ["edges[1].time", "item, tag, when", "'nope'"]),
        (1, ["edges[1].time", "index 2 or more"]),
        (True, ["edges[1].time"]),
    ],
)
def test_bad_time_keys_are_one_line(tmp_path: Path, time: object, fragments: list[str]) -> None:
    result = run_cli("prepare", "manifest", str(write_manifest(tmp_path, second_time=time)), str(tmp_path / "o"))
    assert_user_error(result, *fragments)


def test_a_float_time_is_one_line(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path)
    (tmp_path / "tagged.txt").write_text("item tag when\n1 2 3\n2 3 4.5\n")
    result = run_cli("prepare", "manifest", str(manifest), str(tmp_path / "o"))
    assert_user_error(result, "tagged.txt", "line 3", "integer time in column 2", "4.5")
