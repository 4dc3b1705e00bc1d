"""Colocation strategies x placers on one cluster (bench/placement.py):
each model prepared once, then colocate, place and simulate for every
strategy x placer x seed, one CSV row per run and one cell per (model,
strategy, placer) over the seeds."""

import os
import statistics
import tempfile

from dpbench import RESULTS
from dpbench.results import step_stats, write_csv
from dpbench.runner import Prepared, log, place

FIELDS = ["model", "strategy", "placer", "seed", "step_time_s",
          "lower_bound_s", "oom", "max_peak_bytes", "search_seconds",
          "wall_s", "error"]


def csv_path(cluster):
    return os.path.join(RESULTS, "placement-%s.csv" % cluster)


def peak_bytes(summary):
    return max(d["peak_bytes"] for d in summary["devices"])


def csv_row(model, strategy, placer, seed, o):
    s = o.summary or {}
    return {"model": model, "strategy": strategy, "placer": placer,
            "seed": seed, "step_time_s": s.get("step_time_s", ""),
            "lower_bound_s": s.get("lower_bound_s", ""),
            "oom": s.get("oom", ""),
            "max_peak_bytes": peak_bytes(s) if s.get("devices") else "",
            "search_seconds": s.get("search_seconds", ""),
            "wall_s": "%.3f" % o.wall, "error": o.error or ""}


def cell(model, strategy, placer, outcomes):
    """The statistics over seeds of one (model, strategy, placer)."""
    c = {"model": model, "strategy": strategy, "placer": placer}
    ok = [o.summary for o in outcomes if not o.error]
    if not ok:
        c["error"] = outcomes[0].error
        log("%-13s %-18s %-9s error" % (model, strategy, placer))
        return c
    c.update(step_stats([s["step_time_s"] for s in ok],
                        ok[0]["lower_bound_s"]))
    c["peak"] = max(peak_bytes(s) for s in ok)
    c["oom"] = any(s["oom"] for s in ok)
    c["search"] = statistics.median(s["search_seconds"] or 0 for s in ok)
    log("%-13s %-18s %-9s %10.3f ms %s" % (
        model, strategy, placer, c["step"] * 1e3, "OOM" if c["oom"] else ""))
    return c


def run_grid(tools, cluster, models, strategies, placers, seeds,
             anneal_seconds):
    """Runs every model x strategy x placer x seed; writes
    placement-<cluster>.csv and returns the cells in that order."""
    rows = []
    st = []
    with tempfile.TemporaryDirectory() as workdir:
        prep = Prepared(tools, workdir)
        for model in models:
            bc = prep.get(model, cluster)
            for strategy in strategies:
                for placer in placers:
                    opts = "seconds=%g" % anneal_seconds \
                        if placer in ("anneal", "mip") else ""
                    outcomes = [place(tools, bc, cluster, placer, opts,
                                      strategy, seed, workdir)
                                for seed in seeds]
                    rows += [csv_row(model, strategy, placer, seed, o)
                             for seed, o in zip(seeds, outcomes)]
                    st.append(cell(model, strategy, placer, outcomes))
    write_csv(csv_path(cluster), rows, FIELDS)
    return st
