"""Checks the memory counters of a simulator Chrome trace against the
simulator's summary: every device that holds bytes has a "memory" counter
track in its process, its samples in time order, and the largest sample
of each device is the summary's peak_bytes for it. Prints one line per
device: its name, sample count > 0, and whether the peak matches."""

import json
import sys

trace = json.load(open(sys.argv[1]))
summary = json.load(open(sys.argv[2]))
events = trace["traceEvents"]
names = {e["pid"]: e["args"]["name"].split(" ")[0] for e in events
         if e["name"] == "process_name"}
samples = {}
for e in events:
    if e.get("ph") == "C":
        assert e["name"] == "memory", e
        samples.setdefault(names[e["pid"]], []).append(
            (e["ts"], e["args"]["bytes"]))
for dev in summary["devices"]:
    got = samples.get(dev["name"], [])
    times = [t for t, _ in got]
    assert times == sorted(times), dev["name"]
    assert all(b >= 0 for _, b in got), dev["name"]
    peak = max((b for _, b in got), default=0)
    print(dev["name"], "samples" if got else "none",
          "peak ok" if peak == dev["peak_bytes"] else
          "peak %d != %d" % (peak, dev["peak_bytes"]))
