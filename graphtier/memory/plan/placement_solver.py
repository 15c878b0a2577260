"""Multi-GPU placement of a hotness-sorted feature table (XGNN §4.2, Data Tiering §4 interleaving).

The table's rows, hottest first (after ``graphtier reorder``), are cut into ``K`` contiguous row
groups; group ``g`` has ``group_bytes[g]`` bytes and receives ``group_share[g]`` of every GPU's feature
reads. A placement gives each group the set ``H_g`` of GPUs holding a full copy of it (empty = host
memory only). The cost model, shared by the solver and the brute-force optimum:

* every GPU ``i`` reads ``access_bytes`` bytes per step, ``group_share[g]`` of them from group ``g``;
* if ``i`` holds ``g`` it reads from its own memory (``local_gbps[i]``); else, if GPUs of ``H_g`` have a
  direct link to ``i``, the reads are split over those links in proportion to their bandwidth (so
  each takes the same time), and the bytes a holder serves also count against its own memory
  bandwidth; else they come from host memory over ``i``'s host link (``host_gbps[i]``);
* a link's time is its bytes / bandwidth; the **objective is the slowest link's time** (seconds per
  step): every GPU waits for its slowest source, and a synchronous step for the slowest GPU;
* each GPU's held bytes must fit its budget ``budgets[i]``.

:func:`solve_placement` replicates the hottest groups on every GPU, interleaves the next ones across
each NVLink clique (one copy per clique, on the member with the most free memory) and leaves the rest
in host memory, trying every replication boundary. Then it runs a local search (add, drop or move
one copy of one group; for up to 16 groups also give up a copy of one group for one of another, or
trade copies between two GPUs; while the objective, then the sum of squared link times, falls) from
the best three of these, from a greedy plan (add the copy that helps most while one does) and, for
up to 16 groups, from 12 random plans (fixed seed), keeping the best.
:func:`brute_force_placement` enumerates every assignment (2^(G*K) of them: small K only).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from graphtier._choices import PAIR_MOVE_GROUPS
from graphtier.errors import OptionError
from graphtier.memory.plan.gpu_topology import GpuTopology

REL_EPS = 1e-12
MAX_SEARCH_PASSES = 200
SEARCH_STARTS = 3
RANDOM_RESTARTS = 12
RESTART_SEED = 0


@dataclass
class Placement:
    """Result of :func:`solve_placement`.

    ``holders``: per group, the sorted GPU ids holding it; ``kinds``: per group ``replicated`` (every
    GPU), ``interleaved`` (some GPUs), ``host``; ``objective_seconds``: the slowest link's time per step;
    ``bottleneck``: that link's name; ``link_seconds``: every used link's time; ``gpu_bytes``: bytes held
    per GPU; ``baselines``: the objective of simple plans (``host-only``, ``replicate-only``,
    ``replicate+interleave`` before the local search).
    """

    holders: list[tuple[int, ...]]
    kinds: list[str]
    objective_seconds: float
    bottleneck: str
    link_seconds: dict[str, float]
    gpu_bytes: list[int]
    baselines: dict[str, float] = field(default_factory=dict)

    def summary(self) -> str:
        counts = {k: self.kinds.count(k) for k in ("replicated", "interleaved", "host")}
        return (
            f"{counts['replicated']} replicated, {counts['interleaved']} interleaved, {counts['host']} host "
            f"groups; slowest link {self.bottleneck}: {self.objective_seconds * 1e3:.3f} ms per step"
        )


class CostModel:
    """Link times of placements on ``topology`` for groups of ``group_share``, reading ``access_bytes`` per GPU.

    Resources (index into the time vectors): ``i`` = GPU ``i``'s own memory (its own reads and the
    reads it serves to peers), ``G + i`` = host link of
    GPU ``i``, ``2G + j * G + i`` = link from GPU ``j`` to GPU ``i``.
    """

    def __init__(self, topology: GpuTopology, access_bytes: float) -> None:
        self.topology = topology
        self.num_gpus = topology.num_gpus
        self.access_gb = float(access_bytes) / 1e9
        self._unit: dict[int, np.ndarray] = {}

    @property
    def num_resources(self) -> int:
        return 2 * self.num_gpus + self.num_gpus * self.num_gpus

    def resource_name(self, r: int) -> str:
        g = self.num_gpus
        if r < g:
            return f"gpu{r} local"
        if r < 2 * g:
            return f"host->gpu{r - g}"
        src, dst = divmod(r - 2 * g, g)
        return f"gpu{src}->gpu{dst}"

    def unit_times(self, mask: int) -> np.ndarray:
        """float64 [R]: seconds per link when every GPU reads a group of share 1 held by the GPUs in ``mask``."""
        cached = self._unit.get(mask)
        if cached is not None:
            return cached
        g, topo = self.num_gpus, self.topology
        times = np.zeros(self.num_resources, dtype=np.float64)
        holders = [j for j in range(g) if mask >> j & 1]
        for i in range(g):
            if mask >> i & 1:
                times[i] += self.access_gb / topo.local[i]
                continue
            linked = [j for j in holders if topo.links[j, i] > 0]
            if not linked:
                times[g + i] += self.access_gb / topo.host[i]
                continue
            total = sum(topo.links[j, i] for j in linked)
            for j in linked:
                part = self.access_gb * topo.links[j, i] / total
                times[2 * g + j * g + i] += part / topo.links[j, i]
                times[j] += part / topo.local[j]
        self._unit[mask] = times
        return times

    def times(self, masks: Sequence[int], shares: np.ndarray) -> np.ndarray:
        """float64 [R]: every link's seconds per step for per-group holder ``masks``."""
        total = np.zeros(self.num_resources, dtype=np.float64)
        for mask, share in zip(masks, shares):
            total += share * self.unit_times(mask)
        return total


def _check_inputs(
    topology: GpuTopology, group_bytes: Sequence[float], group_share: Sequence[float], budgets: Sequence[float] | float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sizes = np.asarray(group_bytes, dtype=np.float64)
    shares = np.asarray(group_share, dtype=np.float64)
    if sizes.ndim != 1 or shares.shape != sizes.shape:
        raise OptionError(
            f"group_share: expected {sizes.shape[0] if sizes.ndim == 1 else '?'} values like "
            f"group_bytes, found shape {shares.shape}"
        )
    if np.any(sizes < 0) or np.any(shares < 0) or not np.all(np.isfinite(shares)):
        raise OptionError("group_bytes/group_share: expected values >= 0")
    limits = (
        np.broadcast_to(np.asarray(budgets, dtype=np.float64), (topology.num_gpus,)).copy()
        if np.ndim(budgets) == 0
        else np.asarray(budgets, dtype=np.float64)
    )
    if limits.shape != (topology.num_gpus,) or np.any(limits < 0):
        raise OptionError(f"budgets: expected one byte count >= 0 per GPU ({topology.num_gpus}), found {budgets!r}")
    return sizes, shares, limits


def _score(times: np.ndarray) -> tuple[float, float]:
    return float(times.max(initial=0.0)), float(np.dot(times, times))


def _better(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """True when score ``a`` is strictly better than ``b`` (lower max, then lower sum of squares)."""
    if a[0] < b[0] * (1 - 1e-9) - REL_EPS:
        return True
    return a[0] <= b[0] * (1 + 1e-9) + REL_EPS and a[1] < b[1] * (1 - 1e-9) - REL_EPS


def _structured_start(
    model: CostModel,
    cliques: list[list[int]],
    sizes: np.ndarray,
    shares: np.ndarray,
    limits: np.ndarray,
    replicated: int,
) -> list[int] | None:
    """Holder masks: groups ``< replicated`` on every GPU, the next interleaved per clique while memory lasts."""
    num_gpus = model.num_gpus
    everyone = (1 << num_gpus) - 1
    free = limits.copy()
    masks: list[int] = []
    for g in range(replicated):
        if np.any(free < sizes[g]):
            return None
        free -= sizes[g]
        masks.append(everyone)
    for g in range(replicated, sizes.shape[0]):
        mask = 0
        for clique in cliques:
            fitting = [m for m in clique if free[m] >= sizes[g]]
            if fitting:
                best = max(fitting, key=lambda m: (free[m], -m))
                free[best] -= sizes[g]
                mask |= 1 << best
        masks.append(mask)
    return masks


def _single_moves(
    model: CostModel, masks: list[int], used: np.ndarray, sizes: np.ndarray, limits: np.ndarray
) -> list[tuple[tuple[int, int], ...]]:
    """Changes of one group's holders: add one copy, drop one, move one to another GPU."""
    num_gpus = model.num_gpus
    moves: list[tuple[tuple[int, int], ...]] = []
    for g, mask in enumerate(masks):
        for i in range(num_gpus):
            if mask >> i & 1:
                moves.append(((g, mask & ~(1 << i)),))
                moves.extend(
                    ((g, mask & ~(1 << i) | 1 << j),)
                    for j in range(num_gpus)
                    if not mask >> j & 1 and used[j] + sizes[g] <= limits[j]
                )
            elif used[i] + sizes[g] <= limits[i]:
                moves.append(((g, mask | 1 << i),))
    return moves


def _pair_moves(
    model: CostModel, masks: list[int], used: np.ndarray, sizes: np.ndarray, limits: np.ndarray
) -> list[tuple[tuple[int, int], ...]]:
    """Changes of two groups: a GPU gives up a copy of ``g`` for one of ``h``, or two GPUs trade copies."""
    num_gpus = model.num_gpus
    moves: list[tuple[tuple[int, int], ...]] = []
    for g, h in itertools.permutations(range(len(masks)), 2):
        mg, mh = masks[g], masks[h]
        for i in range(num_gpus):
            if not (mg >> i & 1) or mh >> i & 1:
                continue
            if used[i] - sizes[g] + sizes[h] <= limits[i]:
                moves.append(((g, mg & ~(1 << i)), (h, mh | 1 << i)))
            if g < h:
                for j in range(num_gpus):
                    if (
                        (mh >> j & 1)
                        and not (mg >> j & 1)
                        and used[i] - sizes[g] + sizes[h] <= limits[i]
                        and used[j] - sizes[h] + sizes[g] <= limits[j]
                    ):
                        moves.append(((g, mg & ~(1 << i) | 1 << j), (h, mh & ~(1 << j) | 1 << i)))
    return moves


def _local_search(
    model: CostModel, masks: list[int], sizes: np.ndarray, shares: np.ndarray, limits: np.ndarray
) -> list[int]:
    """Steepest descent over single-group moves, then (for at most ``PAIR_MOVE_GROUPS`` groups) two-group moves."""
    num_gpus = model.num_gpus
    masks = list(masks)
    used = np.array([sum(sizes[g] for g, m in enumerate(masks) if m >> i & 1) for i in range(num_gpus)])
    times = model.times(masks, shares)
    score = _score(times)
    for _ in range(MAX_SEARCH_PASSES):
        best = None
        neighbourhoods = [_single_moves]
        if len(masks) <= PAIR_MOVE_GROUPS:
            neighbourhoods.append(_pair_moves)
        for neighbourhood in neighbourhoods:
            for move in neighbourhood(model, masks, used, sizes, limits):
                new_times = times.copy()
                for g, new_mask in move:
                    new_times += shares[g] * (model.unit_times(new_mask) - model.unit_times(masks[g]))
                new_score = _score(new_times)
                if _better(new_score, score) and (best is None or _better(new_score, best[0])):
                    best = (new_score, move, new_times)
            if best is not None:
                break
        if best is None:
            break
        score, move, times = best
        for g, new_mask in move:
            for i in range(num_gpus):
                used[i] += sizes[g] * ((new_mask >> i & 1) - (masks[g] >> i & 1))
            masks[g] = new_mask
    return masks


def _greedy_start(model: CostModel, sizes: np.ndarray, shares: np.ndarray, limits: np.ndarray) -> list[int]:
    """Holder masks built by adding, one at a time, the (group, GPU) copy that lowers the score most."""
    num_gpus, num_groups = model.num_gpus, sizes.shape[0]
    masks = [0] * num_groups
    used = np.zeros(num_gpus)
    times = model.times(masks, shares)
    score = _score(times)
    while True:
        best = None
        for g in range(num_groups):
            base = times - shares[g] * model.unit_times(masks[g])
            for i in range(num_gpus):
                if masks[g] >> i & 1 or used[i] + sizes[g] > limits[i]:
                    continue
                new_times = base + shares[g] * model.unit_times(masks[g] | 1 << i)
                new_score = _score(new_times)
                if _better(new_score, score) and (best is None or _better(new_score, best[0])):
                    best = (new_score, g, i, new_times)
        if best is None:
            return masks
        score, g, i, times = best
        masks[g] |= 1 << i
        used[i] += sizes[g]


def _random_start(num_gpus: int, sizes: np.ndarray, limits: np.ndarray, rng: np.random.Generator) -> list[int]:
    """Holder masks filling each GPU with copies of groups in a random order while they fit."""
    masks = [0] * sizes.shape[0]
    for i in range(num_gpus):
        free = limits[i]
        for g in rng.permutation(sizes.shape[0]):
            if sizes[g] <= free and rng.random() < 0.5:
                masks[g] |= 1 << i
                free -= sizes[g]
    return masks


def _placement(
    model: CostModel, masks: list[int], sizes: np.ndarray, shares: np.ndarray, baselines: dict[str, float]
) -> Placement:
    num_gpus = model.num_gpus
    times = model.times(masks, shares)
    worst = int(np.argmax(times)) if times.size else 0
    everyone = (1 << num_gpus) - 1
    holders = [tuple(i for i in range(num_gpus) if m >> i & 1) for m in masks]
    kinds = ["replicated" if m == everyone else "host" if m == 0 else "interleaved" for m in masks]
    gpu_bytes = [int(sum(sizes[g] for g, m in enumerate(masks) if m >> i & 1)) for i in range(num_gpus)]
    links = {model.resource_name(r): float(t) for r, t in enumerate(times) if t > 0}
    return Placement(holders, kinds, float(times[worst]), model.resource_name(worst), links, gpu_bytes, baselines)


def solve_placement(
    topology: GpuTopology,
    group_bytes: Sequence[float],
    group_share: Sequence[float],
    budgets: Sequence[float] | float,
    *,
    access_bytes: float = 1e9,
    search: bool = True,
) -> Placement:
    """Place ``K`` hotness-ordered row groups on the GPUs of ``topology`` (see the module docstring).

    ``group_bytes``, ``group_share``: float [K] (bytes of each group; share of every GPU's reads it
    receives, hottest first); ``budgets``: bytes each GPU may hold (one number or [G]);
    ``access_bytes``: bytes read per GPU per step (the objective is seconds per step).
    ``search=False`` skips the local search. Pure CPU logic.
    """
    sizes, shares, limits = _check_inputs(topology, group_bytes, group_share, budgets)
    model = CostModel(topology, access_bytes)
    cliques = topology.cliques()
    num_groups = sizes.shape[0]
    baselines = {"host-only": _score(model.times([0] * num_groups, shares))[0]}
    starts: list[tuple[tuple[float, float], list[int]]] = []
    for replicated in range(num_groups + 1):
        masks = _structured_start(model, cliques, sizes, shares, limits, replicated)
        if masks is None:
            break
        starts.append((_score(model.times(masks, shares)), masks))
    starts.sort(key=lambda item: item[0])
    best_score, best_masks = starts[0]
    everyone = (1 << topology.num_gpus) - 1
    fits = 0
    while fits < num_groups and np.all(sizes[: fits + 1].sum() <= limits):
        fits += 1
    baselines["replicate-only"] = _score(model.times([everyone] * fits + [0] * (num_groups - fits), shares))[0]
    baselines["replicate+interleave"] = best_score[0]
    if search:
        seeds = [masks for _, masks in starts[:SEARCH_STARTS]] + [_greedy_start(model, sizes, shares, limits)]
        if num_groups <= PAIR_MOVE_GROUPS:
            rng = np.random.default_rng(RESTART_SEED)
            seeds += [_random_start(topology.num_gpus, sizes, limits, rng) for _ in range(RANDOM_RESTARTS)]
        for masks in seeds:
            improved = _local_search(model, masks, sizes, shares, limits)
            score = _score(model.times(improved, shares))
            if _better(score, best_score):
                best_masks, best_score = improved, score
    return _placement(model, best_masks, sizes, shares, baselines)


def brute_force_placement(
    topology: GpuTopology,
    group_bytes: Sequence[float],
    group_share: Sequence[float],
    budgets: Sequence[float] | float,
    *,
    access_bytes: float = 1e9,
    max_assignments: int = 1 << 22,
) -> tuple[float, list[tuple[int, ...]]]:
    """The optimum of the same cost model by enumerating every holder set of every group.

    Returns (objective seconds, holders per group). OptionError when ``2^(G*K)`` exceeds ``max_assignments``.
    """
    sizes, shares, limits = _check_inputs(topology, group_bytes, group_share, budgets)
    model = CostModel(topology, access_bytes)
    num_gpus, num_groups = topology.num_gpus, sizes.shape[0]
    if (1 << (num_gpus * num_groups)) > max_assignments:
        raise OptionError(f"brute force: 2^({num_gpus}*{num_groups}) assignments exceed {max_assignments}")
    subsets = np.arange(1 << num_gpus)
    unit = np.stack([model.unit_times(int(m)) for m in subsets])  # [S, R]
    members = ((subsets[:, None] >> np.arange(num_gpus)[None, :]) & 1).astype(np.float64)  # [S, G]
    best = (float("inf"), [])
    for head in itertools.product(range(1 << num_gpus), repeat=max(0, num_groups - 1)):
        times = np.zeros(model.num_resources)
        used = np.zeros(num_gpus)
        for g, m in enumerate(head):
            times += shares[g] * unit[m]
            used += sizes[g] * members[m]
        if np.any(used > limits):
            continue
        last = num_groups - 1
        all_times = times[None, :] + shares[last] * unit  # [S, R]
        feasible = np.all(used[None, :] + sizes[last] * members <= limits[None, :], axis=1)
        objective = np.where(feasible, all_times.max(axis=1), np.inf)
        m = int(np.argmin(objective))
        if objective[m] < best[0]:
            chosen = list(head) + [m]
            best = (float(objective[m]), [tuple(i for i in range(num_gpus) if c >> i & 1) for c in chosen])
    return best


def row_groups(access_counts: np.ndarray, row_bytes: int, num_groups: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cut a hotness-sorted table into ``num_groups`` contiguous groups of (almost) equal row counts.

    ``access_counts``: float/int [N] reads (or scores) per row in table order (hottest first).
    Returns (int64 [K + 1] row boundaries, float64 [K] group bytes, float64 [K] read shares summing to 1).
    """
    counts = np.asarray(access_counts, dtype=np.float64)
    if num_groups < 1:
        raise OptionError(f"num_groups: expected at least 1, found {num_groups}")
    bounds = np.linspace(0, counts.shape[0], num_groups + 1).round().astype(np.int64)
    sums = np.add.reduceat(counts, bounds[:-1]) if counts.size else np.zeros(num_groups)
    sums[bounds[:-1] == bounds[1:]] = 0.0
    total = sums.sum()
    shares = sums / total if total > 0 else np.full(num_groups, 1.0 / num_groups)
    return bounds, np.diff(bounds).astype(np.float64) * row_bytes, shares
