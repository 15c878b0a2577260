"""The GPU steps of ``benchmarks/gpu_checks.py`` that existed before issue 22: GPU tests, feature modes, the
gather and row-size benchmarks (seed 003), the tiered trace, hybrid training, topology, samplers (typed too), the
epoch.

Each ``step(ctx)`` runs in its own subprocess and reports through ``ctx.check`` (pass/FAIL against a
reference), ``ctx.measured`` (a figure) and ``ctx.save`` (data kept in the JSON). Every store is closed
in a ``finally``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

if TYPE_CHECKING:
    from gpu_checks import StepContext

ROOT = Path(__file__).resolve().parents[1]
CNR_GRAPH = ROOT.parent / "shared" / "data" / "cnr-2000" / "cnr-2000.csr.npz"


def cuda() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device())


def feature_modes(ctx: StepContext) -> None:
    """Every feature mode on CUDA equals plain indexing and its traffic adds up (checks)."""
    from graphtier.memory import FEATURE_MODES, TIER_NAMES, make_feature_store

    device = cuda()
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float16):
        for dim in (33, 128):
            table = rng.normal(size=(20_000, dim)).astype(dtype)
            path = ctx.tmpdir() / f"t-{dim}-{np.dtype(dtype).name}.npy"
            np.save(path, table)
            mapped = np.load(path, mmap_mode="r")
            cases: list[tuple[str, np.ndarray, dict[str, Any]]] = [(m, table, {}) for m in FEATURE_MODES]
            cases.append(("tiered", mapped, {"gpu_budget": "10%", "ram_budget": "50%"}))
            cases.append(("tiered+cache", mapped, {"gpu_budget": "5%", "cache_budget": "5%", "ram_budget": "30%"}))
            if ctx.gpus >= 2:
                cases.append(("tiered", mapped, {"gpu_budget": "10%", "peer_partitions": 2, "ram_budget": "50%"}))
            for mode, source, options in cases:
                if mode.startswith("tiered") and not options:
                    options = (
                        {"gpu_budget": "20%"} if mode == "tiered" else {"gpu_budget": "10%", "cache_budget": "10%"}
                    )
                name = f"{mode} {np.dtype(dtype).name} D={dim} {'mmap' if source is mapped else 'ram'} {options}"
                store = None
                try:
                    store = make_feature_store(source, mode, device=device, log=lambda _: None, **options)
                    ok = True
                    for step in range(6):
                        ids = torch.from_numpy(rng.integers(0, table.shape[0], 5000 + step))
                        ok &= bool(np.array_equal(store.gather(ids).cpu().numpy(), table[ids.numpy()]))
                    traffic = store.traffic()
                    ok &= traffic["requested"] == sum(traffic[t] for t in TIER_NAMES)
                    hit = getattr(store, "cache_hit_ratio", None)
                    detail = f"on {store.output_device}" + (f", cache hit ratio {hit:.3f}" if hit is not None else "")
                    ctx.check(name, ok, detail)
                except Exception as exc:  # noqa: BLE001 - report and go on: this is a checklist
                    ctx.check(name, False, f"{type(exc).__name__}: {exc}"[:200])
                finally:
                    if store is not None:
                        store.close()


def _gather_rows(
    ctx: StepContext, result: dict[str, Any], methods: tuple[str, ...] | None, prefix: str, ideal: float | None = None
) -> None:
    for row in result["results"]:
        if row["threads"] is None and (methods is None or row["method"] in methods):
            extra = (
                f" = {row['gb_per_s'] / ideal:.2f} of ideal" if ideal else f", {row['vs_baseline']:.2f}x cpu-gather+h2d"
            )
            ctx.measured(f"{prefix}{row['method']} {row['row_bytes']} B", f"{row['gb_per_s']:.2f} GB/s{extra}")


def gather(ctx: StepContext) -> None:
    """The gather benchmark on the GPU (benchmark rows)."""
    from graphtier.bench.gather import run_gather_benchmark

    result = run_gather_benchmark(
        row_bytes=[128, 512, 2052, 4096], table_bytes=ctx.options["table_mib"] * 2**20, batch_rows=65536,
        threads=[torch.get_num_threads()], repeats=7, device=cuda(),
    )  # fmt: skip
    ctx.save("gather", result)
    _gather_rows(ctx, result, None, "gather ")


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _ideal_bandwidth(device: torch.device, size: int = 1 << 30) -> float:
    """Host-to-device GB/s of one pinned ``copy_`` of ``size`` bytes (the PCIe ideal; a plain copy on the CPU)."""
    host = torch.empty(size, dtype=torch.uint8, pin_memory=device.type == "cuda")
    dev = torch.empty(size, dtype=torch.uint8, device=device)
    dev.copy_(host, non_blocking=True)
    sync(device)
    start = time.perf_counter()
    for _ in range(5):
        dev.copy_(host, non_blocking=True)
    sync(device)
    return 5 * size / (time.perf_counter() - start) / 1e9


def row_sizes(ctx: StepContext) -> None:
    """Seed 003's microbenchmark: random reads of 256 B..16 KB rows against the pinned-copy ideal."""
    from graphtier.bench.gather import run_gather_benchmark

    device = cuda()
    ideal = _ideal_bandwidth(device)
    ctx.save("h2d_gb_per_s", ideal)
    ctx.measured("pinned host-to-device copy (ideal)", f"{ideal:.2f} GB/s")
    for size in (256, 1024, 4096, 16384):
        reads = min(4_000_000, (2 << 30) // size)  # 4M reads, at most 2 GiB per batch
        result = run_gather_benchmark(
            row_bytes=[size], table_bytes=max(ctx.options["table_mib"] * 2**20, 2 * reads * size), batch_rows=reads,
            threads=[torch.get_num_threads()], repeats=3, device=device,
        )  # fmt: skip
        ctx.save(f"row_sizes_{size}", result)
        _gather_rows(
            ctx, result, ("cpu-gather+h2d", "zero-copy-naive", "zero-copy-aligned"), f"{reads:,} reads: ", ideal
        )


def alignment(ctx: StepContext) -> None:
    """Seed 003 Fig. 7: naive vs 128-B aligned zero-copy reads for rows of 2,048..2,076 bytes."""
    from graphtier.bench.gather import run_gather_benchmark

    result = run_gather_benchmark(
        row_bytes=list(range(2048, 2080, 4)), table_bytes=ctx.options["table_mib"] * 2**20, batch_rows=262144,
        threads=[torch.get_num_threads()], repeats=5, device=cuda(),
    )  # fmt: skip
    ctx.save("alignment", result)
    by_size: dict[int, dict[str, float]] = {}
    for row in result["results"]:
        if row["threads"] is None:
            by_size.setdefault(row["row_bytes"], {})[row["method"]] = row["gb_per_s"]
    for size, methods in sorted(by_size.items()):
        aligned, naive = methods["zero-copy-aligned"], methods["zero-copy-naive"]
        ctx.measured(
            f"row {size} B: aligned vs naive zero-copy", f"{aligned:.2f} vs {naive:.2f} GB/s ({aligned / naive:.2f}x)"
        )


def reordered_graph(ctx: StepContext, nodes: int, feature_dim: int, score: str) -> Any:
    """A generated power-law graph reordered by ``score`` (wrpr or fwr), in the step's scratch directory."""
    from graphtier.dataset.synthetic.generate import generate
    from graphtier.graph.reorder import reorder_dataset
    from graphtier.tiering.hotness import compute_scores
    from graphtier.tiering.replay import Replay

    source = generate(ctx.tmpdir() / f"g{nodes}", nodes=nodes, avg_degree=20, feature_dim=feature_dim, seed=0)
    scores = compute_scores(source, score, replay=Replay(fanouts=[15, 10, 5]))
    reordered, _ = reorder_dataset(source, ctx.tmpdir() / f"g{nodes}-{score}", scores.scores, score_label=score)
    return reordered


def tiered_trace(ctx: StepContext) -> None:
    """The tiered gather on the sampler's trace with 0/5/10/25% of the rows on the GPU, against zero-copy."""
    from graphtier.bench.gather_dataset import run_dataset_gather

    reordered = reordered_graph(ctx, 2_000_000, 256, "wrpr")
    common: dict[str, Any] = {
        "ids_from": "sampler",
        "device": cuda(),
        "fanouts": (15, 10, 5),
        "batch_size": 1024,
        "batches": 50,
    }
    zero = run_dataset_gather(reordered, features_on="zero-copy", **common)
    ctx.save("zero-copy", zero)
    ctx.measured("trace: zero-copy", f"{zero['seconds']:.3f} s, host {zero['bytes_by_tier']['host']:,} B")
    for hot in ("0%", "5%", "10%", "25%"):
        run = run_dataset_gather(reordered, features_on="tiered", gpu_budget=hot, **common)
        ctx.save(f"tiered {hot}", run)
        cut = 1 - run["bytes_by_tier"]["host"] / max(zero["bytes_by_tier"]["host"], 1)
        ctx.measured(f"trace: tiered {hot} hot", f"{run['seconds']:.3f} s ({zero['seconds'] / run['seconds']:.2f}x "
                     f"zero-copy), host bytes -{100 * cut:.1f}%")  # fmt: skip


def hybrid(ctx: StepContext) -> None:
    """Issue 6: ``--devices cuda:0`` against ``--devices cpu,cuda:0`` (bench_hybrid.py)."""
    out = ctx.tmpdir() / "hybrid.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_hybrid.py"), "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "bench_hybrid failed")
    if out.exists():
        ctx.save("hybrid", json.loads(out.read_text()))
    for line in proc.stdout.splitlines():
        if "speedup" in line:
            ctx.measured("hybrid " + " ".join(line.split()[:2]), " ".join(line.split()[2:]))


def topology(ctx: StepContext) -> None:
    """Issue 12: the tiered topology's neighbour reads; correctness is a check, bandwidth a benchmark."""
    from graphtier.bench.topology import run_topology_benchmark

    result = run_topology_benchmark(
        num_nodes=20_000_000, avg_degree=15, positions=4_000_000, repeats=7, device=cuda(), log=lambda _: None
    )
    ctx.save("topology", result)
    for row in result["results"]:
        name = f"topology reads: {row['topology_budget']} on device, sorted {'yes' if row['sorted_reads'] else 'no'}"
        ctx.check(f"{name}: equal to indices[positions]", bool(row["correct"]), "")
        ctx.measured(name, f"{row['positions_per_s'] / 1e6:.0f} M positions/s, {row['gb_per_s']:.2f} GB/s of indices")


def _cnr_or_twin(ctx: StepContext) -> tuple[Path, str]:
    """cnr-2000 when ../shared/data has it (it does not travel to a lent GPU machine), else a generated graph
    of the same size (325k nodes, ~10 arcs per node) written as the same kind of ``.npz``."""
    if CNR_GRAPH.exists():
        return CNR_GRAPH, "cnr-2000"
    from graphtier.dataset.synthetic.generate import generate

    twin = generate(ctx.tmpdir() / "cnr-twin", nodes=325_557, avg_degree=10, feature_dim=0, seed=0)
    path = ctx.tmpdir() / "cnr-twin.npz"
    np.savez(path, indptr=np.asarray(twin.indptr), indices=np.asarray(twin.indices))
    return path, "generated 325k-node twin of cnr-2000 (cnr-2000 not on this machine)"


def device_sampler(ctx: StepContext) -> None:
    """Issue 12's device sampler (Triton picks) against NeighborSampler: identical batches (check), ms per batch."""
    graph, which = _cnr_or_twin(ctx)
    out = ctx.tmpdir() / "device_sample.json"
    command = [sys.executable, str(ROOT / "benchmarks" / "bench_device_sample.py"), "--devices", "cuda",
               "--graph", str(graph), "--out", str(out)]  # fmt: skip
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if not out.exists():
        raise RuntimeError(
            proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "bench_device_sample failed"
        )
    result = json.loads(out.read_text())
    ctx.save("device_sampler", result)
    for row in result["rows"]:
        name = f"sampler {row['fanouts']} {row['sampler']} {row['device']} on {which}"
        ctx.check(f"{name}: identical to NeighborSampler", bool(row["identical"]), "")
        ctx.measured(name, f"{row['ms_per_batch']:.2f} ms/batch")


def gpu_sampler(ctx: StepContext) -> None:
    """Issue 12: the GPU sampler against the CPU sampler at topology budgets 0/10/100%, unsorted, then with the
    default reads (sorted when over 1 in 50 positions are off the GPU, from this step's 2026-11-28 figures), and
    sorted reads at 0."""
    from graphtier.bench.sample import run_sample_benchmark

    reordered = reordered_graph(ctx, 2_000_000, 0, "fwr")
    reads = {False: "unsorted reads", None: "default reads", True: "sorted reads"}
    for sorted_reads, budgets in ((False, ("0", "10%", "100%")), (None, ("0", "10%", "100%")), (True, ("0",))):
        result = run_sample_benchmark(
            reordered, [15, 10, 5], batch_size=1024, batches=50, device=str(cuda()),
            topology_budgets=budgets, sorted_reads=sorted_reads,
        )  # fmt: skip
        ctx.save(f"gpu_sampler sorted={sorted_reads}", result)
        for run in result["device_samplers"]:
            tiers = run["topology_bytes_by_tier"]
            name = f"GPU sampler, topology {run['topology_budget']} on GPU, {reads[sorted_reads]}"
            ctx.check(f"{name}: identical batches to the CPU sampler", bool(run["identical_to_cpu"]), "")
            ctx.measured(name, f"{run['batches_per_s']:.1f} batch/s = {run['speedup_vs_cpu']:.2f}x CPU sampler "
                         f"({result['threads']} threads); gpu {tiers['gpu'] / 1e6:.1f} MB, host {tiers['host'] / 1e6:.1f} MB")  # fmt: skip


def _typed_graph(papers: int, authors: int, fields: int, seed: int) -> tuple[np.ndarray, np.ndarray, Any]:
    """A MAG-shaped typed graph (cites, writes, has and their reverses; power-law in-degrees) as the dataset
    format's back-to-back CSC and its schema (target: paper)."""
    from graphtier.dataset.schema import Schema
    from graphtier.dataset.typed_graph import TypedEdges, build_typed_csc

    rng = np.random.default_rng(seed)
    counts = {"paper": papers, "author": authors, "field": fields}
    plan = [(("paper", "cites", "paper"), 8), (("author", "writes", "paper"), 3), (("field", "has", "paper"), 1)]
    edges = []
    for (src, name, dst), per_node in plan:
        n = counts[dst] * per_node
        sources = (rng.pareto(1.2, n) * counts[src] / 50).astype(np.int64) % counts[src]
        destinations = rng.integers(0, counts[dst], n)
        edges.append(TypedEdges((src, name, dst), sources, destinations))
        edges.append(TypedEdges((dst, f"rev_{name}", src), destinations, sources))
    indptr, indices, edge_counts = build_typed_csc(counts, edges)
    schema = Schema.build([(t, c, 0, "float32") for t, c in counts.items()],
                          [(e.type, k) for e, k in zip(edges, edge_counts)], "paper")  # fmt: skip
    return indptr, indices, schema


def typed_sampler(ctx: StepContext) -> None:
    """Issue 26: the device typed sampler (Triton picks, tiered back-to-back CSC) against NeighborSampler with the schema."""
    from graphtier.memory import make_topology
    from graphtier.sampling.device.sampler import DeviceNeighborSampler
    from graphtier.sampling.neighbor.sampler import NeighborSampler
    from graphtier.sampling.relation_fanouts import parse_relation_fanouts

    indptr, indices, schema = _typed_graph(500_000, 300_000, 1_000, 0)
    # mixed fanouts in a hop (one pick launch per fanout); rev_has: ~500 papers per field, 512-wide pick tiles
    fanouts = parse_relation_fanouts("writes=5/5/3,rev_has=300/2/2", schema, [15, 10, 5])
    cpu = NeighborSampler(indptr, indices, fanouts, schema=schema, seed=4)
    rng = np.random.default_rng(1)
    batches = [rng.integers(0, schema.target_type.count, 1024) for _ in range(8)]
    start = time.perf_counter()
    expected = [cpu.sample(seeds, b) for b, seeds in enumerate(batches)]
    cpu_ms = (time.perf_counter() - start) * 1e3 / len(batches)
    for budget in ("0", "10%", "100%"):
        topology = make_topology(indptr, indices, device=cuda(), topology_budget=budget, log=lambda _: None)
        try:
            sampler = DeviceNeighborSampler(topology, fanouts, schema=schema, seed=4)
            sampler.sample(batches[0], 0)  # compile the pick kernels
            torch.cuda.synchronize()
            start = time.perf_counter()
            got = [sampler.sample(torch.from_numpy(seeds).to(cuda()), b) for b, seeds in enumerate(batches)]
            torch.cuda.synchronize()
            ms = (time.perf_counter() - start) * 1e3 / len(batches)
            identical = all(_same_typed_batch(g.to("cpu"), e) for g, e in zip(got, expected))
        finally:
            topology.close()
        shape = f"{indices.shape[0] / 1e6:.0f}M edges, {len(schema.relations)} relations"
        name = f"typed GPU sampler, topology {budget} on GPU ({shape})"
        ctx.check(f"{name}: identical batches to the CPU NeighborSampler", identical, "")
        ctx.measured(name, f"{ms:.2f} ms/batch vs CPU typed sampler {cpu_ms:.2f} ms/batch")


def temporal_sampler(ctx: StepContext) -> None:
    """Issue 38: the device temporal sampler (Triton cut + Floyd picks, tiered topology) against the CPU
    TemporalNeighborSampler, seeds of many times, both cuts and strategies."""
    from graphtier.dataset.edges._edge_time_kernels import edge_time_order
    from graphtier.memory import make_topology
    from graphtier.sampling import DeviceTemporalSampler, TemporalNeighborSampler

    rng = np.random.default_rng(0)
    nodes, edges = 500_000, 8_000_000
    dst = np.sort((rng.pareto(1.2, edges) * nodes / 50).astype(np.int64) % nodes)
    indptr = np.zeros(nodes + 1, np.int64)
    np.cumsum(np.bincount(dst, minlength=nodes), out=indptr[1:])
    indices, times = rng.integers(0, nodes, edges), rng.integers(0, 1_000_000, edges)
    order = edge_time_order(indptr, times)
    batches = [(rng.integers(0, nodes, 1024), rng.integers(0, 1_100_000, 1024)) for _ in range(8)]
    for budget, strategy, inclusive in (("0", "uniform", False), ("100%", "recent", True)):
        options = dict(strategy=strategy, inclusive=inclusive, seed=3)
        cpu = TemporalNeighborSampler(indptr, indices, times, order, [15, 10], **options)
        start = time.perf_counter()
        expected = [cpu.sample(seeds, at, b) for b, (seeds, at) in enumerate(batches)]
        cpu_ms = (time.perf_counter() - start) * 1e3 / len(batches)
        topology = make_topology(indptr, indices, device=cuda(), topology_budget=budget, log=lambda _: None)
        try:
            sampler = DeviceTemporalSampler(topology, times, order, [15, 10], **options)
            sampler.sample(*batches[0], 0)  # compile the kernels
            torch.cuda.synchronize()
            start = time.perf_counter()
            got = [sampler.sample(torch.from_numpy(s).to(cuda()), torch.from_numpy(t).to(cuda()), b)
                   for b, (s, t) in enumerate(batches)]  # fmt: skip
            torch.cuda.synchronize()
            ms = (time.perf_counter() - start) * 1e3 / len(batches)
        finally:
            topology.close()
        identical = all(
            torch.equal(g.n_id.cpu(), e.n_id) and torch.equal(g.n_time.cpu(), e.n_time)
            and all(torch.equal(a.edge_id.cpu(), b.edge_id) and torch.equal(a.edge_index.cpu(), b.edge_index)
                    for a, b in zip(g.blocks, e.blocks))
            for g, e in zip(got, expected)
        )  # fmt: skip
        name = f"temporal GPU sampler, {strategy}, topology {budget} on GPU (8M edges, fanouts 15,10)"
        ctx.check(f"{name}: identical batches to TemporalNeighborSampler", identical, "")
        ctx.measured(name, f"{ms:.2f} ms/batch vs CPU temporal sampler {cpu_ms:.2f} ms/batch")


def _same_typed_batch(got: Any, expected: Any) -> bool:
    """Every n_id, seed_index and relation CSR of two TypedMiniBatches equal (CPU tensors)."""
    return (
        all(torch.equal(got.n_id[t], ids) for t, ids in expected.n_id.items())
        and torch.equal(got.seed_index, expected.seed_index)
        and all(
            torch.equal(g.relations[k].rowptr, rel.rowptr) and torch.equal(g.relations[k].col, rel.col)
            for g, e in zip(got.blocks, expected.blocks)
            for k, rel in e.relations.items()
        )
    )


def epoch(ctx: StepContext) -> None:
    """Issue 12: one epoch with the whole data path on the GPU against CPU sampling + cpu-gather, and the share
    of feature bytes the hot (GPU) tier served. The CPU twin samples on the CPU."""
    from graphtier.train import train

    nodes = ctx.sized(int(ctx.options["epoch_nodes"]), 2000)
    reordered = reordered_graph(ctx, nodes, 128, "fwr")
    configs = {
        "cpu sampling + cpu-gather": {"sample_on": "cpu", "features_on": "cpu-gather"},
        f"{'gpu' if ctx.on_gpu else 'cpu'} sampling + tiered": {"sample_on": "gpu" if ctx.on_gpu else "cpu", "features_on": "tiered"},
    }  # fmt: skip
    for name, options in configs.items():
        result = train(reordered, model="sage", fanouts=(15, 10, 5), batch_size=1024, epochs=1, device=str(ctx.device),
                       quiet=True, **options)  # fmt: skip
        record = result.report["epochs"][0]
        ctx.save(name, record)
        stages = record["stage_seconds"]
        topo = record["topology_bytes_by_tier"]
        ctx.measured(f"epoch {nodes:,} nodes: {name}",
                     f"{stages['total']:.1f} s (sample {stages['sample']:.1f}, extract {stages['extract']:.1f}, "
                     f"train {stages['train']:.1f}, wait {stages['wait']:.1f}); valid {record['valid_acc']:.3f}; "
                     f"topology gpu/host {topo['gpu'] / 1e9:.2f}/{topo['host'] / 1e9:.2f} GB")  # fmt: skip
        tiers = record["feature_bytes_by_tier"]
        if options["features_on"] == "tiered":
            total = sum(tiers.values())
            ctx.measured(f"epoch {nodes:,} nodes: hot-tier share of feature bytes",
                         f"{tiers['gpu'] / max(total, 1):.3f} of {total / 1e9:.2f} GB from the GPU tier "
                         f"(host {tiers['host'] / 1e9:.2f} GB, disk {tiers['disk'] / 1e9:.2f} GB)")  # fmt: skip
