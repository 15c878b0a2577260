"""How far a feature cache is from its floor: replay one epoch's row-access trace against cache policies.

The disk tier keeps a budget of feature rows in RAM. :func:`replay_trace` records the rows the training sampler
reads, batch after batch (each batch reads each of its rows once: the ``n_id`` of the gather), exactly as
``graphtier analyze`` replays it. :func:`cache_policy_table` counts the misses of that trace against a cache of B
rows for each policy of :data:`CACHE_POLICIES`:

- ``static``: today's RAM tier alone: the B hottest rows by the ``fwr`` score (the tiering default), fixed; every
  other access is a miss (what ``--ram-budget`` gives without the operating system's page cache);
- ``static+lru``: B/2 hottest rows fixed and an LRU cache of B/2 rows over the rest: a model of today's RAM tier
  with the page cache's LRU-like reuse of the memory-mapped rest in the same memory;
- ``lru``, ``clock``, ``sieve`` (Zhang et al., NSDI'24), ``s3fifo`` (Yang et al., SOSP'23; GraphBolt's best
  policies on papers100M with SIEVE): online caches starting empty;
- ``belady``: Belady's MIN, the offline optimum (the row used furthest in the future leaves; a row needed later
  than every cached one is not cached), from the best contents at the counted epochs' start (as the static tiers
  hold their rows from the start): no policy misses less.

The kernels are :mod:`graphtier.tiering.cache._kernels` (references in :mod:`graphtier.tiering.cache.reference`).
A typed dataset's trace is over global node ids (every type's rows in one budget).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from graphtier._checks import check_int
from graphtier._progress import NO_PROGRESS, Progress
from graphtier.dataset.format import Dataset
from graphtier.errors import OptionError
from graphtier.memory.plan.placement import parse_budget
from graphtier.tiering.cache import _kernels as kernels
from graphtier.tiering.hotness import compute_scores
from graphtier.tiering.replay import DEFAULT_REPLAY, Replay, replay_reads

CACHE_POLICIES = ("static", "static+lru", "lru", "clock", "sieve", "s3fifo", "belady")
"""The policies :func:`cache_policy_table` replays (see the module)."""
S3FIFO_SMALL_SHARE = 0.1
"""S3-FIFO's small queue: 10% of the cache (the paper's default)."""
DEFAULT_CACHE_BUDGETS = "10%,25%,50%"


def replay_trace(
    dataset: Dataset,
    *,
    replay: Replay = DEFAULT_REPLAY,
    progress: Progress = NO_PROGRESS,
    first_epoch: int = 0,
) -> np.ndarray:
    """int64 [A]: the feature rows the training sampler reads over ``replay.epochs`` epochs (numbered from
    ``first_epoch``: each epoch's own shuffle), batch after batch (global ids of a typed dataset), from
    :func:`graphtier.tiering.replay.replay_reads` (the same batches as ``graphtier analyze`` with this
    :class:`~graphtier.tiering.replay.Replay`)."""
    parts: list[np.ndarray] = []
    replay_reads(dataset, replay, first_epoch=first_epoch, topology=False, on_reads=parts.append, progress=progress)
    return np.concatenate(parts).astype(np.int64, copy=False) if parts else np.zeros(0, dtype=np.int64)


def policy_misses(
    policy: str, trace: np.ndarray, capacity: int, num_rows: int, scores: np.ndarray | None, start: int = 0
) -> int:
    """Misses of ``trace[start:]`` (int64 [A] rows in [0, num_rows); the accesses before ``start`` warm the cache
    up) against a cache of ``capacity`` rows under ``policy`` (:data:`CACHE_POLICIES`; ``static`` and
    ``static+lru`` rank the rows by ``scores`` float [num_rows] and hold their pinned rows from the start)."""
    capacity = max(0, min(int(capacity), num_rows))
    if policy in ("static", "static+lru"):
        if scores is None:
            raise ValueError(f"policy {policy!r} needs the rows' scores")
        pinned = capacity if policy == "static" else capacity // 2
        hot = np.zeros(num_rows, dtype=np.bool_)
        hot[np.argsort(-np.asarray(scores), kind="stable")[:pinned]] = True
        cold = ~hot[trace]
        if policy == "static":
            return int(np.count_nonzero(cold[start:]))
        rest_start = int(np.count_nonzero(cold[:start]))
        return kernels.lru_misses(trace[cold], capacity - pinned, num_rows, rest_start)
    if policy == "lru":
        return kernels.lru_misses(trace, capacity, num_rows, start)
    if policy == "clock":
        return kernels.clock_misses(trace, capacity, num_rows, start)
    if policy == "sieve":
        return kernels.sieve_misses(trace, capacity, num_rows, start)
    if policy == "s3fifo":
        return kernels.s3fifo_misses(trace, capacity, num_rows, S3FIFO_SMALL_SHARE, start)
    if policy == "belady":
        return kernels.belady_misses(trace, capacity, num_rows, start)
    raise ValueError(f"unknown cache policy {policy!r}; expected one of {', '.join(CACHE_POLICIES)}")


@dataclass
class CachePolicyTable:
    """Misses per policy and budget of one trace: ``misses[policy][i]`` for ``capacities[i]`` rows
    (``budgets[i]`` as given), over the ``accesses`` counted (after the warm-up epochs), ``distinct`` rows they
    read, ``seconds`` per policy."""

    budgets: list[str]
    capacities: list[int]
    accesses: int
    distinct: int
    num_rows: int
    misses: dict[str, list[int]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    def miss_rate(self, policy: str, index: int) -> float:
        """Misses over accesses (0 for an empty trace)."""
        return self.misses[policy][index] / self.accesses if self.accesses else 0.0

    def over_belady(self, policy: str, index: int) -> float | None:
        """Misses relative to Belady's at the same budget (None when Belady misses nothing)."""
        floor = self.misses["belady"][index]
        return self.misses[policy][index] / floor if floor else None

    def best_online(self, index: int) -> str:
        """The online policy (not ``static``, ``static+lru`` or ``belady``) with the fewest misses at budget
        ``index``."""
        online = [p for p in self.misses if p not in ("static", "static+lru", "belady")]
        return min(online, key=lambda p: self.misses[p][index])

    def format(self) -> str:
        """The table ``graphtier analyze --cache-budget`` prints: misses, miss rate and x Belady per budget."""
        header = f"{'policy':<11}" + "".join(
            f"{f'{b} ({c:,} rows)':>34}" for b, c in zip(self.budgets, self.capacities)
        )
        lines = [header, "-" * len(header)]
        for policy, counts in self.misses.items():
            cells = []
            for i, count in enumerate(counts):
                ratio = self.over_belady(policy, i)
                cells.append(
                    f"{count:>13,} {100 * self.miss_rate(policy, i):>6.1f}% "
                    f"{'-' if ratio is None else f'{ratio:.2f}x':>9}"
                )
            lines.append(f"{policy:<11}" + "".join(f"{cell:>34}" for cell in cells))
        lines.append("(misses, miss rate, misses / Belady's at the same budget)")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """Everything, JSON-able."""
        return {
            "budgets": self.budgets, "capacities": self.capacities, "accesses": self.accesses,
            "distinct": self.distinct, "num_rows": self.num_rows, "misses": self.misses, "seconds": self.seconds,
            "config": self.config,
        }  # fmt: skip


def budget_rows(text: str, num_rows: int, row_bytes: int | None, option: str = "cache_budget") -> int:
    """Rows a cache budget ``text`` holds: a fraction or percentage of ``num_rows``, or bytes / ``row_bytes``
    (None: a typed dataset's rows differ in width, so only fractions are taken); ``auto`` is refused."""
    budget = parse_budget(text, option)
    if budget.auto:
        raise OptionError.invalid(option, "fractions of the rows or bytes, not auto (a replay has no device)", text)
    if budget.num_bytes is not None and row_bytes is None:
        raise OptionError.invalid(option, "fractions of the rows (a typed dataset's rows differ in width)", text)
    return budget.rows(num_rows, row_bytes or 1)


def cache_budgets(dataset: Dataset, budgets: str | Sequence[str]) -> tuple[list[str], list[int]]:
    """The budgets as given and the rows each holds on ``dataset`` (:func:`budget_rows`; checked before any replay;
    OptionError naming ``cache_budget``)."""
    texts = [b.strip() for b in budgets.split(",")] if isinstance(budgets, str) else [str(b) for b in budgets]
    texts = [t for t in texts if t]
    if not texts:
        raise OptionError.invalid("cache_budget", "budgets like 10%,25%,50%", budgets)
    itemsize = dataset.features.dtype.itemsize if dataset.features is not None else 4
    row_bytes = None if dataset.is_hetero else max(1, dataset.feature_dim) * itemsize
    return texts, [budget_rows(t, dataset.num_nodes, row_bytes or None) for t in texts]


def cache_policy_table(
    dataset: Dataset,
    budgets: str | Sequence[str] = DEFAULT_CACHE_BUDGETS,
    *,
    policies: Sequence[str] = CACHE_POLICIES,
    replay: Replay = DEFAULT_REPLAY,
    warmup_epochs: int = 1,
    scores: np.ndarray | None = None,
    trace: np.ndarray | None = None,
    start: int = 0,
    progress: Progress = NO_PROGRESS,
) -> CachePolicyTable:
    """Replay a training trace (:func:`replay_trace` of ``warmup_epochs + epochs`` epochs, or ``trace`` int64 [A]
    given, counted from ``start``) against a cache of each budget under each policy (see the module). The warm-up
    epochs fill the online caches and are not counted: the misses are those of ``epochs`` steady-state epochs
    (Belady's: the floor of those accesses from the best possible contents).

    Args:
        budgets: ``"10%,25%,50%"`` or a list: fractions or percentages of the rows, or bytes of feature rows
            (homogeneous datasets).
        replay: the training sampler replayed (:class:`~graphtier.tiering.replay.Replay`, as ``graphtier analyze``
            takes it); its ``epochs`` are the counted epochs.
        warmup_epochs: epochs replayed before the counted ones, not counted (an integer >= 0).
        scores: float [N] hotness of the static tiers (default: ``fwr`` with the replay's fanouts and seeds).
        trace: a trace to replay instead (int64 [A] rows), counted from ``start``.

    Returns:
        A :class:`CachePolicyTable`; ``format()`` is the printed table.
    """
    texts, capacities = cache_budgets(dataset, budgets)
    unknown = [p for p in policies if p not in CACHE_POLICIES]
    if unknown:
        raise OptionError.invalid("policies", f"names from {', '.join(CACHE_POLICIES)}", ",".join(unknown))
    warmup_epochs = check_int("warmup_epochs", warmup_epochs, minimum=0)
    num_rows = dataset.num_nodes
    if trace is None:
        warm = np.zeros(0, dtype=np.int64)
        if warmup_epochs > 0:
            warm = replay_trace(dataset, replay=replace(replay, epochs=warmup_epochs), progress=progress)
        counted = replay_trace(dataset, replay=replay, progress=progress, first_epoch=warmup_epochs)
        trace, start = np.concatenate([warm, counted]), int(warm.shape[0])
    if scores is None and any(p.startswith("static") for p in policies):
        scores = compute_scores(dataset, "fwr", replay=replay, progress=progress).scores
    table = CachePolicyTable(
        budgets=texts, capacities=capacities, accesses=int(trace.shape[0]) - start,
        distinct=int(np.unique(trace[start:]).shape[0]) if trace.size > start else 0, num_rows=num_rows,
        config={**replay.describe(), "warmup_epochs": warmup_epochs},
    )  # fmt: skip
    ordered = [p for p in CACHE_POLICIES if p in policies or p == "belady"]
    with progress.stage("replay the cache policies", total=len(ordered) * len(capacities), unit="runs") as bar:
        for policy in ordered:
            started = time.perf_counter()
            table.misses[policy] = []
            for capacity in capacities:
                table.misses[policy].append(policy_misses(policy, trace, capacity, num_rows, scores, start))
                bar.advance()
            table.seconds[policy] = time.perf_counter() - started
    return table
