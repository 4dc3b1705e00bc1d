#!/usr/bin/env -S /usr/bin/python3
"""Write a LLaMA-shaped decoder-only transformer as a weight-free ONNX file.

Run with Debian's interpreter, which has the python3-onnx and python3-numpy
packages (the `python3` first on PATH may lack them); nothing is downloaded
and torch is not needed:

    /usr/bin/python3 utils/llama-model.py --size 7b --out /tmp/llama-7b.onnx
    /usr/bin/python3 utils/llama-model.py --size tiny --seq 8 --out /tmp/t.onnx

The graph is built node by node with onnx.helper at opset 17 (IR 8), from
standard ops only, in the form torch.onnx.export gives Hugging Face's
LlamaForCausalLM: node names carry the module path (e.g.
`/model/layers.3/self_attn/q_proj/MatMul`), so dp's scope-based tools see
the layers.

    input_ids int64 [B, S] -> Gather (embed_tokens) -> per layer:
      RMSNorm   Pow, ReduceMean, Add eps, Sqrt, Div, Mul by the weight
      attention q/k/v MatMul (k and v n_kv_heads * head_dim wide), Reshape
                and Transpose into heads, rotary embedding (x * cos +
                rotate_half(x) * sin, rotate_half as Slice/Neg/Concat),
                k and v heads repeated with Unsqueeze/Expand/Reshape when
                n_kv_heads < n_heads (grouped-query attention), MatMul with
                k transposed, Mul by 1/sqrt(head_dim), Add the causal mask,
                Softmax, MatMul with v, Transpose and Reshape back, o_proj
                MatMul, residual Add
      RMSNorm, SwiGLU MLP: gate MatMul, SiLU as Sigmoid and Mul, up MatMul,
                Mul, down MatMul, residual Add
    final RMSNorm -> lm_head MatMul -> logits [B, S, vocab]

As in Meta's reference code, the RMSNorms and the Softmax compute in float32
when the model's type is f16 or bf16 (Cast in and out).

Weights: every parameter is an initializer that keeps its name, data type
and dims and is marked as external data in `<stem of --out>.weights`
(location, offset, length: back to back at 64-byte aligned offsets). That
file is never written, so a 70B model is a file of about 1 MB; dp's
importer reads weights by type only. The precomputed rotary tables, cos and
sin [S, head_dim], are Constant nodes whose values are external data in the
same absent file: not initializers, because dp's training-graph trains
every float initializer. The causal mask [S, S] is computed (ConstantOfShape
of the type's lowest value, Trilu above the diagonal) rather than stored,
so that it has no data at any S. Scalars (eps, the attention
scale, the exponent 2) are Constant nodes with their values inline, and the
shape operands of Reshape, Expand, Slice and Unsqueeze inline int64
initializers, so that shape inference folds them.

onnx 1.12's checker stats the data file of every external tensor, whether
it is given a path or a ModelProto, so it cannot pass on a file whose data
file is absent. Like utils/export-models.py, the script therefore checks an
in-memory copy in which every external initializer and Constant is a graph
input: onnx.checker.check_model, strict shape inference with data
propagation, a static shape for every node output and the expected logits
shape. It prints the parameter count, the elements of the float
initializers, and fails if that differs from the closed form of the
configuration. docs/models.md ("LLaMA-shaped models") describes the sizes.
"""

import argparse
import math
import os
import sys
import time

import onnx
from onnx import TensorProto, helper

OPSET = 17
ALIGN = 64

DTYPES = {
    "f32": (TensorProto.FLOAT, 4),
    "f16": (TensorProto.FLOAT16, 2),
    "bf16": (TensorProto.BFLOAT16, 2),
}

# The lowest finite value of each type, the mask's "minus infinity" (as
# torch.finfo(dtype).min; each is exact in its type).
LOWEST = {
    TensorProto.FLOAT: -3.4028234663852886e38,
    TensorProto.FLOAT16: -65504.0,
    TensorProto.BFLOAT16: -3.3895313892515355e38,
}

# hidden, layers, heads, kv_heads, ffn, vocab, RMSNorm eps, the default
# sequence length and data type. Meta's LLaMA-2 7B/13B/70B, a
# LLaMA-3.2-1B-like model with LLaMA-2's vocabulary (untied embeddings), and
# a tiny one for tests.
SIZES = {
    "7b": dict(hidden=4096, layers=32, heads=32, kv_heads=32, ffn=11008,
               vocab=32000, eps=1e-5, seq=2048, dtype="f16"),
    "13b": dict(hidden=5120, layers=40, heads=40, kv_heads=40, ffn=13824,
                vocab=32000, eps=1e-5, seq=2048, dtype="f16"),
    "70b": dict(hidden=8192, layers=80, heads=64, kv_heads=8, ffn=28672,
                vocab=32000, eps=1e-5, seq=2048, dtype="f16"),
    "1b": dict(hidden=2048, layers=16, heads=32, kv_heads=8, ffn=8192,
               vocab=32000, eps=1e-5, seq=2048, dtype="f16"),
    "tiny": dict(hidden=64, layers=2, heads=4, kv_heads=4, ffn=128,
                 vocab=128, eps=1e-5, seq=16, dtype="f32"),
}


def parameter_formula(c):
    """Parameters of configuration c in closed form: embedding and lm_head,
    per layer the four attention projections, the three MLP matrices and
    two norm weights, and the final norm."""
    h, d = c["hidden"], c["hidden"] // c["heads"]
    attn = 2 * h * c["heads"] * d + 2 * h * c["kv_heads"] * d
    layer = attn + 3 * h * c["ffn"] + 2 * h
    return 2 * c["vocab"] * h + c["layers"] * layer + h


class Builder:
    """Nodes, initializers and the external-data layout of one model.
    Node names follow torch.onnx's scopes: `<scope>/<OpType>`, then
    `<scope>/<OpType>_1`, ... for repeats within a scope."""

    def __init__(self, dtype, location):
        self.elem, self.size = DTYPES[dtype]
        self.location = location
        self.nodes = []
        self.inits = []
        self.offset = 0
        self.counts = {}
        self.consts = {}

    def node(self, scope, op, inputs, **attrs):
        key = (scope, op)
        k = self.counts.get(key, 0)
        self.counts[key] = k + 1
        name = f"{scope}/{op}" + (f"_{k}" if k else "")
        out = name + "_output_0"
        self.nodes.append(helper.make_node(op, inputs, [out], name=name,
                                           **attrs))
        return out

    def tensor(self, name, dims):
        """A tensor of the model's float type whose bytes live in the absent
        data file."""
        t = TensorProto()
        t.name = name
        t.data_type = self.elem
        t.dims.extend(dims)
        length = math.prod(dims) * self.size
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", self.location),
                           ("offset", str(self.offset)),
                           ("length", str(length))):
            t.external_data.add(key=key, value=value)
        self.offset += (length + ALIGN - 1) // ALIGN * ALIGN
        return t

    def param(self, name, dims):
        """A parameter: an initializer with absent external data."""
        self.inits.append(self.tensor(name, dims))
        return name

    def buffer(self, scope, name, dims):
        """A precomputed table (rotary cos and sin [S, head_dim]): a
        Constant whose value is absent external data. Not an initializer,
        because dp's training-graph trains every float initializer."""
        return self.node(scope, "Constant", [],
                         value=self.tensor(name, dims))

    def ints(self, name, values):
        """An inline int64 initializer, shared by every node that uses it
        (integer initializers are never trained)."""
        if name not in self.consts:
            self.inits.append(helper.make_tensor(
                name, TensorProto.INT64, [len(values)], list(values)))
            self.consts[name] = list(values)
        assert self.consts[name] == list(values), name
        return name

    def scalar(self, scope, value, elem=None):
        """An inline float scalar of the model's type (or elem), as a
        Constant in scope, as torch.onnx exports one."""
        elem = self.elem if elem is None else elem
        # make_tensor converts float16 and bfloat16 values itself.
        return self.node(scope, "Constant", [], value=helper.make_tensor(
            "value", elem, [], [value]))


def rms_norm(b, scope, x, c):
    """Meta's RMSNorm: x / sqrt(mean(x^2) + eps) * weight, in float32 for
    f16 and bf16 models."""
    hidden = c["hidden"]
    weight = b.param(scope[1:].replace("/", ".") + ".weight", [hidden])
    upcast = b.elem != TensorProto.FLOAT
    if upcast:
        x = b.node(scope, "Cast", [x], to=TensorProto.FLOAT)
    sq = b.node(scope, "Pow", [x, b.scalar(scope, 2.0, TensorProto.FLOAT)])
    mean = b.node(scope, "ReduceMean", [sq], axes=[-1], keepdims=1)
    var = b.node(scope, "Add",
                 [mean, b.scalar(scope, c["eps"], TensorProto.FLOAT)])
    rms = b.node(scope, "Sqrt", [var])
    y = b.node(scope, "Div", [x, rms])
    if upcast:
        y = b.node(scope, "Cast", [y], to=b.elem)
    return b.node(scope, "Mul", [weight, y])


def linear(b, scope, x, rows, cols):
    """x @ W with W [rows, cols] (torch's Linear weight transposed, as
    torch.onnx's constant folding stores it), named after its MatMul."""
    name = scope[1:].replace("/", ".") + ".MatMul.B"
    return b.node(scope, "MatMul", [x, b.param(name, [rows, cols])])


def rotary(b, scope, x, cos, sin, half, head_dim):
    """x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1] for the
    two halves of the last axis."""
    axes = b.ints("const.axes_3", [3])
    x1 = b.node(scope, "Slice", [x, b.ints("const.zero", [0]),
                                 b.ints("const.half", [half]), axes])
    x2 = b.node(scope, "Slice", [x, b.ints("const.half", [half]),
                                 b.ints("const.head_dim", [head_dim]), axes])
    rot = b.node(scope, "Concat", [b.node(scope, "Neg", [x2]), x1], axis=-1)
    return b.node(scope, "Add", [
        b.node(scope, "Mul", [x, cos]),
        b.node(scope, "Mul", [rot, sin])])


def attention(b, scope, x, c, batch, seq, tables):
    hidden, heads, kv = c["hidden"], c["heads"], c["kv_heads"]
    d = hidden // heads
    q = linear(b, scope + "/q_proj", x, hidden, heads * d)
    k = linear(b, scope + "/k_proj", x, hidden, kv * d)
    v = linear(b, scope + "/v_proj", x, hidden, kv * d)

    def split_heads(t, n):
        t = b.node(scope, "Reshape", [t, b.ints(f"const.shape_heads_{n}",
                                               [batch, seq, n, d])])
        return b.node(scope, "Transpose", [t], perm=[0, 2, 1, 3])

    q, k, v = split_heads(q, heads), split_heads(k, kv), split_heads(v, kv)
    cos, sin, mask = tables
    q = rotary(b, scope, q, cos, sin, d // 2, d)
    k = rotary(b, scope, k, cos, sin, d // 2, d)
    if kv < heads:
        # Hugging Face's repeat_kv: [B, kv, S, d] -> [B, kv, rep, S, d] ->
        # [B, heads, S, d].
        rep = heads // kv

        def repeat(t):
            t = b.node(scope, "Unsqueeze", [t, b.ints("const.axes_2", [2])])
            t = b.node(scope, "Expand", [t, b.ints(
                "const.shape_repeat_kv", [batch, kv, rep, seq, d])])
            return b.node(scope, "Reshape", [t, b.ints(
                f"const.shape_bhsd_{heads}", [batch, heads, seq, d])])

        k, v = repeat(k), repeat(v)
    kt = b.node(scope, "Transpose", [k], perm=[0, 1, 3, 2])
    scores = b.node(scope, "MatMul", [q, kt])
    scores = b.node(scope, "Mul",
                    [scores, b.scalar(scope, 1.0 / math.sqrt(d))])
    scores = b.node(scope, "Add", [scores, mask])
    upcast = b.elem != TensorProto.FLOAT
    if upcast:
        scores = b.node(scope, "Cast", [scores], to=TensorProto.FLOAT)
    probs = b.node(scope, "Softmax", [scores], axis=-1)
    if upcast:
        probs = b.node(scope, "Cast", [probs], to=b.elem)
    out = b.node(scope, "MatMul", [probs, v])
    out = b.node(scope, "Transpose", [out], perm=[0, 2, 1, 3])
    out = b.node(scope, "Reshape", [out, b.ints("const.shape_bsh",
                                                [batch, seq, heads * d])])
    return linear(b, scope + "/o_proj", out, heads * d, hidden)


def mlp(b, scope, x, c):
    hidden, ffn = c["hidden"], c["ffn"]
    gate = linear(b, scope + "/gate_proj", x, hidden, ffn)
    act = b.node(scope + "/act_fn", "Mul",
                 [gate, b.node(scope + "/act_fn", "Sigmoid", [gate])])
    up = linear(b, scope + "/up_proj", x, hidden, ffn)
    return linear(b, scope + "/down_proj", b.node(scope, "Mul", [act, up]),
                  ffn, hidden)


def causal_mask(b, scope, seq):
    """The additive causal mask [S, S]: the type's lowest value above the
    diagonal, 0 on and below it, as Hugging Face builds it (ConstantOfShape,
    Trilu). Computed rather than stored: dp's importer gives an absent
    Constant zeros of its size in its working copy and refuses one over
    1 GiB, which an f16 mask is from S = 23,171 on."""
    # ConstantOfShape of opset 17 makes no bfloat16: a bf16 mask starts as
    # float32 (the bf16 lowest value is exact in it).
    elem = TensorProto.FLOAT if b.elem == TensorProto.BFLOAT16 else b.elem
    full = b.node(scope, "ConstantOfShape", [b.ints("const.shape_mask",
                                                    [seq, seq])],
                  value=helper.make_tensor("value", elem, [1],
                                           [LOWEST[b.elem]]))
    if elem != b.elem:
        full = b.node(scope, "Cast", [full], to=b.elem)
    k = b.node(scope, "Constant", [], value=helper.make_tensor(
        "value", TensorProto.INT64, [], [1]))
    return b.node(scope, "Trilu", [full, k], upper=1)


def build(c, batch, seq, dtype, location):
    """The ModelProto of configuration c, and its parameter count from the
    initializers' dims."""
    b = Builder(dtype, location)
    d = c["hidden"] // c["heads"]
    # The rotary tables and the causal mask, made once for all layers.
    tables = (b.buffer("/model/rotary_emb", "model.rotary_emb.cos", [seq, d]),
              b.buffer("/model/rotary_emb", "model.rotary_emb.sin", [seq, d]),
              causal_mask(b, "/model", seq))
    x = b.node("/model/embed_tokens", "Gather", [
        b.param("model.embed_tokens.weight", [c["vocab"], c["hidden"]]),
        "input_ids"], axis=0)
    for i in range(c["layers"]):
        scope = f"/model/layers.{i}"
        h = rms_norm(b, scope + "/input_layernorm", x, c)
        x = b.node(scope, "Add",
                   [x, attention(b, scope + "/self_attn", h, c, batch, seq,
                                  tables)])
        h = rms_norm(b, scope + "/post_attention_layernorm", x, c)
        x = b.node(scope, "Add", [x, mlp(b, scope + "/mlp", h, c)])
    x = rms_norm(b, "/model/norm", x, c)
    linear(b, "/lm_head", x, c["hidden"], c["vocab"])
    # The graph output is called `logits`, as in torch's export.
    b.nodes[-1].output[0] = "logits"

    graph = helper.make_graph(
        b.nodes, "llama",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                       [batch, seq])],
        [helper.make_tensor_value_info("logits", b.elem,
                                       [batch, seq, c["vocab"]])],
        b.inits)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)],
        producer_name="dp utils/llama-model.py")
    model.metadata_props.add(
        key="dp.weights",
        value=f"stripped; external data {location} is not written")
    params = sum(math.prod(t.dims) for t in b.inits
                 if t.data_type != TensorProto.INT64)
    return model, params, b.offset


def without_absent_data(model):
    """A copy of model in which every external initializer and every
    Constant with an external value is a graph input: onnx 1.12's checker
    fails on a missing data file, which these models never have."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    nodes = []
    for node in graph.node:
        value = node.attribute[0].t if node.op_type == "Constant" else None
        if value is not None and value.data_location == TensorProto.EXTERNAL:
            graph.input.append(helper.make_tensor_value_info(
                node.output[0], value.data_type, list(value.dims)))
        else:
            nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    inline = []
    for init in graph.initializer:
        if init.data_location == TensorProto.EXTERNAL:
            graph.input.append(helper.make_tensor_value_info(
                init.name, init.data_type, list(init.dims)))
        else:
            inline.append(init)
    del graph.initializer[:]
    graph.initializer.extend(inline)
    return copy


def validate(model, batch, seq, vocab, path):
    """Check the model as without_absent_data gives it: checker, strict
    shape inference with data propagation, a static shape for every node
    output, and the logits shape."""
    copy = without_absent_data(model)
    graph = copy.graph

    def fail(message):
        raise SystemExit(f"llama-model.py: {path}: {message}")

    try:
        onnx.checker.check_model(copy)
        inferred = onnx.shape_inference.infer_shapes(
            copy, check_type=True, strict_mode=True, data_prop=True)
    except Exception as e:  # onnx raises several unrelated types
        fail(f"the ONNX checks reject the model: {e}")
    known = {vi.name: vi for vi in list(inferred.graph.value_info)
             + list(inferred.graph.output)}
    bad = []
    for node in inferred.graph.node:
        for out in node.output:
            vi = known.get(out)
            dims = (vi.type.tensor_type.shape.dim
                    if vi is not None and vi.type.tensor_type.HasField("shape")
                    else None)
            if dims is None or not all(x.HasField("dim_value") for x in dims):
                bad.append(f"node '{node.name}' output '{out}'")
    if bad:
        fail(f"{len(bad)} node outputs have no static shape, e.g. {bad[0]}")
    out = [x.dim_value for x in known["logits"].type.tensor_type.shape.dim]
    if out != [batch, seq, vocab]:
        fail(f"logits have shape {out}, not {[batch, seq, vocab]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=list(SIZES), required=True,
                        help="model shape: LLaMA-2 7b, 13b, 70b (grouped-query "
                        "attention), a LLaMA-3.2-1B-like 1b (grouped-query, "
                        "vocab 32000), or tiny (hidden 64, 2 layers, vocab "
                        "128) for tests")
    parser.add_argument("--batch", type=int, default=1,
                        help="batch size B of input_ids [B, S] (default 1)")
    parser.add_argument("--seq", type=int,
                        help="sequence length S (default 2048; 16 for tiny)")
    parser.add_argument("--layers", type=int,
                        help="decoder layers (default the size's: 32 for "
                        "7b, ...); more make graphs of any size, such as "
                        "the 100k-op training steps placers are timed on")
    parser.add_argument("--dtype", choices=list(DTYPES),
                        help="weight and activation type (default f16; f32 "
                        "for tiny)")
    parser.add_argument("--out", required=True, metavar="FILE.onnx",
                        help="output file; its weights are described as "
                        "external data in <stem>.weights, which is not "
                        "written")
    args = parser.parse_args()
    c = dict(SIZES[args.size])
    if args.layers is not None:
        if args.layers < 1:
            parser.error("--layers must be positive")
        c["layers"] = args.layers
    seq = args.seq if args.seq is not None else c["seq"]
    dtype = args.dtype or c["dtype"]
    if args.batch < 1 or seq < 1:
        parser.error("--batch and --seq must be positive")

    start = time.time()
    stem = os.path.splitext(os.path.basename(args.out))[0]
    location = stem + ".weights"
    model, params, data_bytes = build(c, args.batch, seq, dtype, location)
    validate(model, args.batch, seq, c["vocab"], args.out)
    formula = parameter_formula(c)
    if params != formula:
        raise SystemExit(f"llama-model.py: {args.out}: {params} parameters "
                         f"in the initializers, {formula} by the formula")
    data = model.SerializeToString()
    try:
        with open(args.out, "wb") as f:
            f.write(data)
    except OSError as e:
        raise SystemExit(f"llama-model.py: {args.out}: cannot write: "
                         f"{e.strerror}")
    ops = {}
    for node in model.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    print(f"{args.out}: llama {args.size}, batch {args.batch}, seq {seq}, "
          f"{dtype}: {params} parameters ({params / 1e9:.2f}e9, formula "
          f"{formula}), {len(model.graph.node)} nodes, "
          f"{len(model.graph.initializer)} initializers, external data "
          f"{data_bytes} bytes in {location} (not written), file "
          f"{len(data)} bytes, {time.time() - start:.1f} s")
    print("  ops: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))


if __name__ == "__main__":
    sys.exit(main())
