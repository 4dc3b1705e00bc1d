#!/usr/bin/env python3
"""Checks dp's shapes against ONNX's own expected outputs.

    utils/testdata-shapes.py DP_OPT DATA_DIR

For every model of an ONNX test-data tree (model.onnx with
test_data_set_0/output_*.pb) that `dp-opt -passes=import-onnx` imports,
compares the static shape dp gives each graph output with the shape of
the reference output tensor the ONNX test case ships. Prints each
mismatch and a summary line; exits 1 on a mismatch.
"""

import glob
import os
import re
import subprocess
import sys

import onnx

TYPE = re.compile(r"%([\w.:/-]+) : [a-z0-9]+\[([0-9,]*)\]")


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    dp_opt, root = argv[1], argv[2]
    matching = mismatching = not_imported = folded = 0
    for model in sorted(glob.glob(os.path.join(root, "**", "model.onnx"),
                                  recursive=True)):
        case = os.path.dirname(model)
        refs = sorted(glob.glob(os.path.join(case, "test_data_set_0",
                                             "output_*.pb")))
        if not refs:
            continue
        proc = subprocess.run([dp_opt, "-S", "-passes=import-onnx", model],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            not_imported += 1
            continue
        folded += "folded = 1" in proc.stdout
        shapes = dict(TYPE.findall(proc.stdout))
        graph = onnx.load(model, load_external_data=False).graph
        for out, ref in zip(graph.output, refs):
            tensor = onnx.TensorProto()
            with open(ref, "rb") as f:
                tensor.ParseFromString(f.read())
            want = ",".join(str(d) for d in tensor.dims)
            got = shapes.get(out.name)
            if got is None:
                continue
            if got == want:
                matching += 1
            else:
                mismatching += 1
                print("mismatch: %s: %s: dp [%s], ONNX [%s]"
                      % (os.path.basename(case), out.name, got, want))
    print("outputs: %d match, %d mismatch; models not imported: %d; "
          "models with folded ops: %d"
          % (matching, mismatching, not_imported, folded))
    return 1 if mismatching else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
