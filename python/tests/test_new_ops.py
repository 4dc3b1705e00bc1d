"""Ops added after opset 17 (Gelu, Mish, GroupNormalization), which
import-onnx checks as opset-17 expansions but keeps as the user's ops: a
model that uses them is imported, placed and emitted by dp-opt, and the
runtime computes what torch computes."""

import subprocess

import numpy as np
import onnx
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

from conftest import dp_opt, max_rel_err, run_runtime
from dp_torch.graph import PlacedGraph

TOL = 1e-4
SHAPE = [2, 6, 5]
GROUPS = 3


def _model(opset, path):
    rng = np.random.default_rng(0)
    # Per group before opset 21, per channel from it.
    n = GROUPS if opset < 21 else SHAPE[1]
    scale = rng.uniform(0.5, 1.5, n).astype(np.float32)
    bias = rng.normal(0, 0.1, n).astype(np.float32)
    nodes = [
        helper.make_node("GroupNormalization", ["x", "scale", "bias"],
                         ["gn"], name="gn", num_groups=GROUPS,
                         epsilon=1e-3),
        helper.make_node("Mish", ["x"], ["mish"], name="mish"),
    ]
    outputs = ["gn", "mish"]
    if opset >= 20:
        nodes += [
            helper.make_node("Gelu", ["x"], ["gelu"], name="gelu"),
            helper.make_node("Gelu", ["x"], ["gelu_tanh"], name="gelu_tanh",
                             approximate="tanh"),
        ]
        outputs += ["gelu", "gelu_tanh"]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, SHAPE)
         for o in outputs],
        [numpy_helper.from_array(scale, "scale"),
         numpy_helper.from_array(bias, "bias")])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    onnx.save(model, path)
    return scale, bias, outputs


def _reference(x, scale, bias, opset):
    x = torch.from_numpy(x)
    c = SHAPE[1]
    scale, bias = torch.from_numpy(scale), torch.from_numpy(bias)
    if opset < 21:
        scale = scale.repeat_interleave(c // GROUPS)
        bias = bias.repeat_interleave(c // GROUPS)
    # Normalized over each group's channels and positions, by hand.
    g = x.reshape(SHAPE[0], GROUPS, -1)
    mean = g.mean(-1, keepdim=True)
    var = ((g - mean) ** 2).mean(-1, keepdim=True)
    normal = ((g - mean) / torch.sqrt(var + 1e-3)).reshape(SHAPE)
    return {
        "gn": (normal * scale[None, :, None] + bias[None, :, None]).numpy(),
        "mish": (x * torch.tanh(F.softplus(x))).numpy(),
        "gelu": (0.5 * x * (1 + torch.erf(x / np.sqrt(2)))).numpy(),
        "gelu_tanh": (0.5 * x * (1 + torch.tanh(
            np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))).numpy(),
    }


@pytest.mark.parametrize("opset", [18, 20, 21])
def test_placed_new_ops_compute_what_torch_computes(tmp_path, opset):
    src = str(tmp_path / "m.onnx")
    scale, bias, outputs = _model(opset, src)
    subprocess.run(
        [dp_opt(), "-cluster=p100x4", "-disable-output",
         "-passes=import-onnx,cost-annotate,place{algo=expert},"
         "emit{format=onnx,out=%s/m}" % tmp_path, src],
        check=True, capture_output=True, text=True, timeout=120)
    x = np.random.default_rng(1).normal(0, 1, SHAPE).astype(np.float32)
    np.savez(str(tmp_path / "in.npz"), x=x)
    # Every device the placement uses on the CPU (a map entry for a device
    # it does not use is an error).
    devices = PlacedGraph(str(tmp_path / "m.placed.onnx")).devices
    run_runtime(["run", "m.placed.onnx", "--steps", "1", "--warmup", "0",
                 "--inputs", "in.npz", "--outputs", "out.npz",
                 "--require-weights", "--device-map",
                 ",".join("%s=cpu" % d for d in devices)],
                tmp_path)
    got = np.load(str(tmp_path / "out.npz"))
    want = _reference(x, scale, bias, opset)
    for name in outputs:
        assert got[name].shape == want[name].shape, name
        assert max_rel_err(got[name], want[name]) < TOL, name
