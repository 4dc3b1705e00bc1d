"""The runtime's malloc settings (allocator.py): under glibc a process of
the runtime keeps what it frees, instead of unmapping big blocks and
trimming its heap; elsewhere the settings are skipped without error."""

import json
import os
import subprocess
import sys

import pytest
import torch

from conftest import MLP, PYTHON_DIR, RUN_TIMEOUT, export, place_by_hand

from dp_torch import allocator

# A block far above the largest mmap threshold (32 MiB) and trim threshold
# (64 MiB) glibc sets of itself: by default it is mapped on its own, and
# were it on the heap's top its free would trim the heap.
PROBE_BYTES = 256 << 20

# Runs `python3 -m dp_torch ARGS...` in this process, then mallocs and
# frees a PROBE_BYTES block and prints glibc's statistics around it.
CHILD = r"""
import ctypes, json, runpy, sys

sys.argv = ["dp_torch"] + sys.argv[1:]
try:
    runpy.run_module("dp_torch", run_name="__main__", alter_sys=True)
    code = 0
except SystemExit as e:
    code = e.code

class Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
        "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Mallinfo2
libc.malloc.argtypes = [ctypes.c_size_t]
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
before = libc.mallinfo2()
block = libc.malloc(%d)
during = libc.mallinfo2()
libc.free(block)
after = libc.mallinfo2()
print(json.dumps({"code": code, "block": bool(block), "stats": [
    {f: getattr(s, f) for f, _ in Mallinfo2._fields_}
    for s in (before, during, after)]}))
""" % PROBE_BYTES


def _glibc_with_mallinfo2():
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (AttributeError, ValueError, OSError):
        return False
    if not version.startswith("glibc"):
        return False
    import ctypes
    return hasattr(ctypes.CDLL(None), "mallinfo2")


@pytest.mark.skipif(not _glibc_with_mallinfo2(),
                    reason="needs glibc 2.33 or later (mallinfo2)")
def test_runtime_process_keeps_freed_memory(tmp_path):
    """After a run of the runtime, its process takes a big block from its
    heap, not from a mapping of its own, and freeing it leaves the heap
    as large as it was."""
    export(MLP(), (torch.randn(8, 16),), str(tmp_path / "mlp.onnx"), ["x"],
           ["y"])
    place_by_hand(str(tmp_path / "mlp.onnx"), str(tmp_path / "p.onnx"),
                  lambda i, n: "cpu:0")
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    for name in ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_",
                 "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, "run", "p.onnx", "--train", "--steps",
         "1", "--warmup", "0", "--threads", "1"], cwd=str(tmp_path),
        env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["code"] == 0, proc.stderr
    assert out["block"]
    before, during, after = out["stats"]
    # Not mapped on its own: the bytes in mapped blocks did not grow, those
    # in use on the heaps did.
    assert during["hblkhd"] - before["hblkhd"] < PROBE_BYTES // 2, out
    assert during["uordblks"] - before["uordblks"] >= PROBE_BYTES, out
    # Freed, it stays with the process: the heaps did not shrink.
    assert during["arena"] - after["arena"] < PROBE_BYTES // 2, out


def test_glibc_settings_are_the_documented_ones():
    """M_MMAP_MAX 0 and M_TRIM_THRESHOLD -1, by <malloc.h>'s numbers."""
    assert dict(allocator.SETTINGS) == {-4: 0, -1: -1}


def test_other_c_libraries_are_left_alone(monkeypatch):
    """Where the C library is not glibc, nothing is called and nothing
    fails."""
    def no_such_name(name):
        raise ValueError("unrecognized configuration name")

    def must_not_load(*args, **kwargs):
        raise AssertionError("loaded a C library that is not glibc")

    monkeypatch.setattr(allocator.os, "confstr", no_such_name)
    monkeypatch.setattr(allocator.ctypes, "CDLL", must_not_load)
    assert allocator.keep_freed_memory() is False
    monkeypatch.setattr(allocator.os, "confstr", lambda name: "musl 1.2.4")
    assert allocator.keep_freed_memory() is False


def test_glibc_without_mallopt_is_left_alone(monkeypatch):
    """A glibc whose symbols lack mallopt: nothing fails."""
    class NoMallopt:
        def __init__(self, name):
            pass

        def __getattr__(self, name):
            raise AttributeError(name)

    monkeypatch.setattr(allocator.os, "confstr", lambda name: "glibc 2.36")
    monkeypatch.setattr(allocator.ctypes, "CDLL", NoMallopt)
    assert allocator.keep_freed_memory() is False


def test_mallopt_is_called_with_the_settings(monkeypatch):
    """Under glibc each setting goes to mallopt, in order; one refused
    makes the result False."""
    calls = []

    class Libc:
        def __init__(self, name):
            self.mallopt = self.Mallopt()

        class Mallopt:
            def __call__(self, param, value):
                calls.append((param, value))
                return 0 if param == -1 else 1

    monkeypatch.setattr(allocator.os, "confstr", lambda name: "glibc 2.36")
    monkeypatch.setattr(allocator.ctypes, "CDLL", Libc)
    assert allocator.keep_freed_memory() is False
    assert calls == list(allocator.SETTINGS)
