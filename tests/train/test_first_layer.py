"""GraphSAGE's first layer read straight from the feature table by the producer (issue 27 item 3): the run is the
same, loss for loss, as gathering every input row and aggregating them in the model; other models gather."""

from __future__ import annotations

import pytest

from graphtier.dataset import Dataset
from graphtier.memory.features.source import FeatureSource
from graphtier.train import train

RUN = dict(fanouts=(5, 3), epochs=2, batch_size=64, hidden=16, num_threads=2, seed=1, dropout=0.0)


def _losses(dataset: Dataset, **options: object) -> list[float]:
    report = train(dataset, **{**RUN, **options}).report
    return [epoch["loss"] for epoch in report["epochs"]] + [
        report["final"].get("test_acc") or report["final"]["test_auc"]
    ]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts FeatureSource.gather_mean calls that returned the first layer's inputs."""
    counts = {"used": 0}
    original = FeatureSource.gather_mean

    def counted(self: FeatureSource, *args: object) -> object:
        pair = original(self, *args)  # type: ignore[arg-type]
        counts["used"] += pair is not None
        return pair

    monkeypatch.setattr(FeatureSource, "gather_mean", counted)
    return counts


def _without_the_fused_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FeatureSource, "gather_mean", lambda self, *args: None)


@pytest.mark.parametrize("features_on", ["cpu-gather", "tiered"])
def test_node_training_is_the_same_with_the_first_layer_read_from_the_table(
    tiny_dataset: Dataset, calls: dict[str, int], monkeypatch: pytest.MonkeyPatch, features_on: str
) -> None:
    fused = _losses(tiny_dataset, model="sage", features_on=features_on)
    assert calls["used"] > 0
    _without_the_fused_path(monkeypatch)
    assert _losses(tiny_dataset, model="sage", features_on=features_on) == fused


def test_link_training_is_the_same_with_the_first_layer_read_from_the_table(
    tiny_link_dataset: Dataset, calls: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    fused = _losses(tiny_link_dataset, model="sage", task="link")
    assert calls["used"] > 0
    _without_the_fused_path(monkeypatch)
    assert _losses(tiny_link_dataset, model="sage", task="link") == fused


@pytest.mark.parametrize("model", ["gcn", "gat"])
def test_other_models_gather_their_inputs(tiny_dataset: Dataset, calls: dict[str, int], model: str) -> None:
    train(tiny_dataset, **{**RUN, "model": model, "epochs": 1})
    assert calls["used"] == 0
