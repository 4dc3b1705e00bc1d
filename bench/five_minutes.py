#!/usr/bin/env -S /usr/bin/python3
"""Runs a placer setting with dp-opt's default pipeline against the expert,
per model and seed, and prints the table docs/placers/mars.md quotes
("Defaults", "Five minutes with the defaults", "Mars then anneal").

  bench/five_minutes.py [--build build] [--cluster p100x4] [--jobs 2]
      [--models gnmt4,bert_base,corpus/torchvision/vit_b_16.onnx@64]
      [--seeds 1,2,3] [--place 'algo=mars,seconds=300'] [--place ...]

Each model goes through `import-onnx,training-graph,cost-annotate` once
(a path under models/ with `@N` imports at batch N), then, per --place
setting and seed, `colocate,place{SETTING},simulate` (colocate's default
`tf` strategy), as a user's `dp-opt -place` run does. The expert runs once
per model. Runs go --jobs at a time (one core each on the 2-core machine);
timed budgets (seconds=) are only comparable between runs made the same
way.
"""

import argparse
import concurrent.futures
import json
import os
import re
import sys
import tempfile

from dpbench import ROOT
from dpbench.models import LEARNED, VARIANTS
from dpbench.results import read_curve
from dpbench.runner import Tools, error_line, fail, run, run_measured

DEFAULT_MODELS = "gnmt4,nmt2,nmt4,resnet50,inception_v3,bert_base"
# The place{algo=} of the learned placers, which record a search curve
# (its lines count the placements).
LEARNED_ALGOS = sorted({VARIANTS[v].split(",")[0] for v in LEARNED})


def prepare(tools, model, cluster, workdir):
    """The model's costed training step, and a short name for it."""
    path, _, batch = model.partition("@")
    if not path.endswith(".onnx"):
        path = path + ".onnx"
    name = os.path.basename(path)[:-5] + (("@" + batch) if batch else "")
    importer = "import-onnx{batch=%s}" % batch if batch else "import-onnx"
    out = os.path.join(workdir, name + ".bc")
    cmd = [tools.dp_opt,
           "-passes=%s,training-graph,cost-annotate" % importer,
           "-cluster=" + cluster, os.path.join(ROOT, "models", path),
           "-o", out]
    r = run(cmd)
    if r.returncode:
        fail("%s failed:\n%s" % (" ".join(cmd), r.stderr))
    return name, out


def place(tools, bc, cluster, setting, seed, workdir, tag):
    """One colocate,place,simulate run: (step ms, samples, units, wall s),
    or an error string."""
    summary = os.path.join(workdir, tag + ".json")
    curve = os.path.join(workdir, tag + ".csv")
    cmd = [tools.dp_opt, "-seed=%d" % seed,
           "-passes=colocate,place{%s},simulate" % setting,
           "-cluster=" + cluster, "-quiet", "-disable-output",
           "-summary=" + summary, bc]
    if setting.split(",")[0] in LEARNED_ALGOS:
        cmd.append("-curve=" + curve)
    rc, _, err, wall, _ = run_measured(cmd)
    if rc:
        return error_line(err, rc)
    with open(summary) as f:
        step = json.load(f)["step_time_s"] * 1e3
    samples = len(read_curve(curve))
    m = re.search(r"(\d+) groups from", err)
    return step, samples, int(m.group(1)) if m else None, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--cluster", default="p100x4")
    ap.add_argument("--models", default=DEFAULT_MODELS)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--place", action="append",
                    help="place{} options (repeatable); default "
                         "algo=mars,seconds=300")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    tools = Tools(args.build)
    settings = args.place or ["algo=mars,seconds=300"]
    seeds = [int(s) for s in args.seeds.split(",")]
    with tempfile.TemporaryDirectory(prefix="dp-five-") as workdir:
        models = [prepare(tools, m, args.cluster, workdir)
                  for m in args.models.split(",")]
        runs = [(name, bc, "algo=expert", 1) for name, bc in models]
        runs += [(name, bc, s, seed) for s in settings
                 for name, bc in models for seed in seeds]
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = {
                key: pool.submit(place, tools, key[1], args.cluster, key[2],
                                 key[3], workdir, "run%d" % i)
                for i, key in enumerate(runs)}
            results = {key: f.result() for key, f in futures.items()}
    print("| model | units | setting | expert (ms) | " +
          " | ".join("seed %d (ms)" % s for s in seeds) +
          " | placements |")
    print("| --- | ---: | --- | ---: | " + " | ".join("---:" for _ in seeds) +
          " | ---: |")
    failed = False
    for name, bc in models:
        expert = results[(name, bc, "algo=expert", 1)]
        if isinstance(expert, str):
            fail("expert on %s: %s" % (name, expert))
        for s in settings:
            cells, samples = [], []
            for seed in seeds:
                r = results[(name, bc, s, seed)]
                if isinstance(r, str):
                    cells.append(r)
                    failed = True
                    continue
                cells.append("%.3f (%+.1f %%)" %
                             (r[0], 100 * (r[0] / expert[0] - 1)))
                if r[1]:
                    samples.append(str(r[1]))
            print("| %s | %s | `%s` | %.3f | %s | %s |" %
                  (name, expert[2], s, expert[0], " | ".join(cells),
                   ", ".join(samples)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
