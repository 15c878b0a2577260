"""Training configuration: :class:`TrainConfig`, composed of one validated spec per concern.

Options are parsed once, where the spec that owns them is built (:mod:`graphtier.train.options.spec`,
:class:`graphtier.sampling.SamplerSpec`, :class:`graphtier.memory.PlacementSpec`), and passed down
unchanged; :meth:`TrainConfig.validate` adds what needs the dataset and the machine.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from graphtier.dataset import Dataset
from graphtier.dataset.edges.node_time import target_node_times
from graphtier.dataset.outputs import check_outputs
from graphtier.dataset.resources import human_bytes, require_memory
from graphtier.errors import OptionError, ResourceError
from graphtier.memory import PlacementSpec
from graphtier.sampling import Fanouts, SamplerSpec
from graphtier.sampling.fanouts import MAX_FANOUT  # noqa: F401 - re-exported (tests, older callers)
from graphtier.sampling.spec import SAMPLER_NAMES  # noqa: F401 - re-exported
from graphtier.train.options.gat_memory import gat_training_bytes
from graphtier.train.options.output_files import CHECKPOINT_FILE
from graphtier.train.options.spec import (  # noqa: F401 - GCN_DEGREES_OPTIONS and check_shares_sum re-exported
    EDGE_INPUT_MODELS,
    GCN_DEGREES_OPTIONS,
    DistSpec,
    ModelSpec,
    OptimSpec,
    RunSpec,
    TaskSpec,
    check_device,
    check_edge_inputs,
    check_shares_sum,
    dataset_edge_dim,
)
from graphtier.train.options.typed_checks import check_typed_run

# TrainConfig's parts: attribute name -> the spec that owns those options
SPECS: dict[str, type] = {
    "objective": TaskSpec,
    "network": ModelSpec,
    "sampling": SamplerSpec,
    "optim": OptimSpec,
    "placement": PlacementSpec,
    "distributed": DistSpec,
    "run": RunSpec,
}
# option name (a field of one spec, the CLI flag without "--") -> the part that owns it
OPTION_OWNER: dict[str, str] = {field.name: part for part, spec in SPECS.items() for field in fields(spec)}


def parse_fanouts(text: str, option: str = "fanouts") -> Fanouts:
    """``"25,10"`` -> ``(25, 10)`` (:meth:`graphtier.sampling.Fanouts.parse`, the one fanout parser)."""
    return Fanouts.parse(text, option)


def split_options(options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Flat options (``fanouts=..., lr=...``) grouped by the part of :class:`TrainConfig` that owns each;
    TypeError for a name no spec has."""
    grouped: dict[str, dict[str, Any]] = {part: {} for part in SPECS}
    for name, value in options.items():
        if name not in OPTION_OWNER:
            raise TypeError(f"TrainConfig got an unexpected option {name!r}")
        grouped[OPTION_OWNER[name]][name] = value
    return grouped


def require_edge_targets(dataset: Dataset, kind: str) -> None:
    """:class:`OptionError` (naming ``--link-target``) unless ``dataset``'s edge split has edge-level targets."""
    if dataset.link is None or not isinstance(dataset.link.meta.get("label"), dict):
        raise OptionError(
            f"{dataset.path}: {{link_target={kind}}} needs edge-level targets (link_train_label.npy and "
            "meta.json 'link.label', e.g. prepare movielens), found none", options=("link_target",),
        )  # fmt: skip


def check_seeds_have_a_past(dataset: Dataset, train_idx: np.ndarray) -> None:
    """OptionError when every training node's time (``node_time.npy``) is before the earliest edge time (the
    ``edge_time`` entry of ``meta.json``): a temporal run would sample no neighbour for any seed, the sign of node and
    edge times in different units (years against seconds). ``train_idx``: int [B], local ids of the target type."""
    first = (dataset.meta.get("edge_time") or {}).get("min")
    if dataset.node_time is None or first is None or len(train_idx) == 0:
        return
    latest = int(target_node_times(dataset.node_time, dataset.schema, train_idx).max())
    if latest < int(first):
        units = [(dataset.meta.get(key) or {}).get("unit") or "no unit" for key in ("node_time", "edge_time")]
        raise OptionError(
            f"{dataset.path}/node_time.npy: expected training nodes at or after the earliest edge time {first} "
            f"({units[1]}, edge_time.npy), found every one before it (the latest {latest}, {units[0]}): {{temporal}} "
            "would sample no neighbour; are node and edge times in the same unit?", options=("temporal",),
        )  # fmt: skip


@dataclass(frozen=True, init=False)
class TrainConfig:
    """Everything that defines a training run (recorded in the run report and the checkpoint).

    Composed of ``objective`` (:class:`TaskSpec`: node classification or link prediction), ``network`` (:class:`ModelSpec`), ``sampling`` (:class:`SamplerSpec`), ``optim``
    (:class:`OptimSpec`), ``placement`` (:class:`PlacementSpec`), ``distributed`` (:class:`DistSpec`) and
    ``run`` (:class:`RunSpec`). Build it from the parts, from flat options (``TrainConfig(model="gcn",
    fanouts=(10, 5))``: each goes to the spec with a field of that name), or both (the options replace
    fields of the given parts). Every part validates its own options when built.

    ``fanouts`` lists the first hop from the seeds first (PyG order). ``layers`` is the model depth:
    for the neighbour sampler it must equal ``len(fanouts)`` (None means that); the ShaDow sampler
    and the MLP accept any depth. ``gcn_degrees`` (``auto``, ``full`` or ``block``) picks the GCN's
    normalisation of sampled blocks (:class:`graphtier.train.nn.models.BlockGCNConv`, :attr:`gcn_degrees_used`).
    """

    objective: TaskSpec
    network: ModelSpec
    sampling: SamplerSpec
    optim: OptimSpec
    placement: PlacementSpec
    distributed: DistSpec
    run: RunSpec

    def __init__(
        self,
        network: ModelSpec | None = None,
        sampling: SamplerSpec | None = None,
        optim: OptimSpec | None = None,
        placement: PlacementSpec | None = None,
        distributed: DistSpec | None = None,
        run: RunSpec | None = None,
        objective: TaskSpec | None = None,
        **options: Any,
    ) -> None:
        given = {"objective": objective, "network": network, "sampling": sampling, "optim": optim, "placement": placement,
                 "distributed": distributed, "run": run}  # fmt: skip
        for part, overrides in split_options(options).items():
            spec = given[part]
            if spec is None:
                spec = SPECS[part](**overrides)
            elif overrides:
                spec = replace(spec, **overrides)
            object.__setattr__(self, part, spec)
        self._check_across_parts()

    def with_options(self, **options: Any) -> TrainConfig:
        """A copy with the flat ``options`` replaced (``dataclasses.replace`` on the parts that own them)."""
        return TrainConfig(**{part: getattr(self, part) for part in SPECS}, **options)

    def _check_across_parts(self) -> None:
        network, sampling, placement = self.network, self.sampling, self.placement
        fanouts = sampling.fanouts
        if sampling.sampler == "neighbor" and network.model != "mlp" and network.layers not in (None, len(fanouts)):
            raise OptionError(
                f"{{layers={network.layers}}} must equal the number of fanouts ({len(fanouts)}) "
                "with the neighbour sampler",
                options=("layers",),
            )
        if placement.sample_on == "gpu" and sampling.sampler != "neighbor":
            raise OptionError(
                f"{{sample_on=gpu}}: runs the neighbour sampler only, found {{sampler={sampling.sampler}}}",
                options=("sample_on", "sampler"),
            )
        if placement.sample_on == "gpu" and self.distributed.devices is not None:
            raise OptionError(
                "{sample_on=gpu}: not available with {devices} (multi-process runs sample on the CPU)",
                options=("sample_on", "devices"),
            )
        if network.time_encoding and sampling.temporal is None:
            raise OptionError(
                f"{{time_encoding={network.time_encoding}}}: encodes the edge ages of a temporal run, found no "
                "{temporal} (--temporal uniform|recent)",
                options=("time_encoding", "temporal"),
            )
        if placement.edge_features:
            for option, value, allowed in (("sampler", sampling.sampler, "neighbor"), ("devices",
                                           self.distributed.devices, None), ("full_inference",
                                           self.run.full_inference, False)):  # fmt: skip
                if value != allowed:
                    raise OptionError(
                        "{edge_features}: feeds the edges of neighbour-sampled blocks in one process, without "
                        f"layer-wise inference, for now, found {{{option}={value}}}", options=("edge_features", option),
                    )  # fmt: skip
        if sampling.temporal is not None:
            for option, value, allowed in (("devices", self.distributed.devices, None), ("sampler",
                                           sampling.sampler, "neighbor"), ("full_inference",
                                           self.run.full_inference, False)):  # fmt: skip
                if value != allowed:
                    raise OptionError(
                        f"{{temporal}}: samples with the neighbour sampler in one process, and scores by "
                        f"sampling at each seed's time, found {{{option}={value}}}", options=("temporal", option),
                    )  # fmt: skip

    @property
    def num_layers(self) -> int:
        """The model depth: ``layers``, or one layer per fanout."""
        return self.network.layers if self.network.layers is not None else len(self.sampling.fanouts)

    @property
    def gcn_degrees_used(self) -> str:
        """``full`` or ``block``: the GCN normalisation this run trains with.

        ``auto`` means ``full`` with ``--full-inference`` and ``block`` otherwise: measured
        (docs/decisions.md), a model trained with full-graph degrees is the better one under exact
        inference (+0.6 points on Cora, +1 on the bench graph), while under sampled evaluation its
        estimate is noisy and block degrees won by 5-11 points on the bench graph.
        """
        if self.network.gcn_degrees != "auto":
            return self.network.gcn_degrees
        return "full" if self.run.full_inference else "block"

    def to_dict(self) -> dict[str, Any]:
        """Every option under its flat name (the keys of the run report, the checkpoint and the saved model),
        tuples as lists, text as plain ``str`` (``fanouts_per_relation``), ``gcn_degrees`` as used (never "auto") and
        ``num_layers``."""
        out: dict[str, Any] = {}
        for part in SPECS:
            for name, value in asdict(getattr(self, part)).items():
                # plain types only: the checkpoint is read back without unpickling classes
                out[name] = list(value) if isinstance(value, tuple) else str(value) if isinstance(value, str) else value
        out["gcn_degrees"] = self.gcn_degrees_used  # the record says what ran, never "auto"
        out["num_layers"] = self.num_layers
        return out

    def validate(self, dataset: Dataset) -> None:
        """Raise :class:`OptionError` (one line) for any option that cannot work with ``dataset`` on this machine
        (the options themselves were checked when the parts were built)."""
        device = torch.device(check_device("device", self.run.device))
        self.placement.check_device(device)
        check_typed_run(self, dataset)
        if self.objective.task == "link":
            self.validate_link(dataset)
        else:
            self.validate_node(dataset)
        self.validate_edge_inputs(dataset)
        self.check_outputs(dataset)
        if self.network.model == "gat" and self.sampling.sampler == "neighbor":
            self.check_gat_memory(dataset)

    def with_edge_features(self, dataset: Dataset) -> TrainConfig:
        """A copy whose model reads ``dataset``'s edge features: ``edge_dim`` set from its ``meta.json``
        ``edge_features.dim`` (OptionError naming ``model`` when the dataset has none)."""
        dim = dataset_edge_dim(dataset.meta)
        if dim is None:
            raise OptionError(
                f"{dataset.path}: has no edge features (meta.json edge_features, edge_feat.npy) for {{model={self.network.model}}}",
                options=("model",),
            )
        return self.with_options(edge_dim=dim)

    def for_dataset(self, dataset: Dataset) -> TrainConfig:
        """This config with what ``dataset`` decides: with ``edge_features`` and no ``edge_dim`` yet, the model reads
        the dataset's edge table (:meth:`with_edge_features`); else unchanged."""
        if not self.placement.edge_features or self.network.edge_dim is not None:
            return self
        if dataset_edge_dim(dataset.meta) is None:
            raise OptionError(
                f"{{edge_features}}: {dataset.path} has no edge_feat.npy (edge features); generate one with "
                "--edge-feature-dim or import edge feature columns", options=("edge_features",),
            )  # fmt: skip
        if self.network.model not in EDGE_INPUT_MODELS:
            raise OptionError(
                f"{{edge_features}}: the model {self.network.model} reads no edge features (models with edge inputs: "
                f"{', '.join(EDGE_INPUT_MODELS)})", options=("edge_features", "model"),
            )  # fmt: skip
        return self.with_edge_features(dataset)

    def validate_edge_inputs(self, dataset: Dataset) -> None:
        """The model's edge inputs against ``dataset`` and the run: ``edge_dim`` equal to the dataset's edge-feature
        width, GINE with some edge input, and no exact layer-wise inference (it reads no edge inputs)."""
        network = self.network
        if network.edge_dim is not None and network.edge_dim != dataset_edge_dim(dataset.meta):
            found = dataset_edge_dim(dataset.meta)
            raise OptionError(
                f"{dataset.path}: edge_dim={network.edge_dim} expected the width of the dataset's edge features "
                f"(meta.json edge_features.dim), found {found if found is not None else 'none'}"
            )  # fmt: skip
        check_edge_inputs(network.model, network.edge_dim, network.time_encoding)
        if network.edge_inputs and self.run.full_inference:
            raise OptionError(
                f"{{full_inference}}: exact layer-wise inference reads no edge inputs, and {{model={network.model}}} "
                "reads edge features or a time encoding; it is evaluated by sampling (the default)",
                options=("full_inference", "model"),
            )  # fmt: skip

    def validate_link(self, dataset: Dataset) -> None:
        """Link prediction needs features, the edge split's training pairs and the neighbour sampler."""
        path = dataset.path
        require_link_split(dataset)
        if self.objective.link_target is not None:
            require_edge_targets(dataset, self.objective.link_target)
        if dataset.features is None and not dataset.is_hetero:  # typed: featureless types have learnable tables
            raise OptionError(
                f"{path}: dataset has no features (feature_dim 0); re-import it with {{synthetic_features=DIM}}",
                options=("synthetic_features",),
            )
        if self.sampling.sampler != "neighbor":
            raise OptionError(
                f"{{task=link}}: trains with the neighbour sampler only, found {{sampler={self.sampling.sampler}}}",
                options=("task", "sampler"),
            )
        split_by = dataset.link.meta.get("split_by", "random") if dataset.link is not None else "random"
        if self.sampling.temporal is not None and split_by != "time":
            raise OptionError(
                f"{path}: {{temporal}} needs a time split (prepare it with --time-column, or a relation's time, and "
                f"--split-by time), found a {split_by} split", options=("temporal",),
            )  # fmt: skip
        if split_by == "time" and (self.run.full_inference or self.distributed.devices is not None):
            option = "full_inference" if self.run.full_inference else "devices"
            raise OptionError(
                f"{path}: a time split is scored by sampling at each pair's time (its graph holds the future), "
                f"so {{{option}}} is not available", options=(option,),
            )  # fmt: skip

    def validate_node(self, dataset: Dataset) -> None:
        """Node classification needs labels, features and a train split."""
        path = dataset.path
        if dataset.num_classes == 0 or dataset.labels is None:
            raise OptionError(f"{path}: dataset has no labels (num_classes 0); training needs labels")
        if dataset.features is None and not dataset.is_hetero:  # typed: checked by check_typed_run
            raise OptionError(
                f"{path}: dataset has no features (feature_dim 0); re-import it with {{synthetic_features=DIM}}",
                options=("synthetic_features",),
            )
        train_idx = dataset.train_idx
        if train_idx is None or len(train_idx) == 0:
            raise OptionError(
                f"{path}: dataset has no train split (train_idx.npy); re-import it with {{split}}", options=("split",)
            )
        if dataset.labels is not None and (dataset.labels[train_idx] < 0).any():
            raise OptionError(f"{path}/labels.npy: expected labels >= 0 for every train node, found -1")
        if self.sampling.temporal is not None and (dataset.node_time is None or dataset.edge_time is None):
            missing = "node times (node_time.npy)" if dataset.node_time is None else "edge times (edge_time.npy)"
            raise OptionError(
                f"{path}: {{temporal}} with {{task=node}} samples each seed at its node's time and needs node and "
                f"edge times, found no {missing} (prepare ogb reads them from raw/node_year)", options=("temporal", "task"),
            )  # fmt: skip
        if self.sampling.temporal is not None:
            check_seeds_have_a_past(dataset, train_idx)

    def check_gat_memory(self, dataset: Dataset) -> None:
        """Raise :class:`ResourceError` when GAT's per-edge attention tensors of the largest mini-batch that
        ``--batch-size`` and ``--fanouts`` can draw on ``dataset`` (:func:`gat_training_bytes`) exceed the
        memory of ``--device`` (available RAM on the CPU, free memory on a GPU)."""
        sampling, network = self.sampling, self.network
        needed = gat_training_bytes(
            sampling.batch_size * (2 + self.objective.num_negatives if self.objective.task == "link" else 1),
            sampling.fanouts, dataset.in_degrees(), network.hidden, network.heads,
            network.hidden if self.objective.task == "link" else dataset.num_classes,
            (network.edge_dim or 0) + network.time_encoding,
        )  # fmt: skip
        what = (
            f"{{model=gat}} with {{batch_size={sampling.batch_size}}} {{fanouts={sampling.fanouts}}} "
            f"{{hidden={network.hidden}}} {{heads={network.heads}}} (attention tensors of the largest mini-batch these "
            "can sample; lower the fanouts or the batch size)"
        )
        options = ("model", "batch_size", "fanouts", "hidden", "heads")
        device = torch.device(self.run.device)
        if device.type != "cuda":
            require_memory(needed, what, options=options)
            return
        free = int(torch.cuda.mem_get_info(device)[0])
        if needed > free:
            raise ResourceError(
                f"{what}: needs about {human_bytes(needed)} ({needed:,} bytes) of GPU memory, "
                f"only {human_bytes(free)} free on {device}",
                options=options,
            )

    def check_outputs(self, dataset: Dataset) -> None:
        """Raise :class:`OptionError` unless ``--checkpoint``, ``--report`` and ``--save-model`` can be written
        (distinct paths, none of them a file of ``dataset``): checked before training, not after it."""
        run = self.run
        checkpoint_file = None if run.checkpoint is None else Path(run.checkpoint) / CHECKPOINT_FILE
        check_outputs(
            [
                ("checkpoint", run.checkpoint, "dir"),
                ("checkpoint", checkpoint_file, "file"),
                ("report", run.report, "file"),
                ("save_model", run.save_model, "file"),
            ],
            dataset=dataset.path,
        )


def require_link_split(dataset: Dataset) -> None:
    """Raise :class:`OptionError` (naming ``task``) unless ``dataset`` has an edge split with training pairs."""
    if dataset.link is None or dataset.link.pairs("train").num_positives == 0:
        raise OptionError(
            f"{dataset.path}: {{task=link}} needs a dataset with an edge split (link_train.npy), found none; "
            "prepare it with --edge-split TRAIN,VALID,TEST",
            options=("task",),
        )
