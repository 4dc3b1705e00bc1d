"""This machine as a dp cluster: K CPU workers, one core each, with the
link between workers measured on the runtime's own transfers.

    python3 -m dp_torch host-cluster --workers 2 --out host2.json

Each worker is one rank of the runtime with one intra-op thread, so the
simulator and the runtime see the same cluster: K devices `cpu:0` ..
`cpu:K-1` of one type `host-core`, joined pairwise by links whose latency
and bandwidth are fitted (least squares, `time = latency + bytes /
bandwidth`) to one-way times of the runtime's messages between two ranks.

Workers may share a core's execution units (two hardware threads of one
core, or virtual CPUs that the hypervisor backs that way). The K workers
are therefore declared a shared group whose speeds are measured: for k = 1
.. K, k processes run the same one-thread f32 matrix product at once, and
speed[k-1] is their median rate over the rate of one alone. The matrix
product stands for the convolutions and matrix products that take most of
a model's time; streaming (memory-bound) kernels may slow less.

The probes measure what the machine gives them: run while other work
loads it, they describe that share of it. The share of the machine's
processor time other processes took (/proc/stat) in a second before the
probes and a second after them is therefore checked, and above
BUSY_WARNING the command says so.
"""

import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

from .module import set_threads

SIZES = [4, 4096, 65536, 1 << 20, 8 << 20, 32 << 20]
# The share of the machine's processor time other work may take around the
# probes before host-cluster warns.
BUSY_WARNING = 0.15


def cpu_times():
    """(busy, total) processor time of the whole machine so far, in clock
    ticks, from /proc/stat; None where there is no such file."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 5:
        return None
    # user nice system idle iowait irq softirq steal (guest time is
    # counted in user already).
    ticks = [int(v) for v in fields[1:9]]
    idle = sum(ticks[3:5])
    return sum(ticks) - idle, sum(ticks)


def busy_share(before, after):
    """The share of the processor time between two cpu_times() readings
    that went to work: 0 (idle) to 1."""
    busy, total = after[0] - before[0], after[1] - before[1]
    return min(1.0, max(0.0, busy / total)) if total > 0 else 0.0


def other_work(seconds=1.0):
    """The share of the machine's processor time that other processes
    take while this one sleeps for `seconds`, or None where unknown."""
    before = cpu_times()
    if before is None:
        return None
    time.sleep(seconds)
    return busy_share(before, cpu_times())


def busy_warning(shares):
    """The warning for the other work measured around the probes, or
    None when the machine was quiet enough."""
    known = [s for s in shares if s is not None]
    if not known or max(known) <= BUSY_WARNING:
        return None
    return ("dp_torch: warning: other work took %s of this machine's "
            "processor time around the probes (before, after; above %.0f %% "
            "the figures describe what it left, not the machine): probe "
            "again when the machine is idle\n"
            % (" and ".join("%.0f %%" % (s * 100) for s in known),
               BUSY_WARNING * 100))


def _ping_pong(rounds):
    """Rank 0 and 1 ping-pong; returns [(bytes, one-way seconds)]."""
    import torch.distributed as dist
    rank = int(os.environ["RANK"])
    out = []
    for size in SIZES:
        buf = torch.zeros(max(1, size // 4), dtype=torch.float32)
        times = []
        for r in range(rounds + 2):
            dist.barrier()
            start = time.perf_counter()
            if rank == 0:
                dist.isend(buf, 1, tag=r).wait()
                dist.recv(buf, 1, tag=r)
            else:
                dist.recv(buf, 0, tag=r)
                dist.isend(buf, 0, tag=r).wait()
            if r >= 2:
                times.append((time.perf_counter() - start) / 2)
        out.append((buf.numel() * 4, statistics.median(times)))
    return out


class _Compute:
    """A thread of matrix products beside the rank's own, counting them:
    the worker's compute while its messages move (torch releases the GIL
    in the product, and runs it on one thread here)."""

    def __init__(self):
        import threading
        self.count = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        n = 512
        a, b = torch.randn(n, n), torch.randn(n, n)
        while not self.stop.is_set():
            torch.mm(a, b)
            self.count += 1

    def rate(self, body):
        """Products per second while body() runs."""
        start_count, start = self.count, time.perf_counter()
        body()
        return (self.count - start_count) / (time.perf_counter() - start)


QUIET_SECONDS = 1.0


def _measure_link(rounds):
    """The link as the runtime's messages see it, idle and while both
    workers compute (as they do while a placement runs), and what the
    messages cost the workers' compute.

    Returns {"idle": [(bytes, one-way s)], "loaded": [...], "speed": the
    lower of the two workers' rates of products while the ping-pongs run,
    each over its rate while it computes without messages}."""
    import torch.distributed as dist
    set_threads(1)
    idle = _ping_pong(rounds)
    compute = _Compute()
    compute.thread.start()
    try:
        time.sleep(0.2)
        quiet = compute.rate(lambda: time.sleep(QUIET_SECONDS))
        dist.barrier()
        loaded = []
        busy = compute.rate(lambda: loaded.extend(_ping_pong(rounds)))
    finally:
        compute.stop.set()
        compute.thread.join()
    speeds = [None, None]
    dist.all_gather_object(speeds, busy / quiet)
    return {"idle": idle, "loaded": loaded, "speed": min(1.0, min(speeds))}


# Messages of at least this many bytes set the bandwidth.
BANDWIDTH_BYTES = 1 << 20


def _fit(points):
    """(latency, bandwidth) of one-way times [(bytes, seconds)], as the
    Hockney model has them: the latency is the time of the smallest
    message, the bandwidth the slope over the messages of at least
    BANDWIDTH_BYTES. A least-squares line through all sizes, as this
    probe fitted before, takes its intercept from the megabyte messages'
    scatter: two probes of the same machine an hour apart gave 589 us and
    38 us under load, while the 4-byte message is the latency itself."""
    points = sorted(points)
    latency = max(points[0][1], 1e-7)
    big = [p for p in points if p[0] >= BANDWIDTH_BYTES]
    if len(big) >= 2:
        x = np.array([p[0] for p in big], dtype=np.float64)
        y = np.array([p[1] for p in big], dtype=np.float64)
        slope = float(np.polyfit(x, y, 1)[0])
    else:
        slope = (points[-1][1] - latency) / max(points[-1][0], 1)
    if slope * points[-1][0] < 1e-3 * points[-1][1]:
        # The large messages' times do not grow: take the largest's rate.
        slope = max(points[-1][1] - latency, 1e-12) / max(points[-1][0], 1)
    return latency, 1.0 / slope


def _measure_core():
    """One thread: f32 matrix-product rate and streaming bandwidth."""
    set_threads(1)
    n = 512
    a, b = torch.randn(n, n), torch.randn(n, n)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(4):
            torch.mm(a, b)
        best = min(best, (time.perf_counter() - start) / 4)
    flops = 2.0 * n ** 3 / best
    m = 1 << 24
    x, y, z = torch.ones(m), torch.ones(m), torch.empty(m)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        torch.add(x, y, out=z)
        best = min(best, time.perf_counter() - start)
    bandwidth = 3 * 4 * m / best
    return flops, bandwidth


SHARING_SECONDS = 1.0


def _probe_core(start_at):
    """One process of the sharing probe: from wall time start_at, f32
    matrix products on one thread for SHARING_SECONDS; prints their rate in
    FLOP/s."""
    set_threads(1)
    n = 512
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)
    while time.time() < start_at:
        time.sleep(0.001)
    # Products done over the whole window, not the median product: a
    # hypervisor that time-slices two virtual CPUs on one core leaves most
    # products untouched and stalls a few for a whole slice.
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < SHARING_SECONDS:
        torch.mm(a, b)
        count += 1
    print(2.0 * n ** 3 * count / (time.perf_counter() - start))


def _measure_sharing(workers):
    """speed[k-1]: the median rate of k workers busy at once over the rate
    of one alone (rounded; at most 1)."""
    rates = []
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for k in range(1, workers + 1):
        start_at = time.time() + 2.0  # after every process has started
        procs = [subprocess.Popen(
            [sys.executable, "-m", "dp_torch", "host-cluster"],
            env=dict(env, DP_TORCH_CORE_PROBE=repr(start_at)),
            stdout=subprocess.PIPE, universal_newlines=True)
            for _ in range(k)]
        outs = [p.communicate(timeout=120)[0] for p in procs]
        if any(p.returncode for p in procs):
            raise RuntimeError("the core-sharing probe failed")
        rates.append(statistics.median(float(o) for o in outs))
    return [1.0] + [min(1.0, round(r / rates[0], 3)) for r in rates[1:]]


def _measure_dispatch():
    """Seconds the runtime spends per node on a tiny op (its overhead)."""
    import onnx
    from onnx import TensorProto, helper

    from .graph import PlacedGraph
    from .module import PlacedModule
    import tempfile
    nodes, prev = [], "x"
    for i in range(200):
        nodes.append(helper.make_node("Relu", [prev], ["t%d" % i],
                                      name="n%d" % i))
        prev = "t%d" % i
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [4])])
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 14)])
    model.metadata_props.add(key="dp.placement", value=json.dumps(
        {"n%d" % i: "cpu:0" for i in range(200)}))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "chain.onnx")
        onnx.save(model, path)
        module = PlacedModule(PlacedGraph(path))
    feeds = {"x": torch.ones(4)}
    best = float("inf")
    with torch.no_grad():
        for _ in range(20):
            start = time.perf_counter()
            module.run(feeds)
            best = min(best, time.perf_counter() - start)
    return best / 200


def make_cluster(workers, link, flops, bandwidth, dispatch, memory,
                 speed=None, load=None):
    latency, bw = link
    devices = [{"name": "cpu:%d" % i, "type": "host-core"}
               for i in range(workers)]
    links = []
    for i in range(workers):
        for j in range(i + 1, workers):
            entry = {"between": ["cpu:%d" % i, "cpu:%d" % j],
                     "bandwidth": float("%.6g" % bw),
                     "latency": float("%.6g" % latency)}
            if load is not None:
                # The endpoints' processors do the copies (docs/clusters.md).
                for key in ("speed_while_sending", "speed_while_receiving"):
                    entry[key] = min(1.0, round(load, 3))
            links.append(entry)
    cluster = {
        "name": "host%d" % workers,
        "device_types": [{
            "name": "host-core", "kind": "cpu",
            "peak_flops": {"f32": float("%.6g" % flops)},
            "memory_bandwidth": float("%.6g" % bandwidth),
            "memory": float(memory // workers),
            "launch_overhead": float("%.6g" % dispatch)}],
        "devices": devices,
        "links": links,
    }
    if speed and workers > 1:
        cluster["shared"] = [{"devices": [d["name"] for d in devices],
                              "speed": speed}]
    return cluster


def main(args):
    if os.environ.get("DP_TORCH_CORE_PROBE"):
        _probe_core(float(os.environ["DP_TORCH_CORE_PROBE"]))
        return 0
    if os.environ.get("DP_TORCH_LINK_PROBE"):
        import torch.distributed as dist
        dist.init_process_group("gloo", rank=int(os.environ["RANK"]),
                                world_size=2)
        try:
            probed = _measure_link(args.rounds)
        finally:
            dist.destroy_process_group()
        if int(os.environ["RANK"]) == 0:
            with open(os.environ["DP_TORCH_LINK_PROBE"], "w") as f:
                json.dump(probed, f)
        return 0
    if args.workers < 1:
        sys.stderr.write("dp_torch: error: --workers must be at least 1\n")
        return 1
    import tempfile
    from .__main__ import _free_port
    busy = [other_work()]
    with tempfile.TemporaryDirectory() as tmp:
        probe = os.path.join(tmp, "link.json")
        env = dict(os.environ, MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(_free_port()), WORLD_SIZE="2",
                   DP_TORCH_LINK_PROBE=probe, OMP_NUM_THREADS="1")
        procs = [subprocess.Popen(
            [sys.executable, "-m", "dp_torch", "host-cluster",
             "--rounds", str(args.rounds)],
            env=dict(env, RANK=str(r), LOCAL_RANK=str(r)))
            for r in range(2)]
        rcs = [p.wait(timeout=600) for p in procs]
        if any(rcs):
            sys.stderr.write("dp_torch: error: the link probe failed\n")
            return 1
        with open(probe) as f:
            probed = json.load(f)
        idle = [tuple(p) for p in probed["idle"]]
        points = [tuple(p) for p in probed["loaded"]]
        load = probed["speed"]
    link = _fit(points)
    idle_link = _fit(idle)
    flops, bandwidth = _measure_core()
    dispatch = _measure_dispatch()
    speed = _measure_sharing(args.workers)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    busy.append(other_work())
    cluster = make_cluster(args.workers, link, flops, bandwidth, dispatch,
                           memory, speed, load)
    text = json.dumps(cluster, indent=2) + "\n"
    if args.out in (None, "-"):
        sys.stdout.write(text)
    else:
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, args.out)
    for (b, t), (_, u) in zip(points, idle):
        sys.stderr.write("dp_torch: %9d bytes one way in %8.1f us while "
                         "both compute (%8.1f us idle)\n"
                         % (b, t * 1e6, u * 1e6))
    sys.stderr.write(
        "dp_torch: host%d: link %.1f us + %.2f GB/s, core %.1f GFLOP/s "
        "(f32 mm), %.1f GB/s, %.1f us per node; speed with 1..%d busy: "
        "%s; a worker keeps %.2f of its speed while its messages move; "
        "the link idle: %.1f us + %.2f GB/s\n"
        % (args.workers, link[0] * 1e6, link[1] / 1e9, flops / 1e9,
           bandwidth / 1e9, dispatch * 1e6, args.workers,
           " ".join("%g" % v for v in speed), load, idle_link[0] * 1e6,
           idle_link[1] / 1e9))
    warning = busy_warning(busy)
    if warning:
        sys.stderr.write(warning)
    return 0
