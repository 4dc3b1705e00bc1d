"""Ranks: segments form a DAG for any placement, and both message orders
give torch's results without deadlock."""

import random

import numpy as np
import pytest
import torch
import torch.nn as nn

from conftest import export, max_rel_err, place_by_hand, run_runtime
from dp_torch.dist import DistRunner, make_segments
from dp_torch.graph import PlacedGraph


class Ladder(nn.Module):
    """Two chains that read each other at every rung."""

    def __init__(self):
        super().__init__()
        self.a = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))
        self.b = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))

    def forward(self, x):
        a, b = x, -x
        for la, lb in zip(self.a, self.b):
            a, b = torch.tanh(la(a) + b), torch.tanh(lb(b) * a)
        return a + b


@pytest.fixture(scope="module")
def ladder(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ladder")
    torch.manual_seed(0)
    m = Ladder().eval()
    x = torch.randn(3, 8)
    export(m, (x,), str(tmp / "m.onnx"), ["x"], ["y"])
    np.savez(str(tmp / "in.npz"), x=x.numpy())
    return m, x, tmp


def _check_dag(graph, segs, seg_of):
    # Every input of a segment is made by an earlier segment (or is a
    # source), and every node is in exactly one segment.
    seen = set()
    for seg in segs:
        for node in seg.nodes:
            assert node.name not in seen
            seen.add(node.name)
        for t in seg.inputs:
            if t in seg_of:
                assert seg_of[t] < seg.index
        assert len({n.device for n in seg.nodes}) == 1
    assert seen == {n.name for n in graph.nodes}


@pytest.mark.parametrize("seed", range(5))
def test_segments_form_a_dag_for_random_placements(ladder, seed):
    _, _, tmp = ladder
    rng = random.Random(seed)
    place_by_hand(str(tmp / "m.onnx"), str(tmp / "r.onnx"),
                  lambda i, n: "cpu:%d" % rng.randrange(3))
    graph = PlacedGraph(str(tmp / "r.onnx"))
    segs, seg_of, _ = make_segments(graph)
    _check_dag(graph, segs, seg_of)


def test_alternating_placement_cuts_at_every_dependency(ladder):
    _, _, tmp = ladder
    place_by_hand(str(tmp / "m.onnx"), str(tmp / "alt.onnx"),
                  lambda i, n: "cpu:%d" % (i % 2))
    graph = PlacedGraph(str(tmp / "alt.onnx"))
    segs, seg_of, _ = make_segments(graph)
    _check_dag(graph, segs, seg_of)
    # The two devices depend on each other both ways: one segment per
    # device cannot be a DAG.
    assert len(segs) > 2


@pytest.mark.parametrize("schedule", ["lazy", "lockstep"])
@pytest.mark.parametrize("train", [False, True])
def test_three_ranks_both_schedules(ladder, schedule, train):
    m, x, tmp = ladder
    rng = random.Random(7)
    place_by_hand(str(tmp / "m.onnx"), str(tmp / "p3.onnx"),
                  lambda i, n: "cpu:%d" % rng.randrange(3))
    args = ["run", "p3.onnx", "--nproc", "3", "--schedule", schedule,
            "--inputs", "in.npz", "--timeout", "60", "--optimizer", "sgd"]
    if train:
        args += ["--train", "--steps", "1", "--warmup", "1",
                 "--save-weights", "w.npz"]
    else:
        args += ["--steps", "2", "--warmup", "0", "--outputs", "o.npz"]
    run_runtime(args, tmp)
    if not train:
        with torch.no_grad():
            ref = m(x).numpy()
        assert max_rel_err(np.load(str(tmp / "o.npz"))["y"], ref) < 1e-5
        return
    assert_trained_as_torch(m, x, str(tmp / "w.npz"), 2)


def assert_trained_as_torch(m, x, weights, steps):
    """The weights saved in `weights` are those of `steps` SGD steps (lr
    0.01, loss the output's sum) of the ladder m on x in torch."""
    ref = Ladder()
    ref.load_state_dict(m.state_dict())
    opt = torch.optim.SGD(ref.parameters(), lr=0.01)
    for _ in range(steps):
        opt.zero_grad()
        ref(x.clone().requires_grad_(True)).sum().backward()
        opt.step()
    got = np.load(weights)
    compared = 0
    for k, v in ref.named_parameters():
        if k in got.files:
            compared += 1
            assert max_rel_err(got[k], v.detach().numpy()) < 1e-5, k
    assert compared == 16


def test_report_of_two_ranks(ladder):
    import json
    _, _, tmp = ladder
    place_by_hand(str(tmp / "m.onnx"), str(tmp / "p2.onnx"),
                  lambda i, n: "cpu:%d" % (i % 2))
    run_runtime(["run", "p2.onnx", "--nproc", "2", "--steps", "3",
                 "--warmup", "1", "--report", "r.json", "--train"], tmp)
    r = json.loads((tmp / "r.json").read_text())
    assert r["ranks"] == 2 and r["mode"] == "train" and r["steps"] == 3
    assert [d["device"] for d in r["devices"]] == ["cpu:0", "cpu:1"]
    assert all(d["sent_bytes"] > 0 for d in r["devices"])
    s = r["step_s"]
    assert 0 < s["min"] <= s["median"] <= s["max"]
    assert len(s["all"]) == 3


def test_backward_sends_a_gradient_before_its_segment_ends(ladder):
    """A segment's backward runs in chunks: the gradient of an input read
    by the segment's last node goes back before the backward of its first
    node, as the simulator sends each op's gradient when its backward op
    ends; and the weights still train as torch's."""
    import json
    m, x, tmp = ladder
    # The b chain (and the products) on cpu:1: every rung crosses twice.
    place_by_hand(str(tmp / "m.onnx"), str(tmp / "ab.onnx"),
                  lambda i, n: "cpu:%d" % ("/b." in n or "Mul" in n or
                                           "Neg" in n))
    graph = PlacedGraph(str(tmp / "ab.onnx"))
    runner = DistRunner(graph, 0, 2)
    # Segments of cpu:1 that send a gradient before their last chunk.
    early = {}
    for seg in runner.segs:
        count = runner.chunks[seg.index]
        sends = runner.grad_sends[seg.index]
        if seg.device != "cpu:1" or count < 2 or not sends:
            continue
        t = sends[0][0]
        if t not in runner.completes[seg.index][count - 1]:
            early[seg.index] = (t, count - 1)
    assert early
    run_runtime(["run", "ab.onnx", "--nproc", "2", "--train", "--steps",
                 "1", "--warmup", "1", "--inputs", "in.npz", "--optimizer",
                 "sgd", "--timeout", "60", "--save-weights", "w.npz"], tmp)
    assert_trained_as_torch(m, x, str(tmp / "w.npz"), 2)
    run_runtime(["run", "ab.onnx", "--nproc", "2", "--train", "--steps",
                 "1", "--warmup", "1", "--inputs", "in.npz", "--timeout",
                 "60", "--profile", "t.json", "--profile-steps", "1"], tmp)
    trace = json.loads((tmp / "t.json").read_text())["traceEvents"]
    pid = next(e["pid"] for e in trace if e.get("name") == "process_name"
               and e["args"]["name"].startswith("cpu:1"))
    mine = [e for e in trace if e.get("pid") == pid and "ts" in e]
    for k, (t, last) in early.items():
        sent = [e["ts"] for e in mine if e["cat"] == "send" and
                e["name"] == t + "/grad"]
        last_chunk = [e["ts"] for e in mine if e["cat"] == "op" and
                      e["name"] == "backward of segment %d chunk %d"
                      % (k, last)]
        assert len(sent) == 1 and len(last_chunk) == 1, (k, t)
        assert sent[0] < last_chunk[0], (k, t)
