"""emit{format=split} is valid for any placement: every model of the
third-party corpus (models/corpus.split.json), imported with its
bindings, placed at random over three devices (each op's device drawn
from a seeded generator, so segments start and end everywhere and devices
depend on each other both ways), split; ONNX's own checker with full
shape inference (onnx.checker.check_model(full_check=True)) accepts every
segment, and the manifest lists them all."""

import json
import os
import random
import re
import subprocess

import onnx
import pytest

from conftest import PYTHON_DIR, dp_opt

ROOT = os.path.dirname(PYTHON_DIR)
CORPUS = os.path.join(ROOT, "models", "corpus")
with open(os.path.join(CORPUS, "manifest.json")) as f:
    MANIFEST = json.load(f)

CLUSTER = {
    "name": "three-cpus",
    "device_types": [{"name": "c", "kind": "cpu", "peak_flops": {"f32": 1e11},
                      "memory_bandwidth": 1e10, "memory": 1 << 40}],
    "devices": [{"name": "cpu:%d" % i, "type": "c"} for i in range(3)],
    "links": [{"between": ["cpu:%d" % a, "cpu:%d" % b], "bandwidth": 1e9}
              for a in range(3) for b in range(a + 1, 3)],
}


def _weights_as_inputs(model):
    """The corpus is weight-stripped (external data that is never
    written): for the checker, each such weight becomes a graph input of
    its type, as utils/export-models.py validates them."""
    from onnx import helper
    kept = []
    # An old model declares its weights as inputs too (with a default).
    inputs = {i.name for i in model.graph.input}
    for t in model.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            if t.name not in inputs:
                model.graph.input.append(helper.make_tensor_value_info(
                    t.name, t.data_type, list(t.dims)))
        else:
            kept.append(t)
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    # Constants and a branch's weights cannot be inputs: zeros of their
    # size.
    _fill_external(model.graph)
    return model


def _fill_tensor(t):
    import numpy as np
    from onnx import helper, mapping
    if t.data_location != onnx.TensorProto.EXTERNAL:
        return
    dtype = helper.tensor_dtype_to_np_dtype(t.data_type) \
        if hasattr(helper, "tensor_dtype_to_np_dtype") \
        else mapping.TENSOR_TYPE_TO_NP_TYPE[t.data_type]
    t.raw_data = np.zeros(list(t.dims), dtype).tobytes()
    del t.external_data[:]
    t.data_location = onnx.TensorProto.DEFAULT


def _fill_external(graph):
    for t in graph.initializer:
        _fill_tensor(t)
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                _fill_tensor(attr.t)
            for t in attr.tensors:
                _fill_tensor(t)
            for g in list(attr.graphs) + ([attr.g] if attr.HasField("g")
                                          else []):
                _fill_external(g)


def _import(entry):
    b = entry.get("bindings") or ""
    return "import-onnx{%s}" % b if b else "import-onnx"


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_random_placement_splits_into_valid_models(tmp_path, entry):
    src = os.path.join(CORPUS, entry["file"])
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps(CLUSTER))
    ir = subprocess.run([dp_opt(), "-passes=" + _import(entry), "-S", src],
                        capture_output=True, text=True, timeout=300)
    assert ir.returncode == 0, ir.stderr
    ops = re.findall(r"^\s*op @(\S+) =", ir.stdout, re.M)
    assert ops
    rng = random.Random(entry["file"])
    placement = {op: "cpu:%d" % rng.randrange(3) for op in ops}
    (tmp_path / "p.json").write_text(json.dumps({"placement": placement}))
    proc = subprocess.run(
        [dp_opt(), "-passes=%s,cost-annotate,place{algo=given,file=%s},"
         "emit{format=split,out=%s/s}" % (_import(entry), tmp_path / "p.json",
                                          tmp_path),
         "-cluster=" + str(cluster), "-disable-output", src],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with open(str(tmp_path / "s.split.json")) as f:
        manifest = json.load(f)
    files = [seg["file"] for seg in manifest["segments"]]
    assert len(files) >= 2, entry["file"]
    newer = []
    for name in files:
        seg = onnx.load(str(tmp_path / name), load_external_data=False)
        if seg.ir_version > onnx.IR_VERSION:
            # The segments keep the model's IR version, which this onnx
            # cannot check (emit checked them as import-onnx reads them).
            newer.append(name)
            continue
        onnx.checker.check_model(_weights_as_inputs(seg), full_check=True)
    if newer:
        pytest.skip("IR %d is newer than this onnx's checker (%d): %d "
                    "segments checked by emit only"
                    % (seg.ir_version, onnx.IR_VERSION, len(newer)))
