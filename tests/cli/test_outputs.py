"""Issue 21: output paths of train, predict and score are checked before the work starts.

A parent that is a file, a read-only directory, a directory where a file is expected, a path under
/proc, two options naming the same file, or an output that is a file of the dataset being read is
one ``graphtier: error:`` line naming the option, before training (so no model is lost) and with
every file left as it was.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from graphtier import Dataset
from graphtier.dataset.outputs import check_outputs, dataset_files, save_npy
from graphtier.errors import OptionError
from graphtier.train import save_model
from graphtier.train.nn.models import build_model
from graphtier.train.options.config import TrainConfig
from tests.cli.test_bad_input import _tmpfs
from tests.dataset.importers.helpers import assert_user_error, run_cli

# A train run that would take a few seconds if the checks did not stop it first.
QUICK = ("--fanouts", "3,3", "--batch-size", "100", "--hidden", "8", "--epochs", "1", "--quiet")


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def _train(dataset: Dataset, *args: str):  # type: ignore[no-untyped-def]
    return run_cli("train", str(dataset.path), *QUICK, *args)


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "notes.txt"
    path.write_text("keep me")
    return path


@pytest.mark.parametrize("option", ["--save-model", "--report"])
def test_train_output_under_a_file_is_refused_before_training(tiny_dataset: Dataset, a_file: Path, option: str) -> None:
    result = _train(tiny_dataset, option, str(a_file / "out.pt"))
    assert_user_error(result, option, "is a file, not a directory")
    assert "final" not in result.stdout  # refused before training, not after it
    assert a_file.read_text() == "keep me"


def test_train_checkpoint_under_a_file_is_refused(tiny_dataset: Dataset, a_file: Path) -> None:
    assert_user_error(_train(tiny_dataset, "--checkpoint", str(a_file / "ckpt")), "--checkpoint", "not a directory")


def test_train_same_file_for_two_outputs_is_refused(tiny_dataset: Dataset, tmp_path: Path) -> None:
    same = tmp_path / "run.out"
    result = _train(tiny_dataset, "--report", str(same), "--save-model", str(same))
    assert_user_error(result, "--save-model", "same path as --report")
    assert not same.exists()
    ckpt = tmp_path / "ckpt"
    result = _train(tiny_dataset, "--checkpoint", str(ckpt), "--report", str(ckpt / "checkpoint.pt"))
    assert_user_error(result, "--report", "same path as --checkpoint")


def test_train_output_under_proc_is_refused(tiny_dataset: Dataset) -> None:
    assert_user_error(_train(tiny_dataset, "--report", "/proc/self/run.json"), "--report", "/proc")


@pytest.mark.parametrize("name", ["meta.json", "labels.npy", "train_idx.npy", "features.npy", "indptr.npy"])
def test_train_output_over_a_dataset_file_is_refused(tiny_dataset: Dataset, name: str) -> None:
    before = _digests(tiny_dataset.path)
    result = _train(tiny_dataset, "--report", str(tiny_dataset.path / name))
    assert_user_error(result, "--report", "a file of the dataset")
    assert _digests(tiny_dataset.path) == before
    Dataset.open(tiny_dataset.path)


def test_train_output_on_a_read_only_filesystem_is_refused(tiny_dataset: Dataset, tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "ro", "ro,size=1m") as mnt:
        for output in (mnt / "model.pt", mnt / "sub" / "model.pt"):
            result = _train(tiny_dataset, "--save-model", str(output))
            assert_user_error(result, "--save-model", "read-only file system")
            assert "final" not in result.stdout


def test_train_output_with_a_missing_parent_is_created(tiny_dataset: Dataset, tmp_path: Path) -> None:
    model = tmp_path / "new" / "dir" / "model.pt"
    result = _train(tiny_dataset, "--save-model", str(model))
    assert result.returncode == 0, result.stderr
    assert model.is_file()


# ---------------------------------------------------------------------------- predict


@pytest.fixture
def model_file(tiny_dataset: Dataset, tmp_path: Path) -> Path:
    """An untrained SAGE model saved for ``tiny_dataset`` (no training: fast)."""
    config = TrainConfig(fanouts=(3, 3), hidden=8)
    model = build_model("sage", tiny_dataset.feature_dim, 8, tiny_dataset.num_classes, 2)
    return save_model(tmp_path / "model.pt", model, config.to_dict(), tiny_dataset)


@pytest.mark.parametrize("name", ["labels.npy", "train_idx.npy", "features.npy", "indices.npy"])
def test_predict_output_over_a_dataset_file_is_refused(tiny_dataset: Dataset, model_file: Path, name: str) -> None:
    before = _digests(tiny_dataset.path)
    result = run_cli(
        "predict", str(tiny_dataset.path), "--model", str(model_file), "--output", str(tiny_dataset.path / name)
    )
    assert_user_error(result, "--output", "a file of the dataset")
    assert _digests(tiny_dataset.path) == before


def test_predict_output_and_embeddings_on_the_same_file(
    tiny_dataset: Dataset, model_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "x.npy"
    result = run_cli(
        "predict", str(tiny_dataset.path), "--model", str(model_file), "--output", str(out), "--embeddings", str(out)
    )
    assert_user_error(result, "--embeddings", "same path as --output")
    assert not out.exists()


def test_predict_output_under_a_file(tiny_dataset: Dataset, model_file: Path, a_file: Path) -> None:
    result = run_cli("predict", str(tiny_dataset.path), "--model", str(model_file), "--output", str(a_file / "p.npy"))
    assert_user_error(result, "--output", "is a file, not a directory")


# ---------------------------------------------------------------------------- score


def test_score_output_over_a_dataset_file_is_refused(tiny_dataset: Dataset) -> None:
    before = _digests(tiny_dataset.path)
    result = run_cli("score", str(tiny_dataset.path), "-s", "degree", "-o", str(tiny_dataset.path / "train_idx.npy"))
    assert_user_error(result, "--output", "a file of the dataset")
    assert _digests(tiny_dataset.path) == before


def test_score_output_that_is_a_directory(tiny_dataset: Dataset, tmp_path: Path) -> None:
    folder = tmp_path / "scores.npy"
    folder.mkdir()
    result = run_cli("score", str(tiny_dataset.path), "-s", "degree", "-o", str(folder))
    assert_user_error(result, "--output", "is a directory")
    result = run_cli("score", str(tiny_dataset.path), "-s", "degree", "-o", str(tmp_path))
    assert_user_error(result, "--output", "is a directory")


def test_score_output_with_a_missing_parent_is_created(tiny_dataset: Dataset, tmp_path: Path) -> None:
    out = tmp_path / "new" / "scores.npy"
    result = run_cli("score", str(tiny_dataset.path), "-s", "degree", "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert np.load(out).shape == (tiny_dataset.num_nodes,)


# ---------------------------------------------------------------------------- the shared check


def test_check_outputs_names_the_option(tmp_path: Path, a_file: Path) -> None:
    """Options are Python argument names: ``str()`` names them (``json='PATH'``), the CLI renders the flags."""
    with pytest.raises(OptionError, match=r"^json='.*': .*is a file, not a directory") as info:
        check_outputs([("json", a_file / "x" / "y.json", "file")])
    assert info.value.render(cli=True).startswith(f"--json {a_file / 'x' / 'y.json'}: {a_file} is a file")
    with pytest.raises(OptionError, match=r"^dir='.*': exists and is not a directory"):
        check_outputs([("dir", a_file, "dir")])
    with pytest.raises(OptionError, match=r"^output='.*': is the file given to model=, which is being read") as info:
        check_outputs([("output", a_file, "file")], inputs=[("model", a_file)])
    assert "--" not in str(info.value)
    assert info.value.render(cli=True).startswith(
        f"--output {a_file}: is the file given to --model, which is being read"
    )
    with pytest.raises(OptionError, match=r"^save_model='/dev/null': is under /dev"):
        check_outputs([("save_model", "/dev/null", "file")])
    check_outputs([("a", tmp_path / "a", "file"), ("b", None, "file"), ("c", tmp_path / "c", "dir")])


def test_check_outputs_sees_a_symlink_to_the_same_file(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    (tmp_path / "link.json").symlink_to(real)
    with pytest.raises(OptionError, match="^save_model='.*': is the same path as report=;") as info:
        check_outputs([("report", real, "file"), ("save_model", tmp_path / "link.json", "file")])
    assert info.value.render(cli=True).startswith(
        f"--save-model {tmp_path / 'link.json'}: is the same path as --report;"
    )


def test_dataset_files_lists_every_array(tiny_dataset: Dataset) -> None:
    names = {p.name for p in dataset_files(tiny_dataset.path)}
    assert {p.name for p in tiny_dataset.path.iterdir()} <= names


def test_save_npy_creates_the_parent_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = save_npy(tmp_path / "a" / "b.npy", np.arange(5), "--output")
    np.testing.assert_array_equal(np.load(target), np.arange(5))
    assert [p.name for p in target.parent.iterdir()] == ["b.npy"]


def test_save_npy_removes_the_temporaries_of_dead_writers_only(tmp_path: Path) -> None:
    child = subprocess.Popen(["true"])
    child.wait()
    dead, alive = child.pid, os.getppid()
    stale, kept = tmp_path / f".p.npy.tmp-{dead}", tmp_path / f".p.npy.tmp-{alive}"
    for path in (stale, kept):
        path.write_bytes(b"left by a killed run")
    save_npy(tmp_path / "p.npy", np.arange(3), "--output")
    assert not stale.exists() and kept.exists()


def test_save_npy_interrupted_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = save_npy(tmp_path / "p.npy", np.arange(3), "--output")

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "save", interrupted)
    with pytest.raises(KeyboardInterrupt):
        save_npy(target, np.arange(7), "--output")
    assert [p.name for p in tmp_path.iterdir()] == ["p.npy"]
    np.testing.assert_array_equal(np.load(target), np.arange(3))
