"""Training: models, the sampling/gather pipeline, the trainer and its run report.

Names are loaded on first use (PEP 562, as :mod:`graphtier` does), so importing a light submodule
(:mod:`graphtier.train.config`, which checks the options) does not load the models and PyG.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "DistSpec": "graphtier.train.spec",
    "Loader": "graphtier.train.loader",
    "ModelSpec": "graphtier.train.spec",
    "OptimSpec": "graphtier.train.spec",
    "Predictions": "graphtier.train.predict",
    "RunSpec": "graphtier.train.spec",
    "SavedModel": "graphtier.train.saved",
    "TrainConfig": "graphtier.train.config",
    "TrainResult": "graphtier.train.result",
    "Trainer": "graphtier.train.trainer",
    "build_model": "graphtier.train.models",
    "load_model": "graphtier.train.saved",
    "parse_fanouts": "graphtier.train.config",
    "predict": "graphtier.train.predict",
    "save_model": "graphtier.train.saved",
    "train": "graphtier.train.trainer",
}

__all__ = [*_EXPORTS]

if TYPE_CHECKING:  # static analysers see the real names
    from graphtier.train.config import TrainConfig, parse_fanouts
    from graphtier.train.loader import Loader
    from graphtier.train.models import build_model
    from graphtier.train.predict import Predictions, predict
    from graphtier.train.result import TrainResult
    from graphtier.train.saved import SavedModel, load_model, save_model
    from graphtier.train.spec import DistSpec, ModelSpec, OptimSpec, RunSpec
    from graphtier.train.trainer import Trainer, train


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'graphtier.train' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """This package: a public name stays the function when the submodule of the same name is imported, and the
    package called is :func:`train`.

    Importing ``graphtier.train.predict`` (the module) binds it to the package's attribute ``predict``, which names
    the function :func:`~graphtier.train.predict.predict`; that binding is skipped, so ``graphtier.train.predict``
    is the function whichever is imported first (as with the eager imports this package had before)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """``graphtier.train(...)`` is :func:`~graphtier.train.trainer.train` also when this package was imported
        first (the import binds the package, not the function, to the name ``train`` of :mod:`graphtier`)."""
        return self.train(*args, **kwargs)


sys.modules[__name__].__class__ = _Package
