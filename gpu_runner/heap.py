"""glibc's heap in the evaluator's processes: keep large freed blocks for re-use.

By default glibc serves every block above a threshold (at most 32 MiB, raised as blocks are freed) with its own
mapping and unmaps it on free, so a process that allocates and frees output-sized tensors page-faults every one
of them in full (about 1 ms per 4 MiB on the 2-core development machine). That cost is the harness's, not the
kernel's, and it differed between processes: a solution whose child keeps a batch's outputs for the checks
faulted some 12,000 pages per timed call (its poison block and its output), where the trusted null call of the
clock audit faulted none, and the audit took the difference for the solution's own time and rejected honest
CPU kernels as `timing_forged` (docs/ANTICHEAT.md). With freed memory kept, a block is faulted once, the poison
block's memory is usually the memory the next output gets (below), and every process's harness costs the same
per call. Every child sets this before torch is imported, and the parent
(warm.WarmPool) for its comparisons.

A block freed before is usually, not always, what the next allocation of its size gets: poisoning makes
unwritten output elements likely to read as NaN on a CPU, not certain. And a forward that makes large
temporaries of many sizes can leave holes in a heap that no longer gives memory back: with the children's
address-space limit (8 GiB on a CPU), a solution near it may run out of memory where per-block mappings
would not have.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
# Tried in order: some glibc versions refuse a threshold over 32 MiB (mallopt(3)).
MMAP_THRESHOLDS = (512 << 20, 32 << 20)
TRIM_THRESHOLD_BYTES = (1 << 31) - 1  # mallopt takes a C int


def keep_freed_memory(trim_bytes: int = TRIM_THRESHOLD_BYTES) -> int:
    """Blocks under the returned threshold come from the heap, and freed memory stays mapped up to trim_bytes
    (this process only). Returns the mmap threshold now in force, in bytes: 0 where the C library has no
    mallopt (not glibc) or took none of the values."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c"))
        except OSError:
            return 0
    try:
        threshold = next((t for t in MMAP_THRESHOLDS if libc.mallopt(M_MMAP_THRESHOLD, t)), 0)
        trimmed = bool(libc.mallopt(M_TRIM_THRESHOLD, min(trim_bytes, TRIM_THRESHOLD_BYTES)))
    except AttributeError:
        return 0
    return threshold if trimmed else 0
