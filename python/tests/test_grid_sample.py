"""GridSample, added through the op registry (include/dp/IR/Ops.def, one
record): a model that uses it is imported at opsets 17 and 20 (whose modes
are renamed), costed as an interpolation, trained with its gradient op,
placed and emitted by dp-opt, and the runtime's kernel computes bilinear
sampling as the ONNX operator defines it, written out here in numpy."""

import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import dp_opt, max_rel_err, run_runtime
from dp_torch.graph import PlacedGraph

X_SHAPE = [2, 3, 5, 6]
GRID_SHAPE = [2, 4, 7, 2]


def _model(path, opset, align_corners):
    node = helper.make_node(
        "GridSample", ["x", "grid"], ["y"], name="sample",
        mode="linear" if opset >= 20 else "bilinear",
        padding_mode="zeros", align_corners=align_corners)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, X_SHAPE),
         helper.make_tensor_value_info("grid", TensorProto.FLOAT,
                                       GRID_SHAPE)],
        [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, X_SHAPE[:2] + GRID_SHAPE[1:3])])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, path)


def _bilinear(x, grid, align_corners):
    """ONNX GridSample, mode bilinear, padding zeros: each output point
    interpolates the four pixels around the grid point, a pixel outside the
    image counting 0."""
    n, c, h, w = x.shape
    _, oh, ow, _ = grid.shape
    y = np.zeros((n, c, oh, ow), np.float64)

    def unnormalize(v, size):
        if align_corners:
            return (v + 1) / 2 * (size - 1)
        return ((v + 1) * size - 1) / 2

    def pixel(b, row, col):
        if 0 <= row < h and 0 <= col < w:
            return x[b, :, row, col]
        return np.zeros(c)

    for b in range(n):
        for i in range(oh):
            for j in range(ow):
                px = unnormalize(grid[b, i, j, 0], w)
                py = unnormalize(grid[b, i, j, 1], h)
                x0, y0 = int(np.floor(px)), int(np.floor(py))
                dx, dy = px - x0, py - y0
                y[b, :, i, j] = (
                    pixel(b, y0, x0) * (1 - dx) * (1 - dy) +
                    pixel(b, y0, x0 + 1) * dx * (1 - dy) +
                    pixel(b, y0 + 1, x0) * (1 - dx) * dy +
                    pixel(b, y0 + 1, x0 + 1) * dx * dy)
    return y


@pytest.mark.parametrize("opset,align_corners", [(17, 0), (17, 1), (20, 0)])
def test_grid_sample_is_placed_and_computed(tmp_path, opset, align_corners):
    src = str(tmp_path / "m.onnx")
    _model(src, opset, align_corners)
    ir = subprocess.run(
        [dp_opt(), "-cluster=p100x4", "-S",
         "-passes=import-onnx,training-graph,cost-annotate", src],
        check=True, capture_output=True, text=True, timeout=120).stdout
    sample = next(l for l in ir.splitlines() if "= GridSample(" in l)
    # An interpolation, not an unknown op: 4 FLOPs per output element.
    assert "unknown op kind" not in sample
    assert "flops = %d" % (4 * 2 * 3 * 4 * 7) in sample
    assert "dp::GridSampleGrad(" in ir
    subprocess.run(
        [dp_opt(), "-cluster=p100x4", "-disable-output",
         "-passes=import-onnx,cost-annotate,place{algo=single},"
         "emit{format=onnx,out=%s/m}" % tmp_path, src],
        check=True, capture_output=True, text=True, timeout=120)
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, X_SHAPE).astype(np.float32)
    # Some points outside [-1, 1]: the zero padding counts.
    grid = rng.uniform(-1.2, 1.2, GRID_SHAPE).astype(np.float32)
    np.savez(str(tmp_path / "in.npz"), x=x, grid=grid)
    devices = PlacedGraph(str(tmp_path / "m.placed.onnx")).devices
    run_runtime(["run", "m.placed.onnx", "--steps", "1", "--warmup", "0",
                 "--inputs", "in.npz", "--outputs", "out.npz",
                 "--device-map", ",".join("%s=cpu" % d for d in devices)],
                tmp_path)
    got = np.load(str(tmp_path / "out.npz"))["y"]
    want = _bilinear(x.astype(np.float64), grid.astype(np.float64),
                     align_corners)
    assert got.shape == want.shape
    assert max_rel_err(got, want) < 1e-4
