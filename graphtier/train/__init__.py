"""Training: models, the sampling/gather pipeline, the trainer and its run report.

Six sub-packages, each importing only those before it: :mod:`~graphtier.train.options` (the options),
:mod:`~graphtier.train.nn` (layers, models, kernels), :mod:`~graphtier.train.persist` (saved models, checkpoints),
:mod:`~graphtier.train.infer` (layer-wise inference, predict), :mod:`~graphtier.train.dist` (collectives, torchrun,
balancer) and :mod:`~graphtier.train.loop` (pipeline, feed, tasks, evaluation, trainer, loader, launch).

Names are loaded on first use (PEP 562, as :mod:`graphtier` does), so importing a light submodule
(:mod:`graphtier.train.options.config`, which checks the options) does not load the models and PyG.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "DistSpec": "graphtier.train.options.spec",
    "Loader": "graphtier.train.loop.loader",
    "ModelSpec": "graphtier.train.options.spec",
    "OptimSpec": "graphtier.train.options.spec",
    "Predictions": "graphtier.train.infer.predict",
    "RunSpec": "graphtier.train.options.spec",
    "SavedModel": "graphtier.train.persist.saved",
    "TrainConfig": "graphtier.train.options.config",
    "TrainResult": "graphtier.train.loop.result",
    "Trainer": "graphtier.train.loop.trainer",
    "build_model": "graphtier.train.nn.models",
    "load_model": "graphtier.train.persist.saved",
    "parse_fanouts": "graphtier.train.options.config",
    "predict": "graphtier.train.infer.predict",
    "save_model": "graphtier.train.persist.saved",
    "train": "graphtier.train.loop.trainer",
}

__all__ = [*_EXPORTS]

if TYPE_CHECKING:  # static analysers see the real names
    from graphtier.train.infer.predict import Predictions, predict
    from graphtier.train.loop.loader import Loader
    from graphtier.train.loop.result import TrainResult
    from graphtier.train.loop.trainer import Trainer, train
    from graphtier.train.nn.models import build_model
    from graphtier.train.options.config import TrainConfig, parse_fanouts
    from graphtier.train.options.spec import DistSpec, ModelSpec, OptimSpec, RunSpec
    from graphtier.train.persist.saved import SavedModel, load_model, save_model


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
    """This package, callable: ``graphtier.train(...)`` is :func:`~graphtier.train.loop.trainer.train` also when
    this package was imported first (the import binds the package, not the function, to the name ``train`` of
    :mod:`graphtier`)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.train(*args, **kwargs)


sys.modules[__name__].__class__ = _Package
