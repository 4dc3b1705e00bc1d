"""Bad input: a clear error naming the cause, exit 1, nothing left hanging
(every run has a timeout), no output file."""

import json
import os

import numpy as np
import onnx
import pytest
import torch
from onnx import helper, TensorProto

from conftest import MLP, export, place_by_hand, run_runtime


@pytest.fixture
def mlp(tmp_path):
    torch.manual_seed(0)
    export(MLP((6, 8, 3)).eval(), (torch.randn(4, 6),),
           str(tmp_path / "mlp.onnx"), ["x"], ["y"])
    return tmp_path


def _fails(tmp, args, *needles):
    proc = run_runtime(args, tmp, expect_ok=False)
    assert proc.returncode == 1, proc.stderr
    for n in needles:
        assert n in proc.stderr, proc.stderr
    return proc


def test_device_the_map_cannot_map(mlp):
    place_by_hand(str(mlp / "mlp.onnx"), str(mlp / "p.onnx"),
                  lambda i, n: "tpu:0")
    _fails(mlp, ["run", "p.onnx", "--outputs", "o.npz"],
           "device 'tpu:0': error: the device map cannot map it")
    assert not (mlp / "o.npz").exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs no CUDA")
def test_gpu_without_cuda(mlp):
    place_by_hand(str(mlp / "mlp.onnx"), str(mlp / "p.onnx"),
                  lambda i, n: "gpu:1")
    _fails(mlp, ["run", "p.onnx"], "device 'gpu:1': error: no cuda:1",
           "--device-map gpu:1=cpu")


def test_bad_device_map(mlp):
    place_by_hand(str(mlp / "mlp.onnx"), str(mlp / "p.onnx"),
                  lambda i, n: "gpu:0")
    _fails(mlp, ["run", "p.onnx", "--device-map", "gpu:0"],
           "--device-map: error: expected DP_DEVICE=TORCH_DEVICE, not "
           "'gpu:0'")
    _fails(mlp, ["run", "p.onnx", "--device-map", "gpu:0=warp:3"],
           "'warp:3' is not a torch device")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs no CUDA")
def test_device_map_to_missing_cuda_before_ranks(mlp):
    # One located line from the launcher, before any rank starts: not a
    # traceback from each rank.
    place_by_hand(str(mlp / "mlp.onnx"), str(mlp / "p.onnx"),
                  lambda i, n: "cpu:%d" % (i % 2))
    proc = _fails(mlp, ["run", "p.onnx", "--nproc", "2", "--device-map",
                        "cpu:1=cuda:0"],
                  "--device-map: error: 'cpu:1=cuda:0': no cuda:0 on this "
                  "machine (it has 0 CUDA devices)")
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    # One process too.
    proc = _fails(mlp, ["run", "p.onnx", "--device-map", "cpu:1=cuda:0"],
                  "'cpu:1=cuda:0': no cuda:0 on this machine")
    assert proc.stderr.count("\n") == 1, proc.stderr


def test_device_map_names_an_unused_device(mlp):
    place_by_hand(str(mlp / "mlp.onnx"), str(mlp / "p.onnx"),
                  lambda i, n: "cpu:%d" % (i % 2))
    for extra in ([], ["--nproc", "2"]):
        proc = _fails(mlp, ["run", "p.onnx", "--device-map",
                            "cpu:0=cpu,gpu:3=cpu"] + extra,
                      "--device-map: error: 'gpu:3=cpu' maps gpu:3, which "
                      "the placement of p.onnx does not use (it uses "
                      "cpu:0, cpu:1)")
        assert proc.stderr.count("\n") == 1, proc.stderr


def test_empty_model_file(mlp):
    (mlp / "empty.onnx").write_bytes(b"")
    proc = _fails(mlp, ["run", "empty.onnx"],
                  "empty.onnx: error: empty file")
    assert "not placed by dp" not in proc.stderr
    _fails(mlp, ["run", "empty.onnx", "--nproc", "2"],
           "empty.onnx: error: empty file")


def test_missing_external_weights(mlp):
    model = onnx.load(str(mlp / "mlp.onnx"))
    onnx.save(model, str(mlp / "ext.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="ext.weights",
              size_threshold=0)
    os.remove(str(mlp / "ext.weights"))
    place_by_hand(str(mlp / "ext.onnx"), str(mlp / "p.onnx"),
                  lambda i, n: "cpu:0")
    _fails(mlp, ["run", "p.onnx", "--require-weights"],
           "its external data file", "ext.weights' does not exist")
    # Without --require-weights the model runs on seeded weights, with one
    # warning.
    proc = run_runtime(["run", "p.onnx", "--steps", "1", "--warmup", "0"],
                       mlp)
    assert proc.stderr.count("warning:") == 1, proc.stderr
    assert "initialised from seed 0" in proc.stderr


def test_external_weights_are_read(mlp):
    model = onnx.load(str(mlp / "mlp.onnx"))
    onnx.save(model, str(mlp / "ext.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="ext.weights",
              size_threshold=0)
    place_by_hand(str(mlp / "mlp.onnx"), str(mlp / "a.onnx"),
                  lambda i, n: "cpu:0")
    place_by_hand(str(mlp / "ext.onnx"), str(mlp / "b.onnx"),
                  lambda i, n: "cpu:0")
    np.savez(str(mlp / "in.npz"), x=np.ones((4, 6), np.float32))
    for name in ("a", "b"):
        run_runtime(["run", name + ".onnx", "--steps", "1", "--warmup", "0",
                     "--inputs", "in.npz", "--outputs", name + ".npz",
                     "--require-weights"], mlp)
    a = np.load(str(mlp / "a.npz"))["y"]
    b = np.load(str(mlp / "b.npz"))["y"]
    assert np.array_equal(a, b)


def test_unsupported_op(tmp_path):
    node = helper.make_node("NonMaxSuppression", ["b", "s"], ["y"],
                            name="nms")
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 4, 4]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [None, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("",
                                                                        14)])
    model.metadata_props.add(key="dp.placement",
                             value=json.dumps({"nms": "cpu:0"}))
    onnx.save(model, str(tmp_path / "m.onnx"))
    _fails(tmp_path, ["run", "m.onnx"],
           "node 'nms': error: op type 'NonMaxSuppression' is not supported")


def test_rank_count_does_not_match_the_placement(mlp):
    place_by_hand(str(mlp / "mlp.onnx"), str(mlp / "p.onnx"),
                  lambda i, n: "cpu:%d" % (i % 2))
    _fails(mlp, ["run", "p.onnx", "--nproc", "3", "--report", "r.json"],
           "the placement uses 2 devices (cpu:0, cpu:1), so it runs on 2 "
           "ranks, not 3")
    assert not (mlp / "r.json").exists()


@pytest.mark.parametrize("devices", [1, 2])
def test_nproc_auto_runs_a_rank_per_device(mlp, devices):
    """--nproc auto: as many ranks as the placement has devices (one: this
    process)."""
    place_by_hand(str(mlp / "mlp.onnx"), str(mlp / "p.onnx"),
                  lambda i, n: "cpu:%d" % (i % devices))
    run_runtime(["run", "p.onnx", "--nproc", "auto", "--steps", "1",
                 "--warmup", "0", "--report", "r.json"], mlp)
    assert json.loads((mlp / "r.json").read_text())["ranks"] == devices


def test_nproc_that_is_no_number(mlp):
    place_by_hand(str(mlp / "mlp.onnx"), str(mlp / "p.onnx"),
                  lambda i, n: "cpu:0")
    proc = run_runtime(["run", "p.onnx", "--nproc", "two"], mlp,
                       expect_ok=False)
    assert proc.returncode == 2, proc.stderr
    assert "--nproc: must be 'auto' or a number of ranks, not 'two'" in \
        proc.stderr, proc.stderr


def test_model_not_placed_by_dp(mlp):
    _fails(mlp, ["run", "mlp.onnx"],
           "the model was not placed by dp (no 'dp.placement' metadata)")


def test_node_missing_from_the_placement(mlp):
    place_by_hand(str(mlp / "mlp.onnx"), str(mlp / "p.onnx"),
                  lambda i, n: "cpu:0")
    model = onnx.load(str(mlp / "p.onnx"))
    placement = json.loads(model.metadata_props[0].value)
    first = next(iter(placement))
    del placement[first]
    model.metadata_props[0].value = json.dumps(placement)
    onnx.save(model, str(mlp / "q.onnx"))
    _fails(mlp, ["run", "q.onnx"],
           "node '%s': error: no device in the placement" % first)


def test_not_an_onnx_file(tmp_path):
    (tmp_path / "x.onnx").write_text("not a model")
    _fails(tmp_path, ["run", "x.onnx"], "x.onnx: error: cannot read")


def test_unreadable_inputs(mlp):
    place_by_hand(str(mlp / "mlp.onnx"), str(mlp / "p.onnx"),
                  lambda i, n: "cpu:0")
    (mlp / "in.npz").write_text("garbage")
    _fails(mlp, ["run", "p.onnx", "--inputs", "in.npz"],
           "in.npz: error: cannot read the inputs")


def test_a_failing_rank_stops_the_others(mlp):
    # Rank 1 cannot map its device, rank 0 can: rank 0 must not wait for
    # rank 1 forever; the launcher stops it.
    place_by_hand(str(mlp / "mlp.onnx"), str(mlp / "p.onnx"),
                  lambda i, n: "cpu:0" if i % 2 else "tpu:0")
    _fails(mlp, ["run", "p.onnx", "--nproc", "2", "--timeout", "60"],
           "device 'tpu:0': error: the device map cannot map it")
