"""What ``graphtier plan`` shows of a :class:`~graphtier.tiering.plan.capacity.CapacityPlan`: the text table, the JSON record
(written atomically) and the plot."""

from __future__ import annotations

import json
import os
from pathlib import Path

from graphtier.errors import OptionError
from graphtier.memory.plan.placement import format_bytes
from graphtier.sampling.neighbor.sampler import format_fanouts
from graphtier.tiering.plan.capacity import PLAN_TIERS, CapacityPlan
from graphtier.tiering.plan.edges import format_edge_plan
from graphtier.tiering.plan.topology import TOPOLOGY_TIERS
from graphtier.tiering.plotting import fit_title, load_pyplot


def format_plan(plan: CapacityPlan) -> str:
    """A plain-text table: one line per budget with tier rows/bytes, read shares, PCIe bytes and time."""
    topo = plan.topology
    topo_reads = plan.rows[0].topology_bytes_per_epoch if plan.rows else dict.fromkeys(TOPOLOGY_TIERS, 0.0)
    header = (
        f"{'budget':>8} {'gpu rows':>12} {'gpu':>10} {'host rows':>12} {'host':>10} {'disk rows':>12} "
        f"{'rd gpu':>6} {'rd peer':>7} {'rd host':>7} {'rd disk':>7} {'T host':>10} {'T disk':>10} "
        f"{'T PCIe':>10} {'PCIe/epoch':>11} {'data s':>8}"
    )
    lines = [
        (
            f"topology on each GPU: indptr {format_bytes(topo.indptr_bytes)} + {topo.gpu_entries:,} of "
            f"{topo.num_entries:,} indices entries ({format_bytes(topo.gpu_entries * topo.itemsize)}, --topology-budget "
            f"{topo.budget}) = {format_bytes(topo.gpu_bytes)}, leaving {format_bytes(plan.feature_gpu_bytes)} for features; "
            f"{format_bytes(topo_reads['gpu'])} of graph reads/epoch on the GPU (indptr included)"
        ),
        header,
        "-" * len(header),
    ]
    for row in plan.rows:
        share = {t: 100 * row.read_share[t] for t in PLAN_TIERS}
        mark = "*" if row.capped else " "
        lines.append(
            f"{row.budget + mark:>8} {row.tier_rows['gpu']:>12,} {format_bytes(row.tier_bytes['gpu']):>10} "
            f"{row.tier_rows['host']:>12,} {format_bytes(row.tier_bytes['host']):>10} {row.tier_rows['disk']:>12,} "
            f"{share['gpu']:>5.1f}% {share['gpu-peer']:>6.1f}% {share['host']:>6.1f}% {share['disk']:>6.1f}% "
            f"{format_bytes(row.topology_tier_bytes['host']):>10} {format_bytes(row.topology_tier_bytes['disk']):>10} "
            f"{format_bytes(row.topology_bytes_per_epoch['host'] + row.topology_bytes_per_epoch['disk']):>10} "
            f"{format_bytes(row.pcie_bytes_per_epoch):>11} {row.epoch_data_seconds:>8.3f}"
        )
    lines.append(
        "rd TIER: share of the epoch's feature reads that TIER serves; T host / T disk: graph (indices) bytes in "
        "host RAM / on disk; T PCIe: graph bytes read from them per epoch; PCIe/epoch: feature + graph host "
        "and disk bytes read; data s: estimated seconds of feature and graph reads per epoch"
    )
    if any(row.capped for row in plan.rows):
        lines.append(
            f"* capped at the GPU memory left for features ({format_bytes(plan.feature_gpu_bytes)}: "
            f"{format_bytes(plan.device.gpu_usable_bytes)} usable minus {format_bytes(topo.gpu_bytes)} of topology)"
        )
    return "\n".join(lines + format_edge_plan(plan.edges))


def write_plan_json(plan: CapacityPlan, path: str | os.PathLike[str]) -> None:
    """Write ``plan.to_json()`` to ``path`` atomically (temporary file, then rename)."""
    path = Path(path)
    if not path.parent.is_dir():
        raise OptionError(f"--json: directory {path.parent} does not exist")
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(json.dumps(plan.to_json(), indent=2) + "\n")
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OptionError(f"--json: cannot write {path} ({exc.strerror})") from None


def plot_plan(plan: CapacityPlan, path: str | os.PathLike[str]) -> None:
    """Save a PNG of bytes over PCIe per epoch (features and graph) against the GPU budget (share of feature rows on the GPU)."""
    path = Path(path)
    if not path.parent.is_dir():
        raise OptionError(f"--plot: directory {path.parent} does not exist")
    plt = load_pyplot()
    x = [100.0 * row.tier_rows["gpu"] / max(plan.num_rows, 1) for row in plan.rows]
    y = [row.pcie_bytes_per_epoch / 2**30 for row in plan.rows]
    figure, axes = plt.subplots(figsize=(6.4, 4.8), dpi=120)
    axes.plot(x, y, marker="o", linewidth=1.5)
    for xi, yi, row in zip(x, y, plan.rows):
        axes.annotate(row.budget, (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=8)
    fanouts = format_fanouts(plan.config["fanouts"])
    axes.set_xlabel(f"GPU feature budget (% of rows, {plan.node_order} order)")
    axes.set_ylabel("bytes over PCIe per epoch (GiB)")
    axes.grid(True, alpha=0.3)
    fit_title(
        figure,
        axes,
        [
            f"{Path(plan.dataset).name}: feature + graph bytes over PCIe",
            f"fanouts {fanouts}, batch {plan.config['batch_size']}",
        ],
    )
    tmp = path.with_name(f".{path.name}.tmp.png")
    try:
        figure.savefig(tmp)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OptionError(f"--plot: cannot write {path} ({exc.strerror})") from None
    finally:
        plt.close(figure)
