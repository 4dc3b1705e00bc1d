"""What emit writes for a pipeline plan computes the model: models
exported by torch (torchvision's resnet18 at a fixed batch, and two
transformer encoder layers with a dynamic batch, imported at a global
batch), planned as a two-stage pipeline by pipeline{} and
place{algo=pipeline}, emitted as stage submodels at the micro-batch size
with the plan in the split manifest. Each micro-batch's slice of the
global batch, run through the stages in order, gives that slice of what
torch computes for the whole batch; the plan lists each stage's tasks in
its schedule's order; and the runtime runs the plan on one rank per stage
to torch's outputs for the global batch."""

import json
import subprocess

import numpy as np
import pytest
import torch
import torchvision

from conftest import (dp_opt, export, max_rel_err, randomize_batchnorm,
                      run_runtime)

import dp_torch

TOL = 1e-4
BATCH = 4
MICRO = 2


def _resnet18():
    torch.manual_seed(0)
    m = torchvision.models.resnet18(weights=None, num_classes=10)
    return randomize_batchnorm(m), torch.randn(BATCH, 3, 32, 32)


def _encoder():
    torch.manual_seed(0)
    layers = [torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0,
                                               batch_first=True)
              for _ in range(2)]
    return torch.nn.Sequential(*layers).eval(), torch.randn(BATCH, 5, 16)


def _export(name, tmp):
    path = str(tmp / "m.onnx")
    if name == "resnet18":
        m, x = _resnet18()
        export(m, (x,), path, ["x"], ["y"])
        return m, x, "import-onnx"
    m, x = _encoder()
    # A dynamic batch: torch's attention reshapes by batch x heads, which
    # no fixed-batch constant could follow; the global batch is given.
    torch.onnx.export(m, (x,), path, opset_version=14,
                      do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE,
                      input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    return m, x, "import-onnx{batch=%d}" % BATCH


def _plan(tmp, cluster, importer, extra="", schedule="1f1b"):
    passes = ("%s,pipeline{microbatches=%d,schedule=%s},%scost-annotate,"
              "place{algo=pipeline},simulate,"
              "emit{format=split+onnx,out=%s/p}" % (
                  importer, MICRO, schedule, extra, tmp))
    subprocess.run([dp_opt(), "-passes=" + passes, "-cluster=" + cluster,
                    "-disable-output", str(tmp / "m.onnx")],
                   check=True, capture_output=True, timeout=300)
    return json.loads((tmp / "p.split.json").read_text())


@pytest.mark.parametrize("name", ["resnet18", "encoder"])
def test_stages_compute_the_model_micro_batch_by_micro_batch(
        tmp_path, two_cpus, name):
    m, x, importer = _export(name, tmp_path)
    manifest = _plan(tmp_path, two_cpus, importer)
    plan = manifest["pipeline"]
    assert plan["microbatches"] == MICRO
    assert plan["batch_axes"] == {"x": 0}
    stages = plan["stages"]
    # Two stages, one segment each, in the manifest's run order.
    assert [s["device"] for s in stages] == ["cpu:0", "cpu:1"]
    assert [s["segment"] for s in stages] == [0, 1]
    assert len(manifest["segments"]) == 2
    parts = [dp_torch.load(str(tmp_path / manifest["segments"][s["segment"]]
                                ["file"]), require_weights=True)
             for s in stages]
    # The first stage takes one micro-batch, not the global batch.
    assert parts[0].graph.sources["x"].shape[0] == BATCH // MICRO
    got = []
    with torch.no_grad():
        for k in range(MICRO):
            size = BATCH // MICRO
            values = {"x": x[k * size:(k + 1) * size]}
            for part in parts:
                outs = part(**{n: values[n] for n in part.graph.inputs})
                if not isinstance(outs, tuple):
                    outs = (outs,)
                values.update(zip(part.graph.outputs, outs))
            got.append(values["y"].numpy())
        ref = m(x).numpy()
    assert max_rel_err(np.concatenate(got), ref) < TOL


def test_training_plan_lists_each_stage_in_schedule_order(tmp_path,
                                                          two_cpus):
    _, _, importer = _export("resnet18", tmp_path)
    for schedule in ("1f1b", "gpipe"):
        plan = _plan(tmp_path, two_cpus, importer, "training-graph,",
                     schedule)["pipeline"]
        assert plan["schedule"] == schedule
        orders = [[tuple(t) for t in s["order"]] for s in plan["stages"]]
        f = [("forward", k) for k in range(MICRO)]
        b = [("backward", k) for k in range(MICRO)]
        if schedule == "gpipe":
            want = [f + b, f + b]
        else:
            # Stage s of p warms up with p - s - 1 forwards, then
            # alternates.
            want = [[f[0], f[1], b[0], b[1]], [f[0], b[0], f[1], b[1]]]
        assert orders == want, schedule


@pytest.mark.parametrize("name", ["resnet18", "encoder"])
def test_runtime_runs_the_plan_on_its_ranks(tmp_path, two_cpus, name):
    m, x, importer = _export(name, tmp_path)
    _plan(tmp_path, two_cpus, importer)
    np.savez(str(tmp_path / "in.npz"), x=x.numpy())
    # One rank per stage: without --nproc the plan is refused, not run
    # as one micro-batch's step.
    proc = run_runtime(["run", "p.placed.onnx", "--steps", "1"], tmp_path,
                       expect_ok=False)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "on 2 ranks, not 1" in proc.stderr, proc.stderr
    run_runtime(["run", "p.placed.onnx", "--nproc", "2", "--steps", "1",
                 "--warmup", "0", "--inputs", "in.npz", "--outputs",
                 "out.npz", "--require-weights", "--timeout", "120"],
                tmp_path)
    with torch.no_grad():
        ref = m(x).numpy()
    assert max_rel_err(np.load(str(tmp_path / "out.npz"))["y"], ref) < TOL
