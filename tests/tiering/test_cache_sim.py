"""The cache-policy replay: each numba policy equals its plain-Python reference on random traces (from any warm-up
position), Belady's MIN misses no more than any policy, small traces checked by hand, and the table from the
sampler's trace, from Python and from ``graphtier analyze --cache-budget``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtier import Dataset
from graphtier.errors import OptionError
from graphtier.tiering.cache import _kernels as kernels
from graphtier.tiering.cache import reference
from graphtier.tiering.cache.simulate import CACHE_POLICIES, cache_policy_table, policy_misses, replay_trace
from graphtier.tiering.replay import Replay
from tests.cli.helpers import run

KERNELS = {
    "lru": (kernels.lru_misses, reference.lru_reference),
    "clock": (kernels.clock_misses, reference.clock_reference),
    "sieve": (kernels.sieve_misses, reference.sieve_reference),
    "belady": (kernels.belady_misses, reference.belady_reference),
}


def _traces(count: int, seed: int) -> list[tuple[np.ndarray, int, int, int]]:
    """(trace, capacity, rows, start): uniform and skewed (Zipf) traces of 0-300 accesses."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        rows, length = int(rng.integers(1, 40)), int(rng.integers(0, 300))
        drawn = rng.zipf(1.4, length) % rows if k % 2 else rng.integers(0, rows, length)
        capacity = int(rng.integers(0, rows + 2))
        start = int(rng.integers(0, length + 1)) if k % 3 else 0
        out.append((np.asarray(drawn, dtype=np.int64), capacity, rows, start))
    return out


@pytest.mark.parametrize("policy", [*KERNELS, "s3fifo"])
def test_kernels_equal_their_references(policy: str) -> None:
    for trace, capacity, rows, start in _traces(150, seed=len(policy)):
        as_list = trace.tolist()
        if policy == "s3fifo":
            got = kernels.s3fifo_misses(trace, capacity, rows, 0.1, start)
            expected = reference.s3fifo_reference(as_list, capacity, 0.1, start)
        else:
            kernel, plain = KERNELS[policy]
            got, expected = kernel(trace, capacity, rows, start), plain(as_list, capacity, start)
        assert got == expected, (policy, as_list, capacity, start)


def test_belady_is_the_floor_and_budgets_only_help() -> None:
    for trace, capacity, rows, start in _traces(200, seed=7):
        scores = np.bincount(trace, minlength=rows).astype(np.float64)
        misses = {p: policy_misses(p, trace, capacity, rows, scores, start) for p in CACHE_POLICIES}
        assert misses["belady"] == min(misses.values()), misses
        assert 0 <= misses["belady"] <= len(trace) - start
        for policy in ("lru", "belady", "static"):  # stack policies: a larger cache never misses more
            assert policy_misses(policy, trace, capacity + 1, rows, scores, start) <= misses[policy]


def test_a_small_trace_by_hand() -> None:
    trace = np.array([0, 1, 0, 2, 0, 1], dtype=np.int64)
    assert kernels.lru_misses(trace, 2, 3) == 4  # 2 evicts 1, then 1 evicts 2
    assert kernels.clock_misses(trace, 2, 3) == 4
    assert kernels.sieve_misses(trace, 2, 3) == 4
    assert kernels.belady_misses(trace, 2, 3) == 1  # from {0, 1}: 2 is never read again, so it is not cached
    assert kernels.belady_misses(trace, 2, 3, 3) == 1  # [2, 0, 1] from {2, 0}: 1 misses
    assert kernels.belady_misses(trace, 1, 3) == 3  # from {0}: 1, 2 and 1 miss and bypass (0 is needed sooner)
    assert kernels.lru_misses(trace, 0, 3) == 6 and kernels.belady_misses(trace, 3, 3) == 0
    scores = np.array([5.0, 1.0, 3.0])  # static: row 0 pinned with one row; rows 0 and 2 with two
    assert policy_misses("static", trace, 1, 3, scores) == 3 and policy_misses("static", trace, 2, 3, scores) == 2


def test_the_table_of_a_training_trace(tiny_dataset: Dataset) -> None:
    trace = replay_trace(tiny_dataset, replay=Replay(fanouts=(5, 5), batch_size=64))
    assert trace.min() >= 0 and trace.max() < tiny_dataset.num_nodes and trace.size > tiny_dataset.num_nodes // 2
    table = cache_policy_table(tiny_dataset, "10%,50%", replay=Replay(fanouts=(5, 5), batch_size=64, epochs=2))
    assert table.capacities == [40, 200] and list(table.misses) == list(CACHE_POLICIES)
    assert table.config["warmup_epochs"] == 1 and table.accesses > trace.size  # two counted epochs
    for index in range(2):
        assert table.misses["belady"][index] == min(m[index] for m in table.misses.values())
        assert table.best_online(index) in ("lru", "clock", "sieve", "s3fifo")
    assert table.misses["lru"][1] < table.misses["lru"][0] and "x" in table.format()
    with pytest.raises(OptionError, match="cache_budget"):
        cache_policy_table(tiny_dataset, "auto")


def test_analyze_prints_the_table(tiny_dataset: Dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_json = tmp_path / "a.json"
    code, out, err = run(["analyze", str(tiny_dataset.path), "--score", "fwr", "--fanouts", "5,5", "--batch-size",
                          "64", "--cache-budget", "10%,2KiB", "--json", str(out_json)], capsys)  # fmt: skip
    assert code == 0, err
    assert "cache policies:" in out and "s3fifo" in out and "belady" in out
    record = json.loads(out_json.read_text())["cache_policies"]
    assert record["budgets"] == ["10%", "2KiB"] and set(record["misses"]) == set(CACHE_POLICIES)
    row_bytes = tiny_dataset.feature_dim * tiny_dataset.features.dtype.itemsize
    assert record["capacities"] == [40, 2048 // row_bytes]
    code, _, err = run(["analyze", str(tiny_dataset.path), "--cache-budget", "lots"], capsys)
    assert code == 2 and err.strip().splitlines()[-1].startswith("graphtier: error: --cache-budget")
