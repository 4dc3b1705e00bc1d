"""A placed ONNX model as a torch.nn.Module, and one training step of it.

Each node runs as its torch kernel on the torch device of its dp device;
an input made on another device is copied there once (the simulator's
"a tensor is sent to a given device once"). Weights and graph inputs
live on the device of their first reader. Autograd runs each gradient on
its forward op's device.
"""

import contextlib
import time

import numpy as np
import torch

from .graph import PlacedGraph, RuntimeError_
from .ops import OpError, run_kernel

FLOAT_TYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def as_tensor(array):
    """A tensor with its own copy of a numpy array (0-d arrays stay 0-d,
    which np.ascontiguousarray does not keep)."""
    return torch.from_numpy(np.array(array, copy=True, order="C"))


def parse_device_map(text):
    """'gpu:0=cpu,gpu:1=cuda:1' -> {'gpu:0': 'cpu', 'gpu:1': 'cuda:1'}."""
    mapping = {}
    if not text:
        return mapping
    if isinstance(text, dict):
        return dict(text)
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        dp_dev, sep, torch_dev = item.partition("=")
        if not sep or not dp_dev or not torch_dev:
            raise RuntimeError_("--device-map: error: expected "
                                "DP_DEVICE=TORCH_DEVICE, not '%s'" % item)
        try:
            torch.device(torch_dev)
        except RuntimeError:
            raise RuntimeError_("--device-map: error: '%s' is not a torch "
                                "device" % torch_dev)
        mapping[dp_dev] = torch_dev
    return mapping


def check_device_map(graph, device_map):
    """Refuses a device map that names a dp device the placement does not
    use (a typo would otherwise be ignored) or a CUDA device this machine
    does not have, before any weight is made or any rank started."""
    for dp_dev, torch_dev in sorted(device_map.items()):
        entry = "%s=%s" % (dp_dev, torch_dev)
        if dp_dev not in graph.rank_devices:
            raise RuntimeError_(
                "--device-map: error: '%s' maps %s, which the placement "
                "of %s does not use (it uses %s)"
                % (entry, dp_dev, graph.path, ", ".join(graph.rank_devices)))
        dev = torch.device(torch_dev)
        if dev.type != "cuda":
            continue
        have = torch.cuda.device_count() if torch.cuda.is_available() else 0
        index = dev.index if dev.index is not None else 0
        if index >= have:
            raise RuntimeError_(
                "--device-map: error: '%s': no cuda:%d on this machine (it "
                "has %d CUDA devices)" % (entry, index, have))


def resolve_device(dp_device, device_map):
    """The torch device that runs dp device `dp_device`."""
    if dp_device in device_map:
        return torch.device(device_map[dp_device])
    kind, _, index = dp_device.partition(":")
    if kind == "cpu":
        return torch.device("cpu")
    if kind == "gpu" and index.isdigit():
        n = int(index)
        if torch.cuda.is_available() and n < torch.cuda.device_count():
            return torch.device("cuda", n)
        have = torch.cuda.device_count() if torch.cuda.is_available() else 0
        raise RuntimeError_(
            "device '%s': error: no cuda:%d on this machine (it has %d CUDA "
            "devices); map it with --device-map %s=cpu (or =cuda:K)"
            % (dp_device, n, have, dp_device))
    raise RuntimeError_("device '%s': error: the device map cannot map it; "
                        "give --device-map %s=<torch device>"
                        % (dp_device, dp_device))


def make_inputs(graph, seed, given=None, shapes=None):
    """Graph inputs: the given arrays, else random ones from the seed, of
    the graph's shapes or those in `shapes` (name -> shape)."""
    given = given or {}
    out = {}
    gen = np.random.default_rng(seed)
    for name in graph.inputs:
        src = graph.sources[name]
        if name in given:
            out[name] = np.asarray(given[name])
            continue
        shape = (shapes or {}).get(name, src.shape)
        if any(d is None for d in shape):
            raise RuntimeError_(
                "graph input '%s': error: its shape %s is not static; give "
                "it with --inputs" % (name, shape))
        if np.issubdtype(src.dtype, np.floating):
            out[name] = gen.standard_normal(shape).astype(src.dtype)
        elif src.dtype == np.bool_:
            out[name] = np.ones(shape, dtype=np.bool_)
        else:
            # Token ids and masks: small non-negative integers. The
            # largest safe id is the smallest table this input indexes.
            out[name] = gen.integers(0, _index_bound(graph, name),
                                     size=shape).astype(src.dtype)
    return out


def _index_bound(graph, name):
    """The number of rows of the smallest table a Gather reads with `name`."""
    bound = None
    frontier = {name}
    for node in graph.nodes:
        if node.op_type == "Gather" and len(node.inputs) > 1 and \
                node.inputs[1] in frontier:
            table = graph.sources.get(node.inputs[0])
            if table is not None and table.shape:
                axis = node.attrs.get("axis", 0)
                rows = table.shape[axis]
                bound = rows if bound is None else min(bound, rows)
        elif node.op_type in ("Cast", "Reshape", "Unsqueeze", "Squeeze",
                              "Transpose", "Identity") and \
                node.inputs and node.inputs[0] in frontier:
            frontier.update(node.outputs)
    return 2 if bound is None else bound


class PlacedModule(torch.nn.Module):
    """The placed model; forward(*inputs) returns the graph outputs."""

    def __init__(self, graph, device_map=None, profile_names=True,
                 only_device=None, torch_devices=None):
        super().__init__()
        self.graph = graph
        self.device_map = parse_device_map(device_map)
        # One rank of several holds its own device's weights only.
        self.only_device = only_device
        if torch_devices is not None:
            self.torch_devices = dict(torch_devices)
        else:
            check_device_map(graph, self.device_map)
            self.torch_devices = {d: resolve_device(d, self.device_map)
                                  for d in graph.devices}
        self.profile_names = profile_names
        self._param_names = {}
        self._buffers_by_name = {}
        index = 0
        for s in graph.sources.values():
            if s.is_input or s.device is None:
                continue
            if only_device is not None and s.device != only_device:
                continue
            dev = self.torch_devices[s.device]
            t = as_tensor(s.load()).to(dev)
            if t.dtype in FLOAT_TYPES:
                p = torch.nn.Parameter(t)
                attr = "w%d" % index
                index += 1
                self.register_parameter(attr, p)
                self._param_names[s.name] = attr
            else:
                self._buffers_by_name[s.name] = t
        self._constants = {}
        for node in graph.nodes:
            if only_device is not None and node.device != only_device:
                continue
            if node.constant is not None:
                self._constants[node.name] = as_tensor(
                    node.constant).to(self.torch_devices[node.device])
        # Name each node's backward in profiles (see _run_node_marked).
        self.mark_backward = False
        # Bytes sent between dp devices in the last forward, per pair.
        self.sent_bytes = {}
        # Seconds spent in the nodes' kernels (ranks' time breakdown),
        # counted while time_kernels is set.
        self.time_kernels = False
        self.kernel_s = 0.0
        # Nodes run while time_kernels is set.
        self.nodes_timed = 0
        # A timeline.Recorder that each node's run goes to, or None.
        self.recorder = None

    def weight(self, name):
        attr = self._param_names.get(name)
        if attr is not None:
            return getattr(self, attr)
        return self._buffers_by_name.get(name)

    def named_weights(self):
        """(ONNX initializer name, parameter) for every float weight."""
        return [(n, getattr(self, a)) for n, a in self._param_names.items()]

    def weight_device(self, name):
        return self.graph.sources[name].device

    def forward(self, *args, **kwargs):
        env = self.run(self.bind_inputs(args, kwargs), free=True)
        outs = tuple(env[n] for n in self.graph.outputs)
        return outs[0] if len(outs) == 1 else outs

    def bind_inputs(self, args, kwargs):
        names = self.graph.inputs
        if len(args) > len(names):
            raise RuntimeError_("the model takes %d inputs, not %d"
                                % (len(names), len(args)))
        feeds = dict(zip(names, args))
        feeds.update(kwargs)
        for n in names:
            if n not in feeds:
                raise RuntimeError_("graph input '%s': error: not given" % n)
        out = {}
        for n in names:
            t = feeds[n]
            if not isinstance(t, torch.Tensor):
                t = as_tensor(t)
            src = self.graph.sources[n]
            if src.device is not None:
                t = t.to(self.torch_devices[src.device])
            out[n] = t
        return out

    def last_reads(self, nodes=None):
        """Tensor name -> the index in `nodes` (default: graph.nodes) of
        the last node that reads it, or that makes it when no node reads
        it."""
        if nodes is None and getattr(self, "_last_reads", None) is not None:
            return self._last_reads
        last = {}
        for i, node in enumerate(nodes if nodes is not None
                                 else self.graph.nodes):
            for name in list(node.inputs) + list(node.outputs):
                if name:
                    last[name] = i
        if nodes is None:
            self._last_reads = last
        return last

    def run(self, feeds, nodes=None, env=None, where=None, free=False,
            keep=(), on_output=None, fetch=None, cut=None, cut_made=None):
        """Runs `nodes` (default: all) and returns the tensor environment.

        `where` maps a tensor name to the dp device that holds it; copies
        to other devices are made once per device and counted in
        `sent_bytes`. With `free`, a tensor made or read here leaves the
        environment after its last reader among `nodes`, as an executor
        frees it, unless it is a graph output or in `keep`: autograd keeps
        what the backward pass needs, and nothing else stays. `on_output`
        is called with each tensor's name and value as soon as its node
        has run (ranks send what others read then, not after the run).
        `fetch(name)` gives an input that is not in `env` when the first
        node that reads it is about to run (a rank receives it then, not
        before the run), and it then stays in `env`. `cut` maps a tensor
        to the names of the nodes that read it detached: a leaf made when
        the tensor is, ``cut_made[name] = (made, leaf)``, so that a
        backward pass from those readers' outputs stops at the leaf and
        one from `made` covers the other nodes alone (float tensors that
        need a gradient only).
        """
        graph = self.graph
        last = self.last_reads(nodes) if free else {}
        keep = set(graph.outputs) | set(keep)
        if env is None:
            env = {}
            where = {}
            for name, s in graph.sources.items():
                if s.is_input:
                    continue
                t = self.weight(name)
                if t is not None:
                    env[name] = t
                    where[name] = s.device
            for name, t in feeds.items():
                env[name] = t
                where[name] = graph.sources[name].device
            self.sent_bytes = {}
        copies = {}
        for i, node in enumerate(nodes if nodes is not None
                                 else graph.nodes):
            dev = self.torch_devices[node.device]
            args = []
            for name in node.inputs:
                if not name:
                    args.append(None)
                    continue
                t = env.get(name)
                if cut is not None and name in cut_made and \
                        node.name in cut[name]:
                    t = cut_made[name][1]
                if t is None and fetch is not None:
                    t = fetch(name)
                    if t is not None:
                        env[name] = t
                        where[name] = node.device
                if t is None:
                    raise RuntimeError_("node '%s': error: input '%s' is not "
                                        "available" % (node.name, name))
                holder = where.get(name)
                if holder != node.device:
                    key = (name, node.device)
                    c = copies.get(key)
                    if c is None:
                        c = t.to(dev)
                        copies[key] = c
                        pair = (holder, node.device)
                        self.sent_bytes[pair] = self.sent_bytes.get(pair, 0) \
                            + t.numel() * t.element_size()
                    t = c
                args.append(t)
            outs = self.run_node(node, args)
            del args
            for name, t in zip(node.outputs, outs):
                if name:
                    if on_output is not None:
                        on_output(name, t)
                    if cut is not None and name in cut and \
                            t.requires_grad:
                        cut_made[name] = (t, t.detach().requires_grad_(True))
                    env[name] = t
                    where[name] = node.device
            del outs
            for name in list(node.inputs) + list(node.outputs):
                if name and last.get(name) == i and name not in keep and \
                        name not in graph.sources:
                    env.pop(name, None)
                    for d in self.graph.devices:
                        copies.pop((name, d), None)
        return env

    def run_node(self, node, args):
        if self.mark_backward and torch.is_grad_enabled() and any(
                isinstance(a, torch.Tensor) and a.requires_grad
                for a in args):
            return self._run_node_marked(node, args)
        return self._run_node(node, args)

    def _run_node_marked(self, node, args):
        """Runs node with its backward named '<node>/grad' in profiles.

        Torch without Kineto (Debian's 1.13) records no autograd sequence
        numbers, so a profile cannot tie backward kernels to their forward
        op; two pass-through autograd functions around the node open a
        region when the gradients of its outputs arrive and close it when
        those of its inputs are made.
        """
        idx = [i for i, a in enumerate(args)
               if isinstance(a, torch.Tensor) and a.requires_grad]
        box = {}
        marked = _BackwardEnd.apply(box, *[args[i] for i in idx])
        args = list(args)
        for i, t in zip(idx, marked):
            args[i] = t
        outs = self._run_node(node, args)
        grads = [i for i, o in enumerate(outs)
                 if isinstance(o, torch.Tensor) and o.requires_grad]
        if not grads:
            return outs
        begun = _BackwardBegin.apply(box, node.name + "/grad",
                                     *[outs[i] for i in grads])
        outs = list(outs)
        for i, t in zip(grads, begun):
            outs[i] = t
        return outs

    def _run_node(self, node, args):
        ctx = (torch.profiler.record_function(node.name)
               if self.profile_names else contextlib.nullcontext())
        with ctx:
            if node.constant is not None:
                return [self._constants[node.name]]
            start = time.perf_counter() if self.time_kernels or \
                self.recorder is not None else None
            try:
                outs = run_kernel(node.op_type, node.kernel, args, node.attrs,
                                  self.graph.opset, len(node.outputs))
            except OpError as e:
                raise RuntimeError_("node '%s': error: %s: %s"
                                    % (node.name, node.op_type, e))
            except (RuntimeError, IndexError, ValueError, TypeError) as e:
                raise RuntimeError_("node '%s': error: %s failed: %s"
                                    % (node.name, node.op_type, e))
            if start is not None:
                end = time.perf_counter()
                self.kernel_s += end - start
                self.nodes_timed += 1
                if self.recorder is not None:
                    self.recorder.span("op", node.name, start, end,
                                       type=node.op_type)
        return outs


class _BackwardBegin(torch.autograd.Function):
    """Identity forward; its backward opens the region of the node's
    backward (it runs first: the node's outputs pass through it)."""

    @staticmethod
    def forward(ctx, box, name, *outs):
        ctx.set_materialize_grads(False)
        ctx.box, ctx.name = box, name
        return tuple(o.view_as(o) for o in outs)

    @staticmethod
    def backward(ctx, *grads):
        region = torch.profiler.record_function(ctx.name)
        region.__enter__()
        ctx.box["region"] = region
        return (None, None) + grads


class _BackwardEnd(torch.autograd.Function):
    """Identity forward on the node's inputs; its backward closes the
    region (it runs once the gradients of every input are made)."""

    @staticmethod
    def forward(ctx, box, *ins):
        ctx.set_materialize_grads(False)
        ctx.box = box
        return tuple(i.view_as(i) for i in ins)

    @staticmethod
    def backward(ctx, *grads):
        region = ctx.box.pop("region", None)
        if region is not None:
            region.__exit__(None, None, None)
        return (None,) + grads


def load(path, device_map=None, seed=0, require_weights=False):
    """Loads a placed ONNX model as a `PlacedModule`."""
    graph = PlacedGraph(path, seed=seed, require_weights=require_weights)
    return PlacedModule(graph, device_map=device_map)


# --------------------------------------------------------------------------
# Training: the step training-graph simulates
# --------------------------------------------------------------------------

def loss_of(outputs, output_names, graph):
    """docs/transforms.md: the sum over float outputs of ReduceSum(y)."""
    loss = None
    for name, y in zip(output_names, outputs):
        if not y.is_floating_point():
            continue
        term = y.sum().float()
        loss = term if loss is None else loss + term.to(loss.device)
    if loss is None:
        raise RuntimeError_("the graph has no floating-point output to build "
                            "a loss from")
    return loss


class Optimizer:
    """sgd, momentum or adam, one weight at a time on its device.

    The arithmetic is torch.optim's (SGD with momentum's first step taking
    the gradient as its buffer; Adam with bias correction), written per
    weight so that each update is a named region of the profile
    (`<weight>/update`, dp's update op).
    """

    def __init__(self, kind, lr=None, momentum=0.9, betas=(0.9, 0.999),
                 eps=1e-8):
        if kind not in ("sgd", "momentum", "adam"):
            raise RuntimeError_("--optimizer: error: expected sgd, momentum "
                                "or adam, not '%s'" % kind)
        self.kind = kind
        self.lr = lr if lr is not None else (1e-3 if kind == "adam" else 0.01)
        self.momentum = momentum
        self.betas = betas
        self.eps = eps
        self.state = {}

    def step(self, named_params, profile_names=True):
        with torch.no_grad():
            for name, p in named_params:
                if p.grad is None:
                    continue
                ctx = (torch.profiler.record_function(name + "/update")
                       if profile_names else contextlib.nullcontext())
                with ctx:
                    self._update(name, p, p.grad)

    def _update(self, name, p, g):
        if self.kind == "sgd":
            p.add_(g, alpha=-self.lr)
            return
        if self.kind == "momentum":
            buf = self.state.get(name)
            if buf is None:
                buf = g.clone()
                self.state[name] = buf
            else:
                buf.mul_(self.momentum).add_(g)
            p.add_(buf, alpha=-self.lr)
            return
        b1, b2 = self.betas
        st = self.state.get(name)
        if st is None:
            st = [0, torch.zeros_like(p), torch.zeros_like(p)]
            self.state[name] = st
        st[0] += 1
        step, m, v = st
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        bc1 = 1 - b1 ** step
        bc2 = 1 - b2 ** step
        denom = (v.sqrt() / (bc2 ** 0.5)).add_(self.eps)
        p.addcdiv_(m, denom, value=-self.lr / bc1)


def train_step(module, feeds, optimizer, input_grads=True):
    """One training step in one process; returns the loss value."""
    for p in module.parameters():
        p.grad = None
    if input_grads:
        feeds = {n: (t.detach().requires_grad_(True)
                     if t.is_floating_point() else t)
                 for n, t in feeds.items()}
    env = module.run(feeds, free=True)
    outs = [env[n] for n in module.graph.outputs]
    del env
    ctx = (torch.profiler.record_function("loss") if module.profile_names
           else contextlib.nullcontext())
    with ctx:
        loss = loss_of(outs, module.graph.outputs, module.graph)
    loss.backward()
    optimizer.step(module.named_weights(), module.profile_names)
    return float(loss.detach())


def set_threads(n):
    """n intra-op threads for torch and for the BLAS it calls.

    torch.set_num_threads covers OpenMP and MKL; an OpenBLAS built with its
    own threads (Debian's torch calls one) ignores it and keeps one thread
    per core for every matrix product unless told through its own call.
    """
    torch.set_num_threads(n)
    try:
        with open("/proc/self/maps") as f:
            libs = sorted({line.split()[-1] for line in f
                           if "libopenblas" in line})
    except OSError:
        return
    import ctypes
    for lib in libs:
        try:
            ctypes.CDLL(lib).openblas_set_num_threads(n)
        except (OSError, AttributeError):
            pass


def synchronize(devices):
    for d in devices:
        if d.type == "cuda":
            torch.cuda.synchronize(d)
