"""Plans across ranks: pipelined micro-batches and data-parallel replicas.

A placed model with a plan (``dp.pipeline``, docs/emit.md) is one
micro-batch's step: M micro-batches go through S stages (each one
segment of the model on one device, reading only from earlier stages),
in R replicas, each on its own devices. One rank runs one stage of one
replica (ranks = R x S, the plan's devices sorted by kind and index):

* **inputs**: every rank holds the global batch and takes its
  micro-batches' slices (replica r, micro-batch k: slice r * M + k along
  each input's batch axis);
* **tasks**: the stage's tasks in the plan's order (GPipe, 1F1B: the
  order the simulated step ran them), ``forward k`` and ``backward k``;
* **activations** go to the later stages that read them, and their
  gradients back, as point-to-point messages tagged by micro-batch,
  tensor and kind; non-blocking sends, and from the second step on every
  receive of the step posted when it starts (gloo moves a message once
  its receive is posted), a rank waiting only for a message sent at an
  earlier task of a valid order: the order of the simulated step,
  which ran them, so no rank waits forever;
* **gradients** accumulate over the micro-batches; during the last
  backward, each of the plan's buckets of this stage is all-reduced
  among the stage's replicas (a process group per stage) as soon as all
  its gradients are whole, in the plan's order, as DDP does and as the
  simulator runs them; one optimizer step follows;
* **recomputation** (``recompute``): a forward keeps only what the stage
  received and runs again, with autograd, before its backward;
* a weight read by a later stage too lives on the first stage that
  reads it (where the simulator puts it), goes to the others at the start
  of the step, and its gradient comes back after their last backward.

The loss is the sum over every micro-batch of every replica of the
plain step's loss (the sum of ReduceSum of each float output), so the
summed gradients and the update are the plain step's on the global
batch.
"""

import contextlib
import time

import numpy as np
import torch
import torch.distributed as dist

from .dist import Messenger, make_segments
from .graph import RuntimeError_
from .module import FLOAT_TYPES, PlacedModule, loss_of, make_inputs

# Message kinds, the low part of a tag.
_ACT, _GRAD, _HEAD = range(3)


def output_axis(plan):
    """The axis along which the micro-batches' outputs are joined: the
    inputs' batch axis when they agree, else 0."""
    axes = set(plan.batch_axes.values())
    return axes.pop() if len(axes) == 1 else 0


def check_ranks(graph, world):
    plan = graph.plan
    n = len(graph.rank_devices)
    if world != n:
        raise RuntimeError_(
            "%s: error: the plan runs %d replicas of %d stages on %d "
            "devices (%s), so it runs on %d ranks, not %d"
            % (graph.path, plan.replicas, len(plan.stages), n,
               ", ".join(graph.rank_devices), n, world))


def plan_inputs(graph, seed, given=None):
    """The global batch: the given arrays, else random ones from the seed,
    each batch axis M x R times the micro-batch's. A given input whose
    batch axis is not that is an error."""
    plan = graph.plan
    parts = plan.microbatches * plan.replicas
    shapes = {}
    for name, axis in plan.batch_axes.items():
        src = graph.sources.get(name)
        if src is None or not src.is_input:
            raise RuntimeError_("%s: metadata 'dp.pipeline': error: "
                                "'batch_axes' names '%s', which is not a "
                                "graph input" % (graph.path, name))
        if axis >= len(src.shape) or src.shape[axis] is None:
            raise RuntimeError_(
                "%s: graph input '%s': error: its shape %s has no static "
                "axis %d to split into micro-batches"
                % (graph.path, name, src.shape, axis))
        shape = list(src.shape)
        shape[axis] *= parts
        shapes[name] = tuple(shape)
    arrays = make_inputs(graph, seed, given, shapes=shapes)
    for name, axis in plan.batch_axes.items():
        got = arrays[name].shape
        micro = graph.sources[name].shape[axis]
        if len(got) <= axis or got[axis] != micro * parts:
            size = got[axis] if len(got) > axis else None
            why = ("which %d replicas x %d micro-batches do not divide"
                   % (plan.replicas, plan.microbatches)
                   if size is None or size % parts else
                   "a micro-batch of %d" % (size // parts))
            raise RuntimeError_(
                "graph input '%s': error: its batch axis %d has %s rows, %s; "
                "the plan was made for a global batch of %d (%d replicas x "
                "%d micro-batches of %d)"
                % (name, axis, size, why, micro * parts, plan.replicas,
                   plan.microbatches, micro))
    return arrays


class _Bucket:
    __slots__ = ("params", "offsets", "buf", "missing", "work")

    def __init__(self, params, device):
        self.params = params    # [(name, parameter)]
        self.offsets = []
        n = 0
        for _, p in params:
            self.offsets.append(n)
            n += p.numel()
        dtypes = {p.dtype for _, p in params}
        self.buf = torch.zeros(n, dtype=dtypes.pop() if len(dtypes) == 1
                               else torch.float32, device=device)
        self.missing = 0
        self.work = None

    def view(self, i):
        p = self.params[i][1]
        off = self.offsets[i]
        return self.buf[off:off + p.numel()].view_as(p)


class PlanRunner(Messenger):
    """This rank's stage of one replica, and the step protocol."""

    def __init__(self, graph, rank, world, device_map=None, local_rank=0,
                 profile_names=True):
        check_ranks(graph, world)
        self._setup(graph, rank, world, device_map, local_rank)
        plan = self.plan = graph.plan
        self.replica, self.stage = plan.position[self.device]
        self.home = plan.stages[self.stage].device
        self.module = PlacedModule(graph, profile_names=profile_names,
                                   only_device=self.home,
                                   torch_devices={self.home:
                                                  self.torch_device})
        segs, seg_of, readers = make_segments(graph)
        stage_of_seg = {st.segment: s for s, st in enumerate(plan.stages)}
        stage_of_home = {st.device: s for s, st in enumerate(plan.stages)}
        self.seg = segs[plan.stages[self.stage].segment]
        self.order = plan.stages[self.stage].order
        # Every tensor that crosses stages, in one order on every rank:
        # (tensor, from stage, to stage); its index is its link.
        links = []
        for seg in segs:
            src = stage_of_seg[seg.index]
            for t in seg.outputs:
                for dst in sorted({stage_of_seg[i]
                                   for i in readers.get(t, ())} - {src}):
                    links.append((t, src, dst))
        self.num_links = len(links)
        self.in_links = {}    # tensor -> (link, from stage)
        self.out_links = {}   # tensor -> [(link, to stage)]
        for m, (t, src, dst) in enumerate(links):
            if dst == self.stage:
                self.in_links[t] = (m, src)
            if src == self.stage:
                self.out_links.setdefault(t, []).append((m, dst))
        # Weights read by a stage other than their owner's (the first
        # reader's): (weight, owner stage, reader stage).
        shared = []
        for name, src in graph.sources.items():
            if src.is_input or src.device is None:
                continue
            owner = stage_of_home[src.device]
            for dst in sorted({stage_of_seg[i]
                               for i in readers.get(name, ())} - {owner}):
                shared.append((name, owner, dst))
        self.weight_in = {}   # weight -> (index, owner stage)
        self.weight_out = []  # (weight, index, reader stage)
        for w, (name, owner, dst) in enumerate(shared):
            if dst == self.stage:
                self.weight_in[name] = (w, owner)
            if owner == self.stage:
                self.weight_out.append((name, w, dst))
        self.inputs = [t for t in self.seg.inputs
                       if t in graph.sources and graph.sources[t].is_input]
        self.parts = plan.microbatches * plan.replicas
        # (shape, dtype) of each link's tensor and each shared weight,
        # once seen (the first step sends a header before each).
        self.meta = {}
        self.weight_meta = {}
        self._groups()
        self._buckets()
        self.last_backward = max(
            (i for i, (p, _) in enumerate(self.order) if p == "backward"),
            default=None)

    # ------------------------------------------------------------------
    # Ranks, tags, process groups and buckets
    # ------------------------------------------------------------------

    def _peer(self, stage):
        """The rank of `stage` in this rank's replica."""
        return self.rank_of[
            self.plan.stages[stage].replica_devices[self.replica]]

    def _tag(self, link, k, kind):
        return (k * self.num_links + link) * 3 + kind

    def _weight_tag(self, w, kind):
        return (self.plan.microbatches * self.num_links + w) * 3 + kind

    def _groups(self):
        """A process group per stage, of its replicas' ranks; every rank
        makes every group, in stage order, as torch.distributed asks."""
        self.group = None
        if self.plan.replicas < 2:
            return
        for s, st in enumerate(self.plan.stages):
            ranks = sorted(self.rank_of[d] for d in st.replica_devices)
            g = dist.new_group(ranks)
            if s == self.stage:
                self.group = g

    def _buckets(self):
        """This stage's buckets, in the plan's order: the gradients of the
        weights listed, each bucket one flat buffer all-reduced at once."""
        self.buckets = []
        if self.plan.replicas < 2:
            return
        mine = dict(self.module.named_weights())
        seen = set()
        for i, (device, names) in enumerate(self.plan.buckets):
            if device != self.home:
                continue
            params = []
            for n in names:
                if n not in mine:
                    raise RuntimeError_(
                        "%s: metadata 'dp.pipeline': bucket %d: error: "
                        "'%s/grad' is not the gradient of a weight of stage "
                        "%d (%s)" % (self.graph.path, i, n, self.stage,
                                     device))
                params.append((n, mine[n]))
                seen.add(n)
            if params:
                self.buckets.append(_Bucket(params, self.comm_device))
        # Weights in no bucket (the plan lists every trainable one; a
        # plan without buckets still needs them) are all-reduced last.
        rest = [(n, p) for n, p in mine.items() if n not in seen]
        if rest:
            self.buckets.append(_Bucket(rest, self.comm_device))

    # ------------------------------------------------------------------
    # Messages
    # ------------------------------------------------------------------

    def _send_link(self, value, link, k, dst_stage, kind):
        dst = self._peer(dst_stage)
        tag = self._tag(link, k, kind)
        if kind == _ACT and link not in self.meta:
            self._send_head(value, dst, self._tag(link, k, _HEAD),
                            "%d/%d" % (link, k))
        if kind == _ACT:
            self.meta[link] = (tuple(value.shape), value.dtype)
        self._isend(value, dst, tag, name="%d/%d" % (link, k))

    def _take_link(self, link, k, src_stage, kind):
        src = self._peer(src_stage)
        if kind == _ACT and link not in self.meta:
            self.meta[link] = self._recv_head(src, self._tag(link, k, _HEAD),
                                              "%d/%d" % (link, k))
        shape, dtype = self.meta[link]
        return self._take(shape, dtype, src, self._tag(link, k, kind),
                          "%d/%d" % (link, k))

    def _float_link(self, link):
        return self.meta[link][1] in FLOAT_TYPES

    def _post_receives(self, train):
        """Every receive of the step whose shape is known (all of them from
        the second step on), posted as the step starts."""
        self.posted = {}
        start = time.perf_counter()
        for t, (m, src) in self.in_links.items():
            if m in self.meta:
                for k in range(self.plan.microbatches):
                    self._post(src, self._tag(m, k, _ACT), *self.meta[m])
        if train:
            for t, outs in self.out_links.items():
                for m, dst in outs:
                    if m in self.meta and self._float_link(m):
                        for k in range(self.plan.microbatches):
                            self._post(dst, self._tag(m, k, _GRAD),
                                       *self.meta[m])
        self.times.recv += time.perf_counter() - start

    def _post(self, stage, tag, shape, dtype):
        buf = self._buffer(shape, dtype)
        self.posted[tag] = (dist.irecv(buf, self._peer(stage), tag=tag), buf)

    # ------------------------------------------------------------------
    # One step
    # ------------------------------------------------------------------

    def step(self, feeds, train=False, optimizer=None, input_grads=True):
        """Runs this rank's tasks of one step (and the all-reduce and
        update when training). feeds: the global batch. Returns this
        rank's graph outputs (its micro-batches' joined) and its part of
        the loss."""
        step_start = self._begin_step(train)
        self.train = train
        self.input_grads = input_grads
        self._post_receives(train)
        self.feeds = feeds
        self.remote_weights = {}
        self.saved = {}
        self.outputs = {}
        self.loss = None
        self._send_weights()
        order = self.order if train else [
            item for item in self.order if item[0] == "forward"]
        for i, (phase, k) in enumerate(order):
            if phase == "forward":
                self._forward(k)
            else:
                self._backward(k, last=i == self.last_backward)
        if train:
            self._weight_gradients()
            self._all_reduce()
            self._update(optimizer)
        self._end_step(step_start)
        axis = output_axis(self.plan)
        outputs = {t: torch.cat(vs, axis) for t, vs in self.outputs.items()}
        return outputs, self.loss

    def _slice(self, name, k):
        """Micro-batch k of this replica's share of graph input `name`."""
        v = self.feeds[name]
        if not isinstance(v, torch.Tensor):
            v = torch.from_numpy(np.asarray(v))
        axis = self.plan.batch_axes.get(name)
        if axis is not None:
            size = v.shape[axis] // self.parts
            v = v.narrow(axis, (self.replica * self.plan.microbatches + k)
                         * size, size)
        return v.to(self.torch_device)

    def _send_weights(self):
        for name, w, dst in self.weight_out:
            value = self.module.weight(name)
            peer = self._peer(dst)
            if w not in self.weight_meta:
                self._send_head(value, peer, self._weight_tag(w, _HEAD), name)
                self.weight_meta[w] = (tuple(value.shape), value.dtype)
            self._isend(value, peer, self._weight_tag(w, _ACT), name=name)

    def _remote_weight(self, name):
        """A weight of another stage, received once per step."""
        v = self.remote_weights.get(name)
        if v is not None:
            return v
        w, owner = self.weight_in[name]
        src = self._peer(owner)
        if w not in self.weight_meta:
            self.weight_meta[w] = self._recv_head(
                src, self._weight_tag(w, _HEAD), name)
        shape, dtype = self.weight_meta[w]
        v = self._take(shape, dtype, src, self._weight_tag(w, _ACT), name)
        if self.train and v.dtype in FLOAT_TYPES:
            v = v.detach().requires_grad_(True)
        self.remote_weights[name] = v
        return v

    def _run(self, k, received=None):
        """The stage's nodes on micro-batch k. Without `received`, takes
        what earlier stages send (into a dict returned as the second
        value) and sends what later stages read; with it (recomputing),
        reads those tensors from it and sends nothing. Returns (outputs,
        received, leaves)."""
        train = self.train
        env = {}
        for name in self.inputs:
            v = self._slice(name, k)
            if train and self.input_grads and v.dtype in FLOAT_TYPES:
                v = v.detach().requires_grad_(True)
            env[name] = v
        for name in self.seg.inputs:
            if name not in env:
                t = self.module.weight(name)
                if t is not None:
                    env[name] = t
        where = {t: self.home for t in env}
        leaves = {}
        got = {} if received is None else received

        def fetch(name):
            if name in self.weight_in:
                return self._remote_weight(name)
            if name not in self.in_links:
                return None
            if received is not None:
                v = received[name]
            else:
                start = time.perf_counter()
                m, src = self.in_links[name]
                v = got[name] = self._take_link(m, k, src, _ACT)
                self.times.run -= time.perf_counter() - start
            if train and v.dtype in FLOAT_TYPES:
                v = v.detach().requires_grad_(True)
                leaves[name] = v
            return v

        def send(name, value):
            start = time.perf_counter()
            for m, dst in self.out_links.get(name, ()):
                self._send_link(value, m, k, dst, _ACT)
            self.times.run -= time.perf_counter() - start

        start = time.perf_counter()
        out = self.module.run({}, nodes=self.seg.nodes, env=env, where=where,
                              free=True, keep=self.seg.outputs,
                              on_output=send if received is None and
                              self.out_links else None, fetch=fetch)
        self.times.run += time.perf_counter() - start
        return {t: out[t] for t in self.seg.outputs}, got, leaves

    def _forward(self, k):
        recompute = self.train and self.plan.recompute
        ctx = torch.no_grad() if recompute or not self.train \
            else contextlib.nullcontext()
        with ctx:
            outs, got, leaves = self._run(k)
        terms = [(t, outs[t]) for t in self.seg.loss_outputs
                 if outs[t].is_floating_point()]
        if terms:
            with torch.no_grad():
                loss = float(loss_of([v for _, v in terms],
                                     [n for n, _ in terms], self.graph))
            self.loss = loss if self.loss is None else self.loss + loss
        for t in self.seg.loss_outputs:
            self.outputs.setdefault(t, []).append(outs[t].detach())
        if self.train:
            self.saved[k] = (got, None, None) if recompute else \
                (got, outs, leaves)

    def _backward(self, k, last):
        got, outs, leaves = self.saved.pop(k)
        if outs is None:
            # Recomputation: the forward again, with autograd, from what
            # the earlier stages sent.
            outs, _, leaves = self._run(k, received=got)
        roots, grads = [], []
        for t, v in outs.items():
            g = None
            for m, dst in self.out_links.get(t, ()):
                if not self._float_link(m):
                    continue
                x = self._take_link(m, k, dst, _GRAD)
                g = x if g is None else g + x
            if t in self.seg.loss_outputs and v.is_floating_point():
                one = torch.ones_like(v)
                g = one if g is None else g + one
            if g is not None and v.requires_grad:
                roots.append(v)
                grads.append(g)
        hooks = self._arm_buckets() if last else []
        try:
            if roots:
                start = time.perf_counter()
                torch.autograd.backward(roots, grads)
                self.times.ops += time.perf_counter() - start
                if self.recorder is not None:
                    self.recorder.span("op", "backward of micro-batch %d"
                                       % k, start)
        finally:
            for h in hooks:
                h.remove()
        del roots, grads, outs
        for t, leaf in leaves.items():
            m, src = self.in_links[t]
            g = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
            self._send_link(g, m, k, src, _GRAD)

    # ------------------------------------------------------------------
    # Gradients across stages and replicas
    # ------------------------------------------------------------------

    def _arm_buckets(self):
        """Hooks that, in the last backward, copy each weight's whole
        gradient (the earlier micro-batches' plus this one's) into its
        bucket and start the bucket's all-reduce once it is full, buckets
        in the plan's order."""
        self.next_bucket = 0
        hooks = []
        for b in self.buckets:
            b.work = None
            b.missing = 0
            for i, (name, p) in enumerate(b.params):
                b.missing += 1 + sum(1 for n, _, _ in self.weight_out
                                     if n == name)
                if p.requires_grad:
                    hooks.append(p.register_hook(self._hook(b, i)))
        self.filled = set()
        return hooks

    def _hook(self, bucket, i):
        def hook(grad):
            name, p = bucket.params[i]
            view = bucket.view(i)
            if p.grad is None:
                view.copy_(grad)
            elif view.device == p.grad.device:
                torch.add(p.grad, grad, out=view)
            else:
                view.copy_(p.grad + grad)
            self.filled.add(name)
            bucket.missing -= 1
            self._launch()
        return hook

    def _launch(self):
        """Starts, in order, every bucket whose gradients are whole."""
        while self.next_bucket < len(self.buckets) and \
                self.buckets[self.next_bucket].missing == 0:
            b = self.buckets[self.next_bucket]
            b.work = dist.all_reduce(b.buf, group=self.group, async_op=True)
            self.next_bucket += 1

    def _weight_gradients(self):
        """Shared weights' gradients: readers send theirs back to the
        owner, which adds them (into their buckets with replicas)."""
        for name, (w, owner) in self.weight_in.items():
            v = self.remote_weights.get(name)
            g = v.grad if v is not None and v.grad is not None else None
            if g is None:
                shape, dtype = self.weight_meta[w]
                g = torch.zeros(shape, dtype=dtype, device=self.torch_device)
            self._isend(g, self._peer(owner), self._weight_tag(w, _GRAD),
                        name=name + "/grad")
        for name, w, dst in self.weight_out:
            p = self.module.weight(name)
            shape, dtype = self.weight_meta[w]
            g = self._take(shape, dtype, self._peer(dst),
                           self._weight_tag(w, _GRAD), name + "/grad")
            if p.grad is None:
                p.grad = g.clone()
            else:
                p.grad.add_(g)
            for b in self.buckets:
                for i, (n, _) in enumerate(b.params):
                    if n == name:
                        b.view(i).add_(g)
                        b.missing -= 1
        if self.buckets:
            self._launch()

    def _all_reduce(self):
        """Waits for every bucket (starting those a hook did not: weights
        without a gradient in the last backward) and takes the summed
        gradients."""
        if not self.buckets:
            return
        start = time.perf_counter()
        for b in self.buckets:
            for i, (name, p) in enumerate(b.params):
                if name in self.filled:
                    continue
                # No gradient in the last backward: the earlier ones'.
                view = b.view(i)
                if p.grad is not None:
                    view.copy_(p.grad)
                else:
                    view.zero_()
                b.missing -= 1
                self.filled.add(name)
        self._launch()
        for b in self.buckets:
            b.work.wait()
            for i, (_, p) in enumerate(b.params):
                p.grad = b.view(i).to(p.device, copy=True)
        self.times.allreduce += time.perf_counter() - start
