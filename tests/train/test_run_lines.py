"""The lines of train say what happened: per-relation fanouts, the MLP's measurement, compile time in a figure."""

from __future__ import annotations

import pytest

from graphtier.dataset import Dataset
from graphtier.sampling.relation_fanouts import differing_fanouts_text
from graphtier.train import train
from graphtier.train.loop.report import epoch_summary, final_summary
from tests.cli.helpers import run
from tests.typed_data import write_typed_labelled_graph


@pytest.fixture(scope="module")
def typed_dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return write_typed_labelled_graph(tmp_path_factory.mktemp("typed") / "typed")


def test_only_the_relations_whose_fanouts_differ_are_named(typed_dataset: Dataset) -> None:
    schema = typed_dataset.schema
    assert differing_fanouts_text(None, schema, (4, 3)) == ""
    assert differing_fanouts_text("cites=4/3", schema, (4, 3)) == ""  # the same as --fanouts
    assert differing_fanouts_text("writes=1,cites=-1/2", schema, (4, 3)) == "writes 1,1; cites -1,2"


def test_the_start_line_shows_per_relation_fanouts(typed_dataset: Dataset, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["train", str(typed_dataset.path), "--model", "rgcn", "--fanouts", "4,3", "--epochs", "1",
              "--hidden", "8", "--batch-size", "64", "--num-threads", "1"]  # fmt: skip
    code, out, err = run([*common, "--fanouts-per-relation", "writes=1"], capsys)
    assert code == 0, err
    start = next(line for line in out.splitlines() if line.startswith("training rgcn"))
    assert "fanouts 4,3 (per relation: writes 1,1) on cpu" in start


def test_the_mlp_never_claims_layer_wise_inference() -> None:
    final = {"epoch": 3, "valid_acc": 0.5, "test_acc": 0.5, "method": "full"}
    line = final_summary(final, {"model": "mlp", "fanouts": [5, 5]})
    assert "layer-wise" not in line and "(features only, no neighbours)" in line
    line = final_summary(final, {"model": "sage", "fanouts": [5, 5]})
    assert "(exact layer-wise inference, all neighbours)" in line


def test_an_epoch_that_compiled_kernels_says_its_rate_includes_it() -> None:
    record = {"epoch": 1, "loss": 1.0, "train_acc": 0.5, "valid_acc": 0.5, "test_acc": 0.5, "batches_per_s": 0.1,
              "stage_seconds": dict.fromkeys(("sample", "extract", "wait", "transfer", "train", "other", "total"), 1.0),
              "feature_bytes": 1024}  # fmt: skip
    assert "0.1 batch/s  sample" in epoch_summary(record, 2)
    record["compile_seconds"] = 16.04
    assert "0.1 batch/s (including 16.0 s of first-run kernel compilation)  sample" in epoch_summary(record, 2)


def test_link_training_picks_its_best_epoch_on_exact_validation_with_full_inference(tiny_link_dataset: Dataset) -> None:
    options = dict(task="link", batch_size=128, hidden=16, fanouts=(5, 5), eval_batch_size=256, lr=0.01, epochs=3,
                   quiet=True, num_threads=1, prefetch=1)  # fmt: skip
    exact = train(tiny_link_dataset, full_inference=True, **options).report
    final = exact["final"]
    best = next(e for e in exact["epochs"] if e["epoch"] == final["epoch"])
    assert best["valid_auc"] == final["valid_auc"]  # the epoch's validation is the final, exact one
    assert final["valid_auc"] == max(e["valid_auc"] for e in exact["epochs"])
    assert final["best_epoch_by"] == "exact valid_auc"
    assert f"final (best epoch {final['epoch']} by exact valid auc): test auc" in final_summary(final, exact["config"])
    sampled = train(tiny_link_dataset, **options).report
    assert sampled["final"]["best_epoch_by"] == "sampled valid_auc"
    assert "by sampled valid auc)" in final_summary(sampled["final"], sampled["config"])
