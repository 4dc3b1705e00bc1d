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


def _runtime_env():
    """This test's environment for a runtime process, with none of glibc's
    malloc settings of its own."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    for name in ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_",
                 "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES",
                 allocator.TORCH_THP):
        env.pop(name, None)
    return env


def _placed_mlp(tmp_path, devices=1):
    export(MLP(), (torch.randn(8, 16),), str(tmp_path / "mlp.onnx"), ["x"],
           ["y"])
    place_by_hand(str(tmp_path / "mlp.onnx"), str(tmp_path / "p.onnx"),
                  lambda i, n: "cpu:%d" % (i % devices))


@pytest.mark.skipif(not _glibc_with_mallinfo2(),
                    reason="needs glibc 2.33 or later (mallinfo2)")
@pytest.mark.parametrize("pages", ["4k", "huge"])
def test_runtime_process_keeps_freed_memory(tmp_path, pages):
    """After a run of the runtime, its process takes a big block from its
    heap, not from a mapping of its own, and freeing it leaves the heap
    as large as it was: on 4 KiB pages (--no-huge-pages) and with the
    environment the runtime starts itself in for huge pages (the probe
    runs in this process, which must not start afresh)."""
    _placed_mlp(tmp_path)
    env = _runtime_env()
    args = ["run", "p.onnx", "--train", "--steps", "1", "--warmup", "0",
            "--threads", "1"]
    if pages == "4k":
        args.append(allocator.NO_HUGE_PAGES)
    else:
        env["GLIBC_TUNABLES"] = allocator.HUGETLB_TUNABLE + "=1"
    proc = subprocess.run(
        [sys.executable, "-c", CHILD] + args, cwd=str(tmp_path),
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


def test_huge_page_env_adds_the_tunable_and_keeps_the_others():
    """glibc.malloc.hugetlb=1 joins the tunables already set, torch's
    switch is set unless the user set it, and the given environment is
    left as it was."""
    given = {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0", "X": "1"}
    env = allocator.huge_page_env(given, glibc=(2, 36), mode="madvise")
    assert env["GLIBC_TUNABLES"] == \
        "glibc.malloc.tcache_count=0:glibc.malloc.hugetlb=1"
    assert env["THP_MEM_ALLOC_ENABLE"] == "1"
    assert env["X"] == "1"
    assert given == {"GLIBC_TUNABLES": "glibc.malloc.tcache_count=0",
                     "X": "1"}
    env = allocator.huge_page_env({"THP_MEM_ALLOC_ENABLE": "0"},
                                  glibc=(2, 35), mode="always")
    assert env["GLIBC_TUNABLES"] == "glibc.malloc.hugetlb=1"
    assert env["THP_MEM_ALLOC_ENABLE"] == "0"


@pytest.mark.parametrize("glibc, mode, tunables", [
    ((2, 34), "madvise", ""),                 # glibc without the tunable
    (None, "madvise", ""),                    # another C library
    ((2, 36), "never", ""),                   # the kernel gives none
    ((2, 36), None, ""),                      # a kernel without THP
    ((2, 36), "madvise", "glibc.malloc.hugetlb=0"),   # the user's choice
    ((2, 36), "always", "glibc.malloc.hugetlb=1"),    # already started so
])
def test_huge_page_env_changes_nothing(monkeypatch, glibc, mode, tunables):
    """Where the environment would change nothing, there is none, and
    exec_with_huge_pages returns instead of starting afresh."""
    monkeypatch.setattr(allocator, "_glibc_version", lambda: glibc)
    monkeypatch.setattr(allocator, "thp_mode", lambda: mode)
    if tunables:
        monkeypatch.setenv("GLIBC_TUNABLES", tunables)
    else:
        monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    assert allocator.huge_page_env(dict(os.environ)) is None

    def must_not_exec(*args):
        raise AssertionError("started afresh")

    monkeypatch.setattr(allocator.os, "execve", must_not_exec)
    allocator.exec_with_huge_pages(["run", "m.onnx"])


def test_no_huge_pages_option_keeps_the_process(monkeypatch):
    """--no-huge-pages: no fresh start, whatever the machine allows."""
    monkeypatch.setattr(allocator, "_glibc_version", lambda: (2, 36))
    monkeypatch.setattr(allocator, "thp_mode", lambda: "madvise")
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)

    def must_not_exec(*args):
        raise AssertionError("started afresh")

    monkeypatch.setattr(allocator.os, "execve", must_not_exec)
    allocator.exec_with_huge_pages(["run", "m.onnx",
                                    allocator.NO_HUGE_PAGES])


def test_thp_mode_reads_the_bracketed_word(tmp_path):
    path = tmp_path / "enabled"
    path.write_text("always [madvise] never\n")
    assert allocator.thp_mode(str(path)) == "madvise"
    path.write_text("[always] madvise never\n")
    assert allocator.thp_mode(str(path)) == "always"
    assert allocator.thp_mode(str(tmp_path / "missing")) is None


def test_glibc_version_is_parsed(monkeypatch):
    monkeypatch.setattr(allocator.os, "confstr", lambda name: "glibc 2.36")
    assert allocator._glibc_version() == (2, 36)
    monkeypatch.setattr(allocator.os, "confstr", lambda name: "glibc")
    assert allocator._glibc_version() == (0, 0)
    monkeypatch.setattr(allocator.os, "confstr", lambda name: "musl 1.2.4")
    assert allocator._glibc_version() is None


@pytest.mark.skipif(
    allocator.huge_page_env(_runtime_env()) is None,
    reason="glibc before 2.35 or a kernel without huge pages on request")
@pytest.mark.parametrize("option", [[], [allocator.NO_HUGE_PAGES]])
@pytest.mark.parametrize("ranks", [1, 2])
def test_runtime_starts_itself_on_huge_pages(tmp_path, option, ranks):
    """`python3 -m dp_torch run` started without the tunable runs with it
    (its report says so), unless told --no-huge-pages; the ranks of a
    two-rank run likewise."""
    _placed_mlp(tmp_path, ranks)
    report = str(tmp_path / "r.json")
    if ranks > 1:
        option = option + ["--nproc", str(ranks)]
    proc = subprocess.run(
        [sys.executable, "-m", "dp_torch", "run", "p.onnx", "--steps", "1",
         "--warmup", "0", "--threads", "1", "--report", report] + option,
        cwd=str(tmp_path), env=_runtime_env(), capture_output=True,
        text=True, timeout=RUN_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    with open(report) as f:
        got = json.load(f)
    assert got["ranks"] == ranks
    assert got["huge_pages"] is (allocator.NO_HUGE_PAGES not in option)
    assert got["huge_page_bytes"] is None or got["huge_page_bytes"] >= 0
