"""The steps ``--plan first`` opens with (issue 35): the machine's packages, the GPU tests of the data path,
and the headline gather figure. Each runs on the CPU too (its CPU twin), as far as the CPU allows.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from gpu_steps import _ideal_bandwidth, sync

if TYPE_CHECKING:
    from gpu_checks import StepContext

ROOT = Path(__file__).resolve().parents[1]
# imported by the steps of this harness (graphtier imports its own lazily: this is what the steps pull in)
STEP_MODULES = ("graphtier", "graphtier.train", "graphtier.memory", "graphtier.sampling", "graphtier.graph.reorder",
                "graphtier.tiering.hotness", "graphtier.dataset.synthetic.generate", "graphtier.bench.gather", "graphtier.cli")  # fmt: skip
# not declared dependencies: what goes without each on a machine that lacks it
OPTIONAL = {
    "triton": "the Triton kernels (the GPU sampler's picks, compiled reads)",
    "pytest": "step pytest (skipped)",
    "hypothesis": "the GPU test files that import it (skipped)",
    "yaml": "dataset manifests written as .yaml",
}


# distributions whose import name is not their name
IMPORT_NAMES = {"pyyaml": "yaml"}


def declared_dependencies() -> list[str]:
    """Import names of pyproject.toml's ``dependencies`` (``torch_geometric>=2.5`` -> ``torch_geometric``,
    ``pyyaml>=6`` -> ``yaml``)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0].replace("-", "_") for spec in project["dependencies"]]
    return [IMPORT_NAMES.get(name.lower(), name) for name in names]


def environment(ctx: StepContext) -> None:
    """``import graphtier`` and every module the steps use work with this machine's packages (a check); the
    versions, the device, and the optional packages missing here (what goes without them) are recorded."""
    missing = [name for name in declared_dependencies() if importlib.util.find_spec(name) is None]
    ctx.check("every declared dependency is installed", not missing, f"missing: {', '.join(missing) or 'none'}")
    failed = []
    for module in STEP_MODULES:
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - a row per module that does not import, then go on
            failed.append(f"{module}: {type(exc).__name__}: {exc}")
    ctx.check(f"import {', '.join(STEP_MODULES)}", not failed, "; ".join(failed)[:300] or "all imported")
    versions = {}
    for name in [*declared_dependencies(), *OPTIONAL]:
        if importlib.util.find_spec(name) is not None:
            versions[name] = package_version(name)
    ctx.save("versions", {"python": sys.version.split()[0], **versions})
    ctx.measured("packages", ", ".join(f"{k} {v}" for k, v in {"python": sys.version.split()[0], **versions}.items()))
    absent = [f"{name} ({use})" for name, use in OPTIONAL.items() if name not in versions]
    ctx.measured("optional packages missing here", "; ".join(absent) or "none")
    if ctx.on_gpu:
        props = torch.cuda.get_device_properties(ctx.device)
        ctx.measured("device", f"{props.name}, {props.total_memory / 2**30:.0f} GiB, sm_{props.major}{props.minor}, "
                     f"CUDA {torch.version.cuda}")  # fmt: skip


def package_version(module: str) -> str:
    """The version of the package that provides ``module``: its ``__version__``, else its distribution's metadata
    (rich has no ``__version__``), else "?"."""
    version = getattr(importlib.import_module(module), "__version__", None)
    if version is None:
        distributions = importlib.metadata.packages_distributions().get(module, [])
        version = importlib.metadata.version(distributions[0]) if distributions else "?"
    return str(version)


def gpu_test_files() -> list[str]:
    """The test files with GPU-marked tests (``@pytest.mark.gpu``), relative to the checkout: all of them cover
    the data path (registration, feature modes, topology, samplers, typed and link batches)."""
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py") if "mark.gpu" in p.read_text())


def pytest_gpu(ctx: StepContext) -> None:
    """``pytest -m gpu`` on the GPU test files (a check: they pass or not). Without pytest the step is skipped;
    without hypothesis the files that import it are left out (a skipped row says which)."""
    from gpu_checks import SkipStep

    if importlib.util.find_spec("pytest") is None:
        raise SkipStep("pytest is not installed on this machine (carry it as a wheel, see the device notes)")
    files = gpu_test_files()
    if importlib.util.find_spec("hypothesis") is None:
        needing = [f for f in files if "hypothesis" in (ROOT / f).read_text()]
        files = [f for f in files if f not in needing]
        ctx.emit(
            "pytest -m gpu: files importing hypothesis", "skipped", f"hypothesis not installed: {', '.join(needing)}"
        )
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-m", "gpu", "-p", "no:cacheprovider", *files],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    tallies = re.compile(r"\d+ (passed|failed|skipped|deselected|errors?)\b")
    lines = [line.strip("= ") for line in proc.stdout.splitlines() if tallies.search(line)]
    summary = f"{lines[-1] if lines else proc.stderr.strip()[-200:]} ({time.perf_counter() - started:.0f} s)"
    name = f"pytest -m gpu, {len(files)} files"
    if proc.returncode == 5 or (proc.returncode == 0 and " passed" not in summary):
        ctx.emit(name, "skipped", f"no GPU test ran: {summary}")
        return
    if proc.returncode != 0:
        print(proc.stdout[-4000:])
    ctx.check(name, proc.returncode == 0, summary)


def headline_gather(ctx: StepContext) -> None:
    """Seed 003's headline: the zero-copy gather of random rows against one pinned ``copy_`` of the same bytes
    (the PCIe ideal); the ratio is the figure. The rows read are checked against plain indexing first."""
    from graphtier.memory import make_feature_store

    device = ctx.device
    rng = np.random.default_rng(0)
    for row_bytes in (512, 4096):
        rows = ctx.sized(ctx.options["table_mib"] * 2**20 // row_bytes, 1024)
        table = rng.random((rows, row_bytes // 4), dtype=np.float32)
        reads = ctx.sized(min(2_000_000, (512 << 20) // row_bytes), 256)
        ids = torch.from_numpy(rng.integers(0, rows, reads))
        store = make_feature_store(table, "zero-copy", device=device, log=lambda _: None)
        try:
            got = store.gather(ids)
            ctx.check(f"zero-copy {row_bytes} B rows on {device.type} equal plain indexing",
                      bool(np.array_equal(got.cpu().numpy(), table[ids.numpy()])), f"{reads:,} rows")  # fmt: skip
            sync(device)
            start = time.perf_counter()
            for _ in range(5):
                store.gather(ids)
            sync(device)
            gather_gbps = 5 * reads * row_bytes / (time.perf_counter() - start) / 1e9
        finally:
            store.close()
        copy_gbps = _ideal_bandwidth(device, reads * row_bytes)
        ctx.save(f"headline {row_bytes}", {"reads": reads, "gather_gb_per_s": gather_gbps, "copy_gb_per_s": copy_gbps})
        ctx.measured(f"zero-copy gather, {reads:,} random rows of {row_bytes} B",
                     f"{gather_gbps:.2f} GB/s = {gather_gbps / copy_gbps:.2f} of one {'pinned ' if ctx.on_gpu else ''}"
                     f"copy_ of the same {reads * row_bytes / 1e6:.0f} MB ({copy_gbps:.2f} GB/s)")  # fmt: skip
