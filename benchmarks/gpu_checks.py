"""Every GPU check and GPU benchmark of graphtier, in one run, summarised in one table.

1. ``pytest -m gpu tests`` (all GPU-only tests of the project), in a subprocess;
2. correctness of every feature mode on CUDA against plain indexing (float32/float16, a memory-mapped
   table with a disk tier, the row cache, peer partitions when there are >= 2 GPUs), traffic sums;
3. the gather benchmark on the GPU (zero-copy naive vs aligned, tiered, cpu-gather + copy baseline);
4. seed 003's microbenchmark: random row reads for rows of 256 B to 16 KB with cpu-gather + copy and
   zero-copy, against the ideal (bytes / host-to-device bandwidth of one large pinned copy);
5. seed 003 Fig. 7: naive vs 128-B aligned zero-copy reads for rows of 2,048 to 2,076 bytes in 4-byte steps;
6. the tiered gather on the sampler's power-law access trace of a generated, wrpr-reordered graph with
   0/5/10/25% of the rows on the GPU: time and host bytes against zero-copy;
7. issue 6's hybrid benchmark: ``--devices cuda:0`` against ``--devices cpu,cuda:0``;
8. issue 12: the GPU sampler against the CPU sampler on a generated, reordered 2M-node graph at topology
   budgets 0%, 10% and 100% (and sorted reads at 0%), checking that both give identical batches;
9. issue 12: the tiered topology's neighbour reads (all of ``indices`` on the device, 25 %, all zero-copy),
   with and without ``sorted_reads`` (does sorting the positions before the zero-copy reads pay?);
10. issue 12's device sampler (Triton picks) against ``NeighborSampler`` on cnr-2000: identical batches, ms per batch;
11. issue 12: one training epoch on a generated 10M-node graph with the whole data path on the GPU
   (``--sample-on gpu --features-on tiered``) against ``--sample-on cpu --features-on cpu-gather``:
   sample / extract / train seconds as seed 000 Fig. 8 and seed 004 Table 4 report them.

Each call should stay under 8 minutes on a lent GPU: ``--steps`` runs a subset (names below), e.g.
``--steps pytest,modes,sampler`` then ``--steps epoch``.

Without CUDA it prints a skip message and exits 0. Writes benchmarks/results/gpu_checks.json.

    flock /tmp/graphtier-bigjob.lock python benchmarks/gpu_checks.py
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results" / "gpu_checks.json"


def check_pytest_gpu() -> tuple[str, str]:
    """Run the project's GPU-marked tests; (status, summary line)."""
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    summary = lines[-1] if lines else proc.stderr.strip()[-200:]
    status = "pass" if proc.returncode == 0 else ("none" if proc.returncode == 5 else "FAIL")
    if status == "FAIL":
        print(proc.stdout[-4000:])
    return status, f"{summary} ({time.perf_counter() - started:.0f} s)"


def check_modes(device: torch.device) -> list[tuple[str, str, str]]:
    """Every feature mode on CUDA equals plain indexing and its traffic adds up."""
    from graphtier.store import FEATURE_MODES, TIER_NAMES, make_feature_store

    rows: list[tuple[str, str, str]] = []
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in (np.float32, np.float16):
            for dim in (33, 128):
                table = rng.normal(size=(20_000, dim)).astype(dtype)
                path = Path(tmp) / f"t-{dim}-{np.dtype(dtype).name}.npy"
                np.save(path, table)
                mapped = np.load(path, mmap_mode="r")
                cases: list[tuple[str, np.ndarray, dict[str, Any]]] = [(m, table, {}) for m in FEATURE_MODES]
                cases.append(("tiered", mapped, {"gpu_budget": "10%", "ram_budget": "50%"}))
                cases.append(("tiered+cache", mapped, {"gpu_budget": "5%", "cache_budget": "5%", "ram_budget": "30%"}))
                if torch.cuda.device_count() >= 2:
                    cases.append(("tiered", mapped, {"gpu_budget": "10%", "peer_partitions": 2, "ram_budget": "50%"}))
                for mode, source, options in cases:
                    if mode.startswith("tiered") and not options:
                        options = {"gpu_budget": "20%"} if mode == "tiered" else {"gpu_budget": "10%", "cache_budget": "10%"}
                    name = f"{mode} {np.dtype(dtype).name} D={dim} {'mmap' if source is mapped else 'ram'} {options}"
                    try:
                        store = make_feature_store(source, mode, device=device, log=lambda _: None, **options)
                        ok = True
                        for step in range(6):
                            ids = torch.from_numpy(rng.integers(0, table.shape[0], 5000 + step))
                            got = store.gather(ids)
                            ok &= bool(np.array_equal(got.cpu().numpy(), table[ids.numpy()]))
                        traffic = store.traffic()
                        ok &= traffic["requested"] == sum(traffic[t] for t in TIER_NAMES)
                        hit = getattr(store, "cache_hit_ratio", None)
                        detail = f"on {store.output_device}" + (f", cache hit ratio {hit:.3f}" if hit is not None else "")
                        store.close()
                        rows.append((name, "pass" if ok else "FAIL", detail))
                    except Exception as exc:  # report and go on: this is a checklist
                        rows.append((name, "FAIL", f"{type(exc).__name__}: {exc}"[:160]))
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-pytest", action="store_true")
    parser.add_argument("--table-mib", type=int, default=1024)
    parser.add_argument("--output", default=str(RESULTS))
    parser.add_argument("--steps", default="all",
                        help="comma-separated subset of: pytest, modes, gather, rows, alignment, trace, hybrid, topology, cnr, sampler, epoch")
    parser.add_argument("--epoch-nodes", default="10M", help="nodes of the generated graph of the end-to-end epoch")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("gpu_checks: SKIPPED, no CUDA device on this machine (torch %s); nothing was measured on a GPU" % torch.__version__)
        return 0
    device = torch.device("cuda", torch.cuda.current_device())
    table: list[tuple[str, str, str]] = []
    steps: list[tuple[str, str, Callable[[], Any]]] = []
    if not args.skip_pytest:
        steps.append(("pytest", "pytest -m gpu", lambda: table.append(("pytest -m gpu tests", *check_pytest_gpu()))))
    steps.append(("modes", "feature modes", lambda: table.extend(check_modes(device))))
    report: dict[str, Any] = {}

    def bench() -> None:
        from graphtier.bench.gather import run_gather_benchmark

        result = run_gather_benchmark(
            row_bytes=[128, 512, 2052, 4096], table_bytes=args.table_mib * 2**20, batch_rows=65536,
            threads=[torch.get_num_threads()], repeats=7, device=device,
        )  # fmt: skip
        report["gather"] = result
        for row in result["results"]:
            if row["threads"] is None:
                table.append(
                    (f"gather {row['method']} {row['row_bytes']} B", "measured",
                     f"{row['gb_per_s']:.2f} GB/s, {row['vs_baseline']:.2f}x cpu-gather+h2d"),
                )  # fmt: skip

    steps.append(("gather", "gather benchmark", bench))

    def ideal_bandwidth() -> float:
        """Host-to-device GB/s of one large pinned copy (the PCIe ideal)."""
        size = 1 << 30
        host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
        dev = torch.empty(size, dtype=torch.uint8, device=device)
        dev.copy_(host, non_blocking=True)
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        for _ in range(5):
            dev.copy_(host, non_blocking=True)
        torch.cuda.synchronize(device)
        return 5 * size / (time.perf_counter() - start) / 1e9

    def row_sizes() -> None:
        from graphtier.bench.gather import run_gather_benchmark

        ideal = ideal_bandwidth()
        report["h2d_gb_per_s"] = ideal
        table.append(("pinned host-to-device copy (ideal)", "measured", f"{ideal:.2f} GB/s"))
        report["row_sizes"] = []
        for size in (256, 1024, 4096, 16384):
            reads = min(4_000_000, (2 << 30) // size)  # 4M reads, at most 2 GiB per batch
            result = run_gather_benchmark(
                row_bytes=[size], table_bytes=max(args.table_mib * 2**20, 2 * reads * size), batch_rows=reads,
                threads=[torch.get_num_threads()], repeats=3, device=device,
            )  # fmt: skip
            report["row_sizes"].append(result)
            for row in result["results"]:
                if row["threads"] is None and row["method"] in ("cpu-gather+h2d", "zero-copy-naive", "zero-copy-aligned"):
                    table.append(
                        (f"{reads:,} reads of {size} B: {row['method']}", "measured",
                         f"{row['gb_per_s']:.2f} GB/s = {row['gb_per_s'] / ideal:.2f} of ideal"),
                    )  # fmt: skip

    def alignment() -> None:
        from graphtier.bench.gather import run_gather_benchmark

        result = run_gather_benchmark(
            row_bytes=list(range(2048, 2080, 4)), table_bytes=args.table_mib * 2**20, batch_rows=262144,
            threads=[torch.get_num_threads()], repeats=5, device=device,
        )  # fmt: skip
        report["alignment"] = result
        by_size: dict[int, dict[str, float]] = {}
        for row in result["results"]:
            if row["threads"] is None:
                by_size.setdefault(row["row_bytes"], {})[row["method"]] = row["gb_per_s"]
        for size, methods in sorted(by_size.items()):
            table.append(
                (f"row {size} B: aligned vs naive zero-copy", "measured",
                 f"{methods['zero-copy-aligned']:.2f} vs {methods['zero-copy-naive']:.2f} GB/s "
                 f"({methods['zero-copy-aligned'] / methods['zero-copy-naive']:.2f}x)"),
            )  # fmt: skip

    def tiered_trace() -> None:
        from graphtier.bench.gather_dataset import run_dataset_gather
        from graphtier.dataset.synthetic import generate
        from graphtier.graph.reorder import reorder_dataset
        from graphtier.tiering.hotness import compute_scores

        with tempfile.TemporaryDirectory() as tmp:
            source = generate(Path(tmp) / "g", nodes=2_000_000, avg_degree=20, feature_dim=256, seed=0)
            scores = compute_scores(source, "wrpr")
            reordered, _ = reorder_dataset(source, Path(tmp) / "g-wrpr", scores.scores, score_label="wrpr")
            common = dict(ids_from="sampler", device=device, fanouts=(15, 10, 5), batch_size=1024, batches=50)
            zero = run_dataset_gather(reordered, features_on="zero-copy", **common)
            report["tiered_trace"] = {"zero-copy": zero}
            table.append(("trace: zero-copy", "measured", f"{zero['seconds']:.3f} s, host {zero['bytes_by_tier']['host']:,} B"))
            for hot in ("0%", "5%", "10%", "25%"):
                run = run_dataset_gather(reordered, features_on="tiered", gpu_budget=hot, **common)
                report["tiered_trace"][hot] = run
                cut = 1 - run["bytes_by_tier"]["host"] / max(zero["bytes_by_tier"]["host"], 1)
                table.append(
                    (f"trace: tiered {hot} hot", "measured",
                     f"{run['seconds']:.3f} s ({zero['seconds'] / run['seconds']:.2f}x zero-copy), host bytes -{100 * cut:.1f}%"),
                )  # fmt: skip

    def hybrid() -> None:
        proc = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / "bench_hybrid.py")], cwd=ROOT, capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "bench_hybrid failed")
        for line in proc.stdout.splitlines():
            if "speedup" in line:
                table.append(("hybrid " + " ".join(line.split()[:2]), "measured", " ".join(line.split()[2:])))

    def gpu_sampler() -> None:
        from graphtier.bench.sample import run_sample_benchmark
        from graphtier.dataset.synthetic import generate
        from graphtier.graph.reorder import reorder_dataset
        from graphtier.tiering.hotness import compute_scores

        with tempfile.TemporaryDirectory() as tmp:
            source = generate(Path(tmp) / "g", nodes=2_000_000, avg_degree=20, feature_dim=0, seed=0)
            scores = compute_scores(source, "fwr", fanouts=[15, 10, 5])
            reordered, _ = reorder_dataset(source, Path(tmp) / "g-fwr", scores.scores, score_label="fwr")
            for sorted_reads, budgets in ((False, ("0", "10%", "100%")), (True, ("0",))):
                result = run_sample_benchmark(
                    reordered, [15, 10, 5], batch_size=1024, batches=50, device=str(device),
                    topology_budgets=budgets, sorted_reads=sorted_reads,
                )  # fmt: skip
                report.setdefault("gpu_sampler", []).append(result)
                for run in result["device_samplers"]:
                    tiers = run["topology_bytes_by_tier"]
                    table.append(
                        (f"GPU sampler, topology {run['topology_budget']} on GPU{', sorted reads' if sorted_reads else ''}",
                         "measured" if run["identical_to_cpu"] else "FAIL",
                         f"{run['batches_per_s']:.1f} batch/s = {run['speedup_vs_cpu']:.2f}x CPU sampler "
                         f"({result['threads']} threads, {result['batches_per_s']:.1f} batch/s); "
                         f"gpu {tiers['gpu'] / 1e6:.1f} MB, host {tiers['host'] / 1e6:.1f} MB; "
                         f"identical batches: {run['identical_to_cpu']}"),
                    )  # fmt: skip

    def epoch() -> None:
        from graphtier.dataset.synthetic import generate
        from graphtier.graph.reorder import reorder_dataset
        from graphtier.tiering.hotness import compute_scores
        from graphtier.train import train

        nodes = int(float(args.epoch_nodes.rstrip("Mk")) * (10**6 if args.epoch_nodes.endswith("M") else 10**3))
        with tempfile.TemporaryDirectory() as tmp:
            source = generate(Path(tmp) / "g", nodes=nodes, avg_degree=20, feature_dim=128, seed=0)
            scores = compute_scores(source, "fwr", fanouts=[15, 10, 5])
            reordered, _ = reorder_dataset(source, Path(tmp) / "g-fwr", scores.scores, score_label="fwr")
            del source
            configs = {
                "cpu sampling + cpu-gather": dict(sample_on="cpu", features_on="cpu-gather"),
                "gpu sampling + tiered": dict(sample_on="gpu", features_on="tiered"),
            }
            report["epoch"] = {}
            for name, options in configs.items():
                result = train(reordered, model="sage", fanouts=(15, 10, 5), batch_size=1024, epochs=1,
                               device=str(device), quiet=True, **options)
                record = result.report["epochs"][0]
                report["epoch"][name] = record
                stages = record["stage_seconds"]
                table.append(
                    (f"epoch {args.epoch_nodes} nodes: {name}", "measured",
                     f"{stages['total']:.1f} s (sample {stages['sample']:.1f}, extract {stages['extract']:.1f}, "
                     f"train {stages['train']:.1f}, wait {stages['wait']:.1f}); valid {record['valid_acc']:.3f}; "
                     f"topology gpu/host {record['topology_bytes_by_tier']['gpu'] / 1e9:.2f}/"
                     f"{record['topology_bytes_by_tier']['host'] / 1e9:.2f} GB"),
                )  # fmt: skip

    def topology() -> None:
        from graphtier.bench.topology import run_topology_benchmark

        result = run_topology_benchmark(
            num_nodes=20_000_000, avg_degree=15, positions=4_000_000, repeats=7, device=device, log=lambda _: None
        )
        report["topology"] = result
        for row in result["results"]:
            table.append(
                (f"topology reads: {row['topology_budget']} on device, sorted {'yes' if row['sorted_reads'] else 'no'}",
                 "measured" if row["correct"] else "FAIL",
                 f"{row['positions_per_s'] / 1e6:.0f} M positions/s, {row['gb_per_s']:.2f} GB/s of indices"),
            )  # fmt: skip

    def device_sampler() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "device_sample.json"
            command = [sys.executable, str(ROOT / "benchmarks" / "bench_device_sample.py"), "--devices", "cuda", "--out", str(out)]
            proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
            if not out.exists():
                raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "bench_device_sample failed")
            result = json.loads(out.read_text())
        report["device_sampler"] = result
        for row in result["rows"]:
            status = "measured" if row["identical"] else "FAIL"
            table.append(
                (f"sampler {row['fanouts']} {row['sampler']} {row['device']}", status,
                 f"{row['ms_per_batch']:.2f} ms/batch, identical to NeighborSampler: {row['identical']}"),
            )  # fmt: skip

    steps.append(("rows", "row-size sweep (seed 003)", row_sizes))
    steps.append(("alignment", "alignment sweep (seed 003 Fig. 7)", alignment))
    steps.append(("trace", "tiered power-law trace", tiered_trace))
    steps.append(("hybrid", "hybrid CPU+GPU training", hybrid))
    steps.append(("topology", "tiered topology reads (issue 12)", topology))
    steps.append(("cnr", "device sampler vs NeighborSampler on cnr-2000 (issue 12)", device_sampler))
    steps.append(("sampler", "GPU sampler vs CPU sampler (issue 12)", gpu_sampler))
    steps.append(("epoch", "end-to-end epoch, whole data path on the GPU (issue 12)", epoch))
    wanted = None if args.steps == "all" else {name.strip() for name in args.steps.split(",")}
    unknown = (wanted or set()) - {key for key, _, _ in steps}
    if unknown:
        print(f"gpu_checks: unknown --steps {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    for key, label, action in steps:
        if wanted is not None and key not in wanted:
            continue
        print(f"running {label} ...", flush=True)
        try:
            action()
        except Exception as exc:  # a crashing step is a failed check, the others still run
            table.append((label, "FAIL", f"{type(exc).__name__}: {exc}"[:160]))
    width = max(len(name) for name, _, _ in table)
    print(f"\n{'check':<{width}}  {'status':<8}  detail")
    for name, status, detail in table:
        print(f"{name:<{width}}  {status:<8}  {detail}")
    report.update(
        {
            "date": datetime.date.today().isoformat(),
            "device": torch.cuda.get_device_name(device),
            "torch": torch.__version__,
            "checks": [{"check": n, "status": s, "detail": d} for n, s, d in table],
        }
    )
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"saved {output}")
    return 1 if any(status == "FAIL" for _, status, _ in table) else 0


if __name__ == "__main__":
    sys.exit(main())
