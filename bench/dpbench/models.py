"""What the benchmarks run: models, clusters, placer variants, colocation
strategies and the presets of bench/run.py, and the place{} and colocate{}
options each run gets (bench/README.md explains the choices)."""

import os

from dpbench import BENCH

MODELS = ["inception_v3", "resnet50", "gnmt4", "nmt2", "nmt4", "bert_base"]
# Presets of dp-opt, and k80x2, the file bench/clusters/k80x2.json.
CLUSTERS = ["p100x4", "k80x4", "h100x8", "k80x2"]
# Placer variants: name -> place{...} options. `gpu-only` is the papers'
# single-GPU baseline (it reports OOM where the step does not fit); `single`
# is dp's fastest device that holds the step.
VARIANTS = {
    "single": "algo=single",
    "gpu-only": "algo=single,device=gpu:0",
    "cpu-only": "algo=cpu-only",
    "expert": "algo=expert",
    "metis": "algo=metis",
    "scotch": "algo=scotch",
    "m-topo": "algo=m-topo",
    "m-etf": "algo=m-etf",
    "m-sct": "algo=m-sct",
    "anneal": "algo=anneal",
    "mip": "algo=mip",
    "mars": "algo=mars",
    "mars-nopre": "algo=mars,pretrain=0",
    "colocrl": "algo=colocrl",
    "hierarchical": "algo=hierarchical",
    "eagle": "algo=eagle",
    "eagle-ce": "algo=eagle,train=ppo-ce",
    "placeto": "algo=placeto",
}
LEARNED = ["mars", "mars-nopre", "colocrl", "hierarchical", "eagle",
           "eagle-ce", "placeto"]
# Samples between two policy updates (docs/placers/*.md): the gap in the
# curve's seconds after every such sample is the update's time.
UPDATE_EVERY = {"mars": 20, "mars-nopre": 20, "eagle": 10, "eagle-ce": 10,
                "colocrl": 4, "hierarchical": 4}
# Graphs whose training step has thousands of units after `unroll-rnn`.
RNN_MODELS = {"gnmt4", "nmt2", "nmt4"}
MERGE = "merge{groups=256}"
# The colocate{strategy=} values bench/placement.py crosses with the placers.
STRATEGIES = ["none", "tf", MERGE, "metis{groups=256}", "scope{depth=3}"]
QUICK_STRATEGIES = ["none", "tf"]

PARTS = ["placement", "papers", "curves", "generalize", "speed"]
PRESETS = {
    "quick": {
        "parts": PARTS,
        "models": ["inception_v3", "gnmt4", "bert_base"],
        "learned_models": ["gnmt4", "bert_base"],
        "clusters": ["p100x4"],
        "placers": [v for v in VARIANTS
                    if v not in ("mars-nopre", "eagle-ce")],
        "seeds": [1],
        "samples": 21,
        "pretrain": 50,
        "anneal_seconds": 5,
        "gen_models": ["gnmt4"],
        "gen_train": 20, "gen_finetune": 10,
        "family": [(20, 64), (30, 64), (40, 32), (30, 32)],
        "family_samples": 5120,
        "bench_min_time": 0.2, "bench_nodes": 20000, "bench_reps": 1,
        "speed_samples": 21,
    },
    "full": {
        "parts": PARTS,
        "models": MODELS,
        "learned_models": MODELS,
        "clusters": CLUSTERS,
        "placers": list(VARIANTS),
        "seeds": [1, 2, 3],
        "samples": 200,
        "pretrain": 1000,
        "anneal_seconds": 20,
        "gen_models": ["inception_v3", "gnmt4", "bert_base"],
        "gen_train": 200, "gen_finetune": 100,
        "family": [(20, 64), (30, 64), (40, 64), (50, 64), (20, 128),
                   (30, 128), (40, 128), (50, 128), (30, 96), (40, 96)],
        "family_samples": 51200,
        "bench_min_time": 0.5, "bench_nodes": 100000, "bench_reps": 5,
        "speed_samples": 60,
    },
}


# Issue 19's comparison at equal budgets: every learned placer scores the
# same number of placements, at one hidden size, after one colocation
# rule per placer for every model, on p100x4 and Placeto Table 1's K80
# clusters; fixed before any of its runs.
PRESETS["equal"] = dict(
    PRESETS["full"], parts=["placement", "papers", "curves"],
    placers=list(LEARNED), clusters=["p100x4", "k80x4", "k80x2"],
    samples=3000, pretrain=1000, hidden=128, uniform_colocation=True)


def cluster_arg(cluster):
    """A preset name, or a cluster file of bench/clusters/."""
    path = os.path.join(BENCH, "clusters", cluster + ".json")
    return path if os.path.exists(path) else cluster


def colocation(variant, model, uniform=False):
    """The colocation a placer runs after, as bench/README.md explains;
    with `uniform` (the `equal` preset), one rule per placer for every
    model: ColocRL gets `merge` everywhere.

    ColocRL places TensorFlow's co-location groups (`tf`); on the unrolled
    RNN graphs those are still 5,000-12,000, so it gets Placeto's
    Merge-and-Colocate to 256 groups there. Placeto merges small groups into
    their neighbours (its appendix A.6, dp's `merge`). Mars gets `merge` to
    256 groups on every model (the unrolled RNN graphs have thousands of
    units), and then merges them to its own groups= (128 by default). The
    Hierarchical Planner and EAGLE group the units with their own learned
    grouper, so they get none. Non-learned placers see the hint units
    (none)."""
    if variant == "colocrl":
        return MERGE if model in RNN_MODELS or uniform else "tf"
    if variant in ("mars", "mars-nopre", "placeto"):
        return MERGE
    return "none"


def budget(variant, cfg):
    """place{} options that bound a placer's search."""
    if variant not in LEARNED:
        if variant in ("anneal", "mip"):  # equal time
            return "seconds=%g" % cfg["anneal_seconds"]
        return ""
    # Every learned placer scores samples= placements; a Placeto move
    # scores a complete placement, as its paper's Table 1 counts them.
    opts = "samples=%d,threads=1" % cfg["samples"]
    if variant == "mars":
        opts += ",pretrain=%d" % cfg["pretrain"]
    if cfg.get("hidden"):  # one size for every learned placer
        opts += ",hidden=%d" % cfg["hidden"]
    elif variant in ("mars", "mars-nopre") and cfg.get("mars_hidden"):
        opts += ",hidden=%d" % cfg["mars_hidden"]
    return opts


def budget_label(variant, cfg):
    """The budget as the tables and curve file names show it."""
    b = budget(variant, cfg).replace(",threads=1", "")
    return b if b else "-"
