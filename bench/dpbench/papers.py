"""The papers side by side: the papers' tables (bench/papers.json) next to
dp's step times for the same pairs of placers, with a sentence per pair on
whether dp reproduces the paper's ordering (bench/results/papers.csv and
the section "bench papers")."""

import json
import os

from dpbench import BENCH, RESULTS
from dpbench.explain import explain, sign
from dpbench.models import LEARNED
from dpbench.results import budget_rank, cells, headline, write_csv
from dpbench.tables import fmt_rel, ms, replace_section, today


def describe(a, b, rel):
    if abs(rel) < 0.01:
        return "%s and %s within 1 %%" % (a, b)
    return "%s %.1f %% %s than %s" % (a, abs(rel) * 100,
                                      "faster" if rel < 0 else "slower", b)


def oom_verdict(pa, pb, da, db, na, nb):
    """verdict() where the paper or dp runs out of memory."""
    p_oom = (pa == "OOM", pb == "OOM")
    d_oom = (da[1], db[1])

    def says(oom):
        names = [n for n, o in zip((na, nb), oom) if o]
        if not names:
            return "both fit"
        return " and ".join(names) + " run%s out of memory" % (
            "" if len(names) > 1 else "s")
    same = p_oom == d_oom
    if same and not all(p_oom):
        return ("Paper: %s; dp: %s too: ordering reproduced." % (
            says(p_oom), says(d_oom)), "yes")
    if same:
        return "Both run out of memory in the paper and in dp.", "yes"
    detail = says(d_oom)
    if not any(d_oom):
        detail += " (%s ms vs %s ms)" % (ms(da[0]), ms(db[0]))
    return ("Paper: %s; dp: %s: not reproduced." % (says(p_oom), detail),
            "no")


def verdict(pa, pb, da, db, na, nb):
    """One sentence: does dp reproduce the paper's ordering of A and B?
    pa, pb: the paper's seconds or "OOM"; da, db: dp's (seconds, oom) or
    None. Differences within 1 % are ties, and a tie is an ordering of its
    own. Returns (sentence, "yes" | "no" | "n/a")."""
    if da is None or db is None:
        return "Not measured by dp in this run.", "n/a"
    if "OOM" in (pa, pb) or da[1] or db[1]:
        return oom_verdict(pa, pb, da, db, na, nb)
    prel = pa / pb - 1
    drel = da[0] / db[0] - 1
    psign, dsign = sign(prel), sign(drel)
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
    """A learned run's budget in placements scored: a Placeto move scores
    a complete placement, as its paper's Table 1 counts them."""
    return budget_rank(budget)


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


def table_cluster(t):
    """The cluster of a paper's table, by dp's name for it."""
    return os.path.splitext(os.path.basename(t["cluster"]))[0]


def dp_val(c):
    if not c or "error" in c:
        return None
    return (c["step"], c["oom"] > 0)


def dcell(d, c):
    if c and "error" in c:
        return "error"
    if not d:
        return ""
    return "OOM" if d[1] else ms(d[0])


def compare_pair(t, tid, model, ca, cb, allst, st, gpu_memory):
    """One pair of placers of a paper's table: its Markdown row, its
    papers.csv row and whether dp reproduces it; a pair not reproduced
    gets what dp measured about it (explain.py)."""
    cl = table_cluster(t)
    va, vb = t["columns"][ca], t["columns"][cb]
    pa, pb = t["rows"][model][ca], t["rows"][model][cb]
    ca_ = st.get((model, cl, va))
    cb_ = st.get((model, cl, vb))
    unmatched = False
    if va in LEARNED and vb in LEARNED and ca_ and cb_ and \
            budget_rank(ca_["budget"]) != budget_rank(cb_["budget"]):
        pair = matched_cells(allst, model, cl, va, vb)
        if pair:
            ca_, cb_ = pair
        else:
            unmatched = True
    da, db = dp_val(ca_), dp_val(cb_)
    sentence, ok = verdict(pa, pb, da, db, ca, cb)
    if unmatched:
        sentence = ("Not compared: dp ran `%s` (%s) and `%s` (%s) at "
                    "no common budget." % (va, ca_["budget"], vb,
                                           cb_["budget"]))
        ok = "n/a"
    notes = ["`%s` %s" % (v, c["budget"]) for v, c in ((va, ca_), (vb, cb_))
             if v in LEARNED and c and "error" not in c]
    if notes and ok != "n/a":
        sentence += " dp's learned placers are budget-limited (%s)." % (
            ", ".join(notes))
    why = ""
    if ok == "no":
        needed = {t["columns"][k]: n for k, n in
                  t.get("samples", {}).get(model, {}).items()}
        why = explain(allst, model, cl, ((va, ca_), (vb, cb_)), (pa, pb),
                      gpu_memory.get(cl), needed)
        if why:
            sentence += " " + why
    prel = "" if "OOM" in (pa, pb) else fmt_rel(pa / pb - 1)
    drel = ""
    if da and db and not da[1] and not db[1]:
        drel = fmt_rel(da[0] / db[0] - 1)
    short = t["paper"].split(" (")[0] + ", " + t["table"].split(":")[0]
    line = "| %s | %s | %s | %s vs %s | %s | %s | %s | %s | %s | %s | %s | " \
        "%s |" % (short, model, cl, ca, cb, pa, pb, prel, dcell(da, ca_),
                  dcell(db, cb_), drel, ok, sentence)
    row = {"table": tid, "model": model, "cluster": cl, "a": ca, "b": cb,
           "paper_a_s": pa, "paper_b_s": pb, "paper_rel": prel,
           "dp_a_s": da[0] if da else "", "dp_b_s": db[0] if db else "",
           "dp_rel": drel, "reproduced": ok, "measured": why}
    return line, row, ok


def samples_table(papers, st):
    """Placeto Table 1's samples to the best placement next to dp's."""
    lines = ["Samples to the best placement, Placeto Table 1 (placements "
             "evaluated during training) next to dp (samples until within "
             "1 % of the final best, and the budget):", "",
             "| model | cluster | placer | paper | dp to 1 % | dp budget |",
             "| --- | --- | --- | ---: | ---: | --- |"]
    for tid in ("placeto-t1-2gpu", "placeto-t1-4gpu"):
        t = papers["tables"][tid]
        cl = table_cluster(t)
        for model, s in t["samples"].items():
            for col, n in s.items():
                v = t["columns"][col]
                c = st.get((model, cl, v))
                lines.append("| %s | %s | %s | %d | %s | %s |" % (
                    model, cl, v, n,
                    "%d" % c["to1"] if c and c.get("to1") else "",
                    c["budget"] if c else "not run"))
    return lines


def preset_cells(allst, labels):
    """headline(), except that a learned placer's cell is the one at its
    budget label in `labels` (the preset's) wherever that ran."""
    st = headline(allst)
    for (m, cl, v), c in list(st.items()):
        own = allst.get((m, cl, v, labels.get(v)))
        if own and "step" in own:
            st[(m, cl, v)] = own
    return st


def doc_papers(rows, command, gpu_memory=None, labels=None):
    """The section "bench papers"; gpu_memory: cluster -> a GPU's GiB,
    for the pairs where the paper or dp runs out of memory; labels:
    variant -> the preset's budget label, whose cells the comparison
    takes where they ran."""
    with open(os.path.join(BENCH, "papers.json")) as f:
        papers = json.load(f)
    allst = cells(rows)
    st = preset_cells(allst, labels or {})
    out = []
    lines = [
        "## The papers side by side", "",
        "Relative step-time differences (A / B - 1; negative: A is faster) "
        "from the papers' tables, quoted in "
        "[bench/papers.json](../bench/papers.json) with their table "
        "numbers, next to dp's for the same pair of placers on the "
        "matching cluster (median over seeds; a learned placer at the "
        "budget of the preset that generated this table where it ran "
        "there, else at the largest budget it ran, and two learned "
        "placers at one budget, counting a Placeto move as one "
        "placement; generated by "
        "`%s` on %s from bench/results/quality.csv). The papers measured "
        "real TensorFlow "
        "steps on P100s (Mars, EAGLE) or K80s (Placeto); dp simulates its "
        "own models with roofline costs, and its learned placers ran with "
        "the CPU budgets of the quality table, so a learned placer's "
        "number is what it found within that budget. Within 1 %% counts "
        "as a tie, which is an ordering of its own (a paper's tie is "
        "reproduced only by a tie). The papers' Inception-V3 and NMT "
        "batch sizes differ between papers (Mars and EAGLE: batch 1; "
        "Placeto's text lost its numbers, and its 1.2 s steps imply a "
        "larger batch); dp's models/ are those of docs/models.md for "
        "every cluster." % (command, today()), "",
        "| paper, table | model | cluster | A vs B | paper A (s) | paper B "
        "(s) | paper | dp A (ms) | dp B (ms) | dp | reproduced | |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: "
        "| --- | --- |"]
    tally = {}
    for tid, model, ca, cb in papers["pairs"]:
        line, row, ok = compare_pair(papers["tables"][tid], tid, model, ca,
                                     cb, allst, st, gpu_memory or {})
        lines.append(line)
        out.append(row)
        tally[ok] = tally.get(ok, 0) + 1
    lines += ["", "Reproduced: " + ", ".join(
        "%s %d" % (k, v) for k, v in sorted(tally.items())) + " of %d "
        "pairs." % len(papers["pairs"]), ""]
    lines += samples_table(papers, st)
    write_csv(os.path.join(RESULTS, "papers.csv"), out, list(out[0].keys()))
    replace_section("bench papers", "\n".join(lines))
