"""One rank per device: a placed model across processes.

The nodes (in the model's topological order) are cut into segments: a
segment is a run of one device's nodes that no other segment both feeds
and depends on, so the segments form a DAG, which is then sorted into a
topological order. Every rank walks the same list of events (run a
segment, move a tensor from one rank to another), forward in segment
order and backward in reverse, so that all ranks agree on the order of
their messages:

* ``lazy`` (gloo): a sender posts a non-blocking send at its event; a
  receiver blocks in ``recv`` when it first needs the tensor. Sends never
  block, and a rank blocks only on a message from a segment earlier in
  the walk (later, in backward), so by induction on that order no rank
  waits forever, whatever the placement, cyclic device dependencies
  included.
* ``lockstep`` (NCCL, whose point-to-point calls can block each other
  when two ranks send first): the receiver takes the message at the
  sender's event. Each rank's messages are then a subsequence of one
  global order, and the earliest unfinished message always has both of
  its ranks waiting on it.

Backward runs each segment's autograd graph on its own: a segment's
inputs are leaves, its outputs are roots whose gradients come from the
segments that read them (messages from other ranks, or this rank's own
later segments). A weight or graph input read on another rank is sent
there at the start of the step; its gradient comes back at the end.
"""

import time

import numpy as np
import torch
import torch.distributed as dist

from .graph import RuntimeError_
from .module import FLOAT_TYPES, PlacedModule, loss_of, resolve_device


class Segment:
    __slots__ = ("index", "device", "nodes", "inputs", "outputs",
                 "reach", "loss_outputs")

    def __init__(self, index, device):
        self.index = index
        self.device = device
        self.nodes = []
        self.inputs = []     # tensors read, made outside the segment
        self.outputs = []    # tensors made here and read elsewhere
        self.reach = 0       # bit set of the segments this one depends on
        self.loss_outputs = []


def make_segments(graph):
    """Cuts the nodes into segments that form a DAG (see module doc)."""
    segs = []
    current = {}
    seg_of = {}   # tensor -> index of the segment that makes it
    for node in graph.nodes:
        d = node.device
        preds = {seg_of[t] for t in node.inputs if t in seg_of}
        cur = current.get(d)
        if cur is not None:
            bit = 1 << cur
            if any(p != cur and segs[p].reach & bit for p in preds):
                cur = None
        if cur is None:
            cur = len(segs)
            segs.append(Segment(cur, d))
            current[d] = cur
        seg = segs[cur]
        seg.nodes.append(node)
        added = 0
        for p in preds:
            if p != cur:
                added |= (1 << p) | segs[p].reach
        if added & ~seg.reach:
            seg.reach |= added
            # Segments that depend on this one depend on its new inputs too.
            bit = 1 << cur
            for other in segs:
                if other.reach & bit:
                    other.reach |= seg.reach
        for t in node.outputs:
            if t:
                seg_of[t] = cur
    assert all(not (s.reach >> s.index & 1) for s in segs), "a cycle"
    # A segment still open can take a node that reads a segment made after
    # it, so creation order need not be topological: sort the DAG (by
    # creation order among the ready ones) and renumber.
    deps = [set() for _ in segs]
    for seg in segs:
        for node in seg.nodes:
            for t in node.inputs:
                p = seg_of.get(t)
                if p is not None and p != seg.index:
                    deps[seg.index].add(p)
    segs, seg_of = _sorted_segments(segs, deps, seg_of)
    outputs = set(graph.outputs)
    for seg in segs:
        made, read = set(), []
        for node in seg.nodes:
            for t in node.inputs:
                if t and t not in made and t not in read:
                    read.append(t)
            made.update(t for t in node.outputs if t)
        seg.inputs = [t for t in read if t in seg_of or t in graph.sources]
        seg.loss_outputs = [t for t in graph.outputs if t in made]
    readers = {}
    for seg in segs:
        for t in seg.inputs:
            readers.setdefault(t, []).append(seg.index)
    for seg in segs:
        made = [t for n in seg.nodes for t in n.outputs if t]
        seg.outputs = [t for t in made if t in readers or t in outputs]
    return segs, seg_of, readers


def _sorted_segments(segs, deps, seg_of):
    import heapq
    users = [[] for _ in segs]
    indeg = [len(d) for d in deps]
    for i, d in enumerate(deps):
        for p in d:
            users[p].append(i)
    ready = [i for i in range(len(segs)) if not indeg[i]]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            indeg[u] -= 1
            if not indeg[u]:
                heapq.heappush(ready, u)
    assert len(order) == len(segs), "segments not a DAG"
    new_index = {old: new for new, old in enumerate(order)}
    out = [segs[i] for i in order]
    for seg in out:
        seg.index = new_index[seg.index]
        seg.reach = 0
    return out, {t: new_index[i] for t, i in seg_of.items()}


class DistRunner:
    """This rank's part of the placed model, and the step protocol."""

    def __init__(self, graph, rank, world, device_map=None, schedule=None,
                 local_rank=0, profile_names=True):
        devices = graph.devices
        if world != len(devices):
            raise RuntimeError_(
                "%s: error: the placement uses %d devices (%s), so it runs "
                "on %d ranks, not %d"
                % (graph.path, len(devices), ", ".join(devices),
                   len(devices), world))
        self.graph = graph
        self.rank = rank
        self.world = world
        self.device = devices[rank]
        self.rank_of = {d: i for i, d in enumerate(devices)}
        device_map = dict(device_map or {})
        dp_dev = self.device
        if dp_dev not in device_map and dp_dev.startswith("gpu:") and \
                torch.cuda.is_available():
            device_map[dp_dev] = "cuda:%d" % (local_rank %
                                              torch.cuda.device_count())
        self.torch_device = resolve_device(dp_dev, device_map)
        self.module = PlacedModule(graph, profile_names=profile_names,
                                   only_device=dp_dev,
                                   torch_devices={dp_dev: self.torch_device})
        self.backend = dist.get_backend() if dist.is_initialized() else None
        self.schedule = schedule or (
            "lockstep" if self.backend == "nccl" else "lazy")
        self.stage = (self.backend != "nccl" and
                      self.torch_device.type == "cuda")
        # NCCL moves CUDA tensors only; gloo CPU tensors (CUDA ones are
        # staged through host memory).
        self.comm_device = (self.torch_device if self.backend == "nccl"
                            else torch.device("cpu"))
        if self.torch_device.type == "cuda":
            torch.cuda.set_device(self.torch_device)
        self.segs, self.seg_of, self.readers = make_segments(graph)
        self._plan()
        self.shapes = {}
        self.sent_heads = set()
        self.input_grads = True
        self.wait_s = 0.0
        self.sent_bytes = 0
        self.recv_bytes = 0

    # ------------------------------------------------------------------
    # The plan: who sends what to whom, with one tag per message
    # ------------------------------------------------------------------

    def _owner(self, t):
        """The rank that makes tensor t (or holds the source t)."""
        if t in self.seg_of:
            return self.rank_of[self.segs[self.seg_of[t]].device]
        return self.rank_of[self.graph.sources[t].device]

    def _plan(self):
        graph = self.graph
        self.messages = {}     # (tensor, dst rank) -> tag
        # Forward: sources first (in graph order), then segment outputs.
        self.source_sends = []  # (tensor, dst)
        for t in graph.sources:
            s = graph.sources[t]
            if s.device is None:
                continue
            dsts = sorted({self.rank_of[self.segs[i].device]
                           for i in self.readers.get(t, [])} -
                          {self.rank_of[s.device]})
            for dst in dsts:
                self.messages[(t, dst)] = len(self.messages)
                self.source_sends.append((t, dst))
        self.seg_sends = {}     # segment -> [(tensor, dst)]
        for seg in self.segs:
            src = self.rank_of[seg.device]
            sends = []
            for t in seg.outputs:
                dsts = sorted({self.rank_of[self.segs[i].device]
                               for i in self.readers.get(t, [])} - {src})
                for dst in dsts:
                    self.messages[(t, dst)] = len(self.messages)
                    sends.append((t, dst))
            self.seg_sends[seg.index] = sends
        self.num_messages = len(self.messages)
        # Where a received tensor's gradient goes back: after the backward
        # of the earliest segment on the receiving rank that reads it.
        self.first_reader = {}
        for (t, dst) in self.messages:
            segs = [i for i in self.readers.get(t, [])
                    if self.rank_of[self.segs[i].device] == dst]
            self.first_reader[(t, dst)] = min(segs)

    def _tag(self, t, dst, grad=False):
        return self.messages[(t, dst)] + (self.num_messages if grad else 0)

    # ------------------------------------------------------------------
    # Messages
    # ------------------------------------------------------------------

    def _isend(self, tensor, dst, tag, count=True):
        t = tensor.detach()
        if self.stage:
            t = t.cpu()
        t = t.contiguous()
        if count:
            self.sent_bytes += t.numel() * t.element_size()
        self.pending.append((dist.isend(t, dst, tag=tag), t))

    def _recv(self, like_shape, dtype, src, tag):
        device = torch.device("cpu") if self.stage else self.torch_device
        buf = torch.empty(like_shape, dtype=dtype, device=device)
        start = time.perf_counter()
        dist.recv(buf, src, tag=tag)
        self.wait_s += time.perf_counter() - start
        self.recv_bytes += buf.numel() * buf.element_size()
        return buf.to(self.torch_device) if self.stage else buf

    def _send(self, t, dst, value, grad=False):
        tag = self._tag(t, dst, grad)
        if not grad and (t, dst) not in self.sent_heads:
            # The first time: the shape and type, so that the receiver
            # can allocate the buffer.
            head = torch.zeros(10, dtype=torch.int64,
                               device=self.comm_device)
            head[0] = _DTYPES.index(value.dtype)
            head[1] = value.dim()
            if value.dim():
                head[2:2 + value.dim()] = torch.tensor(list(value.shape))
            self._isend(head, dst, tag + 2 * self.num_messages, count=False)
            self.sent_heads.add((t, dst))
        self._isend(value, dst, tag)

    def _receive(self, t):
        """The tensor t from its owner (once per step)."""
        if t in self.received:
            return self.received[t]
        src = self._owner(t)
        tag = self._tag(t, self.rank)
        if t not in self.shapes:
            head = torch.empty(10, dtype=torch.int64,
                               device=self.comm_device)
            start = time.perf_counter()
            dist.recv(head, src, tag=tag + 2 * self.num_messages)
            self.wait_s += time.perf_counter() - start
            rank = int(head[1])
            self.shapes[t] = (tuple(int(v) for v in head[2:2 + rank]),
                              _DTYPES[int(head[0])])
        shape, dtype = self.shapes[t]
        v = self._recv(shape, dtype, src, tag)
        self.received[t] = v
        return v

    def _needs_grad_message(self, t):
        """Whether tensor t's gradient goes back to its owner.

        Both sides decide from the graph alone: every floating-point
        tensor that crosses ranks, but graph inputs only with input_grads.
        """
        s = self.graph.sources.get(t)
        if s is not None:
            if not _is_float_np(s.dtype):
                return False
            return not s.is_input or self.input_grads
        if t in self.shapes:
            return self.shapes[t][1] in FLOAT_TYPES
        return self.env[t].dtype in FLOAT_TYPES

    # ------------------------------------------------------------------
    # One step
    # ------------------------------------------------------------------

    def step(self, feeds, train=False, optimizer=None, input_grads=True):
        """Runs one forward (and backward and update) step of this rank.

        feeds: the graph inputs this rank owns (others are ignored).
        Returns this rank's graph outputs and its part of the loss.
        """
        graph = self.graph
        mod = self.module
        self.input_grads = input_grads
        self.pending = []
        self.env = {}
        self.received = {}
        self.wait_s = 0.0
        self.sent_bytes = 0
        self.recv_bytes = 0
        lockstep = self.schedule == "lockstep"
        if train:
            for p in mod.parameters():
                p.grad = None
        for name, s in graph.sources.items():
            if s.device != self.device:
                continue
            if s.is_input:
                t = feeds[name]
                if not isinstance(t, torch.Tensor):
                    t = torch.from_numpy(t)
                t = t.to(self.torch_device)
                if train and input_grads and t.dtype in FLOAT_TYPES:
                    t = t.detach().requires_grad_(True)
                self.env[name] = t
            else:
                t = mod.weight(name)
                if t is not None:
                    self.env[name] = t
        for t, dst in self.source_sends:
            if self._owner(t) == self.rank:
                self._send(t, dst, self.env[t])
            elif lockstep and dst == self.rank:
                self._receive(t)
        seg_leaves = {}
        for seg in self.segs:
            if seg.device == self.device:
                seg_leaves[seg.index] = self._run_segment(seg, train)
                for t, dst in self.seg_sends[seg.index]:
                    self._send(t, dst, self.env[t])
            elif lockstep:
                for t, dst in self.seg_sends[seg.index]:
                    if dst == self.rank:
                        self._receive(t)
        outputs = {t: self.env[t] for t in graph.outputs
                   if t in self.env and self._owner(t) == self.rank}
        terms = [(t, v) for t, v in outputs.items() if v.is_floating_point()]
        loss = None
        if terms:
            with torch.profiler.record_function("loss"):
                loss = loss_of([v for _, v in terms], [n for n, _ in terms],
                               graph)
        if train:
            self._backward(seg_leaves, terms, lockstep)
            optimizer.step(mod.named_weights(), mod.profile_names)
        for w, _ in self.pending:
            start = time.perf_counter()
            w.wait()
            self.wait_s += time.perf_counter() - start
        self.pending = []
        return outputs, loss

    def _run_segment(self, seg, train):
        """Runs seg's nodes; its inputs become leaves when training."""
        leaves = {}
        env = self.env
        local = {}
        for t in seg.inputs:
            if self._owner(t) == self.rank:
                v = env[t]
                if train and t not in self.graph.sources and \
                        v.dtype in FLOAT_TYPES:
                    # Another segment of this rank made it: cut here.
                    v = v.detach().requires_grad_(True)
                    leaves[t] = v
            else:
                v = self._receive(t)
                if train and self._needs_grad_message(t):
                    v = v.detach().requires_grad_(True)
                    leaves[t] = v
            local[t] = v
        where = {t: seg.device for t in local}
        # Only what other segments, the loss and the backward pass read
        # stays; autograd keeps the rest that the backward pass needs.
        out_env = self.module.run({}, nodes=seg.nodes, env=local,
                                  where=where, free=True, keep=seg.outputs)
        for t in seg.outputs:
            env[t] = out_env[t]
        return leaves

    def _grad_from(self, t, dst):
        shape, dtype = self.shapes_of(t)
        return self._recv(shape, dtype, dst, self._tag(t, dst, grad=True))

    def shapes_of(self, t):
        v = self.env[t]
        return tuple(v.shape), v.dtype

    def _backward(self, seg_leaves, terms, lockstep):
        grads = {}       # tensor this rank made -> its gradient so far
        early = {}       # lockstep: gradients taken before they are used
        sent_acc = {}    # received tensor -> gradient summed over readers
        loss_roots = dict(terms)
        graph = self.graph
        for seg in reversed(self.segs):
            if seg.device != self.device:
                if lockstep:
                    # Take the gradients that seg's rank sends now.
                    for (t, dst), first in self.first_reader.items():
                        if first == seg.index and dst != self.rank and \
                                self._owner(t) == self.rank and \
                                t not in graph.sources and \
                                self._needs_grad_message(t):
                            early[(t, dst)] = self._grad_from(t, dst)
                continue
            roots, rgrads = [], []
            for t in seg.outputs:
                g = grads.pop(t, None)
                for (tt, dst) in self.seg_sends[seg.index]:
                    if tt != t or not self._needs_grad_message(t):
                        continue
                    r = early.pop((t, dst), None)
                    if r is None:
                        r = self._grad_from(t, dst)
                    g = r if g is None else g + r
                v = self.env[t]
                if t in loss_roots:
                    one = torch.ones_like(v)
                    g = one if g is None else g + one
                if g is not None and v.requires_grad:
                    roots.append(v)
                    rgrads.append(g)
            if roots:
                torch.autograd.backward(roots, rgrads)
            for t, leaf in seg_leaves[seg.index].items():
                g = leaf.grad
                owner = self._owner(t)
                if owner == self.rank:
                    if g is not None:
                        grads[t] = g if t not in grads else grads[t] + g
                    continue
                if g is None:
                    g = torch.zeros_like(leaf)
                sent_acc[t] = g if t not in sent_acc else sent_acc[t] + g
                if t not in graph.sources and \
                        self.first_reader[(t, self.rank)] == seg.index:
                    self._isend(sent_acc[t], owner,
                                self._tag(t, self.rank, grad=True))
        # Gradients of sources read on other ranks go back to their owners,
        # in the order of the source messages.
        for (t, dst) in self.source_sends:
            if not self._needs_grad_message(t):
                continue
            owner = self._owner(t)
            if dst == self.rank:
                g = sent_acc.get(t)
                if g is None:
                    g = torch.zeros(self.shapes[t][0],
                                    dtype=self.shapes[t][1],
                                    device=self.torch_device)
                self._isend(g, owner, self._tag(t, dst, grad=True))
            elif owner == self.rank:
                v = self.env[t]
                r = self._grad_from(t, dst)
                if v.grad is None:
                    v.grad = r.clone()
                else:
                    v.grad.add_(r)


def _is_float_np(dtype):
    return np.issubdtype(dtype, np.floating)


_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
           torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
           torch.bool]
