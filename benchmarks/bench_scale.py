"""The user's whole path on one graph larger than this machine's RAM, stage by stage (issue 27 item 1).

``generate`` -> ``reorder`` (fwr) -> ``plan`` -> ``train`` (one GraphSAGE epoch at 15,10,5 on the 1% training
split) -> ``predict`` (exact layer-wise inference of every node), each under ``benchmarks/stage_memory.py``:
wall time, peak anonymous memory (RssAnon: what must fit in RAM), peak page-cache pages of memory maps
(RssFile), bytes read and written, and disk use. The generated dataset is deleted once the reordered copy is
complete (both at once would need twice the disk), and the run stops before a stage whose output would not fit
on the disk. The limits the stages compare with are measured first, in the same run: sequential disk write
and read bandwidth (``dd`` with direct I/O) and memory copy bandwidth.

    python benchmarks/bench_scale.py --work /data/scale --nodes 40M --avg-degree 25 --feature-dim 160 \\
        --hidden 64 --json benchmarks/results/scale_1b.json

At 40M nodes / 25 drawn in-edges / 160 float32 features (about 1 billion stored edges, 25.6 GB of features,
more than this 24 GiB machine's RAM) the dataset is about 30 GB on disk, and predict's two layers of scratch
outputs 2 x N x H x 4 bytes (20.5 GB at ``--hidden 64``). Prints a markdown table; the JSON has every record.
"""

from __future__ import annotations

import argparse
import json
import mmap
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from graphtier.cli.generate import COUNT  # the parser of `generate --nodes` (1M, 40M, 2_000_000)

ROOT = Path(__file__).resolve().parent.parent
GB = 1e9
STAGES = ("generate", "reorder", "plan", "train", "predict")


def disk_bandwidth(folder: Path, gigabytes: float) -> dict[str, float]:
    """Sequential write and read GB/s of a ``gigabytes`` file in ``folder`` with direct I/O (``dd``, 4 MiB blocks),
    then random 4 KiB reads per second of that file at 1 and 16 threads (what a row gather from disk can reach)."""
    path = folder / "dd.bin"
    count = max(1, int(gigabytes * GB / (4 << 20)))
    result: dict[str, float] = {}
    try:
        for name, args in (
            ("write", ["if=/dev/zero", f"of={path}", "oflag=direct", "conv=fsync"]),
            ("read", [f"if={path}", "of=/dev/null", "iflag=direct"]),
        ):
            started = time.perf_counter()
            subprocess.run(["dd", *args, "bs=4M", f"count={count}", "status=none"], check=True)
            result[f"disk_{name}_gb_per_s"] = count * (4 << 20) / (time.perf_counter() - started) / GB
        for threads in (1, 16):
            result[f"disk_random_4k_reads_per_s_{threads}_threads"] = random_reads_per_second(path, threads)
    finally:
        path.unlink(missing_ok=True)
    return result


def random_reads_per_second(path: Path, threads: int, reads_per_thread: int = 2000) -> float:
    """Random 4 KiB reads per second of ``path`` with direct I/O (no page cache), from ``threads`` threads."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    try:
        pages = os.fstat(fd).st_size // 4096

        def work(seed: int) -> None:
            buffer = mmap.mmap(-1, 4096)  # page-aligned, as direct I/O needs
            for page in np.random.default_rng(seed).integers(0, pages, reads_per_thread):
                os.preadv(fd, [buffer], int(page) * 4096)

        workers = [threading.Thread(target=work, args=(seed,)) for seed in range(threads)]
        started = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        return threads * reads_per_thread / (time.perf_counter() - started)
    finally:
        os.close(fd)


def memory_bandwidth(gigabytes: float = 1.0) -> dict[str, float]:
    """Copy GB/s of a ``gigabytes`` float32 array (best of 3; one thread): the RAM bandwidth a stage can reach."""
    source = np.ones(int(gigabytes * GB / 4), dtype=np.float32)
    target = np.empty_like(source)
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - started)
    return {"memory_copy_gb_per_s": source.nbytes / best / GB}


def _stage(label: str, command: list[str], records: Path, du: list[Path]) -> dict[str, Any]:
    wrapper = [sys.executable, str(ROOT / "benchmarks" / "stage_memory.py"), "--label", label, "--json", str(records)]
    for path in du:
        wrapper += ["--du", str(path)]
    done = subprocess.run([*wrapper, "--", *command], cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"bench_scale: stage {label} failed with exit status {done.returncode}")
    return json.loads(records.read_text())[-1]


def _need_disk(folder: Path, nbytes: float, what: str) -> None:
    free = shutil.disk_usage(folder).free
    if free < nbytes:
        raise SystemExit(
            f"bench_scale: {what} needs about {nbytes / GB:.1f} GB on {folder}, found {free / GB:.1f} GB free"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, required=True, help="folder for the datasets (emptied stage by stage)")
    parser.add_argument("--nodes", default="40M")
    parser.add_argument("--avg-degree", type=float, default=25.0)
    parser.add_argument("--feature-dim", type=int, default=160)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--fanouts", default="15,10,5")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--hetero", choices=["mag"], default=None,
        help="a typed MAG-like graph instead (generate --hetero mag: --nodes papers, as many authors, institutions, "
             "fields; about 38 stored edges per paper with the reverse relations); trains --model (default rgcn)",
    )  # fmt: skip
    parser.add_argument("--model", default=None, help="the model trained (default sage; rgcn with --hetero)")
    parser.add_argument("--feature-dtype", choices=["float32", "float16"], default="float32")
    parser.add_argument(
        "--tables-on",
        choices=["ram", "disk"],
        default="ram",
        help="train --tables-on: where the learnable tables of featureless types live (--hetero)",
    )
    parser.add_argument("--dd-gb", type=float, default=4.0, help="size of the dd test file")
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "scale.json")
    parser.add_argument(
        "--stages", default=",".join(STAGES),
        help=f"the stages to run, in order (default all: {','.join(STAGES)}); a later stage resumes a run in --work "
             "whose earlier stages are recorded in its stages.json",
    )  # fmt: skip
    args = parser.parse_args()
    selected = args.stages.split(",")
    unknown = [name for name in selected if name not in STAGES]
    if unknown:
        parser.error(f"--stages: expected names among {','.join(STAGES)}, found {','.join(unknown)}")
    nodes = COUNT.convert(args.nodes, None, None)
    work = args.work
    work.mkdir(parents=True, exist_ok=True)
    records = work / "stages.json"
    if selected[0] == STAGES[0]:
        records.unlink(missing_ok=True)
    elif not records.exists():
        parser.error(f"--stages {args.stages}: {records} holds no earlier stages to resume from")
    generated, reordered, model = work / "generated", work / "reordered", work / "model.pt"
    feature_bytes = nodes * args.feature_dim * (2 if args.feature_dtype == "float16" else 4)
    # --hetero mag: 19 drawn edges per paper, twice with the reverse relations; about 2.03 nodes per paper
    edge_bytes = nodes * (38 if args.hetero else args.avg_degree) * 4  # int32 indices of a graph under 2^31 nodes
    all_nodes = int(nodes * 2.03) if args.hetero else nodes
    dataset_bytes = feature_bytes + edge_bytes + all_nodes * 8
    model_name = args.model or ("rgcn" if args.hetero else "sage")
    shape = ["--hetero", args.hetero] if args.hetero else ["--avg-degree", str(args.avg_degree), "--directed"]

    limits_file = work / "limits.json"
    if selected[0] == STAGES[0] or not limits_file.exists():
        limits = {**disk_bandwidth(work, args.dd_gb), **memory_bandwidth()}
        limits_file.write_text(json.dumps(limits))
    limits = json.loads(limits_file.read_text())
    print(
        f"limits: disk write {limits['disk_write_gb_per_s']:.2f} GB/s, read {limits['disk_read_gb_per_s']:.2f} GB/s "
        f"(dd, direct I/O); random 4 KiB reads {limits['disk_random_4k_reads_per_s_1_threads']:,.0f}/s on 1 thread, "
        f"{limits['disk_random_4k_reads_per_s_16_threads']:,.0f}/s on 16; memory copy "
        f"{limits['memory_copy_gb_per_s']:.1f} GB/s (one thread)"
    )
    graphtier = [sys.executable, "-m", "graphtier"]
    for name in selected:
        if name == "generate":
            _need_disk(work, dataset_bytes * 1.05, "generate")
            _stage(
                "generate",
                [*graphtier, "generate", str(generated), "--nodes", str(nodes), *shape,
                 "--feature-dim", str(args.feature_dim), "--feature-dtype", args.feature_dtype, "--seed",
                 str(args.seed), "--train-fraction", "0.01"],
                records, [generated],
            )  # fmt: skip
        elif name == "reorder":
            _need_disk(work, dataset_bytes * 1.05, "reorder (a second copy of the dataset)")
            _stage(
                "reorder fwr",
                [*graphtier, "reorder", str(generated), str(reordered), "--score", "fwr", "--fanouts", args.fanouts],
                records, [reordered],
            )  # fmt: skip
            shutil.rmtree(generated)  # the reordered copy is complete: the generated one is no longer needed
        elif name == "plan":
            _stage("plan", [*graphtier, "plan", str(reordered), "--fanouts", args.fanouts, "--gpu-memory", "80GiB"],
                   records, [])  # fmt: skip
        elif name == "train":
            _stage(
                "train (1 epoch)",
                [*graphtier, "train", str(reordered), "--model", model_name, "--fanouts", args.fanouts, "--epochs", "1",
                 "--hidden", str(args.hidden), "--save-model", str(model),
                 *(["--tables-on", "disk", "--scratch-dir", str(work)] if args.tables_on == "disk" else [])],
                records, [],
            )  # fmt: skip
        else:
            _need_disk(work, 2 * all_nodes * args.hidden * 4 * 1.05 + all_nodes * 8,
                       "predict's layer outputs (scratch maps)")  # fmt: skip
            _stage(
                "predict (layer-wise)",
                [*graphtier, "predict", str(reordered), "--model", str(model), "--output", str(work / "classes.npy")],
                records, [work / "classes.npy"],
            )  # fmt: skip
        _save(args, nodes, limits, json.loads(records.read_text()))
    print(f"saved {args.json}")


def _save(args: argparse.Namespace, nodes: int, limits: dict[str, float], stages: list[dict[str, Any]]) -> None:
    """Write the run so far (``--json``): the options, the limits and every stage recorded."""
    result = {"nodes": nodes, "avg_degree": args.avg_degree, "feature_dim": args.feature_dim, "hidden": args.hidden,
              "fanouts": args.fanouts, "hetero": args.hetero, "model": args.model, "feature_dtype": args.feature_dtype, "tables_on": args.tables_on,
              "limits": limits, "stages": stages}  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
