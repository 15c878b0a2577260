"""graphtier.Loader: device batches for a user's own loop, node and link seeds, typed datasets, bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import graphtier
from graphtier import Dataset, GraphStore, Loader, OptionError
from graphtier.sampling.link.sampler import LinkMiniBatch
from graphtier.train import build_model
from graphtier.train.loop.feed import TypedDeviceBatch
from graphtier.train.nn.typed_models import build_typed_model
from tests.typed_data import write_tiny_typed


def test_a_pass_covers_the_training_seeds_once_with_their_labels_and_reshuffles(tiny_dataset: Dataset) -> None:
    with Loader(tiny_dataset, fanouts=(5, 5), batch_size=64, seed=3) as loader:
        train = np.sort(tiny_dataset.split("train"))
        assert len(loader) == -(-len(train) // 64)
        orders = []
        for _ in range(2):
            seen = []
            for batch in loader:
                assert batch.x.dtype == torch.float32 and batch.x.shape[1] == tiny_dataset.feature_dim
                assert len(batch.blocks) == 2 and batch.y.dtype == torch.int64
                seeds = batch.n_id[batch.seed_index].numpy()
                np.testing.assert_array_equal(batch.y.numpy(), tiny_dataset.labels[seeds])
                seen.append(seeds)
            orders.append(np.concatenate(seen))
            np.testing.assert_array_equal(np.sort(orders[-1]), train)
        assert not np.array_equal(orders[0], orders[1])  # a new order every pass
    again = Loader(tiny_dataset, fanouts=(5, 5), batch_size=64, seed=3)
    first = next(iter(again))
    assert torch.equal(first.n_id, next(iter(Loader(tiny_dataset, fanouts=(5, 5), batch_size=64, seed=3))).n_id)
    again.close()


def test_a_model_trains_on_it_and_leaving_a_pass_early_is_safe(tiny_dataset: Dataset) -> None:
    torch.manual_seed(0)
    model = build_model("sage", tiny_dataset.feature_dim, 32, tiny_dataset.num_classes, num_layers=2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    store = GraphStore.open(tiny_dataset)
    loader = Loader(store, fanouts=(5, 5), batch_size=64, seed=0)
    losses = []
    for _ in range(5):
        total = 0.0
        for batch in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(batch.forward(model)[batch.seed_index], batch.y)
            loss.backward()
            optimizer.step()
            total += float(loss.detach())
        losses.append(total / len(loader))
    assert losses[-1] < 0.8 * losses[0]
    for batch in loader:  # break out of a pass: the producer stops, the next pass starts afresh
        break
    assert sum(1 for _ in loader) == len(loader)
    loader.close()
    assert store.split("train").size  # a store given to the loader stays open
    store.close()


def test_valid_seeds_and_an_array_keep_their_order_without_shuffle(tiny_dataset: Dataset) -> None:
    ids = np.array([5, 3, 9, 1], dtype=np.int64)
    with Loader(tiny_dataset, ids, fanouts=(3,), batch_size=2, shuffle=False) as loader:
        got = np.concatenate([b.n_id[b.seed_index].numpy() for b in loader])
    np.testing.assert_array_equal(got, ids)
    with Loader(tiny_dataset, "valid", fanouts=(3,), batch_size=1000, shuffle=False) as loader:
        (batch,) = list(loader)
        np.testing.assert_array_equal(batch.n_id[batch.seed_index].numpy(), tiny_dataset.split("valid"))


def test_link_seeds_give_pair_labels_and_endpoint_rows(tiny_link_dataset: Dataset) -> None:
    with Loader(tiny_link_dataset, task="link", fanouts=(5, 5), batch_size=32, num_negatives=2) as loader:
        batch = next(iter(loader))
        assert batch.y.dtype == torch.float32 and batch.src_index is not None and batch.dst_index is not None
        positives = int(batch.y.sum())
        assert positives == 32 and batch.y.shape[0] == 3 * 32  # two negatives per positive
        assert batch.src_index.shape == batch.dst_index.shape == batch.y.shape
        assert len(loader) == -(-len(np.load(tiny_link_dataset.path / "link_train.npy")) // 32)
    assert issubclass(LinkMiniBatch, graphtier.MiniBatch)


def test_a_typed_dataset_gives_typed_batches(tmp_path: Path) -> None:
    data = write_tiny_typed(tmp_path / "typed", papers=60)
    with Loader(data, fanouts=(4, 4), batch_size=8) as loader:
        batch = next(iter(loader))
        assert isinstance(batch, TypedDeviceBatch) and "paper" in batch.x
        schema = data.schema
        model = build_typed_model("rgcn", schema, in_dims={t.name: t.feature_dim for t in schema.node_types},
                                  hidden=8, num_classes=data.num_classes, num_layers=2, dropout=0.0,
                                  featureless="embedding")  # fmt: skip
        out = batch.forward(model)
        assert out[batch.seed_index].shape == (batch.y.shape[0], data.num_classes)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seeds": "training"}, "seeds= expected one of train, valid, test"),
        ({"seeds": np.array([0.5])}, "seeds= expected a 1-D integer array"),
        ({"seeds": np.array([0, 400])}, "seeds= expected node ids in [0, 400)"),
        ({"batch_size": 0}, "batch_size= expected an integer >= 1"),
        ({"task": "link"}, "link"),
        ({"fanouts": (0,)}, "fanouts"),
    ],
)
def test_bad_arguments_are_one_line_errors(tiny_dataset: Dataset, kwargs: dict, message: str) -> None:
    with pytest.raises(OptionError) as error:
        Loader(tiny_dataset, **kwargs)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_placement_options_with_an_open_store_are_refused(tiny_dataset: Dataset) -> None:
    with GraphStore.open(tiny_dataset) as store, pytest.raises(OptionError, match="features_on"):
        Loader(store, features_on="tiered")


def test_graphtier_train_is_callable_whichever_is_imported_first(tiny_dataset: Dataset) -> None:
    """``import graphtier.train`` binds the package to ``graphtier.train``; calling it still trains."""
    code = (
        "import sys, graphtier.train, graphtier\n"
        "assert callable(graphtier.train) and graphtier.train.predict.__module__ == 'graphtier.train.infer.predict'\n"
        "result = graphtier.train(sys.argv[1], epochs=1, fanouts=(3,), hidden=8, quiet=True)\n"
        "print(type(result).__name__, 'test_acc' in result['final'])\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tiny_dataset.path)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["TrainResult", "True"]
