"""glibc malloc settings of the runtime's processes (docs/runtime.md).

By default glibc's malloc serves a block above its mmap threshold (128 KiB
at first, raised up to 32 MiB as such blocks are freed) with a mapping of
its own, unmapped when the block is freed, and gives the heap's free top
back to the system once it is larger than its trim threshold. The next
step's tensors then land on fresh pages, each written page a minor fault:
NMT-2's training step at the validation size took about 300 000 faults
and 0.9 s of system time per step, and 230 000 to 520 000 faults per step
under torch.profiler, whose regions held that time.

`keep_freed_memory` makes malloc keep what it got: no block is mapped on
its own (M_MMAP_MAX 0: every block comes from a heap) and the heap is
never trimmed (M_TRIM_THRESHOLD -1). A process then holds its high-water
mark until it exits, and a step reuses the pages of the steps before it.
On another C library, or without mallopt, it does nothing.
"""

import ctypes
import os

# glibc's <malloc.h>.
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4

# (parameter, value) for mallopt, in this order.
SETTINGS = ((M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, -1))


def _glibc_mallopt():
    """glibc's mallopt, or None where the C library is not glibc."""
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        return None
    if not version or not version.startswith("glibc"):
        return None
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError, TypeError):
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt


def keep_freed_memory():
    """Applies SETTINGS to glibc's malloc; whether every one took."""
    mallopt = _glibc_mallopt()
    if mallopt is None:
        return False
    return all([mallopt(param, value) == 1 for param, value in SETTINGS])
