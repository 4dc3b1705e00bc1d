"""The split manifest as a placed model.

``emit{format=split}`` writes the model cut into segments, one ONNX file
each, and ``PREFIX.split.json``: the segments in run order with their
files, the tensors that cross them, the schedule's order and, for a plan,
the plan (docs/emit.md). ``join`` puts the segments back together into
one model with the metadata a placed model carries (``dp.placement``,
``dp.schedule``, ``dp.pipeline``, ``dp.predicted``, ``dp.cluster``), so
that the runtime
runs a manifest as it runs the placed model: ``python3 -m dp_torch run
p.split.json --nproc N``.
"""

import json
import os

import onnx

from .graph import RuntimeError_


def _fail(path, what):
    raise RuntimeError_("%s: error: %s" % (path, what))


def read(path):
    """The manifest at path, checked for what join reads."""
    try:
        with open(path) as f:
            obj = json.load(f)
    except OSError as e:
        _fail(path, "cannot read the split manifest: %s" % e.strerror)
    except ValueError as e:
        _fail(path, "the split manifest is not JSON: %s" % e)
    if not isinstance(obj, dict) or not isinstance(obj.get("segments"),
                                                   list) or \
            not obj["segments"]:
        _fail(path, "expected a split manifest (emit{format=split}): an "
                    "object with a non-empty list 'segments'")
    for k, seg in enumerate(obj["segments"]):
        if not isinstance(seg, dict) or not isinstance(seg.get("file"), str) \
                or not isinstance(seg.get("device"), str):
            _fail(path, "segment %d: expected {\"device\": name, \"file\": "
                        "name, ...}" % k)
    return obj


def join(path):
    """One ModelProto from the manifest's segment files."""
    obj = read(path)
    base = os.path.dirname(os.path.abspath(path))
    parts = []
    for k, seg in enumerate(obj["segments"]):
        file = os.path.join(base, seg["file"])
        try:
            parts.append(onnx.load(file, load_external_data=False))
        except Exception as e:  # protobuf's DecodeError and OSError
            _fail(path, "segment %d: cannot read its file '%s': %s"
                  % (k, seg["file"], getattr(e, "strerror", None) or e))
    crossing = {t.get("tensor") for t in obj.get("transfers") or []
                if isinstance(t, dict)}
    first = parts[0]
    model = onnx.ModelProto()
    model.CopyFrom(first)
    graph = model.graph
    del graph.node[:], graph.input[:], graph.output[:]
    del graph.initializer[:], graph.value_info[:]
    graph.name = obj.get("model") or first.graph.name.split("@")[0]
    made, inits, inputs = set(), set(), set()
    placement, segments = {}, []
    for part, seg in zip(parts, obj["segments"]):
        names = []
        for node in part.graph.node:
            graph.node.add().CopyFrom(node)
            names.append(node.name)
            made.update(o for o in node.output if o)
        meta = {p.key: p.value for p in part.metadata_props}
        try:
            placement.update(json.loads(meta.get("dp.placement", "{}")))
        except ValueError:
            _fail(path, "segment file '%s': metadata 'dp.placement' is not "
                        "JSON" % seg["file"])
        segments.append({"device": seg["device"], "nodes": names})
        for t in part.graph.initializer:
            if t.name not in inits:
                inits.add(t.name)
                graph.initializer.add().CopyFrom(t)
        for vi in part.graph.value_info:
            graph.value_info.add().CopyFrom(vi)
        for vi in part.graph.input:
            if vi.name not in inits and vi.name not in made and \
                    vi.name not in inputs and vi.name not in crossing:
                inputs.add(vi.name)
                graph.input.add().CopyFrom(vi)
        for vi in part.graph.output:
            if vi.name not in crossing:
                graph.output.add().CopyFrom(vi)
            else:
                graph.value_info.add().CopyFrom(vi)
    del model.metadata_props[:]
    schedule = {"version": 1, "segments": segments}
    if isinstance(obj.get("order"), list):
        schedule["order"] = obj["order"]
    meta = {"dp.placement": json.dumps(placement),
            "dp.schedule": json.dumps(schedule)}
    if obj.get("cluster"):
        meta["dp.cluster"] = obj["cluster"]
    if obj.get("pipeline") is not None:
        meta["dp.pipeline"] = json.dumps(obj["pipeline"])
    if obj.get("predicted") is not None:
        meta["dp.predicted"] = json.dumps(obj["predicted"])
    for key, value in meta.items():
        model.metadata_props.add(key=key, value=value)
    return model
