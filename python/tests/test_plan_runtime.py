"""Plans that run: pipelined micro-batches and data-parallel replicas on
ranks give the plain step's numbers.

A torch model (a chain of layers with a skip connection and a weight
that the first and the last layer share) is planned by dp-opt
(pipeline{} with place{algo=pipeline}), emitted, and run by the runtime
on as many ranks as the plan has devices; its loss, every weight after
two SGD steps and the first step's outputs on the global batch equal
torch's for the same batch (<= 1e-5 relative), for both schedules, 2 and
3 stages, 2 replicas, 2 x 2, and with recomputation. Bad input: clear
errors, no hang."""

import json
import subprocess

import numpy as np
import pytest
import torch
import torch.nn as nn

from conftest import dp_opt, export, max_rel_err, run_runtime

TOL = 1e-5
BATCH = 8
WIDTH = 16
STEPS = 2   # --warmup 1 --steps 1
LR = 0.01


class Chain(nn.Module):
    """Six layers; layer 3 adds layer 1's output (a tensor that skips a
    stage when cut in three), and the last layer reads the first layer's
    weight (shared across stages)."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(WIDTH, WIDTH)
                                    for _ in range(5))

    def forward(self, x):
        h1 = torch.tanh(self.layers[0](x))
        h = torch.tanh(self.layers[1](h1))
        h = torch.tanh(self.layers[2](h)) + h1
        h = torch.tanh(self.layers[3](h))
        h = torch.tanh(self.layers[4](h))
        return nn.functional.linear(h, self.layers[0].weight)


def cluster(n):
    return {
        "name": "cpus%d" % n,
        "device_types": [{"name": "core", "kind": "cpu",
                          "peak_flops": {"f32": 5.0e10},
                          "memory_bandwidth": 1.0e10, "memory": 8.0e9,
                          "launch_overhead": 1.0e-5}],
        "devices": [{"name": "cpu:%d" % i, "type": "core"}
                    for i in range(n)],
        "links": [{"between": ["cpu:%d" % i, "cpu:%d" % j],
                   "bandwidth": 1.0e11, "latency": 1.0e-6}
                  for i in range(n) for j in range(i + 1, n)]}


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("chain")
    torch.manual_seed(0)
    m = Chain()
    x = torch.randn(BATCH, WIDTH)
    export(m, (x,), str(tmp / "m.onnx"), ["x"], ["y"])
    np.savez(str(tmp / "in.npz"), x=x.numpy())
    return m, x, tmp


def plan(tmp, name, stages, replicas, microbatches, schedule,
         recompute=False):
    """Plans m.onnx; returns the placed model's name."""
    path = tmp / ("cluster%d.json" % (stages * replicas))
    path.write_text(json.dumps(cluster(stages * replicas)))
    passes = ("import-onnx,pipeline{microbatches=%d,schedule=%s,replicas=%d"
              "%s},training-graph,cost-annotate,"
              "place{algo=pipeline,stages=%d},simulate,"
              "emit{format=onnx+split,out=%s}"
              % (microbatches, schedule, replicas,
                 ",recompute=true" if recompute else "", stages,
                 tmp / name))
    subprocess.run([dp_opt(), "-passes=" + passes, "-cluster=" + str(path),
                    "-disable-output", str(tmp / "m.onnx")],
                   check=True, capture_output=True, timeout=300)
    return name + ".placed.onnx"


def reference(m, x):
    """torch's loss, first outputs and weights after STEPS SGD steps."""
    ref = Chain()
    ref.load_state_dict(m.state_dict())
    opt = torch.optim.SGD(ref.parameters(), lr=LR)
    loss = outs = None
    for _ in range(STEPS):
        opt.zero_grad()
        y = ref(x.clone().requires_grad_(True))
        total = y.sum()
        if loss is None:
            loss, outs = float(total), y.detach().numpy()
        total.backward()
        opt.step()
    return loss, outs, {k: v.detach().numpy()
                        for k, v in ref.named_parameters()}


CASES = [
    # (schedule, stages, replicas, micro-batches, recompute)
    ("gpipe", 2, 1, 4, False),
    ("1f1b", 2, 1, 4, False),
    ("gpipe", 3, 1, 2, False),
    ("1f1b", 3, 1, 4, False),
    ("1f1b", 1, 2, 2, False),
    ("gpipe", 2, 2, 2, False),
    ("1f1b", 2, 2, 2, False),
    ("1f1b", 2, 1, 4, True),
    ("gpipe", 2, 2, 2, True),
]


@pytest.mark.parametrize("schedule,stages,replicas,micro,recompute", CASES)
def test_plan_step_equals_the_plain_step(chain, schedule, stages, replicas,
                                         micro, recompute):
    m, x, tmp = chain
    name = "p-%s-%d-%d-%d-%d" % (schedule, stages, replicas, micro,
                                 recompute)
    placed = plan(tmp, name, stages, replicas, micro, schedule, recompute)
    check_run(m, x, tmp, name, placed, stages, replicas, micro, recompute)


def test_the_split_manifest_runs_as_the_placed_model(chain):
    """emit's stage models and plan file (the split manifest) run as the
    placed model does; a stage model missing is an error."""
    m, x, tmp = chain
    name = "s-gpipe-2-2-2"
    plan(tmp, name, 2, 2, 2, "gpipe")
    check_run(m, x, tmp, name, name + ".split.json", 2, 2, 2, False)
    manifest = json.loads((tmp / (name + ".split.json")).read_text())
    (tmp / manifest["segments"][1]["file"]).unlink()
    proc = run_runtime(["run", name + ".split.json", "--nproc", "4",
                        "--train"], tmp, expect_ok=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "segment 1: cannot read its file '%s'" % manifest["segments"][1][
        "file"] in proc.stderr, proc.stderr


def check_run(m, x, tmp, name, placed, stages, replicas, micro, recompute):
    """Runs a plan on its ranks and compares with torch."""
    ranks = stages * replicas
    run_runtime(["run", placed, "--nproc", str(ranks), "--train",
                 "--optimizer", "sgd", "--inputs", "in.npz", "--steps", "1",
                 "--warmup", "1", "--outputs", name + ".out.npz",
                 "--save-weights", name + ".w.npz", "--report",
                 name + ".json", "--timeout", "60"], tmp)
    report = json.loads((tmp / (name + ".json")).read_text())
    assert report["ranks"] == ranks
    assert report["plan"]["microbatches"] == micro
    assert report["plan"]["replicas"] == replicas
    assert len(report["plan"]["stages"]) == stages
    assert report["plan"]["recompute"] == recompute
    # Every rank's breakdown, and the prediction beside the measurement.
    assert len(report["devices"]) == ranks
    for d in report["devices"]:
        assert "allreduce_s" in d["breakdown"]
    assert report["predicted"]["step_s"] > 0
    loss, outs, weights = reference(m, x)
    assert abs(report["loss"] - loss) <= TOL * abs(loss)
    got = np.load(str(tmp / (name + ".out.npz")))["y"]
    assert got.shape == outs.shape
    assert max_rel_err(got, outs) < TOL
    saved = np.load(str(tmp / (name + ".w.npz")))
    for k, v in weights.items():
        assert k in saved.files, k
        assert max_rel_err(saved[k], v) < TOL, k


def test_stages_and_replicas_are_the_ranks(chain):
    _, _, tmp = chain
    placed = plan(tmp, "p22", 2, 2, 2, "1f1b")
    proc = run_runtime(["run", placed, "--nproc", "3", "--train"], tmp,
                       expect_ok=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "2 replicas of 2 stages" in proc.stderr, proc.stderr
    assert "on 4 ranks, not 3" in proc.stderr, proc.stderr
    # Without --nproc, a plan of several ranks is refused, not run as one.
    proc = run_runtime(["run", placed, "--train"], tmp, expect_ok=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "on 4 ranks, not 1" in proc.stderr, proc.stderr


def test_a_batch_the_plan_does_not_divide_is_an_error(chain):
    _, x, tmp = chain
    placed = plan(tmp, "p22", 2, 2, 2, "1f1b")
    np.savez(str(tmp / "odd.npz"), x=np.zeros((7, WIDTH), np.float32))
    np.savez(str(tmp / "big.npz"), x=np.zeros((16, WIDTH), np.float32))
    for inputs, why in (("odd.npz", "which 2 replicas x 2 micro-batches "
                         "do not divide"),
                        ("big.npz", "a micro-batch of 4")):
        proc = run_runtime(["run", placed, "--nproc", "4", "--train",
                            "--inputs", inputs, "--timeout", "60"], tmp,
                           expect_ok=False)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        assert why in proc.stderr, proc.stderr
        assert "global batch of 8" in proc.stderr, proc.stderr


def test_a_missing_or_broken_plan_is_an_error(chain):
    _, _, tmp = chain
    for missing in ("no-such.placed.onnx", "no-such.split.json"):
        proc = run_runtime(["run", missing, "--nproc", "2"], tmp,
                           expect_ok=False)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        assert missing + ": error: cannot read" in proc.stderr, proc.stderr
    import onnx
    placed = plan(tmp, "p2", 2, 1, 2, "gpipe")
    model = onnx.load(str(tmp / placed))
    for p in model.metadata_props:
        if p.key == "dp.pipeline":
            obj = json.loads(p.value)
            obj["stages"][1]["order"] = obj["stages"][1]["order"][1:]
            p.value = json.dumps(obj)
    onnx.save(model, str(tmp / "broken.onnx"))
    proc = run_runtime(["run", "broken.onnx", "--nproc", "2", "--train"],
                       tmp, expect_ok=False)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "metadata 'dp.pipeline': error: stage 1" in proc.stderr, \
        proc.stderr
