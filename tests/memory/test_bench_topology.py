"""The topology benchmark runs on a tiny graph, checks its results and reports every layout x sorted_reads."""

from __future__ import annotations

import torch

from graphtier.bench.topology import (
    format_topology_table,
    run_topology_benchmark,
    sampler_positions,
)


def test_sampler_positions_stay_inside_nonempty_lists() -> None:
    indptr = torch.tensor([0, 0, 3, 3, 7, 8])
    positions = sampler_positions(indptr, 5000, torch.Generator().manual_seed(0))
    assert positions.dtype == torch.int64 and int(positions.min()) >= 0 and int(positions.max()) < 8
    assert set(positions.tolist()) == set(range(8))  # every entry of every non-empty list is reachable


def test_benchmark_reports_every_layout_correctly() -> None:
    report = run_topology_benchmark(
        num_nodes=2000, avg_degree=4, positions=3000, repeats=2, device=torch.device("cpu"), log=lambda _: None
    )
    rows = report["results"]
    assert [(r["topology_budget"], r["sorted_reads"]) for r in rows] == [
        (layout, s) for layout in ("100%", "25%", "0") for s in (False, True)
    ]
    assert all(r["correct"] and r["seconds"] > 0 for r in rows)
    assert rows[0]["share_gpu"] == 1.0 and rows[-1]["share_host"] == 1.0
    assert 0 < rows[2]["share_gpu"] < 1
    assert len(format_topology_table(report).splitlines()) == 7
