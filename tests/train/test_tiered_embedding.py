"""TieredEmbedding: lookup from both tiers, the sparse row-wise Adam, state, and training with a split table."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from graphtier import OptionError
from graphtier.dataset import Dataset
from graphtier.train import TrainConfig, Trainer, train
from graphtier.train.nn.table_storage import INIT_CHUNK_ROWS
from graphtier.train.nn.tiered_embedding import STATE_KEY, TieredEmbedding, attach_sparse_adam, learnable_row_bytes
from tests.typed_data import write_typed_labelled_graph

QUIET = {"quiet": True, "num_threads": 1, "prefetch": 1}
TYPED = {"model": "rgcn", "fanouts": (4, 4), "hidden": 16, "batch_size": 32, "lr": 0.02, "dropout": 0.0, **QUIET}


def _table(hot_rows: int) -> TieredEmbedding:
    torch.manual_seed(0)
    return TieredEmbedding(10, 3, hot_rows=hot_rows)


def _reference_adam(weight, m, v, steps, step, ids, grad, lr=0.1, betas=(0.9, 0.999), eps=1e-8):  # type: ignore[no-untyped-def]
    """Step ``step`` of SparseAdam row by row (plain loops): one step count for the table, each row's last kept."""
    for i, row in enumerate(ids.tolist()):
        steps[row] = step
        m[row] = betas[0] * m[row] + (1 - betas[0]) * grad[i]
        v[row] = betas[1] * v[row] + (1 - betas[1]) * grad[i] ** 2
        size = lr * (1 - betas[1] ** step) ** 0.5 / (1 - betas[0] ** step)
        weight[row] = weight[row] - size * m[row] / (v[row].sqrt() + eps)


@pytest.mark.parametrize("hot_rows", [0, 4, 10])
def test_forward_is_a_plain_lookup_from_both_tiers(hot_rows: int) -> None:
    table = _table(hot_rows)
    plain = torch.nn.Embedding.from_pretrained(table.full("weight"))
    ids = torch.tensor([9, 0, 4, 3, 7, 0])
    torch.testing.assert_close(table(ids), plain(ids), rtol=0, atol=0)
    assert table.rows_read == {"device": int((ids < hot_rows).sum()), "host": int((ids >= hot_rows).sum())}
    assert table.tier_bytes() == {"device": hot_rows * 40, "host": (10 - hot_rows) * 40}  # 3 floats x 3 + int32


@pytest.mark.parametrize("hot_rows", [0, 5, 10])
def test_sparse_step_is_row_wise_adam_on_the_touched_rows_only(hot_rows: int) -> None:
    table = _table(hot_rows)
    dense = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    attach_sparse_adam(dense, torch.nn.ModuleDict({"t": table}))
    weight = table.full("weight").double()
    m, v = torch.zeros_like(weight), torch.zeros_like(weight)
    steps = [0] * 10
    for step, ids in enumerate((torch.tensor([1, 6, 8, 6]), torch.tensor([6, 2, 9])), 1):  # 6 twice: summed
        dense.zero_grad()
        out = table(ids)
        (out * torch.arange(1.0, 4.0)).pow(2).sum().backward()
        grad = torch.zeros(10, 3, dtype=torch.float64).index_add_(0, ids, out.grad.double())
        touched = torch.unique(ids)
        _reference_adam(weight, m, v, steps, step, touched, grad[touched])
        dense.step()
        torch.testing.assert_close(table.full("weight").double(), weight, rtol=1e-6, atol=1e-7)
    untouched = [0, 3, 4, 5, 7]
    torch.testing.assert_close(table.full("weight")[untouched], _table(hot_rows).full("weight")[untouched], rtol=0,
                               atol=0)  # fmt: skip
    assert table.full("steps").tolist() == steps


@pytest.mark.parametrize("hot_rows", [0, 6])
def test_the_sparse_step_equals_torch_sparse_adam_on_a_sparse_embedding(hot_rows: int) -> None:
    """What PyG's and DGL's examples train an ``nn.Embedding(sparse=True)`` with: rows first touched late take its
    table-wide step count, and a reloaded state goes on from the count it had."""
    table = _table(hot_rows)
    plain = torch.nn.Embedding.from_pretrained(table.full("weight").clone(), freeze=False, sparse=True)
    reference = torch.optim.SparseAdam(plain.parameters(), lr=0.05)
    dense = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=0.05)
    holder = torch.nn.ModuleDict({"t": table})
    attach_sparse_adam(dense, holder)
    batches = [[1, 2], [1, 3, 3], [1], [8, 9, 1], [0, 9]]  # 8 and 0 first touched at steps 4 and 5
    for k, batch in enumerate(batches):
        ids = torch.tensor(batch)
        if k == 3:  # a checkpoint: a new table and optimizer resume from the saved states
            state, optimizer_state = holder.state_dict(), dense.state_dict()
            table = TieredEmbedding(10, 3, hot_rows=hot_rows)
            holder = torch.nn.ModuleDict({"t": table})
            dense = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=0.05)
            attach_sparse_adam(dense, holder)
            holder.load_state_dict(state)
            dense.load_state_dict(optimizer_state)
        for optimizer in (reference, dense):
            optimizer.zero_grad()
        (plain(ids) ** 2).mul(torch.arange(1.0, 4.0)).sum().backward()
        (table(ids) ** 2).mul(torch.arange(1.0, 4.0)).sum().backward()
        reference.step()
        dense.step()
        torch.testing.assert_close(table.full("weight"), plain.weight.detach(), rtol=1e-6, atol=1e-7)
    assert table.full("steps").tolist() == [5, 4, 1, 2, 0, 0, 0, 0, 4, 5]  # each row's last step


def test_every_row_touched_equals_torch_adam() -> None:
    table = _table(4)
    param = torch.nn.Parameter(table.full("weight").clone())
    reference = torch.optim.Adam([param], lr=0.05, weight_decay=0.01)
    dense = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=0.05, weight_decay=0.01)
    attach_sparse_adam(dense, table)
    ids = torch.arange(10)
    for k in range(3):
        reference.zero_grad()
        dense.zero_grad()
        (param[ids] ** 3).sum().mul(k + 1).backward()
        (table(ids) ** 3).sum().mul(k + 1).backward()
        reference.step()
        dense.step()
    torch.testing.assert_close(table.full("weight"), param.detach(), rtol=1e-5, atol=1e-6)


def test_state_is_the_logical_table_whatever_the_split() -> None:
    source = _table(3)
    dense = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    holder = torch.nn.ModuleDict({"t": source})
    attach_sparse_adam(dense, holder)
    source(torch.tensor([1, 7])).sum().backward()
    dense.step()
    state, optimizer_state = holder.state_dict(), dense.state_dict()
    assert list(state) == ["t.weight"] and state["t.weight"].shape == (10, 3)
    target = TieredEmbedding(10, 3, hot_rows=8)
    other = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    target_holder = torch.nn.ModuleDict({"t": target})
    attach_sparse_adam(other, target_holder)
    target_holder.load_state_dict(state)
    other.load_state_dict(optimizer_state)
    for key in ("weight", "exp_avg", "exp_avg_sq", "steps"):
        torch.testing.assert_close(target.full(key), source.full(key), rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="t.weight"):
        target_holder.load_state_dict({"t.weight": torch.zeros(9, 3)})
    with pytest.raises(ValueError, match=STATE_KEY):
        other.load_state_dict({k: v for k, v in optimizer_state.items() if k != STATE_KEY})


@pytest.fixture(scope="module")
def typed_dataset(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return write_typed_labelled_graph(tmp_path_factory.mktemp("typed") / "typed")


def _losses(report: dict) -> list[float]:
    return [epoch["loss"] for epoch in report["epochs"]]


@pytest.mark.parametrize("featureless", ["embedding", "onehot"])
def test_hot_or_cold_table_gives_the_same_losses(typed_dataset: Dataset, featureless: str) -> None:
    runs = {budget: train(typed_dataset, epochs=2, featureless=featureless, features_on="tiered", gpu_budget=budget,
                          **TYPED).report for budget in ("0", "100%")}  # fmt: skip
    assert _losses(runs["0"]) == _losses(runs["100%"])
    cold = runs["0"]["epochs"][0]["embedding_bytes_by_tier_by_type"]["subject"]
    hot = runs["100%"]["epochs"][0]["embedding_bytes_by_tier_by_type"]["subject"]
    assert cold["device"] == 0 and cold["host"] > 0
    assert hot["host"] == 0 and hot["device"] == cold["host"]


def test_the_gpu_budget_covers_the_learnable_tables(typed_dataset: Dataset) -> None:
    row = learnable_row_bytes(16)
    features = 300 * 8 * 4 + 120 * 4 * 2  # paper float32 [300, 8], author float16 [120, 4]
    for budget, subjects in ((features + 6 * row, 6), (0, 0)):
        config = TrainConfig(epochs=1, features_on="tiered", gpu_budget=f"{budget}B", **TYPED)
        trainer = Trainer(typed_dataset, config)
        (table,) = trainer.model.inputs.tables.values()
        assert table.hot_rows == subjects
        assert trainer.store.features.learnable_rows == {"subject": subjects}
        trainer.store.close()
    config = TrainConfig(epochs=1, features_on="tiered", gpu_budget=f"{features // 2}B", **TYPED)
    trainer = Trainer(typed_dataset, config)  # one budget for all tables: the split fits in it
    assert trainer.model.inputs.tables["t2"].hot_rows * row <= features // 2
    trainer.store.close()


def test_resumed_run_repeats_the_uninterrupted_one(typed_dataset: Dataset, tmp_path: Path) -> None:
    options = {"featureless": "embedding", "features_on": "tiered", "gpu_budget": "40%", **TYPED}
    whole = train(typed_dataset, epochs=3, **options).report
    train(typed_dataset, epochs=2, checkpoint=str(tmp_path / "ckpt"), **options)
    resumed = train(typed_dataset, epochs=3, checkpoint=str(tmp_path / "ckpt"), **options).report
    assert resumed["resumed_from"]["epoch"] == 2
    assert _losses(resumed) == _losses(whole)


@pytest.mark.parametrize("init", ["normal", "xavier_uniform"])
def test_first_values_do_not_depend_on_where_the_rows_live(init: str, tmp_path: Path) -> None:
    count = INIT_CHUNK_ROWS + 7  # rows on both sides of a chunk boundary, and the boundary inside the hot prefix
    tables = []
    for hot_rows, cold_dir in ((None, None), (5, None), (INIT_CHUNK_ROWS + 2, tmp_path), (0, tmp_path)):
        torch.manual_seed(3)
        table = TieredEmbedding(count, 2, init=init)
        if hot_rows is not None:
            table.place(hot_rows, cold_dir)
        tables.append(table.full("weight"))
    for other in tables[1:]:
        torch.testing.assert_close(other, tables[0], rtol=0, atol=0)
    weight = tables[0]
    if init == "xavier_uniform":
        assert weight.abs().max() <= (6 / (count + 2)) ** 0.5
    else:
        assert abs(float(weight.std()) - 1) < 0.02
    assert list(tmp_path.iterdir()) == []  # scratch files are unlinked at once


def test_a_disk_tier_reads_and_steps_as_host_memory(tmp_path: Path) -> None:
    tables = {}
    for name, cold_dir in (("ram", None), ("disk", tmp_path)):
        torch.manual_seed(0)
        table = TieredEmbedding(10, 3)
        table.place(4, cold_dir)
        dense = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
        attach_sparse_adam(dense, torch.nn.ModuleDict({"t": table}))
        for ids in (torch.tensor([1, 6, 8, 6]), torch.tensor([6, 2, 9])):
            dense.zero_grad()
            table(ids).pow(2).sum().backward()
            dense.step()
        tables[name] = table
    assert tables["disk"].cold_on_disk and not tables["ram"].cold_on_disk
    ptr = tables["disk"].cold["weight"].data_ptr()
    maps = [line.split() for line in Path("/proc/self/maps").read_text().splitlines() if ".graphtier-scratch-" in line]
    assert any(int(a, 16) <= ptr < int(b, 16) for a, b in (m[0].split("-") for m in maps))  # a mapped scratch file
    for key in ("weight", "exp_avg", "exp_avg_sq", "steps"):
        torch.testing.assert_close(tables["disk"].full(key), tables["ram"].full(key), rtol=0, atol=0)


def _mapped(tensor: torch.Tensor) -> bool:
    """True when ``tensor``'s memory is a mapped graphtier scratch file (not the process's anonymous memory)."""
    ptr = tensor.data_ptr()
    maps = [line.split() for line in Path("/proc/self/maps").read_text().splitlines() if ".graphtier-scratch-" in line]
    return any(int(a, 16) <= ptr < int(b, 16) for a, b in (m[0].split("-") for m in maps))


@pytest.mark.parametrize("hot_rows", [0, 4])
def test_the_state_of_a_table_on_disk_stays_on_disk(hot_rows: int, tmp_path: Path) -> None:
    from graphtier.train.nn.tiered_embedding import state_snapshot

    torch.manual_seed(0)
    table = TieredEmbedding(10, 3)
    table.place(hot_rows, tmp_path)
    model = torch.nn.ModuleDict({"t": table})
    dense = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    attach_sparse_adam(dense, model)
    expected = table.full("weight").clone()
    state = model.state_dict()["t.weight"]
    assert _mapped(state)  # a billion-edge graph's author table is never copied into RAM to be saved
    assert (state.data_ptr() == table.cold["weight"].data_ptr()) == (hot_rows == 0)  # aliases, as parameters do
    best = state_snapshot(model)
    assert _mapped(best["t.weight"]) and best["t.weight"].data_ptr() != table.cold["weight"].data_ptr()
    table(torch.tensor([1, 6])).sum().backward()
    dense.step()
    assert not torch.equal(table.full("weight"), expected)
    torch.testing.assert_close(best["t.weight"], expected, rtol=0, atol=0)  # the snapshot did not move
    model.load_state_dict(best)
    torch.testing.assert_close(table.full("weight"), expected, rtol=0, atol=0)
    assert list(tmp_path.iterdir()) == []


def test_tables_on_disk_train_as_in_ram(typed_dataset: Dataset, tmp_path: Path) -> None:
    ram = train(typed_dataset, epochs=2, featureless="embedding", **TYPED)
    disk = train(typed_dataset, epochs=2, featureless="embedding", tables_on="disk", scratch_dir=str(tmp_path), **TYPED)
    assert _losses(disk.report) == _losses(ram.report)
    (table,) = disk.model.inputs.tables.values()
    assert table.cold_on_disk and table.hot_rows == 0  # a CPU run keeps every row on disk
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(OptionError, match="scratch_dir.*applies to tables_on='disk'"):
        TrainConfig(scratch_dir=str(tmp_path))
    with pytest.raises(OptionError, match="scratch_dir.*expected an existing directory"):
        TrainConfig(tables_on="disk", scratch_dir=str(tmp_path / "missing"))


def test_the_optimizer_state_is_made_by_the_first_step_only() -> None:
    table = _table(4)
    table(torch.tensor([1, 7]))  # inference: the rows only (a predict of a MAG-scale table holds no moments)
    assert set(table.hot) == set(table.cold) == {"weight"}
    dense = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    attach_sparse_adam(dense, torch.nn.ModuleDict({"t": table}))
    table(torch.tensor([1, 7])).sum().backward()
    dense.step()
    assert set(table.cold) == {"weight", "exp_avg", "exp_avg_sq", "steps"}
    assert table.full("steps").tolist() == [0, 1, 0, 0, 0, 0, 0, 1, 0, 0]


def test_a_row_on_disk_sits_beside_its_moments(tmp_path: Path) -> None:
    """After the first step a disk tier's rows and Adam moments are column blocks of one scratch file (a step on a row
    dirties one page, not three), the steps match a table in RAM, and what is saved is the rows alone."""
    tables = {}
    for name, cold_dir in (("ram", None), ("disk", tmp_path)):
        torch.manual_seed(1)
        table = TieredEmbedding(50, 4)
        table.place(0, cold_dir)
        dense = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
        attach_sparse_adam(dense, torch.nn.ModuleDict({"t": table}))
        for ids in (torch.tensor([1, 30, 8]), torch.tensor([30, 2, 49, 1])):
            dense.zero_grad()
            table(ids).pow(2).sum().backward()
            dense.step()
        tables[name] = table
    cold = tables["disk"].cold
    base = cold["weight"].data_ptr()
    assert cold["weight"].stride() == (12, 1) and _mapped(cold["weight"])
    assert [cold[k].data_ptr() - base for k in ("exp_avg", "exp_avg_sq")] == [16, 32]  # floats 4..8 and 8..12
    for key in ("weight", "exp_avg", "exp_avg_sq", "steps"):
        torch.testing.assert_close(tables["disk"].full(key), tables["ram"].full(key), rtol=0, atol=0)
    saved = torch.nn.ModuleDict({"t": tables["disk"]}).state_dict()["t.weight"]
    assert saved.is_contiguous() and saved.untyped_storage().nbytes() == 50 * 4 * 4 and _mapped(saved)
    assert list(tmp_path.iterdir()) == []
