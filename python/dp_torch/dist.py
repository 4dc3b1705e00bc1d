"""One rank per device: a placed model across processes.

What each rank runs is the placed model's schedule (``dp.schedule``,
written by emit from the simulated step; schedule.py reads it): the
model cut into segments (runs of one device's nodes that form a DAG) and
one global order of items, each segment's forward and, when training,
its backward. The order extends the items' dependencies (a forward after
the forwards it reads from; a backward after its forward and after the
backwards of the segments that read it). A model without a schedule is
cut here (``_cut_segments``) and runs every forward in segment order,
then every backward in reverse: that order extends them too. Every rank
walks the same order and runs its own items, so that all ranks agree on
their messages:

* ``lazy`` (gloo): a sender posts a non-blocking send at its item; from
  the second step on, a receiver posts all its receives at the start of
  the step (gloo moves a message's data only once its receive is posted,
  so posted late a message would wait for its reader, not its maker),
  and waits for one when it first needs the tensor. Sends never block,
  and a rank waits only for a message sent at an item earlier in the
  order, so by induction along the order no rank waits forever, whatever
  the placement and the valid order, cyclic device dependencies
  included.
* ``lockstep`` (NCCL, whose point-to-point calls can block each other
  when two ranks send first): the receiver takes the message at the
  sender's item, nothing is posted ahead. Each rank's messages are then
  a subsequence of one global order, and the earliest unfinished message
  always has both of its ranks waiting on it.

Backward runs each segment's autograd graph on its own: a segment's
inputs are leaves, its outputs are roots whose gradients come from the
segments that read them (messages from other ranks, or this rank's own
segments). The gradient of a received tensor goes back from the
backward of its last reader on the receiving rank (last in the order).
A segment's backward runs in chunks (``_plan_backward``), so that a
gradient is taken when the backward reaches its node and sent when the
backward of its reader has run, not at the segment's ends.
A weight or graph input read on another rank is sent there at the start
of the step; its gradient comes back after the last item.
"""

import time

import numpy as np
import torch
import torch.distributed as dist

from .graph import RuntimeError_
from .module import (FLOAT_TYPES, PlacedModule, check_device_map, loss_of,
                     resolve_device)
from .schedule import check_order, full_order


class Segment:
    __slots__ = ("index", "device", "nodes", "backward_nodes", "inputs",
                 "outputs", "reach", "loss_outputs")

    def __init__(self, index, device):
        self.index = index
        self.device = device
        self.nodes = []
        self.backward_nodes = None  # in backward order; None: reversed
        self.inputs = []     # tensors read, made outside the segment
        self.outputs = []    # tensors made here and read elsewhere
        self.reach = 0       # bit set of the segments this one depends on
        self.loss_outputs = []


def make_segments(graph):
    """The segments the runtime runs: the placed model's schedule's (emit's
    segmentation, docs/emit.md) when it has one, else cut here (see
    module doc). Returns (segments in run order, tensor -> index of the
    segment that makes it, tensor -> indices of the segments that read
    it)."""
    if graph.schedule is not None:
        return _scheduled_segments(graph)
    return _cut_segments(graph)


def _scheduled_segments(graph):
    by_name = {n.name: n for n in graph.nodes}
    segs = []
    seg_of = {}
    for k, (device, names) in enumerate(graph.schedule.segments):
        seg = Segment(k, device)
        # Each segment's nodes in the schedule's order (the simulated one).
        seg.nodes = [by_name[n] for n in names]
        for node in seg.nodes:
            for t in node.outputs:
                if t:
                    seg_of[t] = k
        segs.append(seg)
    made = set()
    for seg in segs:
        for node in seg.nodes:
            for t in node.inputs:
                p = seg_of.get(t)
                if p is None or p < seg.index or (p == seg.index and
                                                  t in made):
                    continue
                raise RuntimeError_(
                    "%s: metadata 'dp.schedule': segment %d: error: node "
                    "'%s' reads '%s', which %s" % (
                        graph.path, seg.index, node.name, t,
                        "a later node of the segment makes"
                        if p == seg.index else
                        "the later segment %d makes" % p))
            made.update(t for t in node.outputs if t)
    for seg, names in zip(segs, graph.schedule.backward):
        if names is None:
            continue
        seg.backward_nodes = [by_name[n] for n in names]
        # Reverse topological: a node's backward after its readers'.
        done = set()
        for node in seg.backward_nodes:
            for t in node.inputs:
                if seg_of.get(t) == seg.index and t in done:
                    raise RuntimeError_(
                        "%s: metadata 'dp.schedule': segment %d: error: in "
                        "'backward_nodes', node '%s' comes after the node "
                        "that makes '%s', which it reads"
                        % (graph.path, seg.index, node.name, t))
            done.update(t for t in node.outputs if t)
    return _connect(graph, segs, seg_of)


def _cut_segments(graph):
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
    return _connect(graph, segs, seg_of)


def _connect(graph, segs, seg_of):
    """Each segment's inputs and outputs, and the readers of each tensor."""
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


class Messenger:
    """One rank's point-to-point messages and the account of its step's
    time: what DistRunner (one rank per device) and plan.PlanRunner (a
    pipeline stage of a replica per rank) share."""

    def _setup(self, graph, rank, world, device_map, local_rank):
        """This rank's device (the rank-th of graph.rank_devices), its
        torch device and the backend's; checks the device map."""
        devices = graph.rank_devices
        self.graph = graph
        self.rank = rank
        self.world = world
        self.device = devices[rank]
        self.rank_of = {d: i for i, d in enumerate(devices)}
        device_map = dict(device_map or {})
        check_device_map(graph, device_map)
        dp_dev = self.device
        if dp_dev not in device_map and dp_dev.startswith("gpu:") and \
                torch.cuda.is_available():
            device_map[dp_dev] = "cuda:%d" % (local_rank %
                                              torch.cuda.device_count())
        self.torch_device = resolve_device(dp_dev, device_map)
        self.backend = dist.get_backend() if dist.is_initialized() else None
        # CUDA tensors go through host memory on gloo.
        self.via_host = (self.backend != "nccl" and
                         self.torch_device.type == "cuda")
        # NCCL moves CUDA tensors only; gloo CPU tensors.
        self.comm_device = (self.torch_device if self.backend == "nccl"
                            else torch.device("cpu"))
        if self.torch_device.type == "cuda":
            torch.cuda.set_device(self.torch_device)
        self.times = _Times()
        self.sent_bytes = 0
        self.recv_bytes = 0
        self.pending = []
        self.posted = {}
        # A timeline.Recorder for profiled steps, or None.
        self.recorder = None

    # ------------------------------------------------------------------
    # Messages
    # ------------------------------------------------------------------

    def _isend(self, tensor, dst, tag, count=True, name=""):
        start = time.perf_counter()
        t = tensor.detach()
        if self.via_host:
            t = t.cpu()
        t = t.contiguous()
        nbytes = t.numel() * t.element_size()
        if count:
            self.sent_bytes += nbytes
        self.pending.append((dist.isend(t, dst, tag=tag), t))
        self.times.send += time.perf_counter() - start
        if self.recorder is not None:
            self.recorder.span("send", name, start, tag=tag,
                               to=self.graph.rank_devices[dst], bytes=nbytes)

    def _wait(self, work, tag=None, name=""):
        start = time.perf_counter()
        work.wait()
        self.times.wait += time.perf_counter() - start
        if tag is not None and self.recorder is not None:
            self.recorder.span("wait", name, start, tag=tag)

    def _recv_now(self, buf, src, tag, name=""):
        start = time.perf_counter()
        dist.recv(buf, src, tag=tag)
        self.times.wait += time.perf_counter() - start
        if self.recorder is not None:
            self.recorder.span("wait", name, start, tag=tag)

    def _buffer(self, shape, dtype):
        device = torch.device("cpu") if self.via_host else self.torch_device
        return torch.empty(shape, dtype=dtype, device=device)

    def _take(self, shape, dtype, src, tag, name=""):
        """The message `tag` from src: its posted receive, or one now."""
        got = self.posted.pop(tag, None)
        if got is not None:
            self._wait(got[0], tag, name)
            buf = got[1]
        else:
            buf = self._buffer(shape, dtype)
            self._recv_now(buf, src, tag, name)
        self.recv_bytes += buf.numel() * buf.element_size()
        return buf.to(self.torch_device) if self.via_host else buf

    def _begin_step(self, train):
        """Resets the step's account; drops the weights' gradients when
        training. Returns the step's start time."""
        mod = self.module
        self.pending = []
        self.times = _Times()
        mod.kernel_s = 0.0
        mod.time_kernels = True
        self.sent_bytes = 0
        self.recv_bytes = 0
        if train:
            for p in mod.parameters():
                p.grad = None
        return time.perf_counter()

    def _update(self, optimizer):
        """The optimizer's step on this rank's weights."""
        mod = self.module
        start = time.perf_counter()
        optimizer.step(mod.named_weights(), mod.profile_names)
        self.times.ops += time.perf_counter() - start
        if self.recorder is not None:
            self.recorder.span("op", "update", start)

    def _end_step(self, step_start):
        """Waits for the step's sends and closes its account."""
        for w, _ in self.pending:
            self._wait(w)
        self.pending = []
        assert not self.posted, "a posted receive was never taken"
        self.module.time_kernels = False
        self.times.kernels = self.module.kernel_s
        self.times.step = time.perf_counter() - step_start

    def _send_head(self, value, dst, tag, name):
        """The shape and type of a tensor about to be sent, for a
        receiver that does not know them yet."""
        head = torch.zeros(10, dtype=torch.int64, device=self.comm_device)
        head[0] = _DTYPES.index(value.dtype)
        head[1] = value.dim()
        if value.dim():
            head[2:2 + value.dim()] = torch.tensor(list(value.shape))
        self._isend(head, dst, tag, count=False, name=name + "/head")

    def _recv_head(self, src, tag, name):
        """(shape, dtype) that _send_head sent."""
        head = torch.empty(10, dtype=torch.int64, device=self.comm_device)
        self._recv_now(head, src, tag, name + "/head")
        rank = int(head[1])
        return (tuple(int(v) for v in head[2:2 + rank]),
                _DTYPES[int(head[0])])

    def breakdown(self):
        """Where the last step's time went on this rank, in seconds:
        ops (node kernels, autograd's backward, the optimizer), dispatch
        (the runtime's Python between kernels), send (posting sends),
        recv (posting receives), wait (blocked on messages), allreduce
        (blocked on the gradients' all-reduces), other."""
        t = self.times
        ops = t.kernels + t.ops
        dispatch = max(0.0, t.run - t.kernels)
        other = max(0.0, t.step - ops - dispatch - t.send - t.recv -
                    t.wait - t.allreduce)
        return {"ops_s": ops, "dispatch_s": dispatch, "send_s": t.send,
                "recv_s": t.recv, "wait_s": t.wait,
                "allreduce_s": t.allreduce, "other_s": other,
                "step_s": t.step}


class DistRunner(Messenger):
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
        self._setup(graph, rank, world, device_map, local_rank)
        dp_dev = self.device
        self.module = PlacedModule(graph, profile_names=profile_names,
                                   only_device=dp_dev,
                                   torch_devices={dp_dev: self.torch_device})
        self.schedule = schedule or (
            "lockstep" if self.backend == "nccl" else "lazy")
        self.segs, self.seg_of, self.readers = make_segments(graph)
        order = graph.schedule.order if graph.schedule is not None else None
        self.orders = {train: full_order(order, len(self.segs), train)
                       for train in (False, True)}
        deps = [set() for _ in self.segs]
        for seg in self.segs:
            for t in seg.inputs:
                if t in self.seg_of:
                    deps[seg.index].add(self.seg_of[t])
        check_order(graph.path, self.orders[True], deps)
        self._plan()
        # (shape, dtype) of every tensor that crosses ranks, once seen.
        self.meta = {}
        self.sent_heads = set()
        self.input_grads = True

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
        # The same by tensor: segment -> {tensor: [dst, ...]}.
        self.seg_dsts = {}
        for k, sends in self.seg_sends.items():
            dsts = self.seg_dsts[k] = {}
            for t, dst in sends:
                dsts.setdefault(t, []).append(dst)
        self.num_messages = len(self.messages)
        # Where a received tensor's gradient goes back: after the backward
        # of the reader on the receiving rank that comes last in the
        # order, when the gradient summed over its readers is complete.
        position = {item: i for i, item in enumerate(self.orders[True])}
        self.last_reader = {}
        for (t, dst) in self.messages:
            segs = [i for i in self.readers.get(t, [])
                    if self.rank_of[self.segs[i].device] == dst]
            self.last_reader[(t, dst)] = max(
                segs, key=lambda i: position[("backward", i)])
        self._plan_backward()

    def _grad_goes_back(self, t, seg):
        """Whether seg sends t's gradient back to t's owner: t is made by
        a segment of another rank, and seg is its last reader on seg's
        rank (a source's gradient goes back after the last item)."""
        rank = self.rank_of[seg.device]
        return t not in self.graph.sources and self._owner(t) != rank and \
            self.last_reader.get((t, rank)) == seg.index

    def _plan_backward(self):
        """Where each segment's backward stops to take or send a message.

        One autograd call for a whole segment would take every gradient of
        its outputs before it starts and send those of its inputs only when
        it ends, so that a rank waiting for one of them would wait for the
        whole segment, where the simulator runs each op's backward on its
        own. So a segment's backward runs its nodes in chunks, in its
        backward order (the schedule's ``backward_nodes``, the simulated
        one; else the reverse of the forward order): a chunk starts at a
        node whose output another rank reads (its gradient is taken there,
        when the nodes before it have run their backward) and ends after
        the last reader of a tensor whose gradient this segment sends
        back (it goes then). A chunk is one autograd call; the forward
        gives a tensor to a reader in another chunk detached (module.run's
        `cut`), so that each call stops at the chunk's edge.

        Every rank plans every segment, so that in lockstep a receiver
        takes a segment's gradients in the order its rank sends them.
        """
        self.chunks = {}      # segment -> number of chunks
        self.cut = {}         # segment -> {tensor: readers that get it
        #                       detached}
        self.chunk_roots = {}  # segment -> per chunk, what it made that
        #                        others read (backward starts from them)
        self.completes = {}   # segment -> per chunk, the inputs whose
        #                       gradient is whole once it has run
        self.grad_sends = {}  # segment -> [(tensor, owner)], in send order
        for seg in self.segs:
            rank = self.rank_of[seg.device]
            inputs = set(seg.inputs)
            order = seg.backward_nodes or seg.nodes[::-1]
            # The last reader, in backward order, of every input whose
            # gradient this segment sends.
            last = {}
            for i, node in enumerate(order):
                for t in node.inputs:
                    if t in inputs and self._grad_goes_back(t, seg):
                        last[t] = i
            ends = set(last.values())
            chunk_of = {}
            c = 0
            for i, node in enumerate(order):
                read_away = any(
                    self.rank_of[self.segs[j].device] != rank
                    for t in node.outputs if t
                    for j in self.readers.get(t, ()))
                if read_away and i and (i - 1) not in ends:
                    c += 1
                chunk_of[node.name] = c
                if i in ends and i + 1 < len(order):
                    c += 1
            count = c + 1
            made_in = {t: chunk_of[n.name] for n in seg.nodes
                       for t in n.outputs if t}
            cut = {}
            whole = {}  # input -> the chunk of its last reader
            for node in seg.nodes:
                c = chunk_of[node.name]
                for t in node.inputs:
                    if t in made_in and made_in[t] != c:
                        cut.setdefault(t, set()).add(node.name)
                    elif t in inputs:
                        whole[t] = max(whole.get(t, c), c)
            outputs = set(seg.outputs)
            roots = [[] for _ in range(count)]
            for t, c in made_in.items():
                if t in outputs or t in cut:
                    roots[c].append(t)
            completes = [[] for _ in range(count)]
            for t in seg.inputs:
                completes[whole[t]].append(t)
            self.chunks[seg.index] = count
            self.cut[seg.index] = cut
            self.chunk_roots[seg.index] = roots
            self.completes[seg.index] = completes
            self.grad_sends[seg.index] = [
                (t, self._owner(t)) for c in range(count)
                for t in completes[c] if self._grad_goes_back(t, seg)]

    def _tag(self, t, dst, grad=False):
        return self.messages[(t, dst)] + (self.num_messages if grad else 0)

    def _post_receives(self, train):
        """Posts, at the start of a step, every receive of the step whose
        shape is known (all of them after the first step), so that each
        message moves as soon as its sender posts it, as the simulator's
        transfers start when their producer ends, instead of when this
        rank reaches the reader (gloo sends a message's data only once
        its receive is posted). Not in lockstep: NCCL's calls between two
        ranks must come in one order on both."""
        self.posted = {}
        if self.schedule == "lockstep":
            return
        start = time.perf_counter()
        for (t, dst), tag in self.messages.items():
            if t not in self.meta:
                continue
            shape, dtype = self.meta[t]
            owner = self._owner(t)
            if dst == self.rank:
                buf = self._buffer(shape, dtype)
                self.posted[tag] = (dist.irecv(buf, owner, tag=tag), buf)
            elif train and owner == self.rank and \
                    self._needs_grad_message(t):
                gtag = self._tag(t, dst, grad=True)
                buf = self._buffer(shape, dtype)
                self.posted[gtag] = (dist.irecv(buf, dst, tag=gtag), buf)
        self.times.recv += time.perf_counter() - start

    def _send(self, t, dst, value, grad=False):
        tag = self._tag(t, dst, grad)
        if not grad and (t, dst) not in self.sent_heads:
            # The first time: the shape and type, so that the receiver
            # can allocate the buffer.
            self._send_head(value, dst, tag + 2 * self.num_messages, t)
            self.sent_heads.add((t, dst))
        if not grad:
            self.meta[t] = (tuple(value.shape), value.dtype)
        self._isend(value, dst, tag, name=t)

    def _receive(self, t):
        """The tensor t from its owner (once per step)."""
        if t in self.received:
            return self.received[t]
        src = self._owner(t)
        tag = self._tag(t, self.rank)
        if t not in self.meta:
            self.meta[t] = self._recv_head(src, tag + 2 * self.num_messages,
                                           t)
        shape, dtype = self.meta[t]
        v = self._take(shape, dtype, src, tag, t)
        self.received[t] = v
        return v

    def _needs_grad_message(self, t):
        """Whether tensor t's gradient goes back to its owner.

        Both sides decide from the graph and the tensor's type alone:
        every floating-point tensor that crosses ranks, but graph inputs
        only with input_grads.
        """
        s = self.graph.sources.get(t)
        if s is not None:
            if not _is_float_np(s.dtype):
                return False
            return not s.is_input or self.input_grads
        if t in self.meta:
            return self.meta[t][1] in FLOAT_TYPES
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
        step_start = self._begin_step(train)
        self.input_grads = input_grads
        self.env = {}
        self.received = {}
        lockstep = self.schedule == "lockstep"
        self._post_receives(train)
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
        back = _Backward(self, train)
        for phase, k in self.orders[train]:
            seg = self.segs[k]
            mine = seg.device == self.device
            if phase == "forward":
                if mine:
                    seg_leaves[k] = self._run_segment(seg, train)
                elif lockstep:
                    for t, dst in self.seg_sends[k]:
                        if dst == self.rank:
                            self._receive(t)
            elif mine:
                back.run(seg, *seg_leaves.pop(k))
            elif lockstep:
                back.take_early(seg)
        outputs = {t: self.env[t] for t in graph.outputs
                   if t in self.env and self._owner(t) == self.rank}
        terms = [(t, v) for t, v in outputs.items() if v.is_floating_point()]
        loss = None
        if terms:
            with torch.no_grad(), torch.profiler.record_function("loss"):
                loss = loss_of([v for _, v in terms], [n for n, _ in terms],
                               graph)
        if train:
            back.source_gradients()
            self._update(optimizer)
        self._end_step(step_start)
        return outputs, loss

    def _run_segment(self, seg, train):
        """Runs seg's nodes; its inputs become leaves when training. A
        tensor from another rank is taken when the first node that reads
        it runs, as the simulator starts each op when its inputs are
        there: the nodes before it run meanwhile."""
        leaves = {}
        env = self.env
        local = {}
        for t in seg.inputs:
            if self._owner(t) != self.rank:
                continue
            v = env[t]
            if train and t not in self.graph.sources and \
                    v.dtype in FLOAT_TYPES:
                # Another segment of this rank made it: cut here.
                v = v.detach().requires_grad_(True)
                leaves[t] = v
            local[t] = v
        remote = {t for t in seg.inputs if self._owner(t) != self.rank}

        def fetch(t):
            if t not in remote:
                return None
            v = self._receive(t)
            if train and self._needs_grad_message(t):
                v = v.detach().requires_grad_(True)
                leaves[t] = v
            return v

        where = {t: seg.device for t in local}
        # Only what other segments, the loss and the backward pass read
        # stays; autograd keeps the rest that the backward pass needs.
        # Each output goes to the ranks that read it as soon as its node
        # has run, as the simulator sends a tensor when its op ends.
        sends = self.seg_dsts[seg.index]

        def send(name, value):
            for dst in sends.get(name, ()):
                sent = time.perf_counter()
                self._send(name, dst, value)
                # Not the segment's: _send counts its own time.
                self.times.run -= time.perf_counter() - sent

        def take(name):
            got = time.perf_counter()
            v = fetch(name)
            # Not the segment's: receiving counts its own time.
            self.times.run -= time.perf_counter() - got
            return v

        made = {}
        start = time.perf_counter()
        out_env = self.module.run({}, nodes=seg.nodes, env=local,
                                  where=where, free=True, keep=seg.outputs,
                                  on_output=send if sends else None,
                                  fetch=take if remote else None,
                                  cut=self.cut[seg.index] if train else None,
                                  cut_made=made)
        self.times.run += time.perf_counter() - start
        for t in seg.outputs:
            env[t] = out_env[t]
        return leaves, made

    def _grad_from(self, t, dst):
        shape, dtype = self.meta[t]
        return self._take(shape, dtype, dst, self._tag(t, dst, grad=True),
                          t + "/grad")

class _Times:
    """Seconds of one step on one rank, by what they were spent on."""
    __slots__ = ("step", "run", "kernels", "ops", "send", "recv", "wait",
                 "allreduce")

    def __init__(self):
        self.step = self.run = self.kernels = self.ops = 0.0
        self.send = self.recv = self.wait = self.allreduce = 0.0


class _Backward:
    """The backward items of one step on one rank."""

    def __init__(self, runner, train):
        self.r = runner
        self.grads = {}     # tensor this rank made -> its gradient so far
        self.early = {}     # lockstep: gradients taken before they are used
        self.sent_acc = {}  # received tensor -> gradient summed over readers

    def take_early(self, seg):
        """Lockstep: the gradients that seg's rank sends at its backward
        item, taken now, in the order it sends them."""
        r = self.r
        dst = r.rank_of[seg.device]
        for t, owner in r.grad_sends[seg.index]:
            if owner == r.rank and r._needs_grad_message(t):
                self.early[(t, dst)] = r._grad_from(t, dst)

    def run(self, seg, leaves, made):
        """seg's backward, chunk by chunk in its backward order (see
        DistRunner._plan_backward): each chunk takes the gradients of what
        it made when it starts, and the gradients its backward completes
        go back when it ends. made: the cut tensors, (made, leaf)."""
        r = self.r
        outputs = set(seg.outputs)
        away = r.seg_dsts[seg.index]
        count = r.chunks[seg.index]
        for c in range(count):
            roots, rgrads = [], []
            for t in r.chunk_roots[seg.index][c]:
                g = self._output_grad(t, away) if t in outputs else None
                v = r.env[t] if t in outputs else None
                pair = made.get(t)
                if pair is not None:
                    v = pair[0]
                    if pair[1].grad is not None:
                        g = pair[1].grad if g is None else g + pair[1].grad
                if g is not None and v is not None and v.requires_grad:
                    roots.append(v)
                    rgrads.append(g)
            if roots:
                start = time.perf_counter()
                torch.autograd.backward(roots, rgrads)
                r.times.ops += time.perf_counter() - start
                if r.recorder is not None:
                    r.recorder.span(
                        "op", "backward of segment %d" % seg.index
                        + (" chunk %d" % c if count > 1 else ""),
                        start)
            for t in r.completes[seg.index][c]:
                if t in leaves:
                    self._input_grad(seg, t, leaves[t])

    def _output_grad(self, t, away):
        """The gradient of t, an output of one of this rank's segments:
        from this rank's readers, other ranks' and the loss."""
        r = self.r
        g = self.grads.pop(t, None)
        if r._needs_grad_message(t):
            for dst in away.get(t, ()):
                got = self.early.pop((t, dst), None)
                if got is None:
                    got = r._grad_from(t, dst)
                g = got if g is None else g + got
        v = r.env[t]
        if t in r.graph.outputs and v.is_floating_point():
            # The loss is the sum of every float output's ReduceSum.
            one = torch.ones_like(v)
            g = one if g is None else g + one
        return g

    def _input_grad(self, seg, t, leaf):
        """leaf's gradient from seg is whole: it goes to the segment of
        this rank that made t, or is summed for t's owner and sent when
        seg is t's last reader here."""
        r = self.r
        g = leaf.grad
        owner = r._owner(t)
        if owner == r.rank:
            if g is not None:
                self.grads[t] = g if t not in self.grads \
                    else self.grads[t] + g
            return
        if g is None:
            g = torch.zeros_like(leaf)
        acc = self.sent_acc
        acc[t] = g if t not in acc else acc[t] + g
        if r._grad_goes_back(t, seg):
            r._isend(acc[t], owner, r._tag(t, r.rank, grad=True),
                     name=t + "/grad")

    def source_gradients(self):
        """Gradients of sources read on other ranks go back to their
        owners, in the order of the source messages."""
        r = self.r
        for (t, dst) in r.source_sends:
            if not r._needs_grad_message(t):
                continue
            owner = r._owner(t)
            if dst == r.rank:
                g = self.sent_acc.get(t)
                if g is None:
                    shape, dtype = r.meta[t]
                    g = torch.zeros(shape, dtype=dtype,
                                    device=r.torch_device)
                r._isend(g, owner, r._tag(t, dst, grad=True),
                         name=t + "/grad")
            elif owner == r.rank:
                v = r.env[t]
                got = r._grad_from(t, dst)
                if v.grad is None:
                    v.grad = got.clone()
                else:
                    v.grad.add_(got)


def _is_float_np(dtype):
    return np.issubdtype(dtype, np.floating)


_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
           torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
           torch.bool]
