"""Load a graphtier Triton kernel module interpreted on the CPU (``TRITON_INTERPRET=1``) under a private name.

TRITON_INTERPRET is set only while the module is imported, so GPU tests in the same process still
get compiled kernels from the real module.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType

import graphtier.store as store_package


def load_interpreted(file_name: str) -> ModuleType:
    """graphtier/store/<file_name> imported with TRITON_INTERPRET=1 as ``_graphtier_interpreted_<stem>``."""
    name = "_graphtier_interpreted_" + file_name.removesuffix(".py")
    if name in sys.modules:
        return sys.modules[name]
    path = os.path.join(os.path.dirname(store_package.__file__), file_name)
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
