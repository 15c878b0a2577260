"""The last line of ``graphtier plan``: the smallest candidate GPU budget worth buying.

A budget's PCIe saving is the host-PCIe bytes per epoch it avoids against no GPU feature tier: the feature reads
its GPU tiers serve (``gpu`` and ``gpu-peer``), which would otherwise cross PCIe. The recommendation is the smallest
budget (by feature bytes on the GPU) whose saving reaches :data:`SAVING_SHARE` of the best saving of the listed
budgets; when that budget holds every feature row, everything fits.
"""

from __future__ import annotations

from graphtier.memory.plan.placement import format_bytes
from graphtier.tiering.plan.capacity import BudgetRow, CapacityPlan

SAVING_SHARE = 0.9
"""A budget is recommended when it saves at least 90% of the PCIe bytes the best listed budget saves."""


def pcie_saving(row: BudgetRow, no_gpu_tier_bytes: float) -> float:
    """Bytes per epoch kept off host PCIe by ``row``'s GPU tier: ``no_gpu_tier_bytes`` (PCIe bytes without one)
    minus the row's own PCIe bytes."""
    return no_gpu_tier_bytes - row.pcie_bytes_per_epoch


def recommend_budget(plan: CapacityPlan, share: float = SAVING_SHARE) -> str:
    """One line: the smallest listed budget reaching ``share`` of the best PCIe saving, or that everything fits."""
    rows = plan.rows
    no_gpu_tier = max(
        row.pcie_bytes_per_epoch + row.bytes_per_epoch["gpu"] + row.bytes_per_epoch["gpu-peer"] for row in rows
    )
    savings = [pcie_saving(row, no_gpu_tier) for row in rows]
    best = max(savings)
    if best <= 0:
        return (
            "recommendation: none of the listed budgets moves feature reads off PCIe "
            f"({format_bytes(no_gpu_tier)}/epoch with every one of them)"
        )
    enough = [i for i, saving in enumerate(savings) if saving >= share * best]
    chosen = min(enough, key=lambda i: (rows[i].tier_bytes["gpu"], i))
    row = rows[chosen]
    whole = [r for r in rows if r.tier_rows["gpu"] >= plan.num_rows]
    if row.tier_rows["gpu"] >= plan.num_rows:
        return (
            f"recommendation: everything fits: --gpu-budget {row.budget} holds all {plan.num_rows:,} feature rows "
            f"({format_bytes(plan.num_rows * plan.row_bytes)}) on the GPU; PCIe then carries "
            f"{format_bytes(row.pcie_bytes_per_epoch)}/epoch instead of {format_bytes(no_gpu_tier)}"
        )
    best_row = rows[savings.index(best)]
    line = (
        f"recommendation: --gpu-budget {row.budget} ({format_bytes(row.tier_bytes['gpu'])} of features on the GPU), "
        f"the smallest listed budget within {share:.0%} of the best PCIe saving: it keeps "
        f"{format_bytes(savings[chosen])} of the {format_bytes(no_gpu_tier)}/epoch without a GPU tier off PCIe"
    )
    if best_row is not row:
        line += f" ({best_row.budget}: {format_bytes(best)})"
    if whole:
        line += f"; everything fits with --gpu-budget {whole[0].budget}"
    return line
