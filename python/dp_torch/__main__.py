"""python3 -m dp_torch run MODEL.placed.onnx [options]  (docs/runtime.md)"""

import argparse
import datetime
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np
import torch

from .allocator import (NO_HUGE_PAGES, exec_with_huge_pages, huge_page_bytes,
                        huge_pages_requested, keep_freed_memory)
from .graph import PlacedGraph, RuntimeError_
from .module import (Optimizer, PlacedModule, as_tensor, check_device_map,
                     loss_of, make_inputs, parse_device_map, set_threads,
                     synchronize, train_step)
from .profiling import profile_steps

PROG = "dp_torch"
# --nproc auto: one rank per device of the placement.
AUTO = "auto"


def _formatwarning(message, category, filename, lineno, line=None):
    return "%s: warning: %s\n" % (PROG, message)


def make_parser():
    p = argparse.ArgumentParser(prog="python3 -m dp_torch")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run and time steps of a placed model")
    r.add_argument("model", help="the placed ONNX model (emit{format=onnx})")
    r.add_argument("--train", action="store_true",
                   help="time training steps (forward, loss, backward, "
                   "optimizer), as training-graph simulates them")
    r.add_argument("--optimizer", default="adam",
                   help="sgd, momentum or adam (training-graph's default: "
                   "adam)")
    r.add_argument("--lr", type=float, default=None,
                   help="learning rate (sgd and momentum 0.01, adam 0.001)")
    r.add_argument("--no-input-grads", action="store_true",
                   help="graph inputs get no gradient "
                   "(training-graph{input-grads=false})")
    r.add_argument("--steps", type=int, default=10,
                   help="timed steps (default 10)")
    r.add_argument("--warmup", type=int, default=2,
                   help="untimed steps before them (default 2)")
    r.add_argument("--inputs", help=".npz of graph inputs by name; missing "
                   "ones are random from the seed")
    r.add_argument("--outputs", help="write the first step's graph outputs "
                   "to this .npz")
    r.add_argument("--save-weights", help="write every weight after the "
                   "last step to this .npz, by initializer name")
    r.add_argument("--report", help="write the JSON report here ('-' for "
                   "standard output)")
    r.add_argument("--profile", help="write a torch.profiler Chrome trace "
                   "of --profile-steps more steps here (with ranks: "
                   "NAME.rankR.json)")
    r.add_argument("--profile-steps", type=int, default=3)
    r.add_argument("--device-map", default="",
                   help="dp device to torch device, e.g. gpu:0=cpu,"
                   "gpu:1=cuda:0")
    r.add_argument("--threads", type=int, default=None,
                   help="torch's intra-op threads (per rank)")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--require-weights", action="store_true",
                   help="a weight without data is an error instead of "
                   "seeded data")
    r.add_argument("--nproc", type=_nproc, default=None,
                   help="start this many local ranks (one per device of "
                   "the placement; 'auto': as many as it uses)")
    r.add_argument("--schedule", choices=["lazy", "lockstep"], default=None,
                   help="message order between ranks (default: lazy on "
                   "gloo, lockstep on NCCL)")
    r.add_argument("--backend", choices=["gloo", "nccl"], default=None)
    r.add_argument("--bind-cores", action="store_true",
                   help="bind each local rank to cores of its own: local "
                   "rank r to the (r*T+1)-th to ((r+1)*T)-th of the cores "
                   "this process may run on (T = --threads, default 1)")
    r.add_argument("--timeout", type=float, default=300.0,
                   help="seconds a rank waits for another before failing")
    h = sub.add_parser("host-cluster", help="describe this machine as K "
                       "one-core CPU workers, links measured")
    h.add_argument("--workers", type=int, default=2)
    h.add_argument("--out", help="the cluster JSON (default: standard "
                   "output)")
    h.add_argument("--rounds", type=int, default=20,
                   help="ping-pongs per message size")
    for q in (r, h):
        q.add_argument(NO_HUGE_PAGES, action="store_true",
                       help="keep the heap on 4 KiB pages (by default it is "
                       "on transparent huge pages where glibc and the "
                       "kernel allow: docs/runtime.md)")
    return p


def _nproc(text):
    """--nproc's value: 'auto' or an integer (checked in main)."""
    if text == AUTO:
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            "must be 'auto' or a number of ranks, not '%s'" % text)


def fail(message):
    sys.stderr.write("%s: %s\n" % (PROG, message))
    return 1


def main(argv=None):
    keep_freed_memory()
    warnings.formatwarning = _formatwarning
    args = make_parser().parse_args(argv)
    if args.command == "host-cluster":
        from . import hostcluster
        return hostcluster.main(args)
    for name in ("steps", "profile_steps"):
        if getattr(args, name) < 1:
            return fail("error: --%s must be at least 1"
                        % name.replace("_", "-"))
    if args.warmup < 0:
        return fail("error: --warmup must not be negative")
    if args.nproc is not None and "DP_TORCH_CHILD" not in os.environ:
        if args.nproc != AUTO and args.nproc < 1:
            return fail("error: --nproc must be at least 1")
        try:
            ranks = check_launch(args)
        except RuntimeError_ as e:
            return fail(str(e))
        if ranks > 1:
            return launch(ranks, argv if argv is not None else sys.argv[1:],
                          args.timeout)
        args.nproc = None  # one device: this process is the one rank
    try:
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:
            return run_rank(args)
        return run_single(args)
    except RuntimeError_ as e:
        return fail(str(e))


# --------------------------------------------------------------------------
# Local launcher: what torchrun does, for one machine
# --------------------------------------------------------------------------

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_launch(args):
    """The errors every rank would report, reported once before any rank
    starts: a bad model, a device map that does not fit it or this
    machine, a rank count that is not the placement's device count.
    Returns the rank count (--nproc auto: the placement's devices)."""
    graph = PlacedGraph(args.model, seed=args.seed,
                        require_weights=args.require_weights)
    check_device_map(graph, parse_device_map(args.device_map))
    if args.nproc == AUTO:
        return len(graph.rank_devices)
    if graph.plan is not None:
        from .plan import check_ranks
        check_ranks(graph, args.nproc)
        return args.nproc
    if args.nproc != len(graph.devices):
        raise RuntimeError_(
            "%s: error: the placement uses %d devices (%s), so it runs on "
            "%d ranks, not %d" % (args.model, len(graph.devices),
                                  ", ".join(graph.devices),
                                  len(graph.devices), args.nproc))
    return args.nproc


def launch(nproc, argv, timeout):
    """Starts nproc ranks of this command; fails them all if one fails."""
    # Drop --nproc and its value from the children's arguments.
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--nproc":
            skip = True
            continue
        if a.startswith("--nproc="):
            continue
        out.append(a)
    env = dict(os.environ)
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()),
               WORLD_SIZE=str(nproc), LOCAL_WORLD_SIZE=str(nproc),
               DP_TORCH_CHILD="1")
    procs = []
    for rank in range(nproc):
        e = dict(env, RANK=str(rank), LOCAL_RANK=str(rank))
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dp_torch"] + out, env=e))
    status = 0
    try:
        pending = list(procs)
        while pending:
            for p in list(pending):
                rc = p.poll()
                if rc is None:
                    continue
                pending.remove(p)
                if rc != 0 and status == 0:
                    status = rc if rc > 0 else 1
                    # One rank failed: the others would wait for it.
                    for q in pending:
                        q.send_signal(signal.SIGTERM)
            time.sleep(0.02)
    except KeyboardInterrupt:
        for p in procs:
            p.kill()
        status = 130
    return status


# --------------------------------------------------------------------------
# Inputs and outputs
# --------------------------------------------------------------------------

def load_inputs(path):
    if not path:
        return {}
    try:
        with np.load(path) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError) as e:
        raise RuntimeError_("%s: error: cannot read the inputs: %s"
                            % (path, e))


def write_npz(path, arrays):
    tmp = path + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, path)


def write_json(path, obj):
    text = json.dumps(obj, indent=2) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def summarize(times):
    return {"median": statistics.median(times), "min": min(times),
            "max": max(times), "all": times}


def _status_bytes(field):
    """VmRSS, VmHWM, ... of this process from /proc/self/status, or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class PeakMemory:
    """Peak memory of a CPU rank: the resident set's high-water mark over
    the timed steps, above the resident set before the weights were made.

    torch keeps no allocator statistics for CPU tensors, so this is the
    operating system's figure: weights, optimizer state, activations and
    what the allocator keeps of freed blocks (Linux: /proc/self/status,
    its mark reset through /proc/self/clear_refs)."""

    def __init__(self):
        self.baseline = _status_bytes("VmRSS")

    def start(self):
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self.ok = self.baseline is not None
        except OSError:
            self.ok = False

    def peak(self):
        hwm = _status_bytes("VmHWM")
        if not self.ok or hwm is None:
            return None
        return max(0, hwm - self.baseline)


def _peak_bytes(torch_device, memory):
    if torch_device.type == "cuda":
        return torch.cuda.max_memory_allocated(torch_device)
    return memory.peak() if memory is not None else None


def _bind_cores(args):
    """--bind-cores: this process (and every thread it starts after) on
    its local rank's cores."""
    if not args.bind_cores:
        return
    allowed = sorted(os.sched_getaffinity(0))
    per = args.threads or 1
    local = int(os.environ.get("LOCAL_RANK", "0"))
    cores = allowed[local * per:(local + 1) * per]
    if len(cores) < per:
        raise RuntimeError_(
            "--bind-cores: error: local rank %d needs cores %d to %d of the "
            "%d this process may run on (%s)" % (
                local, local * per + 1, (local + 1) * per, len(allowed),
                ",".join(map(str, allowed))))
    os.sched_setaffinity(0, cores)


def _setup_threads(args):
    if args.threads is not None and args.threads < 1:
        raise RuntimeError_("error: --threads must be at least 1")
    _bind_cores(args)
    if args.threads is not None:
        set_threads(args.threads)


# --------------------------------------------------------------------------
# One process
# --------------------------------------------------------------------------

def run_single(args):
    _setup_threads(args)
    torch.manual_seed(args.seed)
    graph = PlacedGraph(args.model, seed=args.seed,
                        require_weights=args.require_weights)
    if graph.plan is not None:
        # A plan runs as ranks, even one (its micro-batches in turn).
        from .plan import check_ranks
        check_ranks(graph, 1)
        os.environ.update(MASTER_ADDR="127.0.0.1",
                          MASTER_PORT=str(_free_port()), RANK="0",
                          WORLD_SIZE="1")
        return run_rank(args)
    memory = PeakMemory()
    module = PlacedModule(graph, device_map=parse_device_map(args.device_map))
    given = load_inputs(args.inputs)
    arrays = make_inputs(graph, args.seed, given)
    feeds = module.bind_inputs((), arrays)
    devices = sorted(set(module.torch_devices.values()), key=str)
    optimizer = Optimizer(args.optimizer, lr=args.lr) if args.train else None
    first = {}

    def step():
        if args.train:
            loss = train_step(module, feeds, optimizer,
                              input_grads=not args.no_input_grads)
        else:
            with torch.no_grad():
                module.run(feeds, free=True)
            loss = None
        return loss

    if args.outputs or args.train:
        # The first step's outputs, before any update; only the outputs
        # stay, and only when they are to be written, so that the timed
        # steps' peak memory is theirs alone.
        with torch.no_grad():
            outs = module.run(feeds, free=True)
        if args.train:
            first["loss"] = float(loss_of(
                [outs[n] for n in graph.outputs], graph.outputs, graph))
        if args.outputs:
            first["outputs"] = {n: outs[n] for n in graph.outputs}
        del outs
    for _ in range(args.warmup):
        step()
    for d in devices:
        if d.type == "cuda":
            torch.cuda.reset_peak_memory_stats(d)
    memory.start()
    times = _timed(step, devices, args.steps, 0)
    if args.profile:
        profile_steps(step, devices, args.profile_steps, args.profile,
                      module)
    if args.outputs:
        write_npz(args.outputs, {n: t.detach().cpu().numpy()
                                 for n, t in first["outputs"].items()})
    if args.save_weights:
        write_npz(args.save_weights, {n: p.detach().cpu().numpy()
                                      for n, p in module.named_weights()})
    if args.report:
        devs = []
        one = len(graph.devices) == 1
        for d in graph.devices:
            td = module.torch_devices[d]
            devs.append({
                "device": d, "torch_device": str(td), "rank": 0,
                "busy_s": statistics.median(times) if one else None,
                "peak_bytes": (_peak_bytes(td, memory)
                               if one or td.type == "cuda" else None)})
        report = _report(args, graph, 1, times, devs,
                         _pairs(module.sent_bytes),
                         first.get("loss"))
        write_json(args.report, report)
    return 0


def _timed(step, devices, steps, warmup):
    for _ in range(warmup):
        step()
    synchronize(devices)
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        synchronize(devices)
        times.append(time.perf_counter() - start)
    return times


def _pairs(sent):
    return [{"from": a, "to": b, "bytes": n} for (a, b), n in
            sorted(sent.items())]


def _predicted(graph, times, devices):
    """What emit recorded of the simulated step (dp.predicted), beside the
    measured median step and each device's measured peak memory."""
    p = graph.predicted
    if p is None:
        return None
    out = dict(p)
    measured = statistics.median(times)
    out["measured_step_s"] = measured
    out["error"] = p["step_s"] / measured - 1 if measured > 0 else None
    peaks = {d["device"]: d.get("peak_bytes") for d in devices}
    out["devices"] = [dict(d, measured_peak_bytes=peaks.get(d.get("device")))
                      for d in out.get("devices") or []
                      if isinstance(d, dict)]
    return out


def _report(args, graph, ranks, times, devices, sent, loss):
    return {
        "model": args.model,
        "graph": graph.name,
        "cluster": graph.cluster,
        "mode": "train" if args.train else "inference",
        "optimizer": args.optimizer if args.train else None,
        "ranks": ranks,
        "threads": torch.get_num_threads(),
        "steps": len(times),
        "warmup": args.warmup,
        "step_s": summarize(times),
        "devices": devices,
        "sent": sent,
        "loss": loss,
        "missing_weights": len(graph.missing_weights),
        "predicted": _predicted(graph, times, devices),
        "torch": torch.__version__,
        # Whether this process's heap was on huge pages, and how much of
        # its memory was (allocator.py).
        "huge_pages": huge_pages_requested(),
        "huge_page_bytes": huge_page_bytes(),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"),
    }


# --------------------------------------------------------------------------
# One rank of several
# --------------------------------------------------------------------------

def run_rank(args):
    import torch.distributed as dist

    from .dist import DistRunner

    _setup_threads(args)
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    torch.manual_seed(args.seed)
    graph = PlacedGraph(args.model, seed=args.seed,
                        require_weights=args.require_weights)
    memory = PeakMemory()
    if graph.plan is not None:
        from .plan import check_ranks
        check_ranks(graph, world)
    elif world != len(graph.devices):
        raise RuntimeError_(
            "%s: error: the placement uses %d devices (%s), so it runs on "
            "%d ranks, not %d" % (args.model, len(graph.devices),
                                  ", ".join(graph.devices),
                                  len(graph.devices), world))
    device_map = parse_device_map(args.device_map)
    backend = args.backend
    if graph.plan is not None and backend == "nccl":
        raise RuntimeError_(
            "%s: error: a plan runs on gloo (CUDA tensors through host "
            "memory); its point-to-point messages are not ordered for NCCL "
            "yet (docs/runtime.md, \"Plans\")" % args.model)
    if graph.plan is not None:
        backend = "gloo"
    if backend is None:
        all_cuda = torch.cuda.is_available() and all(
            d.startswith("gpu:") and device_map.get(d, "cuda").startswith(
                "cuda") for d in graph.rank_devices)
        backend = "nccl" if all_cuda else "gloo"
    dist.init_process_group(
        backend, rank=rank, world_size=world,
        timeout=datetime.timedelta(seconds=args.timeout))
    try:
        if graph.plan is not None:
            from .plan import PlanRunner
            runner = PlanRunner(graph, rank, world, device_map=device_map,
                                local_rank=local_rank)
        else:
            runner = DistRunner(graph, rank, world, device_map=device_map,
                                schedule=args.schedule,
                                local_rank=local_rank)
        return _run_rank_steps(args, graph, runner, rank, world, dist,
                               memory)
    finally:
        dist.destroy_process_group()


def _timeline(args, graph, runner, step, devices, dist):
    """--profile-steps more steps recorded on every rank, written by rank 0
    as one Chrome trace (timeline.py) at --profile."""
    from .timeline import Recorder, write_trace
    rec = Recorder()
    dist.barrier()
    start = time.perf_counter()
    runner.recorder = runner.module.recorder = rec
    try:
        for i in range(args.profile_steps):
            rec.step = i
            dist.barrier()
            step()
            synchronize(devices)
    finally:
        runner.recorder = runner.module.recorder = None
    # Each rank's events from its own start, which the barrier before it
    # makes one instant on every rank (to its skew): right across
    # machines too, whose clocks differ.
    gathered = [None] * runner.world
    dist.all_gather_object(gathered, (runner.device, rec.events, start))
    if runner.rank != 0:
        return
    types = {d.get("device"): d.get("type")
             for d in (graph.predicted or {}).get("devices") or []
             if isinstance(d, dict)}
    names = {d: "%s (%s)" % (d, types[d]) if types.get(d) else d
             for d in graph.rank_devices}
    write_trace(args.profile, names,
                [(d, [(k, n, t0 - s0, t1 - s0, a)
                      for k, n, t0, t1, a in evs])
                 for d, evs, s0 in gathered], 0.0)


def _run_rank_steps(args, graph, runner, rank, world, dist, memory):
    given = load_inputs(args.inputs)
    if graph.plan is not None:
        from .plan import plan_inputs
        arrays = plan_inputs(graph, args.seed, given)
    else:
        arrays = make_inputs(graph, args.seed, given)
    feeds = {n: as_tensor(a)
             for n, a in arrays.items()}
    optimizer = Optimizer(args.optimizer, lr=args.lr) if args.train else None
    devices = [runner.torch_device]
    state = {}

    def step():
        if args.train:
            outs, loss = runner.step(feeds, train=True, optimizer=optimizer,
                                     input_grads=not args.no_input_grads)
        else:
            with torch.no_grad():
                outs, loss = runner.step(feeds)
        state.setdefault("outputs", outs)
        state.setdefault("loss", loss)

    if args.train and args.outputs:
        with torch.no_grad():
            outs, loss = runner.step(feeds)
        state["outputs"], state["loss"] = outs, loss
    for _ in range(args.warmup):
        step()
    synchronize(devices)
    if runner.torch_device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(runner.torch_device)
    memory.start()
    times, busy, parts = [], [], []
    for _ in range(args.steps):
        dist.barrier()
        start = time.perf_counter()
        step()
        synchronize(devices)
        elapsed = time.perf_counter() - start
        # A step ends when the last rank ends.
        t = torch.tensor([elapsed], dtype=torch.float64,
                         device=runner.comm_device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        times.append(float(t))
        busy.append(elapsed - runner.times.wait - runner.times.allreduce)
        parts.append(runner.breakdown())
    if args.profile:
        root, ext = os.path.splitext(args.profile)
        profile_steps(step, devices, args.profile_steps,
                      "%s.rank%d%s" % (root, rank, ext or ".json"),
                      runner.module, dispatch=False)
        _timeline(args, graph, runner, step, devices, dist)
    # Everything the report needs, gathered on rank 0.
    loss = state.get("loss")
    total = torch.tensor([float(loss) if loss is not None else 0.0],
                         dtype=torch.float64, device=runner.comm_device)
    dist.all_reduce(total)
    outs = {n: t.detach().cpu().numpy() for n, t in
            state.get("outputs", {}).items()}
    weights = {n: p.detach().cpu().numpy()
               for n, p in runner.module.named_weights()}
    mine = {
        "device": runner.device, "torch_device": str(runner.torch_device),
        "rank": rank, "busy_s": statistics.median(busy),
        "peak_bytes": _peak_bytes(runner.torch_device, memory),
        "sent_bytes": runner.sent_bytes,
        # Medians over the timed steps, each part on its own.
        "breakdown": {k: statistics.median(p[k] for p in parts)
                      for k in parts[0]},
        "outputs": outs if args.outputs else {},
        "weights": weights if args.save_weights else {},
    }
    if graph.plan is not None:
        mine["replica"], mine["stage"] = runner.replica, runner.stage
    gathered = [None] * world
    dist.all_gather_object(gathered, mine)
    if rank != 0:
        return 0
    if args.outputs:
        merged = {}
        if graph.plan is not None:
            # Each replica's share of the global batch, in replica order.
            from .plan import output_axis
            parts = {}
            for g in sorted(gathered, key=lambda g: g["replica"]):
                for n, v in g["outputs"].items():
                    parts.setdefault(n, []).append(v)
            merged = {n: np.concatenate(vs, output_axis(graph.plan))
                      for n, vs in parts.items()}
        else:
            for g in gathered:
                merged.update(g["outputs"])
        write_npz(args.outputs, merged)
    if args.save_weights:
        merged = {}
        for g in gathered:
            merged.update(g["weights"])
        write_npz(args.save_weights, merged)
    if args.report:
        devs = [{k: g[k] for k in ("device", "torch_device", "rank",
                                   "busy_s", "peak_bytes", "sent_bytes",
                                   "breakdown", "replica", "stage")
                 if k in g}
                for g in gathered]
        report = _report(args, graph, world, times, devs, None,
                         float(total) if args.train else None)
        if graph.plan is not None:
            plan = graph.plan
            report["plan"] = {
                "microbatches": plan.microbatches,
                "schedule": plan.schedule, "replicas": plan.replicas,
                "stages": [s.replica_devices for s in plan.stages],
                "recompute": plan.recompute}
        write_json(args.report, report)
    return 0


if __name__ == "__main__":
    exec_with_huge_pages(sys.argv[1:])
    sys.exit(main())
