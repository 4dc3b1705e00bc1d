#!/usr/bin/env python3
"""Builds seed corpora and runs dp's libFuzzer targets (docs/hardening.md).

    utils/fuzz.py [--build DIR] [--time SECONDS] [--dp-opt PATH] [TARGET...]

The targets are built first, in a clang-19 build with -DDP_BUILD_FUZZERS=ON
(DIR, build-fuzz by default, configured on first use); TARGET is a name
such as onnx-binary (all of them by default). Seeds come from models/, the
test suite (its inputs and split-file sections; the -passes pipelines its
RUN lines use) and, where Debian's libonnx-testdata is installed, its ONNX operator test
models. With a dp-opt (--dp-opt, or build/bin/dp-opt when there is one),
the bundled models are also turned into IR text and bytecode seeds.

Each target runs for --time seconds with a fixed libFuzzer seed, keeping
what it learns in DIR/fuzz/corpus/TARGET across runs; a crash, a sanitizer
report, a timeout (-timeout=10) or running out of memory (-rss_limit_mb)
fails it and leaves the input in DIR/fuzz/artifacts/TARGET. The last line
reads "fuzz: N passed, M failed".
"""

import argparse
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGETS = ["onnx-binary", "onnx-text", "ir-text", "bytecode", "pipeline",
           "cluster"]
ONNX_TESTDATA = "/usr/share/libonnx-testdata/data"


def split_file_sections(path):
    """Yields (name, text) for every '#--- name' section of a lit test."""
    name, lines = None, []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("#--- "):
                if name:
                    yield name, "".join(lines)
                name, lines = line[5:].strip(), []
            elif name:
                lines.append(line)
    if name:
        yield name, "".join(lines)


def test_files(*suffixes):
    for path in sorted(glob.glob(os.path.join(ROOT, "test", "**", "*"),
                                 recursive=True)):
        if os.path.isfile(path) and path.endswith(suffixes):
            yield path


def add_seed(corpus, data):
    if isinstance(data, str):
        data = data.encode()
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(corpus, name), "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def protoc_encode(text):
    """Binary ModelProto from protobuf text, or None."""
    protoc = shutil.which("protoc")
    if not protoc or not os.path.isfile("/usr/include/onnx/onnx.proto"):
        return None
    proc = subprocess.run([protoc, "-I/usr/include",
                           "--encode=onnx.ModelProto", "onnx/onnx.proto"],
                          input=text.encode(), capture_output=True)
    return proc.stdout if proc.returncode == 0 else None


def dp_opt_output(dp_opt, args):
    proc = subprocess.run([dp_opt] + args, capture_output=True)
    return proc.stdout if proc.returncode == 0 else None


def make_seeds(target, corpus, dp_opt):
    """Writes the seeds of \p target into \p corpus; returns how many."""
    os.makedirs(corpus, exist_ok=True)
    models = sorted(glob.glob(os.path.join(ROOT, "models", "*.onnx")))
    sections = [s for p in test_files(".test", ".dp", ".onnxtxt")
                for s in split_file_sections(p)]
    if target == "onnx-binary":
        for m in models:
            add_seed(corpus, read(m))
        for name, text in sections:
            if name.endswith(".textproto"):
                data = protoc_encode(text)
                if data:
                    add_seed(corpus, data)
        if os.path.isdir(ONNX_TESTDATA):
            for m in glob.glob(os.path.join(ONNX_TESTDATA, "*", "*",
                                            "model.onnx")):
                add_seed(corpus, read(m))
    elif target == "onnx-text":
        for p in test_files(".onnxtxt"):
            add_seed(corpus, read(p))
        for name, text in sections:
            if name.endswith(".onnxtxt"):
                add_seed(corpus, text)
    elif target in ("ir-text", "bytecode"):
        texts = [read(p) for p in test_files(".dp")]
        texts += [t.encode() for n, t in sections if n.endswith(".dp")]
        if dp_opt:
            for m in models:
                out = dp_opt_output(dp_opt, [m, "-S", "-o", "-"])
                if out:
                    texts.append(out)
        if target == "ir-text":
            for t in texts:
                add_seed(corpus, t)
        elif dp_opt:
            tmp = os.path.join(corpus, "input.dp.tmp")
            for t in texts:
                with open(tmp, "wb") as f:
                    f.write(t)
                out = dp_opt_output(dp_opt, [tmp, "-f", "-o", "-"])
                if out:
                    add_seed(corpus, out)
            os.remove(tmp)
    elif target == "pipeline":
        quoted = re.compile(r"""-passes=(?:'([^']*)'|"([^"]*)"|(\S+))""")
        for p in test_files(".test", ".dp", ".onnxtxt"):
            for m in quoted.finditer(read(p).decode("utf-8", "replace")):
                add_seed(corpus, next(g for g in m.groups() if g is not None))
    elif target == "cluster":
        for p in test_files(".json", ".yaml"):
            add_seed(corpus, read(p))
        for name, text in sections:
            if name.endswith((".json", ".yaml", ".yml")):
                add_seed(corpus, text)
    return len(os.listdir(corpus))


def build_fuzzers(args):
    """Configures (once) and builds the fuzz targets; returns success."""
    if not os.path.exists(os.path.join(args.build, "CMakeCache.txt")):
        cmd = ["cmake", "-S", ROOT, "-B", args.build, "-G", "Ninja",
               "-DLLVM_DIR=/usr/lib/llvm-14/lib/cmake/llvm",
               "-DCMAKE_C_COMPILER=" + args.cc,
               "-DCMAKE_CXX_COMPILER=" + args.cxx,
               "-DCMAKE_BUILD_TYPE=Release",
               "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -g1",
               "-DDP_BUILD_FUZZERS=ON", "-DDP_BUILD_TESTS=OFF",
               "-DDP_BUILD_BENCHMARKS=OFF"]
        if subprocess.call(cmd) != 0:
            return False
    return subprocess.call(["cmake", "--build", args.build, "-j",
                            str(args.build_jobs), "--target",
                            "dp-fuzzers"]) == 0


def run_target(args, target):
    binary = os.path.join(args.build, "bin", "dp-fuzz-" + target)
    if not os.access(binary, os.X_OK):
        print("fuzz %s: FAIL: %s is not built" % (target, binary))
        return False
    fuzz_dir = os.path.join(args.build, "fuzz")
    seeds = os.path.join(fuzz_dir, "seeds", target)
    corpus = os.path.join(fuzz_dir, "corpus", target)
    artifacts = os.path.join(fuzz_dir, "artifacts", target)
    # Inputs on which libonnx crashed and dp's guard caught it: no failure,
    # but nodes that deserve a check of their own (docs/hardening.md).
    caught = os.path.join(fuzz_dir, "caught", target)
    shutil.rmtree(seeds, ignore_errors=True)
    num_seeds = make_seeds(target, seeds, args.dp_opt)
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(artifacts, exist_ok=True)
    os.makedirs(caught, exist_ok=True)
    # Inputs left by earlier runs stay for the user; only new ones count.
    earlier = set(os.listdir(artifacts))
    earlier_caught = set(os.listdir(caught))
    log_path = os.path.join(fuzz_dir, target + ".log")
    cmd = [binary, corpus, seeds,
           "-max_total_time=%d" % args.time, "-timeout=10",
           "-rss_limit_mb=4096", "-seed=%d" % args.seed, "-print_final_stats=1",
           "-artifact_prefix=" + artifacts + "/"]
    if args.max_len:
        cmd += ["-max_len=%d" % args.max_len]
    if args.jobs > 1:
        cmd += ["-fork=%d" % args.jobs]
    if args.dp_option:
        cmd += ["-ignore_remaining_args=1"] + args.dp_option
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1")
    env["DP_FUZZ_CAUGHT_DIR"] = os.path.abspath(caught)
    symbolizer = shutil.which("llvm-symbolizer")
    if symbolizer:
        env.setdefault("ASAN_SYMBOLIZER_PATH", symbolizer)
    start = time.monotonic()
    with open(log_path, "w") as log:
        rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT,
                             env=env, timeout=args.time + 300)
    seconds = time.monotonic() - start
    text = open(log_path, encoding="utf-8", errors="replace").read()

    def stat(name):
        m = re.findall(r"^stat::%s:\s*(\d+)" % name, text, re.M)
        return int(m[-1]) if m else 0

    execs = stat("number_of_executed_units")
    per_sec = stat("average_exec_per_sec")
    # -fork=N prints no final stats; its status lines carry the totals.
    forked = re.findall(r"^#(\d+): cov: .* exec/s: (\d+)", text, re.M)
    if not execs and forked:
        execs, per_sec = int(forked[-1][0]), int(forked[-1][1])
    cov = re.findall(r"\bcov: (\d+)", text)
    crashes = len(set(os.listdir(artifacts)) - earlier)
    new_caught = len(set(os.listdir(caught)) - earlier_caught)
    ok = rc == 0 and crashes == 0
    print("fuzz %s: %s: %d seeds, %d execs in %d s (%d/s), coverage %s, "
          "%d crashing inputs%s%s" %
          (target, "PASS" if ok else "FAIL", num_seeds, execs, seconds,
           per_sec, cov[-1] if cov else "?", crashes,
           "; %d inputs crashed libonnx, caught by dp's guard (in %s)" %
           (new_caught, caught) if new_caught else "",
           "" if ok else " (log: %s, inputs: %s)" % (log_path, artifacts)))
    if not ok:
        sys.stdout.write(text[-3000:])
    return ok


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", metavar="TARGET",
                        help="one of: " + ", ".join(TARGETS))
    parser.add_argument("--build", default=os.path.join(ROOT, "build-fuzz"),
                        help="the fuzzer build (default: build-fuzz)")
    parser.add_argument("--time", type=int, default=30,
                        help="seconds per target (default: 30)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="fuzzing processes per target (-fork)")
    parser.add_argument("--seed", type=int, default=1,
                        help="libFuzzer's random seed (default: 1)")
    parser.add_argument("--dp-option", action="append", default=[],
                        metavar="OPTION",
                        help="a dp command-line option for the ONNX targets, "
                        "e.g. --dp-option=-onnx-skip-node-checks "
                        "(repeatable)")
    parser.add_argument("--max-len", type=int, default=0,
                        help="largest input in bytes (default: libFuzzer "
                        "picks it from the seeds)")
    parser.add_argument("--dp-opt", help="dp-opt for the IR seeds")
    parser.add_argument("--no-build", action="store_true",
                        help="run the targets as they are built")
    parser.add_argument("--build-jobs", type=int, default=2)
    parser.add_argument("--cc", default="clang-19")
    parser.add_argument("--cxx", default="clang++-19")
    args = parser.parse_args()
    if not args.dp_opt:
        default = os.path.join(ROOT, "build", "bin", "dp-opt")
        args.dp_opt = default if os.access(default, os.X_OK) else None
    for t in args.targets:
        if t not in TARGETS:
            parser.error("unknown target '%s' (expected one of: %s)" %
                         (t, ", ".join(TARGETS)))
    targets = args.targets or TARGETS
    if not args.no_build and not build_fuzzers(args):
        print("fuzz: the fuzz targets did not build")
        print("fuzz: 0 passed, %d failed" % len(targets))
        return 1
    passed = failed = 0
    for target in targets:
        if run_target(args, target):
            passed += 1
        else:
            failed += 1
    print("fuzz: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
