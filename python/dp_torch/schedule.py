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
    the model has none. A pipeline plan's model (``dp.pipeline``) is one
    micro-batch's: run as a plain placement it would compute a fraction
    of the step, so it is refused."""
    if PIPELINE_KEY in meta:
        plan = _json(path, PIPELINE_KEY, meta[PIPELINE_KEY])
        what = ""
        if isinstance(plan, dict):
            what = " (%s micro-batches, %s)" % (plan.get("microbatches"),
                                                plan.get("schedule"))
        raise RuntimeError_(
            "%s: error: the model is a pipeline plan%s, whose stages run "
            "one micro-batch each; this runtime runs plain placements "
            "only (emit it without pipeline{} to run it here)"
            % (path, what))
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
