"""Neighbour-read throughput of :class:`graphtier.memory.TieredTopology` per tier layout, with and without sorted reads.

A random CSC graph (uniform random degrees in [0, 2 * avg_degree], int32 ``indices``) is built in
RAM. Each call reads ``positions`` entries of ``indices`` the way a neighbour sampler does: a random
destination ``v`` with at least one in-neighbour, then a uniformly random position in
``[indptr[v], indptr[v + 1])``. For every layout (``topology_budget``: the share of ``indices`` on the
device, the rest in host RAM read zero-copy on CUDA) and ``sorted_reads`` off/on, the median seconds
of ``repeats`` calls after one warm-up are reported as positions per second and bytes of ``indices``
per second; every layout's first result is checked against ``indices[positions]``.

Without CUDA the CPU path runs the same plans (every tier in RAM), which measures the bookkeeping,
not PCIe.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import torch

from graphtier.bench.gather import median_seconds
from graphtier.memory.topology.topology import make_topology

LAYOUTS = ("100%", "25%", "0")


def random_csc(num_nodes: int, avg_degree: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(indptr int64 [N + 1], indices int32 [E]) with degrees uniform in [0, 2 * avg_degree]."""
    rng = np.random.default_rng(seed)
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(rng.integers(0, 2 * avg_degree + 1, num_nodes), out=indptr[1:])
    indices = rng.integers(0, num_nodes, int(indptr[-1]), dtype=np.int32)
    return indptr, indices


def sampler_positions(indptr: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
    """``count`` int64 positions into indices: a random position in the list of a random non-empty destination."""
    device = indptr.device
    degrees = indptr[1:] - indptr[:-1]
    nonempty = torch.nonzero(degrees).flatten()
    pick = torch.randint(0, nonempty.shape[0], (count,), generator=generator, device="cpu").to(device)
    destinations = nonempty[pick]
    offsets = torch.rand(count, generator=generator, device="cpu").to(device, torch.float64)
    return indptr[destinations] + (offsets * degrees[destinations].to(torch.float64)).to(torch.int64)


def run_topology_benchmark(
    *,
    num_nodes: int,
    avg_degree: int,
    positions: int,
    repeats: int,
    device: torch.device,
    layouts: Sequence[str] = LAYOUTS,
    seed: int = 0,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Time ``gather_positions`` for each layout x sorted_reads; returns {"config", "results": [row dicts]}."""
    indptr, indices = random_csc(num_nodes, avg_degree, seed)
    log(f"graph: {num_nodes:,} nodes, {indices.shape[0]:,} edges ({indices.nbytes / 2**20:.0f} MiB of indices)")
    synchronize = (lambda: torch.cuda.synchronize(device)) if device.type == "cuda" else None
    results: list[dict[str, Any]] = []
    for layout in layouts:
        for sorted_reads in (False, True):
            with make_topology(
                indptr, indices, device=device, topology_budget=layout, sorted_reads=sorted_reads, log=lambda _: None
            ) as topology:
                generator = torch.Generator().manual_seed(seed + 1)
                batch = sampler_positions(topology.indptr, positions, generator)
                first = topology.gather_positions(batch)
                correct = bool(np.array_equal(first.cpu().numpy(), indices[batch.cpu().numpy()].astype(np.int64)))
                seconds = median_seconds(partial(topology.gather_positions, batch), repeats, synchronize)
                traffic = topology.traffic()
            row = {
                "topology_budget": layout,
                "sorted_reads": sorted_reads,
                "seconds": seconds,
                "positions_per_s": positions / seconds,
                "gb_per_s": positions * indices.itemsize / seconds / 1e9,
                "share_gpu": traffic["gpu"] / max(traffic["requested"], 1),
                "share_host": traffic["host"] / max(traffic["requested"], 1),
                "correct": correct,
            }
            results.append(row)
            log(format_row(row))
    config = {
        "num_nodes": num_nodes,
        "num_edges": int(indices.shape[0]),
        "positions": positions,
        "repeats": repeats,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__,
    }
    return {"config": config, "results": results}


def format_row(row: dict[str, Any]) -> str:
    """One table line of a result row."""
    return (
        f"{row['topology_budget']:>6} on device  sorted={'yes' if row['sorted_reads'] else 'no ':3}  "
        f"{row['seconds'] * 1e3:9.3f} ms  {row['positions_per_s'] / 1e6:9.1f} M pos/s  {row['gb_per_s']:7.2f} GB/s  "
        f"gpu {100 * row['share_gpu']:5.1f}% host {100 * row['share_host']:5.1f}%  {'ok' if row['correct'] else 'WRONG'}"
    )


def format_topology_table(report: dict[str, Any]) -> str:
    """The result rows, one line each, with a header naming the graph and the device."""
    config = report["config"]
    header = (
        f"topology reads: {config['num_edges']:,} edges, {config['positions']:,} positions per call, "
        f"median of {config['repeats']} on {config['device']}"
    )
    return "\n".join([header] + [format_row(row) for row in report["results"]])
