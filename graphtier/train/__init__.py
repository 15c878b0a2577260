"""Training: models, the sampling/gather pipeline, the trainer and its run report."""

from graphtier.train.config import TrainConfig, parse_fanouts
from graphtier.train.models import build_model
from graphtier.train.predict import Predictions, predict
from graphtier.train.result import TrainResult
from graphtier.train.saved import SavedModel, load_model, save_model
from graphtier.train.spec import DistSpec, ModelSpec, OptimSpec, RunSpec
from graphtier.train.trainer import Trainer, train

__all__ = [
    "DistSpec",
    "ModelSpec",
    "OptimSpec",
    "Predictions",
    "RunSpec",
    "SavedModel",
    "TrainConfig",
    "TrainResult",
    "Trainer",
    "build_model",
    "load_model",
    "parse_fanouts",
    "predict",
    "save_model",
    "train",
]
