"""The features of a typed (heterogeneous) dataset: one :class:`FeatureSource` per featured node type.

:class:`TypedFeatures` is what :class:`graphtier.graphstore.GraphStore` holds instead of one feature source
when the dataset has several node types. Every featured type's table is placed by the same ``--features-on``
mode (:func:`graphtier.memory.make_feature_store`); the budgets of the placement (GPU, cache, RAM) are one
pool shared by all tables, split across the types and handed to each table as bytes. The GPU pool is filled by
expected reads per byte (:func:`graphtier.memory.plan.typed_budget.split_feature_budget`, the reads of
:class:`ExpectedReads` of the run's training seeds; uniform without seeds), each type's GPU rows a
prefix of its table: its hottest rows only after ``graphtier reorder`` (:meth:`TypedFeatures.describe` says
the node order). The cache and RAM pools go in proportion to each table's bytes (:func:`split_budget_rows`).
Gathering takes and returns one entry per type::

    x = store.gather(batch.n_id)      # {type: [len(n_id[type]), dim(type)]} for every featured type

Featureless types have no source (their rows come from the model's learnable tables) and are absent from
the result. Traffic is counted per type and summed (:meth:`TypedFeatures.traffic`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from graphtier.dataset import Dataset
from graphtier.dataset.schema import Schema
from graphtier.graph.typed_scores import TypedReads, split_by_type, typed_fanout_weighted_reads
from graphtier.memory import (
    FEATURE_MODE_REGISTRY,
    FeatureSource,
    PlacementSpec,
    TierTraffic,
    batch_rows_bound,
    make_feature_store,
    parse_budget,
)
from graphtier.memory.features.arena import in_flight_bytes
from graphtier.memory.plan.placement import AUTO_CACHE_SHARE, auto_device_bytes, auto_ram_bytes, format_bytes
from graphtier.memory.plan.typed_budget import TypeTable, split_feature_budget
from graphtier.sampling.relation_fanouts import parse_relation_fanouts

TypeTables = Mapping[str, tuple[int, int]]
"""Per node type ``(rows, row_bytes)`` of its feature table."""
TypeReads = Mapping[str, np.ndarray]
"""Per node type float [rows]: expected reads per epoch of each row of its table (local ids)."""


def typed_rows_bound(schema: Schema, batch_size: int, fanouts: Sequence[int]) -> dict[str, int]:
    """Upper bound of the rows of each node type one sampled mini-batch gathers.

    A frontier node brings at most ``fanout`` neighbours per relation into it, so a hop multiplies the frontier
    by at most ``fanout * relations + 1``; a type never has more rows than its count.
    """
    per_hop = [f * len(schema.relations) if f >= 0 else -1 for f in fanouts]
    bound = batch_rows_bound(batch_size, per_hop, schema.num_nodes)
    return {t.name: min(bound, t.count) for t in schema.node_types}


def expected_typed_reads(
    dataset: Dataset,
    train_seeds: np.ndarray,
    fanouts: Sequence[int],
    relation_fanouts: str | Mapping[Any, Any] | None = None,
    *,
    batch_size: int = 1024,
) -> TypedReads:
    """Expected reads per epoch of training from ``train_seeds`` (int [T], LOCAL ids of the target type) with
    ``fanouts`` overridden by ``relation_fanouts`` (:func:`parse_relation_fanouts`) and ``batch_size`` seeds a
    batch: :func:`typed_fanout_weighted_reads` (node reads float64 [N], list entries float64 [num_rows])."""
    schema = dataset.schema
    per_relation = parse_relation_fanouts(relation_fanouts, schema, tuple(fanouts))
    return typed_fanout_weighted_reads(
        np.asarray(dataset.indptr), np.asarray(dataset.indices), schema, np.asarray(train_seeds, dtype=np.int64),
        {rel: list(hops) for rel, hops in per_relation.items()}, batch_size=batch_size,
    )  # fmt: skip


class ExpectedReads:
    """The expected reads of one store's training (:func:`expected_typed_reads`), computed on first use and kept:
    the feature budget (per type) and the topology budget (per relation) of a store share one pass over the graph.
    Without ``train_seeds`` (None or empty) there are none: both budgets split uniformly."""

    def __init__(
        self,
        dataset: Dataset,
        train_seeds: np.ndarray | None,
        fanouts: Sequence[int],
        relation_fanouts: str | Mapping[Any, Any] | None = None,
        *,
        batch_size: int = 1024,
    ) -> None:
        self.dataset = dataset
        self.train_seeds = None if train_seeds is None or len(train_seeds) == 0 else train_seeds
        self.fanouts = fanouts
        self.relation_fanouts = relation_fanouts
        self.batch_size = batch_size
        self._reads: TypedReads | None = None

    def typed(self) -> TypedReads | None:
        """Node reads float64 [N] and list entries float64 [num_rows], or None without seeds."""
        if self.train_seeds is None:
            return None
        if self._reads is None:
            self._reads = expected_typed_reads(
                self.dataset, self.train_seeds, self.fanouts, self.relation_fanouts, batch_size=self.batch_size
            )
        return self._reads

    def by_type(self) -> TypeReads | None:
        """``{type: float64 [count]}`` expected reads of every row of every type's table, or None without seeds."""
        reads = self.typed()
        return None if reads is None else split_by_type(reads.node_reads, self.dataset.schema)


def split_gpu_rows(tables: TypeTables, budget_bytes: int, reads: TypeReads | None) -> dict[str, int]:
    """GPU rows of each type's table out of one ``budget_bytes``: filled by expected reads per byte
    (:func:`split_feature_budget`, each type a prefix of its rows); ``reads`` None: every row read once."""
    return split_feature_budget(
        {
            name: TypeTable(row_bytes, rows, None if reads is None else np.asarray(reads[name], dtype=np.float64))
            for name, (rows, row_bytes) in tables.items()
        },
        max(0, int(budget_bytes)),
    )


def split_budget_rows(tables: TypeTables, budget_bytes: int) -> dict[str, int]:
    """Rows of each type's table that get a share of ``budget_bytes`` shared by all tables: in proportion to each
    table's bytes (every type gets the same fraction of its rows). The cache and RAM pools are split this way;
    the GPU pool by expected reads per byte (:func:`split_gpu_rows`).
    """
    total = sum(rows * row_bytes for rows, row_bytes in tables.values())
    if total == 0:
        return dict.fromkeys(tables, 0)
    share = min(1.0, max(0, int(budget_bytes)) / total)
    return {name: min(rows, int(np.floor(share * rows + 1e-9))) for name, (rows, _) in tables.items()}


def _pool_bytes(text: str | None, total_bytes: int, auto_bytes: Callable[[], int]) -> int | None:
    """Bytes of the shared pool of one budget string (None stays None: the option is not given)."""
    if text is None:
        return None
    budget = parse_budget(text, "budget")
    if budget.auto:
        return auto_bytes()
    if budget.fraction is not None:
        return int(budget.fraction * total_bytes)
    assert budget.num_bytes is not None
    return budget.num_bytes


def split_placement_budgets(
    tables: TypeTables,
    placement: PlacementSpec,
    device: torch.device,
    *,
    reserve_bytes: int = 0,
    reads: Callable[[], TypeReads | None] = lambda: None,
    log: Callable[[str], None] = print,
    learnable: TypeTables | None = None,
) -> dict[str, dict[str, str | None]]:
    """Per type the ``gpu_budget`` / ``cache_budget`` / ``ram_budget`` to build its table's source with.

    The placement's budgets are pools shared by all tables: each is resolved to bytes once (``auto`` from the
    device's free memory less ``reserve_bytes``, or the available RAM; a fraction of all tables' bytes), split
    across the types and given to each table as bytes: the GPU pool by expected reads per byte
    (:func:`split_gpu_rows` with ``reads()``, called only when the pool does not hold every table), the cache
    and RAM pools by :func:`split_budget_rows`. Options the mode does not take stay None; ``gpu_budget`` /
    ``cache_budget`` not given mean ``auto`` where the mode takes them.

    ``learnable``: per featureless type ``(rows, row_bytes)`` of its learnable table with its optimizer state
    (:func:`graphtier.train.nn.tiered_embedding.learnable_row_bytes`): they take part in the GPU pool only (the same
    split by reads per byte; a fraction budget is of all tables' bytes), and get a ``gpu_budget`` entry (bytes of
    their hot prefix; all of it when the pool is not given or the compute device is the CPU).
    """
    takes = FEATURE_MODE_REGISTRY[placement.features_on].takes
    learnable = dict(learnable or {})
    total = sum(rows * row_bytes for rows, row_bytes in tables.values())
    gpu_tables = {**tables, **learnable}
    gpu_total = total + sum(rows * row_bytes for rows, row_bytes in learnable.values())
    gpu_text = placement.gpu_budget if "gpu_budget" not in takes else placement.gpu_budget or "auto"
    cache_text = placement.cache_budget if "cache_budget" not in takes else placement.cache_budget or "auto"
    device_free: list[int] = []

    def device_auto() -> int:
        if not device_free:
            free, why = auto_device_bytes(device)
            free = max(0, free - int(reserve_bytes)) if free > 0 else 0
            log(f"auto device budget: {format_bytes(free)} ({why}), shared by the feature tables of every type")
            device_free.append(free)
        return device_free[0]

    gpu_auto = gpu_text is not None and parse_budget(gpu_text, "gpu_budget").auto
    cache_pool = _pool_bytes(
        cache_text, total, lambda: int(AUTO_CACHE_SHARE * device_auto()) if gpu_auto else device_auto()
    )
    gpu_pool = _pool_bytes(gpu_text, gpu_total, lambda: max(0, device_auto() - (cache_pool or 0)))

    def ram_auto() -> int:
        usable, why = auto_ram_bytes()
        log(f"auto RAM budget: {format_bytes(usable)} ({why}), shared by the feature tables of every type")
        return usable

    ram_pool = _pool_bytes(placement.ram_budget, total, ram_auto)
    out: dict[str, dict[str, str | None]] = {name: {} for name in gpu_tables}
    learnable_rows = {name: count for name, (count, _) in learnable.items()}  # all hot unless the GPU pool is split
    for option, pool in (("gpu_budget", gpu_pool), ("cache_budget", cache_pool), ("ram_budget", ram_pool)):
        if pool is None:
            rows = {}
        elif option == "gpu_budget" and pool < gpu_total:
            rows = split_gpu_rows(gpu_tables, pool, reads())
            learnable_rows = {name: rows[name] for name in learnable}
        else:
            rows = split_budget_rows(tables, pool)
        for name, (_, row_bytes) in tables.items():
            out[name][option] = f"{rows[name] * row_bytes}B" if pool is not None else None
    for name, (_, row_bytes) in learnable.items():
        out[name] = {"gpu_budget": f"{learnable_rows[name] * row_bytes}B"}
    return out


class TypedFeatures:
    """The feature sources of a typed dataset, one per featured node type (see the module).

    Args:
        sources: per featured type its :class:`FeatureSource` (local ids of that type are its rows).
    """

    def __init__(
        self,
        sources: Mapping[str, FeatureSource],
        *,
        node_order: str | None = None,
        learnable_rows: Mapping[str, int] | None = None,
    ) -> None:
        self.sources = dict(sources)
        self.node_order = node_order
        self.learnable_rows = dict(learnable_rows or {})
        """Per featureless type given to :meth:`open` (``learnable``): rows of its learnable table's hot prefix."""

    @classmethod
    def open(
        cls,
        dataset: Dataset,
        placement: PlacementSpec,
        *,
        device: torch.device,
        batch_size: int,
        fanouts: Sequence[int],
        ring_size: int,
        prefetch: int,
        expected: ExpectedReads | None = None,
        log: Callable[[str], None] = print,
        learnable: Mapping[str, int] | None = None,
    ) -> TypedFeatures:
        """Every featured type's table of ``dataset`` placed by ``placement`` on the compute ``device``, the
        budgets split across the types (:func:`split_placement_budgets`; the GPU pool by ``expected`` reads of
        training, uniform when None or without seeds);
        ``batch_size``, ``fanouts``, ``ring_size`` and ``prefetch`` size the staging buffers and the room left
        for batches in flight. ``learnable``: per featureless type the device bytes of a row of its learnable
        table (with optimizer state): the GPU pool covers them too, their hot rows in :attr:`learnable_rows`."""
        tables = {name: table for name, table in dataset.type_features.items() if table is not None}
        shapes = {name: (int(t.shape[0]), int(t.shape[1]) * t.dtype.itemsize) for name, t in tables.items()}
        bounds = typed_rows_bound(dataset.schema, batch_size, fanouts)
        reserve = 0
        if device.type == "cuda":
            reserve = sum(in_flight_bytes(bounds[name], row_bytes, prefetch) for name, (_, row_bytes) in shapes.items())
        reads = expected.by_type if expected is not None else lambda: None

        counts = {t.name: t.count for t in dataset.schema.node_types}
        learnable_shapes = {name: (counts[name], int(row_bytes)) for name, row_bytes in (learnable or {}).items()}
        budgets = split_placement_budgets(
            shapes, placement, device, reserve_bytes=reserve, reads=reads, log=log, learnable=learnable_shapes
        )
        learnable_rows = {
            name: int(parse_budget(str(budgets[name]["gpu_budget"]), "gpu_budget").num_bytes or 0) // row_bytes
            for name, (_, row_bytes) in learnable_shapes.items()
        }
        sources: dict[str, FeatureSource] = {}
        try:
            for name, table in tables.items():
                sources[name] = make_feature_store(
                    table,
                    placement.features_on,
                    device=device,
                    peer_partitions=placement.peer_partitions,
                    ring_size=ring_size,
                    max_batch_rows=bounds[name],
                    log=lambda line, name=name: log(f"features of {name}: {line}"),
                    **budgets[name],  # type: ignore[arg-type]
                )
        except BaseException:
            for source in sources.values():
                source.close()
            raise
        return cls(sources, node_order=dataset.node_order, learnable_rows=learnable_rows)

    def gather(self, n_id: Mapping[str, torch.Tensor | np.ndarray]) -> dict[str, torch.Tensor]:
        """Rows of each featured type: ``n_id[t]`` int [B_t] local ids -> ``{t: [B_t, dim_t]}`` on the output
        device (the table's dtype); types without features are left out."""
        return {name: source.gather(n_id[name]) for name, source in self.sources.items() if name in n_id}

    def batch_bytes(self, n_id: Mapping[str, torch.Tensor | np.ndarray]) -> int:
        """Feature bytes :meth:`gather` reads for ``n_id``, summed over the types."""
        return sum(int(n_id[name].shape[0]) * source.row_bytes for name, source in self.sources.items() if name in n_id)

    @property
    def row_bytes_by_type(self) -> dict[str, int]:
        """Bytes of one feature row per featured type."""
        return {name: source.row_bytes for name, source in self.sources.items()}

    @property
    def row_bytes(self) -> int:
        """Bytes of one row of every featured type together."""
        return sum(self.row_bytes_by_type.values())

    def traffic_by_type(self) -> dict[str, TierTraffic]:
        """Cumulative bytes per tier of each featured type."""
        return {name: source.traffic() for name, source in self.sources.items()}

    def traffic(self) -> TierTraffic:
        """Cumulative bytes per tier, summed over the types."""
        total = TierTraffic()
        for traffic in self.traffic_by_type().values():
            total = total + traffic
        return total

    @property
    def cache_hit_ratio(self) -> float | None:
        """Hits / lookups of the row caches of all types together (weighted by the bytes each looked up), None
        without a cache."""
        hits = lookups = 0.0
        cached = False
        for source in self.sources.values():
            ratio = source.cache_hit_ratio
            if ratio is None:
                continue
            cached = True
            traffic = source.traffic()
            looked_up = traffic["requested"] - traffic["gpu"] - traffic["gpu-peer"]
            hits += ratio * looked_up
            lookups += looked_up
        if not cached:
            return None
        return hits / lookups if lookups else 0.0

    def describe(self) -> str:
        """One line: where the rows of each featured type live, and the node order (a GPU prefix holds the
        hottest rows only when it is hottest-first, after ``graphtier reorder``)."""
        if not self.sources:
            return "no node type has features"
        order = f" (node order {self.node_order})" if self.node_order is not None else ""
        return "; ".join(f"{name}: {source.describe()}" for name, source in self.sources.items()) + order

    def close(self) -> None:
        """Close every type's source (idempotent)."""
        for source in self.sources.values():
            source.close()


def open_features(
    dataset: Dataset,
    placement: PlacementSpec,
    *,
    device: torch.device,
    batch_size: int,
    fanouts: Sequence[int],
    ring_size: int,
    prefetch: int,
    rows_bound: int,
    in_flight: int,
    expected: ExpectedReads | None = None,
    log: Callable[[str], None] = print,
    learnable: Mapping[str, int] | None = None,
) -> FeatureSource | TypedFeatures | None:
    """The features of ``dataset`` placed by ``placement``: :class:`TypedFeatures` for a typed dataset (its GPU
    budget split by the ``expected`` reads of training, :meth:`TypedFeatures.open`), one
    :class:`FeatureSource` of ``features.npy`` otherwise (``rows_bound`` rows per batch at most, ``in_flight``
    bytes left free of an auto GPU budget), None without features. ``learnable``: see :meth:`TypedFeatures.open`."""
    if dataset.is_hetero:
        return TypedFeatures.open(
            dataset, placement, device=device, batch_size=batch_size, fanouts=fanouts, ring_size=ring_size,
            prefetch=prefetch, expected=expected, log=log, learnable=learnable,
        )  # fmt: skip
    if dataset.features is None:
        return None
    return placement.feature_store(
        dataset.features,
        device=device,
        ring_size=ring_size,
        max_batch_rows=rows_bound,
        in_flight_bytes=in_flight,
        log=log,
    )
