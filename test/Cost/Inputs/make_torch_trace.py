#!/usr/bin/env python3
"""Makes the torch.profiler fixtures of test/Cost/torch-trace*.test.

Runs three training steps of the graph in those tests, x @ w -> Relu ->
ReduceSum -> SGD, the way dp's PyTorch runtime does: each node inside
torch.profiler.record_function("<dp op name>"), the loss inside "loss",
the update inside "w/update", and writes two traces:

  torch-cpu.json  what prof.export_chrome_trace() wrote.
  torch-seq.json  with Kineto (PyTorch 2.x), a copy of torch-cpu.json;
                  without Kineto (Debian's torch 1.13, whose export has no
                  "cat" and no "args"), the same profiled events written in
                  Kineto's shape from the profiler's own records (name,
                  thread, start, duration, sequence number, user scope).
                  Timings and autograd sequence numbers are real; the JSON
                  spelling is this script's, and the file says so in
                  "dpNote".

Both are trimmed to the events the tests read: the named regions, the
autograd engine's backward events, and events with a sequence number.

    /usr/bin/python3 test/Cost/Inputs/make_torch_trace.py test/Cost/Inputs
"""

import json
import os
import sys

import torch
from torch.autograd import profiler

REGIONS = ("MatMul_0", "Relu_1", "loss", "w/update")
BACKWARD = "autograd::engine::evaluate_function: "
STEPS = 3


def step(x, w):
    with profiler.record_function("MatMul_0"):
        h = torch.matmul(x, w)
    with profiler.record_function("Relu_1"):
        y = torch.relu(h)
    with profiler.record_function("loss"):
        loss = y.sum()
    loss.backward()
    with torch.no_grad():
        with profiler.record_function("w/update"):
            w -= 0.01 * w.grad
        w.grad = None


def keep(event):
    args = event.get("args") or {}
    return (event.get("ph") == "X" and
            (event["name"] in REGIONS or event["name"].startswith(BACKWARD)
             or "Sequence number" in args))


def trim(trace):
    """The events keep() selects, from either export format."""
    if isinstance(trace, list):
        return [e for e in trace if keep(e)]
    trace["traceEvents"] = [e for e in trace["traceEvents"] if keep(e)]
    for key in ("deviceProperties", "traceName", "baseTimeNanoseconds"):
        trace.pop(key, None)
    return trace


def kineto_shape(events):
    """Kineto's Chrome trace fields for torch 1.13's legacy FunctionEvents."""
    user_scope = 7  # c10::RecordScope::USER_SCOPE: record_function
    out = []
    for e in events:
        args = {"External id": e.id}
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
            args["Fwd thread id"] = e.fwd_thread
        out.append({
            "ph": "X",
            "cat": "user_annotation" if e.scope == user_scope else "cpu_op",
            "name": e.name, "pid": 1, "tid": e.thread,
            "ts": e.time_range.start, "dur": e.time_range.elapsed_us(),
            "args": args})
    return {
        "schemaVersion": 1,
        "dpNote": "converted by make_torch_trace.py from torch %s's legacy "
                  "profiler events (no Kineto); not export_chrome_trace "
                  "output" % torch.__version__,
        "traceEvents": out}


def write(path, trace):
    with open(path, "w") as f:
        if isinstance(trace, list):
            f.write("[\n" + ",\n".join(json.dumps(e) for e in trace) +
                    "\n]\n")
            return
        events = trace.pop("traceEvents")
        head = json.dumps(trace)[:-1]
        f.write(head + ', "traceEvents": [\n' +
                ",\n".join(json.dumps(e) for e in events) + "\n]}\n")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x = torch.randn(64, 128)
    w = torch.randn(128, 256, requires_grad=True)
    step(x, w)  # warm-up: first calls allocate and initialize
    with torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(STEPS):
            step(x, w)
    raw = os.path.join(out_dir, "torch-cpu.raw.json")
    prof.export_chrome_trace(raw)
    with open(raw) as f:
        trace = json.load(f)
    os.remove(raw)
    trace = trim(trace)
    if torch.autograd.kineto_available():
        seq = json.loads(json.dumps(trace))
    else:
        seq = trim(kineto_shape(prof.events()))
    write(os.path.join(out_dir, "torch-cpu.json"), trace)
    write(os.path.join(out_dir, "torch-seq.json"), seq)


if __name__ == "__main__":
    main()
