"""The generalization part: Mars Table 3 (a policy trained on one model,
fine-tuned on another, against training from scratch) and Placeto 4.2 (one
policy trained over a family of NMT graphs, placing held-out ones
zero-shot), into bench/results/generalize-{mars,placeto}.csv and the
section "bench generalize"."""

import json
import os
import time

from dpbench import BENCH, RESULTS
from dpbench.models import MERGE, MODELS
from dpbench.results import num, read_csv, write_csv
from dpbench.runner import log, place, run
from dpbench.tables import fmt_rel, ms, replace_section, today

MARS_CSV = os.path.join(RESULTS, "generalize-mars.csv")
PLACETO_CSV = os.path.join(RESULTS, "generalize-placeto.csv")
# (unseen model, source model, kind): Mars Table 3's pairs with dp's
# models; VGG16 and a Transformer other than BERT are not in models/, so
# ResNet-50 stands for VGG16 (both CNNs) and BERT has no "similar" source.
MARS_T3 = [("inception_v3", "resnet50", "similar"),
           ("inception_v3", "gnmt4", "different"),
           ("gnmt4", "nmt2", "similar"),
           ("gnmt4", "inception_v3", "different"),
           ("bert_base", "resnet50", "different")]


def result(o):
    """A run's outcome as this part logs and records it."""
    if o.error:
        return {"error": o.error, "wall": o.wall}
    return {"step": o.summary["step_time_s"], "oom": o.summary["oom"],
            "wall": o.wall}


def mars_run(tools, prep, model, seed, opts, workdir):
    return result(place(tools, prep.get(model, "p100x4"), "p100x4", "mars",
                        opts, MERGE, seed, workdir))


def mars_row(unseen, source, kind, train, finetune, r):
    return {"unseen": unseen, "source": source, "kind": kind,
            "train_samples": train, "finetune": finetune,
            "step_s": r.get("step", ""), "oom": r.get("oom", ""),
            "wall_s": round(r["wall"], 2), "error": r.get("error", "")}


def gen_mars(tools, prep, cfg, workdir):
    seed = cfg["seeds"][0]
    T, F = cfg["gen_train"], cfg["gen_finetune"]
    pre = cfg["pretrain"]
    policies = {}
    rows = []
    for unseen, source, kind in MARS_T3:
        if unseen not in cfg["gen_models"]:
            continue
        if source not in policies:
            pol = os.path.join(workdir, "mars-%s.pt" % source)
            r = mars_run(tools, prep, source, seed,
                         "samples=%d,pretrain=%d,threads=1,save=%s" % (
                             T, pre, pol), workdir)
            policies[source] = pol
            log("mars trained on %s: %s" % (source, r))
        r = mars_run(tools, prep, unseen, seed, "load=%s,finetune=%d,"
                     "threads=1" % (policies[source], F), workdir)
        log("mars %s <- %s (%s): %s" % (unseen, source, kind, r))
        rows.append(mars_row(unseen, source, kind, T, F, r))
    for unseen in cfg["gen_models"]:
        r = mars_run(tools, prep, unseen, seed,
                     "samples=%d,pretrain=%d,threads=1" % (T + F, pre),
                     workdir)
        log("mars %s direct %d samples: %s" % (unseen, T + F, r))
        rows.append(mars_row(unseen, unseen, "direct", T + F, 0, r))
    return rows


def train_family(tools, prep, train, per, seed, policy, workdir):
    """Trains one Placeto policy over the training graphs in turn; False
    where a run fails."""
    for i, (name, path) in enumerate(train):
        opts = "samples=%d,threads=1,save=%s" % (per, policy)
        if i:
            opts += ",load=%s,finetune=%d" % (policy, per)
        o = place(tools, prep.get(name, "k80x2", path), "k80x2", "placeto",
                  opts, MERGE, seed, workdir)
        log("placeto family training on %s: %.1f s%s" % (
            name, o.wall, ", " + o.error if o.error else ""))
        if o.error:
            return False
    return True


def gen_placeto(tools, prep, cfg, workdir):
    """Placeto 4.2: train one policy over a family of 2-layer NMT graphs,
    place held-out members zero-shot, and compare with Placeto trained on
    each held-out graph alone (same budget as the whole training) and with
    the expert and METIS placements."""
    seed = cfg["seeds"][0]
    fam = os.path.join(workdir, "nmt-family")
    specs = ["%d:%d" % lb for lb in cfg["family"]]
    py = "/usr/bin/python3"
    r = run([py, os.path.join(BENCH, "nmt_family.py"), fam] + specs)
    if r.returncode:
        log("generalize: cannot write the NMT family (needs %s with "
            "python3-onnx): %s" % (py, r.stderr.strip()[-300:]))
        return []
    paths = r.stdout.split()
    graphs = [(os.path.splitext(os.path.basename(p))[0], p) for p in paths]
    ntest = max(1, len(paths) // 4)
    train, test = graphs[:-ntest], graphs[-ntest:]
    per = max(1, cfg["family_samples"] // len(train))
    policy = os.path.join(workdir, "placeto-family.pt")
    start = time.monotonic()
    if not train_family(tools, prep, train, per, seed, policy, workdir):
        return []
    train_wall = time.monotonic() - start
    rows = []
    for name, path in test:
        bc = prep.get(name, "k80x2", path)
        for scheme, variant, opts, coloc in (
                ("zero-shot", "placeto", "load=%s,threads=1" % policy,
                 MERGE),
                ("optimized", "placeto", "samples=%d,threads=1" %
                 cfg["family_samples"], MERGE),
                ("expert", "expert", "", "none"),
                ("metis", "metis", "", "none"),
                ("gpu-only", "gpu-only", "", "none")):
            v = result(place(tools, bc, "k80x2", variant, opts, coloc, seed,
                             workdir))
            log("placeto family %s %s: %s" % (name, scheme, v))
            rows.append({"graph": name, "scheme": scheme,
                         "step_s": v.get("step", ""),
                         "oom": v.get("oom", ""),
                         "wall_s": round(v["wall"], 2),
                         "error": v.get("error", ""),
                         "train_graphs": " ".join(n for n, _ in train),
                         "train_samples": per * len(train),
                         "train_wall_s": round(train_wall, 1)})
    return rows


def step_cell(r):
    step = num(r["step_s"])
    if not step:
        return "error: " + r["error"][:80]
    return ms(step) + (" OOM" if r["oom"] == "True" else "")


def mars_section(mrows, t3):
    direct = {r["unseen"]: r for r in mrows if r["kind"] == "direct"}
    lines = [
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
            step_cell(r),
            fmt_rel(step / dstep - 1) if step and dstep and
            r["kind"] != "direct" else "",
            p, fmt_rel(p / pd - 1) if p and pd and
            r["kind"] != "direct" else ""))
    return lines + [""]


def placeto_section(prows):
    lines = [
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
            r["graph"], r["scheme"], step_cell(r),
            fmt_rel(step / o - 1) if step and o else "", r["wall_s"]))
    return lines + [""]


def part_generalize(tools, prep, cfg, command, workdir):
    with open(os.path.join(BENCH, "papers.json")) as f:
        t3 = json.load(f)["tables"]["mars-t3"]
    mrows = gen_mars(tools, prep, cfg, workdir)
    prows = gen_placeto(tools, prep, cfg, workdir)
    if mrows:
        write_csv(MARS_CSV, mrows, list(mrows[0].keys()))
    if prows:
        write_csv(PLACETO_CSV, prows, list(prows[0].keys()))
    mrows = read_csv(MARS_CSV)
    prows = read_csv(PLACETO_CSV)
    lines = ["## Generalization", "",
             "Generated by `%s` on %s." % (command, today()), ""]
    if mrows:
        lines += mars_section(mrows, t3)
    if prows:
        lines += placeto_section(prows)
    replace_section("bench generalize", "\n".join(lines))
