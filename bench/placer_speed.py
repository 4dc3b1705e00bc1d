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
last line, DGI pre-training included), as the snapshot counts it.
"""

import argparse
import concurrent.futures
import os
import sys
import tempfile

from dpbench import ROOT
from dpbench.models import colocation
from dpbench.results import read_csv, read_curve
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


def measure(tools, bc, variant, model, workdir):
    """samples/s of one run, or an error string."""
    os.makedirs(workdir, exist_ok=True)
    curve = os.path.join(workdir, "curve.csv")
    o = place(tools, bc, "p100x4", variant, setting(variant, model),
              colocation(variant, model), 1, workdir, curve=curve)
    if o.error:
        return o.error
    c = read_curve(curve)
    if not c or c[-1][1] <= 0:
        return "no search curve"
    return c[-1][0] / c[-1][1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default="gnmt4,bert_base")
    ap.add_argument("--placers", default=",".join(PLACERS))
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    tools = Tools(args.build)
    stored = {r["what"]: r for r in read_csv(
        os.path.join(ROOT, "bench", "results", "speed.csv"))
        if r["section"] == "learned"}
    models = args.models.split(",")
    placers = args.placers.split(",")
    for p in placers:
        if p not in PLACERS:
            fail("unknown placer %r (one of %s)" % (p, ", ".join(PLACERS)))
    with tempfile.TemporaryDirectory(prefix="dp-speed-") as workdir:
        prep = Prepared(tools, workdir)
        bcs = {m: prep.get(m, "p100x4") for m in models}
        runs = [(p, m) for m in models for p in placers]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = {
                (p, m): pool.submit(measure, tools, bcs[m], p, m,
                                    os.path.join(workdir, "run%d" % i))
                for i, (p, m) in enumerate(runs)}
            results = {k: f.result() for k, f in futures.items()}
    print("| placer on model | settings | colocation | samples/s now | "
          "speed.csv | ratio |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    failed = False
    for p, m in runs:
        now = results[(p, m)]
        old = stored.get("%s on %s: samples/s" % (p, m))
        old_v = float(old["value"]) if old and old["value"] else None
        if isinstance(now, str):
            failed = True
            cell, ratio = now, ""
        else:
            cell = "%.2f" % now
            ratio = "%.1fx" % (now / old_v) if old_v else ""
        print("| %s on %s | %s | %s | %s | %s | %s |" % (
            p, m, setting(p, m).replace(",threads=1", ""),
            colocation(p, m), cell, "%.2f" % old_v if old_v else "-",
            ratio))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
