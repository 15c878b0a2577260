"""Keep freed host memory in the process, so per-step tensors of a training loop do not page-fault.

A training step allocates and frees the same large CPU tensors (activations, gradients: ~20 MB each
for a 40k x 128 float32 block) every step. glibc's malloc serves such sizes with fresh ``mmap``
pages, which the kernel zero-fills on first touch, and returns them with ``munmap`` when freed, so
every step pays thousands of page faults for memory it had a moment ago. :func:`keep_freed_memory`
raises glibc's mmap threshold to its maximum (32 MiB) and its trim threshold, so these blocks come
from and go back to the heap, which keeps them mapped. Blocks above 32 MiB (GAT's per-edge tensors:
186k edges x 4 heads x 32 floats = 95 MB a layer on the 1M-node benchmark; any layer of 65k+ rows at
hidden 128) would still be mmapped each time, so it also turns mmap off for malloc (``M_MMAP_MAX`` 0):
every block comes from the heap (glibc still falls back to mmap if the heap cannot grow). Measured on
the 1M-node benchmark graph, fanouts 15,10,5, 2 threads, second epoch: GAT 31.5 s -> 23.2 s. Resident
memory then stays at the loop's peak instead of dropping between steps. On other C libraries (musl,
macOS, Windows) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

# mallopt parameters (glibc malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_MMAP_MAX = -4
# glibc's largest allowed mmap threshold on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX)
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
TRIM_THRESHOLD_BYTES = 1024 * 1024 * 1024

_applied: bool | None = None


def keep_freed_memory() -> bool:
    """Tune glibc malloc once per process (see the module doc); True when the settings took effect."""
    global _applied
    if _applied is not None:
        return _applied
    _applied = False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    _applied = (
        bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES))
        and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))
        and bool(mallopt(_M_MMAP_MAX, 0))
    )
    return _applied
