"""Workload-aware splitting of global mini-batches over trainer ranks, and the dynamic load balancer.

The Unified CPU-GPU Protocol §4.2: every training node gets an estimated workload (the number of edges aggregated in its
sampled computation graph, measured once by running the sampler). Each global batch is cut into one
contiguous sub-batch per rank so that rank ``k`` receives a ``shares[k]`` fraction of the batch's
estimated workload (not of its node count). Every ``rebalance_every`` iterations the shares move towards
equal finish times, using each rank's measured compute time (time waiting in the all-reduce excluded):
rank ``k`` processed workload ``w_k`` in ``t_k`` seconds, so its speed is ``w_k / t_k`` and the shares
that equalise finish times are proportional to the speeds. A tolerance band (hysteresis) leaves the
shares alone while the ranks already finish within ``tolerance`` of each other, and a damping factor
and a minimum share keep the ratio from oscillating or starving a rank.

All ranks run the same deterministic code on the same all-gathered inputs, so they agree on every split
without a coordinating process.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from graphtier._checks import check_choice
from graphtier.errors import OptionError
from graphtier.train.dist._workload_kernels import expected_tree_edges
from graphtier.train.options.spec import BALANCE_MODES  # noqa: F401 - re-exported


def device_class(device: str) -> str:
    """``cpu`` or ``cuda`` for a device string such as ``cpu`` or ``cuda:1``."""
    return "cuda" if device.startswith("cuda") else "cpu"


def initial_shares(
    devices: Sequence[str], cpu_share: float | None, shares: Sequence[float] | None = None
) -> np.ndarray:
    """float64 [world]: each rank's starting fraction of a batch's workload.

    Explicit per-rank ``shares`` are normalised and used as they are. Otherwise, with only one device
    class, the ranks share equally. With CPU and GPU ranks, the CPU ranks together
    get ``cpu_share`` (default 0.2) and the GPU ranks the rest, split equally within each class.
    """
    if shares is not None:
        given = np.asarray(shares, dtype=np.float64)
        if given.shape != (len(devices),) or (given <= 0).any():
            raise OptionError.invalid("shares", f"{len(devices)} positive values", list(shares), show=False)
        return given / given.sum()
    classes = [device_class(d) for d in devices]
    world = len(devices)
    if cpu_share is not None and not 0.0 < cpu_share < 1.0:
        raise OptionError.invalid("cpu_share", "a value in (0, 1)", cpu_share, show=False)
    if len(set(classes)) == 1:
        return np.full(world, 1.0 / world)
    share = 0.2 if cpu_share is None else cpu_share
    n_cpu = classes.count("cpu")
    n_gpu = world - n_cpu
    return np.array([share / n_cpu if c == "cpu" else (1.0 - share) / n_gpu for c in classes])


def split_by_workload(seeds: np.ndarray, workload: np.ndarray | None, shares: np.ndarray) -> list[np.ndarray]:
    """Cut ``seeds`` (int64 [B]) into ``len(shares)`` contiguous sub-batches.

    With ``workload`` (float [B], the estimate of each seed) rank ``k`` receives the seeds whose cumulative
    workload falls in its share of the total; without it (``--balance off``) the cut is by seed count.
    The sub-batches partition ``seeds`` exactly, in order.
    """
    seeds = np.asarray(seeds)
    count = seeds.shape[0]
    shares = np.asarray(shares, dtype=np.float64)
    boundaries = np.cumsum(shares)[:-1] / shares.sum()
    if workload is None or count == 0:
        cuts = np.rint(boundaries * count).astype(np.int64)
    else:
        weights = np.asarray(workload, dtype=np.float64)
        cumulative = np.cumsum(weights)
        total = cumulative[-1] if cumulative[-1] > 0 else 1.0
        # a seed goes to the rank whose slice of [0, 1) holds the middle of the seed's own workload
        midpoints = (cumulative - weights / 2) / total
        cuts = np.searchsorted(midpoints, boundaries, side="left").astype(np.int64)
    cuts = np.clip(np.maximum.accumulate(cuts), 0, count)
    return np.split(seeds, cuts)


def clamp_shares(shares: np.ndarray, min_share: float) -> np.ndarray:
    """Raise shares below ``min_share`` to it and scale the others down so the total stays 1."""
    out = np.asarray(shares, dtype=np.float64).copy()
    for _ in range(out.shape[0]):
        low = out < min_share - 1e-15
        if not low.any():
            break
        out[low] = min_share
        rest = ~low
        out[rest] *= (1.0 - min_share * low.sum()) / out[rest].sum()
    return out


class LoadBalancer:
    """Per-rank workload shares and their updates (``dynamic``), or fixed shares (``static``/``off``).

    Args:
        devices: one device string per rank.
        mode: ``dynamic`` (workload-aware split, shares updated), ``static`` (workload-aware split, fixed
            shares) or ``off`` (equal seed counts, no workload estimate).
        cpu_share: starting share of the CPU ranks together (mixed CPU/GPU runs).
        shares: explicit starting share of every rank (overrides ``cpu_share``).
        tolerance: hysteresis band: no update while ``max(t) / min(t) - 1`` is below it.
        damping: fraction of the way to the equal-finish shares taken at one update (1 = all the way;
            the tolerance band keeps noise inside it from moving the shares).
        min_share: no rank's share drops below this.
        history_windows: windows of (workload, time) per rank that the cost model is fitted to.
    """

    def __init__(
        self,
        devices: Sequence[str],
        mode: str = "dynamic",
        *,
        cpu_share: float | None = None,
        shares: Sequence[float] | None = None,
        tolerance: float = 0.08,
        damping: float = 1.0,
        min_share: float = 0.01,
        history_windows: int = 3,
    ) -> None:
        check_choice("balance", mode, BALANCE_MODES)
        self.devices = list(devices)
        self.mode = mode
        self.tolerance = tolerance
        self.damping = damping
        self.min_share = min(min_share, 1.0 / len(self.devices))
        self.history_windows = history_windows
        self._observations: list[list[tuple[float, float]]] = [[] for _ in self.devices]
        self.shares = (
            initial_shares(self.devices, cpu_share, shares)
            if mode != "off"
            else np.full(len(devices), 1.0 / len(devices))
        )
        self.ratio_history: list[dict[str, Any]] = [self._entry(0, None, None, changed=False)]

    @property
    def uses_workload(self) -> bool:
        return self.mode != "off"

    def cpu_share(self) -> float:
        """The CPU ranks' combined share of the workload."""
        return float(sum(s for s, d in zip(self.shares, self.devices) if device_class(d) == "cpu"))

    def _entry(
        self, iteration: int, compute: np.ndarray | None, imbalance: float | None, changed: bool
    ) -> dict[str, Any]:
        return {
            "iteration": iteration,
            "shares": [round(float(s), 6) for s in self.shares],
            "cpu_share": round(self.cpu_share(), 6),
            "compute_seconds": None if compute is None else [round(float(t), 6) for t in compute],
            "imbalance": None if imbalance is None else round(float(imbalance), 6),
            "changed": changed,
            "time": time.time(),
        }

    def update(
        self, iteration: int, compute_seconds: np.ndarray, workload_done: np.ndarray, iterations: int = 1
    ) -> bool:
        """Record one rebalance point; in ``dynamic`` mode move the shares. Returns True if they changed.

        ``compute_seconds`` and ``workload_done`` are float [world]: each rank's compute time and the
        estimated workload it processed over the ``iterations`` iterations since the previous rebalance.
        """
        compute = np.asarray(compute_seconds, dtype=np.float64)
        done = np.asarray(workload_done, dtype=np.float64)
        active = compute > 0
        imbalance = float(compute[active].max() / compute[active].min() - 1.0) if active.sum() >= 2 else 0.0
        changed = False
        if active.all() and (done > 0).all():
            for rank in range(len(self.devices)):
                self._observations[rank].append((done[rank] / iterations, compute[rank] / iterations))
                del self._observations[rank][: -self.history_windows]
        if self.mode == "dynamic" and active.all() and imbalance > self.tolerance and (done > 0).all():
            target = self._equal_finish_shares(done.sum() / iterations)
            new = (1.0 - self.damping) * self.shares + self.damping * target
            self.shares = clamp_shares(new / new.sum(), self.min_share)
            changed = True
        self.ratio_history.append(self._entry(iteration, compute, imbalance, changed))
        return changed

    def _cost_model(self, rank: int) -> tuple[float, float]:
        """(fixed seconds per iteration, seconds per unit of workload) of ``rank`` from its recent windows.

        A least-squares line through the last windows' (workload, time) points when their workloads
        differ enough, re-anchored through the newest point; a pure proportional model otherwise.
        """
        points = np.array(self._observations[rank])
        work, seconds = points[:, 0], points[:, 1]
        fixed = 0.0
        if len(points) >= 2 and work.max() - work.min() > 0.05 * work.mean():
            slope, intercept = np.polyfit(work, seconds, 1)
            if slope > 0:
                fixed = float(np.clip(intercept, 0.0, 0.8 * seconds[-1]))
        return fixed, (seconds[-1] - fixed) / work[-1]

    def _equal_finish_shares(self, total_work: float) -> np.ndarray:
        """Shares under which every rank's modelled time ``fixed_k + per_unit_k * w_k`` is the same."""
        models = [self._cost_model(rank) for rank in range(len(self.devices))]
        fixed = np.array([m[0] for m in models])
        per_unit = np.array([m[1] for m in models])
        finish = (total_work + (fixed / per_unit).sum()) / (1.0 / per_unit).sum()
        work = np.maximum((finish - fixed) / per_unit, 0.0)
        if work.sum() <= 0:
            work = 1.0 / per_unit
        return work / work.sum()


# ---------------------------------------------------------------------------------------------- workload
def estimate_workload(
    nodes: np.ndarray,
    *,
    sampler: str,
    indptr: np.ndarray,
    indices: np.ndarray,
    fanouts: Sequence[int],
    sample: Callable[[np.ndarray, int], Any] | None = None,
    samples: int = 3,
    batch_size: int = 256,
) -> np.ndarray:
    """float64 [len(nodes)]: estimated training workload of each node, plus one for its own row.

    ``neighbor``: the expected number of edges of the node's sampled L-hop tree, computed exactly
    (:func:`~graphtier.train.dist._workload_kernels.expected_tree_edges`). ``shadow``: the number of edges of
    its ShaDow subgraph, measured by running ``sample(seeds, batch_id)`` over batches of roots
    ``samples`` times and averaging. ``seed-only`` (the MLP): one per node.
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    if sampler == "seed-only":
        return np.ones(nodes.shape[0], dtype=np.float64)
    if sampler == "neighbor":
        return expected_tree_edges(indptr, indices, fanouts)[nodes] + 1.0
    if sample is None:
        raise ValueError("the shadow workload estimate needs the sampler")
    total = np.zeros(nodes.shape[0], dtype=np.float64)
    batch_id = 0
    for _ in range(samples):
        for start in range(0, nodes.shape[0], batch_size):
            chunk = nodes[start : start + batch_size]
            roots = np.unique(chunk)  # distinct and sorted: subgraph r belongs to roots[r]
            batch = sample(roots, batch_id)
            batch_id += 1
            assert batch.subgraph is not None
            destinations = batch.blocks[0].destinations()
            per_root = np.bincount(batch.subgraph[destinations].numpy(), minlength=roots.shape[0])
            total[start : start + chunk.shape[0]] += per_root[np.searchsorted(roots, chunk)]
    return total / max(samples, 1) + 1.0


def workload_cache_path(dataset_path: Path, key: dict[str, Any]) -> Path:
    """Where the workload estimate for ``key`` (sampler, fanouts, layers, seed, samples) is cached."""
    digest = hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]
    return dataset_path / ".graphtier-cache" / f"workload-{digest}.npy"


def cached_workload(
    dataset_path: Path,
    key: dict[str, Any],
    nodes: np.ndarray,
    compute: Callable[[], np.ndarray],
    log: Callable[[str], None] | None = None,
) -> np.ndarray:
    """Load the cached estimate for ``key`` or compute it and cache it next to the dataset.

    The cache file stores the node ids with the estimates and is ignored when they differ. A dataset
    directory that cannot be written is used without a cache (logged).
    """
    path = workload_cache_path(dataset_path, key)
    nodes = np.asarray(nodes, dtype=np.int64)
    if path.is_file():
        try:
            stored = np.load(path)
            if stored.shape == (2, nodes.shape[0]) and np.array_equal(stored[0].astype(np.int64), nodes):
                return stored[1]
        except (OSError, ValueError):
            pass
    start = time.perf_counter()
    workload = compute()
    if log:
        log(f"estimated the workload of {nodes.shape[0]:,} training nodes in {time.perf_counter() - start:.1f} s")
    try:
        path.parent.mkdir(exist_ok=True)
        tmp = path.parent / f".{path.name}.tmp"
        with open(tmp, "wb") as handle:
            np.save(handle, np.stack([nodes.astype(np.float64), workload]))
        tmp.replace(path)
    except OSError as exc:
        if log:
            log(f"could not cache the workload estimate in {path.parent} ({exc.strerror}); continuing without")
    return workload
