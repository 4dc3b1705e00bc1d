#!/usr/bin/env -S /usr/bin/python3
"""Writes a family of NMT graphs for Placeto's generalization experiment
(Placeto section 4.2 and appendix A.3: variations of the 2-layer NMT model
with different numbers of unrolled steps and batch sizes).

  /usr/bin/python3 bench/nmt_family.py OUTDIR LENGTH:BATCH [LENGTH:BATCH ...]

Each graph is models/nmt2.onnx (utils/export-models.py, the TensorFlow NMT
tutorial's 2-layer model) with the source and target inputs resized to
[LENGTH, BATCH] and the output to [LENGTH, BATCH, vocab]: the exported
graph holds no constant that depends on either (its LSTMs are ONNX LSTM
nodes, its attention batched MatMuls), so every other shape follows by
shape inference, which dp's importer runs; `unroll-rnn` then unrolls
LENGTH steps per layer. Needs python3-onnx (Debian's /usr/bin/python3).
"""

import os
import sys

import onnx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def resize(model, length, batch):
    g = model.graph
    resized = [vi for vi in g.input if vi.name in ("src", "tgt")]
    for vi in resized + list(g.output):
        dims = vi.type.tensor_type.shape.dim
        dims[0].dim_value = length
        dims[1].dim_value = batch
    del g.value_info[:]
    g.name = "nmt2_l%d_b%d" % (length, batch)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    src = os.path.join(ROOT, "models", "nmt2.onnx")
    for spec in sys.argv[2:]:
        length, batch = (int(x) for x in spec.split(":"))
        model = onnx.load(src, load_external_data=False)
        resize(model, length, batch)
        path = os.path.join(out, "nmt2_l%d_b%d.onnx" % (length, batch))
        onnx.save(model, path)
        print(path)


if __name__ == "__main__":
    main()
