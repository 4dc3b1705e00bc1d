#!/usr/bin/env -S /usr/bin/python3
"""Runs placers x colocation strategies x models on a cluster and writes the
results table: bench/results/placement-<cluster>.csv and the section of
docs/results.md between its BEGIN/END markers for that cluster.

  bench/placement.py [--build build] [--cluster p100x4] [--quick]
                     [--models m1,m2] [--placers p1,p2] [--strategies s1,s2]
                     [--seeds 1,2,3] [--anneal-seconds 20]

Each model is imported, unrolled, turned into a training step (Adam) and
costed once (roofline); every (strategy, placer, seed) then runs
colocate/place/simulate on that IR and the simulator's JSON summary is
collected. The work is done by bench/dpbench/strategies.py.
"""

import argparse
import os
import sys

from dpbench import ROOT
from dpbench.models import LEARNED, PRESETS, QUICK_STRATEGIES, \
    STRATEGIES, VARIANTS
from dpbench.runner import Tools, fail
from dpbench.strategies import csv_path, run_grid
from dpbench.tables import doc_strategies


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--cluster", default="p100x4")
    ap.add_argument("--quick", action="store_true",
                    help="3 models, 2 strategies, 1 seed, anneal 5 s")
    ap.add_argument("--models")
    ap.add_argument("--placers")
    ap.add_argument("--strategies")
    ap.add_argument("--seeds", help="default: 1,2,3")
    ap.add_argument("--anneal-seconds", type=float, help="default: 20")
    args = ap.parse_args()
    preset = PRESETS["quick" if args.quick else "full"]
    tools = Tools(os.path.abspath(args.build))
    models = args.models.split(",") if args.models else preset["models"]
    strategies = args.strategies.split(",") if args.strategies else (
        QUICK_STRATEGIES if args.quick else STRATEGIES)
    have = tools.placers()
    placers = args.placers.split(",") if args.placers else [
        v for v in VARIANTS if v not in LEARNED and v in have]
    for v in placers:
        if v not in VARIANTS:
            fail("unknown placer variant '%s' (%s)" % (
                v, ", ".join(VARIANTS)))
    seeds = [int(s) for s in args.seeds.split(",")] if args.seeds \
        else preset["seeds"]
    anneal_seconds = preset["anneal_seconds"] \
        if args.anneal_seconds is None else args.anneal_seconds
    command = "bench/placement.py " + " ".join(sys.argv[1:])
    st = run_grid(tools, args.cluster, models, strategies, placers, seeds,
                  anneal_seconds)
    doc_strategies(args.cluster, st, command, seeds)
    print("wrote %s and docs/results.md" % os.path.relpath(
        csv_path(args.cluster), ROOT))


if __name__ == "__main__":
    main()
