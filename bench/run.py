#!/usr/bin/env python3
"""The benchmark harness of issue 8: the papers' experiments side by side
with dp's, and dp's own speed.

  bench/run.py quick|full [--build DIR] [--parts p1,p2] [--models m1,m2]
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
curves sections from bench/results/ alone. Each part writes CSV under bench/results/ and
regenerates its section of docs/results.md (between BEGIN/END markers);
`papers` and `curves` read the CSVs that `placement` wrote, so they can be
rerun alone. The numbers in docs/results.md come only from here.

Only the Python standard library is used (the NMT family needs Debian's
/usr/bin/python3 with python3-onnx, run as a subprocess).
"""

import argparse
import csv
import datetime
import json
import math
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
RESULTS = os.path.join(BENCH, "results")
CURVES = os.path.join(RESULTS, "curves")
DOCS = os.path.join(ROOT, "docs", "results.md")

MODELS = ["inception_v3", "resnet50", "gnmt4", "nmt2", "nmt4", "bert_base"]
CLUSTERS = ["p100x4", "k80x4", "h100x8"]
# Placer variants: name -> place{...} options. `gpu-only` is the papers'
# single-GPU baseline (it reports OOM where the step does not fit); `single`
# is dp's fastest device that holds the step.
VARIANTS = {
    "single": "algo=single",
    "gpu-only": "algo=single,device=gpu:0",
    "cpu-only": "algo=cpu-only",
    "expert": "algo=expert",
    "metis": "algo=metis",
    "scotch": "algo=scotch",
    "m-topo": "algo=m-topo",
    "m-etf": "algo=m-etf",
    "m-sct": "algo=m-sct",
    "anneal": "algo=anneal",
    "mars": "algo=mars",
    "mars-nopre": "algo=mars,pretrain=0",
    "colocrl": "algo=colocrl",
    "hierarchical": "algo=hierarchical",
    "eagle": "algo=eagle",
    "eagle-ce": "algo=eagle,train=ppo-ce",
    "placeto": "algo=placeto",
}
LEARNED = ["mars", "mars-nopre", "colocrl", "hierarchical", "eagle",
           "eagle-ce", "placeto"]
# Samples between two policy updates (docs/placers/*.md): the gap in the
# curve's seconds after every such sample is the update's time.
UPDATE_EVERY = {"mars": 20, "mars-nopre": 20, "eagle": 10, "eagle-ce": 10,
                "colocrl": 4, "hierarchical": 4}
# Graphs whose training step has thousands of units after `unroll-rnn`.
RNN_MODELS = {"gnmt4", "nmt2", "nmt4"}
MERGE = "merge{groups=256}"
# Mars's groups where 256 would barely coarsen the graph: Inception-V3 has
# 342 units, and merging to 256 left Mars 2.5 % and 3.9 % behind the expert
# (seeds 1, 2; 3,000 samples) where merge{groups=128}, 177 groups, put it
# ahead on seeds 1 to 3 (docs/placers/mars.md).
MARS_MERGE = {"inception_v3": "merge{groups=128}"}

PRESETS = {
    "quick": {
        "parts": ["placement", "papers", "curves", "generalize", "speed"],
        "models": ["inception_v3", "gnmt4", "bert_base"],
        "learned_models": ["gnmt4", "bert_base"],
        "clusters": ["p100x4"],
        "placers": ["single", "gpu-only", "cpu-only", "expert", "metis",
                    "scotch", "m-topo", "m-etf", "m-sct", "anneal", "mars",
                    "colocrl", "hierarchical", "eagle", "placeto"],
        "seeds": [1],
        "samples": 21,
        "pretrain": 50,
        "anneal_seconds": 5,
        "gen_train": 20, "gen_finetune": 10,
        "family": [(20, 64), (30, 64), (40, 32), (30, 32)],
        "family_samples": 5120,
        "bench_min_time": 0.2, "bench_nodes": 20000, "bench_reps": 1,
        "speed_samples": 21,
    },
    "full": {
        "parts": ["placement", "papers", "curves", "generalize", "speed"],
        "models": MODELS,
        "learned_models": MODELS,
        "clusters": CLUSTERS + ["k80x2"],
        "seeds": [1, 2, 3],
        "samples": 200,
        "pretrain": 1000,
        "anneal_seconds": 20,
        "gen_train": 200, "gen_finetune": 100,
        "family": [(20, 64), (30, 64), (40, 64), (50, 64), (20, 128),
                   (30, 128), (40, 128), (50, 128), (30, 96), (40, 96)],
        "family_samples": 51200,
        "bench_min_time": 0.5, "bench_nodes": 100000, "bench_reps": 5,
        "speed_samples": 60,
    },
}


def log(msg):
    print(msg, flush=True)


def cluster_arg(cluster):
    """A preset name, or a cluster file of bench/clusters/."""
    path = os.path.join(BENCH, "clusters", cluster + ".json")
    return path if os.path.exists(path) else cluster


def colocation(variant, model):
    """The colocation a placer runs after, as bench/README.md explains.

    ColocRL places TensorFlow's co-location groups (`tf`); on the unrolled
    RNN graphs those are still 5,000-12,000, so it gets Placeto's
    Merge-and-Colocate to 256 groups there. Placeto merges small groups into
    their neighbours (its appendix A.6, dp's `merge`). Mars gets `merge` to
    256 groups so that a sample costs the same on every model (the paper
    places ops; on this CPU its PPO update over thousands of units would
    leave no budget), and to 128 on Inception-V3 (MARS_MERGE). The Hierarchical Planner and EAGLE group the units
    with their own learned grouper, so they get none. Non-learned placers
    see the hint units (none)."""
    if variant == "colocrl":
        return MERGE if model in RNN_MODELS else "tf"
    if variant in ("mars", "mars-nopre"):
        return MARS_MERGE.get(model, MERGE)
    if variant == "placeto":
        return MERGE
    return "none"


def budget(variant, cfg):
    """place{} options that bound a learned placer's search."""
    if variant not in LEARNED:
        if variant == "anneal":
            return "seconds=%g" % cfg["anneal_seconds"]
        return ""
    opts = "samples=%d,threads=1" % cfg["samples"]
    if variant == "mars":
        opts += ",pretrain=%d" % cfg["pretrain"]
    if variant in ("mars", "mars-nopre") and cfg.get("mars_hidden"):
        opts += ",hidden=%d" % cfg["mars_hidden"]
    if variant == "placeto":
        # An episode moves every unit once: the budget counts episodes
        # worth of the others' samples so that it ends in similar time.
        opts = "samples=%d,threads=1" % (cfg["samples"] * 256)
    return opts


def budget_label(variant, cfg):
    b = budget(variant, cfg).replace(",threads=1", "")
    return b if b else "-"


def run(cmd, timeout=None):
    return subprocess.run(cmd, capture_output=True, text=True,
                          timeout=timeout)


def run_measured(cmd, timeout=None):
    """Runs cmd; returns (returncode, stdout, stderr, wall s, peak RSS KiB)
    with the child's own rusage (os.wait4)."""
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, \
            tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err, text=True)
        deadline = None if timeout is None else start + timeout
        while True:
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if deadline and time.monotonic() > deadline:
                p.kill()
                pid, status, usage = os.wait4(p.pid, 0)
                break
            time.sleep(0.02)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        return p.returncode, out.read(), err.read(), wall, usage.ru_maxrss


class Tools:
    def __init__(self, build):
        self.build = build
        self.dp_opt = os.path.join(build, "bin", "dp-opt")
        self.bench_import = os.path.join(build, "bin", "dp-bench-import")
        self.bench_sim = os.path.join(build, "bin", "dp-bench-sim")
        if not os.path.exists(self.dp_opt):
            sys.exit("bench/run.py: no %s (build dp-opt first, or pass "
                     "--build)" % self.dp_opt)


# ---------------------------------------------------------------------------
# Preparing models
# ---------------------------------------------------------------------------

class Prepared:
    """Imports, unrolls, differentiates and costs each (model, cluster)
    once, into a bytecode file in a scratch directory."""

    def __init__(self, tools, workdir):
        self.tools = tools
        self.workdir = workdir
        self.cache = {}

    def get(self, model, cluster, path=None):
        key = (model, cluster)
        if key in self.cache:
            return self.cache[key]
        src = path or os.path.join(ROOT, "models", model + ".onnx")
        out = os.path.join(self.workdir, "%s-%s.bc" % (model, cluster))
        cmd = [self.tools.dp_opt, "-passes=import-onnx,unroll-rnn,"
               "training-graph,cost-annotate",
               "-cluster=" + cluster_arg(cluster), src, "-o", out]
        r = run(cmd)
        if r.returncode:
            sys.exit("bench/run.py: %s failed:\n%s" % (" ".join(cmd),
                                                         r.stderr))
        self.cache[key] = out
        return out


def place_cmd(tools, bc, cluster, variant, opts, coloc, seed, summary,
              curve=None):
    passes = []
    if coloc != "none":
        passes.append("colocate{strategy=%s}" % coloc)
    place = VARIANTS[variant]
    if opts:
        place += "," + opts
    passes += ["place{%s}" % place, "simulate"]
    cmd = [tools.dp_opt, "-passes=" + ",".join(passes),
           "-cluster=" + cluster_arg(cluster), "-seed=%d" % seed, "-quiet",
           "-summary=" + summary, "-disable-output"]
    if curve:
        cmd.append("-curve=" + curve)
    cmd.append(bc)
    return cmd


def read_curve(path):
    """[(samples, seconds, best, sample)] of a -curve CSV; a step time is
    inf where the CSV leaves it empty (no placement that fits yet)."""
    rows = []
    if not path or not os.path.exists(path):
        return rows

    def f(x):
        return float(x) if x not in (None, "") else math.inf
    with open(path) as fh:
        for r in csv.DictReader(fh):
            rows.append((int(r["samples"]), float(r["seconds"]),
                         f(r["best_seconds"]), f(r["sample_seconds"])))
    return rows


def thin_curve(src, dst, keep=1000):
    """Copies a -curve CSV, keeping of a long one (Placeto's, a row per
    move) the first and last rows, every row where the best changes, and
    about `keep` rows evenly spaced, so that the stored curve still plots
    and times the same."""
    with open(src) as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    if len(body) > 2 * keep:
        step = len(body) // keep
        body = [r for i, r in enumerate(body)
                if i in (0, len(body) - 1) or i % step == 0 or
                r[2] != body[i - 1][2]]
    with open(dst, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(head)
        w.writerows(body)


def samples_to_1pct(curve):
    if not curve:
        return None
    final = curve[-1][2]
    if math.isinf(final):
        return None
    for s, _, best, _ in curve:
        if best <= final * 1.01:
            return s
    return None


def budget_rank(label):
    """How large a budget label is, for choosing the headline cell of a
    placer run at several budgets: its sample count, else its seconds."""
    m = re.search(r"samples=(\d+)", label or "")
    if m:
        return float(m.group(1))
    m = re.search(r"seconds=([\d.]+)", label or "")
    return float(m.group(1)) if m else 0.0


def curve_file(model, cluster, variant, label, seed):
    """Where the curve of one learned-placer run is kept: the budget is in
    the name, so that runs at another budget (the quick set's) never
    replace it."""
    tag = re.sub(r"[^A-Za-z0-9.-]+", "", label.replace(",", "-")
                 .replace("=", "")) if label and label != "-" else ""
    return os.path.join(CURVES, "%s-%s-%s-%sseed%d.csv" % (
        model, cluster, variant, tag + "-" if tag else "", seed))


def row_curve(row):
    """The curve file of a quality row: the one it names, or the name
    rows recorded before curves carried their budget."""
    if row.get("curve"):
        return os.path.join(ROOT, row["curve"])
    return os.path.join(CURVES, "%s-%s-%s-seed%s.csv" % (
        row["model"], row["cluster"], row["placer"], row["seed"]))


def place_once(tools, prep, model, cluster, variant, seed, cfg, workdir,
               curve_path=None, extra_opts=None):
    bc = prep.get(model, cluster)
    coloc = colocation(variant, model)
    opts = extra_opts if extra_opts is not None else budget(variant, cfg)
    summary = os.path.join(workdir, "summary.json")
    if os.path.exists(summary):
        os.remove(summary)
    tmp_curve = None
    if variant in LEARNED:
        tmp_curve = os.path.join(workdir, "curve.csv")
        if os.path.exists(tmp_curve):
            os.remove(tmp_curve)
    cmd = place_cmd(tools, bc, cluster, variant, opts, coloc, seed, summary,
                    tmp_curve)
    rc, _, err, wall, rss = run_measured(cmd, cfg.get("timeout"))
    row = {"model": model, "cluster": cluster, "placer": variant,
           "colocation": coloc, "budget": budget_label(variant, cfg)
           if extra_opts is None else extra_opts, "seed": seed,
           "wall_s": round(wall, 3), "peak_rss_mib": round(rss / 1024, 1)}
    if rc < 0:
        row["error"] = "killed by signal %d after %.0f s%s" % (
            -rc, wall, " (--timeout)" if cfg.get("timeout") and
            wall >= cfg["timeout"] else "")
        return row
    if rc:
        lines = [l for l in err.strip().splitlines()
                 if "error" in l] or err.strip().splitlines()
        row["error"] = lines[-1][:300] if lines else "exit %d" % rc
        return row
    with open(summary) as f:
        s = json.load(f)
    row.update({
        "step_s": s["step_time_s"], "lower_bound_s": s["lower_bound_s"],
        "oom": int(bool(s["oom"])),
        "max_peak_gib": round(max(d["peak_bytes"] for d in s["devices"])
                              / 2**30, 3),
        "search_s": s.get("search_seconds", 0) or 0, "units": s.get("groups"),
    })
    curve = read_curve(tmp_curve)
    if curve:
        row["samples"] = curve[-1][0]
        row["samples_to_1pct"] = samples_to_1pct(curve)
        row["curve_seconds"] = round(curve[-1][1], 3)
        if curve_path:
            os.makedirs(os.path.dirname(curve_path), exist_ok=True)
            thin_curve(tmp_curve, curve_path)
            row["curve"] = os.path.relpath(curve_path, ROOT)
    return row


QUALITY_FIELDS = ["model", "cluster", "placer", "colocation", "budget",
                  "seed", "step_s", "lower_bound_s", "oom", "max_peak_gib",
                  "search_s", "wall_s", "samples", "samples_to_1pct",
                  "curve_seconds", "units", "peak_rss_mib", "error",
                  "curve"]


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def write_csv(path, rows, fields):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def merge_rows(old, new, key):
    """Rows of `old` whose key no new row has, then `new`: rerunning a
    subset replaces its own rows and keeps the others."""
    keys = {key(r) for r in new}
    return [r for r in old if key(r) not in keys] + new


def quality_key(r):
    # The budget is part of the key: a run at another budget (the quick
    # set's, say) adds rows of its own instead of replacing these.
    return (r["model"], r["cluster"], r["placer"], r.get("budget", ""),
            str(r["seed"]))


def part_placement(tools, prep, cfg, args, workdir):
    rows = []
    for cluster in cfg["clusters"]:
        for model in cfg["models"]:
            for variant in cfg["placers"]:
                if variant in LEARNED and \
                        model not in cfg["learned_models"]:
                    continue
                for seed in cfg["seeds"]:
                    curve_path = None
                    if variant in LEARNED:
                        curve_path = curve_file(
                            model, cluster, variant,
                            budget_label(variant, cfg), seed)
                    r = place_once(tools, prep, model, cluster, variant,
                                   seed, cfg, workdir, curve_path)
                    rows.append(r)
                    log("%-12s %-8s %-12s seed %d  %s" % (
                        model, cluster, variant, seed,
                        "error: " + r["error"] if "error" in r else
                        "%9.2f ms%s  %.1f s" % (
                            r["step_s"] * 1e3, " OOM" if r["oom"] else "",
                            r["wall_s"])))
    path = os.path.join(RESULTS, "quality.csv")
    allrows = merge_rows(read_csv(path), rows, quality_key)
    write_csv(path, allrows, QUALITY_FIELDS)
    return allrows


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------

def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def cells(rows):
    """Groups quality rows by (model, cluster, placer, budget) into
    per-cell statistics over seeds."""
    out = {}
    for r in rows:
        out.setdefault((r["model"], r["cluster"], r["placer"],
                        r.get("budget", "")), []).append(r)
    stats = {}
    for key, rs in out.items():
        ok = [r for r in rs if not r.get("error")]
        c = {"runs": len(rs), "seeds": sorted(int(r["seed"]) for r in rs),
             "failed": sorted(int(r["seed"]) for r in rs
                              if r.get("error")),
             "budget": rs[0].get("budget", ""), "rows": rs,
             "colocation": rs[0].get("colocation", "")}
        if not ok:
            c["error"] = rs[0].get("error", "failed")
        else:
            steps = [float(r["step_s"]) for r in ok]
            c["step"] = statistics.median(steps)
            c["spread"] = max(steps) - min(steps)
            c["bound"] = float(ok[0]["lower_bound_s"])
            c["gap"] = c["step"] / c["bound"] - 1
            c["oom"] = sum(int(r["oom"]) for r in ok)
            c["ok"] = len(ok)
            c["peak"] = max(float(r["max_peak_gib"]) for r in ok)
            c["search"] = statistics.median(float(r["search_s"] or 0)
                                            for r in ok)
            c["wall"] = statistics.median(float(r["wall_s"]) for r in ok)
            s1 = [num(r.get("samples_to_1pct")) for r in ok]
            s1 = [x for x in s1 if x is not None]
            c["to1"] = statistics.median(s1) if s1 else None
            sm = [num(r.get("samples")) for r in ok]
            sm = [x for x in sm if x is not None]
            c["samples"] = statistics.median(sm) if sm else None
        stats[key] = c
    return stats


def headline(st):
    """(model, cluster, placer) -> the cell of the largest budget that
    ran (then the one with more seeds): what the papers' comparison and
    the curves quote for a placer run at several budgets. A cell whose
    every seed failed ranks below any cell with a result."""
    out = {}
    for (m, cl, v, b), c in st.items():
        k = (m, cl, v)
        rank = ("step" in c, budget_rank(b), len(c["seeds"]))
        if k not in out or rank > out[k][0]:
            out[k] = (rank, c)
    return {k: c for k, (_, c) in out.items()}


def seed1_curve(st, model, cluster, variant):
    """The curve of seed 1 of the headline cell of a learned placer."""
    c = headline(st).get((model, cluster, variant))
    rows = [r for r in (c or {}).get("rows", []) if str(r["seed"]) == "1"
            and not r.get("error")]
    return read_curve(row_curve(rows[0])) if rows else []


def ms(x):
    return "%.2f" % (x * 1e3)


def replace_section(name, body):
    begin = "<!-- BEGIN %s -->" % name
    end = "<!-- END %s -->" % name
    block = begin + "\n\n" + body.rstrip() + "\n\n" + end + "\n"
    text = open(DOCS).read() if os.path.exists(DOCS) else (
        "# Results\n\nTables in this file are generated by the harnesses "
        "in bench/ (see bench/README.md); do not edit them by hand.\n\n")
    if begin in text and end in text:
        text = text[:text.index(begin)] + block + \
            text[text.index(end) + len(end) + 1:]
    else:
        text = text.rstrip() + "\n\n" + block
    with open(DOCS, "w") as f:
        f.write(text)


SECTION_ORDER = ["bench quality", "bench validate", "bench papers",
                 "bench curves",
                 "bench generalize", "bench speed", "bench runs"]


def reorder_sections():
    """Puts the bench sections of docs/results.md in SECTION_ORDER after
    everything else, whichever run created them first, and the sections of
    bench/placement.py after them."""
    if not os.path.exists(DOCS):
        return
    text = open(DOCS).read()
    blocks = {}
    # bench/placement.py's colocation-strategy tables go after ours.
    names = SECTION_ORDER + re.findall(r"<!-- BEGIN (placement \S+) -->",
                                       text)
    for name in names:
        begin = "<!-- BEGIN %s -->" % name
        end = "<!-- END %s -->\n" % name
        if begin in text and end in text:
            i, j = text.index(begin), text.index(end) + len(end)
            blocks[name] = text[i:j]
            text = text[:i] + text[j:]
    text = re.sub(r"\n{3,}", "\n\n", text).rstrip() + "\n"
    for name in names:
        if name in blocks:
            text += "\n" + blocks[name]
    with open(DOCS, "w") as f:
        f.write(text)


def machine_line():
    try:
        load = "%.1f" % os.getloadavg()[0]
    except OSError:
        load = "?"
    return "%s, %d cores, load average %s at the end" % (
        platform.machine(), os.cpu_count() or 0, load)


def doc_quality(rows, cfg, command):
    st = cells(rows)
    clusters = sorted({k[1] for k in st},
                      key=lambda c: (CLUSTERS + ["k80x2"]).index(c)
                      if c in CLUSTERS + ["k80x2"] else 99)
    models = [m for m in MODELS if any(k[0] == m for k in st)]
    order = list(VARIANTS)
    learned_budgets = sorted({(k[2], c["budget"]) for k, c in st.items()
                              if k[2] in LEARNED})
    lines = [
        "## Placement quality: every placer x model x cluster", "",
        "Rows from every run recorded in "
        "[bench/results/quality.csv](../bench/results/quality.csv) (see "
        "\"Runs behind these tables\"); last regenerated by `%s` on %s "
        "(%s). Training step (Adam) of each "
        "model, roofline costs, simulated. Step times in ms: median over "
        "the seeds run (spread = max - min); gap = step / lower bound - 1; "
        "OOM = how many seeds' placements do not fit; search = the "
        "placer's own time (median, s); to 1 %% = samples until the best "
        "step was within 1 %% of the final best (learned placers, from "
        "their `-curve`; median)." % (
            command, datetime.date.today().isoformat(), machine_line()), "",
        "**Learned placers are budget-limited**: they ran on this 2-core "
        "CPU with `threads=1` and the budgets below, far below the "
        "papers' thousands of samples on GPUs, so their rows say what "
        "each finds within that budget, not what it converges to. "
        "Budgets (colocation per row): " + "; ".join(
            "`%s` %s" % (v, b) for v, b in learned_budgets) + ".", ""]
    for cluster in clusters:
        lines += ["### `%s`" % cluster, "",
                  "| model | placer | colocation | budget | step (ms) | "
                  "spread | lower bound (ms) | gap | OOM | max peak (GiB) "
                  "| search (s) | samples | to 1 % | seeds |",
                  "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | "
                  "---: | ---: | ---: | ---: | ---: | --- |"]
        for model in models:
            for v, c in sorted(
                    ((k[2], c) for k, c in st.items()
                     if k[0] == model and k[1] == cluster),
                    key=lambda vc: (order.index(vc[0]),
                                    budget_rank(vc[1]["budget"]))):
                seeds = ",".join(map(str, c["seeds"]))
                if c["failed"] and "error" not in c:
                    seeds += " (%s: error)" % ",".join(map(str, c["failed"]))
                if "error" in c:
                    lines.append("| %s | %s | %s | %s | error: %s | | | | "
                                 "| | | | | %s |" % (
                                     model, v, c["colocation"], c["budget"],
                                     c["error"].replace("|", "/")[:100],
                                     seeds))
                    continue
                lines.append(
                    "| %s | %s | %s | %s | %s | %s | %s | %.0f %% | %s | "
                    "%.2f | %.1f | %s | %s | %s |" % (
                        model, v, c["colocation"], c["budget"],
                        ms(c["step"]), ms(c["spread"]), ms(c["bound"]),
                        c["gap"] * 100,
                        "%d/%d" % (c["oom"], c["ok"]) if c["oom"] else "0",
                        c["peak"], c["search"],
                        "%d" % c["samples"] if c["samples"] else "",
                        "%d" % c["to1"] if c["to1"] else "", seeds))
        lines.append("")
    replace_section("bench quality", "\n".join(lines))


# ---------------------------------------------------------------------------
# Papers side by side
# ---------------------------------------------------------------------------

def fmt_rel(r):
    return "%+.1f %%" % (r * 100)


def describe(a, b, rel):
    if abs(rel) < 0.01:
        return "%s and %s within 1 %%" % (a, b)
    return "%s %.1f %% %s than %s" % (a, abs(rel) * 100,
                                      "faster" if rel < 0 else "slower", b)


def verdict(pa, pb, da, db, na, nb):
    """One sentence: does dp reproduce the paper's ordering of A and B?
    pa, pb: the paper's seconds or "OOM"; da, db: dp's (seconds, oom) or
    None. Differences within 1 % are ties, and a tie is an ordering of its
    own. Returns (sentence, "yes" | "no" | "n/a")."""
    if da is None or db is None:
        return "Not measured by dp in this run.", "n/a"
    p_oom = (pa == "OOM", pb == "OOM")
    d_oom = (da[1], db[1])
    if any(p_oom) or any(d_oom):
        def says(oom, who):
            names = [n for n, o in zip((na, nb), oom) if o]
            if not names:
                return "both fit"
            return " and ".join(names) + " run%s out of memory" % (
                "" if len(names) > 1 else "s")
        same = p_oom == d_oom
        if same and not all(p_oom):
            return ("Paper: %s; dp: %s too: ordering reproduced." % (
                says(p_oom, "p"), says(d_oom, "d")), "yes")
        if same:
            return ("Both run out of memory in the paper and in dp.",
                    "yes")
        detail = says(d_oom, "d")
        if not any(d_oom):
            detail += " (%s ms vs %s ms)" % (ms(da[0]), ms(db[0]))
        return ("Paper: %s; dp: %s: not reproduced (dp's memory model "
                "or model size differs)." % (says(p_oom, "p"), detail),
                "no")
    prel = pa / pb - 1
    drel = da[0] / db[0] - 1
    psign = 0 if abs(prel) < 0.01 else (1 if prel > 0 else -1)
    dsign = 0 if abs(drel) < 0.01 else (1 if drel > 0 else -1)
    if psign == dsign:
        v, ok = "dp reproduces the paper's ordering", "yes"
    elif psign == 0:
        v, ok = ("not reproduced (the paper has them within 1 %, dp "
                 "does not)"), "no"
    elif dsign == 0:
        v, ok = ("not reproduced (dp has them within 1 %, the paper "
                 "does not)"), "no"
    else:
        v, ok = "dp does not reproduce the paper's ordering", "no"
    return "Paper: %s; dp: %s: %s." % (describe(na, nb, prel),
                                        describe(na, nb, drel), v), ok


def sample_tier(variant, budget):
    """A learned run's budget in whole placements: Placeto's samples are
    moves, 256 to the others' one (budget())."""
    n = budget_rank(budget)
    return n / 256 if variant == "placeto" else n


def matched_cells(allst, model, cluster, va, vb):
    """The cells of two learned placers at the largest budget both ran
    (in whole placements), or None when they share none: a learned placer
    is only compared with another at the same budget."""
    def tiers(v):
        return {sample_tier(v, k[3]): c for k, c in allst.items()
                if k[:3] == (model, cluster, v) and "error" not in c}
    ta, tb = tiers(va), tiers(vb)
    common = sorted(set(ta) & set(tb))
    if not common:
        return None
    return ta[common[-1]], tb[common[-1]]


def doc_papers(rows, command):
    papers = json.load(open(os.path.join(BENCH, "papers.json")))
    allst = cells(rows)
    st = headline(allst)
    out = []
    lines = [
        "## The papers side by side", "",
        "Relative step-time differences (A / B - 1; negative: A is faster) "
        "from the papers' tables, quoted in "
        "[bench/papers.json](../bench/papers.json) with their table "
        "numbers, next to dp's for the same pair of placers on the "
        "matching cluster (median over seeds, at the largest budget a "
        "placer ran; two learned placers at the largest budget both ran, "
        "counting a Placeto sample as 1/256 of a placement; generated by "
        "`%s` on %s from bench/results/quality.csv). The papers measured real TensorFlow "
        "steps on P100s (Mars, EAGLE) or K80s (Placeto); dp simulates its "
        "own models with roofline costs, and its learned placers ran with "
        "the CPU budgets of the quality table, so a learned placer's "
        "number is what it found within that budget. Within 1 %% counts "
        "as a tie, which is an ordering of its own (a paper's tie is "
        "reproduced only by a tie). The papers' Inception-V3 and NMT "
        "batch sizes differ between papers (Mars and EAGLE: batch 1; "
        "Placeto's text lost its numbers, and its 1.2 s steps imply a "
        "larger batch); dp's models/ are those of docs/models.md for "
        "every cluster." % (command, datetime.date.today().isoformat()), "",
        "| paper, table | model | cluster | A vs B | paper A (s) | paper B "
        "(s) | paper | dp A (ms) | dp B (ms) | dp | reproduced | |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: "
        "| --- | --- |"]
    tally = {}
    for tid, model, ca, cb in papers["pairs"]:
        t = papers["tables"][tid]
        cluster = t["cluster"]
        cl = os.path.splitext(os.path.basename(cluster))[0]
        va, vb = t["columns"][ca], t["columns"][cb]
        pa, pb = t["rows"][model][ca], t["rows"][model][cb]
        ca_ = st.get((model, cl, va))
        cb_ = st.get((model, cl, vb))

        def dp_val(c):
            if not c or "error" in c:
                return None
            return (c["step"], c["oom"] > 0)
        da, db = dp_val(ca_), dp_val(cb_)
        unmatched = False
        if va in LEARNED and vb in LEARNED and ca_ and cb_:
            pair = matched_cells(allst, model, cl, va, vb)
            if pair:
                ca_, cb_ = pair
                da, db = dp_val(ca_), dp_val(cb_)
            else:
                unmatched = True
        sentence, ok = verdict(pa, pb, da, db, ca, cb)
        if unmatched:
            sentence = ("Not compared: dp ran `%s` (%s) and `%s` (%s) at "
                        "no common budget." % (va, ca_["budget"], vb,
                                               cb_["budget"]))
            ok = "n/a"
        notes = ["`%s` %s" % (v, c["budget"]) for v, c in ((va, ca_),
                                                          (vb, cb_))
                 if v in LEARNED and c and "error" not in c]
        if notes and ok != "n/a":
            sentence += " dp's learned placers are budget-limited (%s)." % (
                ", ".join(notes))
        tally[ok] = tally.get(ok, 0) + 1
        prel = "" if "OOM" in (pa, pb) else fmt_rel(pa / pb - 1)
        drel = ""
        if da and db and not da[1] and not db[1]:
            drel = fmt_rel(da[0] / db[0] - 1)

        def dcell(d, c):
            if c and "error" in c:
                return "error"
            if not d:
                return ""
            return "OOM" if d[1] else ms(d[0])
        short = t["paper"].split(" (")[0] + ", " + \
            t["table"].split(":")[0]
        lines.append("| %s | %s | %s | %s vs %s | %s | %s | %s | %s | %s | "
                     "%s | %s | %s |" % (
                         short, model, cl, ca, cb, pa, pb, prel,
                         dcell(da, ca_), dcell(db, cb_), drel, ok, sentence))
        out.append({"table": tid, "model": model, "cluster": cl, "a": ca,
                    "b": cb, "paper_a_s": pa, "paper_b_s": pb,
                    "paper_rel": prel, "dp_a_s": da[0] if da else "",
                    "dp_b_s": db[0] if db else "", "dp_rel": drel,
                    "reproduced": ok})
    lines += ["", "Reproduced: " + ", ".join(
        "%s %d" % (k, v) for k, v in sorted(tally.items())) + " of %d "
        "pairs." % len(papers["pairs"]), ""]
    # Samples each learned placer needed, Placeto Table 1 next to dp.
    lines += ["Samples to the best placement, Placeto Table 1 (placements "
              "evaluated during training) next to dp (samples until within "
              "1 % of the final best, and the budget):", "",
              "| model | cluster | placer | paper | dp to 1 % | dp budget |",
              "| --- | --- | --- | ---: | ---: | --- |"]
    for tid in ("placeto-t1-2gpu", "placeto-t1-4gpu"):
        t = papers["tables"][tid]
        cl = os.path.splitext(os.path.basename(t["cluster"]))[0]
        for model, s in t["samples"].items():
            for col, n in s.items():
                v = t["columns"][col]
                c = st.get((model, cl, v))
                lines.append("| %s | %s | %s | %d | %s | %s |" % (
                    model, cl, v, n,
                    "%d" % c["to1"] if c and c.get("to1") else "",
                    c["budget"] if c else "not run"))
    write_csv(os.path.join(RESULTS, "papers.csv"), out, list(out[0].keys()))
    replace_section("bench papers", "\n".join(lines))


# ---------------------------------------------------------------------------
# Search curves (SVG written here, no plotting package needed)
# ---------------------------------------------------------------------------

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
          "#e377c2", "#17becf"]


def nice_ticks(lo, hi, n=5):
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw),
               default=10 * mag)
    t = math.ceil(lo / step) * step
    ticks = []
    while t <= hi + 1e-9 * step:
        ticks.append(t)
        t += step
    return ticks


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def svg_chart(path, title, xlabel, ylabel, series, logx=False, refs=()):
    """series: [(name, [(x, y)])], a step line of best-so-far values;
    refs: [(name, y)], dashed horizontal lines (baselines)."""
    W, H, L, R, T, B = 720, 420, 70, 170, 40, 50
    pts = [p for _, s in series for p in s]
    if not pts:
        return False
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts] + [y for _, y in refs]
    x0, x1 = (0, max(xs)) if not logx else (max(min(xs), 1e-3), max(xs))
    y0 = min(ys)
    # The first samples can be far off (or the failing signal): keep the
    # interesting part, up to 3x the best, in view and clip the rest.
    y1 = min(max(ys), 3 * y0)
    pad = (y1 - y0) * 0.05 or y0 * 0.05 or 1
    y0, y1 = max(0, y0 - pad), y1 + pad

    def fx(x):
        if logx:
            x = max(x, x0)
            return L + (math.log10(x) - math.log10(x0)) / max(
                math.log10(x1) - math.log10(x0), 1e-9) * (W - L - R)
        return L + (x - x0) / max(x1 - x0, 1e-12) * (W - L - R)

    def fy(y):
        y = min(max(y, y0), y1)
        return H - B - (y - y0) / (y1 - y0) * (H - T - B)
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
         'viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">' % (
             W, H, W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="22" font-size="14">%s</text>' % (L, esc(title))]
    for t in nice_ticks(y0, y1):
        y = fy(t)
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>'
                 % (L, y, W - R, y))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (
            L - 6, y + 4, round(t, 6)))
    if logx:
        xt = [10 ** e for e in range(math.floor(math.log10(x0)),
                                     math.ceil(math.log10(x1)) + 1)
              if x0 <= 10 ** e <= x1]
    else:
        xt = nice_ticks(x0, x1)
    for t in xt:
        x = fx(t)
        o.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>'
                 % (x, T, x, H - B))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%g</text>' % (
            x, H - B + 16, round(t, 6)))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" '
             'stroke="black"/>' % (L, T, W - L - R, H - T - B))
    o.append('<text x="%d" y="%d" text-anchor="middle">%s</text>' % (
        (L + W - R) / 2, H - 12, esc(xlabel)))
    o.append('<text transform="translate(16,%d) rotate(-90)" '
             'text-anchor="middle">%s</text>' % ((T + H - B) / 2,
                                                  esc(ylabel)))
    for i, (name, s) in enumerate(series):
        color = COLORS[i % len(COLORS)]
        d = []
        prev = None
        # A step line needs only the points where the best changes.
        s = [p for i, p in enumerate(s)
             if i in (0, len(s) - 1) or p[1] != s[i - 1][1]]
        for x, y in s:
            if prev is not None:
                d.append("L%.1f,%.1f" % (fx(x), fy(prev)))
            d.append(("M" if prev is None else "L") +
                     "%.1f,%.1f" % (fx(x), fy(y)))
            prev = y
        o.append('<path d="%s" fill="none" stroke="%s" stroke-width="2"/>'
                 % (" ".join(d), color))
        ly = T + 14 + 18 * i
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" '
                 'stroke-width="2"/>' % (W - R + 10, ly - 4, W - R + 30,
                                         ly - 4, color))
        o.append('<text x="%d" y="%d">%s</text>' % (W - R + 36, ly,
                                                    esc(name)))
    for j, (name, y) in enumerate(refs):
        if not y0 <= y <= y1:
            continue
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#555" '
                 'stroke-dasharray="6,4"/>' % (L, fy(y), W - R, fy(y)))
        ly = T + 14 + 18 * (len(series) + j)
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#555" '
                 'stroke-dasharray="6,4"/>' % (W - R + 10, ly - 4,
                                               W - R + 30, ly - 4))
        o.append('<text x="%d" y="%d">%s</text>' % (W - R + 36, ly,
                                                    esc(name)))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
    return True


def part_curves(cfg, command):
    figs = os.path.join(RESULTS, "figures")
    os.makedirs(figs, exist_ok=True)
    lines = ["## Search curves", "",
             "Best step time so far against samples and against seconds of "
             "search (Mars Fig. 7 style; logarithmic x axis, since a Placeto "
             "sample is one move and the others' a whole placement) for "
             "each learned placer on p100x4, seed 1, with the expert and "
             "annealing placements as dashed lines, within the budgets of the quality table (generated by "
             "`%s` on %s from the `-curve` CSVs in "
             "[bench/results/curves/](../bench/results/curves/)):" % (
                 command, datetime.date.today().isoformat()), ""]
    made = 0
    for model in ("gnmt4", "bert_base"):
        series = []
        st = cells(read_csv(os.path.join(RESULTS, "quality.csv")))
        for v in LEARNED:
            c = seed1_curve(st, model, "p100x4", v)
            c = [r for r in c if r[2] < 99]  # the failing signal
            if c:
                series.append((v, c))
        if not series:
            continue
        st = headline(st)
        refs = [(v, st[(model, "p100x4", v)]["step"] * 1e3)
                for v in ("expert", "anneal")
                if "step" in st.get((model, "p100x4", v), {})]
        for axis, idx, label in (("samples", 0, "samples"),
                                 ("seconds", 1, "seconds of search")):
            name = "curve-%s-%s.svg" % (model, axis)
            ok = svg_chart(
                os.path.join(figs, name),
                "%s, p100x4: best step time so far" % model, label,
                "step time (ms)",
                [(v, [(r[idx], r[2] * 1e3) for r in c]) for v, c in series],
                logx=True, refs=refs)
            if ok:
                made += 1
                lines.append("- %s vs %s: [%s](../bench/results/figures/%s)"
                             % (model, axis, name, name))
        lines.append("")
        lines.append("![%s vs samples](../bench/results/figures/"
                     "curve-%s-samples.svg)" % (model, model))
        lines.append("")
    if made:
        replace_section("bench curves", "\n".join(lines))
    else:
        log("curves: no learned-placer curves on p100x4 seed 1 yet")


# ---------------------------------------------------------------------------
# Generalization: Mars Table 3, Placeto's zero-shot on an NMT family
# ---------------------------------------------------------------------------

# (unseen model, source model, kind): Mars Table 3's pairs with dp's
# models; VGG16 and a Transformer other than BERT are not in models/, so
# ResNet-50 stands for VGG16 (both CNNs) and BERT has no "similar" source.
MARS_T3 = [("inception_v3", "resnet50", "similar"),
           ("inception_v3", "gnmt4", "different"),
           ("gnmt4", "nmt2", "similar"),
           ("gnmt4", "inception_v3", "different"),
           ("bert_base", "resnet50", "different")]


def mars_run(tools, prep, model, cluster, seed, opts, workdir):
    bc = prep.get(model, cluster)
    summary = os.path.join(workdir, "gen-summary.json")
    if os.path.exists(summary):
        os.remove(summary)
    cmd = place_cmd(tools, bc, cluster, "mars", opts, MERGE, seed, summary)
    rc, _, err, wall, _ = run_measured(cmd)
    if rc:
        lines = [l for l in err.strip().splitlines() if l.strip()]
        return {"error": lines[-1] if lines else "failed", "wall": wall}
    s = json.load(open(summary))
    return {"step": s["step_time_s"], "oom": s["oom"], "wall": wall}


def gen_mars(tools, prep, cfg, workdir):
    cluster, seed = "p100x4", cfg["seeds"][0]
    T, F = cfg["gen_train"], cfg["gen_finetune"]
    pre = cfg["pretrain"]
    policies = {}
    rows = []
    for unseen, source, kind in MARS_T3:
        if unseen not in cfg["gen_models"]:
            continue
        if source not in policies:
            pol = os.path.join(workdir, "mars-%s.pt" % source)
            r = mars_run(tools, prep, source, cluster, seed,
                         "samples=%d,pretrain=%d,threads=1,save=%s" % (
                             T, pre, pol), workdir)
            policies[source] = (pol, r)
            log("mars trained on %s: %s" % (source, r))
        pol, tr = policies[source]
        r = mars_run(tools, prep, unseen, cluster, seed,
                     "load=%s,finetune=%d,threads=1" % (pol, F), workdir)
        log("mars %s <- %s (%s): %s" % (unseen, source, kind, r))
        rows.append({"unseen": unseen, "source": source, "kind": kind,
                     "train_samples": T, "finetune": F,
                     "step_s": r.get("step", ""), "oom": r.get("oom", ""),
                     "wall_s": round(r["wall"], 2),
                     "error": r.get("error", "")})
    for unseen in cfg["gen_models"]:
        r = mars_run(tools, prep, unseen, cluster, seed,
                     "samples=%d,pretrain=%d,threads=1" % (T + F, pre),
                     workdir)
        log("mars %s direct %d samples: %s" % (unseen, T + F, r))
        rows.append({"unseen": unseen, "source": unseen, "kind": "direct",
                     "train_samples": T + F, "finetune": 0,
                     "step_s": r.get("step", ""), "oom": r.get("oom", ""),
                     "wall_s": round(r["wall"], 2),
                     "error": r.get("error", "")})
    return rows


def gen_placeto(tools, cfg, workdir):
    """Placeto 4.2: train one policy over a family of 2-layer NMT graphs,
    place held-out members zero-shot, and compare with Placeto trained on
    each held-out graph alone (same budget as the whole training) and with
    the expert and METIS placements."""
    cluster, seed = "k80x2", cfg["seeds"][0]
    fam = os.path.join(workdir, "nmt-family")
    specs = ["%d:%d" % lb for lb in cfg["family"]]
    py = "/usr/bin/python3"
    r = run([py, os.path.join(BENCH, "nmt_family.py"), fam] + specs)
    if r.returncode:
        log("generalize: cannot write the NMT family (needs %s with "
            "python3-onnx): %s" % (py, r.stderr.strip()[-300:]))
        return []
    paths = r.stdout.split()
    prep = Prepared(tools, workdir)
    names = [os.path.splitext(os.path.basename(p))[0] for p in paths]
    ntest = max(1, len(paths) // 4)
    train, test = list(zip(names, paths))[:-ntest], \
        list(zip(names, paths))[-ntest:]
    per = max(1, cfg["family_samples"] // len(train))
    policy = os.path.join(workdir, "placeto-family.pt")
    start = time.monotonic()
    for i, (name, path) in enumerate(train):
        bc = prep.get(name, cluster, path)
        summary = os.path.join(workdir, "fam.json")
        opts = "samples=%d,threads=1,save=%s" % (per, policy)
        if i:
            opts += ",load=%s,finetune=%d" % (policy, per)
        cmd = place_cmd(tools, bc, cluster, "placeto", opts, MERGE, seed,
                        summary)
        rc, _, err, wall, _ = run_measured(cmd)
        log("placeto family training on %s: rc %d, %.1f s" % (name, rc,
                                                               wall))
        if rc:
            log(err[-500:])
            return []
    train_wall = time.monotonic() - start
    rows = []
    for name, path in test:
        bc = prep.get(name, cluster, path)
        res = {}
        for scheme, variant, opts, coloc in (
                ("zero-shot", "placeto", "load=%s,threads=1" % policy,
                 MERGE),
                ("optimized", "placeto", "samples=%d,threads=1" %
                 cfg["family_samples"], MERGE),
                ("expert", "expert", "", "none"),
                ("metis", "metis", "", "none"),
                ("gpu-only", "gpu-only", "", "none")):
            summary = os.path.join(workdir, "fam.json")
            if os.path.exists(summary):
                os.remove(summary)
            cmd = place_cmd(tools, bc, cluster, variant, opts, coloc, seed,
                            summary)
            rc, _, err, wall, _ = run_measured(cmd)
            if rc:
                res[scheme] = {"error": err.strip().splitlines()[-1]
                               if err.strip() else "failed", "wall": wall}
            else:
                s = json.load(open(summary))
                res[scheme] = {"step": s["step_time_s"], "oom": s["oom"],
                               "wall": wall}
            log("placeto family %s %s: %s" % (name, scheme, res[scheme]))
        for scheme, v in res.items():
            rows.append({"graph": name, "scheme": scheme,
                         "step_s": v.get("step", ""),
                         "oom": v.get("oom", ""),
                         "wall_s": round(v["wall"], 2),
                         "error": v.get("error", ""),
                         "train_graphs": " ".join(n for n, _ in train),
                         "train_samples": per * len(train),
                         "train_wall_s": round(train_wall, 1)})
    return rows


def part_generalize(tools, prep, cfg, command, workdir):
    papers = json.load(open(os.path.join(BENCH, "papers.json")))
    t3 = papers["tables"]["mars-t3"]
    mrows = gen_mars(tools, prep, cfg, workdir)
    prows = gen_placeto(tools, cfg, workdir)
    if mrows:
        write_csv(os.path.join(RESULTS, "generalize-mars.csv"), mrows,
                  list(mrows[0].keys()))
    if prows:
        write_csv(os.path.join(RESULTS, "generalize-placeto.csv"), prows,
                  list(prows[0].keys()))
    mrows = read_csv(os.path.join(RESULTS, "generalize-mars.csv"))
    prows = read_csv(os.path.join(RESULTS, "generalize-placeto.csv"))
    lines = ["## Generalization", "",
             "Generated by `%s` on %s." % (
                 command, datetime.date.today().isoformat()), ""]
    if mrows:
        direct = {r["unseen"]: r for r in mrows if r["kind"] == "direct"}
        T = mrows[0]["train_samples"]
        lines += [
            "### Mars Table 3: a policy trained on one model, fine-tuned "
            "on another", "",
            "Mars (`merge{groups=256}`, p100x4) trained on the source model "
            "with `save=`, then `load=` + `finetune=N` on the unseen model; "
            "*direct* trains on the unseen model from scratch for the same "
            "total samples (as the paper does). Paper columns: Mars Table "
            "3 (seconds; VGG16 -> ResNet-50 here, no other Transformer in "
            "models/). Budget-limited: the source trains for the samples "
            "shown, not until it stops improving as in the paper.", "",
            "| unseen | kind | source | train + fine-tune samples | dp "
            "step (ms) | dp vs direct | paper (s) | paper vs direct |",
            "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |"]
        col = {"direct": "Direct training",
               "similar": "Generalized from similar type",
               "different": "Generalized from different type"}
        for r in sorted(mrows, key=lambda r: (
                MODELS.index(r["unseen"]),
                ["direct", "similar", "different"].index(r["kind"]))):
            p = t3["rows"].get(r["unseen"], {}).get(col[r["kind"]], "")
            pd = t3["rows"].get(r["unseen"], {}).get(col["direct"])
            d = direct.get(r["unseen"])
            step = num(r["step_s"])
            dstep = num(d["step_s"]) if d else None
            lines.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["unseen"], r["kind"], r["source"],
                "%s + %s" % (r["train_samples"], r["finetune"])
                if r["kind"] != "direct" else r["train_samples"],
                (ms(step) + (" OOM" if r["oom"] == "True" else ""))
                if step else "error: " + r["error"][:80],
                fmt_rel(step / dstep - 1) if step and dstep and
                r["kind"] != "direct" else "",
                p, fmt_rel(p / pd - 1) if p and pd and
                r["kind"] != "direct" else ""))
        lines.append("")
    if prows:
        lines += [
            "### Placeto: zero-shot on unseen NMT graphs", "",
            "A family of 2-layer NMT graphs (models/nmt2.onnx with other "
            "sequence lengths and batch sizes, `bench/nmt_family.py`, as "
            "Placeto's nmt dataset) on `k80x2`; one Placeto policy is "
            "trained over the training graphs in turn (`save=`, then "
            "`load=` + `finetune=`: %s, %s samples in all, %s s) and places "
            "each held-out graph zero-shot (`load=` alone). *optimized* is "
            "Placeto trained on the held-out graph alone with the same "
            "number of samples. Placeto's paper (Fig. 5) reports zero-shot "
            "placements close to optimized ones and far better than the "
            "RNN-based zero-shot; it gives CDFs, not a table." % (
                prows[0]["train_graphs"], prows[0]["train_samples"],
                prows[0]["train_wall_s"]), "",
            "| held-out graph | scheme | step (ms) | vs optimized | placer "
            "wall (s) |", "| --- | --- | ---: | ---: | ---: |"]
        opt = {r["graph"]: num(r["step_s"]) for r in prows
               if r["scheme"] == "optimized"}
        for r in prows:
            step = num(r["step_s"])
            o = opt.get(r["graph"])
            lines.append("| %s | %s | %s | %s | %s |" % (
                r["graph"], r["scheme"],
                (ms(step) + (" OOM" if r["oom"] == "True" else ""))
                if step else "error: " + r["error"][:80],
                fmt_rel(step / o - 1) if step and o else "", r["wall_s"]))
        lines.append("")
    replace_section("bench generalize", "\n".join(lines))


# ---------------------------------------------------------------------------
# dp's own speed
# ---------------------------------------------------------------------------

def curve_speed(curve, every):
    """(samples/s, seconds per policy update) from a -curve CSV: an update
    runs after every `every` samples, so the gap in seconds after those
    samples, less the median gap between samples, is the update's time."""
    if len(curve) < 2:
        return None, None
    rate = curve[-1][0] / curve[-1][1] if curve[-1][1] > 0 else None
    if not every:
        return rate, None
    gaps = [(curve[i][0], curve[i + 1][1] - curve[i][1])
            for i in range(len(curve) - 1)]
    upd = [g for s, g in gaps if s % every == 0]
    other = [g for s, g in gaps if s % every != 0]
    if not upd:
        return rate, None
    base = statistics.median(other) if other else 0
    return rate, max(0.0, statistics.median(upd) - base)


def part_speed(tools, prep, cfg, command, workdir):
    out = []  # (section, what, value, unit, note)

    def add(section, what, value, unit, note=""):
        out.append({"section": section, "what": what, "value": value,
                    "unit": unit, "note": note})
        log("%-10s %-45s %s %s %s" % (section, what, value, unit, note))
    # Import.
    if os.path.exists(tools.bench_import):
        r = run([tools.bench_import, "--nodes=%d" % cfg["bench_nodes"],
                 "--benchmark_min_time=%g" % cfg["bench_min_time"],
                 "--benchmark_repetitions=%d" % cfg["bench_reps"],
                 "--benchmark_report_aggregates_only=true"])
        m1 = re.search(r"protobuf parse:\s+([\d.]+) nodes/s", r.stdout)
        m2 = re.search(r"import-onnx:\s+([\d.]+) nodes/s", r.stdout)
        m3 = re.search(r"ratio: ([\d.]+)x", r.stdout)
        note = "%d-node generated model" % cfg["bench_nodes"]
        if m1 and m2:
            add("import", "protobuf parse alone", "%.0f k" % (
                float(m1.group(1)) / 1e3), "nodes/s", note)
            add("import", "import-onnx (whole pass)", "%.0f k" % (
                float(m2.group(1)) / 1e3), "nodes/s", note)
            add("import", "import / parse time", m3.group(1) if m3 else "",
                "x", "target: 1 M nodes/s")
        else:
            add("import", "dp-bench-import", "failed", "", r.stderr[-200:])
    # Simulator.
    if os.path.exists(tools.bench_sim):
        r = run([tools.bench_sim,
                 "--benchmark_min_time=%g" % cfg["bench_min_time"],
                 "--benchmark_repetitions=%d" % cfg["bench_reps"],
                 "--benchmark_report_aggregates_only=true"])
        g = re.search(r"graph: (\S+) training step, (\d+) ops", r.stdout)
        for m in re.finditer(r"(Simulate\w+)\s+([\d.]+) M simulated ops/s,"
                             r"\s+(\d+) placements/s, ([\d.]+)x", r.stdout):
            what = {"SimulateSingle": "single GPU",
                    "SimulateStages": "4 contiguous stages",
                    "SimulateRandom": "random over 5 devices"}.get(
                        m.group(1), m.group(1))
            add("simulator", what + ": simulated ops/s", "%s M" % m.group(2),
                "ops/s", "%s x the 10 M target; %s ops" % (
                    m.group(4), g.group(2) if g else "?"))
            add("simulator", what + ": placements/s", m.group(3), "1/s",
                "BERT-Base training step on p100x4")
    # Learned placers: samples/s and update time from the curves of the
    # quality runs (p100x4, seed 1), or short runs of their own.
    st = cells(read_csv(os.path.join(RESULTS, "quality.csv")))
    for model in ("gnmt4", "bert_base"):
        for v in LEARNED:
            c = seed1_curve(st, model, "p100x4", v)
            src = "quality run"
            if not c and v in cfg["placers"]:
                speed_cfg = dict(cfg, samples=cfg["speed_samples"])
                path = curve_file(model, "p100x4", v,
                                  budget_label(v, speed_cfg), 1)
                row = place_once(tools, prep, model, "p100x4", v, 1,
                                 speed_cfg, workdir, path)
                c = read_curve(path)
                src = "speed run"
            if not c:
                continue
            rate, upd = curve_speed(c, UPDATE_EVERY.get(v))
            note = "%s, %d samples, %s, threads=1" % (
                src, c[-1][0], colocation(v, model))
            if c[-1][0] <= UPDATE_EVERY.get(v, 0):
                note += " (no policy update within the budget)"
            add("learned", "%s on %s: samples/s" % (v, model),
                "%.2f" % rate if rate else "", "1/s", note)
            if upd is not None:
                add("learned", "%s on %s: s per policy update" % (v, model),
                    "%.2f" % upd, "s", "every %d samples (%s; with the "
                    "next batch's sampling)" % (
                        UPDATE_EVERY[v], "PPO" if v.startswith(("mars",
                                                               "eagle"))
                        else "REINFORCE"))
    # Cost annotation: oneDNN cold vs warm cache.
    cache = os.path.join(workdir, "onednn-cache")
    times = []
    for label in ("cold", "warm"):
        cmd = [tools.dp_opt, "-passes=import-onnx,training-graph,"
               "cost-annotate{source=onednn,cache=%s}" % cache,
               "-cluster=host", "-time-passes", "-disable-output",
               os.path.join(ROOT, "models", "inception_v3.onnx")]
        rc, _, err, wall, _ = run_measured(cmd)
        pass_s = None
        for line in err.splitlines():
            # -time-passes: "... <wall> (<share>%)  cost-annotate"; the
            # last column before the name is the wall time.
            if line.rstrip().endswith(" cost-annotate"):
                nums = re.findall(r"([\d.]+) \(", line)
                if nums:
                    pass_s = float(nums[-1])
        times.append((label, rc, wall, pass_s))
        add("cost", "oneDNN cost-annotate, %s cache" % label,
            "%.3f" % (pass_s if pass_s is not None else wall), "s",
            "Inception-V3 training step (982 ops), cluster host; dp-opt "
            "wall %.2f s%s" % (wall, "" if rc == 0 else ", exit %d" % rc))
    if len(times) == 2 and times[0][3] and times[1][3]:
        add("cost", "oneDNN cold / warm", "%.0f" % (times[0][3] /
                                                    times[1][3]), "x", "")
    # Peak memory of dp-opt placing BERT-Base with Mars: the quality run's
    # (p100x4, seed 1) when there is one, else a run of its own.
    q = [r for r in headline(st).get(("bert_base", "p100x4", "mars"),
                                     {}).get("rows", [])
         if r["seed"] == "1" and not r.get("error")]
    if q:
        add("memory", "peak RSS, dp-opt placing BERT-Base with Mars",
            "%.0f" % float(q[0]["peak_rss_mib"]), "MiB",
            "quality run: %s, %s, %s samples, wall %s s" % (
                q[0]["budget"], q[0]["colocation"], q[0]["samples"],
                q[0]["wall_s"]))
    else:
        peak_rss_run(tools, prep, cfg, workdir, add)
    write_csv(os.path.join(RESULTS, "speed.csv"), out,
              ["section", "what", "value", "unit", "note"])
    doc_speed(out, command)


def peak_rss_run(tools, prep, cfg, workdir, add):
    bc = prep.get("bert_base", "p100x4")
    summary = os.path.join(workdir, "rss.json")
    opts = "samples=%d,pretrain=%d,threads=1" % (cfg["speed_samples"],
                                                cfg["pretrain"])
    cmd = place_cmd(tools, bc, "p100x4", "mars", opts, MERGE, 1, summary)
    rc, _, err, wall, rss = run_measured(cmd)
    add("memory", "peak RSS, dp-opt placing BERT-Base with Mars",
        "%.0f" % (rss / 1024), "MiB", "%s, %s, wall %.1f s%s" % (
            opts.replace(",threads=1", ""), MERGE, wall,
            "" if rc == 0 else ", exit %d" % rc))


def doc_speed(out, command):
    lines = ["## dp's own speed", "",
             "Generated by `%s` on %s (%s); each ratio's two sides were "
             "measured in one run. Raw: "
             "[bench/results/speed.csv](../bench/results/speed.csv)." % (
                 command, datetime.date.today().isoformat(), machine_line()),
             "", "| part | measure | value | unit | note |",
             "| --- | --- | ---: | --- | --- |"]
    for r in out:
        lines.append("| %s | %s | %s | %s | %s |" % (
            r["section"], r["what"], r["value"], r["unit"],
            r["note"].replace("|", "/")))
    replace_section("bench speed", "\n".join(lines))


# ---------------------------------------------------------------------------
# Driver
# ---------------------------------------------------------------------------

def doc_runs(command):
    rows = read_csv(os.path.join(RESULTS, "runs.csv"))
    lines = ["## Runs behind these tables", "",
             "Every `bench/run.py` invocation that wrote into "
             "bench/results/ (from bench/results/runs.csv):", "",
             "| date | command | parts | wall (s) | machine |",
             "| --- | --- | --- | ---: | --- |"]
    for r in rows:
        lines.append("| %s | `%s` | %s | %s | %s |" % (
            r["date"], r["command"], r["parts"], r["wall_s"], r["machine"]))
    replace_section("bench runs", "\n".join(lines))


def main():
    if sys.argv[1:2] == ["validate"]:
        # Simulated against measured: bench/validate.py.
        import validate
        return validate.main(sys.argv[2:])
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
                    help="learned placers' sample budget (Placeto: x256)")
    ap.add_argument("--pretrain", type=int, help="Mars's DGI iterations")
    ap.add_argument("--mars-hidden", type=int,
                    help="Mars's LSTM units (hidden=; default: Mars's 512)")
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
    args = ap.parse_args()
    cfg = dict(PRESETS[args.preset])
    cfg.setdefault("placers", list(VARIANTS))
    cfg.setdefault("gen_models", ["gnmt4"] if args.preset == "quick"
                   else ["inception_v3", "gnmt4", "bert_base"])
    for k in ("parts", "models", "learned_models", "clusters", "placers",
              "gen_models"):
        v = getattr(args, k)
        if v:
            cfg[k] = v.split(",")
    if args.seeds:
        cfg["seeds"] = [int(s) for s in args.seeds.split(",")]
    for k in ("samples", "pretrain", "mars_hidden", "anneal_seconds",
              "timeout", "gen_train", "gen_finetune", "family_samples"):
        if getattr(args, k) is not None:
            cfg[k] = getattr(args, k)
    for v in cfg["placers"]:
        if v not in VARIANTS:
            sys.exit("bench/run.py: unknown placer variant '%s' (%s)" % (
                v, ", ".join(VARIANTS)))
    tools = Tools(os.path.abspath(args.build))
    command = "bench/run.py " + " ".join(
        os.path.relpath(a, ROOT) if os.path.isabs(a) else a
        for a in sys.argv[1:])
    os.makedirs(RESULTS, exist_ok=True)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dp-bench-") as workdir:
        prep = Prepared(tools, workdir)
        rows = read_csv(os.path.join(RESULTS, "quality.csv"))
        for part in cfg["parts"]:
            t0 = time.monotonic()
            log("== %s" % part)
            if part == "placement":
                rows = part_placement(tools, prep, cfg, args, workdir)
                if not args.no_docs:
                    doc_quality(rows, cfg, command)
            elif part == "tables":
                # Regenerates the quality, papers and curves sections from
                # bench/results/ without running anything.
                if not args.no_docs:
                    doc_quality(rows, cfg, command)
                    doc_papers(rows, command)
                    part_curves(cfg, command)
            elif part == "papers":
                if not args.no_docs:
                    doc_papers(rows, command)
            elif part == "curves":
                if not args.no_docs:
                    part_curves(cfg, command)
            elif part == "generalize":
                part_generalize(tools, prep, cfg, command, workdir)
            elif part == "speed":
                part_speed(tools, prep, cfg, command, workdir)
            else:
                sys.exit("bench/run.py: unknown part '%s'" % part)
            log("== %s: %.0f s" % (part, time.monotonic() - t0))
    wall = time.monotonic() - start
    runs = read_csv(os.path.join(RESULTS, "runs.csv"))
    runs.append({"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
                 "command": command, "parts": " ".join(cfg["parts"]),
                 "wall_s": "%.0f" % wall, "machine": machine_line()})
    write_csv(os.path.join(RESULTS, "runs.csv"), runs,
              ["date", "command", "parts", "wall_s", "machine"])
    if not args.no_docs:
        doc_runs(command)
        reorder_sections()
    log("done in %.0f s" % wall)


if __name__ == "__main__":
    main()
