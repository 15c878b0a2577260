"""The training options owned by the trainer, one frozen spec per concern, each validated once when built.

:class:`ModelSpec` (the network), :class:`OptimSpec` (the optimiser and epochs), :class:`DistSpec`
(multi-process runs) and :class:`RunSpec` (device, seed, evaluation cadence, threads, output files).
The sampler and placement specs live with their layers (:class:`graphtier.sampling.SamplerSpec`,
:class:`graphtier.memory.PlacementSpec`); :class:`graphtier.train.TrainConfig` is composed of all six.

Adding a training option is one field on the spec that owns it (checked in its ``__post_init__``), one
click option of the same name in ``graphtier/cli/train.py`` and a test: the CLI passes its options to
``TrainConfig(**options)``, which hands each to the spec with a field of that name, and the run report,
the checkpoint and the saved model record every field (``TrainConfig.to_dict``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

from graphtier._checks import check_choice, check_int, check_optional_int
from graphtier._choices import DEFAULT_NEGATIVE_SAMPLING, DEFAULT_NUM_NEGATIVES, LINK_TARGETS, TASK_NAMES
from graphtier._choices import NEGATIVE_SAMPLING as NEGATIVE_SAMPLING_NAMES
from graphtier.errors import OptionError
from graphtier.sampling.spec import SamplerSpec

HOMOGENEOUS_MODEL_NAMES = ("sage", "gcn", "gat", "gine")
"""The GNNs of one node type and one relation (:func:`graphtier.train.build_model`); refused on a typed dataset."""
TYPED_MODEL_NAMES = ("rgcn", "rgat", "hsage")
"""The typed GNNs (:func:`graphtier.train.nn.typed_models.build_typed_model`): any dataset, one relation or many."""
MODEL_NAMES = (*HOMOGENEOUS_MODEL_NAMES, "mlp", *TYPED_MODEL_NAMES)
"""Every ``--model``: ``mlp`` (features only; the target type's features on a typed dataset) runs on both."""
EDGE_INPUT_MODELS = ("gat", "gine", "rgat")
"""The models that read edge inputs (:mod:`graphtier.train.nn.time_encoding`): edge features and (GAT, GINE) a time
encoding. GINE needs them; GAT and R-GAT take them when the run has them and are the plain ones otherwise."""
TIME_ENCODING_MODELS = ("gat", "gine")
"""The models that read a time encoding of each edge's age (a temporal run of one relation)."""
FEATURELESS_MODES = ("embedding", "onehot", "zeros")
"""How a typed model feeds a node type without features (``--featureless``; see
:mod:`graphtier.train.nn.typed_models`)."""
NORM_NAMES = ("none", "batch", "layer")
GCN_DEGREES = ("full", "block")
"""How a sampled GCN block is normalised (:class:`graphtier.train.nn.models.BlockGCNConv`)."""
GCN_DEGREES_OPTIONS = ("auto", *GCN_DEGREES)
"""``gcn_degrees``: "auto" picks one of :data:`GCN_DEGREES` by how the final accuracy is measured."""
DECODER_NAMES = ("dot", "mlp")
"""How a link model scores a pair of embeddings (``--decoder``): dot product, or an MLP of their Hadamard product."""
BALANCE_MODES = ("dynamic", "static", "off")
"""Workload balancing of multi-process runs (:class:`graphtier.train.dist.balancer.LoadBalancer`)."""
SHARES_SUM_TOLERANCE = 1e-6


def check_gat_heads(hidden: int, heads: int) -> None:
    """OptionError unless GAT's ``hidden`` width splits evenly over its ``heads`` (the one place this is checked)."""
    if hidden % heads:
        raise OptionError(
            f"{{hidden={hidden}}} must be a multiple of {{heads={heads}}} for GAT", options=("hidden", "heads")
        )


def dataset_edge_dim(meta: dict[str, object]) -> int | None:
    """The width d_e of a dataset's edge features (its ``meta.json`` ``edge_features.dim``), None without them."""
    entry = meta.get("edge_features")
    dim = entry.get("dim") if isinstance(entry, dict) else None
    return int(dim) if isinstance(dim, int) and not isinstance(dim, bool) and dim > 0 else None


def check_edge_inputs(model: str, edge_dim: int | None, time_encoding: int, *, complete: bool = True) -> None:
    """OptionError (one line) for edge inputs (``edge_dim``, ``time_encoding``) of a model that reads none, and with
    ``complete`` (the run's edge inputs are known) for GINE without any (the one place both are checked)."""
    # edge_dim is no flag (the run sets it from the dataset): named as the field in both renderings
    for option, value, models in (("edge_dim", edge_dim, EDGE_INPUT_MODELS),
                                  ("time_encoding", time_encoding, TIME_ENCODING_MODELS)):  # fmt: skip
        if value and model not in models:
            named = f"edge_dim={value} (edge features)" if option == "edge_dim" else f"{{{option}={value}}}"
            raise OptionError(
                f"{named}: an edge input of {', '.join(models)} only, found {{model={model}}}",
                options=(option, "model"),
            )
    if complete and model == "gine" and not (edge_dim or time_encoding):
        raise OptionError(
            "{model=gine}: needs edge inputs: the dataset's edge features or {time_encoding=DIM} with {temporal}",
            options=("model", "time_encoding", "temporal"),
        )


@dataclass(frozen=True)
class ModelSpec:
    """The network: ``model`` (:data:`MODEL_NAMES`), depth ``layers`` (None: one per fanout), ``hidden`` width,
    GAT / R-GAT ``heads``, ``norm`` between layers, ``dropout``, and the GCN's ``gcn_degrees``
    (:data:`GCN_DEGREES_OPTIONS`; other models ignore it, as they ignore ``heads``). The typed models' options:
    ``featureless`` (:data:`FEATURELESS_MODES`) and R-GCN's ``num_bases`` (basis decomposition; 0 = none).

    Edge inputs (models of :data:`EDGE_INPUT_MODELS`): ``edge_dim``, the width d_e of the edge features the model
    reads (``Block.edge_attr`` [E, d_e]; None: none), is not a flag: the run sets it from the dataset's
    ``meta.json`` ``edge_features.dim`` when it feeds edge features, and it is recorded so that a saved model or a
    checkpoint rebuilds the same model. ``time_encoding``: the width of the time encoding of the edge ages of a
    temporal run (``--temporal``; 0 = off), learned from TGAT's initial frequencies, or kept at them with
    ``time_encoding_fixed``."""

    model: str = "sage"
    layers: int | None = None
    hidden: int = 256
    heads: int = 4
    norm: str = "none"
    gcn_degrees: str = "auto"
    dropout: float = 0.5
    featureless: str = "embedding"
    num_bases: int = 0
    edge_dim: int | None = None
    time_encoding: int = 0
    time_encoding_fixed: bool = False

    def __post_init__(self) -> None:
        check_choice("model", self.model, MODEL_NAMES)
        check_optional_int("edge_dim", self.edge_dim)
        check_int("time_encoding", self.time_encoding, minimum=0)
        if not isinstance(self.time_encoding_fixed, bool):
            raise OptionError.invalid("time_encoding_fixed", "True or False", self.time_encoding_fixed)
        check_choice("featureless", self.featureless, FEATURELESS_MODES)
        check_int("num_bases", self.num_bases, minimum=0)
        check_choice("norm", self.norm, NORM_NAMES)
        check_choice("gcn_degrees", self.gcn_degrees, GCN_DEGREES_OPTIONS)
        check_optional_int("layers", self.layers)
        check_int("hidden", self.hidden)
        check_int("heads", self.heads)
        if not 0.0 <= self.dropout < 1.0:
            raise OptionError.invalid("dropout", "a value in [0, 1)", self.dropout, show=False)
        if self.model in ("gat", "rgat"):
            check_gat_heads(self.hidden, self.heads)
        if self.num_bases and self.model != "rgcn":
            raise OptionError(
                f"{{num_bases={self.num_bases}}}: applies to {{model=rgcn}} only, found {{model={self.model}}}",
                options=("num_bases", "model"),
            )
        check_edge_inputs(self.model, self.edge_dim, self.time_encoding, complete=False)
        if self.time_encoding_fixed and not self.time_encoding:
            raise OptionError(
                "{time_encoding_fixed}: keeps the frequencies of a time encoding, found {time_encoding=0}",
                options=("time_encoding_fixed", "time_encoding"),
            )

    @property
    def edge_inputs(self) -> bool:
        """Whether the model reads edge inputs: edge features (``edge_dim``) or a time encoding."""
        return self.edge_dim is not None or self.time_encoding > 0

    @property
    def typed(self) -> bool:
        """Whether the model is one of the typed GNNs (:data:`TYPED_MODEL_NAMES`)."""
        return self.model in TYPED_MODEL_NAMES


@dataclass(frozen=True)
class TaskSpec:
    """The task (:data:`TASK_NAMES`) and what only link prediction uses: the pair ``decoder``
    (:data:`DECODER_NAMES`), ``num_negatives`` drawn per training positive and how (``negative_sampling``),
    and the K of the reported Hits@K (``hits_k``); ``link_target`` (:data:`LINK_TARGETS`, None: edge existence)
    trains on the edge split's edge-level targets instead, ``binary`` as ``label > link_threshold``."""

    task: str = "node"
    decoder: str = "dot"
    num_negatives: int = DEFAULT_NUM_NEGATIVES
    negative_sampling: str = DEFAULT_NEGATIVE_SAMPLING
    hits_k: int = 10
    link_target: str | None = None
    link_threshold: float = 0.0

    def __post_init__(self) -> None:
        check_choice("task", self.task, TASK_NAMES)
        if self.link_target is not None:
            check_choice("link_target", self.link_target, LINK_TARGETS)
            if self.task != "link":
                raise OptionError(
                    f"{{link_target={self.link_target}}}: applies to {{task=link}} only, found {{task={self.task}}}",
                    options=("link_target", "task"),
                )
        if isinstance(self.link_threshold, bool) or not isinstance(self.link_threshold, (int, float)):
            raise OptionError.invalid("link_threshold", "a number", self.link_threshold)
        if not math.isfinite(self.link_threshold):
            raise OptionError.invalid("link_threshold", "a finite number", self.link_threshold, show=False)
        if self.link_threshold != 0.0 and self.link_target != "binary":
            found = "none" if self.link_target is None else f"{{link_target={self.link_target}}}"
            raise OptionError(
                f"{{link_threshold={self.link_threshold:g}}}: applies to {{link_target=binary}} only, found {found}",
                options=("link_threshold", "link_target"),
            )
        check_choice("decoder", self.decoder, DECODER_NAMES)
        check_choice("negative_sampling", self.negative_sampling, NEGATIVE_SAMPLING_NAMES)
        check_int("num_negatives", self.num_negatives)
        check_int("hits_k", self.hits_k)


@dataclass(frozen=True)
class OptimSpec:
    """Adam's learning rate ``lr`` and ``weight_decay``, and the number of ``epochs``."""

    epochs: int = 10
    lr: float = 0.003
    weight_decay: float = 0.0

    def __post_init__(self) -> None:
        check_int("epochs", self.epochs)
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise OptionError.invalid("lr", "a finite number > 0", self.lr, show=False)
        if not (math.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise OptionError.invalid("weight_decay", "a finite number >= 0", self.weight_decay, show=False)


def check_device(option: str, text: str) -> str:
    """``text`` normalised if it names the CPU or an existing CUDA device (``cuda`` -> ``cuda:0`` for ``devices``)."""
    if text != "cpu" and not text.startswith("cuda"):
        raise OptionError.invalid(option, "cpu or cuda[:N]", text)
    if text.startswith("cuda"):
        if not torch.cuda.is_available():
            raise OptionError(f"{{{option}={text}}}: CUDA is not available on this machine", options=(option,))
        index = torch.device(text).index or 0
        if index >= torch.cuda.device_count():
            raise OptionError(
                f"{{{option}={text}}}: only {torch.cuda.device_count()} CUDA device(s) present", options=(option,)
            )
    return text


def parse_devices(text: str | Sequence[str]) -> tuple[str, ...]:
    """``"cpu,cuda:0"`` -> ``("cpu", "cuda:0")``; checks each entry names cpu or an existing CUDA device."""
    items = [str(d).strip() for d in (text.split(",") if isinstance(text, str) else text) if str(d).strip()]
    if not items:
        raise OptionError.invalid("devices", "a list like cpu,cuda:0", text)
    out = []
    for item in items:
        if item != "cpu" and not item.startswith("cuda"):
            raise OptionError.invalid("devices", "entries cpu or cuda[:N]", item)
        check_device("devices", item)
        out.append(item if item == "cpu" else f"cuda:{torch.device(item).index or 0}")
    return tuple(out)


def check_shares_sum(values: Sequence[float]) -> None:
    """Raise OptionError unless the shares sum to 1 (within 1e-6): they are not silently rescaled."""
    total = float(sum(values))
    if abs(total - 1.0) > SHARES_SUM_TOLERANCE:
        shares = ",".join(f"{v:g}" for v in values)
        raise OptionError(
            f"{{shares}} expected values summing to 1, found {shares} (sum {total:g})", options=("shares",)
        )


def parse_shares(text: str | Sequence[float]) -> tuple[float, ...]:
    """``"0.3,0.7"`` (or a sequence) -> ``(0.3, 0.7)``: one positive number per rank, summing to 1."""
    values = []
    for part in [p.strip() for p in text.split(",") if p.strip()] if isinstance(text, str) else list(text):
        try:
            values.append(float(part))
        except (TypeError, ValueError):
            raise OptionError.invalid("shares", "numbers like 0.3,0.7", part) from None
    if not values or any(not v > 0 for v in values):
        raise OptionError.invalid("shares", "positive numbers like 0.3,0.7", text)
    check_shares_sum(values)
    return tuple(values)


@dataclass(frozen=True)
class DistSpec:
    """Multi-process runs: ``devices`` (one trainer process each; None: one process), their workload
    ``balance`` (:data:`BALANCE_MODES`), starting shares (``cpu_share`` of the CPU ranks, or ``shares``
    of every rank), ``rebalance_every`` iterations, ``cpu_threads`` per rank and ``workload_samples``."""

    devices: tuple[str, ...] | None = None
    balance: str = "dynamic"
    cpu_share: float | None = None
    shares: tuple[float, ...] | None = None
    rebalance_every: int = 10
    cpu_threads: int | None = None
    workload_samples: int = 3

    def __post_init__(self) -> None:
        if self.devices is not None:
            object.__setattr__(self, "devices", parse_devices(self.devices))
        check_choice("balance", self.balance, BALANCE_MODES)
        if self.cpu_share is not None and not 0.0 < self.cpu_share < 1.0:
            raise OptionError.invalid("cpu_share", "a value in (0, 1)", self.cpu_share, show=False)
        if self.shares is not None:
            object.__setattr__(self, "shares", parse_shares(self.shares))
            if self.devices is None or len(self.shares) != len(self.devices):
                raise OptionError(
                    f"{{shares}} expected one value per {{devices}} entry ({len(self.devices or ())}), "
                    f"found {len(self.shares)}",
                    options=("shares", "devices"),
                )
        check_int("rebalance_every", self.rebalance_every)
        check_int("workload_samples", self.workload_samples)
        check_optional_int("cpu_threads", self.cpu_threads)


@dataclass(frozen=True)
class RunSpec:
    """The run itself: compute ``device``, ``seed``, evaluation every ``eval_every`` epochs and
    ``full_inference`` for the final accuracy, ``num_threads`` and ``prefetch`` depth, the output files
    (``checkpoint`` directory, ``report`` JSON, ``save_model``) and ``quiet``."""

    seed: int = 0
    device: str = "cpu"
    eval_every: int = 1
    full_inference: bool = False
    num_threads: int | None = None
    prefetch: int = 4
    checkpoint: str | None = None
    report: str | None = None
    save_model: str | None = None
    quiet: bool = False

    def __post_init__(self) -> None:
        check_int("seed", self.seed, minimum=0)
        if self.device != "cpu" and not str(self.device).startswith("cuda"):
            raise OptionError.invalid("device", "cpu or cuda[:N]", self.device)
        check_int("eval_every", self.eval_every)
        check_optional_int("num_threads", self.num_threads)
        check_int("prefetch", self.prefetch, minimum=0)


class RunParts(Protocol):
    """The parts of a run's options a check reads before the run: what :class:`graphtier.train.TrainConfig` holds,
    named here (below it) so that the checks it calls need not import it back."""

    @property
    def objective(self) -> TaskSpec: ...

    @property
    def network(self) -> ModelSpec: ...

    @property
    def sampling(self) -> SamplerSpec: ...

    @property
    def distributed(self) -> DistSpec: ...
