#!/usr/bin/env -S /usr/bin/python3
"""Simulated against measured: dp's predicted steps next to the runtime's.

    /usr/bin/python3 bench/validate.py [--build build] [--models a,b]
        [--modes inference,train] [--placers single,expert,metis,anneal]
        [--steps 3] [--warmup 1] [--repeats 3] [--no-docs]

(also `bench/run.py validate ...`). On this machine the cluster is the
host as two one-core CPU workers (`python3 -m dp_torch host-cluster`,
link measured on the runtime's own messages). For each of the six bundled
models, at the smaller input sizes of `utils/export-models.py --size
validation`, and for the inference and the training step:

1. the runtime runs the single-device placement with `--profile`: a
   torch.profiler trace with every node's forward and backward;
2. each placer places the model with the profiled costs, and `emit`
   writes the placed model;
3. for each cost source (roofline, oneDNN, the profile), dp-opt simulates
   the placed model as the runtime runs it (`place{algo=given}`: backward
   and update ops on their forward op's device);
4. the runtime runs the placed model (one rank per device, one thread
   each) and reports the median step.

The errors, their median and largest per cost source, and whether the
simulator orders each model's placements as measured (Kendall's tau) go
to bench/results/validate.csv and the "Simulated vs measured" section of
docs/results.md.
"""

import argparse
import csv
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from dpbench.models import MODELS
from dpbench.tables import reorder_sections, replace_section

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
CSV = os.path.join(RESULTS, "validate.csv")
PY = "/usr/bin/python3"
MODES = ["inference", "train"]
PLACERS = {
    "single": "place{algo=single,device=cpu:0}",
    "expert": "place{algo=expert}",
    "metis": "place{algo=metis,devices=all}",
    "anneal": "place{algo=anneal,evals=3000}",
}
SOURCES = {
    "roofline": "cost-annotate",
    "onednn": "cost-annotate{source=onednn}",
    "profile": "cost-annotate{profile=%s,profile-device=host-core}",
    "profile_min": "cost-annotate{profile=%s,profile-device=host-core,"
                   "profile-stat=min}",
    "profile_mean": "cost-annotate{profile=%s,profile-device=host-core,"
                    "profile-stat=mean}",
}
# What is compared with what: a simulated step (cost source) and a measured
# one. The profile's medians go with the median step, its fastest times
# with the fastest step, its means with the mean step.
COMPARISONS = [
    ("roofline", "roofline_s", "measured_s"),
    ("oneDNN", "onednn_s", "measured_s"),
    ("profile, medians", "profile_s", "measured_s"),
    ("profile, fastest", "profile_min_s", "min_s"),
    ("profile, means", "profile_mean_s", "mean_s"),
]
FIELDS = ["model", "mode", "placer", "devices", "measured_s", "min_s",
          "max_s", "mean_s", "roofline_s", "onednn_s", "profile_s",
          "profile_min_s", "profile_mean_s",
          "processes", "process_spread", "profile_peak_bytes",
          "measured_peak_bytes", "transfer_bytes",
          "measured_sent_bytes"]


def log(msg):
    sys.stderr.write("[validate %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def env_one_thread():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + \
        env.get("PYTHONPATH", "")
    # One core per worker: torch's, OpenMP's (oneDNN) and OpenBLAS's.
    env.update(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    return env


def run(cmd, timeout=1800, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True,
                          timeout=timeout, env=env_one_thread(), **kw)
    if proc.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s" % (
            " ".join(cmd), proc.returncode, proc.stderr[-3000:]))
    return proc


class Case:
    def __init__(self, work, dp_opt, cluster, model, mode):
        self.work, self.dp_opt, self.cluster = work, dp_opt, cluster
        self.model, self.mode = model, mode
        self.src = os.path.join(work, "models", model + ".onnx")
        self.tag = "%s-%s" % (model, mode)
        self.prefix = "import-onnx" + (",training-graph" if mode == "train"
                                       else "")

    def path(self, suffix):
        return os.path.join(self.work, self.tag + suffix)

    def place(self, placer, profile):
        """Places with the profiled costs and emits the placed model."""
        out = self.path("." + placer)
        # Colocation keeps a training step's backward with its forward
        # (TensorFlow's rules); an inference graph is placed op by op.
        coloc = ["colocate"] if self.mode == "train" else []
        passes = ",".join(
            [self.prefix, SOURCES["profile"] % profile] + coloc +
            [PLACERS[placer], "emit{format=onnx,out=%s}" % out])
        run([self.dp_opt, "-passes=" + passes, "-cluster=" + self.cluster,
             "-seed=1", "-disable-output", self.src])
        return out + ".placed.onnx"

    def simulate(self, placed, source, profile):
        cost = SOURCES[source] % profile if "%s" in SOURCES[source] \
            else SOURCES[source]
        summary = self.path(".%s.summary.json" % source)
        passes = ",".join([self.prefix, cost, "place{algo=given}",
                           "simulate"])
        run([self.dp_opt, "-passes=" + passes, "-cluster=" + self.cluster,
             "-summary=" + summary, "-disable-output", placed])
        with open(summary) as f:
            return json.load(f)

    def measure(self, placed, devices, steps, warmup, profile=None):
        report = self.path(".report.json")
        cmd = [PY, "-m", "dp_torch", "run", placed, "--threads", "1",
               "--steps", str(steps), "--warmup", str(warmup),
               "--report", report]
        if self.mode == "train":
            cmd.append("--train")
        if devices > 1:
            cmd += ["--nproc", str(devices)]
        if profile:
            cmd += ["--profile", profile, "--profile-steps", "5"]
        run(cmd)
        with open(report) as f:
            return json.load(f)


def kendall_tau(xs, ys):
    n, s = len(xs), 0
    pairs = 0
    for i in range(n):
        for j in range(i + 1, n):
            a = (xs[i] > xs[j]) - (xs[i] < xs[j])
            b = (ys[i] > ys[j]) - (ys[i] < ys[j])
            s += a * b
            pairs += 1
    return s / pairs if pairs else 1.0


def used_devices(placed):
    import onnx
    model = onnx.load(placed, load_external_data=False)
    for p in model.metadata_props:
        if p.key == "dp.placement":
            return sorted(set(json.loads(p.value).values()))
    raise RuntimeError("%s: no placement" % placed)


def validate_case(case, placers, steps, warmup, repeats):
    rows = []
    log("%s: profiling the single-device step" % case.tag)
    # The profile comes from the single-device placement, placed with
    # roofline costs (the profile does not exist yet).
    seed_out = case.path(".profiling")
    run([case.dp_opt, "-passes=" + ",".join(
        [case.prefix, "cost-annotate", PLACERS["single"],
         "emit{format=onnx,out=%s}" % seed_out]),
        "-cluster=" + case.cluster, "-disable-output", case.src])
    profile = case.path(".trace.json")
    case.measure(seed_out + ".placed.onnx", 1, 1, 1, profile=profile)
    for placer in placers:
        placed = case.place(placer, profile)
        devices = used_devices(placed)
        sims = {s: case.simulate(placed, s, profile) for s in SOURCES}
        log("%s %s: %d devices, measuring" % (case.tag, placer,
                                              len(devices)))
        # The single-device placement runs in several processes: on a
        # shared virtual machine the speed of a whole process varies, and
        # the spread of their medians is the noise floor of every row.
        runs = [case.measure(placed, len(devices), steps, warmup)
                for _ in range(repeats if placer == "single" else 1)]
        rep = runs[0]
        medians = [r["step_s"]["median"] for r in runs]
        pooled = [t for r in runs for t in r["step_s"]["all"]]
        sent = sum(d.get("sent_bytes") or 0 for d in rep["devices"])
        if rep.get("sent"):
            sent = sum(p["bytes"] for p in rep["sent"])
        peak = max(d["peak_bytes"] for d in sims["profile"]["devices"])
        measured_peaks = [d["peak_bytes"] for d in rep["devices"]
                          if d.get("peak_bytes") is not None]
        rows.append({
            "model": case.model, "mode": case.mode, "placer": placer,
            "devices": len(devices),
            "measured_s": statistics.median(pooled),
            "min_s": min(pooled), "max_s": max(pooled),
            "mean_s": statistics.mean(pooled),
            "processes": len(runs),
            "process_spread": max(medians) / min(medians) - 1,
            "roofline_s": sims["roofline"]["step_time_s"],
            "onednn_s": sims["onednn"]["step_time_s"],
            "profile_s": sims["profile"]["step_time_s"],
            "profile_min_s": sims["profile_min"]["step_time_s"],
            "profile_mean_s": sims["profile_mean"]["step_time_s"],
            "profile_peak_bytes": peak,
            "measured_peak_bytes": max(measured_peaks) if measured_peaks
            else "",
            "transfer_bytes": sims["profile"]["transfer_bytes"],
            "measured_sent_bytes": sent,
        })
        log("%s %s: measured %.1f ms, simulated %s" % (
            case.tag, placer, rows[-1]["measured_s"] * 1e3, ", ".join(
                "%s %.1f ms" % (s, rows[-1][s + "_s"] * 1e3)
                for s in SOURCES)))
    return rows


def read_rows():
    if not os.path.exists(CSV):
        return []
    with open(CSV) as f:
        return list(csv.DictReader(f))


def write_rows(rows):
    os.makedirs(RESULTS, exist_ok=True)
    with open(CSV + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})
    os.replace(CSV + ".tmp", CSV)


def has(row, *fields):
    return all(row.get(f) not in (None, "") for f in fields)


def err(sim, measured):
    return (float(sim) - float(measured)) / float(measured)


def section(rows, cluster, command):
    """The Markdown of the 'Simulated vs measured' section."""
    lines = ["## Simulated vs measured", ""]
    lines.append(
        "dp's simulated step next to the step the PyTorch runtime "
        "(`python3 -m dp_torch run`) measured, on this machine as the "
        "cluster `%s`: %d one-core CPU workers (one runtime rank each, "
        "one thread), link %.0f us + %.2f GB/s measured on the runtime's "
        "own messages%s. Models at `utils/export-models.py --size "
        "validation` (same networks, smaller batches and sequences); "
        "placements made with the profiled costs (medians); each placement "
        "simulated as the runtime runs it (`place{algo=given}`) with each "
        "cost source. The profile comes from 5 profiled steps of the "
        "single-device placement, in another process than the timed "
        "steps. The roofline, oneDNN and profile medians are compared with "
        "the median timed step; the profile's fastest times "
        "(`profile-stat=min`) with the fastest timed step; its means "
        "(`profile-stat=mean`) with the mean timed step. "
        "Error = simulated / measured - 1. Generated by "
        "`%s`; do not edit by hand." % (
            cluster["name"], len(cluster["devices"]),
            cluster["links"][0]["latency"] * 1e6 if cluster["links"] else 0,
            (cluster["links"][0]["bandwidth"] / 1e9) if cluster["links"]
            else 0,
            "; the workers a shared group whose speed with 1, 2, ... busy "
            "is %s (`host-cluster`'s probe)" % ", ".join(
                "%g" % v for v in cluster["shared"][0]["speed"])
            if cluster.get("shared") else "", command))
    lines.append("")
    head = "| model | step | placer | devices | measured ms: median " \
        "(fastest-slowest) |"
    rule = "| --- | --- | --- | ---: | ---: |"
    for label, _, _ in COMPARISONS:
        head += " %s ms | err |" % label
        rule += " ---: | ---: |"
    lines += [head, rule]
    for r in rows:
        cells = [r["model"], r["mode"], r["placer"], str(r["devices"]),
                 "%.1f (%.1f-%.1f)" % (float(r["measured_s"]) * 1e3,
                                       float(r["min_s"]) * 1e3,
                                       float(r["max_s"]) * 1e3)]
        for _, sim, got in COMPARISONS:
            if not has(r, sim, got):
                cells += ["", ""]
                continue
            v = float(r[sim])
            cells += ["%.1f" % (v * 1e3), "%+.1f %%" % (100 * err(v, r[got]))]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| cost source | against | cases | median abs error | "
                 "largest abs error | models whose order is kept (tau = 1) |")
    lines.append("| --- | --- | ---: | ---: | ---: | ---: |")
    groups = {}
    for r in rows:
        groups.setdefault((r["model"], r["mode"]), []).append(r)
    for label, sim, got in COMPARISONS:
        errs = [abs(err(r[sim], r[got])) for r in rows if has(r, sim, got)]
        if not errs:
            continue
        kept = 0
        for g in groups.values():
            if not all(has(r, sim, got) for r in g):
                continue
            tau = kendall_tau([float(r[sim]) for r in g],
                              [float(r[got]) for r in g])
            kept += tau == 1.0
        lines.append("| %s | %s step | %d | %.1f %% | %.1f %% | %d of %d |"
                     % (label, {"measured_s": "median", "min_s": "fastest",
                               "mean_s": "mean"}[got], len(errs), 100 * statistics.median(errs),
                        100 * max(errs), kept, len(groups)))
    spreads = [float(r["process_spread"]) for r in rows
                if int(r.get("processes") or 1) > 1]
    if spreads:
        lines.append("")
        lines.append(
            "**Noise floor.** The single-device placement of each model and "
            "step ran in %d processes with the same command: the medians of "
            "those processes differ by %.0f %% (median over cases) and up to "
            "%.0f %% (the slowest process's median over the fastest's). A "
            "simulator error below that cannot be told apart from the "
            "machine's noise." % (
                max(int(r["processes"]) for r in rows),
                100 * statistics.median(spreads), 100 * max(spreads)))
    lines.append("")
    lines.append("Kendall's tau between simulated and measured step times "
                 "of each model's placements (1: same order):")
    lines.append("")
    lines.append("| model | step | " + " | ".join(
        c[0] for c in COMPARISONS) + " |")
    lines.append("| --- | --- |" + " ---: |" * len(COMPARISONS))
    for (model, mode), g in groups.items():
        taus = ["%.2f" % kendall_tau([float(r[sim]) for r in g],
                                     [float(r[got]) for r in g])
                if all(has(r, sim, got) for r in g) else ""
                for _, sim, got in COMPARISONS]
        lines.append("| %s | %s | " % (model, mode) + " | ".join(taus) +
                     " |")
    lines.append("")
    lines.append(
        "Peak memory, the largest over the placement's devices: simulated "
        "(liveness of tensors, weights and optimizer state) against the "
        "runtime's measure on a CPU, the resident set's high-water mark "
        "over the timed steps above the rank's resident set before its "
        "weights were made (torch keeps no CPU allocator statistics; this "
        "figure includes what the allocator keeps of freed blocks). The "
        "runtime drops each tensor after its last reader (docs/runtime.md); "
        "runs before 2026-11-27 kept the forward pass's tensors to the end "
        "of the step and measured up to twice the step's memory.")
    lines.append("")
    lines.append("| model | step | placer | simulated MiB | measured MiB | "
                 "err |")
    lines.append("| --- | --- | --- | ---: | ---: | ---: |")
    merrs = []
    for r in rows:
        if r.get("measured_peak_bytes") in (None, ""):
            continue
        sim, got = float(r["profile_peak_bytes"]), float(
            r["measured_peak_bytes"])
        e = err(sim, got) if got > 0 else float("nan")
        merrs.append(abs(e))
        lines.append("| %s | %s | %s | %.0f | %.0f | %+.1f %% |" % (
            r["model"], r["mode"], r["placer"], sim / 2**20, got / 2**20,
            100 * e))
    if merrs:
        lines.append("")
        lines.append("Peak memory: median abs error %.1f %%, largest %.1f %% "
                     "(%d cases)." % (100 * statistics.median(merrs),
                                      100 * max(merrs), len(merrs)))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--placers", default=",".join(PLACERS))
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3,
                    help="processes that measure the single-device "
                    "placement (the noise floor)")
    ap.add_argument("--cluster", help="a host cluster file made before "
                    "(default: measure one now)")
    ap.add_argument("--no-docs", action="store_true")
    ap.add_argument("--tables", action="store_true",
                    help="only regenerate the docs section from "
                    "bench/results/validate.csv")
    args = ap.parse_args(argv)
    if args.tables:
        with open(args.cluster or os.path.join(
                RESULTS, "validate-host2.json")) as f:
            write_docs(read_rows(), json.load(f),
                       "bench/validate.py; tables by bench/validate.py "
                       "--tables")
        return
    dp_opt = os.path.join(os.path.abspath(args.build), "bin", "dp-opt")
    if not os.path.isfile(dp_opt):
        sys.exit("bench/validate.py: no dp-opt in %s" % args.build)
    models = args.models.split(",")
    placers = args.placers.split(",")
    for p in placers:
        if p not in PLACERS:
            sys.exit("bench/validate.py: unknown placer '%s'" % p)
    command = "bench/validate.py " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:]))
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="dp-validate-") as work:
        if os.environ.get("DP_VALIDATE_KEEP"):
            work = os.environ["DP_VALIDATE_KEEP"]
            os.makedirs(work, exist_ok=True)
        cluster_path = os.path.join(RESULTS, "validate-host2.json")
        if args.cluster:
            cluster_path = args.cluster
        else:
            log("measuring the host cluster")
            os.makedirs(RESULTS, exist_ok=True)
            run([PY, "-m", "dp_torch", "host-cluster", "--workers", "2",
                 "--out", cluster_path])
        with open(cluster_path) as f:
            cluster = json.load(f)
        log("exporting %s" % ", ".join(models))
        run([PY, os.path.join(ROOT, "utils", "export-models.py"), "--size",
             "validation", "--out", os.path.join(work, "models"), "--only"]
            + models)
        rows = [r for r in read_rows()
                if not (r["model"] in models and r["mode"] in
                        args.modes.split(",") and r["placer"] in placers)]
        for model in models:
            for mode in args.modes.split(","):
                case = Case(work, dp_opt, cluster_path, model, mode)
                new = validate_case(case, placers, args.steps, args.warmup,
                                    args.repeats)
                rows = [r for r in rows if not (
                    r["model"] == model and r["mode"] == mode)] + new
                order = {m: i for i, m in enumerate(MODELS)}
                rows.sort(key=lambda r: (order.get(r["model"], 99),
                                         MODES.index(r["mode"]),
                                         list(PLACERS).index(r["placer"])))
                write_rows(rows)
    rows = read_rows()
    if not args.no_docs and rows:
        write_docs(rows, cluster, command)
    log("done in %.0f s" % (time.monotonic() - start))


def write_docs(rows, cluster, command):
    replace_section("bench validate", section(rows, cluster, command))
    reorder_sections()


if __name__ == "__main__":
    main()
