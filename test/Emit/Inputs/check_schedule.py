#!/usr/bin/env python3
"""Checks the schedule that emit{format=onnx} writes into a placed model
(docs/emit.md), and prints it:

- `dp.schedule` has exactly the members version (1), segments and order;
  every node of the original model is in exactly one segment, on the
  device dp.placement gives it, and each segment's nodes are in a
  topological order of the model's dataflow (no node before a node of
  its segment that it reads from); for a training step each segment also
  lists its nodes in backward order (`backward_nodes`): the same nodes,
  in a reverse topological order (no node before a node of its segment
  that reads from it), and none for inference;
- the order lists the forward item of every segment once, and the
  backward item of every segment once exactly when dp.predicted's mode
  is "train"; it is a linear extension of the dependencies the model's
  dataflow gives the segments (a segment's forward after the forwards of
  the segments it reads from, its backward after its forward and after
  the backwards of the segments that read from it);
- each metadata key is there once;
- `dp.predicted` has exactly the members step_s, mode, devices and
  cluster, in that order;
- with a split manifest: the same segments (devices, node counts, `after`
  the dependencies above) and the same order.

    check_schedule.py ORIGINAL.onnx PLACED.onnx [MANIFEST.json]

prints both entries as written, then a one-line summary of the order.
"""
import json
import os
import sys

import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from join_split import reads  # noqa: E402


def fail(msg):
    sys.exit("check_schedule: " + msg)


def main():
    original = onnx.load(sys.argv[1], load_external_data=False)
    placed = onnx.load(sys.argv[2], load_external_data=False)
    keys = [p.key for p in placed.metadata_props]
    for key in set(keys):
        if keys.count(key) > 1:
            fail("the placed model has %d entries %s" % (keys.count(key), key))
    meta = {p.key: p.value for p in placed.metadata_props}
    for key in ("dp.placement", "dp.schedule", "dp.predicted"):
        if key not in meta:
            fail("the placed model has no %s" % key)
    print("dp.schedule: " + meta["dp.schedule"])
    print("dp.predicted: " + meta["dp.predicted"])
    placement = json.loads(meta["dp.placement"])
    schedule = json.loads(meta["dp.schedule"])
    predicted = json.loads(meta["dp.predicted"])

    if list(schedule) != ["version", "segments", "order"] or \
            schedule["version"] != 1:
        fail("dp.schedule has members %s, version %r"
             % (list(schedule), schedule.get("version")))
    if list(predicted) != ["step_s", "mode", "devices", "cluster"] or \
            predicted["mode"] not in ("train", "inference"):
        fail("dp.predicted has members %s, mode %r"
             % (list(predicted), predicted.get("mode")))

    # dp.placement lists the nodes by their dp names, in node order.
    og = original.graph
    names = list(placement)
    if len(names) != len(og.node):
        fail("dp.placement names %d nodes, the model has %d"
             % (len(names), len(og.node)))
    index = {n: i for i, n in enumerate(names)}
    segments = schedule["segments"]
    where = {}
    made_by = {}
    for i, n in enumerate(original.graph.node):
        for o in n.output:
            if o:
                made_by[o] = i
    train = predicted["mode"] == "train"
    for k, seg in enumerate(segments):
        members = ["device", "nodes"] + (["backward_nodes"] if train else [])
        if list(seg) != members:
            fail("segment %d has members %s, expected %s"
                 % (k, list(seg), members))
        in_seg = {index[n] for n in seg["nodes"] if n in index}
        if train:
            if sorted(seg["backward_nodes"]) != sorted(seg["nodes"]):
                fail("segment %d: backward_nodes are not its nodes" % k)
            earlier = set()
            for name in seg["backward_nodes"]:
                for t in reads(original.graph.node[index[name]]):
                    p = made_by.get(t)
                    if p is not None and p in in_seg and p in earlier:
                        fail("in segment %d's backward, node %r comes "
                             "after node %r, whose result it reads"
                             % (k, name, names[p]))
                earlier.add(index[name])
        done = set()
        for name in seg["nodes"]:
            if name not in index:
                fail("segment %d: the model has no node %r" % (k, name))
            if name in where:
                fail("node %r is in segments %d and %d"
                     % (name, where[name], k))
            if placement[name] != seg["device"]:
                fail("node %r is on %s, its segment %d on %s"
                     % (name, placement[name], k, seg["device"]))
            for t in reads(original.graph.node[index[name]]):
                p = made_by.get(t)
                if p is not None and p in in_seg and p not in done:
                    fail("in segment %d, node %r comes before node %r, "
                         "whose result it reads"
                         % (k, name, names[p]))
            done.add(index[name])
            where[name] = k
    if len(where) != len(names):
        fail("%d nodes are in no segment" % (len(names) - len(where)))

    # The segments each segment reads from.
    producer = {}
    for i, n in enumerate(og.node):
        for o in n.output:
            if o:
                producer[o] = i
    deps = [set() for _ in segments]
    for i, n in enumerate(og.node):
        for t in reads(n):
            if t in producer:
                src, dst = where[names[producer[t]]], where[names[i]]
                if src != dst:
                    deps[dst].add(src)

    order = [tuple(item) for item in schedule["order"]]
    phases = ["forward"] + (["backward"] if predicted["mode"] == "train"
                            else [])
    expected = sorted((p, k) for p in phases for k in range(len(segments)))
    if sorted(order) != expected:
        fail("the order has items %s, expected %s" % (sorted(order),
                                                      expected))
    pos = {item: i for i, item in enumerate(order)}
    for k, ds in enumerate(deps):
        for d in ds:
            if pos[("forward", d)] > pos[("forward", k)]:
                fail("forward %d comes before forward %d, which it reads"
                     % (k, d))
            if "backward" in phases and \
                    pos[("backward", k)] > pos[("backward", d)]:
                fail("backward %d comes before backward %d, which reads it"
                     % (d, k))
        if "backward" in phases and \
                pos[("backward", k)] < pos[("forward", k)]:
            fail("backward %d comes before its forward" % k)

    if len(sys.argv) > 3:
        with open(sys.argv[3]) as f:
            manifest = json.load(f)
        ms = manifest["segments"]
        if [(s["device"], s["nodes"]) for s in ms] != \
                [(s["device"], len(s["nodes"])) for s in segments]:
            fail("the manifest has other segments")
        if [s["after"] for s in ms] != [sorted(d) for d in deps]:
            fail("the manifest's segments depend on others")
        if [tuple(item) for item in manifest["order"]] != order:
            fail("the manifest has another order")

    print("order of %d items on %d segments (%s): %s"
          % (len(order), len(segments), predicted["mode"],
             " ".join(p[0].upper() + str(k) for p, k in order)))


if __name__ == "__main__":
    main()
