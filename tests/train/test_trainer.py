"""The trainer on a tiny graph: loss decreases, report fields, checkpoint resume, bad options."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtier import Dataset, OptionError
from graphtier.errors import render_error
from graphtier.train import TrainConfig, Trainer, parse_fanouts, train

SMALL = dict(batch_size=50, hidden=16, fanouts=(5, 5), eval_batch_size=100, lr=0.01)


def test_loss_decreases_and_report_is_complete(tiny_dataset: Dataset, tmp_path: Path) -> None:
    report_path = tmp_path / "run.json"
    report = train(tiny_dataset, epochs=4, report=str(report_path), **SMALL)
    losses = [e["loss"] for e in report["epochs"]]
    assert losses[-1] < losses[0]
    written = json.loads(report_path.read_text())
    assert written["final"]["test_acc"] == report["final"]["test_acc"]
    assert 0.0 <= written["final"]["valid_acc"] <= 1.0
    epoch = written["epochs"][0]
    for key in ("loss", "train_acc", "valid_acc", "test_acc", "feature_bytes", "stage_seconds"):
        assert key in epoch
    stages = epoch["stage_seconds"]
    assert set(stages) == {"sample", "extract", "wait", "transfer", "train", "other", "total"}
    # the training loop's measured stages fit in the epoch's wall time and, with `other`, add up to it
    assert stages["wait"] + stages["transfer"] + stages["train"] <= stages["total"] + 1e-9
    main_thread = stages["wait"] + stages["transfer"] + stages["train"] + stages["other"]
    assert main_thread == pytest.approx(stages["total"], rel=1e-9, abs=1e-9)
    assert min(stages.values()) >= 0.0
    assert epoch["feature_bytes"] > 0 and epoch["stage_seconds"]["total"] > 0
    assert written["environment"]["torch"] and written["config"]["fanouts"] == [5, 5]


def test_majority_class_comes_from_the_train_split_and_is_scored_on_the_evaluated_nodes() -> None:
    from graphtier.train.loop.evaluation import majority_class_accuracy

    labels = np.array([1, 1, 1, 0, 0, 2, -1, -1, 0, 2], dtype=np.int64)
    # train: nodes 0-4 and the unlabelled 6, 7 (ignored): class 1 (3 of 5); the test nodes are mostly class 0
    assert majority_class_accuracy(labels[np.array([0, 1, 2, 3, 4, 6, 7])], labels[np.array([3, 4, 8, 5])]) == (1, 0.0)
    assert majority_class_accuracy(labels[np.array([0, 3, 8, 9])], labels[np.array([0, 3, 4, 8, 5])]) == (0, 0.6)
    assert majority_class_accuracy(labels[np.array([0, 3])], labels[np.array([1])]) == (0, 0.0)  # a tie: the lowest id
    assert majority_class_accuracy(labels[np.array([0])], labels[np.empty(0, np.int64)]) == (1, None)
    assert majority_class_accuracy(labels[np.array([6, 7])], labels[np.array([0])]) == (None, None)


def test_report_records_the_majority_class_baseline(tiny_dataset: Dataset) -> None:
    report = train(tiny_dataset, epochs=1, **SMALL)
    labels = np.asarray(tiny_dataset.labels)
    majority = int(np.bincount(labels[np.asarray(tiny_dataset.train_idx)]).argmax())
    test = np.asarray(tiny_dataset.test_idx)
    assert report["final"]["majority_class"] == majority
    assert report["final"]["test_majority_acc"] == pytest.approx(float((labels[test] == majority).mean()))


def test_final_line_says_which_inference_measured_the_accuracy() -> None:
    from graphtier.train.loop.report import inference_summary

    config = {"model": "sage", "sampler": "neighbor", "fanouts": [25, 10], "eval_fanouts": None}
    assert (
        inference_summary({"method": "sampled"}, config) == "sampled inference, fanouts 25,10; exact: --full-inference"
    )
    assert inference_summary({"method": "sampled"}, {**config, "eval_fanouts": [50, 50]}).startswith(
        "sampled inference, fanouts 50,50;"
    )
    assert inference_summary({"method": "full"}, config) == "exact layer-wise inference, all neighbours"
    assert inference_summary({"method": "sampled"}, {**config, "sampler": "shadow"}) == (
        "sampled inference, ShaDow subgraphs, fanouts 25,10"
    )
    assert inference_summary({"method": "sampled"}, {**config, "model": "mlp"}) == "features only, no neighbours"


def test_same_seed_same_result(tiny_dataset: Dataset) -> None:
    first = train(tiny_dataset, epochs=2, seed=3, **SMALL)
    second = train(tiny_dataset, epochs=2, seed=3, **SMALL)
    assert [e["loss"] for e in first["epochs"]] == [e["loss"] for e in second["epochs"]]


def test_graph_beats_features_only(tiny_dataset: Dataset) -> None:
    gnn = train(tiny_dataset, epochs=15, full_inference=True, **SMALL)
    mlp = train(tiny_dataset, model="mlp", epochs=15, **SMALL)
    assert gnn["final"]["method"] == "full"
    assert gnn["final"]["test_acc"] > mlp["final"]["test_acc"] + 0.1


@pytest.mark.parametrize("model", ["gcn", "gat"])
def test_other_models_learn(tiny_dataset: Dataset, model: str) -> None:
    report = train(tiny_dataset, model=model, epochs=6, **SMALL)
    assert report["epochs"][-1]["loss"] < report["epochs"][0]["loss"]


def test_shadow_sampler_deeper_model(tiny_dataset: Dataset) -> None:
    report = train(tiny_dataset, sampler="shadow", layers=3, epochs=4, **SMALL)
    assert report["config"]["num_layers"] == 3
    assert report["epochs"][-1]["loss"] < report["epochs"][0]["loss"]


def test_checkpoint_resume_matches_uninterrupted_run(tiny_dataset: Dataset, tmp_path: Path) -> None:
    straight = train(tiny_dataset, epochs=4, **SMALL)
    ckpt = tmp_path / "ckpt"
    train(tiny_dataset, epochs=2, checkpoint=str(ckpt), **SMALL)
    assert (ckpt / "checkpoint.pt").is_file()
    resumed_trainer = Trainer(tiny_dataset, TrainConfig(epochs=4, checkpoint=str(ckpt), **SMALL))
    assert resumed_trainer.start_epoch == 3
    resumed = resumed_trainer.fit()
    assert resumed["resumed_from"]["epoch"] == 2
    assert [e["loss"] for e in resumed["epochs"]] == pytest.approx([e["loss"] for e in straight["epochs"]], rel=1e-5)
    with pytest.raises(OptionError, match="'hidden'"):
        Trainer(tiny_dataset, TrainConfig(epochs=4, checkpoint=str(ckpt), **(SMALL | {"hidden": 8})))
    # the default (auto, sampled evaluation) trained with block degrees: the checkpoint records what ran
    with pytest.raises(OptionError, match="'gcn_degrees' is 'block' in the checkpoint but 'full'"):
        Trainer(tiny_dataset, TrainConfig(epochs=4, checkpoint=str(ckpt), **(SMALL | {"gcn_degrees": "full"})))


def test_checkpoint_without_gcn_degrees_resumes_as_full(tiny_dataset: Dataset, tmp_path: Path) -> None:
    """A checkpoint written before --gcn-degrees existed was trained with full-graph degrees."""
    import torch

    ckpt = tmp_path / "ckpt"
    train(tiny_dataset, model="gcn", gcn_degrees="full", epochs=1, checkpoint=str(ckpt), **SMALL)
    state = torch.load(ckpt / "checkpoint.pt", weights_only=True)
    del state["config"]["gcn_degrees"]
    torch.save(state, ckpt / "checkpoint.pt")
    resumed = Trainer(
        tiny_dataset, TrainConfig(model="gcn", gcn_degrees="full", epochs=2, checkpoint=str(ckpt), **SMALL)
    )
    assert resumed.start_epoch == 2
    with pytest.raises(OptionError, match="'gcn_degrees' is 'full'"):
        Trainer(tiny_dataset, TrainConfig(model="gcn", gcn_degrees="block", epochs=2, checkpoint=str(ckpt), **SMALL))


@pytest.mark.parametrize(
    ("gcn_degrees", "full_inference", "used"),
    [("auto", False, "block"), ("auto", True, "full"), ("full", False, "full"), ("block", True, "block")],
)
def test_auto_gcn_degrees_follow_the_final_evaluation(gcn_degrees: str, full_inference: bool, used: str) -> None:
    """auto: block degrees when the final accuracy is sampled, full ones with --full-inference; recorded resolved."""
    config = TrainConfig(model="gcn", gcn_degrees=gcn_degrees, full_inference=full_inference)
    assert config.gcn_degrees_used == used
    assert config.to_dict()["gcn_degrees"] == used


@pytest.mark.parametrize("gcn_degrees", ["full", "block"])
def test_gcn_degrees_reach_the_model(tiny_dataset: Dataset, gcn_degrees: str) -> None:
    """Training and sampled evaluation pass full-graph degrees (full) or None (block: the blocks' own)."""
    trainer = Trainer(tiny_dataset, TrainConfig(model="gcn", gcn_degrees=gcn_degrees, epochs=1, **SMALL))
    seen: list[tuple[bool, object]] = []
    forward = trainer.model.forward

    def recording(x, blocks, degree=None):  # type: ignore[no-untyped-def]
        seen.append((trainer.model.training, degree))
        if degree is not None:  # the batch's nodes' full-graph in-degrees, in n_id order
            assert degree.shape == (blocks[0].num_src,)
        return forward(x, blocks, degree)

    trainer.model.forward = recording  # type: ignore[method-assign]
    trainer.fit()
    assert {training for training, _ in seen} == {True, False}  # both training and sampled evaluation
    assert all((degree is None) == (gcn_degrees == "block") for _, degree in seen)


def test_gcn_degrees_change_training(tiny_dataset: Dataset) -> None:
    full = train(tiny_dataset, model="gcn", gcn_degrees="full", epochs=2, **SMALL)
    block = train(tiny_dataset, model="gcn", gcn_degrees="block", epochs=2, **SMALL)
    assert block["config"]["gcn_degrees"] == "block" and full["config"]["gcn_degrees"] == "full"
    assert [e["loss"] for e in block["epochs"]] != [e["loss"] for e in full["epochs"]]
    # other models ignore the option (as they ignore --heads): the same run either way
    sage = [train(tiny_dataset, gcn_degrees=d, epochs=1, **SMALL)["epochs"][0]["loss"] for d in ("full", "block")]
    assert sage[0] == sage[1]


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"model": "transformer"}, "--model"),
        ({"sampler": "random-walk"}, "--sampler"),
        ({"fanouts": (5, 0)}, "--fanouts"),
        ({"device": "cuda"}, "CUDA"),
        ({"device": "tpu"}, "--device"),
        ({"layers": 3}, "--layers"),
        ({"batch_size": 0}, "--batch-size"),
        ({"dropout": 1.5}, "--dropout"),
        ({"sample_on": "tpu"}, "--sample-on"),
        ({"topology_budget": "10%"}, "--topology-budget: applies to --sample-on gpu only"),
        ({"sample_on": "gpu", "sampler": "shadow", "layers": 2}, "--sample-on gpu: runs the neighbour sampler only"),
        ({"sample_on": "gpu", "devices": ("cpu", "cpu")}, "--sample-on gpu: not available with --devices"),
        (
            {"model": "gcn", "gcn_degrees": "sampled"},
            "--gcn-degrees expected one of auto, full, block, found 'sampled'",
        ),
    ],
)
def test_bad_options_fail_before_work(tiny_dataset: Dataset, options: dict, fragment: str) -> None:
    if options.get("device") == "cuda":
        pytest.importorskip("torch")
        import torch

        if torch.cuda.is_available():
            pytest.skip("CUDA present")
    with pytest.raises(OptionError) as info:
        Trainer(tiny_dataset, TrainConfig(**(SMALL | options)))
    # one message, two renderings: the CLI user reads the flags, the Python caller the argument names
    assert fragment in render_error(info.value, cli=True)
    assert "--" not in str(info.value), str(info.value)
    assert fragment == "CUDA" or any(f"{name}=" in str(info.value) for name in options)


def test_dataset_without_labels_or_split(tiny_dataset: Dataset, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "nolabels"
    shutil.copytree(tiny_dataset.path, copy)
    (copy / "train_idx.npy").unlink()
    with pytest.raises(OptionError, match="train split"):
        Trainer(Dataset.open(copy), TrainConfig(**SMALL))
    meta = json.loads((copy / "meta.json").read_text())
    meta["num_classes"] = 0
    (copy / "meta.json").write_text(json.dumps(meta))
    (copy / "labels.npy").unlink()
    with pytest.raises(OptionError, match="no labels"):
        Trainer(Dataset.open(copy), TrainConfig(**SMALL))


def test_parse_fanouts() -> None:
    assert parse_fanouts("25,10") == (25, 10)
    assert parse_fanouts(" -1, 5 ") == (-1, 5)
    for bad in ("", "a,b", "0", "-2", "3.5"):
        with pytest.raises(OptionError, match="^fanouts="):
            parse_fanouts(bad)


def test_float16_features(tmp_path: Path) -> None:
    from tests.conftest import write_labelled_graph

    ds = write_labelled_graph(tmp_path / "f16", feature_dtype="float16")
    report = train(ds, epochs=2, **SMALL)
    assert report["epochs"][0]["feature_bytes"] > 0
    assert np.isfinite(report["epochs"][-1]["loss"])


@pytest.mark.parametrize("mode", ["zero-copy", "tiered", "tiered+cache"])
def test_feature_modes_match_cpu_gather_on_cpu(tiny_dataset: Dataset, mode: str) -> None:
    """On a CPU-only machine every --features-on mode keeps its tier plan and accounting and trains
    exactly like cpu-gather for the same seed."""
    baseline = train(tiny_dataset, epochs=2, **SMALL)
    options: dict = {"features_on": mode}
    if mode.startswith("tiered"):
        options["gpu_budget"] = "25%"
    if mode == "tiered+cache":
        options["cache_budget"] = "10%"
    report = train(tiny_dataset, epochs=2, **SMALL, **options)
    assert [e["loss"] for e in report["epochs"]] == [e["loss"] for e in baseline["epochs"]]
    for epoch in report["epochs"]:
        tiers = epoch["feature_bytes_by_tier"]
        assert set(tiers) == {"gpu", "gpu-peer", "cache", "host", "disk"}
        assert sum(tiers.values()) == epoch["feature_bytes"]
        if mode.startswith("tiered"):
            assert tiers["gpu"] > 0 and tiers["host"] > 0
        else:
            assert tiers["host"] == epoch["feature_bytes"]
    if mode == "tiered+cache":
        assert 0.0 <= report["epochs"][-1]["cache_hit_ratio"] <= 1.0


def test_report_counts_topology_bytes_of_the_sampler(tiny_dataset: Dataset) -> None:
    report = train(tiny_dataset, epochs=1, **SMALL)
    epoch = report["epochs"][0]
    topology = epoch["topology_bytes_by_tier"]
    itemsize = np.asarray(tiny_dataset.indices).dtype.itemsize
    # CPU sampling reads every sampled edge's entry and two indptr entries per destination, all from host memory
    assert topology["host"] == sum(topology.values()) > epoch["sampled_edges"] * itemsize
    assert topology["gpu"] == topology["disk"] == 0


@pytest.mark.gpu
@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs CUDA")
def test_gpu_sampling_trains_on_the_same_batches_as_cpu_sampling(tiny_dataset: Dataset) -> None:
    options = dict(SMALL, epochs=2, device="cuda", features_on="tiered", gpu_budget="20%", prefetch=2)
    on_cpu = train(tiny_dataset, sample_on="cpu", **options)
    on_gpu = train(tiny_dataset, sample_on="gpu", topology_budget="30%", **options)
    for cpu_epoch, gpu_epoch in zip(on_cpu["epochs"], on_gpu["epochs"]):
        assert gpu_epoch["sampled_edges"] == cpu_epoch["sampled_edges"]
        assert gpu_epoch["loss"] == pytest.approx(cpu_epoch["loss"], rel=1e-4)
        topology = gpu_epoch["topology_bytes_by_tier"]
        assert topology["gpu"] > 0 and sum(topology.values()) == sum(cpu_epoch["topology_bytes_by_tier"].values())


def test_train_options_over_a_config_keep_auto_gcn_degrees(tiny_dataset: Dataset) -> None:
    """Issue 24: ``train(ds, TrainConfig(model="gcn"), full_inference=True)`` trained with block degrees (the config
    went through to_dict(), which resolved "auto" before the override) while the flat spelling used full."""
    with_config = train(tiny_dataset, TrainConfig(model="gcn", epochs=1, **SMALL), full_inference=True)
    flat = train(tiny_dataset, model="gcn", epochs=1, full_inference=True, **SMALL)
    assert with_config.config.gcn_degrees_used == flat.config.gcn_degrees_used == "full"
    assert with_config["config"]["gcn_degrees"] == flat["config"]["gcn_degrees"] == "full"
    assert with_config.config == flat.config


def test_train_config_is_composed_of_specs_and_keeps_its_flat_record() -> None:
    """The parts own their options; flat options go to the part with a field of that name; the record is flat."""
    from dataclasses import replace

    from graphtier.memory import PlacementSpec
    from graphtier.sampling import Fanouts, SamplerSpec

    config = TrainConfig(sampling=SamplerSpec(fanouts="10,5"), placement=PlacementSpec(features_on="tiered"), lr=0.1)
    assert config.sampling.fanouts == Fanouts((10, 5)) == (10, 5) and config.optim.lr == 0.1
    assert config == TrainConfig(fanouts=(10, 5), features_on="tiered", lr=0.1)
    record = config.to_dict()
    assert record["fanouts"] == [10, 5] and record["features_on"] == "tiered" and record["num_layers"] == 2
    assert replace(config, optim=replace(config.optim, epochs=3)) == config.with_options(epochs=3)
    with pytest.raises(TypeError, match="unexpected option 'fanout'"):
        TrainConfig(fanout=(5,))


def test_a_trainer_leaves_process_settings_alone_and_train_sets_the_threads(tiny_dataset: Dataset) -> None:
    """Trainer() changes no thread count and no numpy global RNG (issue 24); train() applies num_threads, as
    the command line does."""
    import torch

    threads = torch.get_num_threads()
    other = 1 if threads != 1 else 2
    np.random.seed(5)
    expected = np.random.random()
    np.random.seed(5)
    try:
        Trainer(tiny_dataset, TrainConfig(epochs=1, num_threads=other, quiet=True, **SMALL)).fit()
        assert torch.get_num_threads() == threads
        assert np.random.random() == expected
        train(tiny_dataset, epochs=1, num_threads=other, quiet=True, **SMALL)
        assert torch.get_num_threads() == other
    finally:
        torch.set_num_threads(threads)


def test_final_sampled_accuracy_is_the_best_epochs_without_a_second_pass(
    tiny_dataset: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graphtier.train.loop.evaluation import Evaluator

    calls: list[str] = []
    original = Evaluator.class_scores

    def counting(self: Evaluator, model: object, split: str) -> dict[str, float | None]:
        calls.append(split)
        return original(self, model, split)  # type: ignore[arg-type]

    monkeypatch.setattr(Evaluator, "class_scores", counting)
    report = train(tiny_dataset, epochs=3, **SMALL)
    best = next(e for e in report["epochs"] if e["epoch"] == report["final"]["epoch"])
    assert (report["final"]["valid_acc"], report["final"]["test_acc"]) == (best["valid_acc"], best["test_acc"])
    assert calls == ["valid", "test"] * 3  # once per split and epoch; the final figures are the best epoch's
