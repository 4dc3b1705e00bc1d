#!/usr/bin/env python3
"""Write a weight-stripped copy of an ONNX model.

usage: utils/strip-weights.py INPUT.onnx OUTPUT.onnx

How models/corpus was made from the files their packages ship
(models/corpus/manifest.json). Every initializer (in the main graph and in
any subgraph) that has more than 1024 elements, or has a
float/float16/bfloat16/double element type and more than 16 elements, and
every Constant node's value of such a float type and size, is turned into
external data pointing at
'<basename of OUTPUT>.weights': data_location = EXTERNAL, external_data entries
location/offset/length, raw_data and the typed data fields cleared, dims and
data_type kept. The .weights file is NOT written. Small integer initializers
(<= 1024 elements) and small float ones (<= 16 elements) stay inline.
Integer Constant values stay (they may be shapes). Fields that this onnx
does not know (newer IR versions' per-node metadata, such as exporters'
stack traces) are dropped; nodes, attributes and model metadata stay.
Only python3 stdlib, onnx and numpy are used.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

FLOATY = {TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16,
          TensorProto.DOUBLE}
TYPED_FIELDS = ("float_data", "int32_data", "string_data", "int64_data",
                "double_data", "uint64_data")
ALIGN = 4096


def num_elements(t):
    n = 1
    for d in t.dims:
        n *= d
    return n


def byte_length(t):
    if t.HasField("raw_data") or len(t.raw_data):
        return len(t.raw_data)
    if t.data_location == TensorProto.EXTERNAL:
        for e in t.external_data:
            if e.key == "length":
                return int(e.value)
    try:
        return int(numpy_helper.to_array(t).nbytes)
    except Exception:
        # Fall back to element count times element size.
        itemsize = np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type]).itemsize
        return num_elements(t) * itemsize


def should_strip(t):
    if t.data_type in (TensorProto.STRING, TensorProto.UNDEFINED):
        return False
    n = num_elements(t)
    return n > 1024 or (t.data_type in FLOATY and n > 16)


def graphs(g):
    """The graph and all its subgraphs (If/Loop/Scan bodies), depth first."""
    yield g
    for node in g.node:
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from graphs(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sg in a.graphs:
                    yield from graphs(sg)


def tensors(g):
    """Initializers, and float Constant values, of g."""
    yield from g.initializer
    for node in g.node:
        if node.op_type != "Constant":
            continue
        for a in node.attribute:
            if a.name == "value" and a.t.data_type in FLOATY:
                yield a.t


def strip(model, location):
    offset = 0
    count = 0
    for g in graphs(model.graph):
        for t in tensors(g):
            if not should_strip(t):
                continue
            length = byte_length(t)
            for f in TYPED_FIELDS:
                t.ClearField(f)
            t.ClearField("raw_data")
            del t.external_data[:]
            t.data_location = TensorProto.EXTERNAL
            for k, v in (("location", location), ("offset", str(offset)),
                         ("length", str(length))):
                e = t.external_data.add()
                e.key = k
                e.value = v
            offset += (length + ALIGN - 1) // ALIGN * ALIGN
            count += 1
    return count


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    src, dst = argv[1], argv[2]
    model = onnx.load(src, load_external_data=False)
    base = os.path.splitext(os.path.basename(dst))[0]
    location = base + ".weights"
    n = strip(model, location)
    model.DiscardUnknownFields()
    d = os.path.dirname(dst)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(dst, "wb") as f:
        f.write(model.SerializeToString())
    # The weights file is never written; remove a stale one if present.
    wpath = os.path.join(d, location)
    if os.path.exists(wpath):
        os.remove(wpath)
    onnx.load(dst, load_external_data=False)  # check it loads
    print("%s: stripped %d initializers -> %s (%d bytes)"
          % (src, n, dst, os.path.getsize(dst)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
