"""``graphtier prepare``: every subcommand hands its importer the CLI's progress display, and the importers report
their long loops (edges read, the CSC passes, feature rows copied, validation) as stages with totals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from graphtier._progress import Progress
from graphtier.cli.prepare import command as prepare
from graphtier.dataset.importers.common.edges import IdMap
from graphtier.dataset.importers.common.features import write_feature_file
from graphtier.dataset.importers.formats import csr_npz, edgelist, manifest, mat, movielens, ogb, planetoid
from graphtier.dataset.writer import DatasetWriter
from graphtier.errors import OptionError
from tests.recording_progress import RecordingProgress

from .helpers import assert_user_error, run_cli
from .test_manifest import _tiny

_IMPORTERS = {
    "edgelist": (edgelist, "import_edgelist"),
    "csr-npz": (csr_npz, "import_csr_npz"),
    "mat": (mat, "import_mat"),
    "ogb": (ogb, "import_ogb"),
    "planetoid": (planetoid, "import_planetoid"),
    "movielens": (movielens, "import_movielens"),
    "manifest": (manifest, "import_manifest"),
}


def test_every_subcommand_is_listed() -> None:
    assert set(prepare.commands) == set(_IMPORTERS)


@pytest.mark.parametrize("subcommand", sorted(_IMPORTERS))
def test_every_subcommand_passes_its_importer_the_progress_display(
    subcommand: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module, function = _IMPORTERS[subcommand]
    seen: dict[str, Any] = {}

    def fake_import(source: Path, output: Path, **kwargs: Any) -> Any:
        seen.update(kwargs)
        raise OptionError("stop here")

    monkeypatch.setattr(module, function, fake_import)
    monkeypatch.setenv("GRAPHTIER_PROGRESS_INTERVAL", "0")
    assert_user_error(run_cli("prepare", subcommand, str(tmp_path / "in"), str(tmp_path / "out")), "stop here")
    assert isinstance(seen.get("progress"), Progress), (subcommand, seen)


def _stage(recorder: RecordingProgress, description: str) -> tuple[int, int | None]:
    (stage,) = [s for s in recorder.finished_stages if s.description == description]
    return stage.done, stage.total


def test_csr_npz_reports_the_csc_passes_the_feature_copy_and_the_validation(tmp_path: Path) -> None:
    indptr = np.array([0, 2, 3, 3, 4])  # 4 nodes, 4 edges
    np.savez(tmp_path / "a.npz", indptr=indptr, indices=np.array([1, 2, 0, 3]))
    np.save(tmp_path / "x.npy", np.ones((6, 3), dtype=np.float32))  # two rows beyond the adjacency
    recorder = RecordingProgress()
    ds = csr_npz.import_csr_npz(
        tmp_path / "a.npz", tmp_path / "o", features=tmp_path / "x.npy", undirected=True, progress=recorder
    )
    assert recorder.descriptions() == [
        "prepare: count edges",
        "prepare: place edges",
        "prepare: copy features",
        "validate the new dataset",
    ]
    assert _stage(recorder, "prepare: count edges") == (4, 4)
    assert _stage(recorder, "prepare: place edges") == (4, 4)
    assert _stage(recorder, "prepare: copy features") == (6, 6) == (ds.num_nodes, ds.num_nodes)


def test_write_feature_file_reports_rows_block_by_block(tmp_path: Path) -> None:
    features = np.arange(40, dtype=np.float32).reshape(10, 4)
    recorder = RecordingProgress()
    with DatasetWriter(tmp_path / "o") as writer:
        dim, dtype = write_feature_file(features, IdMap(num_nodes=10), writer, progress=recorder)
    assert (dim, dtype) == (4, "float32")
    assert _stage(recorder, "prepare: copy features") == (10, 10)
    assert recorder.advances == [("prepare: copy features", 10)]


def test_edgelist_and_synthetic_features_report_reading_and_generating(tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_text("0 1\n1 2\n2 0\n")
    recorder = RecordingProgress()
    edgelist.import_edgelist(tmp_path / "e.txt", tmp_path / "o", synthetic_features=2, progress=recorder)
    assert recorder.descriptions() == [
        "prepare: read edges",
        "prepare: count edges",
        "prepare: place edges",
        "prepare: synthetic features",
        "validate the new dataset",
    ]
    assert _stage(recorder, "prepare: read edges") == (3, None)
    assert _stage(recorder, "prepare: count edges") == (3, 3)
    assert _stage(recorder, "prepare: synthetic features") == (3, 3)


def test_a_typed_import_reports_reading_the_edge_files_and_the_typed_csc(tmp_path: Path) -> None:
    recorder = RecordingProgress()
    manifest.import_manifest(_tiny(tmp_path), tmp_path / "out", add_reverse=True, progress=recorder)
    assert recorder.descriptions() == [
        "prepare: read edges buys",  # the text file; likes.npy is one read
        "build the typed CSC",
        "validate the new dataset",
    ]
    assert _stage(recorder, "build the typed CSC") == (12, 12)  # (4 + 2) edges, and their reverses
