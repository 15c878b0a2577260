"""The device sampler's Triton kernels run on the CPU: the module loaded with TRITON_INTERPRET=1.

The interpreted copy is imported under a private name with TRITON_INTERPRET=1 set only while it is
imported, so GPU tests in the same process still get the compiled kernels.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from types import ModuleType

import graphtier.sampling as sampling_package

HAS_TRITON = importlib.util.find_spec("triton") is not None


def load_interpreted_device_kernels() -> ModuleType:
    """graphtier/sampling/_device_kernels.py imported with TRITON_INTERPRET=1 as a private module (needs triton)."""
    name = "_graphtier_device_kernels_interpreted"
    if name in sys.modules:
        return sys.modules[name]
    # Triton itself is imported first, with TRITON_INTERPRET unset: imported under it, all of
    # triton.language's jit functions would be interpreted ones for the rest of the process (compiled
    # kernels would break, and Triton's gluon package asserts on them when it is imported later).
    importlib.import_module("triton.language")
    path = os.path.join(os.path.dirname(sampling_package.__file__), "_device_kernels.py")
    spec = importlib.util.spec_from_file_location(name, path)
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
