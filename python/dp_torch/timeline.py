"""One Chrome trace of a multi-rank step: every rank's ops and messages.

With ``--profile`` and ranks, each rank records, for its profiled steps,
when each of its nodes ran, when it ran a segment's backward and the
optimizer, when it posted a send, and when it waited for a message; rank
0 gathers them and writes one trace with the simulator's track names
(``emit{format=trace}``, lib/Sim/SimulatePass.cpp): one process per
device, named ``<device> (<type>)`` where the placed model says the type,
its ops on thread 0, and a process ``links`` with one thread per
direction, ``<from> -> <to>``, holding each message from the time its
sender posted it to the time its receiver had it. The two timelines then
open side by side in Perfetto. Each rank's times run from its own start
of the first profiled step, which a barrier makes one instant on all
ranks (to its skew), on one machine or several.
"""

import json
import os
import time


class Recorder:
    """This rank's events: (kind, name, start, end, args)."""

    def __init__(self):
        self.events = []
        # The profiled step the events belong to (messages are matched
        # within a step: their tags repeat from step to step).
        self.step = 0

    def span(self, kind, name, start, end=None, **args):
        args["step"] = self.step
        self.events.append((kind, name, start,
                            time.perf_counter() if end is None else end,
                            args))


def write_trace(path, device_names, gathered, start):
    """gathered: per rank, (device, [events]); start: the clock's origin."""
    procs = {d: i + 1 for i, d in enumerate(device_names)}
    links_pid = len(device_names) + 1
    events = []
    for d, pid in procs.items():
        events.append({"name": "process_name", "ph": "M", "pid": pid,
                       "tid": 0, "args": {"name": device_names[d]}})
    events.append({"name": "process_name", "ph": "M", "pid": links_pid,
                   "tid": 0, "args": {"name": "links"}})
    channels = {}
    sends = {}
    for device, evs in gathered:
        for kind, name, t0, t1, args in evs:
            if kind == "send":
                sends[(args["tag"], args["to"], args["step"])] = (
                    t0, device, name, args)
    for device, evs in gathered:
        pid = procs[device]
        for kind, name, t0, t1, args in evs:
            events.append({"name": name, "cat": kind, "ph": "X",
                           "ts": (t0 - start) * 1e6,
                           "dur": max(0.0, t1 - t0) * 1e6, "pid": pid,
                           "tid": 0, "args": dict(args)})
            if kind != "wait":
                continue
            sent = sends.get((args["tag"], device, args["step"]))
            if sent is None:
                continue
            s0, src, tensor, sargs = sent
            key = "%s -> %s" % (src, device)
            if key not in channels:
                channels[key] = len(channels)
                events.append({"name": "thread_name", "ph": "M",
                               "pid": links_pid, "tid": channels[key],
                               "args": {"name": key}})
            events.append({"name": tensor, "cat": "message", "ph": "X",
                           "ts": (s0 - start) * 1e6,
                           "dur": max(0.0, t1 - s0) * 1e6,
                           "pid": links_pid, "tid": channels[key],
                           "args": {"bytes": sargs.get("bytes"),
                                    "from": src, "to": device}})
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"displayTimeUnit": "ns", "traceEvents": events}, f)
    os.replace(tmp, path)
