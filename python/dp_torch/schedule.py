"""The schedule emit writes into a placed model, read and checked.

``emit{format=onnx}`` records in the model's metadata (docs/emit.md):

* ``dp.schedule``: the model cut into segments (runs of one device's
  nodes, emit's one segmentation rule) in run order, each with its nodes
  in forward order and, for a training step, in the order their
  backward ran (``backward_nodes``), and one global
  order of items, ``["forward", k]`` and, for a training step,
  ``["backward", k]``, taken from the simulated step. Each rank runs its
  own items in that order, so the runtime runs what the simulator
  simulated instead of an order of its own;
* ``dp.predicted``: the simulated step, with each device's busy time and
  peak memory, which the runtime's report shows beside the measured one.

* ``dp.pipeline``: a plan (micro-batches, stages, data-parallel
  replicas), read by ``parse_plan``; the model is then one micro-batch's
  and the plan runner (plan.py) runs it.

A model without ``dp.schedule`` (placed by hand, or by a dp older than
the schedule) runs in the default order: every forward item in segment
order, then every backward item in reverse. So does the backward part of
a schedule emitted for an inference step when the runtime trains.

The order must be a linear extension of the items' dependencies (a
segment's forward after the forwards it reads from, a segment's backward
after its forward and after the backwards of the segments that read it):
the runtime's freedom from deadlock rests on it (dist.py), so it is
checked here, and an order that breaks it is an error naming the item.
"""

import json

from .graph import RuntimeError_

SCHEDULE_KEY = "dp.schedule"
PREDICTED_KEY = "dp.predicted"
PIPELINE_KEY = "dp.pipeline"
PHASES = ("forward", "backward")


class Schedule:
    """segments: [(device, [node name, ...])] in run order;
    backward: per segment, its node names in backward order, or None
    (reverse forward order); order: [(phase, segment index)] or None for
    the default."""

    def __init__(self, segments, order, backward=None):
        self.segments = segments
        self.order = order
        self.backward = backward or [None] * len(segments)


def read_metadata(model):
    return {p.key: p.value for p in model.metadata_props}


def _json(path, key, text):
    try:
        return json.loads(text)
    except ValueError as e:
        raise RuntimeError_("%s: error: metadata '%s' is not JSON: %s"
                            % (path, key, e))


def parse_schedule(path, meta, nodes):
    """The Schedule in meta, checked against the placed nodes; None when
    the model has none."""
    if SCHEDULE_KEY not in meta:
        return None
    where = "%s: metadata '%s'" % (path, SCHEDULE_KEY)
    obj = _json(path, SCHEDULE_KEY, meta[SCHEDULE_KEY])
    if not isinstance(obj, dict) or not isinstance(obj.get("segments"), list):
        raise RuntimeError_("%s: error: expected an object with a list "
                            "'segments'" % where)
    device_of = {n.name: n.device for n in nodes}
    seen = {}
    segments = []
    backward = []
    for k, seg in enumerate(obj["segments"]):
        if not isinstance(seg, dict) or not isinstance(seg.get("device"),
                                                       str) or \
                not isinstance(seg.get("nodes"), list):
            raise RuntimeError_("%s: segment %d: error: expected "
                                "{\"device\": name, \"nodes\": [names]}"
                                % (where, k))
        for name in seg["nodes"]:
            if name not in device_of:
                raise RuntimeError_("%s: segment %d: error: the model has no "
                                    "node '%s'" % (where, k, name))
            if name in seen:
                raise RuntimeError_("%s: segment %d: error: node '%s' is "
                                    "already in segment %d"
                                    % (where, k, name, seen[name]))
            if device_of[name] != seg["device"]:
                raise RuntimeError_(
                    "%s: segment %d: error: node '%s' is placed on %s, not "
                    "on the segment's device %s"
                    % (where, k, name, device_of[name], seg["device"]))
            seen[name] = k
        segments.append((seg["device"], list(seg["nodes"])))
        back = seg.get("backward_nodes")
        if back is not None and (not isinstance(back, list) or
                                 sorted(map(str, back)) !=
                                 sorted(seg["nodes"])):
            raise RuntimeError_("%s: segment %d: error: 'backward_nodes' "
                                "must list the segment's nodes, each once"
                                % (where, k))
        backward.append(back)
    missing = [n.name for n in nodes if n.name not in seen]
    if missing:
        raise RuntimeError_("%s: error: node '%s' is in no segment"
                            % (where, missing[0]))
    order = obj.get("order")
    if order is None:
        return Schedule(segments, None, backward)
    if not isinstance(order, list):
        raise RuntimeError_("%s: error: 'order' is not a list" % where)
    items = []
    taken = set()
    for i, item in enumerate(order):
        if not (isinstance(item, list) and len(item) == 2 and
                item[0] in PHASES and isinstance(item[1], int) and
                0 <= item[1] < len(segments)):
            raise RuntimeError_(
                "%s: order item %d: error: expected [\"forward\" or "
                "\"backward\", a segment index below %d]"
                % (where, i, len(segments)))
        key = (item[0], item[1])
        if key in taken:
            raise RuntimeError_("%s: order item %d: error: %s of segment %d "
                                "is listed twice" % (where, i, key[0],
                                                     key[1]))
        taken.add(key)
        items.append(key)
    trains = any(phase == "backward" for phase, _ in items)
    for k in range(len(segments)):
        if ("forward", k) not in taken:
            raise RuntimeError_("%s: error: the order has no forward item "
                                "for segment %d" % (where, k))
        if trains and ("backward", k) not in taken:
            raise RuntimeError_("%s: error: the order has backward items "
                                "but none for segment %d" % (where, k))
    return Schedule(segments, items, backward)


def check_order(path, order, deps):
    """Fails unless order is a linear extension: deps[k] are the segments
    whose outputs segment k reads."""
    pos = {item: i for i, item in enumerate(order)}
    where = "%s: metadata '%s'" % (path, SCHEDULE_KEY)
    for k, ds in enumerate(deps):
        for d in ds:
            if pos[("forward", d)] > pos[("forward", k)]:
                raise RuntimeError_(
                    "%s: error: forward of segment %d comes before the "
                    "forward of segment %d, whose outputs it reads"
                    % (where, k, d))
            bk, bd = pos.get(("backward", k)), pos.get(("backward", d))
            if bk is not None and bd is not None and bd < bk:
                raise RuntimeError_(
                    "%s: error: backward of segment %d comes before the "
                    "backward of segment %d, which reads its outputs"
                    % (where, d, k))
        b = pos.get(("backward", k))
        if b is not None and b < pos[("forward", k)]:
            raise RuntimeError_("%s: error: backward of segment %d comes "
                                "before its forward" % (where, k))


def full_order(order, num_segments, train):
    """The items the runtime walks: the schedule's order (or forward in
    segment order), with the backward items it lacks, when training,
    appended in reverse segment order; without training, forward only."""
    if order is None:
        order = [("forward", k) for k in range(num_segments)]
    if not train:
        return [item for item in order if item[0] == "forward"]
    if any(phase == "backward" for phase, _ in order):
        return list(order)
    return list(order) + [("backward", k)
                          for k in reversed(range(num_segments))]


def parse_predicted(path, meta):
    """The simulated step emit recorded, or None."""
    if PREDICTED_KEY not in meta:
        return None
    obj = _json(path, PREDICTED_KEY, meta[PREDICTED_KEY])
    if not isinstance(obj, dict) or not isinstance(
            obj.get("step_s"), (int, float)):
        raise RuntimeError_("%s: metadata '%s': error: expected an object "
                            "with a number 'step_s'" % (path, PREDICTED_KEY))
    return obj


class Stage:
    """One pipeline stage: its device in replica 0 (which names its nodes
    in the placement), the segment it runs, its tasks in order
    [(phase, micro-batch)], and its device in every replica."""

    def __init__(self, device, segment, order, replica_devices):
        self.device = device
        self.segment = segment
        self.order = order
        self.replica_devices = replica_devices


class Plan:
    """``dp.pipeline`` (docs/emit.md, "Pipeline plans"): M micro-batches
    in `schedule` over `stages`, R data-parallel replicas whose gradients
    are all-reduced in `buckets` [(device, [weight names])], activation
    recomputation where `recompute`."""

    def __init__(self, microbatches, schedule, batch_axes, replicas,
                 recompute, stages, buckets):
        self.microbatches = microbatches
        self.schedule = schedule
        self.batch_axes = batch_axes
        self.replicas = replicas
        self.recompute = recompute
        self.stages = stages
        self.buckets = buckets
        # dp device -> (replica, stage)
        self.position = {d: (r, s) for s, st in enumerate(stages)
                         for r, d in enumerate(st.replica_devices)}

    def devices(self):
        """Every device the plan runs on: one rank each."""
        return list(self.position)


def _int(v, least):
    return isinstance(v, int) and not isinstance(v, bool) and v >= least


def parse_plan(path, meta, schedule, nodes):
    """The Plan in meta's ``dp.pipeline``, checked against the schedule's
    segments and the placed nodes; None when the model has none."""
    if PIPELINE_KEY not in meta:
        return None
    where = "%s: metadata '%s'" % (path, PIPELINE_KEY)
    obj = _json(path, PIPELINE_KEY, meta[PIPELINE_KEY])

    def fail(what):
        raise RuntimeError_("%s: error: %s" % (where, what))

    if not isinstance(obj, dict):
        fail("expected an object")
    if schedule is None:
        raise RuntimeError_(
            "%s: error: the model has a pipeline plan ('%s') but no '%s' "
            "with its segments; emit it again with dp-opt"
            % (path, PIPELINE_KEY, SCHEDULE_KEY))
    m = obj.get("microbatches")
    r = obj.get("replicas", 1)
    if not _int(m, 1):
        fail("'microbatches' must be a number of at least 1, not %r" % (m,))
    if not _int(r, 1):
        fail("'replicas' must be a number of at least 1, not %r" % (r,))
    axes = obj.get("batch_axes", {})
    if not isinstance(axes, dict) or not all(
            isinstance(k, str) and _int(v, 0) for k, v in axes.items()):
        fail("'batch_axes' must map graph inputs to axes")
    stages_obj = obj.get("stages")
    if not isinstance(stages_obj, list) or not stages_obj:
        fail("'stages' must be a non-empty list")
    segments = schedule.segments
    if len(stages_obj) != len(segments):
        fail("%d stages, but the schedule has %d segments; each stage runs "
             "one segment" % (len(stages_obj), len(segments)))
    stages, seen_segments, seen_devices = [], set(), set()
    for s, st in enumerate(stages_obj):
        at = "stage %d" % s
        if not isinstance(st, dict) or not isinstance(st.get("device"), str) \
                or not _int(st.get("segment"), 0):
            fail("%s: expected {\"device\": name, \"segment\": index, "
                 "\"order\": [...]}" % at)
        seg = st["segment"]
        if seg >= len(segments) or seg in seen_segments:
            fail("%s: segment %d is %s" % (
                at, seg, "not in the schedule" if seg >= len(segments)
                else "already another stage's"))
        seen_segments.add(seg)
        if segments[seg][0] != st["device"]:
            fail("%s: its device %s is not its segment's (%s)"
                 % (at, st["device"], segments[seg][0]))
        devs = st.get("replica_devices", [st["device"]])
        if not isinstance(devs, list) or len(devs) != r or \
                not all(isinstance(d, str) for d in devs) or \
                devs[0] != st["device"]:
            fail("%s: 'replica_devices' must list its device in each of the "
                 "%d replicas, its own first" % (at, r))
        for d in devs:
            if d in seen_devices:
                fail("%s: device %s runs another stage or replica too"
                     % (at, d))
            seen_devices.add(d)
        order = st.get("order")
        if not isinstance(order, list):
            fail("%s: 'order' must be a list" % at)
        items = []
        for i, item in enumerate(order):
            if not (isinstance(item, list) and len(item) == 2 and
                    item[0] in PHASES and _int(item[1], 0) and item[1] < m):
                fail("%s: order item %d: expected [\"forward\" or "
                     "\"backward\", a micro-batch below %d]" % (at, i, m))
            items.append((item[0], item[1]))
        backward = [k for p, k in items if p == "backward"]
        forward = [k for p, k in items if p == "forward"]
        if sorted(forward) != list(range(m)) or \
                backward and sorted(backward) != list(range(m)):
            fail("%s: 'order' must list each micro-batch's forward once "
                 "(and, for a training step, its backward once)" % at)
        pos = {item: i for i, item in enumerate(items)}
        for k in backward:
            if pos[("backward", k)] < pos[("forward", k)]:
                fail("%s: the backward of micro-batch %d comes before its "
                     "forward" % (at, k))
        stages.append(Stage(st["device"], seg, items, devs))
    trains = {any(p == "backward" for p, _ in st.order) for st in stages}
    if len(trains) > 1:
        fail("some stages have backward tasks and some have none")
    homes = {st.device: s for s, st in enumerate(stages)}
    for node in nodes:
        if node.device not in homes:
            raise RuntimeError_("%s: node '%s': error: placed on %s, which "
                                "is no stage's device" % (path, node.name,
                                                          node.device))
    buckets = []
    for i, b in enumerate(obj.get("buckets", [])):
        if not isinstance(b, dict) or b.get("device") not in homes or \
                not isinstance(b.get("gradients"), list):
            fail("bucket %d: expected {\"device\": a stage's device, "
                 "\"gradients\": [names]}" % i)
        names = []
        for g in b["gradients"]:
            if not isinstance(g, str) or not g.endswith("/grad"):
                fail("bucket %d: '%s' is not a weight's gradient "
                     "('<weight>/grad')" % (i, g))
            names.append(g[:-len("/grad")])
        buckets.append((b["device"], names))
    recompute = obj.get("recompute", False)
    if not isinstance(recompute, bool):
        fail("'recompute' must be true or false")
    return Plan(m, obj.get("schedule"), dict(axes), r, recompute, stages,
                buckets)
