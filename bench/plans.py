#!/usr/bin/env -S /usr/bin/python3
"""Plans: how a model should use a cluster, the plan pass's choice against
each pure strategy (issue "Data parallelism and hybrid plans").

  bench/plans.py [--build build] [--models m1,m2] [--plan-seconds 60]
      [--anneal-seconds 30] [--no-docs] [--tables]

On v100x8-nvlink, each model's training step (Adam, roofline costs, every
figure the simulator's) at one global batch: 64 for the models whose batch
is their inputs' first axis (torchvision's resnet18, resnet50,
inception_v3, bert_base, a LLaMA-1B-shaped decoder of utils/llama-model.py
at 512 tokens), and the bundled batch for the sequence-first GNMT and NMT
models (256, 128, 128). The rule was fixed before any run. Rows:

- one GPU: place{algo=single,device=gpu:0}, the whole batch on gpu:0;
- data parallel: pipeline{replicas=8} with place{algo=single} (each
  replica one GPU; micro-batches doubled while a replica does not fit);
- pipeline: pipeline{microbatches=M,schedule=1f1b} with
  place{algo=pipeline}, best over M = 2, 4, ..., 32 (recomputing where
  no cut fits without);
- op placement: the best of single, expert, metis and anneal
  (--anneal-seconds) on the whole batch;
- plan: the plan pass (--plan-seconds), its chosen plan and search time.

Then LLaMA-70B-shaped training (32 x 256 tokens, f16 with mixed-precision
Adam) on bench/clusters/a100x8x4-ib.json, 4 nodes of 8 A100-80GB: the plan
pass's plan, its throughput and its search time.

Writes bench/results/plans.csv and the "bench plans" section of
docs/results.md. --tables rebuilds the section from the CSV alone.
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

CLUSTER = "v100x8-nvlink"
A100 = os.path.join(ROOT, "bench", "clusters", "a100x8x4-ib.json")
MODELS = ["resnet18", "inception_v3", "resnet50", "gnmt4", "nmt2", "nmt4",
          "bert_base", "llama1b"]
BATCH = {"resnet18": 64, "inception_v3": 64, "resnet50": 64,
         "bert_base": 64, "llama1b": 64,
         "gnmt4": 256, "nmt2": 128, "nmt4": 128}
# Inputs given batch= at import (the others keep their bundled batch).
SET_BATCH = {"resnet18", "inception_v3", "resnet50", "bert_base"}
SEQ_FIRST = {"gnmt4": ["src", "tgt"], "nmt2": ["src", "tgt"],
             "nmt4": ["src", "tgt"]}
FLAT = ["single", "expert", "metis", "anneal"]
MICROBATCHES = [2, 4, 8, 16, 32]
CSV = os.path.join(RESULTS, "plans.csv")
FIELDS = ["model", "cluster", "batch", "strategy", "config", "step_s",
          "samples_per_s", "fits", "seconds"]


def log(msg):
    print("[plans %s] %s" % (time.strftime("%H:%M:%S"), msg),
          file=sys.stderr, flush=True)


def model_path(model, work):
    """The model's ONNX file: bundled, or made in \\p work."""
    bundled = os.path.join(ROOT, "models", model + ".onnx")
    if os.path.exists(bundled):
        return bundled
    path = os.path.join(work, model + ".onnx")
    if os.path.exists(path):
        return path
    if model == "resnet18":
        # torchvision's own model, exported by torch (weights random: only
        # shapes matter to costs).
        code = ("import torch, torchvision; m = torchvision.models.resnet18()"
                ".eval(); torch.onnx.export(m, torch.randn(1, 3, 224, 224), "
                "%r, input_names=['input'], output_names=['output'], "
                "dynamic_axes={'input': {0: 'batch'}}, opset_version=13)"
                % path)
        subprocess.run([sys.executable, "-c", code], check=True,
                       capture_output=True)
    elif model == "llama1b":
        subprocess.run([sys.executable, os.path.join(
            ROOT, "utils", "llama-model.py"), "--size", "1b", "--batch",
            str(BATCH[model]), "--seq", "512", "--out", path], check=True,
            capture_output=True)
    elif model == "llama70b":
        subprocess.run([sys.executable, os.path.join(
            ROOT, "utils", "llama-model.py"), "--size", "70b", "--batch",
            "32", "--seq", "256", "--out", path], check=True,
            capture_output=True)
    return path


def prefix(model):
    """The passes before the plan: the import names the batch (or, for
    the sequence-first models, its axis, which the plan pass divides)."""
    opts = ["batch=%d" % BATCH[model]] if model in SET_BATCH else []
    opts += ["batch-axis=%s:1" % n for n in SEQ_FIRST.get(model, [])]
    imp = "import-onnx" + ("{%s}" % ",".join(opts) if opts else "")
    return [imp, "unroll-rnn", "training-graph", "cost-annotate"]


def axes(model):
    return "".join(",batch-axis=%s:1" % n for n in SEQ_FIRST.get(model, []))


def run(dp_opt, cluster, path, passes, work):
    """dp-opt's summary of one pipeline, or None (the error is logged)."""
    summary = os.path.join(work, "summary.json")
    if os.path.exists(summary):
        os.remove(summary)
    cmd = [dp_opt, "-passes=" + ",".join(passes), "-cluster=" + cluster,
           path, "-disable-output", "-summary=" + summary, "-seed=1"]
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    if p.returncode:
        log("failed: %s\n%s" % (" ".join(cmd), p.stderr.strip()[-2000:]))
        return None
    with open(summary) as f:
        s = json.load(f)
    s["wall_s"] = wall
    return s


def row(model, cluster, strategy, config, s):
    batch = BATCH.get(model, 32)
    fits = s is not None and not s["oom"]
    step = s["step_time_s"] if fits else None
    return {"model": model, "cluster": cluster, "batch": batch,
            "strategy": strategy, "config": config,
            "step_s": step if step else "",
            "samples_per_s": batch / step if step else "",
            "fits": fits,
            "seconds": "%.1f" % (s["search_seconds"]
                                 if s and s.get("search_seconds") is not None
                                 else (s["wall_s"] if s else 0))}


def best(rows):
    ok = [r for r in rows if r["fits"] in (True, "True") and r["step_s"] != ""]
    return min(ok, key=lambda r: float(r["step_s"])) if ok else None


def bench_model(dp_opt, model, args, work):
    path = model_path(model, work)
    pre = prefix(model)
    out = []

    def add(strategy, config, passes, cluster=CLUSTER):
        s = run(dp_opt, cluster, path, pre + passes, work)
        r = row(model, cluster, strategy, config, s)
        log("%s %s %s: %s" % (model, strategy, config,
                              "%.1f ms" % (r["step_s"] * 1e3)
                              if r["step_s"] != "" else "does not fit"))
        out.append(r)
        return s

    add("one GPU", "gpu:0", ["place{algo=single,device=gpu:0}", "simulate"])
    # Data parallel: eight one-GPU replicas, accumulating over micro-batches
    # only while a replica does not fit.
    for m in [1, 2, 4, 8, 16, 32]:
        if BATCH[model] % (8 * m):
            break
        s = add("data parallel", "R=8 M=%d" % m,
                ["pipeline{replicas=8,microbatches=%d%s}" % (m, axes(model)),
                 "place{algo=single}", "simulate"])
        if s is not None and not s["oom"]:
            break
    for m in MICROBATCHES:
        if BATCH[model] % m:
            continue
        s = add("pipeline", "M=%d" % m,
                ["pipeline{microbatches=%d,schedule=1f1b%s}" % (m, axes(model)),
                 "place{algo=pipeline}", "simulate"])
        if s is None or s["oom"]:
            add("pipeline", "M=%d recompute" % m,
                ["pipeline{microbatches=%d,schedule=1f1b,recompute=true%s}"
                 % (m, axes(model)), "place{algo=pipeline}", "simulate"])
    for placer in FLAT:
        opts = ",seconds=%g" % args.anneal_seconds if placer == "anneal" else ""
        add("op placement", placer,
            ["place{algo=%s%s}" % (placer, opts), "simulate"])
    s = add("plan", "", ["plan{seconds=%g}" % args.plan_seconds, "simulate"])
    if s is not None and "plan_search" in s:
        chosen = s["plan_search"]["plans"][0]
        out[-1]["config"] = describe(chosen)
        out[-1]["seconds"] = "%.1f" % s["plan_search"]["seconds"]
    return out


def describe(p):
    text = "%s: R=%d x %d stage%s, M=%d" % (
        p["kind"], p["replicas"], p["stages"], "" if p["stages"] == 1 else "s",
        p["microbatches"])
    if p["replicas"] > 1 and p["replica_stride"]:
        text += " stride %d" % p["replica_stride"]
    if p["recompute"]:
        text += " recompute"
    return text


def bench_70b(dp_opt, args, work):
    path = model_path("llama70b", work)
    passes = ["import-onnx", "training-graph", "cost-annotate",
              "plan{seconds=%g}" % args.big_plan_seconds, "simulate"]
    s = run(dp_opt, A100, path, passes, work)
    r = {"model": "llama70b", "cluster": "a100x8x4-ib", "batch": 32,
         "strategy": "plan", "config": "", "step_s": "", "samples_per_s": "",
         "fits": False, "seconds": ""}
    if s is not None:
        r["fits"] = not s["oom"]
        r["step_s"] = s["step_time_s"]
        r["samples_per_s"] = 32 / s["step_time_s"]
        r["config"] = describe(s["plan_search"]["plans"][0])
        r["seconds"] = "%.1f" % s["plan_search"]["seconds"]
        r["wall"] = s["wall_s"]
        peaks = [d["peak_bytes"] for d in s["devices"] if d["ops"]]
        log("llama70b plan: %s, %.1f ms, search %.1f s (wall %.1f s), "
            "peak %.1f GiB" % (r["config"], r["step_s"] * 1e3,
                               s["plan_search"]["seconds"], s["wall_s"],
                               max(peaks) / 2**30))
        others = []
        for p in s["plan_search"]["plans"][1:]:
            others.append({"model": "llama70b", "cluster": "a100x8x4-ib",
                           "batch": 32, "strategy": "plan alternative",
                           "config": describe(p) + (
                               "" if p["fits"] else " (%s)" % p["note"]),
                           "step_s": p["step_time_s"] or "",
                           "samples_per_s": p.get("samples_per_s", ""),
                           "fits": p["fits"], "seconds": ""})
        return [r] + others
    return [r]


def ms(v):
    return "%.1f" % (float(v) * 1e3) if v not in ("", None) else "—"


def write_docs(rows, command):
    lines = [
        "## Plans: how a model should use a cluster", "",
        "Generated by `%s` (%s). Training steps (Adam) on `v100x8-nvlink`, "
        "roofline costs, every figure simulated. Batch 64 for models whose "
        "batch is their inputs' first axis, the bundled batch for the "
        "sequence-first GNMT and NMT models (a rule fixed before the runs). "
        "*Plan* is the plan pass's choice (`plan`, docs/plans.md); the "
        "other columns are each pure strategy run on its own: *one GPU* "
        "(`place{algo=single,device=gpu:0}`; does not fit: no V100 holds "
        "the step), *data parallel* (8 one-GPU replicas, "
        "`pipeline{replicas=8}`), *pipeline* (the best over M of "
        "`pipeline{microbatches=M}` with `place{algo=pipeline}`), *op "
        "placement* (the best of single, expert, metis and anneal on the "
        "whole batch). Steps in ms; x: samples/s over one GPU's." % (
            command, today()), "",
        "| model | batch | plan (search s) | plan ms | samples/s | data "
        "parallel ms (x) | pipeline ms (x) | op placement ms (x) | one GPU "
        "ms |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for model in MODELS:
        mr = [r for r in rows if r["model"] == model]
        if not mr:
            continue
        one = best([r for r in mr if r["strategy"] == "one GPU"])
        cells = []
        for strategy in ("data parallel", "pipeline", "op placement"):
            b = best([r for r in mr if r["strategy"] == strategy])
            if not b:
                cells.append("does not fit")
                continue
            x = (" (%.2fx)" % (float(one["step_s"]) / float(b["step_s"]))
                 if one else "")
            cells.append("%s%s %s" % (ms(b["step_s"]), x, b["config"]))
        plan = [r for r in mr if r["strategy"] == "plan"]
        p = plan[0] if plan else None
        lines.append("| %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s |" % (
            model, mr[0]["batch"], p["config"] if p else "—",
            p["seconds"] if p else "—", ms(p["step_s"]) if p else "—",
            "%.0f" % float(p["samples_per_s"]) if p and p["samples_per_s"]
            else "—", cells[0], cells[1], cells[2],
            ms(one["step_s"]) if one else "does not fit"))
    big = [r for r in rows if r["model"] == "llama70b"]
    if big:
        lines += ["", "LLaMA-70B-shaped training, 32 x 256 tokens (f16, "
                  "mixed-precision Adam), on `bench/clusters/"
                  "a100x8x4-ib.json` (4 nodes of 8 A100-80GB, InfiniBand "
                  "between nodes), the plan pass with its budget:", "",
                  "| plan | step ms | samples/s | search s |",
                  "| --- | --- | --- | --- |"]
        for r in big:
            lines.append("| %s%s | %s | %s | %s |" % (
                "" if r["strategy"] == "plan" else "alternative: ",
                r["config"], ms(r["step_s"]),
                "%.2f" % float(r["samples_per_s"]) if r["samples_per_s"]
                else "—", r["seconds"] or "—"))
    replace_section("bench plans", "\n".join(lines))
    reorder_sections()


def main():
    def extra(ap):
        ap.add_argument("--plan-seconds", type=float, default=60)
        ap.add_argument("--big-plan-seconds", type=float, default=100)
        ap.add_argument("--anneal-seconds", type=float, default=30)
    parsed = parse_bench_args("bench/plans.py", __doc__, MODELS + ["llama70b"],
                              CSV, write_docs, extra)
    if parsed is None:
        return
    args, dp_opt = parsed
    rows = []
    with tempfile.TemporaryDirectory(prefix="dp-plans-") as work:
        for model in args.models.split(","):
            if model == "llama70b":
                rows += bench_70b(dp_opt, args, work)
                continue
            if model not in MODELS:
                sys.exit("bench/plans.py: unknown model '%s'" % model)
            rows += bench_model(dp_opt, model, args, work)
    # Keep the other models' rows of an earlier run.
    ran = {r["model"] for r in rows}
    if os.path.exists(CSV):
        with open(CSV) as f:
            rows = [r for r in csv.DictReader(f) if r["model"] not in ran] + \
                rows
    with open(CSV, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    # The checks the issue asks for, printed side by side.
    for model in MODELS:
        mr = [r for r in rows if r["model"] == model]
        plan = [r for r in mr if r["strategy"] == "plan" and r["step_s"]]
        if not plan:
            continue
        p = float(plan[0]["step_s"])
        for strategy in ("data parallel", "pipeline", "op placement"):
            b = best([r for r in mr if r["strategy"] == strategy])
            if b:
                print("%-12s plan %.1f ms vs best %s %.1f ms: %s" % (
                    model, p * 1e3, strategy, float(b["step_s"]) * 1e3,
                    "ok" if p <= float(b["step_s"]) * (1 + 1e-9)
                    else "SLOWER"))
    if not args.no_docs:
        command = "bench/plans.py " + " ".join(sys.argv[1:])
        if ran != set(MODELS + ["llama70b"]):
            command += "`, which reran %s; the other rows are from earlier " \
                "runs of `bench/plans.py" % ", ".join(sorted(ran))
        write_docs(rows, command.strip())


if __name__ == "__main__":
    main()
