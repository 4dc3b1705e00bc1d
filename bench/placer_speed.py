#!/usr/bin/env -S /usr/bin/python3
"""Re-measures the learned placers' samples/s at the settings of the
stored speed snapshot (bench/results/speed.csv, docs/results.md "dp's own
speed") and prints both, with their ratio, as the table bench/README.md
quotes ("Whole placer runs").

  bench/placer_speed.py [--build build] [--jobs 1] [--models gnmt4,bert_base]
      [--placers mars,colocrl,...]

Each run is seed 1 on p100x4, threads=1, after the colocation the harness
gives the placer (dpbench.models.colocation), on the harness's prepared
model (import-onnx, unroll-rnn, training-graph, cost-annotate). The
settings are those the snapshot's rows were measured at; where a default
has changed since, the old value is given explicitly (Mars: groups=0, its
hidden size). Options that did not exist then and whose defaults do more
work per sample (the decoder-state attention, Mars's paper features) stay
at today's defaults, so a ratio understates the speed-up at equal work.
samples/s is placements scored over the search's seconds (the curve's
last line, DGI pre-training included), as the snapshot counts it; since
2026-11-27 a placement sampled before is scored from the search's memory,
not simulated again (the run's last progress line, without -quiet, says
how many were simulated).

Each row is then run again with count-flops=true (lib/Learn/FlopCount.h:
libtorch's operators counted from their shapes, the fused loops by their
formula), which gives the floating-point operations per placement scored
(pre-training and policy updates included). With the timed run's
samples/s that is the GFLOP/s the placer achieved; against a 1024^3
matrix product's GFLOP/s on one thread (dp-bench-learn's BM_Matmul, the
better of a measurement before and one after the runs) it gives the
samples/s the core's arithmetic would allow, the "FLOP limit", and how
far the placer is from it; the work per sample is split into drawing
placements (no gradients) and training (gradients, backward passes, the
optimizer). --no-flops leaves the counted runs out; --flops-only the
timed ones (the counts do not depend on the machine's load).
"""

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile

from dpbench import ROOT
from dpbench.models import colocation
from dpbench.results import curve_flops, read_csv, read_curve
from dpbench.runner import Prepared, Tools, fail, place

# (variant, model) -> place{} options of the snapshot's row.
SETTINGS = {
    ("mars", "gnmt4"): "samples=3000,pretrain=1000,hidden=128,groups=0",
    ("mars", "bert_base"): "samples=6000,pretrain=1000,hidden=128,groups=0",
    ("mars-nopre", None): "samples=60,hidden=512,groups=0",
    ("colocrl", None): "samples=60",
    ("hierarchical", None): "samples=60",
    ("eagle", None): "samples=60",
    ("eagle-ce", None): "samples=60",
    ("placeto", None): "samples=15360",
}
PLACERS = ["mars", "mars-nopre", "colocrl", "hierarchical", "eagle",
           "eagle-ce", "placeto"]


def setting(variant, model):
    s = SETTINGS.get((variant, model)) or SETTINGS.get((variant, None))
    return s + ",threads=1"


def measure(tools, bc, variant, model, workdir, count_flops=False):
    """samples/s of one run (with count_flops: its floating-point
    operations per sample), or an error string."""
    os.makedirs(workdir, exist_ok=True)
    curve = os.path.join(workdir, "curve.csv")
    opts = setting(variant, model) + (",count-flops=true" if count_flops else "")
    o = place(tools, bc, "p100x4", variant, opts, colocation(variant, model),
              1, workdir, curve=curve)
    if o.error:
        return o.error
    c = read_curve(curve)
    if not c or c[-1][1] <= 0:
        return "no search curve"
    if count_flops:
        flops = curve_flops(curve)
        if not flops:
            return "no flops in the curve"
        return flops[0] / c[-1][0], flops[1] / c[-1][0]
    return c[-1][0] / c[-1][1]


def matmul_gflops(tools):
    """GFLOP/s of dp-bench-learn's 1024^3 matrix product on one thread."""
    with tempfile.TemporaryDirectory(prefix="dp-matmul-") as d:
        out = os.path.join(d, "matmul.json")
        r = subprocess.run(
            [tools.bench_learn, "--benchmark_filter=BM_Matmul$",
             "--benchmark_min_time=1", "--benchmark_out=" + out,
             "--benchmark_out_format=json"],
            capture_output=True, text=True)
        if r.returncode:
            fail("dp-bench-learn failed: " + r.stderr[-300:])
        with open(out) as f:
            b = json.load(f)["benchmarks"][0]
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]
    return 2.0 * 1024 ** 3 / (b["real_time"] * scale) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="gnmt4,bert_base")
    ap.add_argument("--placers", default=",".join(PLACERS))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--no-flops", action="store_true",
                    help="time only; no counted runs, no FLOP limit")
    ap.add_argument("--flops-only", action="store_true",
                    help="count only; no timed runs")
    args = ap.parse_args()
    if args.no_flops and args.flops_only:
        fail("--no-flops and --flops-only exclude each other")
    tools = Tools(args.build)
    stored = {r["what"]: r for r in read_csv(
        os.path.join(ROOT, "bench", "results", "speed.csv"))
        if r["section"] == "learned"}
    models = args.models.split(",")
    placers = args.placers.split(",")
    for p in placers:
        if p not in PLACERS:
            fail("unknown placer %r (one of %s)" % (p, ", ".join(PLACERS)))
    flops = not args.no_flops
    peak = matmul_gflops(tools) if flops else None
    with tempfile.TemporaryDirectory(prefix="dp-speed-") as workdir:
        prep = Prepared(tools, workdir)
        bcs = {m: prep.get(m, "p100x4") for m in models}
        runs = [(p, m) for m in models for p in placers]
        jobs = [] if args.flops_only else [(p, m, False) for p, m in runs]
        if flops:
            jobs += [(p, m, True) for p, m in runs]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = {
                job: pool.submit(measure, tools, bcs[job[1]], job[0], job[1],
                                 os.path.join(workdir, "run%d" % i), job[2])
                for i, job in enumerate(jobs)}
            results = {k: f.result() for k, f in futures.items()}
    if flops:
        peak = max(peak, matmul_gflops(tools))
        print("1024^3 matrix product: %.1f GFLOP/s on one thread\n" % peak)
    head = ["placer on model", "settings", "colocation", "samples/s now",
            "speed.csv", "ratio"]
    if flops:
        head += ["GFLOP per sample (drawing + training)", "GFLOP/s",
                 "FLOP limit (samples/s)", "of the limit"]
    print("| " + " | ".join(head) + " |")
    print("| --- | --- | --- |" + " ---: |" * (len(head) - 3))
    failed = False
    for p, m in runs:
        now = results.get((p, m, False), "not timed")
        old = stored.get("%s on %s: samples/s" % (p, m))
        old_v = float(old["value"]) if old and old["value"] else None
        if isinstance(now, str):
            failed = failed or not args.flops_only
            cells = [now, "%.2f" % old_v if old_v else "-", ""]
        else:
            cells = ["%.2f" % now, "%.2f" % old_v if old_v else "-",
                     "%.1fx" % (now / old_v) if old_v else ""]
        if flops:
            per = results[(p, m, True)]
            if isinstance(per, str):
                failed = True
                cells += [per, "", "", ""]
            else:
                total, training = per
                limit = peak * 1e9 / total
                cells.append("%.4f (%.4f + %.4f)" % (
                    total / 1e9, (total - training) / 1e9, training / 1e9))
                if isinstance(now, str):
                    cells += ["", "%.1f" % limit, ""]
                else:
                    cells += ["%.1f" % (now * total / 1e9), "%.1f" % limit,
                              "%.0f %%" % (100 * now / limit)]
        print("| %s on %s | %s | %s | %s |" % (
            p, m, setting(p, m).replace(",threads=1", ""),
            colocation(p, m), " | ".join(cells)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
