"""Start-up: the command line imports a command's module only when it runs; kernels are cached on disk."""

from __future__ import annotations

import ast
import io
import json
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

import graphtier
from graphtier import _compile_notice
from graphtier.cli import COMMANDS, cli

PACKAGE = Path(graphtier.__file__).resolve().parent


def test_importing_the_cli_and_showing_help_imports_no_torch_numba() -> None:
    code = (
        "import sys\n"
        "from graphtier.cli import main\n"
        "try:\n"
        "    main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in ('torch', 'numba', 'torch_geometric', 'graphtier.dataset') if m in sys.modules]\n"
        "print('HEAVY', heavy)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stdout, result.stdout
    for name in COMMANDS:
        assert f"  {name} " in result.stdout


def test_every_listed_command_imports_and_matches_its_name() -> None:
    ctx = cli.make_context("graphtier", ["--help"], resilient_parsing=True)
    for name, (module, summary) in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None and command.name == name, module
        assert summary.endswith(".") and len(summary) < 80


def test_every_numba_kernel_is_cached_on_disk() -> None:
    missing = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = ast.unparse(target)
                if name.startswith(("numba.", "nb.")) or name in ("njit", "jit", "vectorize", "guvectorize"):
                    keywords = {k.arg: ast.unparse(k.value) for k in getattr(decorator, "keywords", [])}
                    if keywords.get("cache") != "True":
                        missing.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert not missing, missing


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_compile_notice_is_printed_once_on_a_terminal(monkeypatch) -> None:
    monkeypatch.setattr(_compile_notice, "_installed", False)
    monkeypatch.setattr(_compile_notice, "_shown", False)
    terminal = _Terminal()
    _compile_notice.install_compile_notice(terminal)

    def not_ours(x):
        return x + 1

    numba.njit(not_ours)(np.int64(1))
    assert terminal.getvalue() == ""  # other packages' kernels do not count

    def add_two(x):
        return x + 2

    def add_three(x):
        return x + 3

    add_two.__module__ = add_three.__module__ = "graphtier.fake_kernels"
    assert numba.njit(add_two)(np.int64(1)) == 3
    assert numba.njit(add_three)(np.float64(1.0)) == 4.0
    assert terminal.getvalue() == _compile_notice.NOTICE + "\n"


def test_the_notice_reaches_a_log_and_the_compile_time_is_counted(tmp_path) -> None:
    script = (
        "import numba, numpy as np\n"
        "from graphtier import _compile_notice as c\n"
        "c.install_compile_notice()\n"
        "def add_four(x):\n    return x + 4\n"
        "add_four.__module__ = 'graphtier.fake_kernels'\n"
        "assert numba.njit(add_four)(np.int64(1)) == 5\n"
        "print(c.compile_seconds())\n"
    )
    with open(tmp_path / "stderr.log", "w") as log:  # stderr redirected to a file: not a terminal
        done = subprocess.run([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=log, text=True, check=True)
    assert (tmp_path / "stderr.log").read_text() == _compile_notice.NOTICE + "\n"
    assert float(done.stdout) > 0  # the compilation's time, which stage and epoch lines name


def test_a_stage_that_compiled_says_its_time_includes_it(monkeypatch) -> None:
    from graphtier._progress import Progress

    clock = iter([0.0, 0.0, 10.0, 10.0])
    seconds = iter([1.0, 1.0, 5.0, 5.0])
    monkeypatch.setattr("graphtier._progress.compile_seconds", lambda: next(seconds))
    progress = Progress(clock=lambda: next(clock))
    with progress.stage("train epoch 1", total=20, unit="batches") as bar:
        bar.advance(20)
    assert bar.final_line() == (
        "train epoch 1 20 batches in 0:00:10 (2 batches/s, including 4.0 s of first-run kernel compilation)"
    )
    quiet = iter([3.0, 3.0, 3.0])
    monkeypatch.setattr("graphtier._progress.compile_seconds", lambda: next(quiet))
    clock = iter([0.0, 0.0, 10.0, 10.0])
    with progress.stage("valid", total=20, unit="batches") as bar:
        bar.advance(20)
    assert bar.final_line() == "valid 20 batches in 0:00:10 (2 batches/s)"


def test_a_closed_stream_never_fails_a_compile(monkeypatch) -> None:
    monkeypatch.setattr(_compile_notice, "_installed", False)
    monkeypatch.setattr(_compile_notice, "_shown", False)
    closed = io.StringIO()
    _compile_notice.install_compile_notice(closed)
    closed.close()  # e.g. a test's captured stderr, gone when a later kernel compiles

    def add_five(x):
        return x + 5

    add_five.__module__ = "graphtier.fake_kernels"
    assert numba.njit(add_five)(np.int64(1)) == 6


# Runs the command line in-process, then reports the heavy modules it had imported (and its exit code).
_IMPORTED_AFTER = r"""
import json, sys
from graphtier.cli import main
try:
    main(json.loads(sys.argv[1]))
    code = 0
except SystemExit as exc:
    code = exc.code
heavy = ("torch", "torch_geometric", "torch._dynamo", "graphtier.train.nn.models")
print("RESULT", json.dumps({"code": code, "imported": [m for m in heavy if m in sys.modules]}))
"""


def _imported_after(argv: list[str]) -> tuple[int, list[str], str]:
    """Exit code, the heavy modules imported, and stderr of ``graphtier ARGV`` run in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTED_AFTER, json.dumps(argv)], capture_output=True, text=True, timeout=300
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, done.stderr
    result = json.loads(lines[-1][len("RESULT ") :])
    return result["code"], result["imported"], done.stderr


def test_train_with_a_missing_dataset_fails_before_importing_the_models(tmp_path: Path) -> None:
    code, imported, stderr = _imported_after(["train", str(tmp_path / "does-not-exist"), "--epochs", "1"])
    assert code == 2
    assert stderr.strip() == f"graphtier: error: {tmp_path / 'does-not-exist'}: dataset directory not found"
    assert "torch_geometric" not in imported and "graphtier.train.nn.models" not in imported, imported


def test_train_with_a_bad_option_value_fails_before_importing_the_models(tmp_path: Path) -> None:
    code, imported, stderr = _imported_after(["train", str(tmp_path), "--hidden", "0"])
    assert code == 2 and stderr.startswith("graphtier: error: --hidden") and len(stderr.strip().splitlines()) == 1
    assert "torch_geometric" not in imported and "graphtier.train.nn.models" not in imported, imported


def test_predict_with_a_missing_model_fails_before_importing_the_models(tiny_dataset, tmp_path: Path) -> None:
    missing = tmp_path / "missing.pt"
    code, imported, stderr = _imported_after(
        ["predict", str(tiny_dataset.path), "--model", str(missing), "--output", str(tmp_path / "p.npy")]
    )
    assert code == 2
    assert stderr.strip() == f"graphtier: error: --model {missing}: file not found"
    assert "torch_geometric" not in imported and "graphtier.train.nn.models" not in imported, imported


@pytest.mark.parametrize(
    "argv", [["--help"], *([name, "--help"] for name in COMMANDS), ["bench", "gather", "--help"]], ids=" ".join
)
def test_help_imports_no_torch(argv: list[str]) -> None:
    code, imported, _ = _imported_after(argv)
    assert code == 0 and "torch" not in imported, imported


def test_values_shown_by_help_are_the_librarys() -> None:
    """The choices and defaults that --help shows without importing torch are the very values the library checks
    and uses: one definition each, in graphtier._choices."""
    from graphtier import _choices
    from graphtier.bench.gather import DTYPES
    from graphtier.cli import bench_gather, plan, score
    from graphtier.cli.common import options
    from graphtier.memory.plan import placement_solver
    from graphtier.tiering import hotness, seeds
    from graphtier.tiering.plan import capacity as tiering_plan
    from graphtier.tiering.plan import placement as plan_placement
    from graphtier.train.options import spec

    assert options.TASK_NAMES is spec.TASK_NAMES is seeds.TASK_NAMES is _choices.TASK_NAMES
    assert options.NEGATIVE_SAMPLING is spec.NEGATIVE_SAMPLING_NAMES is seeds.NEGATIVE_SAMPLING
    assert (options.DEFAULT_NUM_NEGATIVES, options.DEFAULT_NEGATIVE_SAMPLING) == (
        spec.DEFAULT_NUM_NEGATIVES,
        spec.DEFAULT_NEGATIVE_SAMPLING,
    )
    assert score.SCORE_METHODS is hotness.SCORE_METHODS is _choices.SCORE_METHODS
    assert score.DEFAULT_SCORE is _choices.DEFAULT_SCORE
    assert plan.DEFAULT_BUDGETS is tiering_plan.DEFAULT_BUDGETS
    assert (plan.DEFAULT_PCIE_GBPS, plan.DEFAULT_GPU_GBPS, plan.DEFAULT_DISK_GBPS) == (
        tiering_plan.DEFAULT_PCIE_GBPS,
        tiering_plan.DEFAULT_GPU_GBPS,
        tiering_plan.DEFAULT_DISK_GBPS,
    )
    assert plan.PAIR_MOVE_GROUPS == plan_placement.DEFAULT_PLACEMENT_GROUPS == placement_solver.PAIR_MOVE_GROUPS
    assert tuple(sorted(bench_gather.GATHER_DTYPES)) == tuple(sorted(DTYPES))
