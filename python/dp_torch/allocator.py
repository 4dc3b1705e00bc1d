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

`huge_page_env` backs that heap with transparent huge pages (2 MiB) where
the kernel gives them on request (THP "madvise" or "always"): glibc 2.35
and later madvise its heaps when GLIBC_TUNABLES has glibc.malloc.hugetlb=1,
and torch 2.1 and later its own big blocks when THP_MEM_ALLOC_ENABLE=1.
Both are read when a process starts, so `python3 -m dp_torch` starts
itself once more with them (`exec_with_huge_pages`), and its ranks inherit
them. On this project's virtual machine memory-bound ops ran at
process-dependent speeds on 4 KiB pages (likely nested paging: a TLB miss
walks the guest's page tables, then the host's): the same single-device
GNMT-4 training step measured 462 to 705 ms per process (median of 10
steps; 4 processes) with 4 KiB pages and 413 to 422 ms with huge pages,
its minor faults down from 170 000 to 18 000 (docs/runtime.md).
"""

import ctypes
import os
import sys

# glibc's <malloc.h>.
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4

# (parameter, value) for mallopt, in this order.
SETTINGS = ((M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, -1))

# Where the kernel says whether it gives transparent huge pages.
THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"
# The glibc tunable, the first glibc that has it, and torch's switch.
HUGETLB_TUNABLE = "glibc.malloc.hugetlb"
HUGETLB_GLIBC = (2, 35)
TORCH_THP = "THP_MEM_ALLOC_ENABLE"
# The command line option that keeps a process on 4 KiB pages.
NO_HUGE_PAGES = "--no-huge-pages"


def _glibc_version():
    """(major, minor) of the glibc this process runs on ((0, 0) where it
    does not say), or None where the C library is not glibc."""
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        return None
    if not version or not version.startswith("glibc"):
        return None
    try:
        major, minor = version.split()[1].split(".")[:2]
        return int(major), int(minor)
    except (IndexError, ValueError):
        return 0, 0


def thp_mode(path=THP_ENABLED):
    """The kernel's transparent huge page mode ("always", "madvise",
    "never"), or None where it has none."""
    try:
        with open(path) as f:
            words = f.read().split()
    except OSError:
        return None
    for w in words:
        if w.startswith("[") and w.endswith("]"):
            return w[1:-1]
    return None


def _hugetlb_setting(tunables):
    """The value the GLIBC_TUNABLES text gives glibc.malloc.hugetlb,
    or None where it does not name it."""
    for t in tunables.split(":"):
        key, _, value = t.partition("=")
        if key == HUGETLB_TUNABLE:
            return value
    return None


def huge_pages_requested(environ=None):
    """Whether this process started with glibc.malloc.hugetlb set (to
    anything but 0)."""
    environ = os.environ if environ is None else environ
    return _hugetlb_setting(environ.get("GLIBC_TUNABLES", "")) not in (
        None, "", "0")


def huge_page_env(environ, glibc=None, mode=None):
    """The environment a new process needs for its heap on transparent
    huge pages: the given one with glibc.malloc.hugetlb=1 added to
    GLIBC_TUNABLES (the other tunables kept) and THP_MEM_ALLOC_ENABLE=1;
    None where it would change nothing (no glibc 2.35 or later, a kernel
    without huge pages on request, the tunable already set)."""
    glibc = _glibc_version() if glibc is None else glibc
    mode = thp_mode() if mode is None else mode
    if glibc is None or glibc < HUGETLB_GLIBC:
        return None
    if mode not in ("always", "madvise"):
        return None
    tunables = environ.get("GLIBC_TUNABLES", "")
    if _hugetlb_setting(tunables) is not None:
        return None
    env = dict(environ)
    env["GLIBC_TUNABLES"] = ":".join(
        [t for t in tunables.split(":") if t] + [HUGETLB_TUNABLE + "=1"])
    env.setdefault(TORCH_THP, "1")
    return env


def exec_with_huge_pages(argv):
    """Starts `python3 -m dp_torch ARGV` afresh in this process with
    huge_page_env, unless ARGV has --no-huge-pages or that environment
    changes nothing; returns only then."""
    if NO_HUGE_PAGES in argv:
        return
    env = huge_page_env(os.environ)
    if env is None or not sys.executable:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, [sys.executable, "-m", "dp_torch"] + argv,
                  env)
    except OSError:
        return  # run on as started, on 4 KiB pages


def huge_page_bytes():
    """Bytes of this process's anonymous memory on transparent huge pages
    (Linux: /proc/self/smaps_rollup), or None where it cannot tell."""
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _glibc_mallopt():
    """glibc's mallopt, or None where the C library is not glibc."""
    if _glibc_version() is None:
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
