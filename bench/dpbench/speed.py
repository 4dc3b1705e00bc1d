"""The speed part: dp's own speed (import and simulator benchmarks, the
learned placers' samples/s and policy updates, cost annotation with a cold
and a warm oneDNN cache, dp-opt's peak memory) into
bench/results/speed.csv and the section "bench speed"."""

import os
import re
import statistics

from dpbench import RESULTS, ROOT
from dpbench.models import LEARNED, MERGE, UPDATE_EVERY, budget_label, \
    colocation
from dpbench.results import QUALITY_CSV, cells, curve_file, headline, \
    machine_line, read_csv, read_curve, seed1_curve, write_csv
from dpbench.runner import log, place, place_once, run, run_measured
from dpbench.tables import replace_section, today

FIELDS = ["section", "what", "value", "unit", "note"]


class Measures:
    """The rows of speed.csv, logged as they come."""

    def __init__(self):
        self.rows = []

    def add(self, section, what, value, unit, note=""):
        self.rows.append({"section": section, "what": what, "value": value,
                          "unit": unit, "note": note})
        log("%-10s %-45s %s %s %s" % (section, what, value, unit, note))


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


def import_speed(tools, cfg, m):
    r = run([tools.bench_import, "--nodes=%d" % cfg["bench_nodes"],
             "--benchmark_min_time=%g" % cfg["bench_min_time"],
             "--benchmark_repetitions=%d" % cfg["bench_reps"],
             "--benchmark_report_aggregates_only=true"])
    m1 = re.search(r"protobuf parse:\s+([\d.]+) nodes/s", r.stdout)
    m2 = re.search(r"import-onnx:\s+([\d.]+) nodes/s", r.stdout)
    m3 = re.search(r"ratio: ([\d.]+)x", r.stdout)
    note = "%d-node generated model" % cfg["bench_nodes"]
    if not (m1 and m2):
        m.add("import", "dp-bench-import", "failed", "", r.stderr[-200:])
        return
    m.add("import", "protobuf parse alone", "%.0f k" % (
        float(m1.group(1)) / 1e3), "nodes/s", note)
    m.add("import", "import-onnx (whole pass)", "%.0f k" % (
        float(m2.group(1)) / 1e3), "nodes/s", note)
    m.add("import", "import / parse time", m3.group(1) if m3 else "",
          "x", "target: 1 M nodes/s")


def simulator_speed(tools, cfg, m):
    r = run([tools.bench_sim,
             "--benchmark_min_time=%g" % cfg["bench_min_time"],
             "--benchmark_repetitions=%d" % cfg["bench_reps"],
             "--benchmark_report_aggregates_only=true"])
    g = re.search(r"graph: (\S+) training step, (\d+) ops", r.stdout)
    p = re.search(r"pipelined: \S+, (\d+) op instances", r.stdout)
    for x in re.finditer(r"(Simulate\w+)\s+([\d.]+) M simulated ops/s,"
                         r"\s+(\d+) placements/s, ([\d.]+)x", r.stdout):
        what = {"SimulateSingle": "single GPU",
                "SimulateStages": "4 contiguous stages",
                "SimulateRandom": "random over 5 devices",
                "SimulatePipeline": "4 stages, 8 micro-batches (1F1B)"}.get(
                    x.group(1), x.group(1))
        if x.group(1) == "SimulatePipeline":
            size = "%s op instances" % (p.group(1) if p else "?")
        else:
            size = "%s ops" % (g.group(2) if g else "?")
        m.add("simulator", what + ": simulated ops/s", "%s M" % x.group(2),
              "ops/s", "%s x the 10 M target; %s" % (x.group(4), size))
        m.add("simulator", what + ": placements/s", x.group(3), "1/s",
              "BERT-Base training step on p100x4")


def network_speed(tools, cfg, m):
    """dp-bench-learn: the seq2seq network at Mars's shapes, fused and as
    one operator per step, and its GFLOP/s against a matrix product's."""
    r = run([tools.bench_learn,
             "--benchmark_min_time=%g" % cfg["bench_min_time"],
             "--benchmark_repetitions=%d" % cfg["bench_reps"],
             "--benchmark_report_aggregates_only=true"])
    peak = re.search(r"1024\^3 matrix product: ([\d.]+) GFLOP/s", r.stdout)
    if not peak:
        m.add("network", "dp-bench-learn", "failed", "", r.stderr[-200:])
        return
    m.add("network", "1024^3 matrix product", peak.group(1), "GFLOP/s",
          "one thread: the core's limit")
    for x in re.finditer(r"(sample|update) attention=(\w+)\s+\(\s*(\d+) "
                         r"placements\): fused\s+([\d.]+) ms, operators\s+"
                         r"([\d.]+) ms, ([\d.]+)x; fused ([\d.]+) GFLOP/s, "
                         r"(\d+) %", r.stdout):
        what = "%s, attention=%s (%s placements)" % x.group(1, 2, 3)
        m.add("network", what + ": fused / operators", x.group(6), "x",
              "%s ms against %s ms, one run" % (x.group(4), x.group(5)))
        m.add("network", what + ": fused GFLOP/s", x.group(7), "GFLOP/s",
              "%s %% of the matrix product's" % x.group(8))


def learned_speed(tools, prep, cfg, workdir, st, m):
    """Samples/s and update time from the curves of the quality runs
    (p100x4, seed 1), or short runs of their own."""
    for model in ("gnmt4", "bert_base"):
        for v in LEARNED:
            c = seed1_curve(st, model, "p100x4", v)
            src = "quality run"
            if not c and v in cfg["placers"]:
                speed_cfg = dict(cfg, samples=cfg["speed_samples"])
                path = curve_file(model, "p100x4", v,
                                  budget_label(v, speed_cfg), 1)
                place_once(tools, prep, model, "p100x4", v, 1, speed_cfg,
                           workdir, path)
                c = read_curve(path)
                src = "speed run"
            if not c:
                continue
            rate, upd = curve_speed(c, UPDATE_EVERY.get(v))
            note = "%s, %d samples, %s, threads=1" % (
                src, c[-1][0], colocation(v, model))
            if c[-1][0] <= UPDATE_EVERY.get(v, 0):
                note += " (no policy update within the budget)"
            m.add("learned", "%s on %s: samples/s" % (v, model),
                  "%.2f" % rate if rate else "", "1/s", note)
            if upd is not None:
                m.add("learned", "%s on %s: s per policy update" % (
                    v, model), "%.2f" % upd, "s",
                    "every %d samples (%s; with the next batch's "
                    "sampling)" % (UPDATE_EVERY[v], "PPO" if v.startswith(
                        ("mars", "eagle")) else "REINFORCE"))


def cost_speed(tools, workdir, m):
    """oneDNN cost annotation with a cold, then a warm cache."""
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
        times.append(pass_s)
        m.add("cost", "oneDNN cost-annotate, %s cache" % label,
              "%.3f" % (pass_s if pass_s is not None else wall), "s",
              "Inception-V3 training step (982 ops), cluster host; dp-opt "
              "wall %.2f s%s" % (wall, "" if rc == 0 else ", exit %d" % rc))
    if times[0] and times[1]:
        m.add("cost", "oneDNN cold / warm", "%.0f" % (times[0] / times[1]),
              "x", "")


def memory_speed(tools, prep, cfg, workdir, st, m):
    """Peak memory of dp-opt placing BERT-Base with Mars: the quality
    run's (p100x4, seed 1) when there is one, else a run of its own."""
    what = "peak RSS, dp-opt placing BERT-Base with Mars"
    q = [r for r in headline(st).get(("bert_base", "p100x4", "mars"),
                                     {}).get("rows", [])
         if r["seed"] == "1" and not r.get("error")]
    if q:
        m.add("memory", what, "%.0f" % float(q[0]["peak_rss_mib"]), "MiB",
              "quality run: %s, %s, %s samples, wall %s s" % (
                  q[0]["budget"], q[0]["colocation"], q[0]["samples"],
                  q[0]["wall_s"]))
        return
    opts = "samples=%d,pretrain=%d,threads=1" % (cfg["speed_samples"],
                                                cfg["pretrain"])
    o = place(tools, prep.get("bert_base", "p100x4"), "p100x4", "mars", opts,
              MERGE, 1, workdir)
    m.add("memory", what, "%.0f" % (o.rss_kib / 1024), "MiB",
          "%s, %s, wall %.1f s%s" % (
              opts.replace(",threads=1", ""), MERGE, o.wall,
              ", " + o.error if o.error else ""))


def part_speed(tools, prep, cfg, command, workdir):
    m = Measures()
    if os.path.exists(tools.bench_import):
        import_speed(tools, cfg, m)
    if os.path.exists(tools.bench_sim):
        simulator_speed(tools, cfg, m)
    if os.path.exists(tools.bench_learn):
        network_speed(tools, cfg, m)
    st = cells(read_csv(QUALITY_CSV))
    learned_speed(tools, prep, cfg, workdir, st, m)
    cost_speed(tools, workdir, m)
    memory_speed(tools, prep, cfg, workdir, st, m)
    write_csv(os.path.join(RESULTS, "speed.csv"), m.rows, FIELDS)
    doc_speed(m.rows, command)


def doc_speed(rows, command):
    lines = ["## dp's own speed", "",
             "Generated by `%s` on %s (%s); each ratio's two sides were "
             "measured in one run. Raw: "
             "[bench/results/speed.csv](../bench/results/speed.csv)." % (
                 command, today(), machine_line()),
             "", "| part | measure | value | unit | note |",
             "| --- | --- | ---: | --- | --- |"]
    for r in rows:
        lines.append("| %s | %s | %s | %s | %s |" % (
            r["section"], r["what"], r["value"], r["unit"],
            r["note"].replace("|", "/")))
    replace_section("bench speed", "\n".join(lines))
