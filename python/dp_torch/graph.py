"""Reading a placed ONNX model: nodes, weights, and where each one runs.

The model is the one ``emit{format=onnx}`` writes: the user's model with
the metadata entry ``dp.placement`` (node name -> dp device). Node names
are dp's unique names (docs/import-onnx.md), computed here the same way
as ``getONNXNodeNames`` in lib/Import/ONNXImporter.cpp.
"""

import hashlib
import json
import os
import warnings

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .ops import ONNX_TO_TORCH, get_kernel

PLACEMENT_KEY = "dp.placement"
CLUSTER_KEY = "dp.cluster"


class RuntimeError_(Exception):
    """A user error: the message says what is wrong and where."""


def node_names(graph):
    """dp's unique node names, in node order."""
    explicit = {}
    for n in graph.node:
        if n.name:
            explicit[n.name] = explicit.get(n.name, 0) + 1
    names = [None] * len(graph.node)
    taken = set()
    for i, n in enumerate(graph.node):
        if n.name and explicit[n.name] == 1:
            names[i] = n.name
            taken.add(n.name)
    for i, n in enumerate(graph.node):
        if n.name and explicit[n.name] == 1:
            continue
        base = n.name or "%s_%d" % (n.op_type or "node", i)
        name, suffix = base, 1
        while name in taken or (name != n.name and name in explicit):
            name = "%s.%d" % (base, suffix)
            suffix += 1
        names[i] = name
        taken.add(name)
    return names


class Node:
    __slots__ = ("index", "name", "op_type", "domain", "inputs", "outputs",
                 "attrs", "device", "kernel", "constant")

    def __init__(self, index, name, proto, device):
        self.index = index
        self.name = name
        self.op_type = proto.op_type
        self.domain = proto.domain
        self.inputs = list(proto.input)
        self.outputs = list(proto.output)
        self.attrs = {}
        self.constant = None
        for attr in proto.attribute:
            if attr.type in (onnx.AttributeProto.GRAPH,
                             onnx.AttributeProto.GRAPHS):
                raise RuntimeError_(
                    "node '%s': error: %s with a subgraph is not supported "
                    "by the runtime" % (name, proto.op_type))
            value = helper.get_attribute_value(attr)
            if isinstance(value, bytes):
                value = value.decode()
            elif attr.type == onnx.AttributeProto.TENSOR:
                value = numpy_helper.to_array(value)
            self.attrs[attr.name] = value
        self.device = device
        self.kernel = None


def _constant_value(node):
    a = node.attrs
    for key in ("value_float", "value_int"):
        if key in a:
            dtype = np.float32 if key == "value_float" else np.int64
            return np.array(a[key], dtype=dtype)
    for key in ("value_floats", "value_ints"):
        if key in a:
            dtype = np.float32 if key == "value_floats" else np.int64
            return np.array(a[key], dtype=dtype)
    if "value" in a:
        return np.array(a["value"])
    raise RuntimeError_("node '%s': error: Constant without a value this "
                        "runtime reads (value, value_float(s), value_int(s))"
                        % node.name)


class Source:
    """A graph input or an initializer: where it lives, and how to get its
    data (read when a module needs it, so a rank reads only its own)."""
    __slots__ = ("name", "dtype", "shape", "proto", "base_dir", "seed",
                 "device", "is_input", "missing")

    def __init__(self, name, dtype, shape, is_input, proto=None,
                 base_dir=None, seed=0, missing=False):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.proto = proto
        self.base_dir = base_dir
        self.seed = seed
        self.device = None
        self.is_input = is_input
        self.missing = missing

    def load(self):
        """The initializer's array, or seeded data when its bytes are
        absent."""
        if self.missing:
            return _seeded_init(self.name, self.shape, self.dtype, self.seed)
        return _read_initializer(self.proto, self.base_dir, self.dtype,
                                 self.shape)


def _seeded_init(name, shape, dtype, seed):
    """Deterministic stand-in data for a weight whose bytes are missing.

    Floating-point weights get a uniform draw scaled like torch's default
    initialisation (1 / sqrt(fan-in)); others are zero. The draw depends on
    the seed and the weight's name only, so every rank makes the same.
    """
    digest = hashlib.sha256(("%d:%s" % (seed, name)).encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    if not np.issubdtype(dtype, np.floating):
        return np.zeros(shape, dtype=dtype)
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(
        max(1, shape[0] if shape else 1))
    bound = 1.0 / np.sqrt(max(1, fan_in))
    return rng.uniform(-bound, bound, size=shape).astype(dtype)


def _np_dtype(elem_type):
    if hasattr(helper, "tensor_dtype_to_np_dtype"):
        return helper.tensor_dtype_to_np_dtype(elem_type)
    return onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type]


def _external_path(t, base_dir):
    info = {e.key: e.value for e in t.external_data}
    return os.path.join(base_dir, info.get("location", "")), info


def _read_initializer(t, base_dir, dtype, shape):
    if t.data_location != onnx.TensorProto.EXTERNAL:
        return numpy_helper.to_array(t).copy()
    path, info = _external_path(t, base_dir)
    offset = int(info.get("offset", 0))
    count = int(np.prod(shape)) if shape else 1
    length = int(info.get("length", count * np.dtype(dtype).itemsize))
    with open(path, "rb") as f:
        f.seek(offset)
        raw = f.read(length)
    if len(raw) != length:
        raise RuntimeError_("initializer '%s': error: '%s' ends before byte %d"
                            % (t.name, path, offset + length))
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _value_type(vi):
    tt = vi.type.tensor_type
    dims = []
    for d in tt.shape.dim:
        dims.append(d.dim_value if d.HasField("dim_value") else None)
    return tt.elem_type, dims


class PlacedGraph:
    """The placed model: nodes in a topological order, sources, devices."""

    def __init__(self, path, seed=0, require_weights=False,
                 require_placement=True):
        self.path = path
        # protobuf reads an empty file as an empty model, which would be
        # "not placed by dp".
        if os.path.isfile(path) and os.path.getsize(path) == 0:
            raise RuntimeError_("%s: error: empty file; expected an ONNX "
                                "model placed by dp" % path)
        if path.endswith(".json"):
            # emit's split manifest: its segments joined (manifest.py).
            from .manifest import join
            model = join(path)
        else:
            try:
                model = onnx.load(path, load_external_data=False)
            except Exception as e:  # protobuf's DecodeError and OSError
                raise RuntimeError_("%s: error: cannot read the ONNX model: "
                                    "%s" % (path, e))
        self.model = model
        graph = model.graph
        self.name = graph.name
        self.opset = 1
        for imp in model.opset_import:
            if imp.domain in ("", "ai.onnx"):
                self.opset = imp.version
        meta = {p.key: p.value for p in model.metadata_props}
        self.cluster = meta.get(CLUSTER_KEY)
        names = node_names(graph)
        placement = None
        if PLACEMENT_KEY in meta:
            try:
                placement = json.loads(meta[PLACEMENT_KEY])
            except ValueError as e:
                raise RuntimeError_("%s: error: metadata '%s' is not JSON: %s"
                                    % (path, PLACEMENT_KEY, e))
        elif require_placement:
            raise RuntimeError_(
                "%s: error: the model was not placed by dp (no '%s' "
                "metadata); run dp-opt with emit{format=onnx} first"
                % (path, PLACEMENT_KEY))
        self.placement = placement or {}

        nodes = []
        for i, proto in enumerate(graph.node):
            name = names[i]
            device = self.placement.get(name)
            if placement is not None and device is None:
                raise RuntimeError_("%s: node '%s': error: no device in the "
                                    "placement" % (path, name))
            node = Node(i, name, proto, device or "cpu:0")
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx"):
                node.constant = _constant_value(node)
            else:
                node.kernel = get_kernel(node.op_type, node.domain)
                if node.kernel is None:
                    op = (node.domain + "::" if node.domain else "") + \
                        node.op_type
                    raise RuntimeError_(
                        "%s: node '%s': error: op type '%s' is not supported "
                        "by the runtime" % (path, name, op))
            nodes.append(node)
        self.nodes = self._sort(nodes)
        from .schedule import parse_plan, parse_predicted, parse_schedule
        self.schedule = parse_schedule(path, meta, self.nodes)
        # A pipeline or data-parallel plan (dp.pipeline), or None.
        self.plan = parse_plan(path, meta, self.schedule, self.nodes)
        self.predicted = parse_predicted(path, meta)

        base_dir = os.path.dirname(os.path.abspath(path))
        missing = []
        self.sources = {}
        for t in graph.initializer:
            absent = False
            if t.data_location == onnx.TensorProto.EXTERNAL:
                path, info = _external_path(t, base_dir)
                if not os.path.isfile(path):
                    if require_weights:
                        raise RuntimeError_(
                            "initializer '%s': error: its external data file "
                            "'%s' does not exist" % (t.name, path))
                    missing.append((t.name, info.get("location", "")))
                    absent = True
            self.sources[t.name] = Source(
                t.name, np.dtype(_np_dtype(t.data_type)),
                tuple(int(d) for d in t.dims), False, proto=t,
                base_dir=base_dir, seed=seed, missing=absent)
        self.inputs = []
        for vi in graph.input:
            if vi.name in self.sources:
                continue
            elem, dims = _value_type(vi)
            if elem not in ONNX_TO_TORCH:
                raise RuntimeError_("%s: graph input '%s': error: element "
                                    "type %d is not supported"
                                    % (path, vi.name, elem))
            self.sources[vi.name] = Source(vi.name, np.dtype(_np_dtype(elem)),
                                           dims, True)
            self.inputs.append(vi.name)
        self.outputs = [vi.name for vi in graph.output]
        self.output_types = {vi.name: _value_type(vi)[0]
                             for vi in graph.output}
        self.missing_weights = missing
        if missing:
            warnings.warn(
                "%s: %d weights have no data (external file '%s' is "
                "missing); they are initialised from seed %d, so outputs "
                "are only good for timing"
                % (path, len(missing), missing[0][1], seed), stacklevel=3)

        # Every source lives on the device of its first reader.
        for node in self.nodes:
            for t in node.inputs:
                s = self.sources.get(t)
                if s is not None and s.device is None:
                    s.device = node.device
        self.devices = []
        for node in self.nodes:
            if node.device not in self.devices:
                self.devices.append(node.device)
        self.devices.sort(key=_device_sort_key)
        # One rank per device: the placement's, or with a plan every
        # stage's in every replica; sorted by kind and index.
        self.rank_devices = list(self.devices)
        if self.plan is not None:
            self.rank_devices = sorted(self.plan.devices(),
                                       key=_device_sort_key)

    def _sort(self, nodes):
        """A topological order that keeps file order where it can."""
        producer = {}
        for n in nodes:
            for t in n.outputs:
                if t:
                    producer[t] = n.index
        indeg = [0] * len(nodes)
        users = [[] for _ in nodes]
        for n in nodes:
            deps = {producer[t] for t in n.inputs if t in producer}
            deps.discard(n.index)
            indeg[n.index] = len(deps)
            for d in deps:
                users[d].append(n.index)
        import heapq
        ready = [n.index for n in nodes if indeg[n.index] == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            i = heapq.heappop(ready)
            order.append(nodes[i])
            for u in users[i]:
                indeg[u] -= 1
                if indeg[u] == 0:
                    heapq.heappush(ready, u)
        if len(order) != len(nodes):
            stuck = next(n for n in nodes if indeg[n.index] > 0)
            raise RuntimeError_("%s: node '%s': error: the graph has a cycle"
                                % (self.path, stuck.name))
        return order


def _device_sort_key(name):
    kind, _, index = name.partition(":")
    return (kind, int(index) if index.isdigit() else 0, name)
