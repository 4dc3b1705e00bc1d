"""The schedule emit writes (dp.schedule) and the runtime follows: the
same segments and the same order, any valid order runs to torch's
results on three ranks without deadlock, and a schedule that is not one
is a located error."""

import heapq
import json
import random
import subprocess

import onnx
import pytest

from conftest import dp_opt, place_by_hand, run_runtime
from test_dist import assert_trained_as_torch, ladder  # noqa: F401

from dp_torch.dist import DistRunner, _cut_segments
from dp_torch.graph import PlacedGraph
from dp_torch.schedule import full_order


def _set_meta(path, key, value):
    model = onnx.load(path, load_external_data=False)
    for i in reversed(range(len(model.metadata_props))):
        if model.metadata_props[i].key == key:
            del model.metadata_props[i]
    model.metadata_props.add(key=key, value=value)
    onnx.save(model, path)


def _random_order(segs, deps, rng):
    """A random linear extension of the items of a training step."""
    users = {}
    indeg = {}
    items = [("forward", s.index) for s in segs] + \
        [("backward", s.index) for s in segs]
    for it in items:
        indeg[it] = 0
        users[it] = []

    def edge(a, b):
        users[a].append(b)
        indeg[b] += 1
    for k, ds in enumerate(deps):
        for d in ds:
            edge(("forward", d), ("forward", k))
            edge(("backward", k), ("backward", d))
        edge(("forward", k), ("backward", k))
    prio = {it: rng.random() for it in items}
    ready = [(prio[it], it) for it in items if not indeg[it]]
    heapq.heapify(ready)
    order = []
    while ready:
        _, it = heapq.heappop(ready)
        order.append(list(it))
        for u in users[it]:
            indeg[u] -= 1
            if not indeg[u]:
                heapq.heappush(ready, (prio[u], u))
    assert len(order) == len(items)
    return order


def _random_backward(seg, rng):
    """A random reverse topological order of seg's nodes (a node after
    every node of seg that reads from it)."""
    made = {t: n.name for n in seg.nodes for t in n.outputs if t}
    readers = {n.name: 0 for n in seg.nodes}
    producers = {n.name: {made[t] for t in n.inputs if t in made}
                 for n in seg.nodes}
    for ps in producers.values():
        for p in ps:
            readers[p] += 1
    ready = [n for n, k in readers.items() if not k]
    order = []
    while ready:
        n = ready.pop(rng.randrange(len(ready)))
        order.append(n)
        for p in producers[n]:
            readers[p] -= 1
            if not readers[p]:
                ready.append(p)
    assert len(order) == len(seg.nodes)
    return order


def _scheduled(tmp, name, seed):
    """The ladder on three devices with a schedule whose order is a random
    valid one (forward and backward items interleaved), and each segment's
    backward order a random valid one."""
    rng = random.Random(seed)
    path = str(tmp / name)
    place_by_hand(str(tmp / "m.onnx"), path,
                  lambda i, n: "cpu:%d" % rng.randrange(3))
    graph = PlacedGraph(path)
    segs, seg_of, _ = _cut_segments(graph)
    deps = [sorted({seg_of[t] for t in s.inputs if t in seg_of})
            for s in segs]
    order = _random_order(segs, deps, rng)
    _set_meta(path, "dp.schedule", json.dumps({
        "version": 1,
        "segments": [{"device": s.device, "nodes": [n.name for n in s.nodes],
                      "backward_nodes": _random_backward(s, rng)}
                     for s in segs],
        "order": order}))
    return path, segs, order


def test_the_runner_walks_the_schedule(ladder):
    _, _, tmp = ladder
    path, segs, order = _scheduled(tmp, "s.onnx", 3)
    graph = PlacedGraph(path)
    runner = DistRunner(graph, 0, len(graph.devices))
    assert [[n.name for n in s.nodes] for s in runner.segs] == \
        [[n.name for n in s.nodes] for s in segs]
    assert runner.orders[True] == [tuple(i) for i in order]
    assert runner.orders[False] == [tuple(i) for i in order
                                    if i[0] == "forward"]


@pytest.mark.parametrize("schedule", ["lazy", "lockstep"])
@pytest.mark.parametrize("seed", [1, 2])
def test_any_valid_order_trains_as_torch(ladder, schedule, seed):
    m, x, tmp = ladder
    name = "o%d%s.onnx" % (seed, schedule)
    _scheduled(tmp, name, seed)
    run_runtime(["run", name, "--nproc", "3", "--schedule", schedule,
                 "--inputs", "in.npz", "--timeout", "60", "--optimizer",
                 "sgd", "--train", "--steps", "2", "--warmup", "1",
                 "--save-weights", "w.npz"], tmp)
    assert_trained_as_torch(m, x, str(tmp / "w.npz"), 3)


def test_default_order_without_a_schedule():
    assert full_order(None, 3, False) == [("forward", 0), ("forward", 1),
                                          ("forward", 2)]
    assert full_order(None, 2, True) == [("forward", 0), ("forward", 1),
                                         ("backward", 1), ("backward", 0)]
    # An inference step's schedule trained: its backward in reverse.
    assert full_order([("forward", 0), ("forward", 1)], 2, True)[2:] == \
        [("backward", 1), ("backward", 0)]


BAD = [
    ("not json", "{", "metadata 'dp.schedule' is not JSON"),
    ("no segments", json.dumps({"order": []}),
     "expected an object with a list 'segments'"),
    ("unknown node", None, "the model has no node 'nope'"),
    ("twice", None, "is already in segment"),
    ("wrong device", None, "not on the segment's device"),
    ("missing node", None, "is in no segment"),
    ("bad item", None, "order item 0: error: expected"),
    ("forward too early", None, "comes before the forward of segment"),
    ("backward missing", None, "has backward items but none for segment"),
    ("node before its input", None, "which a later node of the segment "
     "makes"),
    ("backward not its nodes", None, "'backward_nodes' must list the "
     "segment's nodes, each once"),
    ("backward before its reader", None, "in 'backward_nodes', node"),
]


def _bad_schedule(kind, segs, order):
    segments = [{"device": s.device, "nodes": [n.name for n in s.nodes]}
                for s in segs]
    fwd = [["forward", s.index] for s in segs]
    if kind == "unknown node":
        segments[0]["nodes"].append("nope")
    elif kind == "twice":
        segments[1]["nodes"].append(segments[0]["nodes"][0])
    elif kind == "wrong device":
        other = [s for s in segments if s["device"] != segments[0]["device"]]
        other[0]["nodes"].append(segments[0]["nodes"].pop())
    elif kind == "missing node":
        segments[-1]["nodes"].pop()
    elif kind == "bad item":
        return json.dumps({"segments": segments,
                           "order": [["sideways", 0]] + fwd})
    elif kind == "forward too early":
        return json.dumps({"segments": segments, "order": fwd[::-1]})
    elif kind == "node before its input":
        longest = max(segments, key=lambda s: len(s["nodes"]))
        longest["nodes"].reverse()
    elif kind == "backward not its nodes":
        segments[0]["backward_nodes"] = segments[0]["nodes"][:-1] + ["x"]
    elif kind == "backward before its reader":
        # Forward order: a producer's backward before its reader's.
        longest = max(segments, key=lambda s: len(s["nodes"]))
        longest["backward_nodes"] = list(longest["nodes"])
    elif kind == "backward missing":
        return json.dumps({"segments": segments,
                           "order": fwd + [["backward", 0]]})
    return json.dumps({"segments": segments, "order": order})


@pytest.mark.parametrize("kind,text,message", BAD,
                         ids=[b[0] for b in BAD])
def test_a_bad_schedule_is_a_located_error(ladder, kind, text, message):
    _, _, tmp = ladder
    name = "bad-%s.onnx" % kind.replace(" ", "-")
    path, segs, order = _scheduled(tmp, name, 5)
    _set_meta(path, "dp.schedule",
              text if text is not None else _bad_schedule(kind, segs, order))
    proc = run_runtime(["run", name, "--nproc", "3", "--steps", "1",
                        "--warmup", "0", "--timeout", "60", "--train"],
                       tmp, expect_ok=False)
    assert proc.returncode == 1, proc.stderr
    assert message in proc.stderr, proc.stderr
    assert name in proc.stderr
    assert "Traceback" not in proc.stderr


def _emit(tmp, cluster, model, train):
    """dp-opt keeps model's placement and emits the placed model and the
    split; returns the simulator's summary."""
    (tmp / "out").mkdir(exist_ok=True)
    passes = ["import-onnx"] + (["training-graph"] if train else []) + \
        ["cost-annotate", "place{algo=given}", "simulate",
         "emit{format=onnx+split,out=%s/out/}" % tmp]
    proc = subprocess.run(
        [dp_opt(), "-passes=" + ",".join(passes), "-cluster=" + cluster,
         "-summary=" + str(tmp / "s.json"), "-disable-output",
         str(tmp / model)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    with open(str(tmp / "s.json")) as f:
        return json.load(f)


@pytest.mark.parametrize("train", [False, True])
def test_emit_writes_what_the_runtime_follows(ladder, two_cpus, train):
    """Round trip: emit's segments and order are the runtime's, the split
    manifest lists the same order, and the report shows the prediction."""
    _, _, tmp = ladder
    # Alternating placement: both workers, with dependencies both ways.
    place_by_hand(str(tmp / "m.onnx"), str(tmp / "alt.onnx"),
                  lambda i, n: "cpu:%d" % (i % 2))
    summary = _emit(tmp, two_cpus, "alt.onnx", train)
    placed = str(tmp / "out" / "alt.placed.onnx")
    model = onnx.load(placed, load_external_data=False)
    meta = {p.key: p.value for p in model.metadata_props}
    schedule = json.loads(meta["dp.schedule"])
    predicted = json.loads(meta["dp.predicted"])
    assert predicted["step_s"] == pytest.approx(summary["step_time_s"])
    phases = {p for p, _ in schedule["order"]}
    assert phases == ({"forward", "backward"} if train else {"forward"})
    with open(str(tmp / "out" / "alt.split.json")) as f:
        assert json.load(f)["order"] == schedule["order"]
    graph = PlacedGraph(placed)
    runner = DistRunner(graph, 0, len(graph.devices))
    assert [[n.name for n in s.nodes] for s in runner.segs] == \
        [s["nodes"] for s in schedule["segments"]]
    if train:
        # The backward runs in emit's (the simulated) order.
        assert [[n.name for n in s.backward_nodes] for s in runner.segs] \
            == [s["backward_nodes"] for s in schedule["segments"]]
    else:
        assert all("backward_nodes" not in s for s in schedule["segments"])
    assert runner.orders[train] == [tuple(i) for i in schedule["order"]]
    args = ["run", "out/alt.placed.onnx", "--nproc", "2", "--steps", "2",
            "--warmup", "1", "--inputs", "in.npz", "--timeout", "60",
            "--report", "r.json", "--profile", "t.json",
            "--profile-steps", "1"]
    run_runtime(args + (["--train"] if train else []), tmp)
    report = json.loads((tmp / "r.json").read_text())
    assert report["predicted"]["step_s"] == pytest.approx(
        predicted["step_s"])
    assert report["predicted"]["measured_step_s"] == pytest.approx(
        report["step_s"]["median"])
    for d in report["devices"]:
        b = d["breakdown"]
        assert set(b) == {"ops_s", "dispatch_s", "send_s", "recv_s",
                          "wait_s", "allreduce_s", "other_s", "step_s"}
        assert all(v >= 0 for v in b.values())
        assert b["ops_s"] > 0 and b["send_s"] > 0
        parts = sum(v for k, v in b.items() if k != "step_s")
        assert parts == pytest.approx(b["step_s"], rel=1e-6)
    # One trace of both ranks, with the simulator's track names.
    trace = json.loads((tmp / "t.json").read_text())["traceEvents"]
    procs = {e["args"]["name"] for e in trace
             if e.get("name") == "process_name"}
    assert procs == {"cpu:0 (core)", "cpu:1 (core)", "links"}
    ops = [e for e in trace if e.get("cat") == "op"]
    assert {e["pid"] for e in ops} == {1, 2}
    messages = [e for e in trace if e.get("cat") == "message"]
    assert messages and all(e["pid"] == 3 for e in messages)
    assert {e["args"]["from"] for e in messages} == {"cpu:0", "cpu:1"}
