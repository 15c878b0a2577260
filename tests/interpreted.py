"""Load a graphtier Triton kernel module interpreted on the CPU (``TRITON_INTERPRET=1``) under a private name.

TRITON_INTERPRET is set only while the module is imported, so GPU tests in the same process still get
compiled kernels from the real module. Triton itself is imported first, with TRITON_INTERPRET unset:
imported under it, all of triton.language's jit functions would be interpreted ones for the rest of the
process (compiled kernels would break, and Triton's gluon package asserts on them when imported later).

Where the installed Triton's interpreter cannot run graphtier's kernels (:func:`interpreter_skip_reason`:
Triton < 3.8 with NumPy >= 2.4), :func:`load_interpreted` returns a stand-in module instead: the first
use of any of its attributes skips the test with the reason, so the tests that need compiled kernels
(CUDA) or no kernels in the same files still run.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import numpy as np
import pytest
from packaging.version import Version

HAS_TRITON = importlib.util.find_spec("triton") is not None
PACKAGE = Path(__file__).resolve().parents[1] / "graphtier"


def interpreter_skip_reason(triton_version: str | None, numpy_version: str) -> str | None:
    """Why the Triton interpreter of ``triton_version`` (None: not installed) cannot run graphtier's kernels
    with NumPy ``numpy_version``, or None when it can.

    Triton's interpreter before 3.8 fails on our kernels with NumPy >= 2.4 (22 tests failed with Triton 3.6
    and NumPy 2.5); Triton 3.8+ runs them.
    """
    if triton_version is None:
        return "needs triton"
    triton_release = Version(triton_version).release[:2]
    numpy_release = Version(numpy_version).release[:2]
    if triton_release < (3, 8) and numpy_release >= (2, 4):
        return (
            f"the Triton {triton_version} interpreter cannot run graphtier's kernels with NumPy {numpy_version} "
            "(expected Triton >= 3.8 or NumPy < 2.4)"
        )
    return None


INTERPRETER_SKIP_REASON = interpreter_skip_reason(
    importlib.metadata.version("triton") if HAS_TRITON else None, np.__version__
)


class _CannotInterpret(ModuleType):
    """Stands in for an interpreted kernel module: using any attribute skips the test with ``reason``."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(name)
        self.reason = reason

    def __getattr__(self, attribute: str) -> NoReturn:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        pytest.skip(self.reason)


def load_interpreted(relative_path: str) -> ModuleType:
    """graphtier/<relative_path> (e.g. "memory/features/_triton_kernels.py") imported with TRITON_INTERPRET=1 (needs triton);
    a stand-in that skips where the installed Triton cannot interpret the kernels (see the module docstring)."""
    name = "_graphtier_interpreted_" + relative_path.removesuffix(".py").replace("/", "_")
    if name in sys.modules:
        return sys.modules[name]
    if INTERPRETER_SKIP_REASON is not None and HAS_TRITON:
        return _CannotInterpret(name, INTERPRETER_SKIP_REASON)
    importlib.import_module("triton.language")
    spec = importlib.util.spec_from_file_location(name, PACKAGE / relative_path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    previous = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        spec.loader.exec_module(module)
    finally:
        if previous is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = previous
    sys.modules[name] = module
    return module
