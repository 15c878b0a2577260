"""``graphtier plan DATASET``: size the GPU, host and disk feature and graph tiers for candidate GPU budgets;
with ``--gpu-topology``, place the features on the GPUs of a multi-GPU machine."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from graphtier._choices import DEFAULT_BUDGETS, DEFAULT_DISK_GBPS, DEFAULT_GPU_GBPS, DEFAULT_PCIE_GBPS, PAIR_MOVE_GROUPS
from graphtier.cli.common.options import replay_options
from graphtier.cli.common.progress import cli_progress
from graphtier.dataset.format import Dataset
from graphtier.errors import OptionError

if TYPE_CHECKING:
    from graphtier.tiering.plan.capacity import DeviceSpec
    from graphtier.tiering.replay import Replay


@click.command("plan")
@click.argument("dataset", type=click.Path(path_type=Path))
@replay_options
@click.option(
    "--gpu-memory", default="auto", show_default=True, help='Memory of one GPU, e.g. "80GiB"; auto reads CUDA device 0.'
)
@click.option(
    "--gpus", type=int, default=None, help="GPUs (the budget is per GPU)  [default: 1, or the --gpu-topology's]"
)
@click.option("--host-memory", default="auto", show_default=True, help='Host RAM, e.g. "512GiB"; auto: available RAM.')
@click.option(
    "--budgets",
    default=",".join(DEFAULT_BUDGETS),
    show_default=True,
    help="Candidate GPU feature budgets, in train --gpu-budget syntax, comma-separated.",
)
@click.option(
    "--topology-budget",
    default="0",
    show_default=True,
    help="GPU memory for the hottest nodes' neighbour lists: bytes, a fraction of the edges or auto.",
)
@click.option(
    "--gpu-topology",
    default=None,
    help="Place the features on these GPUs: dgx1-v100, nvswitch-8, pcie-4, nvlink-pairs-4, a JSON file "
    "or nvml (this machine).",
)
@click.option(
    "--placement-groups",
    type=int,
    default=PAIR_MOVE_GROUPS,
    show_default=True,
    help="Row groups the placement solver places.",
)
@click.option(
    "--pcie-gbps", type=float, default=None, help=f"Host-GPU bandwidth, GB/s  [assumed: {DEFAULT_PCIE_GBPS:g}]"
)
@click.option(
    "--gpu-gbps", type=float, default=None, help=f"GPU memory bandwidth, GB/s  [assumed: {DEFAULT_GPU_GBPS:g}]"
)
@click.option(
    "--disk-gbps", type=float, default=None, help=f"Disk read bandwidth, GB/s  [assumed: {DEFAULT_DISK_GBPS:g}]"
)
@click.option("--json", "json_path", type=click.Path(path_type=Path), default=None, help="Write the plan as JSON.")
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Write a PNG of PCIe bytes against GPU budget (needs matplotlib).",
)
def command(
    dataset: Path,
    replay: Replay,
    gpu_memory: str,
    gpus: int | None,
    host_memory: str,
    budgets: str,
    topology_budget: str,
    gpu_topology: str | None,
    placement_groups: int,
    pcie_gbps: float | None,
    gpu_gbps: float | None,
    disk_gbps: float | None,
    json_path: Path | None,
    plot_path: Path | None,
) -> None:
    """Plan feature and graph tiers per GPU budget (sizes, read shares from a sampling trace, PCIe bytes, data time);
    with --gpu-topology, place the features on the GPUs and print the bytes per link. A typed dataset: each budget
    split across the node types' tables by reads per byte, the topology budget across relations."""
    from graphtier.memory.plan.placement import format_bytes
    from graphtier.tiering.plan.capacity import describe_device, plan_capacity
    from graphtier.tiering.plan.placement import format_placement, gpu_topology_from_option
    from graphtier.tiering.plan.recommendation import recommend_budget
    from graphtier.tiering.plan.report import format_plan, plot_plan, write_plan_json

    topology = gpu_topology_from_option(gpu_topology, gpus) if gpu_topology is not None else None
    if gpus is None:
        gpus = topology.num_gpus if topology is not None else 1
    device = describe_device(
        gpu_memory, gpus=gpus, host_memory=host_memory, pcie_gbps=pcie_gbps, gpu_gbps=gpu_gbps, disk_gbps=disk_gbps
    )
    for path, name in ((json_path, "--json"), (plot_path, "--plot")):
        if path is not None and not path.parent.is_dir():
            raise OptionError(f"{name}: directory {path.parent} does not exist")
    data = Dataset.open(dataset)
    budget_list = [b.strip() for b in budgets.split(",") if b.strip()]
    if data.is_hetero:
        if topology is not None or plot_path is not None:
            raise OptionError(f"{dataset}: --gpu-topology and --plot are not planned for a typed dataset; drop them")
        _plan_typed(data, device, budget_list, topology_budget, replay, json_path)
        return
    plan = plan_capacity(
        data, device, replay=replay, budgets=budget_list, topology_budget=topology_budget, gpu_topology=topology,
        placement_groups=placement_groups, progress=cli_progress(),
    )  # fmt: skip
    click.echo(
        f"{data.name}: {plan.num_rows:,} feature rows x {format_bytes(plan.row_bytes)} "
        f"= {format_bytes(plan.num_rows * plan.row_bytes)}, node order {plan.node_order}; "
        f"{plan.reads_per_epoch:,.0f} feature reads/epoch ({replay.summary()}, "
        f"{replay.epochs} epoch(s) traced in {plan.replay_seconds:.1f} s)"
    )
    click.echo(
        f"device: {gpus} x GPU {format_bytes(device.gpu_memory_bytes)} ({device.sources['gpu_memory']}; "
        f"{format_bytes(device.gpu_usable_bytes)} usable for features), host {format_bytes(device.host_memory_bytes)} "
        f"({device.sources['host_memory']}; {format_bytes(device.host_usable_bytes)} for the host tier)"
    )
    click.echo(format_plan(plan))
    if plan.placement is not None:
        click.echo(format_placement(plan.placement))
    for note in plan.notes:
        click.echo(f"note: {note}")
    click.echo(recommend_budget(plan))
    if json_path is not None:
        write_plan_json(plan, json_path)
        click.echo(f"wrote {json_path}")
    if plot_path is not None:
        plot_plan(plan, plot_path)
        click.echo(f"wrote {plot_path}")


def _plan_typed(
    data: Dataset, device: DeviceSpec, budgets: list[str], topology_budget: str, replay: Replay, json_path: Path | None
) -> None:
    """Plan a typed dataset: one GPU budget split across node types, one topology budget across relations, from the
    reads of ``replay``'s epochs (training nodes, or link pairs)."""
    from graphtier.memory.plan.placement import format_bytes
    from graphtier.tiering.plan.report import write_plan_json
    from graphtier.tiering.plan.typed import format_typed_plan, plan_typed

    plan = plan_typed(
        data, budgets=budgets, topology_budget=topology_budget, gpu_usable_bytes=device.gpu_usable_bytes,
        replay=replay, progress=cli_progress(),
    )  # fmt: skip
    click.echo(
        f"{data.name}: {len(plan.table_rows)} node types, {len(plan.topology_rows)} relations; "
        f"{replay.summary()}, {replay.epochs} epoch(s) traced; GPU {format_bytes(device.gpu_usable_bytes)} usable"
    )
    click.echo(format_typed_plan(plan))
    if json_path is not None:
        write_plan_json(plan, json_path)  # type: ignore[arg-type]  # any plan with to_json()
        click.echo(f"wrote {json_path}")
