"""Multi-GPU feature placement in the capacity plan (``graphtier plan --gpus N --gpu-topology T``).

The traced per-node feature reads (node id order: hottest first after ``graphtier reorder``) are cut
into ``groups`` row groups (:func:`graphtier.memory.plan.placement_solver.row_groups`) and placed on the GPUs
of the topology by :func:`graphtier.memory.plan.placement_solver.solve_placement`. Each GPU trains on 1/N of
the epoch's batches, so it reads ``access_bytes`` = (feature bytes read per epoch) / N, spread over the
groups by their share of the traced reads; the cost model's times per step are then seconds per epoch
and a link's bytes per epoch are its time times its bandwidth. Each GPU may hold the GPU memory usable
for features (``DeviceSpec.gpu_usable_bytes``) minus the topology kept on every GPU (``indptr`` and the
``--topology-budget`` prefix of ``indices``). Only feature reads are placed: the topology's host reads
also cross the host links but are not part of the solver's objective.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from graphtier.errors import OptionError
from graphtier.memory.plan.gpu_topology import GpuTopology, nvml_topology, resolve_topology
from graphtier.memory.plan.placement import format_bytes
from graphtier.memory.plan.placement_solver import (
    PAIR_MOVE_GROUPS,
    CostModel,
    Placement,
    row_groups,
    solve_placement,
)

# the most groups the solver still searches with two-group moves and random restarts: on pl200k (DGX-1) 32
# groups without them ended 8% above 16 groups with them
DEFAULT_PLACEMENT_GROUPS = PAIR_MOVE_GROUPS


def gpu_topology_from_option(text: str, gpus: int | None) -> GpuTopology:
    """``--gpu-topology``: a shipped name, a JSON file or ``nvml`` (this machine); checked against ``--gpus``."""
    if text == "nvml":
        topology = nvml_topology()
        if topology is None:
            raise OptionError(
                "--gpu-topology nvml: needs the nvidia-ml-py package and an NVIDIA driver, found "
                "neither working on this machine; pass a shipped name or a JSON file"
            )
    else:
        topology = resolve_topology(text)
    if gpus is not None and gpus != topology.num_gpus:
        raise OptionError(f"--gpu-topology {text}: has {topology.num_gpus} GPUs, but --gpus is {gpus}")
    return topology


def link_gbps(topology: GpuTopology) -> dict[str, float]:
    """Bandwidth (GB/s) of every resource of the cost model, by the name :class:`CostModel` gives it."""
    model = CostModel(topology, 0.0)
    g = topology.num_gpus
    result = {}
    for r in range(model.num_resources):
        if r < g:
            gbps = topology.local[r]
        elif r < 2 * g:
            gbps = topology.host[r - g]
        else:
            src, dst = divmod(r - 2 * g, g)
            gbps = topology.links[src, dst]
        result[model.resource_name(r)] = float(gbps)
    return result


@dataclass
class PlacementPlan:
    """The placement section of a plan: groups, the solver's :class:`Placement`, bytes per link per epoch."""

    topology: GpuTopology
    bounds: np.ndarray
    group_bytes: np.ndarray
    group_share: np.ndarray
    budget_per_gpu: int
    access_bytes: float
    placement: Placement
    link_bytes: dict[str, float]

    def runs(self) -> list[tuple[int, int, str, tuple[int, ...]]]:
        """Consecutive groups with the same holders merged: (first row, end row, kind, holders)."""
        out: list[tuple[int, int, str, tuple[int, ...]]] = []
        for g, (kind, holders) in enumerate(zip(self.placement.kinds, self.placement.holders)):
            start, end = int(self.bounds[g]), int(self.bounds[g + 1])
            if end == start:
                continue
            if out and out[-1][2] == kind and out[-1][3] == holders:
                out[-1] = (out[-1][0], end, kind, holders)
            else:
                out.append((start, end, kind, holders))
        return out

    def to_json(self) -> dict[str, Any]:
        p = self.placement
        groups = [
            {
                "rows": [int(self.bounds[g]), int(self.bounds[g + 1])],
                "bytes": float(self.group_bytes[g]),
                "read_share": float(self.group_share[g]),
                "kind": p.kinds[g],
                "holders": list(p.holders[g]),
            }
            for g in range(len(p.kinds))
        ]
        return {
            "topology": self.topology.to_json(),
            "num_gpus": self.topology.num_gpus,
            "budget_per_gpu": self.budget_per_gpu,
            "access_bytes_per_gpu_per_epoch": self.access_bytes,
            "groups": groups,
            "objective_seconds_per_epoch": p.objective_seconds,
            "bottleneck": p.bottleneck,
            "baselines_seconds_per_epoch": dict(p.baselines),
            "link_seconds_per_epoch": dict(p.link_seconds),
            "link_bytes_per_epoch": dict(self.link_bytes),
            "gpu_bytes": list(p.gpu_bytes),
        }


def check_groups(groups: int) -> None:
    """OptionError unless ``groups`` (``--placement-groups``) is an integer >= 1."""
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise OptionError(f"--placement-groups: expected an integer >= 1, found {groups!r}")


def plan_placement(
    counts: np.ndarray,
    row_bytes: int,
    topology: GpuTopology,
    budget_per_gpu: int,
    *,
    epochs: int,
    groups: int = DEFAULT_PLACEMENT_GROUPS,
) -> PlacementPlan:
    """Place the feature table on ``topology`` from traced reads ``counts`` (int64 [N], ``epochs`` epochs)."""
    check_groups(groups)
    counts = np.asarray(counts)
    bounds, group_bytes, shares = row_groups(counts, row_bytes, min(groups, max(1, counts.shape[0])))
    access = float(counts.sum()) * row_bytes / epochs / topology.num_gpus
    placement = solve_placement(topology, group_bytes, shares, max(0, budget_per_gpu), access_bytes=access)
    bandwidth = link_gbps(topology)
    link_bytes = {name: seconds * bandwidth[name] * 1e9 for name, seconds in placement.link_seconds.items()}
    return PlacementPlan(topology, bounds, group_bytes, shares, max(0, budget_per_gpu), access, placement, link_bytes)


def _holders_text(kind: str, holders: tuple[int, ...], num_gpus: int) -> str:
    if kind == "replicated":
        return f"replicated on all {num_gpus} GPUs"
    if kind == "host":
        return "host memory"
    return "interleaved: on gpu " + ",".join(str(h) for h in holders)


def format_placement(plan: PlacementPlan) -> str:
    """Plain text: the topology, the row ranges per holder set, objective, baselines and bytes per link."""
    p, topo = plan.placement, plan.topology
    cliques = " ".join("{" + ",".join(map(str, c)) + "}" for c in topo.cliques())
    lines = [
        (
            f"placement on {topo.name} ({topo.num_gpus} GPUs, NVLink cliques {cliques}): "
            f"{format_bytes(plan.budget_per_gpu)} per GPU for features, each GPU reads "
            f"{format_bytes(plan.access_bytes)} of features per epoch"
        ),
    ]
    for start, end, kind, holders in plan.runs():
        g = (plan.bounds[:-1] >= start) & (plan.bounds[1:] <= end)
        share = 100 * float(plan.group_share[g].sum())
        lines.append(
            f"  rows {start:>12,} - {end:<12,} {format_bytes(float(plan.group_bytes[g].sum())):>10} "
            f"{share:5.1f}% of reads  {_holders_text(kind, holders, topo.num_gpus)}"
        )
    held = ", ".join(f"gpu{i} {format_bytes(b)}" for i, b in enumerate(p.gpu_bytes))
    lines.append(f"  held: {held}")
    lines.append(
        f"objective: slowest link {p.bottleneck}, {p.objective_seconds:.4g} s per epoch; baselines: "
        + ", ".join(f"{name} {seconds:.4g} s" for name, seconds in p.baselines.items())
    )
    lines.append("bytes per link per epoch (local: the GPU's own reads plus those it serves to peers):")
    for i in range(topo.num_gpus):
        into = [
            (name, nbytes)
            for name, nbytes in plan.link_bytes.items()
            if name == f"gpu{i} local" or name.endswith(f"->gpu{i}")
        ]
        into.sort(key=lambda kv: (not kv[0].endswith("local"), not kv[0].startswith("host"), kv[0]))
        lines.append(f"  gpu{i}: " + ", ".join(f"{name} {format_bytes(nbytes)}" for name, nbytes in into))
    return "\n".join(lines)
