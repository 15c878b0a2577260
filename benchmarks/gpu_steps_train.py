"""GPU steps added by issue 22: what the older checks only timed or never ran on CUDA.

Values through a host registration larger than 2 GiB; real training with host rows read (tiered against
cpu-gather, same seed, same losses); checkpoint resume, ``predict`` and ``--full-inference``, GAT on CUDA;
tiered+cache on the sampler's trace; a ``cuda:1`` device index and NCCL training over two GPUs. Checks
compare against a reference (CPU run, plain indexing, an uninterrupted run); figures are benchmarks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from gpu_steps import cuda, reordered_graph

if TYPE_CHECKING:
    from gpu_checks import StepContext

LOSS_RTOL = 1e-4  # same seed, same rows: only GPU reduction order differs
CPU_RTOL = 1e-3  # CUDA against CPU kernels over one epoch


def _close(a: list[float], b: list[float], rtol: float) -> tuple[bool, float]:
    diff = max((abs(x - y) / max(abs(y), 1e-12) for x, y in zip(a, b)), default=float("inf"))
    return len(a) == len(b) and diff <= rtol, diff


def _losses(report: dict[str, Any]) -> list[float]:
    return [float(e["loss"]) for e in report["epochs"]]


def _small_graph(ctx: StepContext) -> Any:
    from graphtier.dataset.synthetic.generate import generate

    nodes = ctx.sized(200_000, 2000)
    return generate(ctx.tmpdir() / f"g{nodes}", nodes=nodes, avg_degree=15, feature_dim=128, seed=0)


def big_registration(ctx: StepContext) -> None:
    """Zero-copy and tiered reads from a 2.25 GiB host table (past 2^31 bytes) equal plain indexing."""
    from graphtier.memory import make_feature_store

    rows, dim = 4_718_592, 128  # 2.25 GiB of float32
    table = np.empty((rows, dim), dtype=np.float32)
    table[:] = (np.arange(rows, dtype=np.float32) % 65521)[:, None] + np.arange(dim, dtype=np.float32)[None, :] / 256
    rng = np.random.default_rng(0)
    ids = np.concatenate([rng.integers(0, rows, 200_000), np.arange(rows - 1000, rows)])  # the last rows too
    for mode, options in (("zero-copy", {}), ("tiered", {"gpu_budget": "10%"})):
        store = None
        try:
            store = make_feature_store(table, mode, device=cuda(), log=lambda _: None, **options)
            got = store.gather(torch.from_numpy(ids)).cpu().numpy()
            same = bool(np.array_equal(got, table[ids]))
            bad = 0 if same else int((got != table[ids]).any(axis=1).sum())
            ctx.check(f"{mode} {options} over {table.nbytes / 2**30:.2f} GiB registered", same,
                      f"{ids.size:,} rows compared, {bad} differ; host bytes {store.traffic().get('host', 0):,}")  # fmt: skip
        finally:
            if store is not None:
                store.close()


def tiered_training(ctx: StepContext) -> None:
    """``train --features-on tiered --gpu-budget 10% --sample-on gpu`` reads host rows and gives the losses of
    ``--features-on cpu-gather`` with CPU sampling (same seed: the same batches). The CPU twin samples on the CPU."""
    from graphtier.train import train

    graph = _small_graph(ctx)
    common: dict[str, Any] = {"model": "sage", "fanouts": (10, 5), "batch_size": 1024, "epochs": 2, "dropout": 0.0, "seed": 0,
                              "device": str(ctx.device), "quiet": True, "eval_every": 2}  # fmt: skip
    sample_on = "gpu" if ctx.on_gpu else "cpu"
    reference = train(graph, features_on="cpu-gather", sample_on="cpu", **common).report
    tiered = train(graph, features_on="tiered", gpu_budget="10%", sample_on=sample_on, **common).report
    ctx.save("cpu-gather", reference["epochs"])
    ctx.save("tiered", tiered["epochs"])
    host = sum(e["feature_bytes_by_tier"]["host"] for e in tiered["epochs"])
    gpu = sum(e["feature_bytes_by_tier"]["gpu"] for e in tiered["epochs"])
    ctx.check("tiered 10%: host rows read during training" + ("" if ctx.on_gpu else " (CPU: no GPU tier)"),
              host > 0 and (gpu > 0 or not ctx.on_gpu), f"host {host:,} B, gpu {gpu:,} B")  # fmt: skip
    ok, diff = _close(_losses(tiered), _losses(reference), LOSS_RTOL)
    ctx.check(f"tiered 10%, {sample_on} sampling: losses equal cpu-gather's, cpu sampling (seed 0)", ok,
              f"{_losses(tiered)} vs {_losses(reference)}, max relative difference {diff:.2e} (<= {LOSS_RTOL})")  # fmt: skip
    for name, report in (("cpu-gather", reference), (f"tiered 10% + {sample_on} sampling", tiered)):
        ctx.measured(
            f"train epoch on {ctx.device.type}, {name}", f"{report['epochs'][-1]['stage_seconds']['total']:.2f} s"
        )


def resume(ctx: StepContext) -> None:
    """Two epochs in one run against one epoch, then a resumed second epoch, all on CUDA."""
    from graphtier.train import train

    graph = _small_graph(ctx)
    common: dict[str, Any] = {
        "fanouts": (10, 5),
        "batch_size": 1024,
        "dropout": 0.0,
        "seed": 0,
        "device": str(cuda()),
        "quiet": True,
    }
    whole = train(graph, epochs=2, checkpoint=str(ctx.tmpdir() / "ck-whole"), **common).report
    train(graph, epochs=1, checkpoint=str(ctx.tmpdir() / "ck-split"), **common)
    resumed = train(graph, epochs=2, checkpoint=str(ctx.tmpdir() / "ck-split"), **common).report
    ctx.check("resume: second run starts at epoch 2", (resumed.get("resumed_from") or {}).get("epoch") == 1,
              f"resumed_from {resumed.get('resumed_from')}")  # fmt: skip
    ok, diff = _close(_losses(resumed), _losses(whole), LOSS_RTOL)
    ctx.check("resume on CUDA: losses equal the uninterrupted run", ok,
              f"{_losses(resumed)} vs {_losses(whole)}, max relative difference {diff:.2e}")  # fmt: skip


def predict_cuda(ctx: StepContext) -> None:
    """``train --full-inference --save-model`` on CUDA, then ``predict`` on CUDA against ``predict`` on the CPU."""
    from graphtier.train import predict, train

    graph = _small_graph(ctx)
    model_path = ctx.tmpdir() / "model.gtm"
    report = train(graph, fanouts=(10, 5), epochs=1, seed=0, device=str(ctx.device), quiet=True, full_inference=True,
                   save_model=str(model_path)).report  # fmt: skip
    final = report["final"]
    ctx.check(f"--full-inference on {ctx.device.type}", final["method"] == "full" and final["valid_acc"] is not None,
              f"method {final['method']}, valid {final['valid_acc']}")  # fmt: skip
    on_gpu = predict(model_path, graph, device=str(ctx.device)).logits
    on_cpu = predict(model_path, graph, device="cpu").logits
    diff = float(np.abs(on_gpu - on_cpu).max())
    ctx.check(
        f"predict on {ctx.device.type} equals predict on the CPU",
        diff <= 1e-3,
        f"max |logit difference| {diff:.2e} (<= 1e-3)",
    )


def gat_cuda(ctx: StepContext) -> None:
    """GAT trains on CUDA and its first-epoch loss matches the CPU's (same seed, no dropout)."""
    from graphtier.train import train

    graph = _small_graph(ctx)
    common: dict[str, Any] = {"model": "gat", "fanouts": (10, 5), "batch_size": 1024, "epochs": 1, "dropout": 0.0, "seed": 0,
                                  "hidden": 64, "heads": 4, "quiet": True}  # fmt: skip
    on_gpu = train(graph, device=str(cuda()), **common).report
    on_cpu = train(graph, device="cpu", **common).report
    ok, diff = _close(_losses(on_gpu), _losses(on_cpu), CPU_RTOL)
    ctx.check("GAT on CUDA: loss equals the CPU's", ok and bool(np.isfinite(_losses(on_gpu)).all()),
              f"{_losses(on_gpu)} vs {_losses(on_cpu)}, relative difference {diff:.2e} (<= {CPU_RTOL})")  # fmt: skip
    ctx.measured("GAT epoch on CUDA", f"{on_gpu['epochs'][0]['stage_seconds']['total']:.2f} s")


def cache_trace(ctx: StepContext) -> None:
    """tiered+cache on the sampler's power-law trace: the cache's hit ratio and time against plain tiered."""
    from graphtier.bench.gather_dataset import run_dataset_gather

    reordered = reordered_graph(ctx, 1_000_000, 256, "wrpr")
    common: dict[str, Any] = {
        "ids_from": "sampler",
        "device": cuda(),
        "fanouts": (15, 10, 5),
        "batch_size": 1024,
        "batches": 50,
    }
    plain = run_dataset_gather(reordered, features_on="tiered", gpu_budget="5%", **common)
    cached = run_dataset_gather(reordered, features_on="tiered+cache", gpu_budget="5%", cache_budget="5%", **common)
    ctx.save("tiered", plain)
    ctx.save("tiered+cache", cached)
    hit = cached["cache_hit_ratio"]
    ctx.check(
        "tiered+cache: the cache serves reads on the trace", hit is not None and 0.0 < hit <= 1.0, f"hit ratio {hit}"
    )
    ctx.measured("trace: tiered 5% + cache 5%",
                 f"hit ratio {hit:.3f}; {cached['seconds']:.3f} s vs {plain['seconds']:.3f} s tiered alone; host bytes "
                 f"{cached['bytes_by_tier']['host']:,} vs {plain['bytes_by_tier']['host']:,}")  # fmt: skip


def multi_gpu(ctx: StepContext) -> None:
    """A ``cuda:1`` device index (store and training), and NCCL training over ``cuda:0,cuda:1``."""
    from graphtier.memory import make_feature_store
    from graphtier.train import TrainConfig, train
    from graphtier.train.loop.launch import launch

    table = np.random.default_rng(0).normal(size=(50_000, 64)).astype(np.float32)
    ids = np.random.default_rng(1).integers(0, table.shape[0], 10_000)
    store = None
    try:
        store = make_feature_store(table, "tiered", device=torch.device("cuda:1"), gpu_budget="20%", log=lambda _: None)
        got = store.gather(torch.from_numpy(ids))
        ctx.check("tiered store on cuda:1", got.device == torch.device("cuda:1") and np.array_equal(got.cpu().numpy(), table[ids]),
                  f"output on {got.device}")  # fmt: skip
    finally:
        if store is not None:
            store.close()
    graph = _small_graph(ctx)
    result = train(graph, fanouts=(10, 5), epochs=1, device="cuda:1", quiet=True)
    where = {str(p.device) for p in result.model.parameters()}
    ctx.check(
        "train --device cuda:1", np.isfinite(result.report["epochs"][0]["loss"]), f"model on {where} during training"
    )
    report = launch(str(graph.path), TrainConfig(fanouts=(10, 5), epochs=2, devices=("cuda:0", "cuda:1"), quiet=True))
    assert report is not None
    ok = all(np.isfinite(e["loss"]) for e in report["epochs"]) and report["epochs"][-1]["valid_acc"] is not None
    ctx.check("--devices cuda:0,cuda:1 (NCCL) trains 2 epochs", ok,
              f"losses {_losses(report)}, valid {report['epochs'][-1]['valid_acc']}")  # fmt: skip


def link_training(ctx: StepContext) -> None:
    """``train --task link`` on CUDA: GPU sampling (link batches, target edges excluded on the device) over tiered
    features and topology gives the losses of CPU sampling + cpu-gather (same seed: the same batches)."""
    from graphtier.dataset.synthetic.generate import generate
    from graphtier.train import train

    graph = generate(ctx.tmpdir() / "g100k-link", nodes=100_000, avg_degree=15, feature_dim=64, seed=0,
                     edge_split="0.9,0.05,0.05")  # fmt: skip
    common: dict[str, Any] = {"task": "link", "model": "sage", "fanouts": (10, 5), "batch_size": 1024, "epochs": 1,
                              "dropout": 0.0, "seed": 0, "device": str(cuda()), "quiet": True}  # fmt: skip
    reference = train(graph, sample_on="cpu", features_on="cpu-gather", **common).report
    on_gpu = train(
        graph, sample_on="gpu", features_on="tiered", gpu_budget="10%", topology_budget="50%", **common
    ).report
    ctx.save("cpu", reference["epochs"])
    ctx.save("gpu", on_gpu["epochs"])
    ok, diff = _close(_losses(on_gpu), _losses(reference), CPU_RTOL)
    ctx.check("link: GPU sampling + tiered losses equal CPU sampling + cpu-gather (seed 0)", ok,
              f"{_losses(on_gpu)} vs {_losses(reference)}, max relative difference {diff:.2e} (<= {CPU_RTOL})")  # fmt: skip
    for name, report in (("cpu sampling + cpu-gather", reference), ("gpu sampling + tiered", on_gpu)):
        final = report["final"]
        ctx.measured(f"link epoch on CUDA, {name}",
                     f"{report['epochs'][-1]['stage_seconds']['total']:.2f} s, test AUC {final['test_auc']:.4f}")  # fmt: skip
