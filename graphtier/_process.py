"""Process-wide settings for training: OpenMP wait policy, thread counts, malloc tuning.

Nothing in graphtier changes them on import or inside a :class:`~graphtier.train.Trainer`; the command
line sets them when it starts (:func:`graphtier.cli.main`, then each command), and Python callers call
:func:`configure_threads` or :func:`configure_process` themselves (:func:`graphtier.train` does). This
module imports neither torch nor numba: ``configure_threads()`` must run before they are loaded for the
wait policy to take effect.
"""

from __future__ import annotations

import os
import sys
import warnings

from graphtier._host_memory import keep_freed_memory
from graphtier._openmp import OPENMP_USERS, WAIT_POLICY_VARIABLE, prefer_passive_wait
from graphtier.errors import OptionError


def _check_threads(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise OptionError(f"{name}= expected a positive integer or None, found {value!r}")


def configure_threads(
    num_threads: int | None = None, *, numba_threads: int | None = None, passive_wait: bool = True
) -> None:
    """Set this process's threading for training: idle OpenMP threads sleep, and the thread counts.

    Call it before importing torch (or anything that imports torch or numba): OpenMP reads
    ``OMP_WAIT_POLICY`` once, when torch or numba load, so this sets ``OMP_WAIT_POLICY=PASSIVE`` only while
    neither is loaded; called later it warns and leaves the wait policy as it is. A value the user set
    (``OMP_WAIT_POLICY=ACTIVE``) is always kept. Why passive: the sampler (numba) and the model (torch)
    share the cores, and spinning threads made epochs up to 2x slower (docs/decisions.md).

    Args:
        num_threads: torch's intra-op threads (also used by graphtier's CPU training kernels); None keeps
            torch's default.
        numba_threads: numba's threads (parallel graph kernels); None keeps numba's default.
        passive_wait: False leaves the wait policy alone (a spawned rank inherits its parent's environment).
    """
    _check_threads("num_threads", num_threads)
    _check_threads("numba_threads", numba_threads)
    if passive_wait and not prefer_passive_wait() and WAIT_POLICY_VARIABLE not in os.environ:
        loaded = ", ".join(name for name in OPENMP_USERS if name in sys.modules)
        warnings.warn(
            f"graphtier.configure_threads(): {loaded} is imported already, so {WAIT_POLICY_VARIABLE}=PASSIVE "
            "has no effect in this process (call configure_threads() before importing torch, or set "
            f"{WAIT_POLICY_VARIABLE} in the environment)",
            RuntimeWarning,
            stacklevel=2,
        )
    if num_threads is not None:
        import torch

        torch.set_num_threads(num_threads)
    if numba_threads is not None:
        import numba

        numba.set_num_threads(min(numba_threads, numba.config.NUMBA_NUM_THREADS))


def configure_process(
    num_threads: int | None = None, *, numba_threads: int | None = None, passive_wait: bool = True
) -> None:
    """What the command line sets before it trains: :func:`configure_threads` and malloc tuning.

    On glibc, freed host memory of the training step's tensors stays in the heap instead of going back
    to the kernel, so each step does not page-fault its activations in again
    (:func:`graphtier._host_memory.keep_freed_memory`; a no-op elsewhere). Call it before importing torch,
    like :func:`configure_threads`.
    """
    configure_threads(num_threads, numba_threads=numba_threads, passive_wait=passive_wait)
    keep_freed_memory()
