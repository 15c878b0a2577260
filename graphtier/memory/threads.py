"""Split one gather's rows between the calling thread and helper threads, without waiting for late ones.

The CPU gathers used to be numba ``prange`` loops (an OpenMP parallel region). A parallel region waits
for every one of its threads; when another process holds a core, that wait costs a scheduler slice per
call: measured on a 2-core machine shared with another process, 4 sampler batches of cnr-2000 took 60 ms through ``prange`` (and
through ``torch.index_select``, also OpenMP) against 10-15 ms on one thread. Here the rows are cut into
chunks that threads claim one at a time (:class:`graphtier._threads.ThreadTeam`, as the
sampler does): the caller works too, and a helper that starts late finds nothing left.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numba

from graphtier._threads import ThreadTeam

# At least this many bytes of rows per chunk: a claim costs a few microseconds of Python.
CHUNK_BYTES = 1 << 20


class GatherTeam:
    """Runs ``work(first, stop)`` over [0, rows) on ``numba.get_num_threads()`` threads of the caller."""

    def __init__(self, row_bytes: int) -> None:
        self.min_chunk_rows = max(256, CHUNK_BYTES // max(1, row_bytes))
        self._teams: dict[int, ThreadTeam] = {}
        self._lock = threading.Lock()

    def run(self, work: Callable[[int, int], None], rows: int) -> None:
        """Call ``work`` on disjoint ranges covering [0, rows); small batches run on the calling thread only."""
        threads = numba.get_num_threads()
        if threads <= 1 or rows < 2 * self.min_chunk_rows:
            if rows:
                work(0, rows)
            return
        team = self._teams.get(threads)
        if team is None:
            with self._lock:
                team = self._teams.setdefault(threads, ThreadTeam(threads - 1, name="graphtier-gather"))
        team.run(work, rows, self.min_chunk_rows)
