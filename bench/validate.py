#!/usr/bin/env -S /usr/bin/python3
"""Simulated against measured: dp's predicted steps next to the runtime's.

    /usr/bin/python3 bench/validate.py [--build build] [--models a,b]
        [--modes inference,train] [--placers single,expert,metis,anneal]
        [--steps 30] [--warmup 5] [--rounds 3] [--cluster host2.json]
        [--no-docs] [--tables]

(also `bench/run.py validate ...`). On this machine the cluster is the
host as two one-core CPU workers (`python3 -m dp_torch host-cluster`,
link measured on the runtime's own messages). For each of the six bundled
models, at the smaller input sizes of `utils/export-models.py --size
validation`, and for the inference and the training step (a case):

1. the runtime runs the single-device placement with `--profile`: a
   torch.profiler trace with every node's forward and backward; and once
   more beside a second process that runs the same step without pause,
   whose trace gives every op's time with both workers busy (the two
   one-core workers share the chip's caches and memory bandwidth, and
   ops lose to that by their kind: `cost-annotate{shared-profile=}`);
2. each placer places the model with those profiled costs, and `emit`
   writes the placed model;
3. the runtime measures every placed model of the case, by the protocol
   below; each round also profiles the single-device step once more,
   alone and beside a second process, each in the round's rotation like
   the timed processes;
4. for each cost source (roofline, oneDNN, the profile), dp-opt simulates
   each placed model as the runtime runs it (`place{algo=given}`:
   backward and update ops on their forward op's device), the profile
   being all the case's profiles pooled (`cost-annotate{profile=a:b:..,
   shared-profile=c:d:..}`):
   the speed of this machine drifts by tens of percent within minutes
   and differs from one process to the next, so a profile taken once,
   before the timed steps, would set every simulated step of the case;
   pooled over the rounds, the costs come from the minutes the steps were
   timed in. No measured step enters them.

Measurement protocol. On a shared machine the speed of a process drifts
over minutes and differs between processes, so no placement is measured
in one go. A case's placements are measured in `--rounds` R rounds: in
round i every placement runs once, as a process of its own (one rank per
device, one thread each), in the placers' order rotated to start at
placer i mod P, so that a slow stretch of the machine falls on all
placements alike and none is always first or last. Each process runs
`--warmup` untimed steps, then max(10, ceil(steps / R)) timed steps. A
placement's figures come from the timed steps of all its processes,
pooled: mean, median, fastest, slowest and the 10th, 25th, 75th and 90th
percentiles. The spread of its processes' medians (slowest / fastest - 1)
is its noise floor.

The errors per cost source, the order of each model's placements
(Kendall's tau, and the pairs whose measured ranges are apart), dp's pick
against the fastest placement, two workers against one, the noise floor
and four target figures go to bench/results/validate.csv and the
"Simulated vs measured" section of docs/results.md; `--tables` rebuilds
that section from the CSV alone.
"""

import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

from dpbench import find_dp_opt
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
    "profile": "cost-annotate{%s,profile-device=host-core}",
    "profile_min": "cost-annotate{%s,profile-device=host-core,"
                   "profile-stat=min}",
    "profile_mean": "cost-annotate{%s,profile-device=host-core,"
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
AGAINST = {"measured_s": "median", "min_s": "fastest", "mean_s": "mean"}
# The comparison the targets judge.
HEADLINE = COMPARISONS[2]
# The profiling processes' place in each round's rotation: the single
# device's step profiled alone, and profiled beside a second process that
# runs the same step (the two workers' contention, op by op).
PROFILING = "profiling"
PROFILING_SHARED = "profiling beside a second process"
# The fewest timed steps one process runs, whatever --steps / --rounds.
MIN_STEPS_PER_PROCESS = 10
# dp's pick, and the placement two workers are measured against.
PICK = "anneal"
BASELINE = "single"
# The four targets (docs/simulator.md, "Against measurement").
TARGET_MEDIAN_ERR = 0.10
TARGET_LARGEST_ERR = 0.25
TARGET_PAIRS_ORDERED = 0.90
PICK_WITHIN = 0.05
TARGET_PICKS = 11
TARGET_GROUPS = 12
FASTER_BY = 0.10
PREDICTED_WITHIN = 0.10
TARGET_SPEEDUP_MODELS = 2
# The runtime's per-rank breakdown of a step (dist.py's breakdown()): CSV
# field, the report's keys it sums, column heading.
BREAKDOWN = [
    ("bd_ops_s", ("ops_s",), "ops"),
    ("bd_dispatch_s", ("dispatch_s",), "dispatch"),
    ("bd_comm_s", ("send_s", "recv_s"), "communication"),
    ("bd_wait_s", ("wait_s",), "waiting"),
    ("bd_other_s", ("other_s",), "other"),
]
FIELDS = ["model", "mode", "placer", "devices", "measured_s", "min_s",
          "max_s", "mean_s", "p10_s", "p25_s", "p75_s", "p90_s",
          "timed_steps", "warmup_steps", "roofline_s", "onednn_s",
          "profile_s", "profile_min_s", "profile_mean_s",
          "processes", "process_spread", "profile_processes",
          "shared_profile_processes",
          "profile_peak_bytes",
          "measured_peak_bytes", "transfer_bytes",
          "measured_sent_bytes", "runtime_predicted_s"] + \
    [f for f, _, _ in BREAKDOWN]


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


# --------------------------------------------------------------------------
# Statistics: pure functions of numbers and CSV rows (tested in
# python/tests/test_validate_stats.py)
# --------------------------------------------------------------------------

def percentile(xs, q):
    """The q-th percentile (0-100) of xs, interpolated linearly between the
    two nearest ranks (numpy's default, Hyndman and Fan's type 7)."""
    if not xs:
        raise ValueError("percentile of no values")
    s = sorted(xs)
    pos = (len(s) - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def spread(xs):
    """Largest over smallest, less one: how far apart positive figures
    are (0 for one figure)."""
    return max(xs) / min(xs) - 1


def kendall_tau(xs, ys):
    """Kendall's tau-a of two equally long sequences: 1 when ys orders
    every pair as xs does, -1 when it reverses every pair."""
    n, s = len(xs), 0
    pairs = 0
    for i in range(n):
        for j in range(i + 1, n):
            a = (xs[i] > xs[j]) - (xs[i] < xs[j])
            b = (ys[i] > ys[j]) - (ys[i] < ys[j])
            s += a * b
            pairs += 1
    return s / pairs if pairs else 1.0


def rotation(items, i):
    """Round i's order: items rotated to start at item i mod len(items)."""
    k = i % len(items)
    return list(items[k:]) + list(items[:k])


def steps_per_process(steps, rounds):
    """Timed steps of each process, so that the rounds together time at
    least `steps` and no process fewer than MIN_STEPS_PER_PROCESS."""
    return max(MIN_STEPS_PER_PROCESS, -(-steps // rounds))


def has(row, *fields):
    return all(row.get(f) not in (None, "") for f in fields)


def err(sim, measured):
    return (float(sim) - float(measured)) / float(measured)


def groups_of(rows):
    """Rows by (model, mode), in first-seen order."""
    groups = {}
    for r in rows:
        groups.setdefault((r["model"], r["mode"]), []).append(r)
    return groups


def workers(row):
    return int(row["devices"])


def abs_errors(rows, sim, got, min_devices=1):
    """|simulated / measured - 1| of the rows that have both figures and
    use at least min_devices devices."""
    return [abs(err(r[sim], r[got])) for r in rows
            if has(r, sim, got) and workers(r) >= min_devices]


def apart(a, b):
    """-1 if a's measured range lies wholly below b's, 1 if wholly above,
    0 if they overlap (touching ends overlap) or a row has no range. The
    range is the 10th to the 90th percentile of the pooled timed steps."""
    if not (has(a, "p10_s", "p90_s") and has(b, "p10_s", "p90_s")):
        return 0
    if float(a["p90_s"]) < float(b["p10_s"]):
        return -1
    if float(b["p90_s"]) < float(a["p10_s"]):
        return 1
    return 0


def pair_agreement(rows, sim):
    """(pairs, ordered): the pairs of placements of one model and step
    whose measured ranges are apart, and how many of them the simulated
    steps in `sim` order the same way (a tie is not ordered)."""
    pairs = ordered = 0
    for g in groups_of(rows).values():
        for i in range(len(g)):
            for j in range(i + 1, len(g)):
                side = apart(g[i], g[j])
                if side == 0 or not has(g[i], sim) or not has(g[j], sim):
                    continue
                a, b = float(g[i][sim]), float(g[j][sim])
                pairs += 1
                ordered += ((a > b) - (a < b)) == side
    return pairs, ordered


def pick_vs_fastest(group, got, pick=PICK):
    """(fastest row, pick's measured / fastest's measured) among one model
    and step's placements, or None without the pick or a figure."""
    if not all(has(r, got) for r in group):
        return None
    mine = [r for r in group if r["placer"] == pick]
    if not mine:
        return None
    fastest = min(group, key=lambda r: float(r[got]))
    return fastest, float(mine[0][got]) / float(fastest[got])


def two_worker_speedup(group, sim, got, baseline=BASELINE):
    """The fastest measured placement on two or more workers against the
    single-device one, as a dict: `best` (its row), `measured` and
    `simulated` (one worker's step over its step: > 1 is faster), or None
    without both placements or their figures."""
    one = [r for r in group if r["placer"] == baseline and has(r, sim, got)]
    more = [r for r in group if workers(r) >= 2 and has(r, sim, got)]
    if not one or not more:
        return None
    best = min(more, key=lambda r: float(r[got]))
    return {"best": best,
            "measured": float(one[0][got]) / float(best[got]),
            "simulated": float(one[0][sim]) / float(best[sim])}


def speedup_predicted(up):
    """Whether two workers measured at least FASTER_BY faster than one
    (speed-up >= 1 + FASTER_BY) and the simulator predicted that: its
    speed-up above 1 and within PREDICTED_WITHIN of the measured one. (The
    first condition matters near the threshold: 10 % of a measured 1.10
    would otherwise admit a simulated 0.99, two workers predicted
    slower.)"""
    return up["measured"] >= 1 + FASTER_BY and up["simulated"] > 1 and \
        abs(up["simulated"] / up["measured"] - 1) <= PREDICTED_WITHIN


def speedup_models(rows, sim, got):
    """{model: [steps]}: the models with a step whose two workers measured
    and were predicted faster than one (speedup_predicted)."""
    good = {}
    for (model, mode), g in groups_of(rows).items():
        up = two_worker_speedup(g, sim, got)
        if up and speedup_predicted(up):
            good.setdefault(model, []).append(mode)
    return good


def targets(rows, comparison=HEADLINE):
    """The four targets for one comparison: (target, figure, met) each."""
    _, sim, got = comparison
    groups = groups_of(rows)
    out = []
    errs = abs_errors(rows, sim, got)
    if errs:
        med, top = statistics.median(errs), max(errs)
        out.append(("median abs error <= %.0f %% and largest <= %.0f %%"
                    % (100 * TARGET_MEDIAN_ERR, 100 * TARGET_LARGEST_ERR),
                    "%.1f %% and %.1f %% (%d cases)"
                    % (100 * med, 100 * top, len(errs)),
                    med <= TARGET_MEDIAN_ERR and top <= TARGET_LARGEST_ERR))
    else:
        out.append(("median abs error <= %.0f %% and largest <= %.0f %%"
                    % (100 * TARGET_MEDIAN_ERR, 100 * TARGET_LARGEST_ERR),
                    "no cases", False))
    pairs, ordered = pair_agreement(rows, sim)
    out.append((">= %.0f %% of distinguishable pairs ordered as measured"
                % (100 * TARGET_PAIRS_ORDERED),
                "%d of %d (%.0f %%)" % (ordered, pairs, 100 * ordered / pairs)
                if pairs else "no distinguishable pairs",
                pairs > 0 and ordered >= TARGET_PAIRS_ORDERED * pairs))
    picks = [p for p in (pick_vs_fastest(g, got) for g in groups.values())
             if p]
    within = sum(ratio <= 1 + PICK_WITHIN for _, ratio in picks)
    out.append(("%s within %.0f %% of the fastest in >= %d of %d model/step "
                "pairs" % (PICK, 100 * PICK_WITHIN, TARGET_PICKS,
                           TARGET_GROUPS),
                "%d of %d" % (within, len(picks)), within >= TARGET_PICKS))
    good = speedup_models(rows, sim, got)
    out.append((">= %d models with two workers >= %.0f %% faster than one, "
                "predicted within %.0f %%"
                % (TARGET_SPEEDUP_MODELS, 100 * FASTER_BY,
                   100 * PREDICTED_WITHIN),
                "%d%s" % (len(good), " (%s)" % ", ".join(
                    "%s %s" % (m, "+".join(good[m])) for m in good)
                    if good else ""),
                len(good) >= TARGET_SPEEDUP_MODELS))
    return out


# --------------------------------------------------------------------------
# One placement's measured columns from its processes' reports
# --------------------------------------------------------------------------

def rank_breakdowns(report):
    """The per-rank breakdowns (dicts of seconds) of a runtime report:
    each device's `breakdown`, else the report's own `breakdown` (a list
    of them, a dict of them, or one); [] when the runtime gave none."""
    ranks = [d["breakdown"] for d in report.get("devices") or []
             if isinstance(d.get("breakdown"), dict)]
    if ranks:
        return ranks
    top = report.get("breakdown")
    if isinstance(top, list):
        return [b for b in top if isinstance(b, dict)]
    if isinstance(top, dict) and top:
        if all(isinstance(v, dict) for v in top.values()):
            return list(top.values())
        if all(isinstance(v, (int, float)) for v in top.values()):
            return [top]
    return []


def breakdown_fields(reports):
    """The bd_* fields: each key summed over ranks, median over the
    processes that report it; empty where none does."""
    out = {}
    for field, keys, _ in BREAKDOWN:
        per_process = []
        for rep in reports:
            vals = [b[k] for b in rank_breakdowns(rep) for k in keys
                    if isinstance(b.get(k), (int, float))]
            if vals:
                per_process.append(sum(vals))
        out[field] = statistics.median(per_process) if per_process else ""
    return out


def measured_fields(reports):
    """A placement's measured columns from its processes' reports."""
    pooled = [t for r in reports for t in r["step_s"]["all"]]
    medians = [r["step_s"]["median"] for r in reports]
    row = {
        "measured_s": statistics.median(pooled),
        "mean_s": statistics.mean(pooled),
        "min_s": min(pooled), "max_s": max(pooled),
        "p10_s": percentile(pooled, 10), "p25_s": percentile(pooled, 25),
        "p75_s": percentile(pooled, 75), "p90_s": percentile(pooled, 90),
        "timed_steps": len(pooled),
        "warmup_steps": reports[0].get("warmup", ""),
        "processes": len(reports),
        "process_spread": spread(medians),
    }
    first = reports[0]
    sent = sum(d.get("sent_bytes") or 0 for d in first["devices"])
    if first.get("sent"):
        sent = sum(p["bytes"] for p in first["sent"])
    row["measured_sent_bytes"] = sent
    peaks = []
    for r in reports:
        mine = [d["peak_bytes"] for d in r["devices"]
                if d.get("peak_bytes") is not None]
        if mine:
            peaks.append(max(mine))
    row["measured_peak_bytes"] = int(statistics.median(peaks)) if peaks \
        else ""
    predicted = [r["predicted"]["step_s"] for r in reports
                 if isinstance(r.get("predicted"), dict) and
                 isinstance(r["predicted"].get("step_s"), (int, float))]
    row["runtime_predicted_s"] = statistics.median(predicted) if predicted \
        else ""
    row.update(breakdown_fields(reports))
    return row


# --------------------------------------------------------------------------
# Placing, simulating and running one case
# --------------------------------------------------------------------------

class Case:
    def __init__(self, work, dp_opt, cluster, model, mode):
        self.work, self.dp_opt, self.cluster = work, dp_opt, cluster
        self.model, self.mode = model, mode
        self.src = os.path.join(work, "models", model + ".onnx")
        self.tag = "%s-%s" % (model, mode)
        self.prefix = "import-onnx" + (",training-graph" if mode == "train"
                                       else "")
        # Options every runtime process gets, and the command prefix of
        # the second process beside a shared profile (bench/validate_plans.py
        # binds each to a core of its own).
        self.runtime_args = []
        self.beside_prefix = []

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

    def profile_shared(self, placed, trace):
        """Profiles the step of \p placed while a second process runs the
        same step without pause: the profile's times are the ops' times
        with both workers busy (cost-annotate's shared-profile=). The
        second process starts first and stops when the profile is
        written."""
        cmd = self.beside_prefix + [
            PY, "-m", "dp_torch", "run", placed, "--threads", "1",
            "--steps", "1000000", "--warmup", "0"] + self.runtime_args
        if self.mode == "train":
            cmd.append("--train")
        beside = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL,
                                  env=env_one_thread())
        try:
            # Its first steps run while this process loads the model.
            return self.measure(placed, 1, 1, 2, profile=trace)
        finally:
            beside.kill()
            beside.wait()

    def measure(self, placed, devices, steps, warmup, profile=None):
        report = self.path(".report.json")
        cmd = [PY, "-m", "dp_torch", "run", placed, "--threads", "1",
               "--steps", str(steps), "--warmup", str(warmup),
               "--report", report] + self.runtime_args
        if self.mode == "train":
            cmd.append("--train")
        if devices > 1:
            cmd += ["--nproc", str(devices)]
        if profile:
            cmd += ["--profile", profile, "--profile-steps", "5"]
        run(cmd)
        with open(report) as f:
            return json.load(f)


def used_devices(placed):
    import onnx
    model = onnx.load(placed, load_external_data=False)
    for p in model.metadata_props:
        if p.key == "dp.placement":
            return sorted(set(json.loads(p.value).values()))
    raise RuntimeError("%s: no placement" % placed)


def profile_args(traces, shared):
    """cost-annotate's options for the profiles \p traces (the single
    device's step alone) and \p shared (beside a second process)."""
    return "profile=%s,shared-profile=%s" % (":".join(traces),
                                             ":".join(shared))


def step_of(summary):
    """A simulator summary's step, or "" where its cost source failed."""
    return summary["step_time_s"] if summary is not None else ""


def validate_case(case, placers, steps, warmup, rounds):
    log("%s: profiling the single-device step" % case.tag)
    # The profile comes from the single-device placement, placed with
    # roofline costs (the profile does not exist yet).
    seed_out = case.path(".profiling")
    run([case.dp_opt, "-passes=" + ",".join(
        [case.prefix, "cost-annotate", PLACERS["single"],
         "emit{format=onnx,out=%s}" % seed_out]),
        "-cluster=" + case.cluster, "-disable-output", case.src])
    # The placers place with a first profile; then every round profiles
    # the single-device step once more, in a process of its own among the
    # round's timed processes, and every placement is simulated with all
    # of them pooled: the costs it is simulated with come from the minutes
    # its steps were timed in (the speed of this shared machine drifts by
    # tens of percent within minutes), and no measured step enters them.
    single = seed_out + ".placed.onnx"
    traces = [case.path(".trace0.json")]
    case.measure(single, 1, 1, 1, profile=traces[0])
    shared = [case.path(".shared0.json")]
    case.profile_shared(single, shared[0])
    placed, devices = {}, {}
    for placer in placers:
        placed[placer] = case.place(placer, profile_args(traces, shared))
        devices[placer] = len(used_devices(placed[placer]))
    per = steps_per_process(steps, rounds)
    reports = {p: [] for p in placers}
    for i in range(rounds):
        for placer in rotation(placers + [PROFILING, PROFILING_SHARED], i):
            if placer == PROFILING:
                traces.append(case.path(".trace%d.json" % len(traces)))
                case.measure(single, 1, 1, 1, profile=traces[-1])
                continue
            if placer == PROFILING_SHARED:
                shared.append(case.path(".shared%d.json" % len(shared)))
                case.profile_shared(single, shared[-1])
                continue
            reports[placer].append(case.measure(
                placed[placer], devices[placer], per, warmup))
            log("%s round %d/%d %s: %d devices, median %.1f ms" % (
                case.tag, i + 1, rounds, placer, devices[placer],
                reports[placer][-1]["step_s"]["median"] * 1e3))
    profile = profile_args(traces, shared)
    sims = {}
    for placer in placers:
        sims[placer] = {}
        for source in SOURCES:
            try:
                sims[placer][source] = case.simulate(placed[placer], source,
                                                     profile)
            except RuntimeError as e:
                # One cost source failing leaves its cells empty; the
                # profile, the headline comparison, is needed.
                if source == "profile":
                    raise
                log("%s %s: the %s cost source failed, its cells stay "
                    "empty: %s" % (case.tag, placer, source,
                                   str(e).splitlines()[0][-200:]))
                sims[placer][source] = None
    rows = []
    for placer in placers:
        sim = sims[placer]
        row = {
            "model": case.model, "mode": case.mode, "placer": placer,
            "devices": devices[placer],
            "roofline_s": step_of(sim["roofline"]),
            "onednn_s": step_of(sim["onednn"]),
            "profile_s": step_of(sim["profile"]),
            "profile_min_s": step_of(sim["profile_min"]),
            "profile_mean_s": step_of(sim["profile_mean"]),
            "profile_processes": len(traces),
            "shared_profile_processes": len(shared),
            "profile_peak_bytes": max(d["peak_bytes"]
                                      for d in sim["profile"]["devices"]),
            "transfer_bytes": sim["profile"]["transfer_bytes"],
        }
        row.update(measured_fields(reports[placer]))
        rows.append(row)
        log("%s %s: measured %.1f ms (%d steps, %d processes), simulated %s"
            % (case.tag, placer, row["measured_s"] * 1e3,
               row["timed_steps"], row["processes"], ", ".join(
                   "%s %.1f ms" % (s, row[s + "_s"] * 1e3)
                   if row[s + "_s"] != "" else "%s failed" % s
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


# --------------------------------------------------------------------------
# The "Simulated vs measured" section
# --------------------------------------------------------------------------

def ms(row, field):
    return "%.1f" % (float(row[field]) * 1e3) if has(row, field) else ""


def pct(x):
    return "%.1f %%" % (100 * x)


def profile_processes(rows):
    """How many processes the profiles of the rows' cases pooled: "4",
    or "1 to 4" (rows of earlier runs profiled in one)."""
    counts = sorted({int(r.get("profile_processes") or 1) for r in rows}) \
        or [1]
    if len(counts) == 1:
        return str(counts[0])
    return "%d to %d" % (counts[0], counts[-1])


def shared_text(rows):
    """What the section says of the profiles taken beside a second
    process, from the rows' own columns ("" for rows without them)."""
    counts = sorted({int(r["shared_profile_processes"]) for r in rows
                     if r.get("shared_profile_processes")})
    if not counts:
        return ""
    n = str(counts[0]) if len(counts) == 1 else "%d to %d" % (counts[0],
                                                               counts[-1])
    return ("; and as many (%s) profiled beside a second process that ran "
            "the same step without pause, whose times are each op's with "
            "both workers busy (`shared-profile=`: the simulator runs an op "
            "at its own rate under contention, not at the probe's one "
            "speed)" % n)


def protocol_text(rows):
    """How the rows were measured, from their own columns."""
    new = [r for r in rows if has(r, "p10_s", "timed_steps")]
    old = len(rows) - len(new)
    text = []
    kinds = sorted({(int(r["processes"]), int(r["timed_steps"]),
                     r.get("warmup_steps") or "?") for r in new})
    if len(kinds) == 1:
        procs, steps, warm = kinds[0]
        text.append(
            "Each placement ran in %d interleaved rounds: in each round "
            "every placement of the model and step ran once as a process "
            "of its own, the placers' order rotated by one from round to "
            "round; each process ran %s warm-up steps and then %d timed "
            "steps, and a placement's figures are over its %d timed steps "
            "pooled." % (procs, warm, steps // procs, steps))
    elif kinds:
        text.append(
            "Each placement ran in interleaved rounds (one process per "
            "placement per round, the placers' order rotated from round "
            "to round), its figures over the timed steps of all its "
            "processes pooled; the CSV's `processes`, `timed_steps` and "
            "`warmup_steps` say how many of each.")
    if old:
        text.append(
            "Rows without percentiles (%d of %d) come from the earlier "
            "protocol (by default 3 timed steps after 1 warm-up, one "
            "process per placement, three for the single-device one, one "
            "placement after the other) and show empty cells where it kept "
            "no figure." % (old, len(rows)))
    text.append(
        "Percentiles interpolate linearly between ranks; IQR is the "
        "75th less the 25th percentile, as a share of the median.")
    return " ".join(text)


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
        "cost source. The profile: 5 profiled steps of the single-device "
        "placement in each of %s processes (one before the placers ran, "
        "whose profile they placed with, and one in each round, among the "
        "timed processes), pooled%s; each op timed by its node's region "
        "also pays the runtime's time per node between kernels, measured "
        "on unprofiled steps of the same processes; no timed step enters "
        "the profile. The roofline, oneDNN and profile medians are "
        "compared with "
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
            if cluster.get("shared") else "", profile_processes(rows),
            shared_text(rows), command))
    lines.append("")
    lines.append(protocol_text(rows))
    lines.append("")
    lines += targets_table(rows)
    lines += case_table(rows)
    lines += source_table(rows)
    lines += noise_floor(rows)
    lines += group_table(rows)
    lines += tau_table(rows)
    lines += breakdown_table(rows)
    lines += memory_table(rows)
    return "\n".join(lines)


def targets_table(rows):
    label, _, got = HEADLINE
    lines = [
        "**Targets** (cost source \"%s\" against the %s timed step). A "
        "pair of placements of one model and step is distinguishable when "
        "their measured ranges, the 10th to the 90th percentile of the "
        "pooled timed steps, do not overlap; it is ordered as measured "
        "when the simulated step of the faster range is the smaller. "
        "\"Within 5 %%\": %s's median step at most 1.05 times the fastest "
        "placement's. Two workers against one: the fastest measured "
        "placement on two workers against `single`, speed-up = one "
        "worker's step / two workers' step, measured and simulated; a "
        "model counts when, for one of its steps, the measured speed-up is "
        "at least %.2f and the simulated one above 1 and within %.0f %% "
        "of it." % (label, AGAINST[got], PICK, 1 + FASTER_BY,
                    100 * PREDICTED_WITHIN), "",
        "| target | figure | status |",
        "| --- | --- | --- |"]
    for target, figure, met in targets(rows):
        lines.append("| %s | %s | %s |" % (target, figure,
                                           "met" if met else "not met"))
    return lines + [""]


def case_table(rows):
    head = "| model | step | placer | devices | measured ms: mean | median " \
        "(fastest-slowest) | 10th-90th | IQR |"
    rule = "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"
    for label, _, _ in COMPARISONS:
        head += " %s ms | err |" % label
        rule += " ---: | ---: |"
    lines = [head, rule]
    for r in rows:
        iqr = (float(r["p75_s"]) - float(r["p25_s"])) / float(
            r["measured_s"]) if has(r, "p25_s", "p75_s") else None
        cells = [r["model"], r["mode"], r["placer"], str(r["devices"]),
                 ms(r, "mean_s"),
                 "%s (%s-%s)" % (ms(r, "measured_s"), ms(r, "min_s"),
                                 ms(r, "max_s")),
                 "%s-%s" % (ms(r, "p10_s"), ms(r, "p90_s"))
                 if has(r, "p10_s", "p90_s") else "",
                 pct(iqr) if iqr is not None else ""]
        for _, sim, got in COMPARISONS:
            if not has(r, sim, got):
                cells += ["", ""]
                continue
            cells += [ms(r, sim), "%+.1f %%" % (100 * err(r[sim], r[got]))]
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def source_table(rows):
    groups = groups_of(rows)
    lines = [
        "| cost source | against | cases | median abs error | largest abs "
        "error | two-worker cases | their median abs error | their "
        "largest | distinguishable pairs ordered as measured | models "
        "whose order is kept (tau = 1) | models with a two-worker "
        "speed-up predicted |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
        "---: | ---: |"]
    for label, sim, got in COMPARISONS:
        errs = abs_errors(rows, sim, got)
        if not errs:
            continue
        two = abs_errors(rows, sim, got, min_devices=2)
        pairs, ordered = pair_agreement(rows, sim)
        kept = 0
        for g in groups.values():
            if not all(has(r, sim, got) for r in g):
                continue
            tau = kendall_tau([float(r[sim]) for r in g],
                              [float(r[got]) for r in g])
            kept += tau == 1.0
        lines.append("| %s | %s step | %d | %s | %s | %d | %s | %s | %s | "
                     "%d of %d | %d |" % (
                         label, AGAINST[got], len(errs),
                         pct(statistics.median(errs)), pct(max(errs)),
                         len(two), pct(statistics.median(two)) if two
                         else "", pct(max(two)) if two else "",
                         "%d of %d" % (ordered, pairs) if pairs else "",
                         kept, len(groups),
                         len(speedup_models(rows, sim, got))))
    return lines + [""]


def noise_floor(rows):
    spreads = [float(r["process_spread"]) for r in rows
               if int(r.get("processes") or 1) > 1 and
               has(r, "process_spread")]
    if not spreads:
        return []
    return [
        "**Noise floor.** A placement measured in several processes (%d "
        "of %d rows: every placement under the interleaved protocol, the "
        "single-device one before it) ran the same command in each; the "
        "medians of its processes differ by %.0f %% (median over those "
        "rows) and up to %.0f %% (the slowest process's median over the "
        "fastest's). A simulator error below that cannot be told apart "
        "from the machine's noise." % (
            len(spreads), len(rows), 100 * statistics.median(spreads),
            100 * max(spreads)), ""]


def group_table(rows):
    label, sim, got = HEADLINE
    lines = [
        "Per model and step (cost source \"%s\", %s step): the fastest "
        "measured placement and %s's step over its; the fastest "
        "two-worker placement against `single`, as speed-ups (one "
        "worker's step over two workers'), measured and simulated."
        % (label, AGAINST[got], PICK), "",
        "| model | step | fastest | its ms | %s / fastest | two workers "
        "| one worker ms | two workers ms | measured speed-up | simulated "
        "speed-up |" % PICK,
        "| --- | --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    for (model, mode), g in groups_of(rows).items():
        pick = pick_vs_fastest(g, got)
        up = two_worker_speedup(g, sim, got)
        one = [r for r in g if r["placer"] == BASELINE]
        cells = [model, mode]
        cells += [pick[0]["placer"], ms(pick[0], got),
                  "%.3f" % pick[1]] if pick else ["", "", ""]
        cells += [up["best"]["placer"], ms(one[0], got),
                  ms(up["best"], got), "%.2f" % up["measured"],
                  "%.2f" % up["simulated"]] if up else [""] * 5
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def tau_table(rows):
    lines = ["Kendall's tau between simulated and measured step times of "
             "each model's placements (1: same order):", "",
             "| model | step | " + " | ".join(c[0] for c in COMPARISONS) +
             " |",
             "| --- | --- |" + " ---: |" * len(COMPARISONS)]
    for (model, mode), g in groups_of(rows).items():
        taus = ["%.2f" % kendall_tau([float(r[sim]) for r in g],
                                     [float(r[got]) for r in g])
                if all(has(r, sim, got) for r in g) else ""
                for _, sim, got in COMPARISONS]
        lines.append("| %s | %s | " % (model, mode) + " | ".join(taus) +
                     " |")
    return lines + [""]


def breakdown_table(rows):
    fields = ["runtime_predicted_s"] + [f for f, _, _ in BREAKDOWN]
    shown = [r for r in rows if workers(r) >= 2 and
             any(has(r, f) for f in fields)]
    if not shown:
        return []
    lines = [
        "**Where the time goes.** The runtime's own account of a "
        "two-worker step, where its reports carry one: the simulated step "
        "that emit recorded in the placed model (the report's "
        "`predicted.step_s`), and each rank's breakdown of a step (each "
        "part the median over the timed steps; communication is posting "
        "sends and receives, waiting is blocked on messages), summed over "
        "the ranks, so that the parts of a two-rank step add up to about "
        "two steps; the median over the placement's processes.", "",
        "| model | step | placer | measured ms | predicted ms | " +
        " | ".join("%s ms" % h for _, _, h in BREAKDOWN) + " |",
        "| --- | --- | --- | ---: | ---: |" + " ---: |" * len(BREAKDOWN)]
    for r in shown:
        lines.append("| " + " | ".join(
            [r["model"], r["mode"], r["placer"], ms(r, "measured_s")] +
            [ms(r, f) for f in fields]) + " |")
    return lines + [""]


def memory_table(rows):
    lines = [
        "Peak memory, the largest over the placement's devices (measured: "
        "the median over its processes; the first process's under the "
        "earlier protocol): simulated (liveness of tensors, "
        "weights and optimizer state) against the runtime's measure on a "
        "CPU, the resident set's high-water mark over the timed steps "
        "above the rank's resident set before its weights were made "
        "(torch keeps no CPU allocator statistics; this figure includes "
        "what the allocator keeps of freed blocks). The runtime drops each "
        "tensor after its last reader (docs/runtime.md); runs before "
        "2026-11-27 kept the forward pass's tensors to the end of the step "
        "and measured up to twice the step's memory.", "",
        "| model | step | placer | simulated MiB | measured MiB | err |",
        "| --- | --- | --- | ---: | ---: | ---: |"]
    merrs = []
    for r in rows:
        if not has(r, "measured_peak_bytes", "profile_peak_bytes"):
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
    return lines


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------

def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"),
                    help="build tree whose bin/dp-opt places and "
                    "simulates (default: build/)")
    ap.add_argument("--models", default=",".join(MODELS),
                    help="comma-separated models (default: all six)")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="comma-separated steps: inference, train "
                    "(default: both)")
    ap.add_argument("--placers", default=",".join(PLACERS),
                    help="comma-separated placers, of %s (default: all)"
                    % ", ".join(PLACERS))
    ap.add_argument("--steps", type=int, default=30,
                    help="timed steps per placement, over all its rounds; "
                    "each process times max(%d, ceil(steps / rounds)) "
                    "(default: 30)" % MIN_STEPS_PER_PROCESS)
    ap.add_argument("--warmup", type=int, default=5,
                    help="untimed steps at the start of every process "
                    "(default: 5)")
    ap.add_argument("--rounds", "--repeats", dest="rounds", type=int,
                    default=3,
                    help="rounds per model and step; each round runs "
                    "every placement once, as its own process, in a "
                    "rotated order (default: 3)")
    ap.add_argument("--cluster", help="a host cluster file made before "
                    "(default: measure one now)")
    ap.add_argument("--no-docs", action="store_true",
                    help="write bench/results/validate.csv only, not "
                    "docs/results.md")
    ap.add_argument("--tables", action="store_true",
                    help="only regenerate the docs section from "
                    "bench/results/validate.csv")
    args = ap.parse_args(argv)
    for name, values, known in (("placer", args.placers, PLACERS),
                                ("mode", args.modes, MODES),
                                ("model", args.models, MODELS)):
        for v in values.split(","):
            if v not in known:
                ap.error("unknown %s '%s' (expected one of %s)"
                         % (name, v, ", ".join(known)))
    if args.steps < 1 or args.rounds < 1 or args.warmup < 0:
        ap.error("--steps and --rounds must be at least 1, --warmup at "
                 "least 0")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.tables:
        with open(args.cluster or os.path.join(
                RESULTS, "validate-host2.json")) as f:
            write_docs(read_rows(), json.load(f),
                       "bench/validate.py; tables by bench/validate.py "
                       "--tables")
        return
    dp_opt = find_dp_opt(args.build, "bench/validate.py")
    models = args.models.split(",")
    modes = args.modes.split(",")
    placers = args.placers.split(",")
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
            probe = run([PY, "-m", "dp_torch", "host-cluster", "--workers",
                         "2", "--out", cluster_path])
            # The probe's points and figures, for the record.
            for line in probe.stderr.splitlines():
                log(line)
        with open(cluster_path) as f:
            cluster = json.load(f)
        log("exporting %s" % ", ".join(models))
        run([PY, os.path.join(ROOT, "utils", "export-models.py"), "--size",
             "validation", "--out", os.path.join(work, "models"), "--only"]
            + models)
        rows = [r for r in read_rows()
                if not (r["model"] in models and r["mode"] in modes and
                        r["placer"] in placers)]
        for model in models:
            for mode in modes:
                case = Case(work, dp_opt, cluster_path, model, mode)
                new = validate_case(case, placers, args.steps, args.warmup,
                                    args.rounds)
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
