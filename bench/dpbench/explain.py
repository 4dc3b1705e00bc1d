"""What dp measured about a pair of placers whose ordering it does not
reproduce (bench/README.md, "Why a pair is not reproduced"): the memory a
placement the paper ran out of needs in dp, whether a learned placer had
settled or was still improving when its budget ran out, whether the
seeds of the two overlap, and how far each is from the best placement dp
knows on that model and cluster. Every figure is read from
bench/results/quality.csv and the search curves; the rules are fixed in
this file, not chosen per pair."""

import re

from dpbench.models import LEARNED, UPDATE_EVERY
from dpbench.results import budget_rank
from dpbench.tables import ms

# A learned placer "settled" when the median of its seeds came within 1 %
# of its final best in the first SETTLED of its budget, and was "still
# improving" when that came in the last 1 - IMPROVING.
SETTLED = 0.2
IMPROVING = 0.8


def gpu_memory_gib(print_cluster):
    """A GPU's memory in GiB from `dp-opt -print-cluster`'s text, or
    None."""
    for line in print_cluster.splitlines():
        if "(gpu)" in line:
            m = re.search(r"memory ([\d.]+) GiB", line)
            if m:
                return float(m.group(1))
    return None


def seed_steps(cell):
    """The step times of a cell's seeds that fit and ran."""
    return sorted(float(r["step_s"]) for r in cell["rows"]
                  if not r.get("error") and r.get("oom") in ("0", 0))


def best_known(allst, model, cluster):
    """(seconds, placer) of the fastest placement that fits of any placer
    and seed on (model, cluster), or None."""
    best = None
    for (m, cl, v, _), c in allst.items():
        if (m, cl) != (model, cluster) or "error" in c:
            continue
        for s in seed_steps(c):
            if best is None or s < best[0]:
                best = (s, v)
    return best


def search_state(name, cell, best):
    """A sentence on a learned placer's search: settled early or still
    improving at the end of its budget, with its distance to `best`."""
    budget = budget_rank(cell["budget"])
    to1 = cell.get("to1")
    if not budget or to1 is None:
        return None
    above = ""
    if best and cell.get("step") and cell["step"] > best[0] * 1.01:
        above = ", %.0f %% above the best placement dp knows here (%s ms, " \
            "`%s`)" % ((cell["step"] / best[0] - 1) * 100, ms(best[0]),
                       best[1])
    if to1 <= 1:
        return ("`%s` never improved on its first placement (median of "
                "seeds)%s" % (name, above))
    if to1 <= SETTLED * budget:
        return ("`%s` had settled: within 1 %% of its final best by sample "
                "%d of %d (median of seeds)%s" % (name, to1, budget, above))
    if to1 >= IMPROVING * budget:
        return ("`%s` was still improving: its last 1 %% came after sample "
                "%d of %d (median of seeds)%s" % (name, to1, budget, above))
    return ("`%s` came within 1 %% of its final best at sample %d of %d "
            "(median of seeds)%s" % (name, to1, budget, above))


def updates(name, cell, paper_samples):
    """A sentence on how many policy updates a learned placer's budget
    allowed, and on the placements the paper's run needed, or None."""
    budget = budget_rank(cell["budget"])
    units = [float(r["units"]) for r in cell["rows"] if r.get("units")]
    if name == "placeto" and units:
        # Eight episodes per update, each moving every unit once.
        per, how = 8 * max(units), "8 episodes of %d units" % max(units)
    elif name in UPDATE_EVERY:
        per, how = UPDATE_EVERY[name], "%d placements" % UPDATE_EVERY[name]
    else:
        return None
    n = int(budget // per)
    s = "`%s` made %d policy update%s in its %d placements (one per %s)" % (
        name, n, "" if n == 1 else "s", budget, how)
    if paper_samples:
        s += "; the paper's found its best after %d" % paper_samples
    return s


def sign(rel):
    """-1, 0 or 1: a relative difference within 1 % is a tie."""
    return 0 if abs(rel) < 0.01 else (1 if rel > 0 else -1)


def other_budgets(allst, model, cluster, pair, paper):
    """Sentences on runs of a pair's learned placer at larger budgets than
    the comparison's (the same options otherwise): its median there, and
    whether the paper's ordering then holds against the other placer."""
    (va, ca), (vb, cb) = pair
    out = []
    for v, c, other, mine_first in ((va, ca, cb, True), (vb, cb, ca, False)):
        if v not in LEARNED or not c or "error" in c or not other or \
                "error" in other or "step" not in other:
            continue
        rest = re.sub(r"samples=\d+", "", c["budget"])
        for (m, cl, w, b), d in sorted(
                allst.items(), key=lambda kv: budget_rank(kv[0][3])):
            if (m, cl, w) != (model, cluster, v) or "step" not in d or \
                    budget_rank(b) <= budget_rank(c["budget"]) or \
                    re.sub(r"samples=\d+", "", b) != rest:
                continue
            a, z = (d["step"], other["step"]) if mine_first else \
                (other["step"], d["step"])
            holds = "OOM" not in paper and \
                sign(paper[0] / paper[1] - 1) == sign(a / z - 1)
            out.append("at %d placements (`%s`, %d seed%s) `%s` gives %s "
                       "ms, and the paper's ordering %s" % (
                           budget_rank(b), b, d["ok"],
                           "" if d["ok"] == 1 else "s", v, ms(d["step"]),
                           "then holds" if holds else "still does not hold"))
    return out


def overlap(va, ca, vb, cb):
    """A sentence when the seeds of two cells overlap, else None."""
    sa, sb = seed_steps(ca), seed_steps(cb)
    if not sa or not sb or len(sa) + len(sb) < 3:
        return None
    if sa[0] > sb[-1] or sb[0] > sa[-1]:
        return None
    return ("their seeds overlap (`%s` %s-%s ms, `%s` %s-%s ms), so %d and "
            "%d seeds do not order them" % (va, ms(sa[0]), ms(sa[-1]), vb,
                                            ms(sb[0]), ms(sb[-1]), len(sa),
                                            len(sb)))


def memory(paper_oom, va, ca, vb, cb, gpu_gib):
    """Sentences on the placements the paper ran out of memory with and
    dp did not (or the other way round)."""
    out = []
    for v, c, oom in ((va, ca, paper_oom[0]), (vb, cb, paper_oom[1])):
        if not c or "error" in c or oom == (c.get("oom", 0) > 0):
            continue
        cap = " of a GPU's %.0f GiB" % gpu_gib if gpu_gib else ""
        out.append("`%s` %s in dp: its largest peak on a device is %.2f "
                   "GiB%s" % (v, "runs out" if c["oom"] else "fits",
                              c["peak"], cap))
    return out


def explain(allst, model, cluster, pair, paper, gpu_gib=None,
            paper_samples=None):
    """The measured facts behind a pair that dp does not reproduce.
    pair: ((variant, cell), (variant, cell)); paper: the paper's two
    values (seconds or "OOM"); paper_samples: variant -> the placements
    the paper's run needed to its best, where the paper says. Returns a
    sentence, or "" when dp has nothing measured to say."""
    (va, ca), (vb, cb) = pair
    facts = []
    paper_oom = (paper[0] == "OOM", paper[1] == "OOM")
    dp_oom = tuple(bool(c and c.get("oom")) for c in (ca, cb))
    if paper_oom != dp_oom:
        facts += memory(paper_oom, va, ca, vb, cb, gpu_gib)
    else:
        best = best_known(allst, model, cluster)
        for v, c in ((va, ca), (vb, cb)):
            if v in LEARNED and c and "error" not in c:
                for s in (search_state(v, c, best),
                          updates(v, c, (paper_samples or {}).get(v))):
                    if s:
                        facts.append(s)
        facts += other_budgets(allst, model, cluster, pair, paper)
        if ca and cb and "error" not in ca and "error" not in cb:
            s = overlap(va, ca, vb, cb)
            if s:
                facts.append(s)
    if not facts:
        return ""
    return "Measured: " + "; ".join(facts) + "."
