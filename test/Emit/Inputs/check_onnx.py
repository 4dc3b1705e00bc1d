#!/usr/bin/env python3
"""Runs the ONNX checker on each model given, as a user would: with the
model's external weight files present. The bundled models reference a
weights file that is never shipped, so each model is checked in a scratch
directory beside sparse files of the sizes its external data needs.

    check_onnx.py MODEL.onnx...   prints "ok MODEL.onnx" per model
"""
import os
import shutil
import sys
import tempfile

import onnx


def external_extents(model):
    """{location: bytes needed} over the external initializers."""
    extents = {}
    for t in model.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        info = {e.key: e.value for e in t.external_data}
        end = int(info.get("offset", 0)) + int(info.get("length", 0))
        loc = info["location"]
        extents[loc] = max(extents.get(loc, 0), end)
    return extents


def main():
    for path in sys.argv[1:]:
        model = onnx.load(path, load_external_data=False)
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, os.path.basename(path))
            shutil.copyfile(path, copy)
            for loc, size in external_extents(model).items():
                with open(os.path.join(tmp, loc), "wb") as f:
                    f.truncate(size)
            onnx.checker.check_model(copy)
        print("ok", os.path.basename(path))


if __name__ == "__main__":
    main()
