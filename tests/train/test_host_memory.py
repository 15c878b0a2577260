"""keep_freed_memory: freed per-step tensors are reused without page faults (glibc only)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

glibc_only = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="mallopt is glibc's",
)

# Steps of varying size, like batches of a sampled epoch: each allocates, touches and frees two
# float32 tensors of [rows, 128] and [rows / 2, 128] (up to 30 MB), and reports its minor page faults.
_STEPS = r"""
import json, resource, sys, torch
import graphtier.train  # the trainer's modules loaded, as in a training process
from graphtier._host_memory import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "keep" else None
def step(rows):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    a = torch.empty(rows, 128); a.fill_(1.0); b = torch.empty(rows // 2, 128); b.fill_(2.0); del a, b
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
rows = [int(r) for r in sys.argv[2].split(",")]
print(json.dumps({"applied": applied, "faults": [step(r) for r in rows]}))
"""
BELOW_32MIB = "40000,50000,60000,30000,60000,45000,60000"
ABOVE_32MIB = "200000,150000,200000,120000,200000,180000,200000"  # [rows, 128] float32: 61-102 MB


def _run(mode: str, rows: str = BELOW_32MIB) -> dict:
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    done = subprocess.run(
        [sys.executable, "-c", _STEPS, mode, rows],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@glibc_only
def test_later_steps_fault_far_less_than_plain_glibc() -> None:
    kept, plain = _run("keep"), _run("plain")
    assert kept["applied"] is True
    # the steps up to the largest (60,000 rows, step 3) map new pages either way; afterwards plain glibc keeps
    # unmapping and re-faulting (measured: 3,750 + 7,500 + ... faults over steps 4-7) and the settings none
    assert sum(kept["faults"][3:]) < 0.1 * sum(plain["faults"][3:]), (kept["faults"], plain["faults"])


@glibc_only
def test_blocks_above_the_largest_mmap_threshold_are_reused_too() -> None:
    # glibc mmaps blocks above 32 MiB whatever the threshold says: with mmap off they come from the heap
    kept, plain = _run("keep", ABOVE_32MIB), _run("plain", ABOVE_32MIB)
    assert kept["applied"] is True
    assert sum(kept["faults"][1:]) < 0.1 * sum(plain["faults"][1:]), (kept["faults"], plain["faults"])


def test_idempotent_and_boolean() -> None:
    from graphtier._host_memory import keep_freed_memory

    first = keep_freed_memory()
    assert keep_freed_memory() is first
    assert isinstance(first, bool)
