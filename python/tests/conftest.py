"""Shared helpers of the runtime's tests: models exported by torch, placed
by hand or by dp-opt, and the runtime run as users run it."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
sys.path.insert(0, PYTHON_DIR)

from dp_torch.graph import node_names  # noqa: E402

# Every run of the runtime in these tests is bounded: a hang is a failure.
RUN_TIMEOUT = 180


def dp_opt():
    """dp-opt of the build tree (DP_OPT, else build/bin/dp-opt)."""
    path = os.environ.get("DP_OPT") or os.path.join(
        os.path.dirname(PYTHON_DIR), "build", "bin", "dp-opt")
    if not os.path.isfile(path):
        pytest.fail("dp-opt not found at %s: build dp first or set DP_OPT"
                    % path)
    return os.path.abspath(path)


def export(module, args, path, input_names, output_names, training=False):
    """torch.onnx.export as users call it, with the weights inside."""
    mode = (torch.onnx.TrainingMode.TRAINING if training
            else torch.onnx.TrainingMode.PRESERVE)
    torch.onnx.export(module, args, path, opset_version=14,
                      do_constant_folding=False, training=mode,
                      input_names=input_names, output_names=output_names)
    return path


def place_by_hand(src, dst, device_of):
    """Writes src with a dp.placement: device_of(index, name) per node."""
    model = onnx.load(src, load_external_data=False)
    names = node_names(model.graph)
    placement = {n: device_of(i, n) for i, n in enumerate(names)}
    entry = model.metadata_props.add()
    entry.key = "dp.placement"
    entry.value = json.dumps(placement)
    onnx.save(model, dst)
    return placement


def run_runtime(args, cwd, expect_ok=True, timeout=RUN_TIMEOUT):
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    proc = subprocess.run([sys.executable, "-m", "dp_torch"] + args,
                          cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if expect_ok and proc.returncode != 0:
        raise AssertionError("dp_torch %s failed (%d):\n%s"
                             % (" ".join(args), proc.returncode,
                                proc.stderr))
    return proc


class MLP(torch.nn.Module):
    """Two linear layers with a Relu between them: sizes (in, hidden,
    out)."""

    def __init__(self, sizes=(16, 32, 4)):
        super().__init__()
        self.fc1 = torch.nn.Linear(sizes[0], sizes[1])
        self.fc2 = torch.nn.Linear(sizes[1], sizes[2])

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def randomize_batchnorm(module):
    """Gives every BatchNorm2d of module running statistics other than
    the defaults (mean 0, variance 1), so that an export that drops or
    folds them computes something else; returns the module in eval
    mode."""
    with torch.no_grad():
        for mod in module.modules():
            if isinstance(mod, torch.nn.BatchNorm2d):
                mod.running_mean.normal_(0, 0.1)
                mod.running_var.uniform_(0.5, 1.5)
    return module.eval()


def max_rel_err(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-12))


TWO_CPUS_CLUSTER = {
    "name": "two-cpus",
    "device_types": [{"name": "core", "kind": "cpu",
                      "peak_flops": {"f32": 5.0e10},
                      "memory_bandwidth": 1.0e10, "memory": 8.0e9,
                      "launch_overhead": 1.0e-5}],
    "devices": [{"name": "cpu:0", "type": "core"},
                {"name": "cpu:1", "type": "core"}],
    # A fast link, so that search placers spread work over both workers.
    "links": [{"between": ["cpu:0", "cpu:1"], "bandwidth": 1.0e11,
               "latency": 1.0e-6}],
}


@pytest.fixture
def two_cpus(tmp_path):
    path = tmp_path / "two-cpus.json"
    path.write_text(json.dumps(TWO_CPUS_CLUSTER))
    return str(path)


def have_tool(name):
    return shutil.which(name) is not None
