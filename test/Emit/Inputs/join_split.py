#!/usr/bin/env python3
"""Joins the submodels of emit{format=split} back into one graph and checks
that it is the original model's dataflow:

- every node of the original is in exactly one part, and the parts' nodes
  taken in the original order are the original nodes, byte for byte;
- every input of a part is a graph input of the original or a tensor that
  the manifest says another part sends to it, which that part outputs;
- every tensor a node reads from another part is in the manifest, from the
  producer's part to the reader's, with the producer the manifest names;
- every graph output of the original is an output of exactly one part;
- the manifest's transfers are in the order their producers run.

    join_split.py ORIGINAL.onnx MANIFEST.json   prints a one-line summary
"""
import json
import os
import sys

import onnx


def fail(msg):
    sys.exit("join_split: " + msg)


def main():
    original = onnx.load(sys.argv[1], load_external_data=False)
    manifest_path = sys.argv[2]
    with open(manifest_path) as f:
        manifest = json.load(f)
    base = os.path.dirname(manifest_path)
    og = original.graph

    parts = {}
    for p in manifest["parts"]:
        m = onnx.load(os.path.join(base, p["file"]), load_external_data=False)
        if [i.name for i in m.graph.input] != p["inputs"]:
            fail("inputs of %s differ from the manifest" % p["file"])
        if [o.name for o in m.graph.output] != p["outputs"]:
            fail("outputs of %s differ from the manifest" % p["file"])
        parts[p["device"]] = m

    # Nodes: each original node in exactly one part, parts in model order.
    key = [n.SerializeToString() for n in og.node]
    unused = {}
    for i, k in enumerate(key):
        unused.setdefault(k, []).append(i)
    where = {}
    for dev, m in parts.items():
        last = -1
        for n in m.graph.node:
            idx = unused.get(n.SerializeToString())
            if not idx:
                fail("node %r of %s is not in the original" % (n.name, dev))
            i = idx.pop(0)
            if i < last:
                fail("nodes of %s are out of the original order" % dev)
            last = i
            where[i] = dev
    if len(where) != len(og.node):
        fail("%d of %d nodes are in no part" % (len(og.node) - len(where),
                                                len(og.node)))
    joined = [og.node[i] for i in sorted(where)]
    if [n.SerializeToString() for n in joined] != key:
        fail("the joined nodes differ from the original's")

    # Dataflow across parts.
    producer = {}
    for i, n in enumerate(og.node):
        for o in n.output:
            if o:
                producer[o] = i
    transfers = {t["tensor"]: t for t in manifest["transfers"]}
    graph_inputs = {i.name for i in og.input}
    initializers = {t.name for t in og.initializer}
    crossing = set()
    for i, n in enumerate(og.node):
        for t in n.input:
            if not t or t not in producer:
                continue
            src, dst = where[producer[t]], where[i]
            if src == dst:
                continue
            crossing.add(t)
            x = transfers.get(t)
            if x is None:
                fail("%r crosses %s -> %s but is not in the manifest"
                     % (t, src, dst))
            if x["from"] != src or dst not in x["to"]:
                fail("manifest sends %r %s -> %s, the nodes need %s -> %s"
                     % (t, x["from"], x["to"], src, dst))
            if x["producer"] != og.node[producer[t]].name and \
                    og.node[producer[t]].name:
                fail("manifest names the wrong producer of %r" % t)
            if t not in [o.name for o in parts[src].graph.output]:
                fail("%s does not output %r" % (src, t))
            if t not in [v.name for v in parts[dst].graph.input]:
                fail("%s does not take %r" % (dst, t))
    if crossing != set(transfers):
        fail("the manifest lists tensors that cross no device: %s"
             % sorted(set(transfers) - crossing))
    for dev, m in parts.items():
        for v in m.graph.input:
            if v.name in graph_inputs or v.name in initializers:
                continue
            x = transfers.get(v.name)
            if x is None or dev not in x["to"]:
                fail("input %r of %s comes from nowhere" % (v.name, dev))
    for o in og.output:
        owners = [d for d, m in parts.items()
                  if o.name in [v.name for v in m.graph.output]]
        if len(owners) != 1:
            fail("graph output %r is an output of %d parts"
                 % (o.name, len(owners)))
    order = [producer[t["tensor"]] for t in manifest["transfers"]]
    if order != sorted(order) or \
            [t["order"] for t in manifest["transfers"]] != \
            list(range(len(order))):
        fail("transfers are not in the order their producers run")
    print("joined %d parts: %d nodes, %d cross-device tensors"
          % (len(parts), len(joined), len(transfers)))


if __name__ == "__main__":
    main()
