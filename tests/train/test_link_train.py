"""--task link: training, evaluation, report keys, checkpoint, feature modes, saved model, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from graphtier import Dataset, OptionError
from graphtier.train import TrainConfig, Trainer, train
from graphtier.train.loop.feed import DeviceBatch
from graphtier.train.loop.report import epoch_summary, final_summary
from graphtier.train.loop.task import LinkTask
from graphtier.train.nn.link_model import LinkModel, build_task_model, score_pairs
from graphtier.train.options.spec import TaskSpec
from graphtier.train.persist.saved import load_model
from tests.conftest import write_labelled_graph, write_link_dataset

SMALL = dict(task="link", batch_size=128, hidden=16, fanouts=(5, 5), eval_batch_size=256, lr=0.01)


def test_link_training_learns_and_reports_the_link_metrics(tiny_link_dataset: Dataset) -> None:
    report = train(tiny_link_dataset, epochs=3, **SMALL)
    epochs, final = report["epochs"], report["final"]
    assert epochs[-1]["loss"] < epochs[0]["loss"]
    assert {"valid_auc", "valid_ap", "valid_hits@10"} <= set(epochs[-1]) and "valid_acc" not in epochs[-1]
    assert final["method"] == "full"
    for key in ("valid_auc", "test_auc", "test_ap", "test_hits@10", "test_popularity_auc", "test_popularity_hits@10"):
        assert final[key] is not None and 0.0 <= final[key] <= 1.0, key
    assert "test_mrr" not in final  # negative pairs: no ranking of per-positive negatives
    assert final["test_auc"] > 0.7 and final["test_auc"] > final["test_popularity_auc"]
    line = final_summary(final, report["config"])
    assert line.startswith("final (best epoch") and "auc" in line and "popularity" in line
    assert "valid auc" in epoch_summary(epochs[-1], 3)


def test_per_positive_negatives_give_mrr_and_pick_the_best_epoch_by_it(tmp_path: Path) -> None:
    data = write_link_dataset(tmp_path / "k", write_labelled_graph(tmp_path / "t"), eval_negatives=20)
    report = train(data, epochs=2, hits_k=5, **SMALL)
    final = report["final"]
    assert {"test_mrr", "valid_mrr", "test_hits@5", "test_popularity_mrr"} <= set(final)
    valid_mrr = [e["valid_mrr"] for e in report["epochs"]]
    assert final["epoch"] == 1 + int(np.argmax(valid_mrr))


def test_final_numbers_are_exact_layerwise_embeddings_scored_by_the_decoder(tiny_link_dataset: Dataset) -> None:
    """The final test AUC equals the AUC of the best model's own full-graph embeddings, computed here by hand."""
    from graphtier.train.loop.link_metrics import auc
    from graphtier.train.loop.task import eval_pairs

    config = TrainConfig(epochs=2, **SMALL)
    trainer = Trainer(tiny_link_dataset, config)
    report = trainer.fit()
    model = trainer.model
    assert isinstance(model, LinkModel)
    model.eval()
    link = tiny_link_dataset.link
    assert link is not None
    pairs, labels = eval_pairs(link.pairs("test"))
    n = tiny_link_dataset.num_nodes
    everyone = torch.from_numpy(np.asarray(tiny_link_dataset.features)).float()
    indptr, indices = np.asarray(tiny_link_dataset.indptr), np.asarray(tiny_link_dataset.indices)
    from graphtier.sampling import NeighborSampler

    batch = NeighborSampler(indptr, indices, [-1, -1], seed=0).sample(np.arange(n), batch_id=0)
    with torch.no_grad():
        h = model(everyone[batch.n_id], batch.blocks)[batch.seed_index]
    scores = score_pairs(model, h, torch.from_numpy(pairs)).numpy()
    expected = auc(scores[labels == 1], scores[labels == 0])
    assert report["final"]["test_auc"] == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(("model", "decoder"), [("sage", "mlp"), ("gcn", "dot"), ("gat", "dot"), ("mlp", "mlp")])
def test_every_encoder_and_decoder_trains(tiny_link_dataset: Dataset, model: str, decoder: str) -> None:
    options = dict(SMALL, model=model, decoder=decoder, hidden=16, heads=2)
    report = train(tiny_link_dataset, epochs=1, **options)
    assert np.isfinite(report["epochs"][0]["loss"]) and report["final"]["test_auc"] is not None


@pytest.mark.parametrize("mode", ["zero-copy", "tiered", "tiered+cache"])
def test_link_feature_modes_match_cpu_gather_on_cpu(tiny_link_dataset: Dataset, mode: str) -> None:
    baseline = train(tiny_link_dataset, epochs=1, **SMALL)
    options: dict = {"features_on": mode}
    if mode.startswith("tiered"):
        options["gpu_budget"] = "25%"
    if mode == "tiered+cache":
        options["cache_budget"] = "10%"
    report = train(tiny_link_dataset, epochs=1, **SMALL, **options)
    assert [e["loss"] for e in report["epochs"]] == [e["loss"] for e in baseline["epochs"]]
    assert report["final"]["test_auc"] == pytest.approx(baseline["final"]["test_auc"])


def test_link_checkpoint_resume_matches_uninterrupted_run(tiny_link_dataset: Dataset, tmp_path: Path) -> None:
    whole = train(tiny_link_dataset, epochs=2, **SMALL)
    ckpt = str(tmp_path / "ckpt")
    train(tiny_link_dataset, epochs=1, checkpoint=ckpt, **SMALL)
    resumed = train(tiny_link_dataset, epochs=2, checkpoint=ckpt, **SMALL)
    assert resumed["resumed_from"] is not None
    assert resumed["epochs"][-1]["loss"] == pytest.approx(whole["epochs"][-1]["loss"])
    assert resumed["final"]["test_auc"] == pytest.approx(whole["final"]["test_auc"])
    with pytest.raises(OptionError, match="decoder"):  # another decoder cannot resume this checkpoint
        train(tiny_link_dataset, epochs=3, checkpoint=ckpt, **dict(SMALL, decoder="mlp"))


def test_link_task_needs_an_edge_split(tiny_dataset: Dataset) -> None:
    with pytest.raises(OptionError, match="edge-split|edge split") as error:
        TrainConfig(task="link").validate(tiny_dataset)
    assert "\n" not in str(error.value)


def test_link_task_needs_no_labels(tmp_path: Path) -> None:
    """Labels and node splits are not needed for links (a graph with features only)."""
    source = write_labelled_graph(tmp_path / "t")
    data = write_link_dataset(tmp_path / "l", source)
    for name in ("labels", "train_idx", "valid_idx", "test_idx"):
        (data.path / f"{name}.npy").unlink()
    import json

    meta = json.loads((data.path / "meta.json").read_text())
    meta["num_classes"] = 0
    (data.path / "meta.json").write_text(json.dumps(meta))
    unlabelled = Dataset.open(data.path)
    TrainConfig(task="link").validate(unlabelled)
    with pytest.raises(OptionError, match="labels"):
        TrainConfig().validate(unlabelled)


def test_link_options_are_checked() -> None:
    for options, fragment in (
        ({"task": "edges"}, "task"), ({"decoder": "cosine"}, "decoder"), ({"num_negatives": 0}, "num_negatives"),
        ({"negative_sampling": "x"}, "negative_sampling"), ({"hits_k": 0}, "hits_k"),
    ):  # fmt: skip
        with pytest.raises(OptionError, match=fragment):
            TrainConfig(**options)


def test_saved_link_model_round_trips(tiny_link_dataset: Dataset, tmp_path: Path) -> None:
    config = TrainConfig(epochs=1, decoder="mlp", save_model=str(tmp_path / "m.pt"), **SMALL)
    trainer = Trainer(tiny_link_dataset, config)
    trainer.fit()
    saved = load_model(tmp_path / "m.pt")
    assert saved.task == "link" and saved.config["decoder"] == "mlp" and isinstance(saved.model, LinkModel)
    for name, tensor in trainer.model.state_dict().items():
        assert torch.equal(saved.model.state_dict()[name], tensor.cpu()), name


def test_build_task_model_node_is_build_model() -> None:
    node = build_task_model("node", "sage", 8, 16, 3, 2)
    link = build_task_model("link", "sage", 8, 16, 3, 2, decoder="dot")
    assert not isinstance(node, LinkModel) and isinstance(link, LinkModel)
    assert link.encoder.convs[-1].lin_l.weight.shape[0] == 16  # the encoder outputs hidden-wide embeddings
    h = torch.randn(5, 16)
    assert torch.allclose(link.score(h, h), (h * h).sum(1))


def test_link_trains_on_two_cpu_ranks(tiny_link_dataset: Dataset, tmp_path: Path) -> None:
    """--devices cpu,cpu: the ranks share each global batch of pairs by count; rank 0 reports the link metrics."""
    from graphtier.train.loop.launch import launch

    config = TrainConfig(epochs=1, devices=("cpu", "cpu"), cpu_threads=1, quiet=True, **SMALL)
    report = launch(str(tiny_link_dataset.path), config)
    assert report is not None
    pairs = int(tiny_link_dataset.link.pairs("train").num_positives)
    assert sum(rank["seeds"] for rank in report["ranks"]) == pairs * 2  # a positive and a negative per pair
    assert report["final"]["test_auc"] is not None and report["epochs"][0]["valid_auc"] is not None


def test_pair_outputs_have_the_same_gradient_bits_on_every_run_with_two_threads() -> None:
    # the rows of a node in several pairs were summed by indexing's backward in a thread-dependent order: two
    # link runs with the same seed gave losses 1e-6 apart on 2 threads (bit-equal on 1)
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        torch.manual_seed(0)
        model = build_task_model("link", "sage", 8, 16, 2, 1, decoder="mlp", dropout=0.0)
        out = torch.randn(20_000, 16, requires_grad=True)
        index = torch.randint(0, 2_000, (2, 200_000))
        batch = DeviceBatch(None, [], torch.zeros(200_000), torch.arange(1), None, index[0], index[1])
        task = LinkTask(TaskSpec(task="link"))

        def run() -> torch.Tensor:
            out.grad = None
            task.outputs(model, out, batch).sum().backward()
            return out.grad.clone()

        first = run()
        assert all(torch.equal(first, run()) for _ in range(4))
    finally:
        torch.set_num_threads(previous)
