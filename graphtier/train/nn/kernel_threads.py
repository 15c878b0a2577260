"""Split a CPU kernel's rows between torch's intra-op thread count of threads (the training kernels).

The aggregation and dropout kernels are sequential numba functions that release the GIL; they run on
the calling thread plus ``torch.get_num_threads() - 1`` helpers of a :class:`ThreadTeam` (chunks claimed
one at a time, so a helper whose core is busy does not hold the step up, unlike an OpenMP loop).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import torch

from graphtier._threads import ThreadTeam

# Loops over fewer items than this run on the calling thread only.
MIN_PARALLEL_ITEMS = 4096

_teams: dict[int, ThreadTeam] = {}
_lock = threading.Lock()


def _team(threads: int) -> ThreadTeam:
    with _lock:
        team = _teams.get(threads)
        if team is None:
            team = _teams[threads] = ThreadTeam(threads - 1, name="graphtier-kernel")
        return team


def run_split(work: Callable[[int, int], None], total: int, min_chunk: int = MIN_PARALLEL_ITEMS) -> None:
    """Call ``work(first, stop)`` over disjoint ranges covering ``[0, total)``, in parallel when large."""
    threads = torch.get_num_threads()
    if threads <= 1 or total < 2 * min_chunk:
        if total:
            work(0, total)
        return
    _team(threads).run(work, total, min_chunk)
