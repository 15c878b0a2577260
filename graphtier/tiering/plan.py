"""Capacity planning: for candidate GPU feature budgets, tier sizes, measured read shares and PCIe traffic.

For each budget the feature table is split into tiers by :func:`graphtier.store.placement.plan_tiers`
(the same call ``graphtier train --features-on tiered --gpu-budget B`` makes), a replay of the training
sampler (:func:`graphtier.tiering.reads.count_feature_reads`, with the trainer's epoch numbering) counts
each node's feature reads, and since every tier is a range of row ids the reads a tier serves are a
difference of a cumulative sum. Bytes over PCIe are the host and disk tiers' reads times the row size;
the epoch data time divides them by assumed bandwidths. Only features are planned: topology (the CSC
graph) tiering is not built yet, so the graph stays where the sampler reads it (host RAM).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from graphtier.dataset.format import Dataset
from graphtier.errors import DatasetError, OptionError
from graphtier.store.placement import (
    DEVICE_RESERVE_FRACTION,
    DEVICE_RESERVE_MIN_BYTES,
    RAM_RESERVE_FRACTION,
    RAM_RESERVE_MIN_BYTES,
    TierPlan,
    available_ram_bytes,
    format_bytes,
    parse_budget,
    plan_tiers,
)
from graphtier.tiering.reads import count_feature_reads

DEFAULT_BUDGETS: tuple[str, ...] = ("0%", "1%", "5%", "10%", "25%", "50%", "100%")
DEFAULT_PCIE_GBPS = 25.0
DEFAULT_GPU_GBPS = 1500.0
DEFAULT_DISK_GBPS = 3.0
PLAN_TIERS: tuple[str, ...] = ("gpu", "gpu-peer", "host", "disk")
TOPOLOGY_NOTE = "topology tiering is not built yet: only features are planned (the graph stays in host RAM)"
_BYTES_EXPECTED = 'bytes with a unit ("80GiB", "40GB") or "auto"'


@dataclass(frozen=True)
class DeviceSpec:
    """The machine planned for.

    Attributes:
        gpu_memory_bytes: memory of one GPU; ``gpu_usable_bytes`` of it may hold features (a reserve
            of max(15 %, 2 GiB) is left for the model and activations, as ``--gpu-budget auto`` does).
        gpus: GPUs; with more than one the budget is per GPU and the GPU rows are interleaved over them.
        host_memory_bytes: RAM; ``host_usable_bytes`` (minus max(10 %, 2 GiB)) holds the host tier.
        pcie_gbps, gpu_gbps, disk_gbps: bandwidths in GB/s (10^9 bytes) used for the time estimate.
        sources: where each value came from ("given", "assumed", "torch.cuda", "/proc/meminfo").
    """

    gpu_memory_bytes: int
    gpus: int
    host_memory_bytes: int
    pcie_gbps: float
    gpu_gbps: float
    disk_gbps: float
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def gpu_usable_bytes(self) -> int:
        reserve = max(int(DEVICE_RESERVE_FRACTION * self.gpu_memory_bytes), DEVICE_RESERVE_MIN_BYTES)
        return max(0, self.gpu_memory_bytes - reserve)

    @property
    def host_usable_bytes(self) -> int:
        reserve = max(int(RAM_RESERVE_FRACTION * self.host_memory_bytes), RAM_RESERVE_MIN_BYTES)
        return max(0, self.host_memory_bytes - reserve)


def parse_memory(text: str, option: str) -> int | None:
    """``"80GiB"`` -> bytes; ``"auto"`` -> None. Raises OptionError naming ``option`` on anything else."""
    try:
        budget = parse_budget(text, option)
    except OptionError:
        budget = None
    if budget is not None and budget.auto:
        return None
    if budget is None or budget.num_bytes is None or budget.num_bytes <= 0:
        raise OptionError(f"{option}: expected {_BYTES_EXPECTED}, found {text!r}")
    return budget.num_bytes


def _positive(value: float, option: str) -> float:
    if isinstance(value, bool) or not value > 0:
        raise OptionError(f"{option}: expected a positive number, found {value!r}")
    return float(value)


def describe_device(
    gpu_memory: str = "auto",
    *,
    gpus: int = 1,
    host_memory: str = "auto",
    pcie_gbps: float | None = None,
    gpu_gbps: float | None = None,
    disk_gbps: float | None = None,
) -> DeviceSpec:
    """Resolve the device options into a :class:`DeviceSpec`.

    ``gpu_memory`` ``auto`` reads the total memory of CUDA device 0 and is refused without CUDA;
    ``host_memory`` ``auto`` is the available RAM (``MemAvailable``). Bandwidths left as None take the
    defaults and are recorded as "assumed".
    """
    sources: dict[str, str] = {}
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise OptionError(f"--gpus: expected an integer >= 1, found {gpus!r}")
    gpu_bytes = parse_memory(gpu_memory, "--gpu-memory")
    if gpu_bytes is None:
        if not torch.cuda.is_available():
            raise OptionError("--gpu-memory: auto needs a CUDA device and this machine has none; "
                              "pass the GPU's memory, e.g. --gpu-memory 80GiB")
        gpu_bytes = int(torch.cuda.get_device_properties(0).total_memory)
        sources["gpu_memory"] = f"torch.cuda ({torch.cuda.get_device_name(0)})"
    else:
        sources["gpu_memory"] = "given"
    host_bytes = parse_memory(host_memory, "--host-memory")
    if host_bytes is None:
        host_bytes = available_ram_bytes()
        sources["host_memory"] = "available RAM (/proc/meminfo)"
    else:
        sources["host_memory"] = "given"
    bandwidths = {}
    for name, value, default in (("pcie_gbps", pcie_gbps, DEFAULT_PCIE_GBPS), ("gpu_gbps", gpu_gbps, DEFAULT_GPU_GBPS),
                                 ("disk_gbps", disk_gbps, DEFAULT_DISK_GBPS)):
        option = "--" + name.replace("_", "-")
        bandwidths[name] = _positive(value, option) if value is not None else default
        sources[name] = "given" if value is not None else "assumed"
    return DeviceSpec(gpu_memory_bytes=gpu_bytes, gpus=gpus, host_memory_bytes=host_bytes, sources=sources,
                      **bandwidths)


def tier_reads(counts: np.ndarray, plan: TierPlan) -> dict[str, int]:
    """Reads per tier (PLAN_TIERS) of per-node read counts int64 [N] under ``plan`` (tiers are id ranges).

    Agrees with ``plan.tier_counts`` of every read id: "gpu" includes the compute device's own
    partition of an interleaved tier (ids with ``(id - local_rows) % P == 0``), "gpu-peer" the rest.
    """
    prefix = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])
    below = lambda end: int(prefix[end])
    peer = counts[plan.local_rows : plan.peer_end]
    own = int(peer[:: plan.peer_partitions].sum()) if peer.size else 0
    return {
        "gpu": below(plan.local_rows) + own,
        "gpu-peer": below(plan.peer_end) - below(plan.local_rows) - own,
        "host": below(plan.host_end) - below(plan.peer_end),
        "disk": below(plan.num_rows) - below(plan.host_end),
    }


@dataclass(frozen=True)
class BudgetRow:
    """One candidate GPU budget: tier rows and bytes, reads per epoch per tier, PCIe bytes, time estimate."""

    budget: str
    capped: bool
    tier_rows: dict[str, int]
    tier_bytes: dict[str, int]
    reads_per_epoch: dict[str, float]
    read_share: dict[str, float]
    bytes_per_epoch: dict[str, float]
    pcie_bytes_per_epoch: float
    epoch_data_seconds: float


@dataclass
class CapacityPlan:
    """The result of :func:`plan_capacity`; ``to_json()`` gives the ``--json`` document."""

    dataset: str
    num_rows: int
    row_bytes: int
    node_order: str
    config: dict[str, Any]
    device: DeviceSpec
    rows: list[BudgetRow]
    reads_per_epoch: float
    replay_seconds: float
    notes: list[str]

    def to_json(self) -> dict[str, Any]:
        device = asdict(self.device)
        device["gpu_usable_bytes"] = self.device.gpu_usable_bytes
        device["host_usable_bytes"] = self.device.host_usable_bytes
        return {
            "dataset": self.dataset, "num_rows": self.num_rows, "row_bytes": self.row_bytes,
            "node_order": self.node_order, "config": self.config, "device": device,
            "reads_per_epoch": self.reads_per_epoch, "replay_seconds": self.replay_seconds,
            "notes": self.notes, "budgets": [asdict(row) for row in self.rows],
        }


def node_order_of(dataset: Dataset) -> str:
    """How the dataset's rows are ordered: hottest-first after ``graphtier reorder``, else as imported."""
    reorder = dataset.meta.get("reorder")
    if dataset.meta.get("node_order") == "reordered" or reorder:
        score = reorder.get("score") if isinstance(reorder, dict) else None
        return f"hottest-first (reordered by {score})" if score else "hottest-first (reordered)"
    return "original"


def _budget_row(text: str, counts: np.ndarray, epochs: int, num_rows: int, row_bytes: int, device: DeviceSpec) -> BudgetRow:
    wanted = parse_budget(text, "--budgets")
    if wanted.auto:
        rows = device.gpu_usable_bytes // max(row_bytes, 1)
    else:
        rows = wanted.rows(num_rows, row_bytes)
        if wanted.fraction is not None and device.gpus > 1:
            rows = -(-rows // device.gpus)  # a fraction is of the whole table, spread over the GPUs
    fit = device.gpu_usable_bytes // max(row_bytes, 1)
    capped = rows > fit
    per_gpu_rows = min(rows, fit, num_rows)
    plan = plan_tiers(
        num_rows, row_bytes, device=torch.device("cpu"), gpu_budget=f"{per_gpu_rows * row_bytes}B",
        peer_partitions=device.gpus, ram_budget=f"{device.host_usable_bytes}B", log=lambda _line: None,
    )
    tier_rows = {"gpu": plan.local_rows + (plan.peer_rows if device.gpus > 1 else 0),
                 "host": plan.host_rows, "disk": plan.disk_rows}
    reads = {tier: value / epochs for tier, value in tier_reads(counts, plan).items()}
    total = sum(reads.values())
    nbytes = {tier: value * row_bytes for tier, value in reads.items()}
    pcie = nbytes["host"] + nbytes["disk"]
    seconds = ((nbytes["gpu"] + nbytes["gpu-peer"]) / (device.gpu_gbps * 1e9) + pcie / (device.pcie_gbps * 1e9)
               + nbytes["disk"] / (device.disk_gbps * 1e9))
    return BudgetRow(
        budget=text, capped=capped, tier_rows=tier_rows,
        tier_bytes={tier: value * row_bytes for tier, value in tier_rows.items()},
        reads_per_epoch=reads, read_share={t: (v / total if total else 0.0) for t, v in reads.items()},
        bytes_per_epoch=nbytes, pcie_bytes_per_epoch=pcie, epoch_data_seconds=seconds,
    )


def plan_capacity(
    dataset: Dataset,
    device: DeviceSpec,
    *,
    fanouts: Sequence[int] = (15, 10, 5),
    batch_size: int = 1024,
    epochs: int = 1,
    seed: int = 0,
    budgets: Sequence[str] = DEFAULT_BUDGETS,
) -> CapacityPlan:
    """Plan the feature tiers of ``dataset`` on ``device`` for each GPU budget string in ``budgets``.

    Replays ``epochs`` training epochs (numbered from 1 with sampling seed ``seed``, as
    ``graphtier train --seed seed`` does) on the CPU; per-epoch figures are averages over them.
    """
    if dataset.features is None:
        raise DatasetError(f"{dataset.path}: no features.npy; plan sizes the feature tiers, so it needs features")
    train = dataset.train_idx
    if train is None or np.asarray(train).size == 0:
        raise DatasetError(f"{dataset.path / 'train_idx.npy'}: expected a non-empty training split (import with --split)")
    if not budgets:
        raise OptionError("--budgets: expected at least one budget")
    for text in budgets:  # refuse a bad budget before the replay, not after it
        parse_budget(text, "--budgets")
    num_rows = int(dataset.features.shape[0])
    row_bytes = int(dataset.features.shape[1]) * int(dataset.features.dtype.itemsize)
    started = time.perf_counter()
    counts = count_feature_reads(dataset.indptr, dataset.indices, np.asarray(train, dtype=np.int64),
                                 fanouts=list(fanouts), batch_size=batch_size, epochs=epochs, seed=seed, first_epoch=1)
    replay = time.perf_counter() - started
    rows = [_budget_row(text, counts, epochs, num_rows, row_bytes, device) for text in budgets]
    order = node_order_of(dataset)
    notes = [TOPOLOGY_NOTE]
    if order == "original":
        notes.append("node order is the original one, so the GPU tier holds the lowest ids, not the hottest rows: "
                     "run `graphtier reorder` first to make the GPU tier serve the most reads")
    assumed = [name for name, source in device.sources.items() if source == "assumed"]
    if assumed:
        notes.append("assumed bandwidths (pass them to replace): " + ", ".join(
            f"{name.replace('_gbps', '')} {getattr(device, name):g} GB/s" for name in assumed))
    if device.gpus > 1:
        notes.append(f"{device.gpus} GPUs: the budget is per GPU and GPU rows are interleaved over them "
                     "(gpu-peer reads cross NVLink/PCIe peer links, not host PCIe)")
    config = {"fanouts": [int(f) for f in fanouts], "batch_size": int(batch_size), "epochs": int(epochs),
              "seed": int(seed), "budgets": list(budgets)}
    return CapacityPlan(dataset=str(dataset.path), num_rows=num_rows, row_bytes=row_bytes, node_order=order,
                        config=config, device=device, rows=rows, reads_per_epoch=float(counts.sum()) / epochs,
                        replay_seconds=replay, notes=notes)


def format_plan(plan: CapacityPlan) -> str:
    """A plain-text table: one line per budget with tier rows/bytes, read shares, PCIe bytes and time."""
    header = (f"{'budget':>8} {'gpu rows':>12} {'gpu':>10} {'host rows':>12} {'host':>10} {'disk rows':>12} "
              f"{'rd gpu':>6} {'rd peer':>7} {'rd host':>7} {'rd disk':>7} {'PCIe/epoch':>11} {'data s':>8}")
    lines = [header, "-" * len(header)]
    for row in plan.rows:
        share = {t: 100 * row.read_share[t] for t in PLAN_TIERS}
        mark = "*" if row.capped else " "
        lines.append(
            f"{row.budget + mark:>8} {row.tier_rows['gpu']:>12,} {format_bytes(row.tier_bytes['gpu']):>10} "
            f"{row.tier_rows['host']:>12,} {format_bytes(row.tier_bytes['host']):>10} {row.tier_rows['disk']:>12,} "
            f"{share['gpu']:>5.1f}% {share['gpu-peer']:>6.1f}% {share['host']:>6.1f}% {share['disk']:>6.1f}% "
            f"{format_bytes(row.pcie_bytes_per_epoch):>11} {row.epoch_data_seconds:>8.3f}"
        )
    lines.append("rd TIER: share of the epoch's feature reads that TIER serves; PCIe/epoch: host + disk tier bytes; "
                 "data s: estimated seconds of feature reads per epoch")
    if any(row.capped for row in plan.rows):
        lines.append(f"* capped at the GPU memory usable for features ({format_bytes(plan.device.gpu_usable_bytes)})")
    return "\n".join(lines)


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
    """Save a PNG of bytes over PCIe per epoch against the GPU budget (share of feature rows on the GPU)."""
    path = Path(path)
    if not path.parent.is_dir():
        raise OptionError(f"--plot: directory {path.parent} does not exist")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise OptionError("--plot: needs matplotlib (pip install 'graphtier[plot]')") from None
    x = [100.0 * row.tier_rows["gpu"] / max(plan.num_rows, 1) for row in plan.rows]
    y = [row.pcie_bytes_per_epoch / 2**30 for row in plan.rows]
    figure, axes = plt.subplots(figsize=(6.4, 4.8), dpi=120)
    axes.plot(x, y, marker="o", linewidth=1.5)
    for xi, yi, row in zip(x, y, plan.rows):
        axes.annotate(row.budget, (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=8)
    fanouts = ",".join(str(f) for f in plan.config["fanouts"])
    axes.set_title(f"{Path(plan.dataset).name}: feature bytes over PCIe, fanouts {fanouts}, batch {plan.config['batch_size']}")
    axes.set_xlabel(f"GPU feature budget (% of rows, {plan.node_order} order)")
    axes.set_ylabel("bytes over PCIe per epoch (GiB)")
    axes.grid(True, alpha=0.3)
    figure.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    try:
        figure.savefig(tmp)
        tmp.replace(path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OptionError(f"--plot: cannot write {path} ({exc.strerror})") from None
    finally:
        plt.close(figure)
