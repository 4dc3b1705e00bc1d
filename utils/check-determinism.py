#!/usr/bin/env python3
"""Checks that dp-opt's outputs depend only on the input and the seed.

    utils/check-determinism.py [--what passes|placers|all] [--dp-opt PATH]
                               [--cluster C] [--evals N] [--colocate PASS]
                               MODEL

Runs pipelines over MODEL that cover every pass (emit too, when dp-opt has
it), every colocation strategy, and every placer that dp-opt -print-passes
lists (each with an evaluation budget, evals=N, never a time budget; the
learned ones with small models). Each pipeline runs twice with -seed=1 and
once with -seed=2; every file of the two seed-1 runs (the IR text of -S,
the JSON summary less its wall-clock search_seconds, the Chrome trace,
emit's files) must be the same byte for byte. A different seed may give a
different result; the script says which pipelines' results depend on it.

Prints one line per pipeline ("same: ...", "DIFFERS: ...", "FAILED: ...")
and then "deterministic: K of N pipelines".
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Placers that need an input of their own: not run here.
NEEDS_INPUT = {"given": "reads a placement file (file=)"}


# Small models for the learned placers, so that the check stays quick:
# option values used where a placer takes the option.
SMALL_OPTIONS = {"hidden": "16", "gcn-hidden": "16", "grouper-hidden": "16",
                 "pretrain": "2", "episodes": "2", "segment": "16"}


def run(args, pipeline, seed, out_dir):
    """Runs one pipeline in \p out_dir; returns (outputs, error text)."""
    os.makedirs(os.path.join(out_dir, "emit"))
    dp_opt = (os.path.abspath(args.dp_opt) if os.sep in args.dp_opt
              else shutil.which(args.dp_opt) or args.dp_opt)
    cmd = [dp_opt, "-passes=" + pipeline, "-cluster=" + args.cluster,
           "-seed=%d" % seed, "-quiet", "-S", "-o", "out.dp",
           "-summary=summary.json", "-trace=trace.json",
           os.path.abspath(args.model)]
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=args.timeout,
                          cwd=out_dir)
    if proc.returncode != 0:
        return None, proc.stderr.decode("utf-8", "replace").strip()
    outputs = {}
    for root, _, files in os.walk(out_dir):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                data = f.read()
            # Wall time, kept out of the IR for this reason.
            data = re.sub(rb'\n *"search_seconds": [^\n]*', b"", data)
            outputs[os.path.relpath(path, out_dir)] = data
    return outputs, ""


def check(args, pipeline, work):
    first, err = run(args, pipeline, 1, os.path.join(work, "a"))
    if first is None:
        return "FAILED: %s: %s" % (pipeline, err.splitlines()[-1]), False
    second, err = run(args, pipeline, 1, os.path.join(work, "b"))
    if second is None:
        return "FAILED: %s (second run): %s" % (pipeline, err), False
    differ = sorted(n for n in set(first) | set(second)
                    if first.get(n) != second.get(n))
    if differ:
        return ("DIFFERS: %s: same seed, different %s" %
                (pipeline, ", ".join(differ))), False
    other, _ = run(args, pipeline, 2, os.path.join(work, "c"))
    seeded = other is not None and other != first
    return ("same: %s%s" %
            (pipeline, " (seed 2 gives another result)" if seeded else "")), \
        True


def list_passes(dp_opt):
    """The registered passes, the colocation strategies and the placers
    with their options, as dp-opt -print-passes lists them."""
    text = subprocess.run([dp_opt, "-print-passes"], capture_output=True,
                          check=True).stdout.decode()
    passes, strategies, placers = [], [], {}
    # Each entry is "  name{options}" (a long option list goes on in lines
    # indented by 4), then its description indented by 6.
    heads = []
    for line in text.splitlines():
        if line.startswith("Placers") or re.match(r"  \S", line):
            heads.append(line.strip())
        elif re.match(r"    \S", line) and heads:
            heads[-1] += line.strip()
    in_placers = False
    for line in heads:
        if line.startswith("Placers"):
            in_placers = True
            continue
        m = re.match(r"([a-z0-9-]+)(\{\S*\})?$", line)
        if not m:
            continue
        name, params = m.group(1), m.group(2) or ""
        if in_placers:
            placers[name] = re.findall(r"([a-z-]+)=", params)
            continue
        passes.append((name, params))
        if name == "colocate":
            # "{strategy=tf|merge{groups=N,threshold=S}|metis{groups=N}|..."
            for v in re.findall(r"([a-z-]+)(\{[^{}]*\})?",
                                params[len("{strategy="):-1]):
                groups = "groups=" in v[1]
                strategies.append(v[0] + ("{groups=64}" if groups else ""))
    return dict(passes), strategies, placers


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("model")
    parser.add_argument("--dp-opt", default="dp-opt")
    parser.add_argument("--cluster", default="p100x4")
    parser.add_argument("--evals", type=int, default=50,
                        help="evaluation budget of searching placers")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--what", choices=["passes", "placers", "all"],
                        default="all",
                        help="the passes (every colocation strategy), the "
                        "placers, or both")
    parser.add_argument("--colocate", default="colocate",
                        help="the colocate pass before each placer")
    args = parser.parse_args()

    passes, strategies, placers = list_passes(args.dp_opt)
    front = "import-onnx,unroll-rnn,training-graph,cost-annotate"
    pipelines = []
    if args.what in ("passes", "all"):
        tail = ",verify,print-summary"
        if "emit" in passes:
            # Every format emit has ("format=onnx+split+...,out=...").
            m = re.search(r"format=([a-z+-]+)", passes["emit"])
            if m:
                tail += ",emit{format=%s,out=emit/}" % m.group(1)
        pipelines.append(front + ",colocate,place{algo=m-etf},simulate" + tail)
        for s in strategies:
            pipelines.append("%s,colocate{strategy=%s},place{algo=m-etf},"
                             "simulate" % (front, s))
    if args.what in ("placers", "all"):
        for p, params in placers.items():
            if p in NEEDS_INPUT:
                print("skipped: place{algo=%s}: %s" % (p, NEEDS_INPUT[p]))
                continue
            opts = "".join(",%s=%s" % (k, v) for k, v in SMALL_OPTIONS.items()
                           if k in params)
            pipelines.append("%s,%s,place{algo=%s,evals=%d%s},simulate" %
                             (front, args.colocate, p, args.evals, opts))

    good = 0
    with tempfile.TemporaryDirectory() as work:
        for i, pipeline in enumerate(pipelines):
            line, ok = check(args, pipeline, os.path.join(work, str(i)))
            print(line)
            sys.stdout.flush()
            good += ok
    print("deterministic: %d of %d pipelines" % (good, len(pipelines)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
