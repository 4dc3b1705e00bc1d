"""What dp places runs: torchvision models this runtime was not written
for, exported with their weights, placed by dp-opt (search placers, so
the devices depend on each other both ways), emitted, and run by the
runtime in one process and with one rank per device; and the segments of
emit{format=split} run in the manifest's order."""

import json
import os
import subprocess

import numpy as np
import pytest
import torch
import torchvision

from conftest import (dp_opt, export, max_rel_err, randomize_batchnorm,
                      run_runtime)

import dp_torch

TOL = 1e-4


def _model(name):
    torch.manual_seed(0)
    if name == "resnet18":
        m = torchvision.models.resnet18(weights=None, num_classes=10)
    elif name == "mobilenet_v2":
        m = torchvision.models.mobilenet_v2(weights=None, num_classes=10)
    else:
        m = torchvision.models.squeezenet1_1(weights=None, num_classes=10)
    return randomize_batchnorm(m)


def _place(tmp, cluster, algo, train=False):
    # Colocation keeps a training step's backward with its forward; an
    # inference graph is placed op by op.
    passes = "import-onnx,%scost-annotate,%splace{algo=%s}," \
        "emit{format=onnx+split+device-map,out=%s/placed}" % (
            "training-graph," if train else "",
            "colocate," if train else "", algo, tmp)
    subprocess.run([dp_opt(), "-passes=" + passes, "-cluster=" + cluster,
                    "-seed=1", "-disable-output", str(tmp / "m.onnx")],
                   check=True, capture_output=True, timeout=300)
    model = dp_torch.PlacedGraph(str(tmp / "placed.placed.onnx"))
    return model


PLACERS = {"resnet18": "metis,devices=all",
           "mobilenet_v2": "expert",
           "squeezenet1_1": "anneal,evals=300"}


@pytest.mark.parametrize("name", sorted(PLACERS))
def test_placed_by_dp_runs_as_torch_computes(tmp_path, two_cpus, name):
    m = _model(name)
    x = torch.randn(2, 3, 64, 64)
    export(m, (x,), str(tmp_path / "m.onnx"), ["x"], ["y"])
    np.savez(str(tmp_path / "in.npz"), x=x.numpy())
    graph = _place(tmp_path, two_cpus, PLACERS[name])
    # Both workers run nodes, or the test says nothing about ranks.
    assert graph.devices == ["cpu:0", "cpu:1"]
    with torch.no_grad():
        ref = m(x).numpy()
    for nproc in (None, len(graph.devices)):
        args = ["run", "placed.placed.onnx", "--steps", "1", "--warmup",
                "0", "--inputs", "in.npz", "--outputs", "out.npz",
                "--require-weights"]
        if nproc:
            args += ["--nproc", str(nproc)]
        run_runtime(args, tmp_path)
        got = np.load(str(tmp_path / "out.npz"))["y"]
        assert max_rel_err(got, ref) < TOL, nproc


def test_split_segments_run_in_manifest_order(tmp_path, two_cpus):
    m = _model("resnet18")
    x = torch.randn(2, 3, 64, 64)
    export(m, (x,), str(tmp_path / "m.onnx"), ["x"], ["y"])
    _place(tmp_path, two_cpus, "metis,devices=all")
    manifest = json.loads((tmp_path / "placed.split.json").read_text())
    segments = manifest["segments"]
    assert len(segments) >= 2
    values = {"x": x}
    with torch.no_grad():
        for seg in segments:
            part = dp_torch.load(str(tmp_path / seg["file"]),
                                 require_weights=True)
            feeds = {n: values[n] for n in part.graph.inputs}
            outs = part(**feeds)
            if not isinstance(outs, tuple):
                outs = (outs,)
            values.update(zip(part.graph.outputs, outs))
        ref = m(x).numpy()
    assert max_rel_err(values["y"].numpy(), ref) < TOL


def test_training_placement_runs(tmp_path, two_cpus):
    """A placement of the training step (placed with training-graph) runs
    as a training step on both ranks, and its loss is the forward's."""
    m = _model("squeezenet1_1")
    x = torch.randn(2, 3, 64, 64)
    export(m, (x,), str(tmp_path / "m.onnx"), ["x"], ["y"])
    np.savez(str(tmp_path / "in.npz"), x=x.numpy())
    graph = _place(tmp_path, two_cpus, "metis,devices=all", train=True)
    assert len(graph.devices) == 2
    args = ["run", "placed.placed.onnx", "--train", "--steps", "2",
            "--warmup", "0", "--inputs", "in.npz", "--report", "r.json",
            "--require-weights"]
    if len(graph.devices) > 1:
        args += ["--nproc", str(len(graph.devices))]
    run_runtime(args, tmp_path)
    report = json.loads((tmp_path / "r.json").read_text())
    with torch.no_grad():
        want = float(m(x).sum())
    assert abs(report["loss"] - want) <= 1e-4 * max(1.0, abs(want))


def test_profile_names_forward_and_backward(tmp_path, two_cpus):
    """--profile writes a trace whose regions cost-annotate{profile=}
    reads: the forward op and its '/grad' op get profiled times."""
    m = _model("squeezenet1_1")
    x = torch.randn(1, 3, 32, 32)
    export(m, (x,), str(tmp_path / "m.onnx"), ["x"], ["y"])
    subprocess.run([dp_opt(), "-passes=import-onnx,cost-annotate,"
                    "place{algo=single,device=cpu:0},"
                    "emit{format=onnx,out=%s/one}" % tmp_path,
                    "-cluster=" + two_cpus, "-disable-output",
                    str(tmp_path / "m.onnx")], check=True,
                   capture_output=True, timeout=300)
    run_runtime(["run", "one.placed.onnx", "--train", "--steps", "1",
                 "--warmup", "0", "--profile", "trace.json"], tmp_path)
    out = subprocess.run(
        [dp_opt(), "-passes=import-onnx,training-graph,"
         "cost-annotate{profile=trace.json,profile-device=core}", "-S",
         "-cluster=" + two_cpus, "one.placed.onnx"], cwd=str(tmp_path),
        check=True, capture_output=True, text=True, timeout=300).stdout
    conv = [l for l in out.splitlines() if "/features/features.0/Conv\"" in l
            or "/features/features.0/Conv/grad\"" in l]
    assert len(conv) == 2, out[:2000]
    assert all('cost_source = "profile"' in l for l in conv), conv
    # The three profiled steps (each a profiler session of its own) follow
    # one another in the trace's time.
    with open(tmp_path / "trace.json") as f:
        events = json.load(f)
    losses = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                    if e.get("name") == "loss" and e.get("ph") == "X")
    assert len(losses) == 3, losses
    assert all(a[1] <= b[0] for a, b in zip(losses, losses[1:])), losses


def test_placed_model_keeps_the_shapes_it_was_placed_at(tmp_path, two_cpus):
    """A model exported with a symbolic batch, imported at batch=4: the
    placed model declares the batch dp placed it at (ONNX's checker and
    shape inference accept it), so the runtime times it without
    --inputs."""
    import onnx
    from conftest import MLP
    torch.onnx.export(MLP(), (torch.randn(2, 16),), str(tmp_path / "m.onnx"),
                      opset_version=14, input_names=["x"],
                      output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    src = onnx.load(str(tmp_path / "m.onnx"))
    assert src.graph.input[0].type.tensor_type.shape.dim[0].dim_param
    subprocess.run([dp_opt(), "-passes=import-onnx{batch=4},cost-annotate,"
                    "place{algo=single,device=cpu:0},"
                    "emit{format=onnx+split,out=%s/placed}" % tmp_path,
                    "-cluster=" + two_cpus, "-disable-output",
                    str(tmp_path / "m.onnx")],
                   check=True, capture_output=True, timeout=300)
    placed = onnx.load(str(tmp_path / "placed.placed.onnx"))
    dims = lambda vi: [d.dim_value if d.HasField("dim_value") else None
                       for d in vi.type.tensor_type.shape.dim]
    assert dims(placed.graph.input[0]) == [4, 16]
    assert dims(placed.graph.output[0])[0] == 4
    onnx.checker.check_model(placed, full_check=True)
    run_runtime(["run", "placed.placed.onnx", "--steps", "1", "--warmup",
                 "0"], tmp_path)


def test_split_declares_shapes_the_export_left_out(tmp_path, two_cpus):
    """torch's exports declare some tensors with a type but no shape; one
    that crosses segments becomes a segment's input and output, which
    ONNX's checker refuses without a shape: emit declares the shape the
    placed graph has for it."""
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["a"], name="relu"),
         helper.make_node("Neg", ["a"], ["y"], name="neg")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        value_info=[helper.make_tensor_value_info("a", TensorProto.FLOAT,
                                                  None)])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 14)])
    assert not model.graph.value_info[0].type.tensor_type.HasField("shape")
    onnx.save(model, str(tmp_path / "m.onnx"))
    (tmp_path / "p.json").write_text(json.dumps(
        {"placement": {"relu": "cpu:0", "neg": "cpu:1"}}))
    subprocess.run([dp_opt(), "-passes=import-onnx,cost-annotate,"
                    "place{algo=given,file=%s/p.json},"
                    "emit{format=split,out=%s/placed}" % (tmp_path, tmp_path),
                    "-cluster=" + two_cpus, "-disable-output",
                    str(tmp_path / "m.onnx")],
                   check=True, capture_output=True, timeout=300)
    parts = ["placed.cpu_0.0.onnx", "placed.cpu_1.0.onnx"]
    for part in parts:
        seg = onnx.load(str(tmp_path / part))
        onnx.checker.check_model(seg, full_check=True)
        declared = [vi for vi in list(seg.graph.input) +
                    list(seg.graph.output) if vi.name == "a"]
        assert declared, part
        assert [d.dim_value for d in
                declared[0].type.tensor_type.shape.dim] == [2, 3]


def _run_dp_opt(tmp, cluster, passes):
    """dp-opt -passes=PASSES on tmp/m.onnx; the finished process."""
    return subprocess.run(
        [dp_opt(), "-passes=" + passes, "-cluster=" + cluster,
         "-disable-output", str(tmp / "m.onnx")],
        capture_output=True, text=True, timeout=300)


class _EmptyMemory(torch.nn.Module):
    """A block that concatenates its (empty) memory with its input, as
    recurrent and transformer-XL-style modules do before their first
    step: torch.cat skips an empty 1-D tensor among rank-3 ones."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mem", torch.empty(0))
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(torch.relu(torch.cat([self.mem, x], dim=0)))


def test_empty_concat_input_is_dropped_with_a_note(tmp_path, two_cpus):
    """torch's export keeps the empty memory as a Concat input (and
    declares the output rank-1, from its own inference); import-onnx drops
    the input and infers the shapes anew, saying both; the placed model
    passes ONNX's checker and computes what torch does."""
    import onnx
    m = _EmptyMemory().eval()
    x = torch.randn(2, 3, 4)
    export(m, (x,), str(tmp_path / "m.onnx"), ["x"], ["y"])
    src = onnx.load(str(tmp_path / "m.onnx"))
    concat = [n for n in src.graph.node if n.op_type == "Concat"]
    assert concat and len(concat[0].input) == 2
    np.savez(str(tmp_path / "in.npz"), x=x.numpy())
    proc = _run_dp_opt(tmp_path, two_cpus, "import-onnx,cost-annotate,"
                       "place{algo=expert},emit{format=onnx,out=%s/placed}"
                       % tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "dropped the empty 1-D input '%s' of Concat" % \
        concat[0].input[0] in proc.stderr
    assert "graph output 'y'" in proc.stderr
    placed = onnx.load(str(tmp_path / "placed.placed.onnx"))
    onnx.checker.check_model(placed, full_check=True)
    with torch.no_grad():
        ref = m(x).numpy()
    run_runtime(["run", "placed.placed.onnx", "--steps", "1", "--warmup",
                 "0", "--inputs", "in.npz", "--outputs", "out.npz"],
                tmp_path)
    got = np.load(str(tmp_path / "out.npz"))["y"]
    assert got.shape == ref.shape
    assert max_rel_err(got, ref) < TOL


def _accelerate_missing(model, device_map):
    """The parameters accelerate finds missing from a device_map: those
    that no key covers (the key itself, or a module above it; "" covers
    all)."""
    keys = set(device_map)
    missing = []
    for name, _ in model.named_parameters():
        parts = name.split(".")
        if "" in keys or any(".".join(parts[:i]) in keys
                             for i in range(1, len(parts) + 1)):
            continue
        missing.append(name)
    return missing


@pytest.mark.parametrize("folding", [True, False])
def test_folded_batchnorm_is_warned_of(tmp_path, two_cpus, folding):
    """torchvision's resnet18 exported in eval mode (torch.onnx.export's
    default, TrainingMode.EVAL) has its BatchNorms folded into the
    convolutions: its device_map leaves the BatchNorm parameters out, as
    accelerate's rule finds, and a training step built from it trains the
    folded weights. emit and training-graph say so then, and not for the
    same model exported with TrainingMode.PRESERVE."""
    m = _model("resnet18")
    x = torch.randn(2, 3, 32, 32)
    mode = (torch.onnx.TrainingMode.EVAL if folding
            else torch.onnx.TrainingMode.PRESERVE)
    torch.onnx.export(m, (x,), str(tmp_path / "m.onnx"), opset_version=14,
                      training=mode, input_names=["x"], output_names=["y"])
    proc = _run_dp_opt(tmp_path, two_cpus, "import-onnx,cost-annotate,"
                       "place{algo=expert},emit{format=device-map,"
                       "out=%s/placed}" % tmp_path)
    assert proc.returncode == 0, proc.stderr
    with open(str(tmp_path / "placed.device_map.json")) as f:
        device_map = json.load(f)
    missing = _accelerate_missing(m, device_map)
    warned = "the export folded BatchNorm" in proc.stderr
    assert warned == folding, proc.stderr
    assert bool(missing) == folding, missing
    if folding:
        assert "bn1.weight" in missing
    proc = subprocess.run(
        [dp_opt(), "-passes=import-onnx,training-graph", "-disable-output",
         str(tmp_path / "m.onnx")], capture_output=True, text=True,
        timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert ("training-graph: warning:" in proc.stderr) == folding, \
        proc.stderr


class _Detections(torch.nn.Module):
    """Keeps the scores above a threshold, as a detector's post-processing
    does: how many depends on the values (torch exports NonZero)."""

    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        scores = self.head(x).flatten()
        kept = scores[torch.nonzero(scores > 0).flatten()]
        return kept.sum().unsqueeze(0)


def test_value_dependent_dimension_takes_a_bound(tmp_path, two_cpus):
    """torch's export of a value-dependent selection: dp's error names
    the option for the exporter's tensor; with it the model imports at
    the bound, places, and the placed model runs as torch computes."""
    import re
    m = _Detections().eval()
    x = torch.randn(3, 8)
    export(m, (x,), str(tmp_path / "m.onnx"), ["x"], ["y"])
    passes = "cost-annotate,place{algo=expert},emit{format=onnx,out=%s/p}" \
        % tmp_path
    proc = _run_dp_opt(tmp_path, two_cpus, "import-onnx," + passes)
    assert proc.returncode == 1
    hint = re.search(r"import-onnx\{bound=([^:]+):N\}", proc.stderr)
    assert hint, proc.stderr
    proc = _run_dp_opt(tmp_path, two_cpus, "import-onnx{bound=%s:12},"
                       % hint.group(1) + passes)
    assert proc.returncode == 0, proc.stderr
    np.savez(str(tmp_path / "in.npz"), x=x.numpy())
    run_runtime(["run", "p.placed.onnx", "--steps", "1", "--warmup", "0",
                 "--inputs", "in.npz", "--outputs", "out.npz",
                 "--require-weights"], tmp_path)
    with torch.no_grad():
        ref = m(x).numpy()
    got = np.load(str(tmp_path / "out.npz"))["y"]
    assert max_rel_err(got, ref) < TOL


def test_replica_device_maps_cover_the_model(tmp_path):
    """Two data-parallel replicas of a two-stage pipeline of torchvision's
    resnet18 on p100x4: emit writes replica 0's device_map and replica
    1's, each of which accelerate's rule finds complete for the model,
    the second on the first's devices' copies (gpu:k+2), none shared."""
    m = _model("resnet18")
    x = torch.randn(8, 3, 32, 32)
    torch.onnx.export(m, (x,), str(tmp_path / "m.onnx"), opset_version=14,
                      training=torch.onnx.TrainingMode.PRESERVE,
                      input_names=["x"], output_names=["y"])
    proc = _run_dp_opt(tmp_path, "p100x4",
                       "import-onnx,training-graph,cost-annotate,"
                       "pipeline{replicas=2,microbatches=2},"
                       "place{algo=pipeline,stages=2},emit{format=device-map"
                       "+json,out=%s/placed}" % tmp_path)
    assert proc.returncode == 0, proc.stderr
    maps = []
    for name in ("placed.device_map.json", "placed.replica1.device_map.json"):
        with open(str(tmp_path / name)) as f:
            maps.append(json.load(f))
    for device_map in maps:
        assert _accelerate_missing(m, device_map) == []
    assert list(maps[0]) == list(maps[1])
    assert {maps[1][k] - maps[0][k] for k in maps[0]} == {2}
    assert not set(maps[0].values()) & set(maps[1].values())
    with open(str(tmp_path / "placed.placement.json")) as f:
        placement = json.load(f)
    assert placement["replicas"] == 2
    assert placement["replica_devices"] == {"gpu:0": ["gpu:0", "gpu:2"],
                                            "gpu:1": ["gpu:1", "gpu:3"]}
