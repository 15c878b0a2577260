"""Nothing graphtier reads may execute code: payload files that WOULD create a marker file if run.

Every loader of the dataset and graph layers is fed a file whose pickle calls a function that creates
``marker`` (``posix.system``, ``builtins.exec``, ``builtins.open``, ``subprocess.getoutput``, numpy's
``runstring``); each run must end in one ``graphtier: error:`` line with the marker absent. The
loaders: Planetoid's restricted unpickler, ``np.load(allow_pickle=False)`` for ``.npy``/``.npz``
(features, labels, csr-npz input, a dataset's arrays, reorder scores) and :func:`scipy.io.loadmat`,
which builds arrays only (a MATLAB object becomes a struct array; scipy cannot even write function
handles), so a ``.mat`` can carry data but no code.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import os
import pickle
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.io
from numpy.testing._private.utils import runstring
from scipy.io.matlab import MatlabObject

from graphtier.dataset import Dataset
from graphtier.dataset.importers import import_planetoid
from graphtier.errors import DatasetError
from graphtier.graph.reorder import load_score_file

from .helpers import assert_user_error, run_cli, write_planetoid


def _calls(marker: Path) -> dict[str, tuple[Callable[..., Any], tuple[Any, ...]]]:
    """Callables (and their arguments) that create ``marker`` when a pickle calls them."""
    return {
        "posix.system": (os.system, (f"touch {marker}",)),
        "builtins.exec": (builtins.exec, (f"open({str(marker)!r}, 'w').close()",)),
        "builtins.open": (builtins.open, (str(marker), "w")),
        "subprocess.getoutput": (subprocess.getoutput, (f"touch {marker}",)),
        "numpy.runstring": (runstring, (f"open({str(marker)!r}, 'w').close()", {})),
    }


class _Payload:
    """Pickles as ``function(*args)``: unpickling it runs the call."""

    def __init__(self, function: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.function, self.args = function, args

    def __reduce__(self) -> tuple[Callable[..., Any], tuple[Any, ...]]:
        return self.function, self.args


CALLS = ["posix.system", "builtins.exec", "builtins.open", "subprocess.getoutput", "numpy.runstring"]


def _payload(marker: Path, call: str) -> _Payload:
    function, args = _calls(marker)[call]
    return _Payload(function, args)


def test_payloads_do_run_when_unpickled_plainly(tmp_path: Path) -> None:
    """The payloads are real: a plain ``pickle.loads`` of each creates the marker."""
    for call in CALLS:
        marker = tmp_path / f"marker-{call}"
        pickle.loads(pickle.dumps(_payload(marker, call), protocol=2))
        assert marker.exists(), call


def _planetoid_with(tmp_path: Path, part: str, payload: bytes) -> Path:
    root = tmp_path / "raw"
    root.mkdir(exist_ok=True)
    write_planetoid(root, "evil", np.random.default_rng(0))
    (root / f"ind.evil.{part}").write_bytes(payload)
    return root


@pytest.mark.parametrize("call", CALLS)
def test_planetoid_pickle_calling_code(tmp_path: Path, call: str) -> None:
    marker = tmp_path / "marker"
    root = _planetoid_with(tmp_path, "graph", pickle.dumps(_payload(marker, call), protocol=2))
    result = run_cli("prepare", "planetoid", str(root), str(tmp_path / "out"))
    assert_user_error(result, "ind.evil.graph", "expected only numpy/scipy arrays")
    assert not marker.exists() and not (tmp_path / "out").exists()


def _wrapped_in_allowed_names(marker: Path) -> list[bytes]:
    """Protocol-0 pickles that call ``posix.system`` from inside names the unpickler admits."""
    call = b"cposix\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR"  # system("touch marker")
    return [
        # numpy's _reconstruct(ndarray, (0,), <call>)
        b"cnumpy._core.multiarray\n_reconstruct\n(cnumpy\nndarray\n(I0\nt" + call + b"tR.",
        # copyreg._reconstructor(object, object, <call>)
        b"ccopyreg\n_reconstructor\n(c__builtin__\nobject\nc__builtin__\nobject\n" + call + b"tR.",
        # defaultdict(list) with the call as a value
        b"ccollections\ndefaultdict\n(c__builtin__\nlist\ntRS'k'\n" + call + b"s.",
        # a scipy matrix whose state holds the call
        b"cscipy.sparse\ncsr_matrix\n)\x81}(S'data'\n" + call + b"ub.",
        # _codecs.encode(<call>, 'latin1')
        b"c_codecs\nencode\n(" + call + b"S'latin1'\ntR.",
        # numpy.dtype(<call>)
        b"cnumpy\ndtype\n(" + call + b"tR.",
    ]


@pytest.mark.parametrize("index", range(6))
def test_payloads_behind_allowed_names_do_run_when_unpickled_plainly(tmp_path: Path, index: int) -> None:
    marker = tmp_path / "marker"
    with contextlib.suppress(Exception):  # the call runs first; what it returns may not fit
        pickle.loads(_wrapped_in_allowed_names(marker)[index])
    assert marker.exists()


@pytest.mark.parametrize("index", range(6))
def test_planetoid_payload_behind_allowed_names(tmp_path: Path, index: int) -> None:
    marker = tmp_path / "marker"
    root = _planetoid_with(tmp_path, "allx", _wrapped_in_allowed_names(marker)[index])
    result = run_cli("prepare", "planetoid", str(root), str(tmp_path / "out"))
    assert_user_error(result, "ind.evil.allx")
    assert not marker.exists() and not (tmp_path / "out").exists()


def _edges(tmp_path: Path) -> Path:
    path = tmp_path / "edges.txt"
    path.write_text("0 1\n1 2\n2 0\n")
    return path


@pytest.mark.parametrize("option", ["--features", "--labels"])
@pytest.mark.parametrize("call", ["posix.system", "builtins.exec"])
def test_object_npy_node_data(tmp_path: Path, option: str, call: str) -> None:
    marker = tmp_path / "marker"
    path = tmp_path / "node_data.npy"
    np.save(path, np.array([_payload(marker, call)] * 3, dtype=object), allow_pickle=True)
    result = run_cli("prepare", "edgelist", str(_edges(tmp_path)), str(tmp_path / "out"), option, str(path))
    assert_user_error(result, "node_data.npy", option, "object (pickled) array")
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_npz_with_object_arrays(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    evil = np.array([_payload(marker, "posix.system")], dtype=object)
    graph = tmp_path / "graph.npz"
    np.savez(graph, indptr=evil, indices=evil, allow_pickle=True)
    result = run_cli("prepare", "csr-npz", str(graph), str(tmp_path / "out"))
    assert_user_error(result, "graph.npz", "'indptr'")
    result = run_cli("prepare", "edgelist", str(_edges(tmp_path)), str(tmp_path / "out"), "--features", str(graph))
    assert_user_error(result, "graph.npz", "--features")
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_plain_pickle_named_npz(tmp_path: Path) -> None:
    """np.load falls back to pickle for unknown content; allow_pickle=False must refuse it."""
    marker = tmp_path / "marker"
    graph = tmp_path / "graph.npz"
    graph.write_bytes(pickle.dumps(_payload(marker, "posix.system")))
    result = run_cli("prepare", "csr-npz", str(graph), str(tmp_path / "out"))
    assert_user_error(result, "graph.npz", "expected an .npz archive", "got a Python pickle")
    assert not marker.exists()


def test_mat_object_is_data_not_code(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    fields = np.zeros((1, 1), dtype=[("command", object)])
    fields[0, 0]["command"] = f"touch {marker}"
    buffer = io.BytesIO()
    scipy.io.savemat(buffer, {"A": MatlabObject(fields, classname="os.system")})
    path = tmp_path / "object.mat"
    path.write_bytes(buffer.getvalue())
    result = run_cli("prepare", "mat", str(path), str(tmp_path / "out"), "--adjacency-key", "A")
    assert_user_error(result, "object.mat", "variable 'A'", "expected a numeric matrix")
    assert not marker.exists() and not (tmp_path / "out").exists()


def test_dataset_arrays_and_reorder_scores(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    source = tmp_path / "raw"
    source.mkdir()
    write_planetoid(source, "t", np.random.default_rng(0))
    import_planetoid(source, tmp_path / "ds")
    copy = tmp_path / "evil_ds"
    shutil.copytree(tmp_path / "ds", copy)
    evil = np.array([_payload(marker, "posix.system")] * 536, dtype=object)
    np.save(copy / "labels.npy", evil, allow_pickle=True)
    with pytest.raises(DatasetError, match="labels.npy: not a readable .npy array"):
        Dataset.open(copy)
    np.save(tmp_path / "scores.npy", evil, allow_pickle=True)
    with pytest.raises(DatasetError, match="scores.npy: not a readable .npy array"):
        load_score_file(tmp_path / "scores.npy", 536)
    assert not marker.exists()


def test_edgelist_named_pickle(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    path = tmp_path / "edges.pkl"
    path.write_bytes(pickle.dumps(_payload(marker, "posix.system")))
    assert_user_error(run_cli("prepare", "edgelist", str(path), str(tmp_path / "out")), "edges.pkl")
    assert not marker.exists()


def _yaml_payloads(marker: Path) -> dict[str, str]:
    """YAML documents whose Python tags create ``marker`` when a full (unsafe) loader builds them."""
    return {
        "object/apply": f"!!python/object/apply:os.system ['touch {marker}']\n",
        "object/new": f"nodes: !!python/object/new:subprocess.getoutput ['touch {marker}']\n",
        "in a value": f"nodes:\n  user: {{count: !!python/object/apply:os.system ['touch {marker}']}}\n",
    }


@pytest.mark.parametrize("kind", ["object/apply", "object/new", "in a value"])
def test_yaml_payloads_do_run_when_loaded_unsafely(tmp_path: Path, kind: str) -> None:
    yaml = pytest.importorskip("yaml")
    marker = tmp_path / "marker"
    yaml.unsafe_load(_yaml_payloads(marker)[kind])
    assert marker.exists()


@pytest.mark.parametrize("kind", ["object/apply", "object/new", "in a value"])
def test_yaml_manifest_python_tag_is_refused(tmp_path: Path, kind: str) -> None:
    pytest.importorskip("yaml")
    marker = tmp_path / "marker"
    manifest = tmp_path / "graph.yaml"
    manifest.write_text(_yaml_payloads(marker)[kind])
    result = run_cli("prepare", "manifest", str(manifest), str(tmp_path / "out"))
    assert_user_error(result, "graph.yaml: not valid YAML", "python/object")
    assert not marker.exists() and not (tmp_path / "out").exists()
