#!/usr/bin/env -S /usr/bin/python3
"""Pipeline plans against op placements: the six models' training steps on
p100x4, simulated (issue "Pipelines in the compiler").

  bench/pipeline.py [--build build] [--models m1,m2] [--cluster p100x4]
      [--microbatches 8] [--anneal-seconds 30] [--no-docs] [--tables]

Each model is compared at one global batch: the bundled one (Inception-V3,
bundled at 1, at 8). The non-pipelined placements (single, expert, metis,
anneal, and pipeline's stage cut without micro-batches) place the whole
batch's step; the pipelined ones place one micro-batch's step (the model
imported at the global batch over M, `pipeline{microbatches=M}`) under
GPipe and 1F1B: `place{algo=pipeline}` (balance=time), DeepSpeed's
baselines (balance=layers, balance=parameters), and anneal seeded from
them. Costs are roofline (cost-annotate's default), the same for every
row; every figure is the simulator's. The anneal budget is fixed
beforehand (--anneal-seconds) for all rows alike.

Writes bench/results/pipeline.csv and the "bench pipeline" section of
docs/results.md: per model, the best non-pipelined step, each pipelined
placement's step, bubble and per-stage peak memory, the speed-up over the
best non-pipelined placement, and the seconds each placement took (the
place pass's). The LLaMA-shaped 7B at 8 x 512 tokens also runs its
pipelines with activation recomputation (pipeline{recompute=true}). A
one-stage 1F1B row on gpu:0 per model gives one micro-batch's work W, and
with it the most a chain of p stages could gain at M micro-batches: it
needs at least (M + p - 1) W / p.
--tables rebuilds the section from the CSV alone.
"""

import csv
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dpbench import RESULTS, ROOT, parse_bench_args  # noqa: E402
from dpbench.tables import replace_section, reorder_sections, today  # noqa: E402,E501

MODELS = ["inception_v3", "resnet50", "gnmt4", "nmt2", "nmt4", "bert_base"]
# Global batch, and the inputs whose batch axis is not 0 (the GNMT and NMT
# models are sequence-first).
BATCH = {"inception_v3": 8}
# The global batch each model is compared at (the bundled batches).
GLOBAL = {"inception_v3": 8, "resnet50": 32, "gnmt4": 256, "nmt2": 128,
          "nmt4": 128, "bert_base": 24}
SEQ_FIRST = {"gnmt4": ["src", "tgt"], "nmt2": ["src", "tgt"],
             "nmt4": ["src", "tgt"]}
FLAT = ["single", "expert", "metis", "pipeline", "anneal"]
# LLaMA-shaped decoders (utils/llama-model.py: f16, mixed-precision Adam)
# on the clusters they need: name, size, batch, sequence, cluster, M. The
# 7B at 8 x 512 tokens holds too many activations for any plan that keeps
# them: its pipelines also run with recomputation.
LLAMA = [("llama7b", "7b", 32, 128, "v100x8-nvlink", 32),
         ("llama7b-seq512", "7b", 8, 512, "v100x8-nvlink", 8),
         ("llama70b", "70b", 32, 256,
          os.path.join(ROOT, "bench", "clusters", "a100x8x4-ib.json"), 32),
         ("llama1b-1040layers", "1b", 32, 256,
          os.path.join(ROOT, "bench", "clusters", "a100x8x4-ib.json"), 32)]
RECOMPUTED = {"llama7b-seq512", "llama1b-1040layers"}
# A graph of over 100k training ops (a LLaMA-1B-shaped decoder of 1,040
# layers), for the pipeline placer's time on it: its flat placements are
# not run.
LAYERS = {"llama1b-1040layers": 1040}
LLAMA_FLAT = ["expert", "metis", "pipeline", "anneal"]
PIPELINED = [("pipeline", "balance=time"), ("pipeline", "balance=layers"),
             ("pipeline", "balance=parameters"), ("anneal", "")]
CSV = os.path.join(RESULTS, "pipeline.csv")
# A placement dp-opt refused (no placement fits: the error is logged).
FAILED = {"step_s": "", "oom": "failed", "bubble": "", "stages": "",
          "stage_peaks_bytes": "", "place_s": ""}
FIELDS = ["model", "cluster", "batch", "microbatches", "schedule", "placer", "options",
          "step_s", "bubble", "stages", "stage_peaks_bytes", "oom",
          "place_s", "recompute"]


def log(msg):
    print("[pipeline %s] %s" % (time.strftime("%H:%M:%S"), msg),
          file=sys.stderr, flush=True)


def run_case(dp_opt, cluster, model, m, schedule, placer, options, seconds,
             work, path=None, recompute=False):
    imp = "import-onnx"
    if model in BATCH:
        imp += "{batch=%d}" % BATCH[model]
    passes = [imp, "unroll-rnn", "training-graph", "cost-annotate"]
    if m:
        axes = "".join(",batch-axis=%s:1" % n for n in SEQ_FIRST.get(model, []))
        passes.append("pipeline{microbatches=%d,schedule=%s%s%s}" %
                      (m, schedule, axes,
                       ",recompute=true" if recompute else ""))
    opts = "algo=" + placer + ("," + options if options else "")
    if placer == "anneal":
        opts += ",seconds=%g" % seconds
    passes += ["place{%s}" % opts, "simulate"]
    summary = os.path.join(work, "summary.json")
    cmd = [dp_opt, "-passes=" + ",".join(passes), "-cluster=" + cluster,
           path or os.path.join(ROOT, "models", model + ".onnx"),
           "-disable-output",
           "-summary=" + summary, "-seed=1"]
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    if p.returncode:
        log("failed: %s\n%s" % (" ".join(cmd), p.stderr.strip()))
        return None
    with open(summary) as f:
        s = json.load(f)
    used = [d for d in s["devices"] if d["ops"]]
    busy = sum(d["busy_s"] for d in used)
    step = s["step_time_s"]
    return {"step_s": step, "oom": s["oom"],
            "bubble": 1 - busy / (len(used) * step) if step else 0,
            "stages": len(used),
            "stage_peaks_bytes": " ".join(str(d["peak_bytes"]) for d in used),
            "place_s": s["search_seconds"] if s["search_seconds"] is not None
            else wall}


def gib(b):
    return "%.1f" % (int(b) / 2**30)


def write_docs(rows, command):
    lines = ["Generated by `%s` (%s). Six models' training steps (Adam) on "
             "`p100x4`, then LLaMA-shaped decoders (utils/llama-model.py, "
             "f16 with mixed-precision Adam) on the clusters they need "
             "(their flat rows leave out single: no one GPU holds them; "
             "their anneal has twice the budget), roofline costs, every "
             "figure simulated; each model "
             "at one global batch, the pipelined rows as M micro-batches of "
             "it. *Best flat* is the fastest placement of the whole batch's "
             "step (single, expert, metis, anneal, pipeline's cut without "
             "micro-batches); *speed-up* is it over the row's step; "
             "*bubble* is the share of the used devices' step they sit idle; "
             "*peaks* are the used devices' simulated peak memory, GiB, in "
             "stage order; *s* the seconds the placement took."
             % (command, today()), ""]
    for model in MODELS + [x[0] for x in LLAMA]:
        mr = [r for r in rows if r["model"] == model]
        if not mr:
            continue
        flat = [r for r in mr if not r["microbatches"] and r["oom"] ==
                "False"]
        best = min(flat, key=lambda r: float(r["step_s"])) if flat else None
        if best:
            lines.append("**%s** on `%s`, batch %s: best flat %s (%.1f ms)."
                         % (model, best["cluster"], best["batch"],
                            best["placer"] + (" " + best["options"]
                                              if best["options"] else ""),
                            float(best["step_s"]) * 1e3))
        elif model in LAYERS:
            lines.append("**%s** on `%s`, batch %s: %d layers; flat "
                         "placements not run (the row is the pipeline "
                         "placer's time on a graph this size)." % (
                             model, mr[0]["cluster"], mr[0]["batch"],
                             LAYERS[model]))
        else:
            lines.append("**%s** on `%s`, batch %s: no flat placement "
                         "fits." % (model, mr[0]["cluster"], mr[0]["batch"]))
        failed = [r["placer"] + (" " + r["options"] if r["options"] else "")
                  + (" (M = %s, %s%s)" % (r["microbatches"], r["schedule"],
                                          ", recompute" if r.get("recompute")
                                          else "")
                     if r["microbatches"] else "")
                  for r in mr if r["oom"] == "failed"]
        if failed:
            lines[-1] += " No placement that fits: %s." % ", ".join(failed)
        mr = [r for r in mr if r["oom"] != "failed"]
        lines.append("")
        lines.append("| M | schedule | placer | step (ms) | speed-up | bubble "
                     "| stages | peaks (GiB) | s |")
        lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in mr:
            name = r["placer"] + (" " + r["options"] if r["options"] else "")
            step = float(r["step_s"])
            lines.append("| %s | %s | %s | %.1f%s | %s | %.0f %% | %s | %s "
                         "| %.2f |" % (
                             r["microbatches"] or "-",
                             (r["schedule"] or "-") +
                             (", recompute" if r.get("recompute") else ""),
                             name, step * 1e3,
                             " (OOM)" if r["oom"] == "True" else "",
                             "%.2fx" % (float(best["step_s"]) / step)
                             if best else "-",
                             float(r["bubble"]) * 100, r["stages"],
                             " ".join(gib(b) for b in
                                      r["stage_peaks_bytes"].split()),
                             float(r["place_s"])))
        lines.append("")
    # The figures the issue asks for, from the rows above.
    fast, slow, beats, large, chain = [], [], [], [], []
    for model in MODELS + [x[0] for x in LLAMA]:
        mr = [r for r in rows if r["model"] == model]
        flat = [float(r["step_s"]) for r in mr
                if not r["microbatches"] and r["oom"] == "False"]
        piped = [r for r in mr if r["microbatches"] and r["oom"] == "False"]
        if piped and not flat and model not in LAYERS:
            best = min(piped, key=lambda r: float(r["step_s"]))
            large.append("%s: no flat placement fits, the best pipeline "
                         "%.1f ms%s" % (model, float(best["step_s"]) * 1e3,
                                        " (recomputing)"
                                        if best.get("recompute") else ""))
            continue
        if not flat or not piped:
            continue
        # A chain of p stages, one device each, runs M micro-batches in at
        # least (M + p - 1) W / p, W one micro-batch's work (GPipe's
        # fill and drain; 1F1B's too): with W from the single row, the most
        # any chain pipeline could gain over the best flat step.
        one = [r for r in piped if r["placer"] == "single" and
               r["options"] == "device=gpu:0"]
        if one and model in MODELS:
            mb = int(one[0]["microbatches"])
            work = float(one[0]["step_s"]) / mb
            devices = 4
            bound = min(work * (mb + p - 1) / p for p in range(1, devices + 1))
            chain.append("%s %.2fx" % (model, min(flat) / bound))
        ratio = min(flat) / min(float(r["step_s"]) for r in piped)
        if model not in MODELS:
            large.append("%s %.2fx" % (model, ratio))
            continue
        (fast if ratio >= 2 else slow if ratio < 1 else [None]).append(
            "%s %.2fx" % (model, ratio))
        for sched in ("gpipe", "1f1b"):
            step = {r["options"]: float(r["step_s"]) for r in piped
                    if r["schedule"] == sched and r["placer"] == "pipeline"}
            if "balance=time" in step and len(step) == 3 and \
                    model in MODELS:
                base = min(step["balance=layers"], step["balance=parameters"])
                beats.append((model, sched, base / step["balance=time"] - 1))
    fast = [x for x in fast if x]
    lines.append("Best pipelined against best flat: at least 2x on %d of the "
                 "six models (%s); slower on %d (%s); the LLaMA-shaped "
                 "decoders: %s. The most a chain of stages (one device "
                 "each, at most the four GPUs) could gain at M = 8, best "
                 "flat over (M + p - 1) W / p with W the micro-batch "
                 "step's work on one GPU (the single row over M), transfers "
                 "free: %s. place{algo=pipeline} "
                 "against the better of the two DeepSpeed baselines, same "
                 "plan: %s." % (
                     len(fast), ", ".join(fast) or "none", len(slow),
                     ", ".join(slow) or "none", ", ".join(large) or "none",
                     ", ".join(chain) or "none",
                     ", ".join("%s %s %+.1f %%" % (m, s, 100 * g)
                               for m, s, g in beats)))
    replace_section("bench pipeline", "\n".join(lines))
    reorder_sections()


def main():
    def extra(ap):
        ap.add_argument("--cluster", default="p100x4")
        ap.add_argument("--microbatches", type=int, default=8)
        ap.add_argument("--anneal-seconds", type=float, default=30)
    parsed = parse_bench_args("bench/pipeline.py", __doc__, MODELS, CSV,
                              write_docs, extra)
    if parsed is None:
        return
    args, dp_opt = parsed
    rows, ran = [], set()
    with tempfile.TemporaryDirectory(prefix="dp-pipeline-") as work:
        llamas = [x[0] for x in LLAMA]
        for model in args.models.split(","):
            if model in llamas:
                continue
            if model not in MODELS:
                sys.exit("bench/pipeline.py: unknown model '%s'" % model)
            ran.add(model)
            cases = [(0, "", p, "") for p in FLAT]
            # Every micro-batch on one GPU (1F1B: one micro-batch's
            # activations at a time, as a one-stage pipeline holds them): M
            # times the micro-batch step's work, for the chain bound below.
            cases.append((args.microbatches, "1f1b", "single",
                          "device=gpu:0"))
            for sched in ("gpipe", "1f1b"):
                cases += [(args.microbatches, sched, p, o)
                          for p, o in PIPELINED]
            for m, sched, placer, opts in cases:
                r = run_case(dp_opt, args.cluster, model, m, sched, placer,
                             opts, args.anneal_seconds, work)
                if r is None:
                    r = FAILED.copy()
                r.update({"model": model, "cluster": args.cluster,
                          "batch": GLOBAL[model],
                          "microbatches": m or "", "schedule": sched,
                          "placer": placer, "options": opts})
                log("%s M=%s %s %s %s: %s" % (
                    model, m or "-", sched or "-", placer, opts,
                    "failed" if r["oom"] == "failed" else "%.1f ms%s" % (
                        r["step_s"] * 1e3, " OOM" if r["oom"] else "")))
                rows.append(r)
        for name, size, batch, seq, cluster, m in LLAMA:
            recompute = name in RECOMPUTED
            if args.models != ",".join(MODELS) and name not in \
                    args.models.split(","):
                continue
            ran.add(name)
            path = os.path.join(work, name + ".onnx")
            layers = ["--layers", str(LAYERS[name])] if name in LAYERS else []
            subprocess.run([sys.executable, os.path.join(
                ROOT, "utils", "llama-model.py"), "--size", size, "--batch",
                str(batch), "--seq", str(seq), "--out", path] + layers,
                check=True, capture_output=True)
            cases = [(0, "", p, "", False) for p in LLAMA_FLAT
                     if name not in LAYERS]
            for again in ([False, True] if recompute else [False]):
                cases += [(m, "1f1b", "pipeline", "balance=time", again),
                          (m, "1f1b", "pipeline", "balance=layers", again),
                          (m, "1f1b", "pipeline", "balance=parameters",
                           again)]
            for mb, sched, placer, opts, again in cases:
                r = run_case(dp_opt, cluster, name, mb, sched, placer, opts,
                             2 * args.anneal_seconds, work, path, again)
                if r is None:
                    r = FAILED.copy()
                r.update({"model": name, "cluster":
                          os.path.basename(cluster).replace(".json", ""),
                          "batch": "%d x %d tokens" % (batch, seq),
                          "microbatches": mb or "", "schedule": sched,
                          "placer": placer, "options": opts,
                          "recompute": "true" if again else ""})
                log("%s M=%s %s %s%s: %s" % (
                    name, mb or "-", placer, opts,
                    " recompute" if again else "",
                    "failed" if r["oom"] == "failed" else "%.1f ms (%.1f s)"
                    % (r["step_s"] * 1e3, r["place_s"])))
                rows.append(r)
    # The rows of the models not run this time stay.
    if os.path.exists(CSV):
        with open(CSV) as f:
            rows = [r for r in csv.DictReader(f)
                    if r["model"] not in ran] + rows
    os.makedirs(RESULTS, exist_ok=True)
    with open(CSV, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})
    if not args.no_docs:
        with open(CSV) as f:
            command = " ".join(["bench/pipeline.py"] + sys.argv[1:])
            if set(ran) != set(MODELS) | {x[0] for x in LLAMA}:
                command += ("`, which reran %s; the other rows are from "
                            "earlier runs of `bench/pipeline.py"
                            % ", ".join(sorted(ran)))
            write_docs(list(csv.DictReader(f)), command)


if __name__ == "__main__":
    main()
