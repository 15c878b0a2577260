"""Capacity planning: for candidate GPU feature budgets, tier sizes, measured read shares and PCIe traffic.

For each budget the feature table is split into tiers by :func:`graphtier.memory.plan.placement.plan_tiers`
(the same call ``graphtier train --features-on tiered --gpu-budget B`` makes), a replay of the training
sampler (:func:`graphtier.tiering.replay.replay_reads`, with the trainer's epoch numbering) counts
each node's feature reads and neighbour-list reads, and since every tier is a range of row ids the
reads a tier serves are a difference of a cumulative sum.

The topology (CSC graph) is planned too (:mod:`graphtier.tiering.plan.topology`): ``indptr`` and the
``--topology-budget`` prefix of ``indices`` on each GPU, the rest in host RAM (zero-copy) and on disk.
Rules for sharing memory: the topology is placed first on the GPU, so the feature budget of each row
is capped at the usable GPU memory minus the topology's GPU bytes (``capped`` marks rows that asked
for more); the features are placed first in host RAM, and the topology's host tier gets the usable RAM
they leave. Bytes over PCIe are the feature and topology host and disk tiers' reads; the epoch data
time divides bytes by the bandwidths. With ``--gpu-topology`` a multi-GPU placement of the features
is solved too (:mod:`graphtier.tiering.plan.placement`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from graphtier._choices import DEFAULT_BUDGETS, DEFAULT_DISK_GBPS, DEFAULT_GPU_GBPS, DEFAULT_PCIE_GBPS
from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset import resources
from graphtier.dataset.format import Dataset
from graphtier.errors import DatasetError, OptionError
from graphtier.memory.plan.gpu_topology import GpuTopology
from graphtier.memory.plan.placement import (
    DEVICE_RESERVE_FRACTION,
    DEVICE_RESERVE_MIN_BYTES,
    RAM_RESERVE_FRACTION,
    RAM_RESERVE_MIN_BYTES,
    TierPlan,
    format_bytes,
    parse_budget,
    plan_tiers,
)
from graphtier.tiering.plan.edges import EdgeFeaturePlan, plan_edge_features
from graphtier.tiering.plan.placement import (
    DEFAULT_PLACEMENT_GROUPS,
    PlacementPlan,
    check_groups,
    plan_placement,
)
from graphtier.tiering.plan.topology import TopologyPlan, plan_topology
from graphtier.tiering.replay import DEFAULT_REPLAY, Replay, replay_reads
from graphtier.tiering.seeds import training_seeds

PLAN_TIERS: tuple[str, ...] = ("gpu", "gpu-peer", "host", "disk")
TOPOLOGY_NOTE = (
    "topology: the plan samples on the GPU from a tiered graph (indptr and the --topology-budget "
    "prefix of indices on each GPU, the rest of indices read zero-copy from host RAM, then disk); a list "
    "straddling a tier boundary has its reads split in proportion; with CPU sampling the graph reads "
    "stay in host RAM and the sampled blocks cross PCIe instead"
)
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
    """``"80GiB"`` -> bytes; ``"auto"`` -> None. Raises OptionError naming ``option`` (a Python argument name,
    rendered as its flag for the CLI) on anything else."""
    try:
        budget = parse_budget(text, option)
    except OptionError:
        budget = None
    if budget is not None and budget.auto:
        return None
    if budget is None or budget.num_bytes is None or budget.num_bytes <= 0:
        raise OptionError(f"{{{option}}}: expected {_BYTES_EXPECTED}, found {text!r}", options=(option,))
    return budget.num_bytes


def _positive(value: float, option: str) -> float:
    if isinstance(value, bool) or not value > 0:
        raise OptionError(f"{{{option}}}: expected a positive number, found {value!r}", options=(option,))
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
        raise OptionError(f"{{gpus}}: expected an integer >= 1, found {gpus!r}", options=("gpus",))
    gpu_bytes = parse_memory(gpu_memory, "gpu_memory")
    if gpu_bytes is None:
        if not torch.cuda.is_available():
            raise OptionError(
                "{gpu_memory}: auto needs a CUDA device and this machine has none; "
                "pass the GPU's memory, e.g. {gpu_memory=80GiB}",
                options=("gpu_memory",),
            )
        gpu_bytes = int(torch.cuda.get_device_properties(0).total_memory)
        sources["gpu_memory"] = f"torch.cuda ({torch.cuda.get_device_name(0)})"
    else:
        sources["gpu_memory"] = "given"
    host_bytes = parse_memory(host_memory, "host_memory")
    if host_bytes is None:
        host_bytes = resources.available_memory()
        sources["host_memory"] = "available RAM (/proc/meminfo)"
    else:
        sources["host_memory"] = "given"
    bandwidths = {}
    for name, value, default in (
        ("pcie_gbps", pcie_gbps, DEFAULT_PCIE_GBPS),
        ("gpu_gbps", gpu_gbps, DEFAULT_GPU_GBPS),
        ("disk_gbps", disk_gbps, DEFAULT_DISK_GBPS),
    ):
        bandwidths[name] = _positive(value, name) if value is not None else default
        sources[name] = "given" if value is not None else "assumed"
    return DeviceSpec(
        gpu_memory_bytes=gpu_bytes, gpus=gpus, host_memory_bytes=host_bytes, sources=sources, **bandwidths
    )


def tier_reads(counts: np.ndarray, plan: TierPlan) -> dict[str, int]:
    """Reads per tier (PLAN_TIERS) of per-node read counts int64 [N] under ``plan`` (tiers are id ranges).

    Agrees with ``plan.tier_counts`` of every read id: "gpu" includes the compute device's own
    partition of an interleaved tier (ids with ``(id - local_rows) % P == 0``), "gpu-peer" the rest.
    """
    prefix = np.concatenate([[0], np.cumsum(counts, dtype=np.int64)])

    def below(end):
        return int(prefix[end])

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
    """One candidate GPU budget: tier rows and bytes, reads per epoch per tier, PCIe bytes, time estimate.

    ``tier_*``, ``reads_per_epoch``, ``read_share``, ``bytes_per_epoch``: features. ``topology_tier_bytes``
    and ``topology_bytes_per_epoch`` (gpu / host / disk): the graph (gpu includes ``indptr``).
    ``pcie_bytes_per_epoch``: feature and topology host + disk bytes. ``capped``: the feature budget
    was cut to the GPU memory left after the topology.
    """

    budget: str
    capped: bool
    tier_rows: dict[str, int]
    tier_bytes: dict[str, int]
    reads_per_epoch: dict[str, float]
    read_share: dict[str, float]
    bytes_per_epoch: dict[str, float]
    pcie_bytes_per_epoch: float
    epoch_data_seconds: float
    topology_tier_bytes: dict[str, int]
    topology_bytes_per_epoch: dict[str, float]


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
    topology: TopologyPlan
    placement: PlacementPlan | None = None
    edges: EdgeFeaturePlan | None = None

    @property
    def feature_gpu_bytes(self) -> int:
        """GPU memory left for features on each GPU: the usable memory minus the topology's GPU tier."""
        return max(0, self.device.gpu_usable_bytes - self.topology.gpu_bytes)

    def to_json(self) -> dict[str, Any]:
        device = asdict(self.device)
        device["gpu_usable_bytes"] = self.device.gpu_usable_bytes
        device["host_usable_bytes"] = self.device.host_usable_bytes
        return {
            "dataset": self.dataset,
            "num_rows": self.num_rows,
            "row_bytes": self.row_bytes,
            "node_order": self.node_order,
            "config": self.config,
            "device": device,
            "reads_per_epoch": self.reads_per_epoch,
            "replay_seconds": self.replay_seconds,
            "notes": self.notes,
            "budgets": [asdict(row) for row in self.rows],
            "topology": self.topology.to_json(),
            "feature_gpu_bytes": self.feature_gpu_bytes,
            "placement": self.placement.to_json() if self.placement is not None else None,
            "edge_features": self.edges.to_json() if self.edges is not None else None,
        }


def node_order_of(dataset: Dataset) -> str:
    """How the dataset's rows are ordered: hottest-first after ``graphtier reorder``, else as imported."""
    return dataset.node_order


def _budget_row(
    text: str,
    counts: np.ndarray,
    epochs: int,
    num_rows: int,
    row_bytes: int,
    device: DeviceSpec,
    topology: TopologyPlan,
) -> BudgetRow:
    wanted = parse_budget(text, "budgets")
    feature_gpu_bytes = max(0, device.gpu_usable_bytes - topology.gpu_bytes)
    fit = feature_gpu_bytes // max(row_bytes, 1)
    if wanted.auto:
        rows = fit
    else:
        rows = wanted.rows(num_rows, row_bytes)
        if wanted.fraction is not None and device.gpus > 1:
            rows = -(-rows // device.gpus)  # a fraction is of the whole table, spread over the GPUs
    capped = rows > fit
    per_gpu_rows = min(rows, fit, num_rows)
    plan = plan_tiers(
        num_rows,
        row_bytes,
        device=torch.device("cpu"),
        gpu_budget=f"{per_gpu_rows * row_bytes}B",
        peer_partitions=device.gpus,
        ram_budget=f"{device.host_usable_bytes}B",
        log=lambda _line: None,
    )
    tier_rows = {
        "gpu": plan.local_rows + (plan.peer_rows if device.gpus > 1 else 0),
        "host": plan.host_rows,
        "disk": plan.disk_rows,
    }
    reads = {tier: value / epochs for tier, value in tier_reads(counts, plan).items()}
    total = sum(reads.values())
    nbytes = {tier: value * row_bytes for tier, value in reads.items()}
    topo_tiers, topo_bytes = topology.row(device.host_usable_bytes - plan.host_rows * row_bytes)
    pcie = nbytes["host"] + nbytes["disk"] + topo_bytes["host"] + topo_bytes["disk"]
    on_gpu = nbytes["gpu"] + nbytes["gpu-peer"] + topo_bytes["gpu"]
    on_disk = nbytes["disk"] + topo_bytes["disk"]
    seconds = on_gpu / (device.gpu_gbps * 1e9) + pcie / (device.pcie_gbps * 1e9) + on_disk / (device.disk_gbps * 1e9)
    return BudgetRow(
        budget=text,
        capped=capped,
        tier_rows=tier_rows,
        tier_bytes={tier: value * row_bytes for tier, value in tier_rows.items()},
        reads_per_epoch=reads,
        read_share={t: (v / total if total else 0.0) for t, v in reads.items()},
        bytes_per_epoch=nbytes,
        pcie_bytes_per_epoch=pcie,
        epoch_data_seconds=seconds,
        topology_tier_bytes=topo_tiers,
        topology_bytes_per_epoch=topo_bytes,
    )


def plan_capacity(
    dataset: Dataset,
    device: DeviceSpec,
    *,
    replay: Replay = DEFAULT_REPLAY,
    budgets: Sequence[str] = DEFAULT_BUDGETS,
    topology_budget: str = "0",
    gpu_topology: GpuTopology | None = None,
    placement_groups: int = DEFAULT_PLACEMENT_GROUPS,
    progress: Progress = NO_PROGRESS,
) -> CapacityPlan:
    """Plan the feature and topology tiers of the homogeneous ``dataset`` on ``device`` for each GPU budget in
    ``budgets`` (a typed dataset: :func:`graphtier.tiering.plan.typed.plan_typed`).

    Replays ``replay.epochs`` training epochs of ``replay`` (:class:`~graphtier.tiering.replay.Replay`; numbered
    from 1 with sampling seed ``replay.seed``, as ``graphtier train --seed`` does) on the CPU; per-epoch figures are
    averages over them. ``replay.seeds``: the training nodes (default) or, for ``--task link``, the training pairs
    replayed through the link sampler (``replay.batch_size`` pairs per batch). ``topology_budget``: GPU memory for
    the prefix of ``indices`` (``--topology-budget``: bytes, a fraction of the edges or auto). ``gpu_topology``:
    also place the features on its GPUs (must have ``device.gpus`` GPUs) in ``placement_groups`` row groups.
    ``progress`` reports the replay.
    """
    replay.check_relations(dataset)
    if dataset.features is None:
        raise DatasetError(f"{dataset.path}: no features.npy; plan sizes the feature tiers, so it needs features")
    train = training_seeds(dataset, replay.seeds)
    epochs = replay.epochs
    if not budgets:
        raise OptionError("{budgets}: expected at least one budget", options=("budgets",))
    for text in budgets:  # refuse a bad budget before the replay, not after it
        parse_budget(text, "budgets")
    parse_budget(topology_budget, "topology_budget")
    check_groups(placement_groups)
    if gpu_topology is not None and gpu_topology.num_gpus != device.gpus:
        raise OptionError(
            f"--gpu-topology {gpu_topology.name}: has {gpu_topology.num_gpus} GPUs, but --gpus is {device.gpus}"
        )
    num_rows = int(dataset.features.shape[0])
    row_bytes = int(dataset.features.shape[1]) * int(dataset.features.dtype.itemsize)
    started = time.perf_counter()
    reads = replay_reads(dataset, replay, train=train, first_epoch=1, progress=progress)
    replay_seconds = time.perf_counter() - started
    counts = reads.features
    topology = plan_topology(
        dataset.indptr,
        int(np.asarray(dataset.indices).dtype.itemsize),
        reads,
        topology_budget,
        device.gpu_usable_bytes,
        epochs,
    )
    rows = [_budget_row(text, counts, epochs, num_rows, row_bytes, device, topology) for text in budgets]
    placement = None
    if gpu_topology is not None:
        placement = plan_placement(
            counts,
            row_bytes,
            gpu_topology,
            max(0, device.gpu_usable_bytes - topology.gpu_bytes),
            epochs=epochs,
            groups=placement_groups,
        )
    order = node_order_of(dataset)
    notes = [TOPOLOGY_NOTE]
    if topology.capped:
        notes.append(
            f"--topology-budget {topology_budget} capped: {topology.gpu_entries:,} of "
            f"{topology.num_entries:,} indices entries fit next to indptr in the usable GPU memory"
        )
    if topology.indptr_bytes > device.gpu_usable_bytes:
        notes.append(
            f"indptr ({format_bytes(topology.indptr_bytes)}) alone exceeds the usable GPU memory "
            f"({format_bytes(device.gpu_usable_bytes)}): sampling on this GPU does not fit"
        )
    if order == "original":
        notes.append(
            "node order is the original one, so the GPU tier holds the lowest ids, not the hottest rows: "
            "run `graphtier reorder` first to make the GPU tier serve the most reads"
        )
    assumed = [name for name, source in device.sources.items() if source == "assumed"]
    if assumed:
        notes.append(
            "assumed bandwidths (pass them to replace): "
            + ", ".join(f"{name.replace('_gbps', '')} {getattr(device, name):g} GB/s" for name in assumed)
        )
    if device.gpus > 1:
        notes.append(
            f"{device.gpus} GPUs: the budget is per GPU and GPU rows are interleaved over them "
            "(gpu-peer reads cross NVLink/PCIe peer links, not host PCIe)"
        )
    config = {
        **replay.describe(),
        "budgets": list(budgets),
        "topology_budget": topology_budget,
        "gpu_topology": gpu_topology.name if gpu_topology is not None else None,
        "placement_groups": int(placement_groups),
    }
    return CapacityPlan(
        dataset=str(dataset.path),
        num_rows=num_rows,
        row_bytes=row_bytes,
        node_order=order,
        config=config,
        device=device,
        rows=rows,
        reads_per_epoch=float(counts.sum()) / epochs,
        replay_seconds=replay_seconds,
        notes=notes,
        topology=topology,
        placement=placement,
        edges=plan_edge_features(dataset, topology.entries, list(budgets), epochs),
    )
