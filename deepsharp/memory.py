"""Freed memory kept for the next training step, not handed back to the system after each one.

A training step allocates and frees tens of megabytes of arrays. glibc's malloc gives memory
at the top of its heap back to the system once more than its trim threshold lies free there
(128 kB, until the process frees a block large enough to have been mapped on its own, which
raises the threshold to twice that block's size, up to 64 MB), and every page handed back costs
a page fault (a fresh zeroed page) when the next step allocates again. Measured in a fresh
process at one thread: the CNN benchmark's step took 5,100 page faults (35 ms a step against 22
without them), the transformer's 7,800 (78 ms against 55).

`keep_freed_memory()` (called by `fit`) mallocs and frees one block of just under 32 MB, once
per process, without touching it: glibc then raises its thresholds as it would for any program
that frees an array that large (allocations up to 32 MB come from the heap, and up to 64 MB of
freed heap memory is kept for reuse). Nothing else changes: no setting is written, and a
process whose thresholds were set (`MALLOC_TRIM_THRESHOLD_`, `MALLOC_MMAP_THRESHOLD_`,
`mallopt`) keeps them, since glibc then no longer moves them. Other C libraries: nothing is done.
"""

from __future__ import annotations

import ctypes
import os

# glibc raises its thresholds only for a freed mapped block of at most 32 MB (its
# DEFAULT_MMAP_THRESHOLD_MAX on 64-bit systems): a block a page-rounding short of that
BLOCK = (32 << 20) - (64 << 10)

_kept = False


def keep_freed_memory() -> bool:
    """Once per process on glibc: raise malloc's thresholds (see the module's docstring).
    Returns whether the block was allocated and freed now."""
    global _kept
    if _kept or not _glibc():
        return False
    _kept = True
    try:
        libc = ctypes.CDLL(None)
        libc.malloc.restype = ctypes.c_void_p
        libc.malloc.argtypes = (ctypes.c_size_t,)
        libc.free.argtypes = (ctypes.c_void_p,)
    except (OSError, AttributeError):
        return False
    block = libc.malloc(BLOCK)
    if not block:
        return False
    libc.free(block)
    return True


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (AttributeError, ValueError, OSError):  # not a GNU system
        return False
