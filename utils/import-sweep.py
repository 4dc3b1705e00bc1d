#!/usr/bin/env python3
"""Runs dp-opt over every model.onnx under a directory and sorts the runs.

    utils/import-sweep.py [-j N] [--timeout S] [--passes P] [--cluster C]
                          DP_OPT DIR

Each model is run alone (dp-opt -disable-output, with -passes=P when given),
under a time limit. A run either succeeds, or fails with located errors:
exit code 1 and every line of its standard error reading
"dp-opt: <the model's path>: ... error: <message>". Anything else is a
finding: an unlocated error, a crash (a signal, an abort, a sanitizer
report, any other exit code) or a hang (the time limit). The last line
counts the four kinds:

    ok: 985, located errors: 87, unlocated errors: 0, crashes: 0, hangs: 0

and each finding is listed above it. Debian's libonnx-testdata ships the
ONNX operator test cases under /usr/share/libonnx-testdata/data
(test/Import/onnx-testdata.test sweeps them).
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys


def run_one(args, path):
    cmd = [args.dp_opt, "-disable-output", path]
    if args.passes:
        cmd += ["-passes=" + args.passes]
    if args.cluster:
        cmd += ["-cluster=" + args.cluster]
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return "hang", "no result after %g s" % args.timeout
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode == 0:
        return "ok", ""
    if proc.returncode != 1:
        return "crash", "exit code %d: %s" % (proc.returncode,
                                              err.strip()[-2000:])
    located = re.compile(r"^dp-opt: " + re.escape(path) + r": .*error: \S")
    lines = [l for l in err.splitlines() if l.strip()]
    if lines and all(located.match(l) for l in lines):
        return "located", ""
    return "unlocated", err.strip()[-2000:]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dp_opt")
    parser.add_argument("dir")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--passes", default="")
    parser.add_argument("--cluster", default="")
    args = parser.parse_args()

    models = []
    for root, _, files in os.walk(args.dir, followlinks=True):
        if "model.onnx" in files:
            models.append(os.path.join(root, "model.onnx"))
    models.sort()
    if not models:
        sys.exit("import-sweep: no model.onnx under " + args.dir)

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(lambda p: run_one(args, p), models))

    counts = {k: 0 for k in ("ok", "located", "unlocated", "crash", "hang")}
    for path, (kind, detail) in zip(models, results):
        counts[kind] += 1
        if kind not in ("ok", "located"):
            print("%s: %s: %s" % (kind, path, detail))
    print("models: %d" % len(models))
    print("ok: %d, located errors: %d, unlocated errors: %d, crashes: %d, "
          "hangs: %d" % (counts["ok"], counts["located"], counts["unlocated"],
                         counts["crash"], counts["hang"]))


if __name__ == "__main__":
    main()
