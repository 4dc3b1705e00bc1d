"""Profiles of the runtime's steps, and the profiler's own cost in them.

`profile_steps` writes the Chrome trace of `run --profile`
(docs/runtime.md): each ONNX node's forward a `record_function` region
named as the node, its backward `<node>/grad`, each weight's update
`<weight>/update`, the loss `loss`.

A region's duration in that trace is more than the unprofiled time of
what runs in it: entering and leaving the region, and recording each
event inside it (every aten op, every autograd node), happen between the
region's start and end stamps. Right before the profiled steps, in the
same process and with the same profiler settings, `calibrate` measures
that cost:

- P, the time one event recorded inside a region adds to it: a region
  around K_MANY trivial ops and one around K_FEW, each recorded duration
  less the unprofiled time of the same ops (medians of SAMPLES
  repetitions), the difference divided by the difference of the numbers
  of events nested in the two regions;
- R, the time a region adds of its own: the region around K_FEW trivial
  ops, its recorded duration less their unprofiled time, less P per event
  nested in it (the ops and what record_function records itself).

The trace carries the figures as one metadata event, the first of its
list (the Trace Event Format's "ph": "M"):

    {"ph": "M", "name": "dp_profiler_overhead", "pid": 0, "tid": 0,
     "args": {"region_us": R, "op_us": P, "samples": N}}

in microseconds, N the repetitions behind each median. cost-annotate
{profile=} takes R + P * n off the duration of an event with n events
nested in it (docs/cost.md).

The regions time the nodes, not the runtime's own Python between them
(looking up a node's inputs, freeing what no later node reads, calling
its kernel): on a CNN's inference step on one core that was a tenth of
the step, in no op's time. Before calibrating, DISPATCH_STEPS unprofiled
steps measure it per node, D: the time spent in the module's `run` less
the time in the nodes' kernels, over the nodes run. The trace's second
event carries it:

    {"ph": "M", "name": "dp_dispatch", "pid": 0, "tid": 0,
     "args": {"node_us": D, "nodes": K}}

K the nodes run in those steps. cost-annotate adds D to the time of every
op the profile times by its node's region (not to backward or update
regions: autograd's engine and the optimizer run no per-node Python of
the runtime).
"""

import json
import os
import statistics
import time

import torch

from .module import synchronize

# The name of the calibration's metadata event in the trace.
OVERHEAD_EVENT = "dp_profiler_overhead"
# The name of the dispatch measurement's metadata event, and its steps.
DISPATCH_EVENT = "dp_dispatch"
DISPATCH_STEPS = 3
# Repetitions of each measurement, in BLOCKS blocks that alternate
# unprofiled and profiled runs (so that a change in the machine's load
# between them shifts both alike), and the warm-up runs before each block.
BLOCKS = 6
SAMPLES = 300
WARMUP = 5
# Trivial ops in the two calibration regions.
K_FEW = 1
K_MANY = 33
# The calibration regions' names: "<prefix><k>".
_PREFIX = "dp_profiler_calibration/"
# Slack for "ends within" on microsecond stamps, as dp-opt reads them.
_SLACK = 5e-4
# Profiled steps run, unrecorded, before the recorded ones. A profiled
# step needs a larger heap than an unprofiled one (NMT-2's training step
# at the validation size: 5.9 GB against 2.7 GB, as much in use at its
# end; the profiler's records are small blocks that malloc can place in
# the holes freed tensors leave), and with the heap kept as allocator.py
# keeps it, it grows over the first profiled steps, each new page a minor
# fault: NMT-2's first two profiled steps took 170 000 to 480 000 faults
# and 0.5 to 1.5 s of system time each, in 4 runs, the later ones none
# (in one run the 3rd and 4th 100 000). A fixed count, so that ranks,
# whose steps exchange messages, run as many steps each.
SETTLE_STEPS = 2


def _trivial_ops(x, k):
    for _ in range(k):
        torch.neg(x)


def _events(trace):
    """The list of events of an exported Chrome trace (Kineto writes an
    object with "traceEvents", torch without Kineto a bare list)."""
    return trace["traceEvents"] if isinstance(trace, dict) else trace


def _nested_counts(events):
    """The duration and the number of events nested in it of every
    calibration region, by k."""
    complete = [e for e in events if e.get("ph") == "X"
                and isinstance(e.get("ts"), (int, float))
                and isinstance(e.get("dur"), (int, float))]
    complete.sort(key=lambda e: (str(e.get("pid")), str(e.get("tid")),
                                 e["ts"], -e["dur"]))
    found = {}
    for i, e in enumerate(complete):
        name = e.get("name", "")
        if not name.startswith(_PREFIX):
            continue
        thread = (str(e.get("pid")), str(e.get("tid")))
        end = e["ts"] + e["dur"]
        n = 0
        for j in range(i + 1, len(complete)):
            f = complete[j]
            if (str(f.get("pid")), str(f.get("tid"))) != thread or \
                    f["ts"] > end:
                break
            if f["ts"] + f["dur"] <= end + _SLACK:
                n += 1
        found.setdefault(int(name[len(_PREFIX):]), []).append(
            (e["dur"], n))
    return found


def calibrate(activities, tmp):
    """The profiler's overhead on this machine, as the trace's metadata
    event: what a region adds of its own (R) and what each event recorded
    inside a region adds (P), in microseconds; tmp is a scratch file."""
    x = torch.zeros(1)
    ks = (K_FEW, K_MANY)
    unprofiled = {k: [] for k in ks}
    regions = {k: [] for k in ks}
    per_block = SAMPLES // BLOCKS
    for _ in range(BLOCKS):
        for i in range(WARMUP + per_block):
            for k in ks:
                start = time.perf_counter()
                _trivial_ops(x, k)
                elapsed = time.perf_counter() - start
                if i >= WARMUP:
                    unprofiled[k].append(elapsed * 1e6)
        with torch.profiler.profile(activities=activities) as prof:
            for i in range(WARMUP + per_block):
                for k in ks:
                    # The warm-up regions get another name, so they are
                    # not read back.
                    name = _PREFIX + str(k) if i >= WARMUP else "warmup"
                    with torch.profiler.record_function(name):
                        _trivial_ops(x, k)
        prof.export_chrome_trace(tmp)
        del prof
        with open(tmp) as f:
            for k, found in _nested_counts(_events(json.load(f))).items():
                regions[k].extend(found)
    os.remove(tmp)
    added, nested = {}, {}
    for k in ks:
        if len(regions[k]) != per_block * BLOCKS:
            raise AssertionError("calibration: %d regions of %d ops in the "
                                 "trace, not %d" % (len(regions[k]), k,
                                                    per_block * BLOCKS))
        added[k] = statistics.median(d for d, _ in regions[k]) - \
            statistics.median(unprofiled[k])
        nested[k] = statistics.median(n for _, n in regions[k])
    per_event = (added[K_MANY] - added[K_FEW]) / (nested[K_MANY] -
                                                  nested[K_FEW])
    per_region = added[K_FEW] - per_event * nested[K_FEW]
    # Noise can make a small figure negative; the profiler adds no less
    # than nothing.
    return {"ph": "M", "name": OVERHEAD_EVENT, "pid": 0, "tid": 0,
            "args": {"region_us": max(per_region, 0.0),
                     "op_us": max(per_event, 0.0),
                     "samples": per_block * BLOCKS}}


def measure_dispatch(step, devices, module, steps=DISPATCH_STEPS):
    """The runtime's time per node outside the nodes' kernels, over
    `steps` unprofiled steps, as the trace's metadata event."""
    run = module.run
    inside = [0.0]

    def timed_run(*args, **kwargs):
        start = time.perf_counter()
        try:
            return run(*args, **kwargs)
        finally:
            inside[0] += time.perf_counter() - start

    module.run = timed_run
    module.kernel_s, module.nodes_timed = 0.0, 0
    module.time_kernels = True
    try:
        for _ in range(steps):
            step()
            synchronize(devices)
    finally:
        module.time_kernels = False
        del module.run
    nodes = module.nodes_timed
    per_node = max(0.0, inside[0] - module.kernel_s) / nodes if nodes else 0.0
    return {"ph": "M", "name": DISPATCH_EVENT, "pid": 0, "tid": 0,
            "args": {"node_us": per_node * 1e6, "nodes": nodes}}


def profile_steps(step, devices, count, path, module, dispatch=True):
    """Profiles count more steps, each node's forward a region named as
    the node and its backward one named '<node>/grad'.

    Each step is profiled in a session of its own, and the sessions'
    events go into one Chrome trace, each session's times shifted to start
    after the one before: torch's profiler holds memory for every step of
    a session until it ends (about a step's worth of tensors each, on
    Debian's torch 1.13), so five steps in one session took five steps'
    memory at once. The trace's first event is the profiler's overhead,
    measured right before the steps (calibrate); SETTLE_STEPS profiled
    steps, unrecorded, come between the two. With `dispatch`, the second
    is the runtime's time per node between kernels (measure_dispatch),
    measured before the calibration; a rank of a multi-rank run, whose
    `run` also waits for messages, leaves it out."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if any(d.type == "cuda" for d in devices):
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    tmp = path + ".tmp"
    first = [measure_dispatch(step, devices, module)] if dispatch else []
    events = [calibrate(activities, tmp)] + first
    end = 0.0
    module.mark_backward = True
    try:
        for _ in range(SETTLE_STEPS):
            with torch.profiler.profile(activities=activities):
                step()
                synchronize(devices)
        for _ in range(count):
            with torch.profiler.profile(activities=activities) as prof:
                step()
                synchronize(devices)
            prof.export_chrome_trace(tmp)
            del prof
            with open(tmp) as f:
                trace = json.load(f)
            part = _events(trace)
            shift = end
            for e in part:
                if isinstance(e.get("ts"), (int, float)):
                    e["ts"] = e["ts"] + shift
                    end = max(end, e["ts"] + e.get("dur", 0) + 1)
            events.extend(part)
    finally:
        module.mark_backward = False
    with open(tmp, "w") as f:
        json.dump(events, f)
    os.replace(tmp, path)
