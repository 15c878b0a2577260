"""graphtier: train GNNs on graphs whose features and topology do not fit in GPU memory."""

from graphtier.errors import DatasetError, GraphtierError, OptionError

__version__ = "0.1.0"

# Imported on first use (numba, torch), so that `graphtier --help` and `import graphtier.cli` start fast.
# Training itself is ``graphtier.train.train`` (``graphtier.train`` is the subpackage).
_LAZY = {
    "Dataset": "graphtier.dataset",
    "DatasetWriter": "graphtier.dataset",
    "TrainResult": "graphtier.train",
    "load_model": "graphtier.train",
    "predict": "graphtier.train",
}

__all__ = [
    "Dataset", "DatasetError", "DatasetWriter", "GraphtierError", "OptionError", "TrainResult", "__version__",
    "load_model", "predict",
]


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'graphtier' has no attribute {name!r}")
