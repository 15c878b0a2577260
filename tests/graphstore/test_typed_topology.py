"""A typed dataset's topology budget is split across relations (a prefix of each relation's rows on the GPU) by
the run's expected entry reads, as ``plan`` splits it; the device typed sampler over it gives the CPU batches."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from graphtier.dataset import Dataset
from graphtier.graphstore import GraphStore
from graphtier.graphstore.typed_features import ExpectedReads, expected_typed_reads
from graphtier.graphstore.typed_topology import topology_gpu_rows, typed_gpu_ranges
from graphtier.memory import make_topology
from graphtier.memory.plan.typed_budget import RelationTable, split_topology_budget
from graphtier.memory.topology.topology import INDPTR_BYTES_PER_DESTINATION
from graphtier.tiering.plan.typed import plan_typed
from graphtier.tiering.reads import SampledReads
from graphtier.tiering.replay import Replay
from tests.graphstore.test_typed_store import FANOUTS, PER_RELATION, assert_samples_like_the_cpu
from tests.typed_data import open_tiny_typed_dataset


@pytest.fixture
def typed_dataset(tmp_path: Path) -> Dataset:
    return open_tiny_typed_dataset(tmp_path)


def test_gpu_rows_per_relation_are_split_topology_budgets_and_plans(typed_dataset: Dataset) -> None:
    seeds = typed_dataset.train_idx
    reads = expected_typed_reads(typed_dataset, seeds, FANOUTS, PER_RELATION, batch_size=16)
    indptr, schema, itemsize = typed_dataset.indptr, typed_dataset.schema, typed_dataset.indices.dtype.itemsize
    budget = 4 * itemsize * 100
    rows = topology_gpu_rows(
        typed_dataset, budget, ExpectedReads(typed_dataset, seeds, FANOUTS, PER_RELATION, batch_size=16)
    )
    tables = {}
    for rel in schema.relations:
        lo, hi = rel.row_offset, rel.row_offset + schema.node_type(rel.dst).count
        tables[rel.type] = RelationTable(indptr[lo : hi + 1], itemsize, reads.list_entries[lo:hi])
    assert rows == split_topology_budget(tables, budget)
    assert sum(1 for count in rows.values() if count) >= 2  # the budget is shared, not the first relation's
    # plan over the same reads (one epoch) prints the same lists per relation
    sampled = SampledReads(reads.node_reads, reads.list_entries, destinations=0, batches=1)
    plan = plan_typed(
        typed_dataset,
        budgets=["0"],
        topology_budget=f"{budget}B",
        gpu_usable_bytes=0,
        reads=sampled,
        replay=Replay(fanouts=FANOUTS, batch_size=16, epochs=1, seed=0),
    )
    assert plan.topology_rows == rows
    # no seeds: every list read equally often
    uniform = {rel: RelationTable(t.indptr, itemsize) for rel, t in tables.items()}
    assert topology_gpu_rows(typed_dataset, budget, None) == split_topology_budget(uniform, budget)
    no_seeds = ExpectedReads(typed_dataset, None, FANOUTS)
    assert topology_gpu_rows(typed_dataset, budget, no_seeds) == split_topology_budget(uniform, budget)


def test_store_opens_the_typed_topology_with_the_relation_split(
    typed_dataset: Dataset, tiny_dataset: Dataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    import graphtier.graphstore.store as store_module

    seen = {}
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(store_module, "make_topology", lambda *a, **k: seen.update(k) or None)
    seeds = typed_dataset.train_idx[:40]
    GraphStore.open(typed_dataset, device="cuda", sample_on="gpu", features_on="cpu-gather", fanouts=FANOUTS,
                    relation_fanouts=PER_RELATION, train_seeds=seeds, batch_size=16, log=lambda _: None)  # fmt: skip
    rows = topology_gpu_rows(
        typed_dataset, 800, ExpectedReads(typed_dataset, seeds, FANOUTS, PER_RELATION, batch_size=16)
    )
    indptr = typed_dataset.indptr
    expected = [
        (int(indptr[r.row_offset]), int(indptr[r.row_offset + rows[r.type]])) for r in typed_dataset.schema.relations
    ]
    assert seen["gpu_ranges_for"](800) == expected
    assert typed_gpu_ranges(tiny_dataset, None) is None  # homogeneous: the single prefix


@pytest.mark.parametrize(("budget", "ram", "interpreted"), [("25%", None, True), ("40%", "30%", False)])
def test_device_typed_sampler_over_per_relation_ranges_gives_the_cpu_batches(
    typed_dataset: Dataset, budget: str, ram: str | None, interpreted: bool
) -> None:
    options: dict[str, object] = {}
    picks, kernels = "numba", None
    if interpreted:
        pytest.importorskip("triton")
        from tests.interpreted import load_interpreted
        from tests.memory.test_unified import FakeRegistrar

        options = {"registrar": FakeRegistrar(), "kernels": load_interpreted("memory/topology/_topology_kernels.py")}
        picks, kernels = "triton", load_interpreted("sampling/device/_device_kernels.py")
    seeds = typed_dataset.train_idx
    expected = ExpectedReads(typed_dataset, seeds, FANOUTS, PER_RELATION, batch_size=20)
    ranges_for = typed_gpu_ranges(typed_dataset, expected, log=lambda _: None)
    topology = make_topology(typed_dataset.indptr, typed_dataset.indices, device=torch.device("cpu"),
                             topology_budget=budget, ram_budget=ram, log=lambda _: None, gpu_ranges_for=ranges_for,
                             **options)  # fmt: skip
    assert len(topology.gpu_ranges.ranges) >= 2
    store = GraphStore(typed_dataset, None, topology=topology, seed=6, picks=picks, kernels=kernels)
    traffic, rows = assert_samples_like_the_cpu(store, typed_dataset, seeds)
    assert traffic["gpu"] > rows * INDPTR_BYTES_PER_DESTINATION and traffic["host"] > 0
    assert (traffic["disk"] > 0) == (ram is not None)


def test_one_store_computes_the_expected_reads_once(typed_dataset: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    """The feature budget and the topology budget of one store share one pass of the expected reads."""
    import graphtier.graphstore.store as store_module
    import graphtier.graphstore.typed_features as typed_features

    calls = []
    compute = typed_features.typed_fanout_weighted_reads
    monkeypatch.setattr(
        typed_features, "typed_fanout_weighted_reads", lambda *a, **k: calls.append(1) or compute(*a, **k)
    )
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(store_module, "make_topology", lambda *a, **k: k["gpu_ranges_for"](800) and None)
    budgets = {}
    monkeypatch.setattr(
        typed_features, "make_feature_store", lambda table, mode, **k: budgets.setdefault(len(budgets), k)
    )
    GraphStore.open(typed_dataset, device="cuda", sample_on="gpu", features_on="tiered", gpu_budget="640B",
                    train_seeds=typed_dataset.train_idx, fanouts=FANOUTS, batch_size=16, log=lambda _: None)  # fmt: skip
    assert len(budgets) == 2  # both featured types were placed, their GPU split by the reads
    assert calls == [1]
