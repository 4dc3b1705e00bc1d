"""--profile's calibration: the profiler's own overhead, measured before the
profiled steps, written into the trace and taken off by cost-annotate."""

import json
import math
import re
import subprocess

import pytest
import torch

from conftest import MLP, dp_opt, export, place_by_hand, run_runtime


@pytest.fixture
def profiled(tmp_path):
    """A training step of a small MLP on one CPU, profiled; its trace."""
    export(MLP(), (torch.randn(8, 16),), str(tmp_path / "mlp.onnx"), ["x"],
           ["y"])
    place_by_hand(str(tmp_path / "mlp.onnx"), str(tmp_path / "p.onnx"),
                  lambda i, n: "cpu:0")
    run_runtime(["run", "p.onnx", "--train", "--steps", "1", "--warmup", "0",
                 "--threads", "1", "--profile", "trace.json",
                 "--profile-steps", "2"], tmp_path)
    with open(tmp_path / "trace.json") as f:
        return json.load(f)


def test_trace_records_profiler_overhead(profiled):
    """The trace stays a list of events; its first is the calibration, a
    metadata event with positive, finite figures."""
    assert isinstance(profiled, list)
    calibrations = [e for e in profiled
                    if e.get("name") == "dp_profiler_overhead"]
    assert len(calibrations) == 1, calibrations
    event = profiled[0]
    assert event is calibrations[0]
    assert event["ph"] == "M"
    args = event["args"]
    for key in ("region_us", "op_us"):
        value = args[key]
        assert isinstance(value, float), args
        assert math.isfinite(value) and value > 0, args
    assert isinstance(args["samples"], int) and args["samples"] > 0, args
    # The profiled steps follow, as before.
    assert any(e.get("name") == "loss" and e.get("ph") == "X"
               for e in profiled)


def _gemm_times(tmp_path, trace, two_cpus):
    out = subprocess.run(
        [dp_opt(), "-passes=import-onnx,training-graph,"
         "cost-annotate{profile=%s,profile-device=core}" % trace, "-S",
         "-cluster=" + two_cpus, "p.onnx"], cwd=str(tmp_path), check=True,
        capture_output=True, text=True, timeout=300).stdout
    times = {}
    for line in out.splitlines():
        m = re.search(r'op @"?([^ "]*Gemm[^ "]*)"? = .*time\.core = '
                      r'([0-9.e+-]+)', line)
        if m:
            times[m.group(1)] = float(m.group(2))
    return times


def test_cost_annotate_removes_the_overhead(profiled, tmp_path, two_cpus):
    """cost-annotate reads the runtime's trace with the calibration, and
    each region's time is less than without it."""
    plain = [e for e in profiled if e.get("name") != "dp_profiler_overhead"]
    (tmp_path / "plain.json").write_text(json.dumps(plain))
    corrected = _gemm_times(tmp_path, "trace.json", two_cpus)
    uncorrected = _gemm_times(tmp_path, "plain.json", two_cpus)
    assert corrected and corrected.keys() == uncorrected.keys(), \
        (corrected, uncorrected)
    for name, t in corrected.items():
        assert 0 < t < uncorrected[name], (name, t, uncorrected[name])


def test_trace_records_dispatch_per_node(profiled):
    """The second event is the runtime's time per node between kernels,
    measured on DISPATCH_STEPS unprofiled steps of every node."""
    from dp_torch.profiling import DISPATCH_STEPS
    event = profiled[1]
    assert event["ph"] == "M" and event["name"] == "dp_dispatch", event
    args = event["args"]
    assert isinstance(args["node_us"], float), args
    # Python between nodes: more than nothing, less than a millisecond.
    assert 0 < args["node_us"] < 1000, args
    # The MLP's three nodes (Gemm, Relu, Gemm) in each step.
    assert args["nodes"] == DISPATCH_STEPS * 3, args
    assert sum(e.get("name") == "dp_dispatch" for e in profiled) == 1


def test_cost_annotate_adds_dispatch_to_forward_ops(profiled, tmp_path,
                                                   two_cpus):
    """A forward op's time gains the dispatch per node; its backward's
    does not."""
    without = [e for e in profiled if e.get("name") != "dp_dispatch"]
    (tmp_path / "without.json").write_text(json.dumps(without))
    added = profiled[1]["args"]["node_us"] * 1e-6
    got = _gemm_times(tmp_path, "trace.json", two_cpus)
    base = _gemm_times(tmp_path, "without.json", two_cpus)
    forward = [n for n in got if "/grad" not in n and "grad" not in n]
    backward = [n for n in got if n not in forward]
    assert forward and backward, got
    for n in forward:
        assert got[n] == pytest.approx(base[n] + added, rel=1e-6), n
    for n in backward:
        assert got[n] == pytest.approx(base[n], rel=1e-6), n
