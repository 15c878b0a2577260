"""ThreadTeam: a general pool that splits a loop over a range between the caller and helper threads.

Used by the samplers (:mod:`graphtier.sampling.neighbor.sampler`), the CPU feature gathers
(:mod:`graphtier.memory.features.threads`) and the CPU training kernels (:mod:`graphtier.train.nn.kernel_threads`);
it depends on nothing in graphtier, so it sits at the bottom layer.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
from collections.abc import Callable

# Default smallest chunk a thread claims: a claim costs a few microseconds of Python.
DEFAULT_MIN_CHUNK = 2048


class ThreadTeam:
    """Split loops over a range between the calling thread and ``helpers`` helper threads.

    The work is cut into chunks that threads claim one at a time; the caller works too and returns
    as soon as every chunk is done. A helper that starts late (its core busy with another process)
    finds nothing left and no one waits for it. An OpenMP ``prange`` instead makes every parallel
    loop wait for all its threads, which on a busy machine measured up to 10x slower than one thread.
    Chunk functions must release the GIL (numba ``nogil``) for the helpers to run in parallel.
    """

    def __init__(self, helpers: int, *, name: str = "graphtier-worker") -> None:
        self.helpers = helpers
        self._pool = concurrent.futures.ThreadPoolExecutor(helpers, thread_name_prefix=name) if helpers else None

    def submit(self, work: Callable[[], None]) -> None:
        """Start ``work()`` on each helper thread (no-op without helpers); callers synchronise themselves."""
        if self._pool is not None:
            for _ in range(self.helpers):
                self._pool.submit(work)

    def run(self, work: Callable[[int, int], None], total: int, min_chunk: int = DEFAULT_MIN_CHUNK) -> None:
        """Call ``work(first, stop)`` over disjoint ranges covering [0, total); re-raises a chunk's error."""
        chunk = max(min_chunk, -(-total // (4 * (self.helpers + 1))))
        num_chunks = -(-total // chunk) if total else 0
        if self._pool is None or num_chunks <= 1:
            if total:
                work(0, total)
            return
        claims = itertools.count()
        finished = itertools.count(1)
        all_done = threading.Event()
        errors: list[BaseException] = []

        def claim_and_work() -> None:
            while (c := next(claims)) < num_chunks:
                try:
                    work(c * chunk, min(total, (c + 1) * chunk))
                except BaseException as exc:  # noqa: BLE001 - handed to the caller below
                    errors.append(exc)
                if next(finished) == num_chunks:
                    all_done.set()

        for _ in range(min(self.helpers, num_chunks - 1)):
            self._pool.submit(claim_and_work)
        claim_and_work()
        all_done.wait()
        if errors:
            raise errors[0]
