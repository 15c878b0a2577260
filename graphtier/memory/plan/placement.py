"""Budgets -> tier boundaries: which rows of a hotness-sorted feature table live in which tier.

After ``graphtier reorder`` the hottest rows are a prefix of the table (Data Tiering, §3-4), so every
tier is a range of row ids and a row's tier is found by comparing its id with a few boundaries
(Data Tiering Listing 1, XGNN §4.3)::

    [0, local_rows)                  "gpu"       replicated on the compute device
    [local_rows, peer_end)           "gpu-peer"  interleaved over ``peer_partitions`` devices:
                                                 offset = id - local_rows, partition = offset % P,
                                                 row in partition = offset // P; partition 0 is the
                                                 compute device (counted as "gpu"), the others peers
    [peer_end, host_end)             "host"      host RAM (pinned/registered for zero-copy on CUDA)
    [host_end, num_rows)             "disk"      read from the memory-mapped file on demand

Rows outside the GPU tiers may also be served by the row cache ("cache" tier).

A budget string is one of

* bytes: ``"512MB"``, ``"2GiB"``, ``"1.5GB"``, ``"4096B"`` (KB/MB/GB/TB are powers of 1000,
  KiB/MiB/GiB/TiB powers of 1024),
* a fraction of the table's rows: ``"0.1"`` or ``"10%"`` (``"1.0"`` = every row, ``"0"`` = none); a bare
  integer other than 0 (``"1"``, ``"512"``) is refused: it reads as bytes as well as a fraction,
* ``"auto"``: on CUDA, the device's free memory minus a reserve for the model and activations
  (:func:`auto_device_bytes`); on a machine without CUDA there is no device memory, so ``auto``
  gives the GPU tiers and the cache 0 rows (pass bytes or a fraction to simulate a plan on the
  CPU); for ``ram_budget``, ``auto`` is the available RAM (``MemAvailable``) minus a reserve.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from graphtier.dataset import resources
from graphtier.errors import OptionError

TIER_NAMES = ("gpu", "gpu-peer", "cache", "host", "disk")

_UNITS = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_BYTES_PATTERN = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]+)\s*$")
_PERCENT_PATTERN = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")
_FRACTION_PATTERN = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*$")

DEVICE_RESERVE_FRACTION = 0.15
DEVICE_RESERVE_MIN_BYTES = 2 * 2**30
RAM_RESERVE_FRACTION = 0.10
RAM_RESERVE_MIN_BYTES = 2 * 2**30
AUTO_CACHE_SHARE = 0.25


def format_bytes(num_bytes: float) -> str:
    """``1536`` -> ``"1.5 KiB"``: a human-readable binary size."""
    value = float(num_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


class Budget(str):
    """A parsed budget: exactly one of ``num_bytes`` / ``fraction`` is set, or ``auto`` is True.

    It is also its text (``"10%"``, ``"2GiB"``, ``"auto"``): made once where the option enters
    (:class:`~graphtier.memory.features.spec.PlacementSpec`), stored and printed as the user wrote it, and passed down
    unchanged (:func:`parse_budget` returns a Budget as it is)."""

    num_bytes: int | None
    fraction: float | None
    auto: bool

    def __new__(
        cls, text: str, num_bytes: int | None = None, fraction: float | None = None, auto: bool = False
    ) -> "Budget":
        budget = str.__new__(cls, text)
        budget.num_bytes, budget.fraction, budget.auto = num_bytes, fraction, auto
        return budget

    @property
    def text(self) -> str:
        """The budget as written."""
        return str(self)

    def rows(self, num_rows: int, row_bytes: int, auto_bytes: int | None = None) -> int:
        """Rows of ``row_bytes`` bytes this budget holds, at most ``num_rows``; ``auto_bytes`` resolves ``auto``."""
        if self.auto:
            if auto_bytes is None:
                raise AssertionError("an auto budget needs auto_bytes")
            return min(num_rows, max(0, auto_bytes) // max(row_bytes, 1))
        if self.fraction is not None:
            return min(num_rows, int(np.floor(self.fraction * num_rows + 1e-9)))
        assert self.num_bytes is not None
        return min(num_rows, self.num_bytes // max(row_bytes, 1))


def parse_budget(text: str, option: str) -> Budget:
    """Parse a budget string (bytes with a unit, a fraction, a percentage or ``auto``) for ``option``; a
    :class:`Budget` (parsed already) is returned as it is.

    ``option`` is the Python argument name (``gpu_budget``); the OptionError raised names it, the
    accepted forms and the value found, and renders it as the flag (``--gpu-budget``) for the CLI.
    """
    if isinstance(text, Budget):
        return text
    raw = str(text)
    if raw.strip().lower() == "auto":
        return Budget(raw, auto=True)
    expected = 'bytes with a unit ("512MB", "2GiB"), a fraction of rows ("0.1", "10%") or "auto"'
    match = _PERCENT_PATTERN.match(raw)
    if match:
        percent = float(match.group(1))
        if percent > 100:
            raise OptionError(f"{{{option}}}: expected a percentage in [0%, 100%], found {raw!r}", options=(option,))
        return Budget(raw, fraction=percent / 100)
    match = _FRACTION_PATTERN.match(raw)
    if match:
        fraction = float(match.group(1))
        if "." not in match.group(1) and fraction != 0:
            raise OptionError(
                f"{{{option}}}: a number without a unit is ambiguous (bytes or a fraction of rows?), found {raw!r}; "
                'write bytes with a unit ("1GB"), a percentage ("100%") or a fraction with a decimal point ("0.5", "1.0")',
                options=(option,),
            )
        if fraction > 1:
            raise OptionError(
                f"{{{option}}}: expected {expected}; a bare number is a fraction in [0, 1], found {raw!r}",
                options=(option,),
            )
        return Budget(raw, fraction=fraction)
    match = _BYTES_PATTERN.match(raw)
    if match and match.group(2).lower() in _UNITS:
        return Budget(raw, num_bytes=int(float(match.group(1)) * _UNITS[match.group(2).lower()]))
    raise OptionError(f"{{{option}}}: expected {expected}, found {raw!r}", options=(option,))


def auto_ram_bytes() -> tuple[int, str]:
    """``auto`` for the RAM budget: available RAM minus max(10 %, 2 GiB); returns (bytes, explanation)."""
    available = resources.available_memory()
    reserve = max(int(RAM_RESERVE_FRACTION * available), RAM_RESERVE_MIN_BYTES)
    usable = max(0, available - reserve)
    return usable, f"{format_bytes(available)} RAM available minus a {format_bytes(reserve)} reserve"


def auto_device_bytes(device: torch.device) -> tuple[int, str]:
    """``auto`` for device budgets: free memory of ``device`` minus max(15 % of total, 2 GiB).

    Returns (bytes, explanation); (0, reason) when ``device`` is not a CUDA device.
    """
    if device.type != "cuda" or not torch.cuda.is_available():
        return 0, "no CUDA device, so auto gives the device tiers 0 rows (pass bytes or a fraction to simulate them)"
    free, total = torch.cuda.mem_get_info(device)
    reserve = max(int(DEVICE_RESERVE_FRACTION * total), DEVICE_RESERVE_MIN_BYTES)
    usable = max(0, int(free) - reserve)
    return usable, f"{format_bytes(free)} free on {device} minus a {format_bytes(reserve)} reserve for the model"


@dataclass(frozen=True)
class TierPlan:
    """Row boundaries of the tiers of a hotness-sorted table (see the module docstring).

    Attributes:
        num_rows, row_bytes: the table.
        local_rows: rows [0, local_rows) in the "gpu" tier.
        peer_partitions: P, devices the interleaved tier is spread over (1 = no peer tier).
        peer_end: rows [local_rows, peer_end) in the interleaved multi-device tier.
        host_end: rows [peer_end, host_end) in host RAM; rows [host_end, num_rows) on disk.
        cache_rows: capacity of the row cache (0 = no cache) for rows >= peer_end.
    """

    num_rows: int
    row_bytes: int
    local_rows: int = 0
    peer_partitions: int = 1
    peer_end: int = 0
    host_end: int = 0
    cache_rows: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.local_rows <= self.peer_end <= self.host_end <= self.num_rows:
            raise AssertionError(f"inconsistent tier plan {self}")
        if self.peer_partitions < 1:
            raise AssertionError("peer_partitions must be >= 1")

    @property
    def peer_rows(self) -> int:
        """Rows of the interleaved multi-device tier (all partitions)."""
        return self.peer_end - self.local_rows

    @property
    def rows_per_partition(self) -> int:
        """Rows held by each partition of the interleaved tier (the last ones may hold one fewer)."""
        return -(-self.peer_rows // self.peer_partitions)

    @property
    def host_rows(self) -> int:
        return self.host_end - self.peer_end

    @property
    def disk_rows(self) -> int:
        return self.num_rows - self.host_end

    def tier_of(self, ids: np.ndarray) -> np.ndarray:
        """Static tier index (into TIER_NAMES, never "cache") of each id: int64 [B] -> int8 [B]."""
        ids = np.asarray(ids, dtype=np.int64)
        tier = np.full(ids.shape, TIER_NAMES.index("disk"), dtype=np.int8)
        tier[ids < self.host_end] = TIER_NAMES.index("host")
        in_peer = (ids >= self.local_rows) & (ids < self.peer_end)
        own_partition = ((ids - self.local_rows) % self.peer_partitions) == 0
        tier[in_peer & ~own_partition] = TIER_NAMES.index("gpu-peer")
        tier[in_peer & own_partition] = TIER_NAMES.index("gpu")
        tier[ids < self.local_rows] = TIER_NAMES.index("gpu")
        return tier

    def tier_counts(self, ids: np.ndarray) -> np.ndarray:
        """Rows per static tier (int64 [len(TIER_NAMES)], "cache" 0) of ids int64 [B]; equals bincount(tier_of)."""
        ids = np.asarray(ids, dtype=np.int64)
        below_local = int(np.count_nonzero(ids < self.local_rows))
        below_peer = int(np.count_nonzero(ids < self.peer_end))
        below_host = int(np.count_nonzero(ids < self.host_end))
        counts = np.zeros(len(TIER_NAMES), dtype=np.int64)
        in_peer = below_peer - below_local
        own = 0
        if in_peer:
            if self.peer_partitions == 1:
                own = in_peer
            else:
                peer_ids = ids[(ids >= self.local_rows) & (ids < self.peer_end)]
                own = int(np.count_nonzero((peer_ids - self.local_rows) % self.peer_partitions == 0))
        counts[TIER_NAMES.index("gpu")] = below_local + own
        counts[TIER_NAMES.index("gpu-peer")] = in_peer - own
        counts[TIER_NAMES.index("host")] = below_host - below_peer
        counts[TIER_NAMES.index("disk")] = ids.shape[0] - below_host
        return counts

    def describe(self) -> str:
        """One line: rows and bytes per tier."""

        def part(name: str, rows: int) -> str:
            share = 100.0 * rows / self.num_rows if self.num_rows else 0.0
            return f"{name} {rows:,} rows ({format_bytes(rows * self.row_bytes)}, {share:.1f}%)"

        pieces = [part("gpu", self.local_rows)]
        if self.peer_partitions > 1:
            pieces.append(part(f"gpu-peer x{self.peer_partitions}", self.peer_rows))
        if self.cache_rows:
            pieces.append(part("cache", self.cache_rows))
        pieces += [part("host", self.host_rows), part("disk", self.disk_rows)]
        return "tier plan: " + ", ".join(pieces)


def plan_tiers(
    num_rows: int,
    row_bytes: int,
    *,
    device: torch.device,
    gpu_budget: str | None,
    cache_budget: str | None = None,
    peer_partitions: int = 1,
    ram_budget: str | None = None,
    log: Callable[[str], None] = print,
    reserve_bytes: int = 0,
) -> TierPlan:
    """Turn budget strings into a :class:`TierPlan` for a table of ``num_rows`` rows of ``row_bytes`` bytes.

    ``gpu_budget`` is per device: with ``peer_partitions == 1`` it holds the replicated "gpu" tier;
    with P > 1 all of it goes to the interleaved tier (P x budget rows, as Data Tiering §4.2 does) and
    ``local_rows`` is 0. ``None`` means ``auto``. ``cache_budget`` ``None`` = no cache; ``auto`` =
    a quarter of the auto device memory (the GPU tiers get the rest). ``ram_budget`` ``None`` = every
    remaining row is in the host tier; otherwise rows beyond it are in the disk tier. ``reserve_bytes``
    (e.g. :func:`graphtier.memory.features.arena.in_flight_bytes`) is left free of the auto device memory.
    """
    if peer_partitions < 1:
        raise OptionError(
            f"{{peer_partitions}}: expected an integer >= 1, found {peer_partitions}", options=("peer_partitions",)
        )
    gpu = parse_budget(gpu_budget if gpu_budget is not None else "auto", "gpu_budget")
    cache = parse_budget(cache_budget, "cache_budget") if cache_budget is not None else None
    ram = parse_budget(ram_budget, "ram_budget") if ram_budget is not None else None

    device_auto = 0
    if gpu.auto or (cache is not None and cache.auto):
        device_auto, why = auto_device_bytes(device)
        if reserve_bytes > 0 and device_auto > 0:
            device_auto = max(0, device_auto - int(reserve_bytes))
            why += f", minus {format_bytes(reserve_bytes)} for the batches in flight"
        log(f"auto device budget: {format_bytes(device_auto)} ({why})")
    cache_rows = 0
    if cache is not None:
        cache_auto = int(AUTO_CACHE_SHARE * device_auto) if gpu.auto else device_auto
        cache_rows = cache.rows(num_rows, row_bytes, cache_auto)
    gpu_auto = device_auto  # per device: each of the P devices holds this much of the interleaved tier
    if gpu.auto and cache is not None:
        gpu_auto = max(0, device_auto - cache_rows * row_bytes)
    per_device_rows = gpu.rows(num_rows, row_bytes, gpu_auto)
    if gpu.fraction is not None and peer_partitions > 1:
        per_device_rows = -(-per_device_rows // peer_partitions)  # a fraction is of the whole table
    if peer_partitions == 1:
        local_rows, peer_end = per_device_rows, per_device_rows
    else:
        local_rows, peer_end = 0, min(num_rows, per_device_rows * peer_partitions)
    rest = num_rows - peer_end
    if ram is None:
        host_rows = rest
    else:
        ram_auto = None
        if ram.auto:
            ram_auto, why = auto_ram_bytes()
            log(f"auto RAM budget: {format_bytes(ram_auto)} ({why})")
        host_rows = min(rest, ram.rows(num_rows, row_bytes, ram_auto))
    cache_rows = min(cache_rows, num_rows - peer_end)
    plan = TierPlan(
        num_rows=num_rows,
        row_bytes=row_bytes,
        local_rows=local_rows,
        peer_partitions=peer_partitions,
        peer_end=peer_end,
        host_end=peer_end + host_rows,
        cache_rows=cache_rows,
    )
    return plan
