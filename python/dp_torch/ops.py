"""ONNX operators as torch calls.

Each kernel takes the node's inputs (torch tensors, or None for an absent
optional input), its attributes (a dict of Python values) and the opset
of the default domain, and returns a list with one entry per output.
Kernels are differentiable wherever torch is, so autograd gives the
backward of every op; they never move data between devices (the module
does that before calling them).

Shape-like inputs (Reshape's shape, Slice's starts, ...) are read with
``tolist()``: they are small integer tensors.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

# ONNX TensorProto data types and their torch counterparts.
ONNX_TO_TORCH = {
    1: torch.float32, 2: torch.uint8, 3: torch.int8, 5: torch.int16,
    6: torch.int32, 7: torch.int64, 9: torch.bool, 10: torch.float16,
    11: torch.float64, 16: torch.bfloat16,
}

KERNELS = {}


class OpError(Exception):
    """A node that the runtime cannot run (unsupported op or attribute)."""


def kernel(*names):
    def register(fn):
        for name in names:
            KERNELS[name] = fn
        return fn
    return register


def _ints(t):
    return [int(v) for v in t.reshape(-1).tolist()]


def _axis(a, rank):
    return a + rank if a < 0 else a


# --------------------------------------------------------------------------
# Elementwise
# --------------------------------------------------------------------------

_UNARY = {
    "Relu": torch.relu, "Tanh": torch.tanh, "Sigmoid": torch.sigmoid,
    "Exp": torch.exp, "Log": torch.log, "Sqrt": torch.sqrt,
    "Neg": torch.neg, "Abs": torch.abs, "Erf": torch.erf,
    "Reciprocal": torch.reciprocal, "Floor": torch.floor,
    "Ceil": torch.ceil, "Sin": torch.sin, "Cos": torch.cos,
    "Not": torch.logical_not, "Softplus": F.softplus, "Sign": torch.sign,
    "Round": torch.round, "IsNaN": torch.isnan,
}

for _name, _fn in _UNARY.items():
    KERNELS[_name] = (lambda fn: lambda x, a, o: [fn(x[0])])(_fn)

_BINARY = {
    "Add": torch.add, "Sub": torch.sub, "Mul": torch.mul,
    "Equal": torch.eq, "Less": torch.lt, "Greater": torch.gt,
    "LessOrEqual": torch.le, "GreaterOrEqual": torch.ge,
    "And": torch.logical_and, "Or": torch.logical_or,
    "Xor": torch.logical_xor,
}

for _name, _fn in _BINARY.items():
    KERNELS[_name] = (lambda fn: lambda x, a, o: [fn(x[0], x[1])])(_fn)


@kernel("Div")
def _div(x, a, o):
    if not x[0].is_floating_point() and not x[1].is_floating_point():
        return [torch.div(x[0], x[1], rounding_mode="trunc")]
    return [x[0] / x[1]]


@kernel("Mod")
def _mod(x, a, o):
    if a.get("fmod", 0):
        return [torch.fmod(x[0], x[1])]
    return [torch.remainder(x[0], x[1])]


@kernel("Pow")
def _pow(x, a, o):
    base, exp = x
    # Pow(x, 2) and Pow(x, 0.5) as exported by LayerNorm and friends: a
    # scalar exponent is a Python number, which keeps the result's dtype.
    if exp.dim() == 0 or exp.numel() == 1:
        return [torch.pow(base, exp.reshape(()).item())]
    return [torch.pow(base, exp.to(base.dtype))]


@kernel("Sum")
def _sum(x, a, o):
    return _fold(torch.add)(x, a, o)


@kernel("Mean")
def _mean(x, a, o):
    return [_sum(x, a, o)[0] / len(x)]


def _fold(fn):
    """A variadic ONNX op (Max, Min) as a left fold of a binary one."""
    def run(x, a, o):
        out = x[0]
        for t in x[1:]:
            out = fn(out, t)
        return [out]
    return run


KERNELS["Max"] = _fold(torch.maximum)
KERNELS["Min"] = _fold(torch.minimum)


@kernel("Where")
def _where(x, a, o):
    return [torch.where(x[0], x[1], x[2])]


@kernel("NonZero")
def _non_zero(x, a, o):
    # ONNX's layout: one row per dimension, one column per element.
    return [torch.nonzero(x[0]).t().contiguous()]


@kernel("LeakyRelu")
def _leaky_relu(x, a, o):
    return [F.leaky_relu(x[0], a.get("alpha", 0.01))]


@kernel("Elu")
def _elu(x, a, o):
    return [F.elu(x[0], a.get("alpha", 1.0))]


@kernel("Selu")
def _selu(x, a, o):
    alpha = a.get("alpha", 1.67326319217681884765625)
    gamma = a.get("gamma", 1.05070102214813232421875)
    return [gamma * torch.where(x[0] > 0, x[0], alpha * (torch.exp(x[0]) - 1))]


@kernel("PRelu")
def _prelu(x, a, o):
    return [torch.where(x[0] >= 0, x[0], x[0] * x[1])]


@kernel("HardSigmoid")
def _hard_sigmoid(x, a, o):
    alpha, beta = a.get("alpha", 0.2), a.get("beta", 0.5)
    return [torch.clamp(alpha * x[0] + beta, 0.0, 1.0)]


@kernel("HardSwish")
def _hard_swish(x, a, o):
    return [F.hardswish(x[0])]


@kernel("Gelu")
def _gelu(x, a, o):
    approx = a.get("approximate", "none")
    return [F.gelu(x[0], approximate=approx)]


@kernel("Mish")
def _mish(x, a, o):
    return [F.mish(x[0])]


@kernel("Clip")
def _clip(x, a, o):
    if o < 11:
        lo, hi = a.get("min"), a.get("max")
    else:
        lo = x[1].item() if len(x) > 1 and x[1] is not None else None
        hi = x[2].item() if len(x) > 2 and x[2] is not None else None
    return [torch.clamp(x[0], lo, hi)]


@kernel("Cast")
def _cast(x, a, o):
    return [x[0].to(ONNX_TO_TORCH[a["to"]])]


@kernel("CastLike")
def _cast_like(x, a, o):
    return [x[0].to(x[1].dtype)]


@kernel("Identity", "Dropout")
def _identity(x, a, o):
    # Dropout runs as in inference (its ratio is ignored), as dp's models
    # are exported; its optional mask output is all true.
    return [x[0], torch.ones_like(x[0], dtype=torch.bool)]


# --------------------------------------------------------------------------
# Linear algebra and neural-network layers
# --------------------------------------------------------------------------

@kernel("MatMul")
def _matmul(x, a, o):
    return [torch.matmul(x[0], x[1])]


@kernel("Gemm")
def _gemm(x, a, o):
    A, B = x[0], x[1]
    if a.get("transA", 0):
        A = A.t()
    if a.get("transB", 0):
        B = B.t()
    out = torch.matmul(A, B)
    alpha, beta = a.get("alpha", 1.0), a.get("beta", 1.0)
    if alpha != 1.0:
        out = out * alpha
    if len(x) > 2 and x[2] is not None:
        out = out + (x[2] * beta if beta != 1.0 else x[2])
    return [out]


@kernel("Einsum")
def _einsum(x, a, o):
    return [torch.einsum(a["equation"], *x)]


def _same_pads(auto_pad, in_sizes, kernel_sizes, strides, dilations):
    """Begin and end pads of auto_pad=SAME_UPPER/SAME_LOWER, per axis."""
    begins, ends = [], []
    for n, k, s, d in zip(in_sizes, kernel_sizes, strides, dilations):
        out = (n + s - 1) // s
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - n)
        small, big = total // 2, total - total // 2
        if auto_pad == "SAME_UPPER":
            begins.append(small)
            ends.append(big)
        else:
            begins.append(big)
            ends.append(small)
    return begins, ends


def _window_pads(a, x, kernel_sizes, strides, dilations):
    """Begin and end pads of a convolution or pooling window."""
    rank = len(kernel_sizes)
    auto_pad = a.get("auto_pad", "NOTSET")
    if isinstance(auto_pad, bytes):
        auto_pad = auto_pad.decode()
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        return _same_pads(auto_pad, list(x.shape[2:]), kernel_sizes, strides,
                          dilations)
    if auto_pad == "VALID":
        return [0] * rank, [0] * rank
    pads = a.get("pads", [0] * (2 * rank))
    return list(pads[:rank]), list(pads[rank:])


def _pad_input(x, begins, ends, value=0.0):
    """Pads x's spatial axes explicitly; returns (x, symmetric pads)."""
    if begins == ends:
        return x, begins
    flat = []
    for b, e in zip(reversed(begins), reversed(ends)):
        flat += [b, e]
    return F.pad(x, flat, value=value), [0] * len(begins)


@kernel("Conv")
def _conv(x, a, o):
    X, W = x[0], x[1]
    B = x[2] if len(x) > 2 else None
    rank = W.dim() - 2
    kernel_sizes = list(W.shape[2:])
    strides = a.get("strides", [1] * rank)
    dilations = a.get("dilations", [1] * rank)
    begins, ends = _window_pads(a, X, kernel_sizes, strides, dilations)
    X, pads = _pad_input(X, begins, ends)
    conv = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}.get(rank)
    if conv is None:
        raise OpError("Conv of rank %d is not supported" % rank)
    return [conv(X, W, B, strides, pads, dilations, a.get("group", 1))]


@kernel("ConvTranspose")
def _conv_transpose(x, a, o):
    X, W = x[0], x[1]
    B = x[2] if len(x) > 2 else None
    rank = W.dim() - 2
    strides = a.get("strides", [1] * rank)
    dilations = a.get("dilations", [1] * rank)
    pads = a.get("pads", [0] * (2 * rank))
    if pads[:rank] != pads[rank:] or "output_shape" in a:
        raise OpError("ConvTranspose with asymmetric pads or output_shape "
                      "is not supported")
    out_pad = a.get("output_padding", [0] * rank)
    conv = {1: F.conv_transpose1d, 2: F.conv_transpose2d,
            3: F.conv_transpose3d}[rank]
    return [conv(X, W, B, strides, pads[:rank], out_pad, a.get("group", 1),
                 dilations)]


def _pool(x, a, kind):
    X = x[0]
    kernel_sizes = a["kernel_shape"]
    rank = len(kernel_sizes)
    strides = a.get("strides", [1] * rank)
    dilations = a.get("dilations", [1] * rank)
    ceil = bool(a.get("ceil_mode", 0))
    begins, ends = _window_pads(a, X, kernel_sizes, strides, dilations)
    if kind == "max":
        X, pads = _pad_input(X, begins, ends, value=-math.inf)
        pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[rank]
        return [pool(X, kernel_sizes, strides, pads, dilations, ceil)]
    if any(d != 1 for d in dilations):
        raise OpError("AveragePool with dilations is not supported")
    include_pad = bool(a.get("count_include_pad", 0))
    if begins != ends:
        if not include_pad:
            raise OpError("AveragePool with asymmetric pads and "
                          "count_include_pad=0 is not supported")
        X, pads = _pad_input(X, begins, ends)
    else:
        pads = begins
    pool = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[rank]
    return [pool(X, kernel_sizes, strides, pads, ceil, include_pad)]


@kernel("MaxPool")
def _max_pool(x, a, o):
    return _pool(x, a, "max")


@kernel("AveragePool")
def _avg_pool(x, a, o):
    return _pool(x, a, "avg")


@kernel("GlobalAveragePool")
def _global_avg_pool(x, a, o):
    dims = tuple(range(2, x[0].dim()))
    return [x[0].mean(dim=dims, keepdim=True)]


@kernel("GlobalMaxPool")
def _global_max_pool(x, a, o):
    out = x[0]
    for d in range(x[0].dim() - 1, 1, -1):
        out = out.amax(dim=d, keepdim=True)
    return [out]


@kernel("BatchNormalization")
def _batch_norm(x, a, o):
    X, scale, bias, mean, var = x[:5]
    if a.get("training_mode", 0):
        raise OpError("BatchNormalization with training_mode=1 is not "
                      "supported (export the model in eval mode)")
    # The statistics are data: no gradient reaches them (docs/transforms.md).
    return [F.batch_norm(X, mean.detach(), var.detach(), scale, bias, False,
                         0.0, a.get("epsilon", 1e-5))]


@kernel("InstanceNormalization")
def _instance_norm(x, a, o):
    return [F.instance_norm(x[0], weight=x[1], bias=x[2],
                            eps=a.get("epsilon", 1e-5))]


@kernel("GroupNormalization")
def _group_norm(x, a, o):
    X, scale, bias = x[0], x[1], x[2]
    groups = a["num_groups"]
    eps = a.get("epsilon", 1e-5)
    if o >= 21:
        return [F.group_norm(X, groups, scale, bias, eps)]
    # Before opset 21, scale and bias hold one value per group.
    channels = X.shape[1]
    if groups <= 0 or channels % groups:
        raise OpError("GroupNormalization: %d channels do not split into "
                      "%d groups" % (channels, groups))
    shape = [1, channels] + [1] * (X.dim() - 2)

    def per_channel(t):
        return t.repeat_interleave(channels // groups).reshape(shape)
    return [F.group_norm(X, groups, None, None, eps) * per_channel(scale)
            + per_channel(bias)]


@kernel("LayerNormalization")
def _layer_norm(x, a, o):
    X = x[0]
    axis = _axis(a.get("axis", -1), X.dim())
    shape = X.shape[axis:]
    bias = x[2] if len(x) > 2 else None
    eps = a.get("epsilon", 1e-5)
    out = F.layer_norm(X, shape, x[1], bias, eps)
    return [out]


@kernel("Softmax", "LogSoftmax")
def _softmax(x, a, o, log=False):
    X = x[0]
    axis = _axis(a.get("axis", -1 if o >= 13 else 1), X.dim())
    fn = torch.log_softmax if log else torch.softmax
    if o >= 13:
        return [fn(X, axis)]
    # Before opset 13 the input is flattened to 2-D at axis.
    flat = X.reshape(int(np.prod(X.shape[:axis])), -1)
    return [fn(flat, 1).reshape(X.shape)]


KERNELS["LogSoftmax"] = lambda x, a, o: _softmax(x, a, o, log=True)


# --------------------------------------------------------------------------
# Reductions
# --------------------------------------------------------------------------

def _reduce_axes(x, a, o, axes_input_since):
    if o >= axes_input_since:
        axes = _ints(x[1]) if len(x) > 1 and x[1] is not None else []
    else:
        axes = list(a.get("axes", []))
    if not axes:
        if a.get("noop_with_empty_axes", 0):
            return None
        return list(range(x[0].dim()))
    return [_axis(ax, x[0].dim()) for ax in axes]


def _reduction(fn, since=18):
    def run(x, a, o):
        axes = _reduce_axes(x, a, o, since)
        if axes is None:
            return [x[0]]
        keep = bool(a.get("keepdims", 1))
        return [fn(x[0], axes, keep)]
    return run


def _per_axis(method):
    """A reduction torch takes one axis at a time, over several axes."""
    def run(t, axes, keep):
        for ax in sorted(axes, reverse=True):
            t = getattr(t, method)(dim=ax, keepdim=keep)
        return t
    return run


_amax, _amin, _prod = (_per_axis(m) for m in ("amax", "amin", "prod"))


KERNELS["ReduceMean"] = _reduction(lambda t, ax, k: t.mean(dim=ax, keepdim=k))
KERNELS["ReduceSum"] = _reduction(lambda t, ax, k: t.sum(dim=ax, keepdim=k),
                                  since=13)
KERNELS["ReduceMax"] = _reduction(_amax)
KERNELS["ReduceMin"] = _reduction(_amin)
KERNELS["ReduceProd"] = _reduction(_prod)
KERNELS["ReduceSumSquare"] = _reduction(
    lambda t, ax, k: (t * t).sum(dim=ax, keepdim=k))
KERNELS["ReduceL2"] = _reduction(
    lambda t, ax, k: (t * t).sum(dim=ax, keepdim=k).sqrt())
KERNELS["ReduceLogSumExp"] = _reduction(
    lambda t, ax, k: torch.logsumexp(t, dim=ax, keepdim=k))


@kernel("ArgMax", "ArgMin")
def _argmax(x, a, o, fn=torch.argmax):
    axis = _axis(a.get("axis", 0), x[0].dim())
    keep = bool(a.get("keepdims", 1))
    if a.get("select_last_index", 0):
        raise OpError("select_last_index=1 is not supported")
    return [fn(x[0], dim=axis, keepdim=keep)]


KERNELS["ArgMin"] = lambda x, a, o: _argmax(x, a, o, fn=torch.argmin)


@kernel("CumSum")
def _cumsum(x, a, o):
    axis = _axis(int(x[1].item()), x[0].dim())
    X = x[0]
    if a.get("reverse", 0):
        X = X.flip(axis)
    if a.get("exclusive", 0):
        out = torch.cumsum(X, axis) - X
    else:
        out = torch.cumsum(X, axis)
    if a.get("reverse", 0):
        out = out.flip(axis)
    return [out]


@kernel("TopK")
def _topk(x, a, o):
    k = int(x[1].reshape(-1)[0].item()) if o >= 10 else a["k"]
    axis = _axis(a.get("axis", -1), x[0].dim())
    v, i = torch.topk(x[0], k, dim=axis, largest=bool(a.get("largest", 1)),
                      sorted=bool(a.get("sorted", 1)))
    return [v, i]


# --------------------------------------------------------------------------
# Shapes and data movement
# --------------------------------------------------------------------------

@kernel("Shape")
def _shape(x, a, o):
    dims = list(x[0].shape)
    start = a.get("start", 0)
    end = a.get("end", len(dims))
    return [torch.tensor(dims[start:end] if o >= 15 else dims,
                         dtype=torch.int64, device=x[0].device)]


@kernel("Size")
def _size(x, a, o):
    return [torch.tensor(x[0].numel(), dtype=torch.int64, device=x[0].device)]


@kernel("Reshape")
def _reshape(x, a, o):
    shape = _ints(x[1])
    allow_zero = a.get("allowzero", 0)
    if not allow_zero:
        shape = [x[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
    return [x[0].reshape(shape)]


@kernel("Flatten")
def _flatten(x, a, o):
    X = x[0]
    axis = _axis(a.get("axis", 1), X.dim())
    outer = int(np.prod(X.shape[:axis])) if axis else 1
    return [X.reshape(outer, -1)]


@kernel("Transpose")
def _transpose(x, a, o):
    perm = a.get("perm", list(reversed(range(x[0].dim()))))
    return [x[0].permute(*perm)]


@kernel("Squeeze")
def _squeeze(x, a, o):
    X = x[0]
    if o >= 13:
        axes = _ints(x[1]) if len(x) > 1 and x[1] is not None else None
    else:
        axes = a.get("axes")
    if axes is None:
        return [X.squeeze()]
    for ax in sorted((_axis(v, X.dim()) for v in axes), reverse=True):
        X = X.squeeze(ax)
    return [X]


@kernel("Unsqueeze")
def _unsqueeze(x, a, o):
    X = x[0]
    axes = _ints(x[1]) if o >= 13 else list(a["axes"])
    rank = X.dim() + len(axes)
    for ax in sorted(_axis(v, rank) for v in axes):
        X = X.unsqueeze(ax)
    return [X]


@kernel("Concat")
def _concat(x, a, o):
    parts = [t for t in x if t is not None]
    return [torch.cat(parts, dim=_axis(a["axis"], parts[0].dim()))]


@kernel("Split")
def _split(x, a, o, outputs=None):
    X = x[0]
    axis = _axis(a.get("axis", 0), X.dim())
    if o >= 13:
        sizes = _ints(x[1]) if len(x) > 1 and x[1] is not None else None
    else:
        sizes = a.get("split")
    n = outputs
    if sizes is None:
        n = a.get("num_outputs", n)
        step = -(-X.shape[axis] // n)
        sizes = [min(step, X.shape[axis] - i * step) for i in range(n)]
    return list(torch.split(X, list(sizes), dim=axis))


@kernel("Slice")
def _slice(x, a, o):
    X = x[0]
    if o >= 10:
        starts, ends = _ints(x[1]), _ints(x[2])
        axes = _ints(x[3]) if len(x) > 3 and x[3] is not None else None
        steps = _ints(x[4]) if len(x) > 4 and x[4] is not None else None
    else:
        starts, ends = a["starts"], a["ends"]
        axes, steps = a.get("axes"), None
    if axes is None:
        axes = list(range(len(starts)))
    if steps is None:
        steps = [1] * len(starts)
    index = [slice(None)] * X.dim()
    flips = []
    for s, e, ax, st in zip(starts, ends, axes, steps):
        ax = _axis(ax, X.dim())
        n = X.shape[ax]
        if st > 0:
            s = max(0, min(n, s + n if s < 0 else s))
            e = max(0, min(n, e + n if e < 0 else e))
            index[ax] = slice(s, max(s, e), st)
        else:
            # Negative steps: slice the flipped axis.
            s = max(-1, min(n - 1, s + n if s < 0 else s))
            e = max(-1, min(n - 1, e + n if e < 0 else e))
            fs, fe = n - 1 - s, n - 1 - e
            index[ax] = slice(fs, max(fs, fe), -st)
            flips.append(ax)
    if flips:
        X = X.flip(flips)
    return [X[tuple(index)]]


@kernel("Gather")
def _gather(x, a, o):
    X, idx = x[0], x[1]
    axis = _axis(a.get("axis", 0), X.dim())
    idx = idx.long()
    idx = torch.where(idx < 0, idx + X.shape[axis], idx)
    if axis == 0 and X.dim() == 2 and X.is_floating_point():
        # An embedding lookup: F.embedding's backward is the scatter-add
        # torch uses for nn.Embedding.
        return [F.embedding(idx, X)]
    out = torch.index_select(X, axis, idx.reshape(-1))
    shape = list(X.shape[:axis]) + list(idx.shape) + list(X.shape[axis + 1:])
    return [out.reshape(shape)]


@kernel("GatherElements")
def _gather_elements(x, a, o):
    axis = _axis(a.get("axis", 0), x[0].dim())
    return [torch.gather(x[0], axis, x[1].long())]


@kernel("Expand")
def _expand(x, a, o):
    shape = _ints(x[1])
    X = x[0]
    rank = max(X.dim(), len(shape))
    shape = [1] * (rank - len(shape)) + shape
    dims = [1] * (rank - X.dim()) + list(X.shape)
    target = [max(s, d) if s != 1 else d for s, d in zip(shape, dims)]
    return [X.reshape(dims).expand(target)]


@kernel("Tile")
def _tile(x, a, o):
    return [x[0].repeat(*_ints(x[1]))]


@kernel("Pad")
def _pad(x, a, o):
    X = x[0]
    mode = a.get("mode", "constant")
    if isinstance(mode, bytes):
        mode = mode.decode()
    if o >= 11:
        pads = _ints(x[1])
        value = x[2].item() if len(x) > 2 and x[2] is not None else 0.0
        axes = _ints(x[3]) if len(x) > 3 and x[3] is not None else None
    else:
        pads, value, axes = list(a["pads"]), a.get("value", 0.0), None
    rank = X.dim()
    if axes is None:
        axes = list(range(rank))
    axes = [_axis(v, rank) for v in axes]
    begins, ends = [0] * rank, [0] * rank
    for i, ax in enumerate(axes):
        begins[ax], ends[ax] = pads[i], pads[i + len(axes)]
    flat = []
    for ax in reversed(range(rank)):
        flat += [begins[ax], ends[ax]]
    while len(flat) > 2 and flat[-2:] == [0, 0]:
        flat = flat[:-2]
    if mode == "constant":
        return [F.pad(X, flat, value=value)]
    torch_mode = {"reflect": "reflect", "edge": "replicate"}.get(mode)
    if torch_mode is None:
        raise OpError("Pad mode '%s' is not supported" % mode)
    return [F.pad(X, flat, mode=torch_mode)]


@kernel("ConstantOfShape")
def _constant_of_shape(x, a, o):
    value = a.get("value")
    shape = _ints(x[0])
    if value is None:
        return [torch.zeros(shape, dtype=torch.float32, device=x[0].device)]
    v = torch.as_tensor(value, device=x[0].device).reshape(-1)
    return [v[0].expand(shape).clone()]


@kernel("Range")
def _range(x, a, o):
    start, limit, delta = (t.item() for t in x)
    return [torch.arange(start, limit, delta, dtype=x[0].dtype,
                         device=x[0].device)]


@kernel("Trilu")
def _trilu(x, a, o):
    k = int(x[1].item()) if len(x) > 1 and x[1] is not None else 0
    fn = torch.triu if a.get("upper", 1) else torch.tril
    return [fn(x[0], k)]


@kernel("Resize", "Upsample")
def _resize(x, a, o):
    X = x[0]
    mode = a.get("mode", "nearest")
    if isinstance(mode, bytes):
        mode = mode.decode()
    spatial = list(X.shape[2:])
    size = None
    if o >= 11 and len(x) > 3 and x[3] is not None and x[3].numel():
        size = _ints(x[3])[2:]
    else:
        scales_t = x[2] if o >= 11 else x[1]
        scales = [float(v) for v in scales_t.reshape(-1).tolist()]
        size = [int(math.floor(n * s)) for n, s in zip(spatial, scales[2:])]
    if mode == "nearest":
        return [F.interpolate(X, size=size, mode="nearest")]
    ctm = a.get("coordinate_transformation_mode", "half_pixel")
    if isinstance(ctm, bytes):
        ctm = ctm.decode()
    torch_mode = {1: "linear", 2: "bilinear", 3: "trilinear"}[len(size)]
    if mode == "cubic":
        torch_mode = "bicubic"
    return [F.interpolate(X, size=size, mode=torch_mode,
                          align_corners=(ctm == "align_corners"))]


@kernel("GridSample")
def _grid_sample(x, a, o):
    def text(name, default):
        v = a.get(name, default)
        return v.decode() if isinstance(v, bytes) else v
    # Opset 20 names the modes linear and cubic; opset 16, bilinear and
    # bicubic, as torch does.
    mode = {"linear": "bilinear", "cubic": "bicubic"}.get(
        text("mode", "bilinear"), text("mode", "bilinear"))
    return [F.grid_sample(x[0], x[1], mode=mode,
                          padding_mode=text("padding_mode", "zeros"),
                          align_corners=bool(a.get("align_corners", 0)))]


# --------------------------------------------------------------------------
# Recurrent layers
# --------------------------------------------------------------------------

def _reorder_gates(order):
    """A function that puts the gate blocks of a weight (axis 0) from
    ONNX's order into torch's: order[k] is the ONNX block of torch's k."""
    def run(t):
        blocks = torch.split(t, t.shape[0] // len(order), dim=0)
        return torch.cat([blocks[k] for k in order], dim=0)
    return run


# LSTM: ONNX (i, o, f, c) -> torch (i, f, g, o); GRU: ONNX (z, r, h) ->
# torch (r, z, n).
_LSTM_GATES = _reorder_gates([0, 2, 3, 1])
_GRU_GATES = _reorder_gates([1, 0, 2])


def _rnn_params(W, R, B, reorder):
    """torch's flat weight list for an ONNX RNN's W, R and optional B."""
    params = []
    width = W.shape[1]
    for d in range(W.shape[0]):
        params += [reorder(W[d]), reorder(R[d])]
        if B is not None:
            wb, rb = torch.split(B[d], width)
            params += [reorder(wb), reorder(rb)]
        else:
            params += [W.new_zeros(width), W.new_zeros(width)]
    return params


def _rnn_direction(a):
    direction = a.get("direction", "forward")
    return direction.decode() if isinstance(direction, bytes) else direction


def _rnn_output(y, batch, dirs, hidden, direction):
    """torch's [seq, batch, dirs * hidden] as ONNX's [seq, dirs, batch,
    hidden], in time order."""
    if direction == "reverse":
        y = y.flip(0)
    return y.reshape(y.shape[0], batch, dirs, hidden).permute(0, 2, 1, 3)


@kernel("LSTM")
def _lstm(x, a, o):
    X, W, R = x[0], x[1], x[2]
    B = x[3] if len(x) > 3 else None
    if len(x) > 4 and x[4] is not None:
        raise OpError("LSTM with sequence_lens is not supported")
    if len(x) > 7 and x[7] is not None:
        raise OpError("LSTM with peepholes is not supported")
    for attr in ("activations", "clip"):
        if attr in a:
            raise OpError("LSTM attribute '%s' is not supported" % attr)
    if a.get("input_forget", 0):
        raise OpError("LSTM with input_forget=1 is not supported")
    hidden = a.get("hidden_size", R.shape[-1])
    direction = _rnn_direction(a)
    layout = a.get("layout", 0)
    if layout:
        X = X.transpose(0, 1)
    dirs = W.shape[0]
    batch = X.shape[1]
    h0 = x[5] if len(x) > 5 and x[5] is not None else None
    c0 = x[6] if len(x) > 6 and x[6] is not None else None
    if layout:
        h0 = h0.transpose(0, 1) if h0 is not None else None
        c0 = c0.transpose(0, 1) if c0 is not None else None
    zeros = X.new_zeros(dirs, batch, hidden)
    h0 = zeros if h0 is None else h0
    c0 = zeros if c0 is None else c0
    inputs = X.flip(0) if direction == "reverse" else X
    y, hn, cn = torch.lstm(inputs, (h0, c0),
                           _rnn_params(W, R, B, _LSTM_GATES), True, 1, 0.0,
                           False, dirs == 2, False)
    Y = _rnn_output(y, batch, dirs, hidden, direction)
    if layout:
        return [Y.permute(2, 0, 1, 3), hn.transpose(0, 1),
                cn.transpose(0, 1)]
    return [Y, hn, cn]


@kernel("GRU")
def _gru(x, a, o):
    X, W, R = x[0], x[1], x[2]
    B = x[3] if len(x) > 3 else None
    if len(x) > 4 and x[4] is not None:
        raise OpError("GRU with sequence_lens is not supported")
    if "activations" in a or "clip" in a or a.get("layout", 0):
        raise OpError("GRU with activations, clip or layout=1 is not "
                      "supported")
    hidden = a.get("hidden_size", R.shape[-1])
    if not a.get("linear_before_reset", 0):
        raise OpError("GRU with linear_before_reset=0 is not supported "
                      "(torch's GRU applies the reset gate after the "
                      "recurrent product)")
    direction = _rnn_direction(a)
    dirs, batch = W.shape[0], X.shape[1]
    h0 = x[5] if len(x) > 5 and x[5] is not None else X.new_zeros(
        dirs, batch, hidden)
    inputs = X.flip(0) if direction == "reverse" else X
    y, hn = torch.gru(inputs, h0, _rnn_params(W, R, B, _GRU_GATES), True, 1,
                      0.0, False, dirs == 2, False)
    return [_rnn_output(y, batch, dirs, hidden, direction), hn]


def get_kernel(op_type, domain):
    if domain not in ("", "ai.onnx"):
        return None
    return KERNELS.get(op_type)


def run_kernel(op_type, fn, inputs, attrs, opset, num_outputs):
    if op_type == "Split":
        return _split(inputs, attrs, opset, outputs=num_outputs)
    return fn(inputs, attrs, opset)
