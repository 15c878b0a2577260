"""`graphtier bench sample`: output, JSON keys, one-line errors with exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.cli.helpers import run as run_cli


@pytest.mark.parametrize("sampler", ["neighbor", "shadow"])
def test_bench_sample_prints_and_saves_json(tiny_dataset, tmp_path: Path, capsys, sampler: str):
    out = tmp_path / "res" / "sample.json"
    code, stdout, stderr = run_cli(
        [
            "bench",
            "sample",
            str(tiny_dataset.path),
            "--fanouts",
            "5,3",
            "--batch-size",
            "32",
            "--batches",
            "4",
            "--threads",
            "1",
            "--sampler",
            sampler,
            "--json",
            str(out),
        ],
        capsys,
    )
    assert code == 0, stderr
    assert "sampled edges/s" in stdout and "mini-batches/s" in stdout
    result = json.loads(out.read_text())
    assert result["fanouts"] == [5, 3] and result["batches"] == 4 and result["threads"] == 1
    assert result["sampled_edges_per_s"] > 0 and result["batches_per_s"] > 0
    assert result["unique_nodes_per_batch"] >= 32
    if sampler == "neighbor":  # ShaDow copies a node once per subgraph that reaches it
        assert result["unique_nodes_per_batch"] <= tiny_dataset.num_nodes
    assert result["sampler"] == sampler
    baseline = result["baseline"]  # the numpy reference sampler, timed in the same run
    assert baseline["batches"] >= 1 and baseline["batches_per_s"] > 0 and "reference" in baseline["name"]
    assert result["speedup_vs_baseline"] == pytest.approx(result["batches_per_s"] / baseline["batches_per_s"])
    assert "baseline" in stdout and "speed-up" in stdout


def test_bench_sample_baseline_can_be_skipped(tiny_dataset, capsys):
    code, stdout, stderr = run_cli(
        ["bench", "sample", str(tiny_dataset.path), "--fanouts", "5,3", "--batches", "2", "--baseline-seconds", "0"],
        capsys,
    )
    assert code == 0, stderr
    assert "baseline" not in stdout


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--fanouts", "10,0"], "--fanouts"),
        (["--fanouts", "ten"], "--fanouts"),
        (["--batch-size", "0"], "batch-size"),
        (["--threads", "4096"], "threads"),
    ],
)
def test_bench_sample_bad_options_exit_2_one_line(tiny_dataset, capsys, extra: list[str], message: str):
    code, _, stderr = run_cli(["bench", "sample", str(tiny_dataset.path), "--batches", "1", *extra], capsys)
    assert code == 2
    assert stderr.count("\n") == 1 and message in stderr and "Traceback" not in stderr


def test_bench_sample_missing_dataset(tmp_path: Path, capsys):
    code, _, stderr = run_cli(["bench", "sample", str(tmp_path / "nope")], capsys)
    assert code == 2 and "nope" in stderr and stderr.count("\n") == 1


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the error of a machine without CUDA")
@pytest.mark.parametrize(
    "extra, message",
    [
        (["--device", "cuda"], "CUDA is not available"),
        (["--device", "tpu"], "--device"),
        (["--device", "cuda", "--topology-budgets", " , "], "--topology-budgets"),
        (["--device", "cuda", "--sampler", "shadow"], "neighbour sampler only"),
    ],
)
def test_bench_sample_device_errors(tiny_dataset, capsys, extra: list[str], message: str):
    code, _, stderr = run_cli(["bench", "sample", str(tiny_dataset.path), "--batches", "1", *extra], capsys)
    assert code == 2
    assert stderr.count("\n") == 1 and message in stderr and "Traceback" not in stderr


def test_device_sampler_benchmark_on_the_cpu_twin(tiny_dataset):
    import torch

    from graphtier.bench.sample_device import time_device_sampler
    from graphtier.sampling import iter_seed_batches

    batches = list(iter_seed_batches(np.asarray(tiny_dataset.train_idx), 40, shuffle=True, seed=0, epoch=0))[:4]
    result = time_device_sampler(
        tiny_dataset, [5, 3], batches, warmup=1, device=torch.device("cpu"), topology_budget="10%", picks="numba"
    )
    assert result["identical_to_cpu"] is True and result["batches_per_s"] > 0
    tiers = result["topology_bytes_by_tier"]
    assert tiers["gpu"] > 0 and tiers["gpu"] + tiers["host"] + tiers["disk"] == tiers["requested"]


def test_bench_sample_typed_dataset(tmp_path: Path, capsys):
    """A typed dataset: every relation sampled with the schema (--fanouts-per-relation honoured) from target-type
    seeds, against the typed reference sampler; the device sampler's CPU twin gives the same batches; ShaDow and
    per-relation fanouts on a homogeneous dataset are refused in one line."""
    import torch

    from graphtier.bench.sample_device import time_device_sampler
    from graphtier.sampling.relation_fanouts import parse_relation_fanouts
    from tests.conftest import write_labelled_graph
    from tests.typed_data import write_tiny_typed

    typed = write_tiny_typed(tmp_path / "typed")
    out = tmp_path / "typed.json"
    argv = ["bench", "sample", str(typed.path), "--fanouts", "3,2", "--batch-size", "4", "--batches", "3"]
    code, stdout, stderr = run_cli([*argv, "--fanouts-per-relation", "writes=1/1", "--json", str(out)], capsys)
    assert code == 0, stderr
    result = json.loads(out.read_text())
    per_relation = result["fanouts_per_relation"]
    assert per_relation["author___writes___paper"] == [1, 1] and len(per_relation) == len(typed.schema.relations)
    assert result["sampled_edges_per_s"] > 0 and "typed_sample_reference" in result["baseline"]["name"]
    code, _, stderr = run_cli([*argv, "--sampler", "shadow"], capsys)
    assert code == 2 and stderr.count("\n") == 1 and "typed dataset" in stderr
    plain = write_labelled_graph(tmp_path / "plain", num_nodes=30)
    code, _, stderr = run_cli(["bench", "sample", str(plain.path), "--fanouts-per-relation", "x=1"], capsys)
    assert code == 2 and stderr.count("\n") == 1 and "--fanouts-per-relation" in stderr
    fanouts = parse_relation_fanouts("writes=1/1", typed.schema, [3, 2])
    batches = [np.arange(4), np.arange(4, 8), np.arange(2, 6)]
    run = time_device_sampler(
        typed, [3, 2], batches, warmup=1, device=torch.device("cpu"), topology_budget="0", picks="numba",
        relation_fanouts=fanouts,
    )  # fmt: skip
    assert run["identical_to_cpu"] is True and run["batches_per_s"] > 0
