"""OpenMP wait policy: idle OpenMP threads sleep instead of spinning (graphtier's default).

torch (ATen, MKL) and numba's ``omp`` threading layer each run an OpenMP thread team. graphtier's
trainer runs the sampler and the feature gather (numba) in a producer thread while the model trains
(torch), so on a small machine the two teams share the cores. With OpenMP's default wait policy a
thread that finished its part of a parallel loop spins for a while, taking the core from a thread
that still has work: measured on a 2-core machine with another process busy (docs/decisions.md), a
GraphSAGE epoch took 2.4 s with spinning threads and 1.4 s with sleeping ones, and 16 s against 1.5 s
with ``--prefetch 0``.

The runtimes read ``OMP_WAIT_POLICY`` once, when they are loaded, so it must be set before torch or
numba are imported: the command line calls :func:`prefer_passive_wait` when it starts, before it imports
a command, and Python callers call :func:`graphtier.configure_threads` before importing torch
(:mod:`graphtier._process`). Importing graphtier sets nothing. A value the user set
(``OMP_WAIT_POLICY=ACTIVE``) is kept.
"""

from __future__ import annotations

import os
import sys

WAIT_POLICY_VARIABLE = "OMP_WAIT_POLICY"
OPENMP_USERS = ("torch", "numba")


def prefer_passive_wait() -> bool:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the user set it or an OpenMP user is already loaded.

    Returns True when the variable was set by this call.
    """
    if WAIT_POLICY_VARIABLE in os.environ:
        return False
    if any(name in sys.modules for name in OPENMP_USERS):
        return False  # too late: the runtime has read its settings already
    os.environ[WAIT_POLICY_VARIABLE] = "PASSIVE"
    return True
