"""The plan of a typed dataset: one feature budget split across types, one topology budget across relations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from graphtier.tiering.plan.typed import plan_typed
from graphtier.tiering.replay import Replay
from graphtier.tiering.typed_reads import count_typed_reads
from tests.cli.helpers import run
from tests.typed_data import write_typed_dataset


def test_budget_rows_split_across_types_within_budget(tmp_path: Path) -> None:
    data = write_typed_dataset(tmp_path / "t")
    reads = count_typed_reads(
        data.indptr, data.indices, data.schema, data.train_idx, fanouts=[3, 2], batch_size=8, epochs=2, seed=0
    )
    plan = plan_typed(
        data,
        budgets=["0", "1KiB", "100%"],
        topology_budget="2KiB",
        gpu_usable_bytes=10**9,
        reads=reads,
        replay=Replay(fanouts=[3, 2], batch_size=8, epochs=2, seed=0),
    )
    none, some, every = plan.budgets
    assert none.total_bytes == 0 and some.total_bytes <= 1024 and some.total_bytes > 1024 - 32
    assert every.gpu_rows == {"paper": 120, "author": 80, "subject": 0}  # featureless: nothing on the GPU
    paper = data.schema.node_type("paper")
    counted = reads.features[paper.offset : paper.stop] / 2
    assert some.gpu_reads["paper"] == pytest.approx(counted[: some.gpu_rows["paper"]].sum())
    assert every.gpu_reads["author"] == pytest.approx(plan.reads["author"])
    assert sum(plan.topology_bytes.values()) <= 2048
    assert sum(plan.topology_entries.values()) == pytest.approx(reads.list_entries.sum() / 2)
    for rel, rows in plan.topology_rows.items():
        assert plan.topology_gpu_entries[rel] <= plan.topology_entries[rel] + 1e-9
        assert 0 <= rows <= data.schema.node_type(rel[2]).count
    assert np.isclose(sum(plan.reads.values()), reads.features.sum() / 2)


def test_cli_plan_of_a_typed_dataset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_typed_dataset(tmp_path / "t")
    argv = ["plan", str(data.path), "--gpu-memory", "80GiB", "--host-memory", "64GiB", "--fanouts", "3,2"]
    code, out, err = run([*argv, "--budgets", "1KiB,100%", "--json", str(tmp_path / "p.json")], capsys)
    assert code == 0, err
    assert "author" in out and "(paper, cites, paper)" in out and (tmp_path / "p.json").is_file()
    code, out, err = run([*argv, "--plot", str(tmp_path / "p.png")], capsys)
    assert code == 2 and "typed dataset" in err
