"""The ``--features-on`` modes: one registry of name -> (builder, help, options it takes), and ``make_feature_store``.

Registered modes (:data:`FEATURE_MODE_REGISTRY`, in this order):

* ``cpu-gather``: rows gathered on the CPU into (pinned on CUDA) staging buffers, copied by the
  trainer (:class:`HostFeatureStore`, the DGL/PyG baseline).
* ``zero-copy``: the whole table in registered host memory, gathered by a GPU kernel over PCIe
  (a :class:`TieredFeatureStore` with no GPU tier). Without CUDA it falls back to ``cpu-gather`` and logs one line.
* ``tiered``: hot rows in GPU memory (and interleaved over peer GPUs), the rest zero-copy from
  host RAM, the rows beyond ``ram_budget`` from disk.
* ``tiered+cache``: ``tiered`` wrapped in a row cache in device memory (:class:`CachedFeatures`).

Every mode builds a :class:`graphtier.memory.features.source.FeatureSource`. A new mode is one
:func:`register_feature_mode` call; the CLI's choices are :data:`FEATURE_MODES`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch

from graphtier.dataset.advice import advise_access
from graphtier.errors import OptionError
from graphtier.memory.features.cached import CachedFeatures
from graphtier.memory.features.host import HostFeatureStore
from graphtier.memory.features.source import FeatureSource
from graphtier.memory.features.tiered import TieredFeatureStore
from graphtier.memory.plan.placement import TIER_NAMES, plan_tiers

__all__ = [
    "FEATURE_MODES",
    "FEATURE_MODE_REGISTRY",
    "TIER_NAMES",
    "FeatureMode",
    "SourceOptions",
    "make_feature_store",
    "refuse_untaken",
    "register_feature_mode",
]

# the placement options a mode may take, with their "not given" values
PLACEMENT_OPTIONS = {"gpu_budget": None, "cache_budget": None, "peer_partitions": 1, "ram_budget": None}


@dataclass(frozen=True)
class SourceOptions:
    """Everything a mode's builder may use (budgets: see :mod:`graphtier.memory.plan.placement`)."""

    device: torch.device
    gpu_budget: str | None = None
    cache_budget: str | None = None
    peer_partitions: int = 1
    ram_budget: str | None = None
    ring_size: int = 6
    max_batch_rows: int | None = None
    in_flight_bytes: int = 0
    log: Callable[[str], None] = print


@dataclass(frozen=True)
class FeatureMode:
    """A ``--features-on`` mode: ``build(table, options)`` makes its source; ``takes`` names the options of
    :data:`PLACEMENT_OPTIONS` it uses (any other one given is refused)."""

    name: str
    help: str
    build: Callable[[np.ndarray, SourceOptions], FeatureSource]
    takes: frozenset[str] = field(default_factory=frozenset)


FEATURE_MODE_REGISTRY: dict[str, FeatureMode] = {}


def register_feature_mode(mode: FeatureMode) -> None:
    """Add ``mode`` to the registry (a name is registered once)."""
    if mode.name in FEATURE_MODE_REGISTRY:
        raise ValueError(f"feature mode {mode.name!r} is registered already")
    FEATURE_MODE_REGISTRY[mode.name] = mode


def _cpu_gather(table: np.ndarray, options: SourceOptions) -> FeatureSource:
    pin = options.device.type == "cuda"
    return HostFeatureStore(table, ring_size=options.ring_size, pin=pin, max_batch_rows=options.max_batch_rows)


def _zero_copy(table: np.ndarray, options: SourceOptions) -> FeatureSource:
    device = options.device
    if device.type != "cuda":
        options.log(
            f"zero-copy features need CUDA, and the device is {device}: gathering features on the CPU (cpu-gather)"
        )
        return HostFeatureStore(table, ring_size=options.ring_size, pin=False, max_batch_rows=options.max_batch_rows)
    row_bytes = int(table.shape[1]) * table.dtype.itemsize
    plan = plan_tiers(
        int(table.shape[0]), row_bytes, device=device, gpu_budget="0", ram_budget=options.ram_budget, log=options.log
    )
    return TieredFeatureStore(
        table, plan, device=device, ring_size=options.ring_size, log=options.log, max_batch_rows=options.max_batch_rows
    )


def _tiered(table: np.ndarray, options: SourceOptions, cache_budget: str | None = None) -> FeatureSource:
    num_rows, row_bytes = int(table.shape[0]), int(table.shape[1]) * table.dtype.itemsize
    plan = plan_tiers(
        num_rows,
        row_bytes,
        device=options.device,
        gpu_budget=options.gpu_budget,
        cache_budget=cache_budget,
        peer_partitions=options.peer_partitions,
        ram_budget=options.ram_budget,
        log=options.log,
        reserve_bytes=options.in_flight_bytes,
    )
    source = TieredFeatureStore(
        table, plan, device=options.device, ring_size=options.ring_size, log=options.log,
        max_batch_rows=options.max_batch_rows,
    )  # fmt: skip
    if cache_budget is None:
        return source
    if plan.cache_rows == 0:
        if plan.peer_end < num_rows:
            options.log("cache budget resolved to 0 rows: tiered+cache runs without a cache")
        return source
    return CachedFeatures(source, plan.cache_rows, ring_size=options.ring_size, max_batch_rows=options.max_batch_rows)


def _tiered_cache(table: np.ndarray, options: SourceOptions) -> FeatureSource:
    return _tiered(table, options, cache_budget=options.cache_budget if options.cache_budget is not None else "auto")


register_feature_mode(FeatureMode(
    "cpu-gather", "gather rows on the CPU into (pinned) staging buffers; the DGL/PyG baseline", _cpu_gather,
))  # fmt: skip
register_feature_mode(FeatureMode(
    "zero-copy", "the whole table in registered host memory, read by a GPU kernel over PCIe (CPU gather without CUDA)",
    _zero_copy, frozenset({"ram_budget"}),
))  # fmt: skip
register_feature_mode(FeatureMode(
    "tiered", "hot rows in GPU memory (interleaved over peer GPUs), the rest zero-copy from host RAM, then disk",
    _tiered, frozenset({"gpu_budget", "peer_partitions", "ram_budget"}),
))  # fmt: skip
register_feature_mode(FeatureMode(
    "tiered+cache", "tiered, with a row cache in device memory for the rows outside the GPU tiers",
    _tiered_cache, frozenset({"gpu_budget", "cache_budget", "peer_partitions", "ram_budget"}),
))  # fmt: skip

FEATURE_MODES = tuple(FEATURE_MODE_REGISTRY)


def refuse_untaken(mode: str, **options: object) -> None:
    """OptionError naming the first placement option of :data:`PLACEMENT_OPTIONS` given in ``options`` that
    ``mode`` (a registered name) does not take, and the modes that do."""
    chosen = FEATURE_MODE_REGISTRY[mode]
    for name, unset in PLACEMENT_OPTIONS.items():
        value = options.get(name, unset)
        if name in chosen.takes or value == unset:
            continue
        takers = [other.name for other in FEATURE_MODE_REGISTRY.values() if name in other.takes]
        modes = takers[0] if len(takers) == 1 else ", ".join(takers[:-1]) + " and " + takers[-1]
        raise OptionError(
            f"{{{name}}}: applies to {{features_on={modes}}} only, found {value!r} with {{features_on={mode}}}",
            options=(name, "features_on"),
        )


def make_feature_store(
    features: np.ndarray,
    mode: str,
    *,
    device: torch.device,
    gpu_budget: str | None = None,
    cache_budget: str | None = None,
    peer_partitions: int = 1,
    ram_budget: str | None = None,
    ring_size: int = 6,
    max_batch_rows: int | None = None,
    in_flight_bytes: int = 0,
    log: Callable[[str], None] = print,
    random_access: bool = True,
) -> FeatureSource:
    """Build the feature source of ``mode`` (a name of :data:`FEATURE_MODES`) over ``features``
    (float32/float16 [N, D], RAM or memory map).

    ``random_access`` (default): the rows will be gathered at random (mini-batches), so a memory-mapped
    ``features`` is advised ``random`` once the source is built (:func:`graphtier.dataset.advice.advise_access`:
    a page fault then reads its own page, not megabytes of read-ahead). False leaves the map's advice as it is,
    for a reader that goes through the rows in order.

    ``device`` is the compute device. Budgets (see :mod:`graphtier.memory.plan.placement`): bytes
    ("512MB", "2GiB"), a fraction of rows ("0.1", "10%") or "auto". ``gpu_budget`` (per device,
    default auto) applies to the tiered modes, ``cache_budget`` (default auto) to ``tiered+cache``,
    ``ram_budget`` (default: every non-GPU row in RAM) to ``zero-copy`` and the tiered modes.

    Every mode gathers through one :class:`graphtier.memory.features.arena.StagingArena` of reusable host buffers
    (pinned on CUDA); ``max_batch_rows`` (e.g. :func:`graphtier.memory.features.arena.batch_rows_bound` of the
    sampler) caps its geometric growth, ``ring_size`` is the reuse distance of pinned buffers.
    ``in_flight_bytes`` (:func:`graphtier.memory.features.arena.in_flight_bytes`) is left free of an auto GPU budget.
    """
    chosen = FEATURE_MODE_REGISTRY.get(mode)
    if chosen is None:
        raise OptionError.invalid("features_on", f"one of {', '.join(FEATURE_MODES)}", mode)
    if features.ndim != 2:
        raise OptionError(f"feature table must be 2-d [N, D], found shape {tuple(features.shape)}")
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise OptionError(f"{{device={device}}}: CUDA is not available on this machine", options=("device",))
    options = SourceOptions(
        device=device, gpu_budget=gpu_budget, cache_budget=cache_budget, peer_partitions=peer_partitions,
        ram_budget=ram_budget, ring_size=ring_size, max_batch_rows=max_batch_rows, in_flight_bytes=in_flight_bytes,
        log=log,
    )  # fmt: skip
    refuse_untaken(
        mode, gpu_budget=gpu_budget, cache_budget=cache_budget, peer_partitions=peer_partitions, ram_budget=ram_budget
    )
    source = chosen.build(features, options)
    if random_access:
        advise_access(features, "random")
    return source
