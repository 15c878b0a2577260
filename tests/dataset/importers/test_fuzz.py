"""Fuzzing every importer with malformed inputs (issue 14): no traceback, no crash, no garbage.

Hypothesis generates inputs of each ``graphtier prepare`` format: random bytes, truncations, wrong
dtypes / shapes / byte orders, out-of-range ids, huge or negative counts, non-finite values. Every
run must either import a dataset that opens and validates, or fail with exit code 2 and exactly
one ``graphtier: error:`` line, no traceback, nothing left next to OUTPUT, and an existing dataset
at OUTPUT (replaced with --overwrite) left byte for byte as it was. Inputs that are malformed by
construction must fail. The module runs in well under a minute (few, small examples).
"""

from __future__ import annotations

import gzip
import hashlib
import pickle
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from graphtier.dataset.format import Dataset
from tests.conftest import write_labelled_graph

from .helpers import assert_user_error, run_cli

FUZZ = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)

INT_DTYPES = ["<i1", "<i2", "<i4", "<i8", ">i4", ">i8", "<u1", "<u4", "<u8", ">u8"]
ANY_DTYPES = [*INT_DTYPES, "<f2", "<f4", ">f4", "<f8", "|b1", "<c8", "<U3"]
NON_FINITE = [np.nan, np.inf, -np.inf]


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@contextmanager
def _workspace() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="gt-fuzz-") as tmp:
        yield Path(tmp)


def _run(args: list[str], root: Path, replace_existing: bool, must_fail: bool) -> None:
    """Run ``graphtier prepare ARGS SOURCE.. OUTPUT`` and check the contract of issue 14."""
    out_parent = root / "out"
    out_parent.mkdir(exist_ok=True)
    output = out_parent / "ds"
    before: dict[str, str] | None = None
    if replace_existing:
        if not output.exists():
            write_labelled_graph(output, num_nodes=20, feature_dim=4)
        before = _digest(output)
    extra = ["--overwrite"] if replace_existing else []
    result = run_cli("prepare", *args, str(output), *extra)  # an unexpected exception fails the test
    if result.returncode == 0 and not must_fail:
        Dataset.open(output)
    else:
        assert_user_error(result)
        if before is not None:
            assert _digest(output) == before, "an existing dataset at OUTPUT was modified"
        else:
            assert not output.exists()
    assert sorted(p.name for p in out_parent.iterdir()) == (["ds"] if output.exists() else [])


def _array(draw: st.DrawFn, dtypes: list[str], shapes: list[tuple[int, ...]], low: int, high: int) -> np.ndarray:
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    shape = draw(st.sampled_from(shapes))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if dtype.kind == "U":
        return rng.integers(0, 10, shape).astype(dtype)
    values = rng.integers(low, high, shape)
    if dtype.kind == "u":
        values = np.abs(values)
    out = values.astype(dtype)
    if dtype.kind == "f" and out.size and draw(st.booleans()):
        out.flat[draw(st.integers(0, out.size - 1))] = draw(st.sampled_from(NON_FINITE))
    return out


# ---------------------------------------------------------------------------- edgelist


EDGES = "0 1\n1 2\n2 3\n3 0\n4 2\n"


@FUZZ
@given(data=st.binary(max_size=200), gz=st.booleans(), replace_existing=st.booleans())
def test_edgelist_random_bytes(data: bytes, gz: bool, replace_existing: bool) -> None:
    with _workspace() as root:
        src = root / "e.txt"
        src.write_bytes(gzip.compress(data) if gz else data)
        _run(["edgelist", str(src)], root, replace_existing, must_fail=False)


@FUZZ
@given(cut=st.integers(1, 10_000), replace_existing=st.booleans())
def test_edgelist_truncated_gzip(cut: int, replace_existing: bool) -> None:
    with _workspace() as root:
        whole = gzip.compress((EDGES * 50).encode())
        src = root / "e.txt.gz"
        src.write_bytes(whole[: min(cut, len(whole) - 1)])
        _run(["edgelist", str(src)], root, replace_existing, must_fail=True)


@FUZZ
@given(
    ids=st.lists(st.integers(-(2**62), 2**62), min_size=2, max_size=12),
    num_nodes=st.one_of(st.integers(-5, 10), st.integers(10**11, 10**13)),
    replace_existing=st.booleans(),
)
def test_edgelist_out_of_range_ids(ids: list[int], num_nodes: int, replace_existing: bool) -> None:
    pairs = ids[: len(ids) // 2 * 2]
    bad = num_nodes < 0 or num_nodes >= 10**11 or min(pairs) < 0 or max(pairs) >= num_nodes
    with _workspace() as root:
        src = root / "e.txt"
        src.write_text("".join(f"{a} {b}\n" for a, b in zip(pairs[::2], pairs[1::2])))
        _run(["edgelist", str(src), "--num-nodes", str(num_nodes)], root, replace_existing, must_fail=bad)


@st.composite
def feature_arrays(draw: st.DrawFn) -> np.ndarray:
    shapes = [(5, 3), (5,), (5, 0), (4, 3), (5, 2, 2), (), (6, 3)]
    return _array(draw, ANY_DTYPES, shapes, -1000, 1000)


@FUZZ
@given(feats=feature_arrays(), cut=st.one_of(st.none(), st.integers(0, 200)), replace_existing=st.booleans())
@example(feats=np.array([[1, 2, 3]] * 4 + [[np.nan, 0, np.inf]], dtype=np.float32), cut=None, replace_existing=True)
@example(feats=np.ones((5, 3), dtype=">f8"), cut=None, replace_existing=False)  # big-endian float64: fine
def test_edgelist_malformed_features(feats: np.ndarray, cut: int | None, replace_existing: bool) -> None:
    with _workspace() as root:
        src = root / "e.txt"
        src.write_text(EDGES)
        path = root / "f.npy"
        np.save(path, feats)
        if cut is not None:
            whole = path.read_bytes()
            path.write_bytes(whole[: min(cut, len(whole) - 1)])
        good = (
            cut is None
            # the edges name nodes 0-4; a sixth feature row is a sixth node without edges (nodes_only_in_node_data)
            and feats.shape in ((5, 3), (6, 3))
            and feats.dtype.kind in "iufb"
            and (feats.dtype.kind != "f" or bool(np.isfinite(feats).all()))
        )
        _run(["edgelist", str(src), "--features", str(path)], root, replace_existing, must_fail=not good)


@FUZZ
@given(text=st.text(alphabet="0123456789-,# \nabc.", max_size=60), replace_existing=st.booleans())
def test_edgelist_malformed_labels(text: str, replace_existing: bool) -> None:
    with _workspace() as root:
        src = root / "e.txt"
        src.write_text(EDGES)
        labels = root / "l.csv"
        labels.write_text(text)
        _run(["edgelist", str(src), "--labels", str(labels)], root, replace_existing, must_fail=False)


# ---------------------------------------------------------------------------- csr-npz


@st.composite
def npz_members(draw: st.DrawFn) -> dict[str, np.ndarray]:
    members: dict[str, np.ndarray] = {}
    if draw(st.integers(0, 9)):
        members["indptr"] = _array(draw, [*INT_DTYPES, "<f4", "|b1"], [(6,), (1,), (0,), (), (3, 2)], -2, 12)
        if members["indptr"].ndim == 1 and members["indptr"].dtype.kind in "iu" and draw(st.booleans()):
            members["indptr"] = np.sort(members["indptr"])
    if draw(st.integers(0, 9)):
        members["indices"] = _array(draw, [*INT_DTYPES, "<f8", "<U3"], [(10,), (0,), (), (5, 2)], -3, 9)
    choice = draw(st.integers(0, 4))
    if choice == 1:
        members["format"] = draw(
            st.sampled_from([np.array("csr"), np.array(b"csc"), np.array("coo"), np.array(["csr", "csc"]), np.array(3)])
        )
    elif choice == 2:
        members["shape"] = draw(
            st.sampled_from(
                [
                    np.array([5, 5]),
                    np.array(5),
                    np.array([5, 4]),
                    np.array([[5, 5]]),
                    np.array([5.0, 5.0]),
                    np.array([7, 7]),
                ]
            )
        )
    return members


_CSR = sp.random(6, 6, density=0.3, format="csr", random_state=0)


@FUZZ
@given(members=npz_members(), cut=st.one_of(st.none(), st.integers(0, 400)), replace_existing=st.booleans())
@example(
    members={"indptr": _CSR.indptr.astype(">i8"), "indices": _CSR.indices.astype(">i4")},
    cut=None,
    replace_existing=True,
)  # big-endian: imported like native
@example(
    members={"indptr": _CSR.indptr, "indices": _CSR.indices, "format": np.array(["csr", "csc"])},
    cut=None,
    replace_existing=True,
)
@example(
    members={"indptr": _CSR.indptr, "indices": _CSR.indices, "shape": np.array(6)}, cut=None, replace_existing=False
)
def test_csr_npz_malformed(members: dict[str, np.ndarray], cut: int | None, replace_existing: bool) -> None:
    with _workspace() as root:
        path = root / "a.npz"
        np.savez(path, **members)
        if cut is not None:
            whole = path.read_bytes()
            path.write_bytes(whole[: min(cut, len(whole) - 1)])
        _run(["csr-npz", str(path)], root, replace_existing, must_fail=cut is not None or len(members) < 2)


@FUZZ
@given(data=st.binary(max_size=300), replace_existing=st.booleans())
def test_csr_npz_random_bytes(data: bytes, replace_existing: bool) -> None:
    with _workspace() as root:
        path = root / "a.npz"
        path.write_bytes(data)
        _run(["csr-npz", str(path)], root, replace_existing, must_fail=True)


# ---------------------------------------------------------------------------- ogb


def _gz(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode()))


@FUZZ
@example(
    num_nodes="99999999999999999", edges="0,1\n", feat_row="1.0,2.0", label="1", with_split=False, replace_existing=True
)
@example(num_nodes="-3", edges="0,1\n", feat_row="1.0,2.0", label="1", with_split=False, replace_existing=False)
@example(num_nodes="8", edges="0,1\n", feat_row="nan,1.0", label="1", with_split=False, replace_existing=True)
@given(
    num_nodes=st.sampled_from(["8", "-3", "0", "99999999999999999", "1e3", "", "8\n9", "x"]),
    edges=st.sampled_from(["0,1\n1,2\n", "0,9\n", "-1,2\n", "0;1\n", "", "0,1,2\n", "a,b\n"]),
    feat_row=st.sampled_from(["1.0,2.0", "nan,1.0", "inf,-inf", "1.0", "1.0,x", "1e999,0"]),
    label=st.sampled_from(["1", "nan", "0.5", "-1", "a", "1,2"]),
    with_split=st.booleans(),
    replace_existing=st.booleans(),
)
def test_ogb_malformed(
    num_nodes: str, edges: str, feat_row: str, label: str, with_split: bool, replace_existing: bool
) -> None:
    with _workspace() as root:
        src = root / "ogb"
        _gz(src / "raw" / "num-node-list.csv.gz", num_nodes + "\n")
        _gz(src / "raw" / "edge.csv.gz", edges)
        _gz(src / "raw" / "node-feat.csv.gz", "1.0,2.0\n" * 7 + feat_row + "\n")
        _gz(src / "raw" / "node-label.csv.gz", "0\n" * 7 + label + "\n")
        if with_split:
            for part, ids in (("train", "0\n1\n"), ("valid", "2\n"), ("test", "3\n99\n")):
                _gz(src / "split" / "s" / f"{part}.csv.gz", ids)
        _run(["ogb", str(src)], root, replace_existing, must_fail=False)


# ---------------------------------------------------------------------------- planetoid


def _planetoid_parts(rng: np.random.Generator) -> dict[str, object]:
    n_all, n_test, dim, classes = 520, 4, 3, 2

    def onehot(rows: int) -> np.ndarray:
        return np.eye(classes, dtype=np.int64)[rng.integers(0, classes, rows)]

    allx = sp.csr_matrix(rng.random((n_all, dim)).astype(np.float32))
    ally = onehot(n_all)
    graph = {i: [int(j) for j in rng.integers(0, n_all + n_test, 3)] for i in range(n_all + n_test)}
    return {
        "x": allx[:10],
        "y": ally[:10],
        "allx": allx,
        "ally": ally,
        "tx": sp.csr_matrix(rng.random((n_test, dim)).astype(np.float32)),
        "ty": onehot(n_test),
        "graph": graph,
    }


@st.composite
def planetoid_damage(draw: st.DrawFn) -> tuple[str, object]:
    part = draw(st.sampled_from(["x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"]))
    kind = draw(st.sampled_from(["bytes", "truncate", "value"]))
    if kind == "bytes":
        return part, draw(st.binary(max_size=100))
    if kind == "truncate":
        return part, ("truncate", draw(st.integers(0, 200)))
    if part == "test.index":
        return part, draw(
            st.sampled_from(
                ["520\n521\n522\n", "520\nx\n", "-1\n520\n521\n523\n", "520\n521\n522\n10000000000000\n", ""]
            )
        )
    value = draw(
        st.sampled_from(
            [
                {"0": [1]},
                {0: 1},
                {0: ["a"]},
                {0: [10**6]},
                {-1: [0]},
                [1, 2],
                None,
                3.5,
                np.array(["a", "b"]),
                np.zeros((3, 3, 3)),
                np.zeros((520, 3), dtype=object),
                np.full((520, 3), np.nan),
                sp.csr_matrix(np.zeros((2, 3))),
                {True: [0]},
            ]
        )
    )
    return part, value


@FUZZ
@given(damage=planetoid_damage(), replace_existing=st.booleans())
@example(damage=("graph", {"0": [1], "1": [0]}), replace_existing=True)  # string keys
@example(damage=("graph", {0: 1, 1: 0}), replace_existing=False)  # int values
@example(damage=("test.index", "520\n521\n522\n10000000000000\n"), replace_existing=False)  # huge test id
@example(damage=("allx", np.full((520, 3), np.nan)), replace_existing=True)  # non-finite features
def test_planetoid_malformed(damage: tuple[str, object], replace_existing: bool) -> None:
    part, value = damage
    with _workspace() as root:
        src = root / "planetoid"
        src.mkdir()
        parts = _planetoid_parts(np.random.default_rng(0))
        for name, obj in parts.items():
            with open(src / f"ind.toy.{name}", "wb") as f:
                pickle.dump(obj, f, protocol=2)
        (src / "ind.toy.test.index").write_text("520\n521\n522\n523\n")
        target = src / f"ind.toy.{part}"
        if isinstance(value, bytes):
            target.write_bytes(value)
        elif isinstance(value, tuple) and value and value[0] == "truncate":
            target.write_bytes(target.read_bytes()[: value[1]])
        elif isinstance(value, str):
            target.write_text(value)
        else:
            with open(target, "wb") as f:
                pickle.dump(value, f, protocol=2)
        _run(["planetoid", str(src)], root, replace_existing, must_fail=False)


def test_fuzz_fixture_is_importable(tmp_path: Path) -> None:
    """The undamaged inputs the fuzzers start from do import (so the fuzzers test damage, not a broken base)."""
    src = tmp_path / "planetoid"
    src.mkdir()
    for name, obj in _planetoid_parts(np.random.default_rng(0)).items():
        with open(src / f"ind.toy.{name}", "wb") as f:
            pickle.dump(obj, f, protocol=2)
    (src / "ind.toy.test.index").write_text("520\n521\n522\n523\n")
    assert run_cli("prepare", "planetoid", str(src), str(tmp_path / "p")).returncode == 0
    edges = tmp_path / "e.txt"
    edges.write_text(EDGES)
    assert run_cli("prepare", "edgelist", str(edges), str(tmp_path / "e")).returncode == 0


@pytest.mark.parametrize("cut", [0, 1, 2, 100])
def test_truncated_planetoid_pickle(tmp_path: Path, cut: int) -> None:
    src = tmp_path / "planetoid"
    src.mkdir()
    for name, obj in _planetoid_parts(np.random.default_rng(1)).items():
        with open(src / f"ind.toy.{name}", "wb") as f:
            pickle.dump(obj, f, protocol=2)
    (src / "ind.toy.test.index").write_text("520\n521\n522\n523\n")
    graph = src / "ind.toy.graph"
    graph.write_bytes(graph.read_bytes()[:cut])
    assert_user_error(run_cli("prepare", "planetoid", str(src), str(tmp_path / "o")), "ind.toy.graph")
