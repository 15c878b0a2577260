"""Bytes a learnable table on disk writes per Adam step, for three layouts of its rows and Adam moments:

* ``one file, random advice`` (today): a row beside its moments in one scratch file, advised ``random``;
* ``three files, random advice``: the rows and each moment in a file of its own, advised;
* ``three files, read-ahead`` (the code before): three files, no advice, the rows filled in order.

A table on disk (``train --tables-on disk``) is a memory map: an Adam step on a row dirties what holds the row and
its two moments, and the kernel writes it back once the page cache turns over (on a graph whose tables outgrow RAM,
between two touches of a row). ``/proc/self/io`` ``write_bytes`` counts bytes as they become dirty; ``os.sync()``
after every step writes them back, as that turnover does, so the next step counts again. Pages brought in by
read-ahead are cached as large folios on recent kernels, and a changed row dirties its whole folio. Prints, per
layout, the bytes dirtied per step and per touched row, and the step time (sync included)::

    python benchmarks/bench_table_writes.py --rows 4000000 --dim 64 --batch 20000 --steps 20 --dir /work/scratch
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

import graphtier.train.nn.table_storage as table_storage
import graphtier.train.nn.tiered_embedding as tiered
from graphtier.dataset.advice import advise_access
from graphtier.train.nn.table_storage import FIELDS, interleaved_state, tier_tensors
from graphtier.train.nn.tiered_embedding import TieredEmbedding, attach_sparse_adam


def three_files(weight: torch.Tensor, directory: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """The layout before: the rows where they are, each moment and the steps in a file of its own."""
    return {"weight": weight, **tier_tensors(int(weight.shape[0]), int(weight.shape[1]), weight.device, directory,
                                             FIELDS[1:])}  # fmt: skip


def written() -> int:
    return int(next(line.split()[1] for line in Path("/proc/self/io").read_text().splitlines()
                    if line.startswith("write_bytes")))  # fmt: skip


LAYOUTS = ("one file, random advice", "three files, random advice", "three files, read-ahead")


def measure(layout: str, args: argparse.Namespace, directory: str) -> dict[str, float]:
    tiered.interleaved_state = interleaved_state if layout.startswith("one file") else three_files  # type: ignore[assignment]
    table_storage.advise_access = advise_access if layout.endswith("advice") else lambda array, pattern: False
    torch.manual_seed(0)
    table = TieredEmbedding(args.rows, args.dim)
    table.place(0, directory)
    dense = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=0.01)
    attach_sparse_adam(dense, torch.nn.ModuleDict({"t": table}))
    rng = np.random.default_rng(0)

    def step() -> None:
        ids = torch.from_numpy(rng.choice(args.rows, args.batch, replace=False))
        dense.zero_grad()
        table(ids).pow(2).sum().backward()
        dense.step()

    step()  # makes the optimizer state
    os.sync()
    before, started = written(), time.perf_counter()
    for _ in range(args.steps):
        step()
        os.sync()
    seconds = time.perf_counter() - started
    per_step = (written() - before) / args.steps
    return {
        "bytes_per_step": per_step,
        "bytes_per_row": per_step / args.batch,
        "seconds_per_step": seconds / args.steps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--batch", type=int, default=20_000, help="distinct rows touched per step")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--dir", default=None, help="scratch directory (default: the system's temporary one)")
    parser.add_argument("--layout", choices=LAYOUTS, default=None, help="one layout only")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    results = {}
    for layout in [args.layout] if args.layout else LAYOUTS:
        with tempfile.TemporaryDirectory(dir=args.dir) as directory:
            results[layout] = measure(layout, args, directory)
        row = results[layout]
        print(f"{layout}: {row['bytes_per_step'] / 2**20:.1f} MiB dirtied per step, {row['bytes_per_row']:.0f} B per "
              f"touched row, {row['seconds_per_step']:.3f} s per step (sync included)")  # fmt: skip
    if args.json is not None:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)}, "results": results}, indent=1))


if __name__ == "__main__":
    main()
