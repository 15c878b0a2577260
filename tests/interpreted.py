"""Load a graphtier Triton kernel module interpreted on the CPU (``TRITON_INTERPRET=1``) under a private name.

TRITON_INTERPRET is set only while the module is imported, so GPU tests in the same process still get
compiled kernels from the real module. Triton itself is imported first, with TRITON_INTERPRET unset:
imported under it, all of triton.language's jit functions would be interpreted ones for the rest of the
process (compiled kernels would break, and Triton's gluon package asserts on them when imported later).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

HAS_TRITON = importlib.util.find_spec("triton") is not None
PACKAGE = Path(__file__).resolve().parents[1] / "graphtier"


def load_interpreted(relative_path: str) -> ModuleType:
    """graphtier/<relative_path> (e.g. "store/_triton_kernels.py") imported with TRITON_INTERPRET=1 (needs triton)."""
    name = "_graphtier_interpreted_" + relative_path.removesuffix(".py").replace("/", "_")
    if name in sys.modules:
        return sys.modules[name]
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
