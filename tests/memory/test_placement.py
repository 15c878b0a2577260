"""Budget strings parse to bytes/fractions/auto; plans put every row in exactly one tier."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from graphtier.errors import OptionError
from graphtier.memory.plan.placement import TIER_NAMES, TierPlan, parse_budget, plan_tiers


@pytest.mark.parametrize(
    ("text", "num_bytes", "fraction"),
    [
        ("512MB", 512 * 10**6, None),
        ("2GiB", 2 * 2**30, None),
        ("1.5 kib", 1536, None),
        ("4096B", 4096, None),
        ("0.1", None, 0.1),
        ("10%", None, 0.1),
        ("1.0", None, 1.0),
        ("0", None, 0.0),
    ],
)
def test_parse_budget_forms(text: str, num_bytes: int | None, fraction: float | None) -> None:
    budget = parse_budget(text, "gpu_budget")
    assert budget.num_bytes == num_bytes
    assert budget.fraction == pytest.approx(fraction) if fraction is not None else budget.fraction is None
    assert not budget.auto
    assert parse_budget(" AUTO ", "gpu_budget").auto


@pytest.mark.parametrize("text", ["12", "150%", "2 parsecs", "", "-1GB", "1e9"])
def test_parse_budget_rejects_with_option_name(text: str) -> None:
    """A Python caller reads the argument (``ram_budget=``), the CLI user the flag (``--ram-budget``)."""
    with pytest.raises(OptionError, match=r"^ram_budget=: ") as info:
        parse_budget(text, "ram_budget")
    assert "--" not in str(info.value)
    assert info.value.render(cli=True).startswith("--ram-budget: ")


@pytest.mark.parametrize("text", ["1", "512", " 2 "])
def test_parse_budget_refuses_a_bare_integer(text: str) -> None:
    """Issue 21: ``1`` read as 100 % of the rows while ``1B`` is one byte; a unitless integer is refused."""
    with pytest.raises(
        OptionError, match=r'^ram_budget=: a number without a unit is ambiguous.*"1GB".*"100%".*"0.5"'
    ) as info:
        parse_budget(text, "ram_budget")
    assert info.value.render(cli=True).startswith("--ram-budget: a number without a unit is ambiguous")


def test_plan_tiers_names_its_arguments() -> None:
    """plan_tiers, called from Python, names gpu_budget= / peer_partitions=; the CLI renders the flags."""
    with pytest.raises(OptionError, match=r"^gpu_budget=: expected bytes") as info:
        plan_tiers(10, 4, device=torch.device("cpu"), gpu_budget="lots", log=lambda _: None)
    assert info.value.render(cli=True).startswith("--gpu-budget: expected bytes")
    with pytest.raises(OptionError, match=r"^peer_partitions=: expected an integer >= 1, found 0$") as info:
        plan_tiers(10, 4, device=torch.device("cpu"), gpu_budget="auto", peer_partitions=0, log=lambda _: None)
    assert info.value.render(cli=True) == "--peer-partitions: expected an integer >= 1, found 0"


def test_budget_rows() -> None:
    assert parse_budget("1KiB", "x").rows(num_rows=100, row_bytes=100) == 10
    assert parse_budget("1GiB", "x").rows(num_rows=100, row_bytes=100) == 100
    assert parse_budget("25%", "x").rows(num_rows=10, row_bytes=4) == 2
    assert parse_budget("auto", "x").rows(num_rows=100, row_bytes=10, auto_bytes=95) == 9


def test_auto_on_cpu_is_zero_rows_and_logged() -> None:
    messages: list[str] = []
    plan = plan_tiers(100, 16, device=torch.device("cpu"), gpu_budget=None, cache_budget="auto", log=messages.append)
    assert plan.local_rows == 0 and plan.cache_rows == 0 and plan.host_end == 100
    assert any("no CUDA device" in m for m in messages)


def test_auto_ram_budget_uses_available_memory() -> None:
    messages: list[str] = []
    plan = plan_tiers(10, 4, device=torch.device("cpu"), gpu_budget="0", ram_budget="auto", log=messages.append)
    assert plan.host_end == 10  # 40 bytes fit in any machine's RAM
    assert any("RAM available" in m for m in messages)


@settings(max_examples=60, deadline=None)
@given(
    num_rows=st.integers(1, 300),
    row_bytes=st.sampled_from([4, 128, 512]),
    gpu=st.sampled_from(["0", "10%", "0.5", "1.0", "1KiB", "100KB"]),
    ram=st.sampled_from([None, "0", "30%", "2KiB", "1.0"]),
    partitions=st.integers(1, 4),
    cache=st.sampled_from([None, "5%", "1KiB"]),
)
def test_plan_covers_every_row_once(
    num_rows: int, row_bytes: int, gpu: str, ram: str | None, partitions: int, cache: str | None
) -> None:
    plan = plan_tiers(
        num_rows,
        row_bytes,
        device=torch.device("cpu"),
        gpu_budget=gpu,
        cache_budget=cache,
        peer_partitions=partitions,
        ram_budget=ram,
        log=lambda _: None,
    )
    assert 0 <= plan.local_rows <= plan.peer_end <= plan.host_end <= num_rows
    assert plan.cache_rows <= num_rows - plan.peer_end
    if partitions > 1:
        assert plan.local_rows == 0
    ids = np.arange(num_rows)
    tiers = plan.tier_of(ids)
    names = np.array(TIER_NAMES)[tiers]
    assert "cache" not in set(names)
    expected = np.where(ids < plan.peer_end, "gpu", np.where(ids < plan.host_end, "host", "disk")).astype(object)
    in_peer = (ids >= plan.local_rows) & (ids < plan.peer_end) & ((ids - plan.local_rows) % partitions != 0)
    expected[in_peer] = "gpu-peer"
    assert list(names) == list(expected)
    sample = np.random.default_rng(num_rows).integers(0, num_rows, 50)
    np.testing.assert_array_equal(
        plan.tier_counts(sample), np.bincount(plan.tier_of(sample), minlength=len(TIER_NAMES))
    )


def test_interleaved_fraction_is_of_the_whole_table() -> None:
    plan = plan_tiers(100, 4, device=torch.device("cpu"), gpu_budget="20%", peer_partitions=4, log=lambda _: None)
    assert plan.peer_end == 20 and plan.rows_per_partition == 5
    plan = plan_tiers(100, 4, device=torch.device("cpu"), gpu_budget="40B", peer_partitions=4, log=lambda _: None)
    assert plan.peer_end == 40  # a byte budget is per device


def test_plan_describe_and_invalid() -> None:
    plan = TierPlan(num_rows=10, row_bytes=8, local_rows=2, peer_end=2, host_end=7)
    assert "gpu 2 rows" in plan.describe() and "disk 3 rows" in plan.describe()
    with pytest.raises(AssertionError):
        TierPlan(num_rows=10, row_bytes=8, local_rows=5, peer_end=2, host_end=7)
    with pytest.raises(OptionError, match="^peer_partitions="):
        plan_tiers(10, 4, device=torch.device("cpu"), gpu_budget="0", peer_partitions=0)


def test_auto_gpu_budgets_leave_room_for_the_batches_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphtier.memory.features.arena import batch_rows_bound, in_flight_bytes
    from graphtier.memory.topology.topology import INDPTR_ENTRY_BYTES, auto_topology_bytes

    gib = 2**30
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (40 * gib, 80 * gib))
    cuda = torch.device("cuda", 0)
    rows_bound = batch_rows_bound(1024, [15, 10, 5], 10**8)
    reserve = in_flight_bytes(rows_bound, 512, prefetch=4)
    assert reserve == (4 + 2) * rows_bound * (512 + 24)
    auto = 40 * gib - 12 * gib  # free minus the 15 % reserve for the model
    messages: list[str] = []
    base = plan_tiers(10**8, 512, device=cuda, gpu_budget="auto", log=messages.append)
    shrunk = plan_tiers(10**8, 512, device=cuda, gpu_budget="auto", log=messages.append, reserve_bytes=reserve)
    assert base.local_rows == auto // 512 and shrunk.local_rows == (auto - reserve) // 512
    assert "for the batches in flight" in messages[-1]
    fixed = plan_tiers(10**8, 512, device=cuda, gpu_budget="1GiB", log=messages.append, reserve_bytes=reserve)
    assert fixed.local_rows == gib // 512  # an explicit budget is the user's
    assert auto_topology_bytes(cuda, 1001, reserve, messages.append) == auto - 1001 * INDPTR_ENTRY_BYTES - reserve
