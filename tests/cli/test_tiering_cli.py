"""CLI tests for `graphtier score`, `graphtier reorder` and `graphtier analyze`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphtier.dataset.csc import csc_to_edges, edges_to_csc
from graphtier.dataset.format import Dataset
from graphtier.dataset.writer import DatasetWriter
from tests.cli.helpers import run

DATA = Path(__file__).parents[2] / ".." / "shared" / "data"


@pytest.fixture()
def dataset(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    n, e = 2000, 16000
    src = np.minimum((rng.pareto(1.5, e) * 5).astype(np.int64), n - 1)
    dst = rng.integers(0, n, e)
    indptr, indices = edges_to_csc(src, dst, n, dedup=True)
    root = tmp_path / "data"
    with DatasetWriter(root) as writer:
        writer.save("indptr", indptr)
        writer.save("indices", indices)
        writer.save("features", rng.standard_normal((n, 4)).astype(np.float32))
        writer.save("labels", rng.integers(0, 3, n))
        writer.save("train_idx", np.sort(rng.choice(n, 40, replace=False)).astype(np.int64))
        writer.save("node_ids", np.arange(n, dtype=np.int64) + 10)
        writer.finish(
            {
                "name": "cli-test",
                "num_nodes": n,
                "num_edges": int(indices.size),
                "directed": True,
                "feature_dim": 4,
                "feature_dtype": "float32",
                "num_classes": 3,
                "source": {"kind": "test"},
            }
        )
    return root


@pytest.mark.parametrize("method", ["degree", "rpr", "wrpr", "fwr", "fwr-sum", "presample"])
def test_score_writes_scores(dataset: Path, tmp_path: Path, method: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / f"{method}.npy"
    code, stdout, _ = run(
        ["score", str(dataset), "--score", method, "--output", str(out), "--fanouts", "5,5", "--batch-size", "16"],
        capsys,
    )
    assert code == 0
    scores = np.load(out)
    assert scores.shape == (2000,) and scores.dtype == np.float64
    assert method in stdout
    if method == "degree":
        np.testing.assert_array_equal(scores, np.bincount(np.load(dataset / "indices.npy"), minlength=2000))
    if method == "presample":
        assert "sampling cost" in stdout


def test_reorder_by_method_and_file(dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run(["reorder", str(dataset), str(tmp_path / "r"), "--score", "wrpr"], capsys)
    assert code == 0, stdout
    result = Dataset.open(tmp_path / "r")
    source = Dataset.open(dataset)
    perm = np.asarray(result.extra["perm"])
    assert result.meta["node_order"] == "reordered"
    assert result.meta["reorder"]["score"] == "wrpr"
    assert result.meta["reorder"]["params"]["iterations"] == 5
    np.testing.assert_array_equal(result.features, np.asarray(source.features)[perm])
    np.testing.assert_array_equal(result.extra["node_ids"], np.asarray(source.extra["node_ids"])[perm])
    src, dst = csc_to_edges(result.indptr, result.indices)
    assert sorted(zip(perm[src].tolist(), perm[dst].tolist())) == sorted(
        zip(*[a.tolist() for a in csc_to_edges(source.indptr, source.indices)])
    )
    scores = np.arange(2000, dtype=np.float64)
    np.save(tmp_path / "s.npy", scores)
    code, _, _ = run(["reorder", str(dataset), str(tmp_path / "r2"), "--score", str(tmp_path / "s.npy")], capsys)
    assert code == 0
    np.testing.assert_array_equal(np.load(tmp_path / "r2" / "perm.npy"), np.arange(1999, -1, -1))
    # existing output without --overwrite: one-line error, output untouched
    code, _, err = run(["reorder", str(dataset), str(tmp_path / "r2"), "--score", "degree"], capsys)
    assert code == 2 and "already exists" in err and len(err.strip().splitlines()) == 1
    np.testing.assert_array_equal(np.load(tmp_path / "r2" / "perm.npy"), np.arange(1999, -1, -1))


def test_analyze_json_and_plot(dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, err = run(
        [
            "analyze",
            str(dataset),
            "--fanouts",
            "10,10,10,10,10",
            "--batch-size",
            "8",
            "--json",
            str(tmp_path / "a.json"),
            "--plot",
            str(tmp_path / "a.png"),
        ],
        capsys,
    )
    assert code == 0, err
    doc = json.loads((tmp_path / "a.json").read_text())
    assert set(doc["curves"]) == {"degree", "rpr", "wrpr", "fwr", "fwr-sum", "presample", "ideal"}
    assert set(doc["curves"]["ideal"]) == {"1", "2", "5", "10", "20", "25", "50"}
    assert doc["config"]["fanouts"] == [10, 10, 10, 10, 10]
    assert doc["total_reads"] > 0
    assert all(0 <= v <= 1 for curve in doc["curves"].values() for v in curve.values())
    assert "top 10%" in stdout and "ideal" in stdout
    assert doc["interpretation"] in stdout.splitlines()
    assert doc["interpretation"].startswith("best score: ")  # batch 8 on a power-law graph: hubs are hot
    assert (tmp_path / "a.png").stat().st_size > 1000


@pytest.mark.parametrize(
    "argv, message",
    [
        (["score", "{d}", "--method", "rpr", "--damping", "2"], "--damping"),
        (["score", "{d}", "--method", "rpr", "--output", "{t}/x.txt"], ".npy"),
        (["score", "{t}/missing", "--method", "rpr"], "not found"),
        (["analyze", "{d}", "--fanouts", "a,b"], "--fanouts"),
        (["analyze", "{d}", "--score", "degree,nope"], "--score"),
        (["analyze", "{d}", "--iterations", "3", "--wrpr-iterations", "4"], "--wrpr-iterations"),
        (["score", "{d}", "-s", "rpr", "-m", "wrpr"], "--method"),
        (["analyze", "{d}", "--seed", "3", "--presample-seed", "3"], "--presample-seed"),
        (["reorder", "{d}", "{t}/o", "--score", "{t}/missing.npy"], "score file not found"),
    ],
)
def test_user_errors_are_one_line_exit_2(
    dataset: Path, tmp_path: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a.format(d=dataset, t=tmp_path) for a in argv]
    code, _, err = run(argv, capsys)
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_wrpr_without_train_split_is_a_user_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    indptr, indices = edges_to_csc(np.array([0, 1]), np.array([1, 2]), 3)
    with DatasetWriter(tmp_path / "d") as writer:
        writer.save("indptr", indptr)
        writer.save("indices", indices)
        writer.finish(
            {
                "name": "t",
                "num_nodes": 3,
                "num_edges": 2,
                "directed": True,
                "feature_dim": 0,
                "feature_dtype": None,
                "num_classes": 0,
                "source": {},
            }
        )
    code, _, err = run(["score", str(tmp_path / "d"), "--method", "wrpr"], capsys)
    assert code == 2 and "train_idx.npy" in err


def test_real_graph_scores_and_reorder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cnr-2000 (real web graph, self-loops, nodes with empty lists): rpr converges, reorder round-trips."""
    path = DATA / "cnr-2000" / "cnr-2000.csr.npz"
    if not path.is_file():
        pytest.skip("shared data not present")
    with np.load(path) as npz:
        out_indptr, targets = npz["indptr"], npz["indices"]
    n = out_indptr.shape[0] - 1
    sources = np.repeat(np.arange(n), np.diff(out_indptr))
    indptr, indices = edges_to_csc(sources, targets, n)
    with DatasetWriter(tmp_path / "cnr") as writer:
        writer.save("indptr", indptr)
        writer.save("indices", indices)
        writer.finish(
            {
                "name": "cnr-2000",
                "num_nodes": n,
                "num_edges": int(indices.size),
                "directed": True,
                "feature_dim": 0,
                "feature_dtype": None,
                "num_classes": 0,
                "source": {},
            }
        )
    code, stdout, err = run(["score", str(tmp_path / "cnr"), "--method", "rpr", "-o", str(tmp_path / "r.npy")], capsys)
    assert code == 0, err
    scores = np.load(tmp_path / "r.npy")
    assert scores.sum() == pytest.approx(1.0, rel=1e-9) and np.all(scores > 0)
    code, _, err = run(
        ["reorder", str(tmp_path / "cnr"), str(tmp_path / "out"), "--score", str(tmp_path / "r.npy")], capsys
    )
    assert code == 0, err
    result = Dataset.open(tmp_path / "out")
    perm = np.asarray(result.extra["perm"])
    assert np.all(np.diff(scores[perm]) <= 0)
    np.testing.assert_array_equal(np.diff(result.indptr), np.diff(indptr)[perm])


def test_default_score_is_fwr_with_fanouts_and_batch_size(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, stdout, err = run(
        ["reorder", str(dataset), str(tmp_path / "r"), "--fanouts", "5,5", "--batch-size", "16"], capsys
    )
    assert code == 0, err
    meta = Dataset.open(tmp_path / "r").meta["reorder"]
    assert meta["score"] == "fwr"
    assert meta["params"]["fanouts"] == [5, 5] and meta["params"]["batch_size"] == 16
    code, stdout, _ = run(["score", str(dataset), "--fanouts", "5,5"], capsys)
    assert code == 0 and stdout.startswith("fwr:")
    code, _, err = run(["score", str(dataset), "--method", "fwr", "--batch-size", "0"], capsys)
    assert code == 2 and "--batch-size" in err and len(err.strip().splitlines()) == 1


def test_score_option_is_spelled_the_same_everywhere(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from graphtier.cli import cli

    for name in ("score", "reorder", "analyze"):
        command = cli.get_command(cli.make_context("graphtier", ["--help"], resilient_parsing=True), name)
        visible = {opt for param in command.params if not getattr(param, "hidden", False) for opt in param.opts}
        assert {"-s", "--score", "--iterations"} <= visible, name
        assert not visible & {"-m", "--method", "--scores", "--wrpr-iterations"}, name
    # the old spellings still work
    code, stdout, _ = run(["score", str(dataset), "-m", "degree", "--top", "1"], capsys)
    assert code == 0 and "degree" in stdout
    code, stdout, _ = run(
        [
            "analyze",
            str(dataset),
            "--scores",
            "degree",
            "--wrpr-iterations",
            "2",
            "--fanouts",
            "5,5",
            "--batch-size",
            "64",
        ],
        capsys,
    )
    assert code == 0 and "degree" in stdout


def test_pagerank_stopped_by_its_cap_warns(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["score", str(dataset), "-s", "rpr", "--iterations", "2", "--top", "0"], capsys)
    assert code == 0 and "graphtier: warning: rpr stopped at its iteration cap (2)" in err
    code, _, err = run(
        ["score", str(dataset), "-s", "rpr", "--iterations", "500", "--tol", "1e-3", "--top", "0"], capsys
    )
    assert code == 0 and "warning" not in err
    # wrpr runs a fixed number of rounds by design (Alg. 1): no warning
    code, _, err = run(["score", str(dataset), "-s", "wrpr", "--iterations", "2", "--top", "0"], capsys)
    assert code == 0 and "warning" not in err


PLAN_ARGS = ["--fanouts", "5,5", "--batch-size", "16", "--host-memory", "64GiB", "--budgets", "0%,50%"]


def _plan_gpu_memory(dataset: Path, feature_bytes: int) -> str:
    """--gpu-memory leaving ``feature_bytes`` per GPU for features (after the reserve and indptr)."""
    num_nodes = np.load(dataset / "indptr.npy", mmap_mode="r").shape[0] - 1
    return f"{2 * 2**30 + 8 * (num_nodes + 1) + feature_bytes}B"


@pytest.mark.parametrize("name, gpus", [("dgx1-v100", 8), ("pcie-4", 4)])
def test_plan_prints_the_multi_gpu_placement(
    dataset: Path, tmp_path: Path, name: str, gpus: int, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plan.json"
    code, stdout, err = run(
        [
            "plan",
            str(dataset),
            *PLAN_ARGS,
            "--gpu-memory",
            _plan_gpu_memory(dataset, 8000),
            "--gpus",
            str(gpus),
            "--gpu-topology",
            name,
            "--placement-groups",
            "8",
            "--json",
            str(out),
        ],
        capsys,
    )
    assert code == 0, err
    assert f"placement on {name} ({gpus} GPUs" in stdout
    assert "objective: slowest link" in stdout and "host-only" in stdout and "replicate+interleave" in stdout
    assert "bytes per link per epoch" in stdout and f"gpu{gpus - 1}: gpu{gpus - 1} local" in stdout
    placement = json.loads(out.read_text())["placement"]
    assert placement["num_gpus"] == gpus and placement["budget_per_gpu"] == 8000
    objective = placement["objective_seconds_per_epoch"]
    assert all(objective <= seconds * (1 + 1e-9) for seconds in placement["baselines_seconds_per_epoch"].values())
    assert max(placement["gpu_bytes"]) <= 8000
    # host and peer links carry the bytes each GPU reads from groups it does not hold
    access = placement["access_bytes_per_gpu_per_epoch"]
    missed = sum(access * g["read_share"] for g in placement["groups"] for i in range(gpus) if i not in g["holders"])
    remote = sum(b for link, b in placement["link_bytes_per_epoch"].items() if not link.endswith("local"))
    assert remote == pytest.approx(missed, rel=1e-9) and remote > 0
    for link, seconds in placement["link_seconds_per_epoch"].items():
        assert seconds <= objective * (1 + 1e-9), link


def test_plan_gpus_default_to_the_topology(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, err = run(
        ["plan", str(dataset), *PLAN_ARGS, "--gpu-memory", "80GiB", "--gpu-topology", "nvlink-pairs-4"], capsys
    )
    assert code == 0, err
    assert "device: 4 x GPU" in stdout and "placement on nvlink-pairs-4 (4 GPUs" in stdout


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--gpus", "4", "--gpu-topology", "dgx1-v100"], "--gpu-topology dgx1-v100: has 8 GPUs, but --gpus is 4"),
        (["--gpu-topology", "{t}/missing.json"], "--gpu-topology: cannot read"),
        (["--gpu-topology", "{t}/bad.json"], "bad.json: not valid JSON"),
        (["--gpu-topology", "{t}/square.json"], "field 'links_gbps': expected a square"),
        (["--gpu-topology", "pcie-4", "--placement-groups", "0"], "--placement-groups"),
        (["--topology-budget", "many"], "--topology-budget"),
    ],
)
def test_plan_placement_user_errors_are_one_line_exit_2(
    dataset: Path, tmp_path: Path, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.json").write_text("{nope")
    (tmp_path / "square.json").write_text(json.dumps({"links_gbps": [[0, 1, 2]], "host_gbps": 12}))
    out = tmp_path / "plan.json"
    argv = [
        "plan",
        str(dataset),
        *PLAN_ARGS,
        "--gpu-memory",
        "80GiB",
        *[a.format(t=tmp_path) for a in extra],
        "--json",
        str(out),
    ]
    code, _, err = run(argv, capsys)
    assert code == 2, err
    assert err.startswith("graphtier: error:") and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


def test_plan_topology_budget_moves_graph_reads_off_pcie(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = {}
    for budget in ("0", "100%"):
        out = tmp_path / f"plan-{budget.strip('%')}.json"
        code, stdout, err = run(
            [
                "plan",
                str(dataset),
                *PLAN_ARGS,
                "--gpu-memory",
                "80GiB",
                "--topology-budget",
                budget,
                "--json",
                str(out),
            ],
            capsys,
        )
        assert code == 0, err
        assert f"--topology-budget {budget})" in stdout
        rows[budget] = json.loads(out.read_text())["budgets"][0]
    zero, full = rows["0"], rows["100%"]
    assert zero["topology_bytes_per_epoch"]["host"] > 0 and full["topology_bytes_per_epoch"]["host"] == 0

    def total(row):
        return sum(row["topology_bytes_per_epoch"].values())

    assert total(zero) == pytest.approx(total(full))
    assert zero["pcie_bytes_per_epoch"] - full["pcie_bytes_per_epoch"] == pytest.approx(
        zero["topology_bytes_per_epoch"]["host"]
    )
