"""Running dp-opt for the benchmarks: each model prepared once per
cluster, then colocate, place and simulate per run, with a timeout and the
child's own wall time and peak memory; and the placement part, which
turns those runs into rows of bench/results/quality.csv."""

import collections
import json
import os
import subprocess
import sys
import tempfile
import time

from dpbench import ROOT
from dpbench.explain import gpu_memory_gib
from dpbench.models import LEARNED, VARIANTS, budget, budget_label, \
    cluster_arg, colocation
from dpbench.results import QUALITY_CSV, QUALITY_FIELDS, curve_file, \
    merge_rows, quality_key, read_csv, read_curve, samples_to_1pct, \
    thin_curve, write_csv


def log(msg):
    print(msg, flush=True)


def fail(msg):
    sys.exit("bench/%s: %s" % (os.path.basename(sys.argv[0]), msg))


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
    """The binaries of a build tree."""

    def __init__(self, build):
        self.build = build
        self.dp_opt = os.path.join(build, "bin", "dp-opt")
        self.bench_import = os.path.join(build, "bin", "dp-bench-import")
        self.bench_sim = os.path.join(build, "bin", "dp-bench-sim")
        self.bench_learn = os.path.join(build, "bin", "dp-bench-learn")
        if not os.path.exists(self.dp_opt):
            fail("no %s (build dp-opt first, or pass --build)" % self.dp_opt)

    def placers(self):
        """The place{algo=} names this dp-opt lists (a plugin's placers
        only where it loads)."""
        names = []
        section = False
        for line in run([self.dp_opt, "-print-passes"]).stdout.splitlines():
            if line.startswith("Placers"):
                section = True
                continue
            # "  name{options}"; its options' later lines and its
            # description are indented further.
            if section and line.startswith("  ") and line[2:3].strip():
                names.append(line.split()[0].split("{")[0])
        return names

    def gpu_memory(self, clusters):
        """cluster -> a GPU's memory in GiB, from -print-cluster."""
        out = {}
        for cl in clusters:
            r = run([self.dp_opt, "-print-cluster",
                     "-cluster=" + cluster_arg(cl)])
            gib = gpu_memory_gib(r.stdout) if r.returncode == 0 else None
            if gib:
                out[cl] = gib
        return out


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
            fail("%s failed:\n%s" % (" ".join(cmd), r.stderr))
        self.cache[key] = out
        return out


# summary: simulate's JSON summary, or None with error the reason;
# rss_kib: dp-opt's peak resident memory.
Outcome = collections.namedtuple("Outcome", "summary error wall rss_kib")


def error_line(stderr, rc):
    """The line of dp-opt's stderr that says what went wrong."""
    lines = stderr.strip().splitlines()
    lines = [l for l in lines if "error" in l] or lines
    return lines[-1][:300] if lines else "exit %d" % rc


def place(tools, bc, cluster, variant, opts, coloc, seed, workdir,
          timeout=None, curve=None):
    """Runs colocate (unless coloc is "none"), place{variant,opts} and
    simulate on a prepared model, killing dp-opt after `timeout` s; a
    learned placer writes its search curve to `curve`."""
    summary = os.path.join(workdir, "summary.json")
    for path in (summary, curve):
        if path and os.path.exists(path):
            os.remove(path)
    passes = []
    if coloc != "none":
        passes.append("colocate{strategy=%s}" % coloc)
    algo = VARIANTS[variant] + ("," + opts if opts else "")
    passes += ["place{%s}" % algo, "simulate"]
    cmd = [tools.dp_opt, "-passes=" + ",".join(passes),
           "-cluster=" + cluster_arg(cluster), "-seed=%d" % seed, "-quiet",
           "-summary=" + summary, "-disable-output"]
    if curve:
        cmd.append("-curve=" + curve)
    rc, _, err, wall, rss = run_measured(cmd + [bc], timeout)
    if rc < 0:
        return Outcome(None, "killed by signal %d after %.0f s%s" % (
            -rc, wall, " (--timeout)" if timeout and wall >= timeout
            else ""), wall, rss)
    if rc:
        return Outcome(None, error_line(err, rc), wall, rss)
    with open(summary) as f:
        return Outcome(json.load(f), None, wall, rss)


def place_once(tools, prep, model, cluster, variant, seed, cfg, workdir,
               curve_path=None):
    """One run of the placement part as a quality row; a learned placer's
    curve is thinned into `curve_path`."""
    coloc = colocation(variant, model, cfg.get("uniform_colocation", False))
    tmp_curve = os.path.join(workdir, "curve.csv") \
        if variant in LEARNED else None
    o = place(tools, prep.get(model, cluster), cluster, variant,
              budget(variant, cfg), coloc, seed, workdir,
              cfg.get("timeout"), tmp_curve)
    row = {"model": model, "cluster": cluster, "placer": variant,
           "colocation": coloc, "budget": budget_label(variant, cfg),
           "seed": seed, "wall_s": round(o.wall, 3),
           "peak_rss_mib": round(o.rss_kib / 1024, 1)}
    if o.error:
        row["error"] = o.error
        return row
    s = o.summary
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


def part_placement(tools, prep, cfg, workdir):
    """Every placer variant x model x cluster x seed of cfg, merged into
    quality.csv as each run ends; returns all its rows."""
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
                    # Each run's row as soon as it ends: an invocation
                    # stopped early keeps the runs it finished.
                    write_csv(QUALITY_CSV, merge_rows(
                        read_csv(QUALITY_CSV), [r], quality_key),
                        QUALITY_FIELDS)
                    log("%-12s %-8s %-12s seed %d  %s" % (
                        model, cluster, variant, seed,
                        "error: " + r["error"] if "error" in r else
                        "%9.2f ms%s  %.1f s" % (
                            r["step_s"] * 1e3, " OOM" if r["oom"] else "",
                            r["wall_s"])))
    # Every row is in quality.csv already, written as its run ended.
    return read_csv(QUALITY_CSV)
