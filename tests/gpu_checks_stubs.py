"""Stub steps for tests/test_gpu_checks.py: run by the harness in a subprocess, so they import nothing heavy."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any


def passes(ctx: Any) -> None:
    ctx.check("stub check", True, "reference matched")
    ctx.measured("stub figure", "1.0 GB/s")
    ctx.save("figures", {"gb_per_s": 1.0})


def hangs(ctx: Any) -> None:
    ctx.measured("measured before the hang", "2.0 GB/s")
    time.sleep(120)


def dies(ctx: Any) -> None:
    ctx.measured("measured before the crash", "3.0 GB/s")
    os.abort()  # as a sticky CUDA error or a segfault would end the process


def needs_input(ctx: Any) -> None:
    from gpu_checks import SkipStep

    path = Path(ctx.options["root"]) / "no-such-input" / "graph.npz"
    if not path.exists():
        raise SkipStep(f"input {path} not found")
