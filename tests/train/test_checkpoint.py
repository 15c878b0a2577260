"""Checkpoints and saved models: no code runs on load, CUDA resume, damage, dataset identity, changed
options on resume, one-line errors, the directory lock, temporary files and non-finite numbers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from graphtier import Dataset, OptionError
from graphtier.dataset import DatasetWriter
from graphtier.dataset.csc import edges_to_csc
from graphtier.errors import GraphtierError, ResourceError
from graphtier.train import TrainConfig, Trainer, load_model, predict, train
from graphtier.train.loop.report import NonFiniteLossError, RunReport
from graphtier.train.options.output_files import LOCK_FILE
from graphtier.train.persist.saved import dataset_fingerprint
from tests.conftest import write_labelled_graph

SMALL: dict[str, Any] = {
    "batch_size": 50,
    "hidden": 16,
    "fanouts": (5, 5),
    "eval_batch_size": 100,
    "lr": 0.01,
    "quiet": True,
}


class Payload:
    """Unpickling this object calls open(marker, "w"): code that a checkpoint must never run."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.marker), "w"))


class OnAccelerator(torch.Tensor):
    """Stands for a tensor that torch.load mapped to a GPU: only its .cpu() is a CPU ByteTensor."""

    def cpu(self, *args: Any, **kwargs: Any) -> torch.Tensor:  # type: ignore[override]
        return self.as_subclass(torch.Tensor)


def _strict_set_rng_state(state: torch.Tensor) -> None:
    """torch.set_rng_state as on a CUDA machine given a GPU tensor: TypeError unless a CPU ByteTensor."""
    if type(state) is not torch.Tensor:
        raise TypeError("expected a torch.ByteTensor, but got torch.cuda.ByteTensor")
    torch.random.default_generator.set_state(state)


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(dataset directory, checkpoint directory after 2 epochs); copy the checkpoint before changing it."""
    root = tmp_path_factory.mktemp("trained")
    dataset = write_labelled_graph(root / "tiny")
    train(dataset, epochs=2, checkpoint=str(root / "ckpt"), save_model=str(root / "model.pt"), **SMALL)
    return dataset.path, root / "ckpt"


@pytest.fixture
def ckpt(trained: tuple[Path, Path], tmp_path: Path) -> Path:
    return Path(shutil.copytree(trained[1], tmp_path / "ckpt"))


@pytest.fixture
def data(trained: tuple[Path, Path]) -> Dataset:
    return Dataset.open(trained[0])


def _resume(data: Dataset, ckpt: Path, **options: Any) -> Trainer:
    return Trainer(data, TrainConfig(**{"epochs": 4, "checkpoint": str(ckpt), **SMALL, **options}))


def _flip_data_byte(path: Path, member_suffix: str) -> None:
    """Flip one byte inside the stored bytes of the first zip member whose name ends with ``member_suffix``."""
    with zipfile.ZipFile(path) as archive:
        info = next(i for i in archive.infolist() if i.filename.endswith(member_suffix) and i.file_size > 8)
    raw = bytearray(path.read_bytes())
    name_len, extra_len = (
        int.from_bytes(raw[info.header_offset + 26 : info.header_offset + 28], "little"),
        int.from_bytes(raw[info.header_offset + 28 : info.header_offset + 30], "little"),
    )
    start = info.header_offset + 30 + name_len + extra_len
    raw[start + info.file_size // 2] ^= 0xFF
    path.write_bytes(bytes(raw))


# ---------------------------------------------------------------- 1. nothing read executes code
def test_checkpoint_payload_does_not_run(data: Dataset, ckpt: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    torch.save({"model": Payload(marker)}, ckpt / "checkpoint.pt")
    with pytest.raises(OptionError) as info:
        _resume(data, ckpt)
    assert not marker.exists()
    assert "not a graphtier checkpoint" in str(info.value) and "\n" not in str(info.value)


def test_saved_model_payload_does_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    torch.save({"format": "graphtier-model", "state_dict": Payload(marker)}, tmp_path / "model.pt")
    with pytest.raises(OptionError, match="not a graphtier saved model"):
        load_model(tmp_path / "model.pt")
    assert not marker.exists()


# ---------------------------------------------------------------- 2. resume where torch.load maps to a GPU
def test_resume_reads_on_the_cpu_whatever_the_device(data: Dataset, ckpt: Path) -> None:
    trainer = _resume(data, ckpt)
    saved_rng = torch.load(ckpt / "checkpoint.pt", weights_only=True)["torch_rng"]
    trainer.device = torch.device("meta")  # stands for cuda: a map_location=self.device puts tensors there
    torch.manual_seed(99)
    assert trainer.resume()
    assert torch.equal(torch.get_rng_state(), saved_rng) and trainer.start_epoch == 3


def test_rng_state_mapped_to_a_gpu_is_restored_through_cpu(
    data: Dataset, ckpt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_load = torch.load
    state = real_load(ckpt / "checkpoint.pt", weights_only=True)

    def load_on_accelerator(*args: Any, **kwargs: Any) -> Any:
        loaded = real_load(*args, **kwargs)
        if isinstance(loaded, dict) and "torch_rng" in loaded:
            loaded["torch_rng"] = loaded["torch_rng"].as_subclass(OnAccelerator)
        return loaded

    monkeypatch.setattr(torch, "load", load_on_accelerator)
    monkeypatch.setattr(torch, "set_rng_state", _strict_set_rng_state)
    trainer = _resume(data, ckpt)
    assert trainer.start_epoch == 3 and torch.equal(torch.get_rng_state(), state["torch_rng"])


def test_cuda_rng_states_are_saved_and_restored(data: Dataset, ckpt: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trainer = _resume(data, ckpt)
    restored: list[list[torch.Tensor]] = []
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", lambda states: restored.append(list(states)))
    trainer.resume()  # a checkpoint without cuda_rng (written without CUDA) still loads
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert restored == []
    gpu_state = torch.arange(16, dtype=torch.uint8)
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: [gpu_state.clone()])
    trainer.save_checkpoint(3)
    trainer.resume()
    assert len(restored) == 1 and torch.equal(restored[0][0], gpu_state)


# ---------------------------------------------------------------- 3. damaged files, another dataset
def test_damaged_checkpoint_is_refused(data: Dataset, ckpt: Path) -> None:
    _flip_data_byte(ckpt / "checkpoint.pt", "/data/0")
    with pytest.raises(OptionError, match="checkpoint.pt: damaged file: member .* fails its CRC-32 check") as info:
        _resume(data, ckpt)
    assert "\n" not in str(info.value)


def test_damaged_saved_model_is_refused(trained: tuple[Path, Path], tmp_path: Path) -> None:
    model = Path(shutil.copy(trained[1].parent / "model.pt", tmp_path / "model.pt"))
    _flip_data_byte(model, "/data/0")
    with pytest.raises(OptionError, match="--model .*model.pt: damaged file"):
        load_model(model)


def _copy_dataset(source: Dataset, output: Path, perm: np.ndarray | None = None, **arrays: np.ndarray) -> Dataset:
    """A copy of ``source`` with node ``v`` renamed ``perm[v]`` and ``arrays`` replaced."""
    n = source.num_nodes
    perm = np.arange(n) if perm is None else perm
    indptr = np.asarray(source.indptr)
    dst = np.repeat(np.arange(n), np.diff(indptr))
    indptr, indices = edges_to_csc(perm[np.asarray(source.indices)], perm[dst], n)
    new = {"indptr": indptr, "indices": indices}
    for name in ("features", "labels"):
        moved = np.empty_like(np.asarray(getattr(source, name)))
        moved[perm] = np.asarray(getattr(source, name))
        new[name] = moved
    for split in ("train_idx", "valid_idx", "test_idx"):
        new[split] = np.sort(perm[np.asarray(getattr(source, split))]).astype(np.int64)
    new.update(arrays)
    with DatasetWriter(output) as writer:
        for name, array in new.items():
            writer.save(name, array)
        meta = {
            key: source.meta[key]
            for key in ("name", "num_nodes", "directed", "feature_dim", "feature_dtype", "num_classes")
        }
        return writer.finish({**meta, "num_edges": int(indices.shape[0]), "source": {"importer": "test"}})


def test_fingerprint_covers_every_feature_column_labels_and_splits(data: Dataset, tmp_path: Path) -> None:
    features = np.asarray(data.features).copy()
    features[:, 1:] = np.random.default_rng(1).normal(size=features[:, 1:].shape)  # column 0 unchanged
    base = dataset_fingerprint(data)["hash"]
    assert dataset_fingerprint(_copy_dataset(data, tmp_path / "same"))["hash"] == base
    assert dataset_fingerprint(_copy_dataset(data, tmp_path / "noise", features=features))["hash"] != base
    labels = np.asarray(data.labels).copy()
    labels[::3] = (labels[::3] + 1) % data.num_classes
    assert dataset_fingerprint(_copy_dataset(data, tmp_path / "labels", labels=labels))["hash"] != base


def test_model_refused_on_features_changed_outside_column_0(
    trained: tuple[Path, Path], data: Dataset, tmp_path: Path
) -> None:
    features = np.asarray(data.features).copy()
    features[:, 1:] = 0.0
    other = _copy_dataset(data, tmp_path / "noise", features=features)
    with pytest.raises(OptionError, match="trained on another dataset"):
        predict(trained[1].parent / "model.pt", other)


def test_checkpoint_refused_on_a_reordered_copy(data: Dataset, ckpt: Path, tmp_path: Path) -> None:
    reordered = _copy_dataset(data, tmp_path / "reordered", perm=np.random.default_rng(3).permutation(data.num_nodes))
    assert (reordered.num_nodes, reordered.num_edges) == (data.num_nodes, data.num_edges)
    with pytest.raises(OptionError, match="checkpoint was made on another dataset") as info:
        _resume(reordered, ckpt)
    assert "\n" not in str(info.value)


def test_old_checkpoint_without_fingerprint_compares_the_counts(data: Dataset, ckpt: Path) -> None:
    state = torch.load(ckpt / "checkpoint.pt", weights_only=True)
    del state["dataset"]["fingerprint"]
    torch.save(state, ckpt / "checkpoint.pt")
    assert _resume(data, ckpt).start_epoch == 3


def test_checkpoint_before_edge_inputs_resumes_and_other_edge_inputs_are_refused(data: Dataset, ckpt: Path) -> None:
    state = torch.load(ckpt / "checkpoint.pt", weights_only=True)
    assert (state["config"]["edge_dim"], state["config"]["time_encoding"]) == (None, 0)
    for key in ("edge_dim", "time_encoding", "time_encoding_fixed"):  # a file written before the options existed
        del state["config"][key]
    torch.save(state, ckpt / "checkpoint.pt")
    assert _resume(data, ckpt).resume() is not None
    state["config"]["time_encoding"] = 8
    torch.save(state, ckpt / "checkpoint.pt")
    with pytest.raises(OptionError, match="field 'time_encoding' is 8 in the checkpoint but 0 in this run"):
        _resume(data, ckpt).resume()


# ---------------------------------------------------------------- 4. options changed on resume
def test_changed_lr_weight_decay_dropout_are_applied_and_recorded(
    data: Dataset, ckpt: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trainer = _resume(data, ckpt, lr=0.001, weight_decay=5e-4, dropout=0.2, quiet=False)
    assert all(g["lr"] == 0.001 and g["weight_decay"] == 5e-4 for g in trainer.optimizer.param_groups)
    changed = trainer.report.resumed_from["changed"]
    assert changed == {
        "lr": {"checkpoint": 0.01, "run": 0.001},
        "weight_decay": {"checkpoint": 0.0, "run": 5e-4},
        "dropout": {"checkpoint": 0.5, "run": 0.2},
    }
    lines = [line for line in capsys.readouterr().out.splitlines() if "changed options" in line]
    assert len(lines) == 1 and "lr 0.01 -> 0.001" in lines[0] and "dropout 0.5 -> 0.2" in lines[0]
    assert _resume(data, ckpt).report.resumed_from["changed"] == {}


# ---------------------------------------------------------------- 5. malformed files: one line
@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda s: torch.zeros(3), "holds a Tensor"),
        (lambda s: [1, 2], "holds a list"),
        (lambda s: {k: v for k, v in s.items() if k != "model"}, "field 'model' missing"),
        (lambda s: {**s, "epoch": -1}, "field 'epoch' expected a positive integer, found -1"),
        (lambda s: {**s, "torch_rng": torch.zeros(5, dtype=torch.uint8)}, "'torch_rng' is not a valid RNG state"),
        (lambda s: {**s, "torch_rng": torch.zeros(5)}, "'torch_rng' expected a uint8 vector"),
        (lambda s: {**s, "model": {"bogus": torch.zeros(1)}}, "does not fit this model"),
    ],
)
def test_malformed_checkpoint_is_one_line(data: Dataset, ckpt: Path, edit: Any, fragment: str) -> None:
    state = torch.load(ckpt / "checkpoint.pt", weights_only=True)
    torch.save(edit(state), ckpt / "checkpoint.pt")
    with pytest.raises(OptionError, match=fragment) as info:
        _resume(data, ckpt)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("edit", "error", "fragment"),
    [
        (lambda s: s.pop("config"), OptionError, "field 'config' missing"),
        (lambda s: s["config"].update(hidden=8), OptionError, r"expected shape \(8, 16\).*found \(16, 16\)"),
        (lambda s: s.update(out_dim=10**12), OptionError, r"out_dim 1000000000000.*TiB of parameters"),
        (lambda s: s["config"].update(hidden="many"), OptionError, "'config.hidden' expected a positive integer"),
        (lambda s: s.update(in_dim=-3), OptionError, "'in_dim' expected a positive integer, found -3"),
    ],
)
def test_hand_edited_model_file_is_one_line(
    trained: tuple[Path, Path], tmp_path: Path, edit: Any, error: type[GraphtierError], fragment: str
) -> None:
    state = torch.load(trained[1].parent / "model.pt", weights_only=True)
    edit(state)
    torch.save(state, tmp_path / "model.pt")
    with pytest.raises(error, match=fragment) as info:
        load_model(tmp_path / "model.pt")
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------- 6. one run per checkpoint directory
def test_second_run_on_a_checkpoint_directory_is_refused(data: Dataset, ckpt: Path) -> None:
    holder = os.getppid()  # a live process other than this one
    (ckpt / LOCK_FILE).write_text(f"{holder}\n")
    with pytest.raises(ResourceError, match=f"^checkpoint='{ckpt}': in use by another run, pid {holder}") as info:
        _resume(data, ckpt)
    assert "\n" not in str(info.value)
    assert info.value.render(cli=True).startswith(f"--checkpoint {ckpt}: in use by another run")


def test_stale_lock_is_taken_over_and_released(data: Dataset, ckpt: Path) -> None:
    (ckpt / LOCK_FILE).write_text(f"{_dead_pid()}\n")
    trainer = _resume(data, ckpt, epochs=3)
    seen: list[str] = []
    trainer.on_epoch = lambda record: seen.append((ckpt / LOCK_FILE).read_text().strip())
    trainer.fit()
    assert seen == [str(os.getpid())] and not (ckpt / LOCK_FILE).exists()


def test_lock_released_when_training_fails(data: Dataset, ckpt: Path) -> None:
    trainer = _resume(data, ckpt, epochs=3)

    def fail(record: dict[str, Any]) -> None:
        raise KeyboardInterrupt

    trainer.on_epoch = fail
    with pytest.raises(KeyboardInterrupt):
        trainer.fit()
    assert not (ckpt / LOCK_FILE).exists()


# ---------------------------------------------------------------- 7. temporary files
def test_interrupted_checkpoint_write_leaves_no_temporary(
    data: Dataset, ckpt: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer = _resume(data, ckpt)
    before = (ckpt / "checkpoint.pt").read_bytes()

    def interrupted_save(state: Any, path: Any) -> None:
        Path(path).write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", interrupted_save)
    with pytest.raises(KeyboardInterrupt):
        trainer.save_checkpoint(3)
    assert sorted(p.name for p in ckpt.iterdir()) == ["checkpoint.pt"]
    assert (ckpt / "checkpoint.pt").read_bytes() == before


def test_stale_temporaries_of_dead_runs_are_removed(data: Dataset, ckpt: Path, tmp_path: Path) -> None:
    dead, alive = _dead_pid(), os.getppid()
    stale = [ckpt / f".checkpoint.pt.tmp-{dead}", tmp_path / f".run.json.tmp-{dead}", tmp_path / f".m.pt.tmp-{dead}"]
    kept = ckpt / f".checkpoint.pt.tmp-{alive}"
    for path in [*stale, kept]:
        path.write_bytes(b"left by a killed run")
    trainer = _resume(data, ckpt)
    trainer.save_checkpoint(3)
    trainer.report.write(tmp_path / "run.json")
    from graphtier.train.persist.saved import save_model

    save_model(tmp_path / "m.pt", trainer.model, trainer.config.to_dict(), data)
    assert not any(path.exists() for path in stale) and kept.exists()


# ---------------------------------------------------------------- 8. non-finite numbers
def test_report_has_no_nan_or_infinity(data: Dataset, tmp_path: Path) -> None:
    report = RunReport(config={"lr": 0.1}, dataset=data, environment={})
    report.epochs = [{"epoch": 1, "loss": float("nan"), "stage_seconds": {"total": float("inf")}}]
    report.write(tmp_path / "run.json")

    def refuse(constant: str) -> None:
        raise AssertionError(f"invalid JSON constant {constant}")

    written = json.loads((tmp_path / "run.json").read_text(), parse_constant=refuse)
    assert written["epochs"][0]["loss"] is None and written["epochs"][0]["stage_seconds"]["total"] is None
    assert written["non_finite"] == ["epochs[0].loss", "epochs[0].stage_seconds.total"]


def test_non_finite_loss_stops_training(data: Dataset, tmp_path: Path) -> None:
    trainer = Trainer(data, TrainConfig(epochs=2, report=str(tmp_path / "run.json"), **SMALL))
    forward = trainer.model.forward
    trainer.model.forward = lambda x, blocks, degree=None: forward(x, blocks, degree) * float("nan")  # type: ignore[method-assign]
    with pytest.raises(
        NonFiniteLossError, match=r"--lr 0.01: the training loss became nan at epoch 1, batch 1 .*lower --lr"
    ) as info:
        trainer.fit()
    assert isinstance(info.value, OptionError) and "\n" not in str(info.value)
