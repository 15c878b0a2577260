"""Where a dataset's bytes live: :class:`PlacementSpec` (feature mode, budgets, sampling device), validated once.

Budgets (see :mod:`graphtier.memory.plan.placement`) are bytes ("512MB", "2GiB"), a fraction ("0.1", "10%")
or "auto"; they are resolved against the device when the store opens.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from graphtier._checks import check_choice, check_int
from graphtier.errors import OptionError
from graphtier.memory.features.modes import FEATURE_MODES, make_feature_store, refuse_untaken
from graphtier.memory.features.source import FeatureSource
from graphtier.memory.plan.placement import Budget, parse_budget

BUDGET_FIELDS = ("gpu_budget", "cache_budget", "ram_budget", "topology_budget")
"""The budget options of a placement (bytes with a unit, a fraction of rows, a percentage or ``auto``)."""

SAMPLE_ON = ("cpu", "gpu")
"""Where neighbours are sampled: the numba CPU sampler, or the Triton sampler on a CUDA device."""

TABLES_ON = ("ram", "disk")
"""Where the learnable tables of featureless node types keep the rows outside their device prefix: host memory, or
unlinked scratch files on disk (the page cache holds what is read; :mod:`graphtier.train.nn.table_storage`)."""


@dataclass(frozen=True)
class PlacementSpec:
    """The placement of features and topology (the ``--features-on`` ... ``--topology-budget`` options).

    ``features_on``: a mode of :data:`graphtier.memory.FEATURE_MODES`; ``gpu_budget`` (the tiered modes),
    ``cache_budget`` (``tiered+cache``), ``ram_budget`` (rows kept in RAM; the tiered and zero-copy modes,
    and the host tier of a GPU-sampled topology) and ``peer_partitions`` (GPUs the hot tier is interleaved
    over) are refused by a mode that does not take them. ``sample_on``: "cpu" or "gpu"; ``topology_budget``
    tiers the graph for gpu sampling (with cpu sampling only "auto", meaning 0, is accepted). The budgets are
    parsed here into :class:`~graphtier.memory.plan.placement.Budget` values (text as given, bytes or a fraction), once.
    ``tables_on`` (:data:`TABLES_ON`): where learnable tables keep the rows not on the compute device (on a CPU run,
    every row with "disk"), in ``scratch_dir`` (default: the system's temporary directory).
    ``edge_features``: also gather the rows of the dataset's ``edge_feat.npy`` per batch (each block's
    ``edge_attr``), placed by the same mode and budgets (:mod:`graphtier.graphstore.edge_features`).
    """

    features_on: str = "cpu-gather"
    gpu_budget: Budget | None = None
    cache_budget: Budget | None = None
    ram_budget: Budget | None = None
    peer_partitions: int = 1
    sample_on: str = "cpu"
    topology_budget: Budget | None = None
    tables_on: str = "ram"
    scratch_dir: str | None = None
    edge_features: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.edge_features, bool):
            raise OptionError.invalid("edge_features", "True or False", self.edge_features)
        for name in BUDGET_FIELDS:  # parsed once, here; passed down as Budget values
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, parse_budget(value, name))
        check_choice("features_on", self.features_on, FEATURE_MODES)
        check_choice("sample_on", self.sample_on, SAMPLE_ON)
        check_choice("tables_on", self.tables_on, TABLES_ON)
        if self.scratch_dir is not None and self.tables_on != "disk":
            raise OptionError(f"{{scratch_dir}}: applies to {{tables_on=disk}}, found {{tables_on={self.tables_on}}}",
                              options=("scratch_dir", "tables_on"))  # fmt: skip
        if self.scratch_dir is not None and not os.path.isdir(self.scratch_dir):
            raise OptionError(f"{{scratch_dir}}: expected an existing directory, found {self.scratch_dir!r}",
                              options=("scratch_dir",))  # fmt: skip
        check_int("peer_partitions", self.peer_partitions)
        refuse_untaken(
            self.features_on,
            gpu_budget=self.gpu_budget, cache_budget=self.cache_budget,
            peer_partitions=self.peer_partitions, ram_budget=self.ram_budget,
        )  # fmt: skip
        # "auto" sizes the graph's GPU tier to the memory left; sampling on the CPU keeps the graph in host
        # memory, so auto is 0 there (as without CUDA) and only an explicit budget is a mistake
        budget = self.topology_budget
        if self.sample_on == "cpu" and budget is not None and str(budget).strip().lower() != "auto":
            raise OptionError(
                f"{{topology_budget}}: applies to {{sample_on=gpu}} only, found {budget!r} with {{sample_on=cpu}}",
                options=("topology_budget", "sample_on"),
            )

    def feature_store(
        self,
        table: np.ndarray,
        *,
        device: torch.device,
        ring_size: int,
        max_batch_rows: int | None,
        in_flight_bytes: int = 0,
        log: Callable[[str], None] = print,
    ) -> FeatureSource:
        """:func:`~graphtier.memory.features.modes.make_feature_store` of ``table`` (float32/float16 [N, D], RAM or memory
        map) in this placement's ``features_on`` mode with its GPU, cache and RAM budgets and peer partitions; the
        rows gathered on the compute ``device``, the other arguments those of ``make_feature_store``."""
        return make_feature_store(
            table, self.features_on, device=device, gpu_budget=self.gpu_budget, cache_budget=self.cache_budget,
            peer_partitions=self.peer_partitions, ram_budget=self.ram_budget, ring_size=ring_size,
            max_batch_rows=max_batch_rows, in_flight_bytes=in_flight_bytes, log=log,
        )  # fmt: skip

    def check_device(self, device: torch.device) -> None:
        """OptionError unless this placement can run on the compute ``device`` (gpu sampling needs CUDA)."""
        if self.sample_on == "gpu" and device.type != "cuda":
            if not torch.cuda.is_available():
                raise OptionError(
                    "{sample_on=gpu}: needs a CUDA device, and none is available on this machine (use {sample_on=cpu})",
                    options=("sample_on",),
                )
            raise OptionError(
                f"{{sample_on=gpu}}: needs {{device=cuda}}, found {{device={device}}}", options=("sample_on", "device")
            )
