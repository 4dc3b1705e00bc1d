"""dp's benchmark harness, behind bench/run.py and bench/placement.py.

- models: the models, clusters, placer variants, colocation strategies and
  presets every part uses, and the place{} options each run gets;
- runner: running dp-opt (timeouts, the child's rusage) and turning its
  summaries into result rows;
- results: reading, merging and writing the CSVs of bench/results/, and
  choosing the cells the tables quote;
- tables: the BEGIN/END sections of docs/results.md, and the quality, runs
  and colocation-strategy tables;
- papers, charts, generalize, speed: one part each (the papers side by
  side, the search curves, Mars Table 3 and Placeto's zero-shot, dp's own
  speed), with its section;
- strategies: colocation strategies x placers on one cluster.
"""

import os

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(BENCH)
RESULTS = os.path.join(BENCH, "results")
CURVES = os.path.join(RESULTS, "curves")
DOCS = os.path.join(ROOT, "docs", "results.md")


def find_dp_opt(build, script):
    """dp-opt in \\p build's bin/, or exits naming \\p script."""
    import sys
    dp_opt = os.path.join(os.path.abspath(build), "bin", "dp-opt")
    if not os.path.isfile(dp_opt):
        sys.exit("%s: no dp-opt in %s" % (script, build))
    return dp_opt


def parse_bench_args(script, doc, models, csv_path, write_docs, extra):
    """The flags of a simulating bench (bench/pipeline.py, bench/plans.py):
    --build, --models (default \\p models), --no-docs, --tables and those
    \\p extra adds to the parser. With --tables, rebuilds the section from
    \\p csv_path with \\p write_docs and returns None; else (args, the
    dp-opt to run)."""
    import argparse
    import csv
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default=",".join(models))
    extra(ap)
    ap.add_argument("--no-docs", action="store_true")
    ap.add_argument("--tables", action="store_true")
    args = ap.parse_args()
    if args.tables:
        with open(csv_path) as f:
            write_docs(list(csv.DictReader(f)), "%s; tables by %s --tables"
                       % (script, script))
        return None
    return args, find_dp_opt(args.build, script)
