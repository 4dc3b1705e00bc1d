#!/usr/bin/env python3
"""Checks that the segments of emit{format=split}, run one after another in
the manifest's order, compute the original model:

- every node of the original is in exactly one segment, byte for byte, and
  each segment's nodes are in the original's order;
- each segment file's inputs and outputs are those the manifest lists, and
  its dp.device and dp.segment metadata match the manifest;
- running the segments in manifest order, every input of a segment is a
  graph input or initializer of the original, or an output of a segment
  listed before it, and it is the tensor the original's node made (the
  producer's segment outputs it); `after` lists exactly the segments whose
  outputs it takes, all before it (so the order is topological);
- every tensor a node reads from another segment is a manifest transfer
  from the producer's segment to the reader's, and every transfer is one;
- every graph output of the original is an output of exactly one segment.

    join_split.py ORIGINAL.onnx MANIFEST.json   prints a one-line summary
"""
import json
import os
import sys

import onnx


def fail(msg):
    sys.exit("join_split: " + msg)


def reads(node):
    """The tensors a node reads: its inputs, then what its subgraphs read
    from outside them."""
    out = [t for t in node.input if t]

    def outer(graph, local):
        local = set(local) | {i.name for i in graph.input} | \
            {t.name for t in graph.initializer}
        for n in graph.node:
            out.extend(t for t in n.input if t and t not in local)
            for a in n.attribute:
                for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    outer(g, local)
            local |= {t for t in n.output if t}

    for a in node.attribute:
        for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
            outer(g, set())
    return out


def main():
    original = onnx.load(sys.argv[1], load_external_data=False)
    manifest_path = sys.argv[2]
    with open(manifest_path) as f:
        manifest = json.load(f)
    base = os.path.dirname(manifest_path)
    og = original.graph
    segments = manifest["segments"]

    models = []
    for i, s in enumerate(segments):
        if s["index"] != i:
            fail("segment %d has index %r" % (i, s["index"]))
        m = onnx.load(os.path.join(base, s["file"]), load_external_data=False)
        if [v.name for v in m.graph.input] != s["inputs"]:
            fail("inputs of %s differ from the manifest" % s["file"])
        if [v.name for v in m.graph.output] != s["outputs"]:
            fail("outputs of %s differ from the manifest" % s["file"])
        if len(m.graph.node) != s["nodes"]:
            fail("%s has %d nodes, the manifest says %d"
                 % (s["file"], len(m.graph.node), s["nodes"]))
        meta = {p.key: p.value for p in m.metadata_props}
        if meta.get("dp.device") != s["device"] or \
                meta.get("dp.segment") != str(i):
            fail("metadata of %s names another segment" % s["file"])
        models.append(m)

    # Nodes: each original node in exactly one segment, in model order.
    key = [n.SerializeToString() for n in og.node]
    unused = {}
    for i, k in enumerate(key):
        unused.setdefault(k, []).append(i)
    where = {}
    for si, m in enumerate(models):
        last = -1
        for n in m.graph.node:
            idx = unused.get(n.SerializeToString())
            if not idx:
                fail("node %r of segment %d is not in the original (or is "
                     "in another segment too)" % (n.name, si))
            i = idx.pop(0)
            if i < last:
                fail("nodes of segment %d are out of the original order"
                     % si)
            last = i
            where[i] = si
    if len(where) != len(og.node):
        fail("%d of %d nodes are in no segment"
             % (len(og.node) - len(where), len(og.node)))

    # Run the segments in manifest order.
    producer = {}
    for i, n in enumerate(og.node):
        for o in n.output:
            if o:
                producer[o] = i
    given = {i.name for i in og.input} | {t.name for t in og.initializer}
    made_by = {}  # tensor -> the segment that output it
    for si, m in enumerate(models):
        after = set()
        for v in m.graph.input:
            t = v.name
            if t in given and t not in producer:
                continue
            if t not in made_by:
                fail("segment %d takes %r, which no earlier segment outputs"
                     % (si, t))
            if t not in producer or where[producer[t]] != made_by[t]:
                fail("segment %d takes %r from segment %d, which does not "
                     "make it" % (si, t, made_by[t]))
            after.add(made_by[t])
        if sorted(after) != segments[si]["after"]:
            fail("segment %d runs after %s, the manifest says %s"
                 % (si, sorted(after), segments[si]["after"]))
        if any(a >= si for a in after):
            fail("segment %d runs after a later segment" % si)
        for v in m.graph.output:
            if v.name in made_by:
                fail("%r is an output of segments %d and %d"
                     % (v.name, made_by[v.name], si))
            made_by[v.name] = si

    # Every crossing edge is a transfer, and every transfer crosses.
    transfers = {t["tensor"]: t for t in manifest["transfers"]}
    crossing = {}
    for i, n in enumerate(og.node):
        for t in reads(n):
            if t not in producer:
                continue
            src, dst = where[producer[t]], where[i]
            if src == dst:
                continue
            crossing.setdefault(t, set()).add(dst)
            x = transfers.get(t)
            if x is None:
                fail("%r goes from segment %d to %d but is not in the "
                     "manifest" % (t, src, dst))
            if x["from_segment"] != src or dst not in x["to_segments"]:
                fail("manifest sends %r from segment %d to %s, the nodes "
                     "need %d -> %d" % (t, x["from_segment"],
                                        x["to_segments"], src, dst))
            if og.node[producer[t]].name and \
                    x["producer"] != og.node[producer[t]].name:
                fail("manifest names the wrong producer of %r" % t)
            if t not in segments[dst]["inputs"]:
                fail("segment %d does not take %r" % (dst, t))
    for t, x in transfers.items():
        if sorted(crossing.get(t, ())) != x["to_segments"]:
            fail("manifest sends %r to segments %s, the nodes read it in %s"
                 % (t, x["to_segments"], sorted(crossing.get(t, ()))))
        devices = sorted({segments[s]["device"] for s in x["to_segments"]})
        if x["from"] != segments[x["from_segment"]]["device"] or \
                sorted(x["to"]) != devices:
            fail("manifest names the wrong devices for %r" % t)
    order = [producer[t["tensor"]] for t in manifest["transfers"]]
    if order != sorted(order) or \
            [t["order"] for t in manifest["transfers"]] != \
            list(range(len(order))):
        fail("transfers are not in the order their producers run")

    for o in og.output:
        owners = [si for si, m in enumerate(models)
                  if o.name in [v.name for v in m.graph.output]]
        if len(owners) != 1:
            fail("graph output %r is an output of %d segments"
                 % (o.name, len(owners)))
    devices = {s["device"] for s in segments}
    print("joined %d segments on %d devices: %d nodes, %d cross-segment "
          "tensors" % (len(segments), len(devices), len(where),
                       len(transfers)))


if __name__ == "__main__":
    main()
