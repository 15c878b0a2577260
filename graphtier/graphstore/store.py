"""GraphStore: one object for a dataset's topology and features, spread over GPU memory, host RAM and disk.

In the spirit of XGNN's global memory store (its ``DistGraph``): the caller opens a dataset
once with its budgets and then only asks for samples and rows; where each byte lives (a GPU prefix of
the hotness-sorted table, zero-copy host memory, the memory map) is the store's business, and
``traffic()`` says afterwards which tier served how many bytes, for features and topology apart::

    placement = PlacementSpec(features_on="tiered", gpu_budget="8GB", sample_on="gpu",
                              topology_budget="auto", ram_budget="auto")
    store = GraphStore.open("data/big", placement, device="cuda")
    batch = store.sample(seeds, fanouts=[15, 10, 5])      # MiniBatch on the sampling device
    x = store.gather(batch.n_id)                            # [len(n_id), D] on the compute device
    y = store.labels(batch.seeds)                           # int64 [B] (numpy)

It is the one door to the data: the trainer, the PyG adapters and the benchmarks reach topology (``sampler(fanouts,
kind=...)``: neighbour, ShaDow, seed-only; ``link_sampler``, ``temporal_sampler``; ``csc`` for full-graph passes),
features (``gather``; edge rows: ``gather_edges``), labels and splits (``labels``, ``split``) through it. Sampling
runs on the CPU (numba :class:`NeighborSampler`) or the GPU (:class:`DeviceNeighborSampler` over a
:class:`TieredTopology`; typed datasets: the same classes built with the schema, over the back-to-back CSC), with
identical batches for the same seed and batch id; ``link_sampler`` serves a typed dataset's pairs of its split
relation too (:mod:`graphtier.graphstore.links`). The CPU sampler's topology bytes are counted too; a typed dataset's features are a
:class:`TypedFeatures` (dict gathers).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

import numpy as np
import torch

from graphtier.dataset import Dataset
from graphtier.errors import OptionError
from graphtier.graphstore import links
from graphtier.graphstore import samplers as build
from graphtier.graphstore.dataset_reads import DatasetReads
from graphtier.graphstore.edge_features import open_edge_features
from graphtier.graphstore.samplers import (
    HostTopologyTally,
    build_typed_sampler,
    relation_fanouts_key,
    seed_only_batch,
    typed_seed_only_batch,
)
from graphtier.graphstore.typed_features import ExpectedReads, TypedFeatures, open_features
from graphtier.graphstore.typed_topology import typed_gpu_ranges
from graphtier.memory import (
    SAMPLE_ON,  # noqa: F401 - re-exported by graphtier.graphstore
    FeatureSource,
    PlacementSpec,
    TieredTopology,
    TierTraffic,
    batch_rows_bound,
    make_topology,
)
from graphtier.memory.features.arena import in_flight_bytes
from graphtier.sampling import (
    DEFAULT_FANOUTS,
    DeviceNeighborSampler,
    MiniBatch,
    NeighborSampler,
    ShadowSampler,
    check_fanouts,
)
from graphtier.sampling.spec import SAMPLER_KINDS
from graphtier.sampling.typed_batch import TypedMiniBatch

Sampler = Callable[[np.ndarray, int], MiniBatch | TypedMiniBatch]


class GraphStore(DatasetReads):
    """Topology, features, labels and splits of one dataset behind ``sampler`` / ``gather`` / ``labels`` / ``traffic``.

    Build it with :meth:`open`. Args of the constructor (for callers that build the parts themselves):
        dataset: the opened dataset.
        features: its feature store (:func:`graphtier.memory.make_feature_store`); for a typed dataset a
            :class:`~graphtier.graphstore.typed_features.TypedFeatures` (one source per featured node type).
        topology: a :class:`TieredTopology` to sample from on its device, or None to sample on the
            CPU with :class:`NeighborSampler` from the dataset's arrays.
        seed: base seed of the sampling streams (``sampler(fanouts, seed=...)`` overrides it); num_threads: CPU
            sampler threads (default numba's); picks: the device sampler's pick backend ("auto", "triton",
            "numba"); ``kernels``: its Triton kernel module (tests pass the interpreted one).
        edge_features: the source of the dataset's edge feature rows (:mod:`graphtier.graphstore.edge_features`),
            or None; with it the neighbour samplers record each block's ``edge_id`` and :meth:`gather_edges` reads.
    """

    def __init__(
        self,
        dataset: Dataset,
        features: FeatureSource | TypedFeatures | None,
        *,
        topology: TieredTopology | None = None,
        seed: int = 0,
        num_threads: int | None = None,
        picks: str = "auto",
        kernels: Any = None,
        edge_features: FeatureSource | None = None,
    ) -> None:
        self.dataset, self.features, self.edge_features = dataset, features, edge_features
        self.topology = topology
        self.seed = int(seed)
        self.num_threads = num_threads
        self.sample_on = "cpu" if topology is None else ("gpu" if topology.device.type == "cuda" else "device-on-cpu")
        self.picks = picks
        self.kernels = kernels
        self._samplers: dict[tuple[Any, ...], Sampler] = {}
        self._indptr = np.asarray(dataset.indptr)
        self._indices = np.asarray(dataset.indices)
        self._labels = np.asarray(dataset.labels) if dataset.labels is not None else None
        self._host_tally = HostTopologyTally(self._indices.dtype.itemsize) if topology is None else None
        self._lock = threading.Lock()
        self._closed = False

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        dataset: Dataset | str | Path,
        placement: PlacementSpec | None = None,
        *,
        device: str | torch.device = "cpu",
        seed: int = 0,
        num_threads: int | None = None,
        batch_size: int = 1024,
        fanouts: Sequence[int] = DEFAULT_FANOUTS,
        ring_size: int = 6,
        prefetch: int | None = None,
        train_seeds: np.ndarray | None = None,
        relation_fanouts: str | Mapping[Any, Any] | None = None,
        log: Callable[[str], None] = print,
        learnable: Mapping[str, int] | None = None,
        **placement_options: Any,
    ) -> GraphStore:
        """Open ``dataset`` (a Dataset or a path) with its features and topology placed by ``placement``.

        ``placement`` (:class:`graphtier.memory.PlacementSpec`): ``features_on`` (a mode of
        :data:`graphtier.memory.FEATURE_MODES`), its budgets, and ``sample_on`` "cpu" or "gpu" (needs CUDA);
        with "gpu" the topology is tiered by ``topology_budget`` (bytes, fraction of the edges or "auto";
        default auto; with "cpu" only "auto" is accepted and means 0: the graph stays in host memory)
        and ``ram_budget`` (which bounds the host tier of the features and of the topology each). With
        both GPU budgets "auto" the topology is placed first and the features get the rest. Instead of
        ``placement`` its fields may be given as keywords (``features_on`` then defaults to "tiered";
        ``feature_budget`` is accepted for ``gpu_budget``).

        ``device``: the compute device. ``batch_size``/``fanouts`` size the staging buffers and, with
        ``prefetch`` (default ``ring_size - 3``, the trainer's ring), the room "auto" GPU budgets leave for
        the batches in flight (:func:`graphtier.memory.features.arena.in_flight_bytes`). A typed dataset's GPU budget is
        split across its types by the expected reads of training from ``train_seeds`` (LOCAL ids of the target
        type) with ``fanouts`` / ``relation_fanouts`` (uniform when None; :meth:`TypedFeatures.open`), with the
        hot rows of the ``learnable`` tables (device bytes per row per featureless type) among them, and its
        topology budget across its relations the same way (:mod:`graphtier.graphstore.typed_topology`).
        ``placement.edge_features``: also ``edge_feat.npy``, in the same mode and budgets (:func:`open_edge_features`).
        """
        if placement is None:
            options = {"features_on": "tiered", **placement_options}
            if "feature_budget" in options:
                options["gpu_budget"] = options.pop("feature_budget")
            placement = PlacementSpec(**options)
        elif placement_options:
            raise TypeError(f"GraphStore.open: give placement or its fields, not both ({', '.join(placement_options)})")
        if not isinstance(dataset, Dataset):
            dataset = Dataset.open(dataset)
        device = torch.device(device)
        placement.check_device(device)
        # topology first: with both budgets "auto" the edge lists (read for every sampled edge, and
        # usually smaller than the features) take GPU memory first and the feature tier gets what is left
        rows_bound = batch_rows_bound(batch_size, list(fanouts), dataset.num_nodes)
        row_bytes = 0 if dataset.features is None else int(dataset.features.shape[1]) * dataset.features.dtype.itemsize
        batches = prefetch if prefetch is not None else max(0, ring_size - 3)
        reserve = in_flight_bytes(rows_bound, row_bytes, batches) if device.type == "cuda" else 0
        topology = None
        expected = ExpectedReads(dataset, train_seeds, fanouts, relation_fanouts, batch_size=batch_size)
        if placement.sample_on == "gpu":
            ranges = typed_gpu_ranges(dataset, expected, log=log)
            topology = make_topology(
                dataset.indptr, dataset.indices, device=device, topology_budget=placement.topology_budget,
                ram_budget=placement.ram_budget, log=log, in_flight_bytes=reserve, gpu_ranges_for=ranges,
            )  # fmt: skip
        opened: list[Any] = [topology]
        try:
            features = open_features(
                dataset, placement, device=device, batch_size=batch_size, fanouts=fanouts, ring_size=ring_size,
                prefetch=batches, rows_bound=rows_bound, in_flight=reserve, expected=expected, log=log,
                learnable=learnable,
            )  # fmt: skip
            opened.append(features)
            edges = None if not placement.edge_features else open_edge_features(
                dataset, placement, device=device, batch_size=batch_size, fanouts=fanouts, ring_size=ring_size, log=log
            )  # fmt: skip
        except BaseException:
            for part in (p for p in opened if p is not None):
                part.close()
            raise
        return cls(dataset, features, topology=topology, seed=seed, num_threads=num_threads, edge_features=edges)

    # ------------------------------------------------------------------ sampling
    @property
    def is_hetero(self) -> bool:
        """True for a typed dataset: its samplers give :class:`TypedMiniBatch` es (local ids per type)."""
        return self.dataset.is_hetero

    def sampler(
        self,
        fanouts: Sequence[int],
        relation_fanouts: str | Mapping[Any, Any] | None = None,
        *,
        seed: int | None = None,
        kind: str = "neighbor",
        num_layers: int | None = None,
    ) -> Sampler:
        """``sample(seeds, batch_id) -> MiniBatch`` of ``kind`` (:data:`SAMPLER_KINDS`), cached per arguments.

        ``"neighbor"``: ``fanouts`` (PyG order) on the topology's device (CPU for CPU sampling), its
        topology bytes counted in :meth:`traffic`. ``"shadow"``: ShaDow subgraphs of ``num_layers`` layers
        sampled on the CPU from the dataset's arrays. ``"seed-only"``: the seeds alone (``fanouts`` unused).
        A typed dataset (:attr:`is_hetero`) gives :class:`TypedMiniBatch` es instead (:meth:`typed_sampler`).
        """
        if kind not in SAMPLER_KINDS:
            raise OptionError.invalid("kind", f"one of {', '.join(SAMPLER_KINDS)}", kind)
        if self.is_hetero or relation_fanouts is not None:
            return self.typed_sampler(fanouts, relation_fanouts, seed=seed, kind=kind)
        if kind == "seed-only":
            return seed_only_batch
        if kind == "shadow" and num_layers is None:
            raise OptionError("{kind=shadow}: needs {num_layers}, found None", options=("kind", "num_layers"))
        key = (kind, tuple(check_fanouts(fanouts)), self.seed if seed is None else int(seed), num_layers)
        with self._lock:
            if self._closed:
                raise OptionError("graph store is closed")
            sample = self._samplers.get(key)
            if sample is None:
                sample = self._samplers[key] = self._build_sampler(kind, list(key[1]), key[2], num_layers)
        return sample

    def typed_sampler(
        self,
        fanouts: Sequence[int],
        relation_fanouts: str | Mapping[Any, Any] | None = None,
        *,
        seed: int | None = None,
        kind: str = "neighbor",
    ) -> Sampler:
        """``sample(seeds, batch_id) -> TypedMiniBatch`` (seeds: local ids of the target type), any dataset (a
        homogeneous one is one type, one relation). ``fanouts`` apply to every relation, ``relation_fanouts``
        (``"writes=5,cites=10/5"`` or a mapping, :func:`parse_relation_fanouts`) override some; kinds "neighbor"
        (on the topology's device with ``sample_on="gpu"``, else the CPU) and "seed-only"."""
        if kind not in ("neighbor", "seed-only"):
            raise OptionError(f"{{kind={kind}}}: a typed sampler is 'neighbor' or 'seed-only'", options=("kind",))
        schema = self.dataset.schema
        if kind == "seed-only":
            return typed_seed_only_batch(schema)
        key = (
            "typed",
            relation_fanouts_key(schema, fanouts, relation_fanouts),
            self.seed if seed is None else int(seed),
        )
        with self._lock:
            if self._closed:
                raise OptionError("graph store is closed")
            sample = self._samplers.get(key)
            if sample is None:
                inner = build_typed_sampler(self._indptr, self._indices, schema, key[1], key[2], self.num_threads,
                                            topology=self.topology, picks=self.picks, kernels=self.kernels,
                                            with_edge_ids=self.edge_features is not None)  # fmt: skip
                sample = self._samplers[key] = lambda seeds, batch_id: self._sample_with(inner, seeds, batch_id)
        return sample

    def _build_sampler(self, kind: str, fanouts: list[int], seed: int, num_layers: int | None) -> Sampler:
        if kind == "shadow":
            assert num_layers is not None
            shadow = ShadowSampler(
                self._indptr, self._indices, fanouts, num_layers, seed=seed, num_threads=self.num_threads
            )
            return shadow.sample
        inner: NeighborSampler | DeviceNeighborSampler
        ids = self.edge_features is not None  # blocks record edge_id only when a run reads edge rows
        if self.topology is None:
            inner = NeighborSampler(self._indptr, self._indices, fanouts, seed=seed, num_threads=self.num_threads,
                                    with_edge_ids=ids)  # fmt: skip
        else:
            inner = DeviceNeighborSampler(self.topology, fanouts, seed=seed, picks=self.picks, kernels=self.kernels,
                                          with_edge_ids=ids)  # fmt: skip
        return lambda seeds, batch_id: self._sample_with(inner, seeds, batch_id)

    def _sample_with(
        self, inner: Any, seeds: np.ndarray | torch.Tensor, batch_id: int | None
    ) -> MiniBatch | TypedMiniBatch:
        batch = inner.sample(seeds, batch_id)
        self.count_reads(batch)
        return batch

    def count_reads(self, batch: MiniBatch | TypedMiniBatch) -> None:
        """Count the topology reads of a batch drawn by one of the store's samplers (:meth:`traffic`;
        :func:`~graphtier.graphstore.samplers.count_topology_reads`)."""
        build.count_topology_reads(batch, self._host_tally, self.topology)

    def sample(
        self, seeds: np.ndarray | torch.Tensor, fanouts: Sequence[int], *, batch_id: int | None = None
    ) -> MiniBatch:
        """A neighbour-sampled mini-batch of ``seeds`` (int [B]) with ``fanouts`` (first hop first); ``batch_id``
        selects the random stream (None: the next one): the same (seed, batch_id, seeds) gives the same batch on
        the CPU and the GPU."""
        return self.sampler(fanouts)(seeds, batch_id)

    def link_sampler(self, fanouts: Sequence[int], pairs: np.ndarray, **options: Any) -> Sampler:
        """``sample(pair_ids, batch_id)`` over the pair table ``pairs`` (int64 [P, 2]: global ids, or a typed
        dataset's pairs of its edge split's relation, in local ids): :meth:`make_link_sampler`'s ``sample``."""
        return self.make_link_sampler(fanouts, pairs, **options).sample

    def make_link_sampler(self, fanouts: Sequence[int], pairs: np.ndarray, **options: Any) -> Any:
        """The link sampler of :func:`graphtier.graphstore.links.link_sampler` (its options) over this store: a
        :class:`LinkSampler`, on a typed dataset one built with its schema (its ``sample_pairs`` takes pairs
        directly). On the CPU or on the GPU (the exclusion then runs with torch ops on the topology's device)."""
        return links.link_sampler(self, fanouts, pairs, **options)

    def temporal_sampler(
        self,
        fanouts: Sequence[int],
        strategy: str = "uniform",
        *,
        seed: int | None = None,
        inclusive: bool = False,
        relation_fanouts: str | Mapping[Any, Any] | None = None,
    ) -> Any:
        """``sample(seeds, batch_id, seed_time) -> MiniBatch`` of a :class:`TemporalNeighborSampler` (``strategy``
        uniform or recent; ``inclusive``: edges at a row's time too) over the edge times, on the CPU or the topology's
        device (:class:`DeviceTemporalSampler`, same batches), cached per arguments; reads counted in :meth:`traffic`.
        A typed dataset: :class:`TypedMiniBatch` es of the sampler built with its schema (seeds local ids of the
        target type; ``relation_fanouts`` overrides ``fanouts`` per relation)."""
        key = ("temporal", tuple(check_fanouts(fanouts)), self.seed if seed is None else int(seed), strategy, inclusive,
               relation_fanouts_key(self.dataset.schema, fanouts, relation_fanouts) if self.is_hetero else None)  # fmt: skip
        with self._lock:
            if key not in self._samplers:
                self._samplers[key] = build.build_temporal_sampler(
                    self.dataset, list(key[1]), strategy, key[2], self._host_tally, inclusive, topology=self.topology,
                    picks=self.picks, kernels=self.kernels, relation_fanouts=relation_fanouts,
                )  # type: ignore  # fmt: skip
            return self._samplers[key]

    # ------------------------------------------------------------------ features
    def gather(self, ids: Any) -> Any:
        """Feature rows ``features[ids]``: ids int [B] (any device) -> [B, D] on the feature store's output device;
        ``{type: int [B_t] local ids}`` -> ``{type: [B_t, D_t]}`` per featured type (:meth:`TypedFeatures.gather`)."""
        if self.features is None:
            raise OptionError(f"{self.dataset.path}: the dataset has no features.npy, so there is nothing to gather")
        return self._features_of(ids).gather(ids)

    def gather_edges(self, edge_id: torch.Tensor | np.ndarray) -> torch.Tensor:
        """Edge feature rows ``edge_feat[edge_id]``: int64 [E_b] CSC positions (a block's ``edge_id``) -> [E_b, d]
        (the table's dtype) on the edge source's output device; OptionError when the store has no edge features."""
        if self.edge_features is None:
            raise OptionError("{edge_features}: the graph store was opened without edge features",
                              options=("edge_features",))  # fmt: skip
        return self.edge_features.gather(edge_id)

    def feature_bytes(self, ids: Any) -> int:
        """Feature bytes :meth:`gather` reads for ``ids`` (a typed dataset: summed over the types)."""
        if self.features is None:
            return 0
        return self._features_of(ids).batch_bytes(ids) if isinstance(ids, dict) else int(ids.shape[0]) * self.row_bytes

    def _features_of(self, ids: Any) -> Any:
        """A dict of ids (also a typed model's one-type view of a homogeneous dataset) reads TypedFeatures."""
        typed_view = isinstance(ids, dict) and not isinstance(self.features, TypedFeatures)
        return TypedFeatures({self.dataset.schema.target: self.features}) if typed_view else self.features  # type: ignore[dict-item]

    @property
    def row_bytes(self) -> int:
        """Bytes of one feature row (0 without features; a typed dataset: one row of every featured type)."""
        return self.features.row_bytes if self.features is not None else 0

    @property
    def cache_hit_ratio(self) -> float | None:
        """The feature source's row-cache hit ratio so far, None without a cache."""
        return self.features.cache_hit_ratio if self.features is not None else None

    # ------------------------------------------------------------------ reporting
    def traffic(self) -> dict[str, Any]:
        """Cumulative bytes per tier: ``{"features": TierTraffic, "topology": TierTraffic}``; a typed dataset adds
        ``"features_by_type": {type: TierTraffic}`` (they sum to ``"features"``), a store with edge features
        ``"edge_features"`` (the edge table's, not part of ``"features"``)."""
        features = self.features.traffic() if self.features is not None else TierTraffic()
        topology = self._host_tally.traffic() if self._host_tally is not None else self.topology.traffic()  # type: ignore[union-attr]
        out = {"features": features, "topology": topology}
        if isinstance(self.features, TypedFeatures):
            out["features_by_type"] = self.features.traffic_by_type()  # type: ignore[assignment]
        if self.edge_features is not None:
            out["edge_features"] = self.edge_features.traffic()
        return out

    def describe(self) -> str:
        """One line per part: where features and topology live."""
        parts = (("features", self.features), ("edge features", self.edge_features), ("topology", self.topology))
        lines = [f"{name}: {part.describe()}" for name, part in parts if part is not None]
        return "\n".join([f"graph store of {self.dataset.path}: sampling on {self.sample_on}", *lines])

    def close(self) -> None:
        """Release the feature store and the topology tiers (registrations, device memory); idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._samplers.clear()
        for part in (self.features, self.edge_features, self.topology):
            if part is not None:
                part.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
