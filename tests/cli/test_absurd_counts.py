"""Issue 34: a node type count no machine can use (10^12, 2^70) is refused at ``prepare`` and again when a
hand-edited ``meta.json`` claims it, so ``info`` and ``train --featureless`` never get to allocate."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset import resources
from graphtier.dataset.importers.formats.manifest import import_manifest
from graphtier.dataset.typed_graph import TypedEdges, TypedNodes, write_typed_graph
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import DatasetError
from tests.conftest import run_cli_in_one_process
from tests.dataset.importers.helpers import assert_user_error
from tests.dataset.importers.test_manifest import _tiny

HUGE = {"10^12": (10**12, ["nodes in all need at least", "TiB of memory", "this machine has"])}
HUGE["2^70"] = (2**70, ["expected at most 9,223,372,036,854,775,807 nodes in all (int64 ids)"])


def test_absurd_counts_refused_at_prepare_and_open(tmp_path: Path) -> None:
    """A manifest's count, and the same count written into a dataset's meta.json by hand: one line each from
    ``prepare``, ``info`` and ``train --featureless embedding|onehot``, naming the file and the count."""
    (tmp_path / "good").mkdir()
    dataset = import_manifest(_tiny(tmp_path / "good"), tmp_path / "ds")
    runs, expected = [], []
    for label, (count, fragments) in HUGE.items():
        folder = tmp_path / label.replace("^", "_")
        folder.mkdir()
        manifest = _tiny(folder, **{"nodes/user/count": count})
        runs.append(["prepare", "manifest", str(manifest), str(folder / "out")])
        expected.append([f"{manifest}: nodes (user count {count:,})", *fragments])
        edited = folder / "edited"
        _edit_count(dataset.path, edited, count)
        for command in (["info"], ["train", "--featureless", "embedding"], ["train", "--featureless", "onehot"]):
            runs.append([command[0], str(edited), *command[1:]])
            expected.append([f"{edited}/meta.json: hetero.node_types (user count {count:,})", *fragments])
    for result, fragments in zip(run_cli_in_one_process(runs), expected, strict=True):
        assert_user_error(result, *fragments)
    for label in HUGE:
        assert not (tmp_path / label.replace("^", "_") / "out").exists()


def _edit_count(source: Path, edited: Path, count: int) -> None:
    """A copy of the dataset ``source`` whose meta.json says the featureless type ``user`` has ``count`` nodes."""
    edited.mkdir()
    for path in source.iterdir():
        (edited / path.name).write_bytes(path.read_bytes())
    meta = json.loads((edited / "meta.json").read_text())
    (user,) = [t for t in meta["hetero"]["node_types"] if t["name"] == "user"]
    meta["num_nodes"] += count - user["count"]
    user["count"] = count
    (edited / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("count", [10**12, 2**70])
def test_write_typed_graph_refuses_before_building(tmp_path: Path, count: int) -> None:
    """Every typed importer (OGB's heterogeneous layout too) ends in write_typed_graph, which checks first."""
    types = [TypedNodes("user", count), TypedNodes("item", 3)]
    edges = [TypedEdges(("item", "to", "user"), np.array([0, 1]), np.array([0, 1]))]
    with pytest.raises((DatasetError, resources.ResourceError), match=rf"node types \(user count {count:,}\)"):
        with DatasetWriter(tmp_path / "out") as writer:
            write_typed_graph(writer, types, edges, target="item")
    assert not (tmp_path / "out").exists()
