#!/usr/bin/env -S /usr/bin/python3
"""The benchmark harness: the papers' experiments side by side with dp's,
and dp's own speed.

  bench/run.py quick|full|equal [--build DIR] [--parts p1,p2] [--models m1,m2]
               [--clusters c1,c2] [--placers v1,v2] [--seeds 1,2,3]
               [--samples N] [--anneal-seconds S] [--no-docs]

Parts (all by default): `placement` (every placer x model x cluster x seed:
bench/results/quality.csv, one row per run, and the curve CSVs of the
learned placers under bench/results/curves/), `papers` (the papers' tables
of bench/papers.json next to dp's relative improvements for the same
pairs), `curves` (SVG search curves of the learned placers on GNMT-4 and
BERT-Base), `generalize` (Mars Table 3 and Placeto's zero-shot on a family
of NMT graphs), `speed` (import, simulator, learned placers, cost
annotation, peak memory); `tables` regenerates the quality, papers and
curves sections from bench/results/ alone. Each part writes CSV under
bench/results/ and regenerates its section of docs/results.md (between
BEGIN/END markers); `papers` and `curves` read the CSVs that `placement`
wrote, so they can be rerun alone. The numbers in docs/results.md come
only from here. `bench/run.py validate ...` runs bench/validate.py.

The work is done by the package bench/dpbench/. The curves need Debian's
python3-matplotlib, the NMT family python3-onnx (with /usr/bin/python3).
"""

import argparse
import os
import sys
import tempfile
import time

# The package beside this file, also when run.py is loaded as a module.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dpbench import RESULTS, ROOT  # noqa: E402
from dpbench import charts, generalize, papers, speed, tables  # noqa: E402
from dpbench.models import (  # noqa: E402
    CLUSTERS, LEARNED, PRESETS, VARIANTS, budget_label)
from dpbench.results import (  # noqa: E402
    QUALITY_CSV, cells, headline, quality_key, read_csv, record_run)
from dpbench.runner import (  # noqa: E402
    Prepared, Tools, fail, log, part_placement)

# test/Bench/headline.test checks the choice of headline cells through
# these.
__all__ = ["cells", "headline", "quality_key", "main"]


def parse_args():
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("preset", choices=sorted(PRESETS))
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--parts", help="comma-separated: " +
                    ",".join(PRESETS["full"]["parts"]))
    ap.add_argument("--models")
    ap.add_argument("--learned-models",
                    help="models the learned placers run on")
    ap.add_argument("--clusters")
    ap.add_argument("--placers", help="variants: " + ",".join(VARIANTS))
    ap.add_argument("--seeds")
    ap.add_argument("--samples", type=int,
                    help="learned placers' budget in placements scored "
                         "(a Placeto move is one)")
    ap.add_argument("--pretrain", type=int, help="Mars's DGI iterations")
    ap.add_argument("--hidden", type=int,
                    help="one hidden size for every learned placer")
    ap.add_argument("--mars-hidden", type=int,
                    help="Mars's LSTM units (hidden=; default: dp's Mars default, 128)")
    ap.add_argument("--anneal-seconds", type=float)
    ap.add_argument("--gen-models", help="unseen models of Mars Table 3")
    ap.add_argument("--gen-train", type=int,
                    help="Mars Table 3: samples on the source model")
    ap.add_argument("--gen-finetune", type=int,
                    help="Mars Table 3: fine-tuning samples on the unseen")
    ap.add_argument("--family-samples", type=int,
                    help="Placeto family: samples of the whole training")
    ap.add_argument("--timeout", type=float,
                    help="seconds after which a placement run is killed "
                    "(recorded as an error)")
    ap.add_argument("--no-docs", action="store_true",
                    help="write CSV only, leave docs/results.md alone")
    return ap.parse_args()


def config(args):
    """The preset with the command line's selections over it."""
    cfg = dict(PRESETS[args.preset])
    for k in ("parts", "models", "learned_models", "clusters", "placers",
              "gen_models"):
        v = getattr(args, k)
        if v:
            cfg[k] = v.split(",")
    if args.seeds:
        cfg["seeds"] = [int(s) for s in args.seeds.split(",")]
    for k in ("samples", "pretrain", "mars_hidden", "hidden",
              "anneal_seconds", "timeout", "gen_train", "gen_finetune",
              "family_samples"):
        if getattr(args, k) is not None:
            cfg[k] = getattr(args, k)
    for v in cfg["placers"]:
        if v not in VARIANTS:
            fail("unknown placer variant '%s' (%s)" % (
                v, ", ".join(VARIANTS)))
    return cfg


def doc_papers(rows, command, tools, cfg):
    """The papers section, each learned placer at this preset's budget."""
    papers.doc_papers(rows, command, tools.gpu_memory(CLUSTERS),
                      {v: budget_label(v, cfg) for v in LEARNED})


def run_part(part, tools, prep, cfg, docs, command, workdir, rows):
    """Runs one part; returns the quality rows, which `placement`
    replaces."""
    if part == "placement":
        rows = part_placement(tools, prep, cfg, workdir)
        if docs:
            tables.doc_quality(rows, command)
    elif part == "tables":
        if docs:
            tables.doc_quality(rows, command)
            doc_papers(rows, command, tools, cfg)
            charts.part_curves(command)
    elif part == "papers":
        if docs:
            doc_papers(rows, command, tools, cfg)
    elif part == "curves":
        if docs:
            charts.part_curves(command)
    elif part == "generalize":
        generalize.part_generalize(tools, prep, cfg, command, workdir)
    elif part == "speed":
        speed.part_speed(tools, prep, cfg, command, workdir)
    else:
        fail("unknown part '%s'" % part)
    return rows


def main():
    if sys.argv[1:2] == ["validate-plans"]:
        # Plans simulated against measured: bench/validate_plans.py.
        import validate_plans
        return validate_plans.main(sys.argv[2:])
    if sys.argv[1:2] == ["validate"]:
        # Simulated against measured: bench/validate.py.
        import validate
        return validate.main(sys.argv[2:])
    args = parse_args()
    cfg = config(args)
    tools = Tools(os.path.abspath(args.build))
    command = "bench/run.py " + " ".join(
        os.path.relpath(a, ROOT) if os.path.isabs(a) else a
        for a in sys.argv[1:])
    os.makedirs(RESULTS, exist_ok=True)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dp-bench-") as workdir:
        prep = Prepared(tools, workdir)
        rows = read_csv(QUALITY_CSV)
        for part in cfg["parts"]:
            t0 = time.monotonic()
            log("== %s" % part)
            rows = run_part(part, tools, prep, cfg, not args.no_docs,
                            command, workdir, rows)
            log("== %s: %.0f s" % (part, time.monotonic() - t0))
    wall = time.monotonic() - start
    record_run(command, cfg["parts"], wall)
    if not args.no_docs:
        tables.doc_runs()
        tables.reorder_sections()
    log("done in %.0f s" % wall)


if __name__ == "__main__":
    main()
