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
IO_THREADS = 16
"""Threads of a gather from a table larger than the page cache: each page fault blocks its thread on the disk,
so the disk's queue holds as many reads as there are threads (4 KiB random reads here: 11k/s on 1 thread,
19k/s on 2, 48k/s on 8, 67k/s on 32)."""
IO_CHUNK_ROWS = 128
"""Rows per claimed chunk of such a gather: small, so the rows of one batch spread over all its threads."""


class GatherTeam:
    """Runs ``work(first, stop)`` over [0, rows) on ``numba.get_num_threads()`` threads of the caller.

    ``io_bound``: the rows come from a memory map larger than the page cache
    (:func:`graphtier.dataset.advice.outgrows_page_cache`), so the gather waits on the disk more than it
    computes: it runs on at least :data:`IO_THREADS` threads, in chunks of :data:`IO_CHUNK_ROWS` rows.
    """

    def __init__(self, row_bytes: int, *, io_bound: bool = False) -> None:
        self.io_bound = io_bound
        self.min_chunk_rows = IO_CHUNK_ROWS if io_bound else max(256, CHUNK_BYTES // max(1, row_bytes))
        self._teams: dict[int, ThreadTeam] = {}
        self._lock = threading.Lock()

    def run(self, work: Callable[[int, int], None], rows: int) -> None:
        """Call ``work`` on disjoint ranges covering [0, rows); small batches run on the calling thread only."""
        threads = numba.get_num_threads()
        if self.io_bound:
            threads = max(threads, IO_THREADS)
        if threads <= 1 or rows < 2 * self.min_chunk_rows:
            if rows:
                work(0, rows)
            return
        team = self._teams.get(threads)
        if team is None:
            with self._lock:
                team = self._teams.setdefault(threads, ThreadTeam(threads - 1, name="graphtier-gather"))
        team.run(work, rows, self.min_chunk_rows)
