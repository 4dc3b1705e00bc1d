"""The CSVs of bench/results/: reading, merging and writing them, the
search curves of learned placers, and the per-cell statistics over seeds
that the tables quote."""

import csv
import datetime
import math
import os
import platform
import re
import statistics

from dpbench import CURVES, RESULTS, ROOT

QUALITY_CSV = os.path.join(RESULTS, "quality.csv")
QUALITY_FIELDS = ["model", "cluster", "placer", "colocation", "budget",
                  "seed", "step_s", "lower_bound_s", "oom", "max_peak_gib",
                  "search_s", "wall_s", "samples", "samples_to_1pct",
                  "curve_seconds", "units", "peak_rss_mib", "error",
                  "curve"]
RUNS_CSV = os.path.join(RESULTS, "runs.csv")
RUNS_FIELDS = ["date", "command", "parts", "wall_s", "machine"]


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f))


def write_csv(path, rows, fields):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)


def merge_rows(old, new, key):
    """Rows of `old` whose key no new row has, then `new`: rerunning a
    subset replaces its own rows and keeps the others."""
    keys = {key(r) for r in new}
    return [r for r in old if key(r) not in keys] + new


def quality_key(r):
    # The budget is part of the key: a run at another budget (the quick
    # set's, say) adds rows of its own instead of replacing these.
    return (r["model"], r["cluster"], r["placer"], r.get("budget", ""),
            str(r["seed"]))


def num(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def machine_line():
    try:
        load = "%.1f" % os.getloadavg()[0]
    except OSError:
        load = "?"
    return "%s, %d cores, load average %s at the end" % (
        platform.machine(), os.cpu_count() or 0, load)


def record_run(command, parts, wall):
    """Appends an invocation of bench/run.py to runs.csv."""
    runs = read_csv(RUNS_CSV)
    runs.append({"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
                 "command": command, "parts": " ".join(parts),
                 "wall_s": "%.0f" % wall, "machine": machine_line()})
    write_csv(RUNS_CSV, runs, RUNS_FIELDS)


# ---------------------------------------------------------------------------
# Search curves
# ---------------------------------------------------------------------------

def read_curve(path):
    """[(samples, seconds, best, sample)] of a -curve CSV; a step time is
    inf where the CSV leaves it empty (no placement that fits yet)."""
    rows = []
    if not path or not os.path.exists(path):
        return rows

    def f(x):
        return float(x) if x not in (None, "") else math.inf
    with open(path) as fh:
        for r in csv.DictReader(fh):
            rows.append((int(r["samples"]), float(r["seconds"]),
                         f(r["best_seconds"]), f(r["sample_seconds"])))
    return rows


def curve_flops(path):
    """(floating-point operations, training's part of them) of a -curve
    CSV's last line (a search run with count-flops=1), or None."""
    last = None
    if path and os.path.exists(path):
        with open(path) as fh:
            for r in csv.DictReader(fh):
                last = r
    if not last or not last.get("flops") or not last.get("training_flops"):
        return None
    return float(last["flops"]), float(last["training_flops"])


def thin_curve(src, dst, keep=1000):
    """Copies a -curve CSV, keeping of a long one (Placeto's, a row per
    move) the first and last rows, every row where the best changes, and
    about `keep` rows evenly spaced, so that the stored curve still plots
    and times the same."""
    with open(src) as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    if len(body) > 2 * keep:
        step = len(body) // keep
        body = [r for i, r in enumerate(body)
                if i in (0, len(body) - 1) or i % step == 0 or
                r[2] != body[i - 1][2]]
    with open(dst, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(head)
        w.writerows(body)


def samples_to_1pct(curve):
    if not curve:
        return None
    final = curve[-1][2]
    if math.isinf(final):
        return None
    for s, _, best, _ in curve:
        if best <= final * 1.01:
            return s
    return None


def curve_file(model, cluster, variant, label, seed):
    """Where the curve of one learned-placer run is kept: the budget is in
    the name, so that runs at another budget (the quick set's) never
    replace it."""
    tag = re.sub(r"[^A-Za-z0-9.-]+", "", label.replace(",", "-")
                 .replace("=", "")) if label and label != "-" else ""
    return os.path.join(CURVES, "%s-%s-%s-%sseed%d.csv" % (
        model, cluster, variant, tag + "-" if tag else "", seed))


def row_curve(row):
    """The curve file of a quality row: the one it names, or the name
    rows recorded before curves carried their budget."""
    if row.get("curve"):
        return os.path.join(ROOT, row["curve"])
    return os.path.join(CURVES, "%s-%s-%s-seed%s.csv" % (
        row["model"], row["cluster"], row["placer"], row["seed"]))


# ---------------------------------------------------------------------------
# Cells: statistics over seeds
# ---------------------------------------------------------------------------

def budget_rank(label):
    """How large a budget label is, for choosing the headline cell of a
    placer run at several budgets: its sample count, else its seconds."""
    m = re.search(r"samples=(\d+)", label or "")
    if m:
        return float(m.group(1))
    m = re.search(r"seconds=([\d.]+)", label or "")
    return float(m.group(1)) if m else 0.0


def step_stats(steps, bound):
    """The median of the seeds' step times, their spread (max - min), and
    the gap of the median to the lower bound."""
    step = statistics.median(steps)
    return {"step": step, "spread": max(steps) - min(steps),
            "bound": bound, "gap": step / bound - 1}


def median_of(rows, field):
    xs = [num(r.get(field)) for r in rows]
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def cells(rows):
    """Groups quality rows by (model, cluster, placer, budget) into
    per-cell statistics over seeds."""
    out = {}
    for r in rows:
        out.setdefault((r["model"], r["cluster"], r["placer"],
                        r.get("budget", "")), []).append(r)
    stats = {}
    for key, rs in out.items():
        ok = [r for r in rs if not r.get("error")]
        c = {"seeds": sorted(int(r["seed"]) for r in rs),
             "failed": sorted(int(r["seed"]) for r in rs
                              if r.get("error")),
             "budget": rs[0].get("budget", ""), "rows": rs,
             "colocation": rs[0].get("colocation", "")}
        if not ok:
            c["error"] = rs[0].get("error", "failed")
        else:
            c.update(step_stats([float(r["step_s"]) for r in ok],
                                float(ok[0]["lower_bound_s"])))
            c["oom"] = sum(int(r["oom"]) for r in ok)
            c["ok"] = len(ok)
            c["peak"] = max(float(r["max_peak_gib"]) for r in ok)
            c["search"] = statistics.median(float(r["search_s"] or 0)
                                            for r in ok)
            c["to1"] = median_of(ok, "samples_to_1pct")
            c["samples"] = median_of(ok, "samples")
        stats[key] = c
    return stats


def headline(st):
    """(model, cluster, placer) -> the cell of the largest budget that
    ran (then the one with more seeds): what the papers' comparison and
    the curves quote for a placer run at several budgets. A cell whose
    every seed failed ranks below any cell with a result."""
    out = {}
    for (m, cl, v, b), c in st.items():
        k = (m, cl, v)
        rank = ("step" in c, budget_rank(b), len(c["seeds"]))
        if k not in out or rank > out[k][0]:
            out[k] = (rank, c)
    return {k: c for k, (_, c) in out.items()}


def seed1_curve(st, model, cluster, variant):
    """The curve of seed 1 of the headline cell of a learned placer."""
    c = headline(st).get((model, cluster, variant))
    rows = [r for r in (c or {}).get("rows", []) if str(r["seed"]) == "1"
            and not r.get("error")]
    return read_curve(row_curve(rows[0])) if rows else []
