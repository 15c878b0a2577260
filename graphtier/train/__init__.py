"""Training: models, the sampling/gather pipeline, the trainer and its run report."""

from graphtier.train.config import TrainConfig, parse_fanouts
from graphtier.train.models import build_model
from graphtier.train.trainer import Trainer, train

__all__ = ["TrainConfig", "Trainer", "build_model", "parse_fanouts", "train"]
