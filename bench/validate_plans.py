#!/usr/bin/env -S /usr/bin/python3
"""Plans, simulated against measured: pipelines and data-parallel replicas
run by the PyTorch runtime on the host as two workers.

    /usr/bin/python3 bench/validate_plans.py [--build build]
        [--models resnet50,bert_base] [--cases single,dp2,...]
        [--steps 12] [--warmup 2] [--rounds 2] [--cluster host2.json]
        [--no-docs] [--tables]

(also `bench/run.py validate-plans ...`). The training steps of
ResNet-50 and BERT-Base at bench/validate.py's sizes (`utils/export-models.py
--size validation`: ResNet-50 at 224 x 224, BERT-Base over 128 tokens)
with a global batch of 8, the smallest that M = 2, 4 and 8 micro-batches
all divide (a rule fixed before any measurement), as these cases:

* `single`: one worker runs the whole step (the baseline of the
  speed-ups);
* `dp2`: two data-parallel replicas, each half the batch, gradients
  all-reduced in buckets;
* `gpipe-m2` ... `1f1b-m8`: a two-stage pipeline (`place{algo=pipeline,
  stages=2}`) of M = 2, 4, 8 micro-batches in each schedule;
* `layers-m8`: the equal-layers baseline (`balance=layers`, DeepSpeed's
  `uniform`), 1F1B with 8 micro-batches;
* `plan`: what the `plan` pass picks (`plan{seconds=30}`).

The protocol is bench/validate.py's, each rank and profiled process
bound to a core of its own (`--bind-cores`; unbound, two processes on the
two cores measured 1.07 and 1.30 s for the same step, bound 1.11 and
1.06 s: the scheduler moved them): the single-device step is profiled
(alone, and beside a second process running the same step) at every
micro-batch size the cases run (8, 4, 2, 1 samples, each from its own
export), once before placing and once in every round; the placers place
with the first profile of their micro-batch size (the `plan` search,
whose candidates run at several sizes, with oneDNN's costs); each round
runs every case once as its own process (one rank per device, one
thread), in an order rotated from round to round; afterwards each case
is simulated as the runtime ran it (`place{algo=given}` with the plan)
with the profiles of its micro-batch size pooled over the rounds. No
measured step enters a simulation.

Results go to bench/results/validate-plans.csv and the "Plans simulated
vs measured" section of docs/results.md; `--tables` rebuilds that section
from the CSV.
"""

import argparse
import csv
import json
import os
import statistics
import sys
import tempfile
import time

import validate as V
from dpbench import find_dp_opt
from dpbench.tables import reorder_sections, replace_section

ROOT = V.ROOT
CSV = os.path.join(V.RESULTS, "validate-plans.csv")
MODELS = ["resnet50", "bert_base"]
BATCH = 8
SIZES = [8, 4, 2, 1]
# name -> (replicas, stages, micro-batches, schedule, placer options)
CASES = {
    "single": (1, 1, 1, None, None),
    "dp2": (2, 1, 1, None, None),
    "gpipe-m2": (1, 2, 2, "gpipe", ""),
    "gpipe-m4": (1, 2, 4, "gpipe", ""),
    "gpipe-m8": (1, 2, 8, "gpipe", ""),
    "1f1b-m2": (1, 2, 2, "1f1b", ""),
    "1f1b-m4": (1, 2, 4, "1f1b", ""),
    "1f1b-m8": (1, 2, 8, "1f1b", ""),
    "layers-m8": (1, 2, 8, "1f1b", ",balance=layers"),
    "plan": None,
}
PLAN_SEARCH = "plan{seconds=30,max-microbatches=%d}" % BATCH
# Targets (issue: plans in the runtime).
TARGET_ERR = 0.15
TARGET_DP = 1.6
TARGET_PIPELINE = 1.4
MIN_STEPS = 4
# Every runtime process binds each rank to a core of its own (a one-core
# worker is a core); a profile's second process runs on the second core.
BIND = ["--bind-cores"]
BESIDE = ["taskset", "-c", str(sorted(os.sched_getaffinity(0))[-1])]
FIELDS = ["model", "case", "replicas", "stages", "microbatches", "schedule",
          "micro_batch", "devices", "measured_s", "min_s", "max_s", "mean_s",
          "p10_s", "p25_s", "p75_s", "p90_s", "timed_steps",
          "warmup_steps", "processes", "process_spread", "profile_s",
          "profile_processes", "measured_peaks", "simulated_peaks",
          "runtime_predicted_s"] + [f for f, _, _ in V.BREAKDOWN] + \
    ["bd_allreduce_s"]


def log(msg):
    V.log("plans: " + msg)


class Model:
    """One model's exports (one per micro-batch size), profiles and
    cases."""

    def __init__(self, work, dp_opt, cluster, name):
        self.work, self.dp_opt, self.cluster, self.name = (work, dp_opt,
                                                           cluster, name)
        # One bench/validate.py Case per size: its single-device step is
        # profiled there.
        self.sizes = {}
        for b in SIZES:
            d = os.path.join(work, "b%d" % b)
            case = self.sizes[b] = V.Case(d, dp_opt, cluster, name, "train")
            case.runtime_args = BIND
            case.beside_prefix = BESIDE
        self.src = self.sizes[BATCH].src
        self.traces = {b: [] for b in SIZES}
        self.shared = {b: [] for b in SIZES}

    def export(self, sizes):
        for b in sizes:
            V.run([V.PY, os.path.join(ROOT, "utils", "export-models.py"),
                   "--size", "validation", "--batch", str(b), "--out",
                   os.path.join(self.work, "b%d" % b, "models"), "--only",
                   self.name])
            case = self.sizes[b]
            out = case.path(".profiling")
            V.run([self.dp_opt, "-passes=" + ",".join(
                [case.prefix, "cost-annotate", V.PLACERS["single"],
                 "emit{format=onnx,out=%s}" % out]),
                "-cluster=" + self.cluster, "-disable-output", case.src])

    def profile(self, b):
        """The single-device step at b samples profiled once more, alone
        and beside a second process."""
        case = self.sizes[b]
        single = case.path(".profiling.placed.onnx")
        n = len(self.traces[b])
        self.traces[b].append(case.path(".trace%d.json" % n))
        case.measure(single, 1, 1, 1, profile=self.traces[b][-1])
        self.shared[b].append(case.path(".shared%d.json" % n))
        case.profile_shared(single, self.shared[b][-1])

    def cost(self, b, first=False):
        traces, shared = self.traces[b], self.shared[b]
        if first:
            traces, shared = traces[:1], shared[:1]
        return V.SOURCES["profile"] % V.profile_args(traces, shared)

    def out(self, case):
        return os.path.join(self.work, "%s-%s" % (self.name, case))

    def place(self, case):
        """Places a case; returns its plan as (R, S, M, schedule,
        recompute) and its placed model."""
        out = self.out(case)
        emit = "emit{format=onnx+json,out=%s}" % out
        spec = CASES[case]
        if spec is None:
            passes = ["import-onnx", "training-graph",
                      "cost-annotate{source=onednn}", PLAN_SEARCH, emit]
        else:
            r, s, m, sched, balance = spec
            b = BATCH // (r * m)
            passes = ["import-onnx"]
            if r > 1 or m > 1:
                passes.append(_pipeline(r, m, sched or "1f1b", False))
            passes += ["training-graph", self.cost(b, first=True)]
            if s == 1:
                passes += ["colocate", V.PLACERS["single"]]
            else:
                passes.append("place{algo=pipeline,stages=%d%s}"
                              % (s, balance))
            passes.append(emit)
        V.run([self.dp_opt, "-passes=" + ",".join(passes), "-cluster=" +
               self.cluster, "-seed=1", "-disable-output", self.src])
        placed = out + ".placed.onnx"
        return plan_of(placed), placed

    def simulate(self, case, plan):
        """The case simulated as it ran, with its size's pooled profiles."""
        r, s, m, sched, recompute = plan
        b = BATCH // (r * m)
        passes = ["import-onnx"]
        if r > 1 or m > 1:
            passes.append(_pipeline(r, m, sched, recompute))
        passes += ["training-graph", self.cost(b),
                   "place{algo=given,file=%s.placement.json}"
                   % self.out(case), "simulate"]
        summary = self.out(case) + ".summary.json"
        V.run([self.dp_opt, "-passes=" + ",".join(passes), "-cluster=" +
               self.cluster, "-summary=" + summary, "-disable-output",
               self.src])
        with open(summary) as f:
            return json.load(f)


def _pipeline(r, m, sched, recompute):
    return "pipeline{microbatches=%d,schedule=%s,replicas=%d%s}" % (
        m, sched, r, ",recompute=true" if recompute else "")


def plan_of(placed):
    """(replicas, stages, micro-batches, schedule, recompute) of a placed
    model: its dp.pipeline, else one stage per device it uses."""
    import onnx
    model = onnx.load(placed, load_external_data=False)
    meta = {p.key: p.value for p in model.metadata_props}
    if "dp.pipeline" in meta:
        p = json.loads(meta["dp.pipeline"])
        return (p["replicas"], len(p["stages"]), p["microbatches"],
                p["schedule"], p.get("recompute", False))
    devices = set(json.loads(meta["dp.placement"]).values())
    return (1, len(devices), 1, "1f1b", False)


def is_plan(plan):
    return plan[0] > 1 or plan[2] > 1


def ranks(plan):
    return plan[0] * plan[1]


def measure(model, placed, plan, steps, warmup):
    """One process of a case: its report."""
    case = model.sizes[BATCH]
    report = case.path(".plan-report.json")
    cmd = [V.PY, "-m", "dp_torch", "run", placed, "--train", "--threads",
           "1", "--steps", str(steps), "--warmup", str(warmup), "--report",
           report] + BIND
    n = ranks(plan) if is_plan(plan) else len(V.used_devices(placed))
    if n > 1:
        cmd += ["--nproc", str(n)]
    V.run(cmd)
    with open(report) as f:
        return json.load(f)


def rank_peaks(report):
    """Each rank's measured peak bytes, in device order."""
    return [d.get("peak_bytes") for d in sorted(
        report["devices"], key=lambda d: d.get("rank", 0))]


def sizes_of(cases):
    """The micro-batch sizes the cases run at (all of them with `plan`,
    whose choice is made after profiling)."""
    if any(CASES[c] is None for c in cases):
        return list(SIZES)
    return [b for b in SIZES if any(BATCH // (CASES[c][0] * CASES[c][2]) == b
                                    for c in cases)]


def validate_model(model, cases, steps, warmup, rounds):
    sizes = sizes_of(cases)
    log("%s: exporting at %s samples" % (model.name, sizes))
    model.export(sizes)
    for b in sizes:
        log("%s: profiling the single-device step at %d" % (model.name, b))
        model.profile(b)
    placed, plans = {}, {}
    for c in cases:
        plans[c], placed[c] = model.place(c)
        log("%s %s: %d replicas x %d stages, M=%d %s" % (
            model.name, c, plans[c][0], plans[c][1], plans[c][2],
            plans[c][3]))
    per = max(MIN_STEPS, -(-steps // rounds))
    reports = {c: [] for c in cases}
    profiling = ["profile b%d" % b for b in sizes]
    for i in range(rounds):
        for c in V.rotation(cases + profiling, i):
            if c in profiling:
                model.profile(int(c.split("b")[1]))
                continue
            reports[c].append(measure(model, placed[c], plans[c], per,
                                      warmup))
            log("%s round %d/%d %s: median %.1f ms" % (
                model.name, i + 1, rounds, c,
                reports[c][-1]["step_s"]["median"] * 1e3))
    rows = []
    for c in cases:
        plan = plans[c]
        sim = model.simulate(c, plan)
        r, s, m, sched, recompute = plan
        row = {"model": model.name, "case": c, "replicas": r, "stages": s,
               "microbatches": m, "schedule": sched if is_plan(plan)
               else "", "micro_batch": BATCH // (r * m),
               "devices": ranks(plan) if is_plan(plan) else s,
               "profile_s": sim["step_time_s"],
               "profile_processes": len(model.traces[BATCH // (r * m)])}
        row.update(V.measured_fields(reports[c]))
        row.update(allreduce_field(reports[c]))
        # Per rank: the median over the processes.
        peaks = [rank_peaks(rep) for rep in reports[c]]
        row["measured_peaks"] = ";".join(
            str(int(statistics.median(p[k] for p in peaks)))
            if all(p[k] is not None for p in peaks) else ""
            for k in range(len(peaks[0])))
        by_dev = {d["name"]: d["peak_bytes"] for d in sim["devices"]}
        row["simulated_peaks"] = ";".join(
            str(int(by_dev.get(d, 0))) for d in simulated_device(
                reports[c][0]))
        rows.append(row)
        log("%s %s: measured %.1f ms, simulated %.1f ms (%+.1f %%)" % (
            model.name, c, row["measured_s"] * 1e3, row["profile_s"] * 1e3,
            100 * V.err(row["profile_s"], row["measured_s"])))
    return rows


def simulated_device(report):
    """Each rank's device in the simulation, in rank order: its stage's
    device in replica 0 (the simulator runs replica 0, the others being
    its copies)."""
    plan = report.get("plan")
    out = []
    for d in sorted(report["devices"], key=lambda d: d.get("rank", 0)):
        if plan and d.get("stage") is not None:
            out.append(plan["stages"][d["stage"]][0])
        else:
            out.append(d["device"])
    return out


def resimulate(rows, work, dp_opt, cluster):
    """rows with their simulated figures made again from the profiles
    and placements kept in work."""
    import glob
    models = {}
    for r in rows:
        d = os.path.join(work, r["model"])
        if not os.path.isdir(d):
            continue
        m = models.get(r["model"])
        if m is None:
            m = models[r["model"]] = Model(d, dp_opt, cluster, r["model"])
            for b in SIZES:
                case = m.sizes[b]
                m.traces[b] = sorted(glob.glob(case.path(".trace*.json")))
                m.shared[b] = sorted(glob.glob(case.path(".shared*.json")))
        placed = m.out(r["case"]) + ".placed.onnx"
        plan = (int(r["replicas"]), int(r["stages"]),
                int(r["microbatches"]), r["schedule"] or "1f1b",
                plan_of(placed)[4])
        sim = m.simulate(r["case"], plan)
        r["profile_s"] = sim["step_time_s"]
        by_dev = {d["name"]: d["peak_bytes"] for d in sim["devices"]}
        r["simulated_peaks"] = ";".join(str(int(by_dev.get(d, 0)))
                                        for d in simulated_homes(placed))
        log("%s %s: measured %.1f ms, simulated again %.1f ms (%+.1f %%)"
            % (r["model"], r["case"], float(r["measured_s"]) * 1e3,
               r["profile_s"] * 1e3, 100 * V.err(r["profile_s"],
                                                 r["measured_s"])))
    return rows


def simulated_homes(placed):
    """simulated_device's answer from the placed model alone."""
    import onnx
    model = onnx.load(placed, load_external_data=False)
    meta = {p.key: p.value for p in model.metadata_props}
    if "dp.pipeline" not in meta:
        return sorted(set(json.loads(meta["dp.placement"]).values()),
                      key=lambda d: (d.split(":")[0], int(d.split(":")[1])))
    p = json.loads(meta["dp.pipeline"])
    where = {}
    for st in p["stages"]:
        for d in st.get("replica_devices", [st["device"]]):
            where[d] = st["device"]
    return [where[d] for d in sorted(
        where, key=lambda d: (d.split(":")[0], int(d.split(":")[1])))]


def allreduce_field(reports):
    per = []
    for rep in reports:
        vals = [b["allreduce_s"] for b in V.rank_breakdowns(rep)
                if isinstance(b.get("allreduce_s"), (int, float))]
        if vals:
            per.append(sum(vals))
    return {"bd_allreduce_s": statistics.median(per) if per else ""}


# --------------------------------------------------------------------------
# Tables
# --------------------------------------------------------------------------

def read_rows():
    if not os.path.exists(CSV):
        return []
    with open(CSV) as f:
        return list(csv.DictReader(f))


def write_rows(rows):
    os.makedirs(V.RESULTS, exist_ok=True)
    with open(CSV + ".tmp", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})
    os.replace(CSV + ".tmp", CSV)


def speedup(rows, row, field):
    """The model's single-worker step over this row's (same batch)."""
    one = [r for r in rows if r["model"] == row["model"] and
           r["case"] == "single" and V.has(r, field)]
    if not one or not V.has(row, field):
        return None
    return float(one[0][field]) / float(row[field])


def peaks(row, field):
    return [int(x) if x else None for x in row.get(field, "").split(";")] \
        if row.get(field) else []


def targets(rows):
    out = []
    errs = [(abs(V.err(r["profile_s"], r["measured_s"])), r) for r in rows
            if V.has(r, "profile_s", "measured_s")]
    if errs:
        worst = max(errs, key=lambda e: e[0])
        out.append(("every case simulated within %.0f %% of its median step"
                    % (100 * TARGET_ERR),
                    "largest %.1f %% (%s %s), median %.1f %% (%d cases)" % (
                        100 * worst[0], worst[1]["model"], worst[1]["case"],
                        100 * statistics.median(e for e, _ in errs),
                        len(errs)),
                    worst[0] <= TARGET_ERR))
    for model, case, want, what in (
            ("resnet50", "dp2", TARGET_DP, "two replicas of ResNet-50"),
            ("resnet50", None, TARGET_PIPELINE,
             "a two-stage pipeline of ResNet-50"),
            ("bert_base", None, TARGET_PIPELINE,
             "a two-stage pipeline of BERT-Base")):
        cand = [r for r in rows if r["model"] == model and (
            r["case"] == case if case else
            (int(r["stages"]) == 2 and int(r["replicas"]) == 1 and
             r["schedule"]))]
        ups = [(speedup(rows, r, "measured_s"), r) for r in cand]
        ups = [(u, r) for u, r in ups if u is not None]
        if not ups:
            out.append(("%s >= %.1fx one worker" % (what, want), "not run",
                        False))
            continue
        u, r = max(ups, key=lambda x: x[0])
        out.append(("%s >= %.1fx one worker's throughput" % (what, want),
                    "%.2fx (%s)" % (u, r["case"]), u >= want))
    for model in sorted({r["model"] for r in rows}):
        g = {r["case"]: r for r in rows if r["model"] == model}
        if "gpipe-m8" not in g or "1f1b-m8" not in g:
            continue
        mg, m1 = peaks(g["gpipe-m8"], "measured_peaks"), peaks(
            g["1f1b-m8"], "measured_peaks")
        sg, s1 = peaks(g["gpipe-m8"], "simulated_peaks"), peaks(
            g["1f1b-m8"], "simulated_peaks")
        ok = bool(mg) and len(mg) == len(m1) and all(
            a is not None and b is not None and b < a
            for a, b in zip(mg, m1))
        pred = bool(sg) and all(b < a for a, b in zip(sg, s1))
        out.append(("%s: 1F1B's peak below GPipe's on every rank at M=8, as "
                    "predicted" % model,
                    "measured %s MiB against %s; simulated %s against %s" % (
                        "/".join(mib(x) for x in m1),
                        "/".join(mib(x) for x in mg),
                        "/".join(mib(x) for x in s1),
                        "/".join(mib(x) for x in sg)), ok and pred))
    return out


def mib(x):
    return "%.0f" % (x / 2**20) if x is not None else "?"


def section(rows, cluster, command):
    lines = ["## Plans simulated vs measured", ""]
    lines.append(
        "Pipelines and data-parallel replicas run by the PyTorch runtime "
        "(`python3 -m dp_torch run --nproc N`, one rank per stage and "
        "replica, docs/runtime.md) on this machine as the cluster `%s` "
        "(%d one-core workers), against dp's simulation of the same plan. "
        "Training steps of ResNet-50 and BERT-Base at the validation sizes "
        "(224 x 224; 128 tokens) with a global batch of %d, the smallest "
        "that M = 2, 4 and 8 divide (fixed before any measurement); Adam. "
        "Each case is simulated with the single-device step's profiles at "
        "its micro-batch size (alone and beside a second process, one "
        "before placing and one in each round, pooled; medians), as the "
        "runtime ran it (`place{algo=given}`); the `plan` search chose with "
        "oneDNN's costs, its choice simulated like the others. Speed-up: "
        "the single worker's step over the case's, the same global batch. "
        "Generated by `%s`; do not edit by hand." % (
            cluster["name"], len(cluster["devices"]), BATCH, command))
    lines.append("")
    lines.append(V.protocol_text(rows).replace(
        "every placement of the model and step", "every case of the model"))
    lines.append("")
    lines += noise_text(rows)
    lines += ["| target | figure | status |", "| --- | --- | --- |"]
    for target, figure, met in targets(rows):
        lines.append("| %s | %s | %s |" % (target, figure,
                                           "met" if met else "not met"))
    lines += ["", "| model | case | plan | micro-batch | ranks | measured "
              "ms: median (fastest-slowest) | 10th-90th | simulated ms | err "
              "| speed-up measured | simulated |",
              "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | "
              "---: | ---: |"]
    for r in rows:
        up = speedup(rows, r, "measured_s")
        sup = speedup(rows, r, "profile_s")
        lines.append("| %s | %s | %s | %s | %s | %s (%s-%s) | %s-%s | %s | "
                     "%+.1f %% | %s | %s |" % (
                         r["model"], r["case"], plan_text(r),
                         r["micro_batch"], r["devices"], V.ms(r, "measured_s"),
                         V.ms(r, "min_s"), V.ms(r, "max_s"),
                         V.ms(r, "p10_s"), V.ms(r, "p90_s"),
                         V.ms(r, "profile_s"),
                         100 * V.err(r["profile_s"], r["measured_s"]),
                         "%.2f" % up if up else "", "%.2f" % sup if sup
                         else ""))
    lines += ["", "**Where the time goes**: each rank's breakdown of a step "
              "(medians over the timed steps, summed over the ranks, median "
              "over the processes; all-reduce is waiting for the gradient "
              "buckets after the last backward, the rest as in \"Simulated "
              "vs measured\").", "",
              "| model | case | measured ms | " + " | ".join(
                  "%s ms" % h for _, _, h in V.BREAKDOWN) +
              " | all-reduce ms |",
              "| --- | --- | ---: |" + " ---: |" * (len(V.BREAKDOWN) + 1)]
    for r in rows:
        lines.append("| " + " | ".join(
            [r["model"], r["case"], V.ms(r, "measured_s")] +
            [V.ms(r, f) for f, _, _ in V.BREAKDOWN] +
            [V.ms(r, "bd_allreduce_s")]) + " |")
    lines += ["", "**Peak memory per rank** (MiB, rank 0 first): measured, "
              "the resident set's high-water mark over the timed steps above "
              "the rank's resident set before its weights were made (median "
              "over the processes); simulated, the device's peak.", "",
              "| model | case | measured | simulated |",
              "| --- | --- | --- | --- |"]
    for r in rows:
        lines.append("| %s | %s | %s | %s |" % (
            r["model"], r["case"],
            " / ".join(mib(x) for x in peaks(r, "measured_peaks")),
            " / ".join(mib(x) for x in peaks(r, "simulated_peaks"))))
    return "\n".join(lines)


def noise_text(rows):
    """The noise floor measured in the same run: the spread of each case's
    processes, and cases that ran the same plan (data parallel, whose one
    stage leaves no cut to differ) measured apart."""
    spreads = [float(r["process_spread"]) for r in rows
               if V.has(r, "process_spread") and int(r["processes"]) > 1]
    if not spreads:
        return []
    text = ("**Noise floor.** The medians of a case's processes (the same "
            "command, one per round) differ by %.0f %% (median over the "
            "cases) and up to %.0f %%." % (100 * statistics.median(spreads),
                                          100 * max(spreads)))
    same = []
    for model in sorted({r["model"] for r in rows}):
        dp = [r for r in rows if r["model"] == model and
              int(r["stages"]) == 1 and int(r["replicas"]) > 1]
        for i in range(len(dp)):
            for j in range(i + 1, len(dp)):
                a, b = dp[i], dp[j]
                if plan_text(a) == plan_text(b):
                    same.append("%s's %s and %s, %s ms and %s ms (%.0f %% "
                                "apart)" % (model, a["case"], b["case"],
                                            V.ms(a, "measured_s"),
                                            V.ms(b, "measured_s"),
                                            100 * V.spread([
                                                float(a["measured_s"]),
                                                float(b["measured_s"])])))
    if same:
        text += (" Cases that ran the same plan in the same rounds: %s."
                 % "; ".join(same))
    return [text, ""]


def plan_text(r):
    if r["case"] == "single" or not r["schedule"]:
        return "%s x %s stage%s" % (r["replicas"], r["stages"],
                                    "s" if int(r["stages"]) > 1 else "")
    return "%s x %s stages, M=%s %s" % (r["replicas"], r["stages"],
                                        r["microbatches"], r["schedule"])


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--steps", type=int, default=12,
                    help="timed steps per case over all its rounds (each "
                    "process at least %d)" % MIN_STEPS)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--cluster", help="a host cluster file (default: "
                    "bench/results/validate-host2.json, made by "
                    "bench/validate.py)")
    ap.add_argument("--resimulate", metavar="DIR",
                    help="simulate the cases of the CSV again with the "
                    "profiles and placements a run kept in DIR "
                    "(DP_VALIDATE_KEEP=DIR), keeping their measured "
                    "figures: for a change of the simulator")
    ap.add_argument("--no-docs", action="store_true")
    ap.add_argument("--tables", action="store_true")
    args = ap.parse_args(argv)
    for name, values, known in (("model", args.models, MODELS),
                                ("case", args.cases, CASES)):
        for v in values.split(","):
            if v not in known:
                ap.error("unknown %s '%s' (expected one of %s)"
                         % (name, v, ", ".join(known)))
    if "single" not in args.cases.split(","):
        ap.error("--cases needs 'single', the baseline of the speed-ups")
    if args.steps < 1 or args.rounds < 1 or args.warmup < 0:
        ap.error("--steps and --rounds must be at least 1, --warmup at "
                 "least 0")
    return args


def main(argv=None):
    args = parse_args(argv)
    cluster_path = args.cluster or os.path.join(V.RESULTS,
                                                "validate-host2.json")
    with open(cluster_path) as f:
        cluster = json.load(f)
    if args.tables:
        write_docs(read_rows(), cluster, "bench/validate_plans.py; tables "
                   "by bench/validate_plans.py --tables")
        return
    dp_opt = find_dp_opt(args.build, "bench/validate_plans.py")
    command = "bench/validate_plans.py " + " ".join(
        argv if argv is not None else sys.argv[1:])
    if args.resimulate:
        rows = resimulate(read_rows(), args.resimulate, dp_opt,
                          cluster_path)
        write_rows(rows)
        if not args.no_docs:
            write_docs(rows, cluster, command)
        return
    start = time.monotonic()
    models = args.models.split(",")
    cases = [c for c in CASES if c in args.cases.split(",")]
    with tempfile.TemporaryDirectory(prefix="dp-plans-") as work:
        if os.environ.get("DP_VALIDATE_KEEP"):
            work = os.environ["DP_VALIDATE_KEEP"]
            os.makedirs(work, exist_ok=True)
        rows = [r for r in read_rows() if not (r["model"] in models and
                                               r["case"] in cases)]
        for name in models:
            model = Model(os.path.join(work, name), dp_opt, cluster_path,
                          name)
            new = validate_model(model, cases, args.steps, args.warmup,
                                 args.rounds)
            rows = [r for r in rows if not (r["model"] == name and
                                            r["case"] in cases)] + new
            rows.sort(key=lambda r: (MODELS.index(r["model"]),
                                     list(CASES).index(r["case"])))
            write_rows(rows)
    rows = read_rows()
    if not args.no_docs and rows:
        write_docs(rows, cluster, command)
    log("done in %.0f s" % (time.monotonic() - start))


def write_docs(rows, cluster, command):
    replace_section("bench validate plans", section(rows, cluster, command))
    reorder_sections()


if __name__ == "__main__":
    main()
