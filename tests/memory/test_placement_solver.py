"""Tests for graphtier.memory.plan.placement_solver and gpu_topology: the solver against a brute-force optimum."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from graphtier.errors import OptionError
from graphtier.memory.plan.gpu_topology import (
    load_topology,
    nvml_topology,
    resolve_topology,
    shipped_topology,
    shipped_topology_names,
    topology_from_dict,
)
from graphtier.memory.plan.placement_solver import CostModel, brute_force_placement, row_groups, solve_placement

# The solver found the brute-force optimum on every instance checked (165 random ones besides these).
GAP_TOLERANCE = 1e-9


def random_instance(rng: np.random.Generator, num_groups: int) -> tuple[np.ndarray, np.ndarray, float]:
    shares = np.sort(rng.dirichlet(np.full(num_groups, 0.5)))[::-1]
    sizes = rng.integers(1, 4, num_groups).astype(np.float64)
    return sizes, shares, float(rng.integers(1, 6))


def check_against_brute_force(topology, num_groups: int, seed: int, trials: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        sizes, shares, budget = random_instance(rng, num_groups)
        placement = solve_placement(topology, sizes, shares, budget)
        optimum, holders = brute_force_placement(topology, sizes, shares, budget)
        assert placement.objective_seconds >= optimum * (1 - 1e-9)
        assert placement.objective_seconds <= optimum * (1 + GAP_TOLERANCE), (
            sizes,
            shares,
            budget,
            placement.holders,
            holders,
        )
        # the plan is feasible and its objective is the cost model's
        for gpu, held in enumerate(placement.gpu_bytes):
            assert held <= budget
            assert held == sum(sizes[g] for g, h in enumerate(placement.holders) if gpu in h)
        masks = [sum(1 << i for i in h) for h in placement.holders]
        recomputed = CostModel(topology, 1e9).times(masks, shares).max()
        assert placement.objective_seconds == pytest.approx(recomputed)


def test_shipped_topologies_are_symmetric_with_expected_cliques() -> None:
    assert set(shipped_topology_names()) >= {"dgx1-v100", "nvswitch-8", "pcie-4", "nvlink-pairs-4"}
    expected = {
        "dgx1-v100": [[0, 1, 2, 3], [4, 5, 6, 7]],
        "nvswitch-8": [list(range(8))],
        "pcie-4": [[0], [1], [2], [3]],
        "nvlink-pairs-4": [[0, 1], [2, 3]],
    }
    for name, cliques in expected.items():
        topology = shipped_topology(name)
        assert np.array_equal(topology.links, topology.links.T)
        assert topology.cliques() == cliques
    dgx = shipped_topology("dgx1-v100")
    assert all((dgx.links[i] > 0).sum() == 4 and dgx.links[i].sum() == 150 for i in range(8))


@pytest.mark.parametrize(
    ("name", "num_groups"), [("dgx1-v100", 2), ("nvswitch-8", 2), ("pcie-4", 3), ("nvlink-pairs-4", 3)]
)
def test_solver_matches_brute_force(name: str, num_groups: int) -> None:
    check_against_brute_force(shipped_topology(name), num_groups, seed=len(name), trials=6)


@pytest.mark.parametrize("gpus", list(itertools.combinations(range(8), 6)))
def test_solver_matches_brute_force_on_dgx1_six_gpu_subsets(gpus: tuple[int, ...]) -> None:
    check_against_brute_force(shipped_topology("dgx1-v100").subset(gpus), 2, seed=sum(gpus), trials=1)


def test_solver_on_six_gpus_three_groups() -> None:
    check_against_brute_force(shipped_topology("dgx1-v100").subset([0, 1, 2, 4, 5, 6]), 3, seed=7, trials=2)


def test_pcie_only_replicates_hottest_and_leaves_rest_on_host() -> None:
    topology = shipped_topology("pcie-4")
    placement = solve_placement(topology, [1, 1, 1, 1], [0.4, 0.3, 0.2, 0.1], 2)
    assert placement.kinds == ["replicated", "replicated", "host", "host"]
    assert placement.bottleneck.startswith("host->gpu")
    assert placement.objective_seconds == pytest.approx(0.3 / 12.0)


def test_dgx1_interleaves_within_quads_beyond_the_replicated_prefix() -> None:
    topology = shipped_topology("dgx1-v100")
    shares = np.full(12, 1 / 12)
    placement = solve_placement(topology, np.ones(12), shares, 3, search=False)
    assert placement.kinds[:1] == ["replicated"] or placement.kinds.count("interleaved") > 0
    assert placement.objective_seconds < placement.baselines["replicate-only"] < placement.baselines["host-only"]
    full = solve_placement(topology, np.ones(12), shares, 3)
    assert full.objective_seconds <= placement.objective_seconds * (1 + 1e-12)


def test_everything_fits_means_local_reads_only() -> None:
    topology = shipped_topology("nvswitch-8")
    placement = solve_placement(topology, [5, 5], [0.7, 0.3], 100)
    assert placement.kinds == ["replicated", "replicated"]
    assert placement.objective_seconds == pytest.approx(1.0 / 1555.0)


def test_zero_budget_is_host_only() -> None:
    placement = solve_placement(shipped_topology("dgx1-v100"), [1, 1], [0.5, 0.5], 0)
    assert placement.kinds == ["host", "host"]
    assert placement.objective_seconds == pytest.approx(placement.baselines["host-only"]) == pytest.approx(1 / 12)


def test_row_groups_shares_and_bytes() -> None:
    counts = np.array([10, 8, 6, 4, 2, 0, 0], dtype=np.float64)
    bounds, sizes, shares = row_groups(counts, 4, 3)
    assert bounds[0] == 0 and bounds[-1] == 7
    assert sizes.sum() == 7 * 4
    assert shares.sum() == pytest.approx(1.0)
    assert np.all(np.diff(shares) <= 0)


def test_topology_files_and_errors(tmp_path: Path) -> None:
    good = {"links_gbps": [[0, 50], [50, 0]], "host_gbps": [12, 16]}
    path = tmp_path / "two.json"
    path.write_text(json.dumps(good))
    topology = resolve_topology(str(path))
    assert topology.num_gpus == 2 and topology.host.tolist() == [12, 16] and topology.cliques() == [[0, 1]]
    bad_cases = [
        ({"links_gbps": [[0, 1, 2]], "host_gbps": 1}, "square"),
        ({"links_gbps": [[0, -1], [1, 0]], "host_gbps": 1}, ">= 0"),
        ({"links_gbps": [[0, 1], [1, 0]]}, "host_gbps"),
        ({"links_gbps": [[0, 1], [1, 0]], "host_gbps": [1, 2, 3]}, "host_gbps"),
    ]
    for document, needle in bad_cases:
        with pytest.raises(OptionError, match=needle):
            topology_from_dict(document, "t.json")
    path.write_text("{not json")
    with pytest.raises(OptionError, match="not valid JSON"):
        load_topology(path)
    with pytest.raises(OptionError, match="cannot read"):
        load_topology(tmp_path / "missing.json")
    with pytest.raises(OptionError, match="budgets"):
        solve_placement(topology, [1], [1], [1, 2, 3])


def test_nvml_topology_without_driver_is_none_or_valid() -> None:
    topology = nvml_topology()
    assert topology is None or topology.links.shape == (topology.num_gpus, topology.num_gpus)
