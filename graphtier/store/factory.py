"""``make_feature_store``: the feature store behind ``--features-on`` (the trainer's one entry point).

Modes:

* ``cpu-gather``: rows gathered on the CPU into (pinned on CUDA) staging buffers, copied by the
  trainer (:class:`HostFeatureStore`, the DGL/PyG baseline).
* ``zero-copy``: the whole table in registered host memory, gathered by a GPU kernel over PCIe
  (seed 003). Without CUDA it falls back to ``cpu-gather`` and logs one line.
* ``tiered``: hot rows in GPU memory (and interleaved over peer GPUs), the rest zero-copy from
  host RAM, the rows beyond ``ram_budget`` from disk (seed 000).
* ``tiered+cache``: ``tiered`` plus a row cache in device memory for the cold tiers.

Every store has ``gather(ids)``, ``output_device``, ``row_bytes``, ``num_rows``, ``dim``,
``traffic()`` and ``close()`` (see :class:`FeatureStore`).
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

import numpy as np
import torch

from graphtier.errors import OptionError
from graphtier.store.host import HostFeatureStore
from graphtier.store.placement import TIER_NAMES, plan_tiers
from graphtier.store.tiered import TieredFeatureStore

FEATURE_MODES = ("cpu-gather", "zero-copy", "tiered", "tiered+cache")

__all__ = ["FEATURE_MODES", "TIER_NAMES", "FeatureStore", "make_feature_store"]


@runtime_checkable
class FeatureStore(Protocol):
    """What the trainer needs from a feature store."""

    output_device: torch.device
    row_bytes: int
    num_rows: int
    dim: int

    def gather(self, ids: torch.Tensor) -> torch.Tensor:
        """ids int64 [B] on the CPU -> rows [B, D] in the table's dtype on ``output_device``."""
        ...

    def traffic(self) -> dict[str, int]:
        """Cumulative bytes per tier (TIER_NAMES) plus "requested"."""
        ...

    def close(self) -> None:
        """Release registrations and buffers; idempotent."""
        ...


def _refuse(option: str, value: str | None, mode: str, modes: str) -> None:
    if value is not None:
        raise OptionError(f"{option}: applies to --features-on {modes} only, found {value!r} with --features-on {mode}")


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
) -> FeatureStore:
    """Build the feature store of ``mode`` over ``features`` (float32/float16 [N, D], RAM or memory map).

    ``device`` is the compute device. Budgets (see :mod:`graphtier.store.placement`): bytes
    ("512MB", "2GiB"), a fraction of rows ("0.1", "10%") or "auto". ``gpu_budget`` (per device,
    default auto) applies to the tiered modes, ``cache_budget`` (default auto) to ``tiered+cache``,
    ``ram_budget`` (default: every non-GPU row in RAM) to ``zero-copy`` and the tiered modes.

    Every mode gathers through one :class:`graphtier.store.arena.StagingArena` of reusable host buffers
    (pinned on CUDA); ``max_batch_rows`` (e.g. :func:`graphtier.store.arena.batch_rows_bound` of the
    sampler) caps its geometric growth, ``ring_size`` is the reuse distance of pinned buffers.
    ``in_flight_bytes`` (:func:`graphtier.store.arena.in_flight_bytes`) is left free of an auto GPU budget.
    """
    if mode not in FEATURE_MODES:
        raise OptionError(f"--features-on: expected one of {', '.join(FEATURE_MODES)}, found {mode!r}")
    if features.ndim != 2:
        raise OptionError(f"feature table must be 2-d [N, D], found shape {tuple(features.shape)}")
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise OptionError(f"--device {device}: CUDA is not available on this machine")
    num_rows, dim = (int(s) for s in features.shape)
    row_bytes = dim * features.dtype.itemsize
    if mode in ("cpu-gather", "zero-copy"):
        _refuse("--gpu-budget", gpu_budget, mode, "tiered and tiered+cache")
        _refuse("--cache-budget", cache_budget, mode, "tiered+cache")
        if peer_partitions != 1:
            raise OptionError(f"--peer-partitions: applies to the tiered modes only, found {peer_partitions} with {mode}")
    if mode == "tiered":
        _refuse("--cache-budget", cache_budget, mode, "tiered+cache")
    if mode == "cpu-gather":
        _refuse("--ram-budget", ram_budget, mode, "zero-copy, tiered and tiered+cache")
        return HostFeatureStore(features, ring_size=ring_size, pin=device.type == "cuda", max_batch_rows=max_batch_rows)
    if mode == "zero-copy":
        if device.type != "cuda":
            log(f"--features-on zero-copy needs CUDA, and the device is {device}: gathering features on the CPU (cpu-gather)")
            return HostFeatureStore(features, ring_size=ring_size, pin=False, max_batch_rows=max_batch_rows)
        plan = plan_tiers(num_rows, row_bytes, device=device, gpu_budget="0", ram_budget=ram_budget, log=log)
        return TieredFeatureStore(
            features, plan, device=device, ring_size=ring_size, log=log, max_batch_rows=max_batch_rows
        )
    if mode == "tiered+cache" and cache_budget is None:
        cache_budget = "auto"
    plan = plan_tiers(
        num_rows,
        row_bytes,
        device=device,
        gpu_budget=gpu_budget,
        cache_budget=cache_budget,
        peer_partitions=peer_partitions,
        ram_budget=ram_budget,
        log=log,
        reserve_bytes=in_flight_bytes,
    )
    if mode == "tiered+cache" and plan.cache_rows == 0 and plan.peer_end < num_rows:
        log("cache budget resolved to 0 rows: tiered+cache runs without a cache")
    return TieredFeatureStore(features, plan, device=device, ring_size=ring_size, log=log, max_batch_rows=max_batch_rows)
