#!/usr/bin/env -S /usr/bin/python3
"""Export the benchmark models of the papers as weight-free ONNX files.

Run with Debian's interpreter, which has the python3-torch, python3-torchvision
and python3-onnx packages (the `python3` first on PATH may lack them):

    /usr/bin/python3 utils/export-models.py [--out DIR] [--only NAME ...]

Each model is defined here in plain torch (torchvision constructors with
weights=None for the CNNs), exported with torch.onnx.export at a fixed batch
size (every tensor gets a static shape), and then stripped of its weights:
every initializer that is float-typed or has more than 64 elements keeps its
name, data type and dims but loses its bytes and is marked as external data
in `<name>.weights`, a file that is never written and never shipped. Small
integer initializers (Reshape shape constants and the like) stay inline so
that shape inference can use their values. dp's importer never reads weight
bytes, so it accepts such files; the ONNX checker rejects them only because
the data file is missing.

For each model the script prints node count, initializer count, total weight
bytes (from the dims) and file size, and validates an in-memory copy in which
every external initializer has become a graph input: onnx.checker.check_model,
strict shape inference with data propagation, and a fully static shape for
every node output. Any failure raises.

The settings of each model, and how they compare to the papers, are
documented in docs/models.md.
"""

import argparse
import io
import math
import os
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 14
SEED = 0
# Relative scale of the noise added to every parameter (see perturb()).
NOISE = 1e-3
ALIGN = 64
MAX_INLINE_ELEMENTS = 64

FLOAT_TYPES = {
    TensorProto.FLOAT,
    TensorProto.DOUBLE,
    TensorProto.FLOAT16,
    TensorProto.BFLOAT16,
}
ELEMENT_SIZE = {
    TensorProto.FLOAT: 4,
    TensorProto.DOUBLE: 8,
    TensorProto.FLOAT16: 2,
    TensorProto.BFLOAT16: 2,
    TensorProto.INT8: 1,
    TensorProto.UINT8: 1,
    TensorProto.INT16: 2,
    TensorProto.UINT16: 2,
    TensorProto.INT32: 4,
    TensorProto.UINT32: 4,
    TensorProto.INT64: 8,
    TensorProto.UINT64: 8,
    TensorProto.BOOL: 1,
}


# ---------------------------------------------------------------------------
# Inception-V3 (torchvision), with the auxiliary classifier of the training
# graph kept.
# ---------------------------------------------------------------------------

class InceptionV3WithAux(torchvision.models.Inception3):
    """torchvision's Inception3 whose forward always computes the AuxLogits
    head from the Mixed_6e activation (torchvision only does so in training
    mode, and a training-mode export would also keep Dropout and
    training-mode BatchNormalization). Returns (logits, aux_logits). The
    module tree, and therefore the ONNX scope names, are torchvision's."""

    def forward(self, x):
        x = self.Conv2d_1a_3x3(x)
        x = self.Conv2d_2a_3x3(x)
        x = self.Conv2d_2b_3x3(x)
        x = self.maxpool1(x)
        x = self.Conv2d_3b_1x1(x)
        x = self.Conv2d_4a_3x3(x)
        x = self.maxpool2(x)
        x = self.Mixed_5b(x)
        x = self.Mixed_5c(x)
        x = self.Mixed_5d(x)
        x = self.Mixed_6a(x)
        x = self.Mixed_6b(x)
        x = self.Mixed_6c(x)
        x = self.Mixed_6d(x)
        x = self.Mixed_6e(x)
        aux = self.AuxLogits(x)
        x = self.Mixed_7a(x)
        x = self.Mixed_7b(x)
        x = self.Mixed_7c(x)
        x = self.avgpool(x)
        x = self.dropout(x)
        x = torch.flatten(x, 1)
        x = self.fc(x)
        return x, aux


# The papers' input sizes, and the smaller ones of --size validation: the
# same networks (every layer and width kept) at batch and sequence sizes
# whose training step takes seconds on one CPU core, so that
# bench/validate.py can run each model many times. The rule, fixed before
# any measurement: CNNs at batch 1 (Inception-V3) or 2 (ResNet-50) at the
# papers' resolution; sequence models at batch 8 (NMT, hidden 1024) or 16
# (GNMT-4, hidden 256) over 20 steps; BERT-Base at batch 1 over 128 tokens.
SIZES = {
    "paper": {"inception_v3": 1, "resnet50": 32, "gnmt4": (256, 50),
              "nmt2": (128, 50), "nmt4": (128, 50), "bert_base": (24, 384)},
    "validation": {"inception_v3": 1, "resnet50": 2, "gnmt4": (16, 20),
                   "nmt2": (8, 20), "nmt4": (8, 20), "bert_base": (1, 128)},
}
SIZE = SIZES["paper"]


def build_inception_v3():
    model = InceptionV3WithAux(
        num_classes=1000, aux_logits=True, transform_input=False, init_weights=True
    )
    x = torch.randn(SIZE["inception_v3"], 3, 299, 299)
    return model, (x,), ["input"], ["logits", "aux_logits"]


def build_resnet50():
    model = torchvision.models.resnet50(weights=None)
    x = torch.randn(SIZE["resnet50"], 3, 224, 224)
    return model, (x,), ["input"], ["logits"]


# ---------------------------------------------------------------------------
# Sequence-to-sequence models (GNMT-4 of Mars/EAGLE, NMT of Placeto).
# Time-major tensors [T, B, ...] as in TensorFlow NMT (time_major=True) and
# as ONNX LSTM expects; one nn.LSTM per layer, so each layer is one ONNX LSTM.
# ---------------------------------------------------------------------------

class LuongAttention(nn.Module):
    """Multiplicative (Luong 'general') attention over all encoder outputs,
    for all decoder steps at once: score = q . (W_a m), optionally times a
    learned scalar g (TF's scaled_luong), softmax over source positions,
    context = weights . m. Batched MatMul/Softmax, no Einsum."""

    def __init__(self, hidden, scale=False):
        super().__init__()
        self.memory_layer = nn.Linear(hidden, hidden, bias=False)
        self.attention_g = nn.Parameter(torch.tensor(1.0)) if scale else None

    def forward(self, query, memory):
        # query [T, B, H], memory [S, B, H]
        keys = self.memory_layer(memory)                              # [S, B, H]
        scores = torch.matmul(query.transpose(0, 1), keys.permute(1, 2, 0))  # [B, T, S]
        if self.attention_g is not None:
            scores = scores * self.attention_g
        weights = F.softmax(scores, dim=-1)
        context = torch.matmul(weights, memory.transpose(0, 1))       # [B, T, H]
        return context.transpose(0, 1)                                # [T, B, H]


class GNMTEncoder(nn.Module):
    """GNMT encoder: bidirectional first layer (hidden units per direction),
    then unidirectional layers; residual connections from the third layer
    on (TF NMT encoder_type=gnmt, num_residual_layers = num_layers - 2).
    Returns the top layer's outputs and each layer's final (h, c); for the
    bidirectional layer that of the backward direction, as TF NMT does."""

    def __init__(self, vocab, hidden, layers):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        lstms = [nn.LSTM(hidden, hidden, bidirectional=True)]
        lstms.append(nn.LSTM(2 * hidden, hidden))
        lstms += [nn.LSTM(hidden, hidden) for _ in range(layers - 2)]
        self.layers = nn.ModuleList(lstms)

    def forward(self, src):
        x = self.embedding(src)
        states = []
        for i, lstm in enumerate(self.layers):
            y, (h, c) = lstm(x)
            if i == 0:
                h, c = h[1:], c[1:]
            states.append((h, c))
            x = y + x if i >= 2 else y
        return x, states


class GNMTDecoder(nn.Module):
    """GNMT decoder with teacher forcing: each layer starts from the final
    state of the encoder layer of the same index; the first layer reads the
    target embeddings; its outputs query the attention over all encoder
    outputs; the context is concatenated to the input of every upper layer
    (TF NMT gnmt_v2 attention architecture, without feeding the context back
    into the first layer, which would need a per-step loop). Residual
    connections from the third layer on; projection to the vocabulary and
    log-softmax."""

    def __init__(self, vocab, hidden, layers):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        lstms = [nn.LSTM(hidden, hidden)]
        lstms += [nn.LSTM(2 * hidden, hidden) for _ in range(layers - 1)]
        self.layers = nn.ModuleList(lstms)
        self.attention = LuongAttention(hidden)
        self.projection = nn.Linear(hidden, vocab, bias=False)

    def forward(self, tgt, memory, states):
        x, _ = self.layers[0](self.embedding(tgt), states[0])
        context = self.attention(x, memory)
        for i in range(1, len(self.layers)):
            y, _ = self.layers[i](torch.cat([x, context], dim=-1), states[i])
            x = y + x if i >= 2 else y
        return F.log_softmax(self.projection(x), dim=-1)


class GNMT(nn.Module):
    def __init__(self, vocab=32000, hidden=256, layers=4):
        super().__init__()
        self.encoder = GNMTEncoder(vocab, hidden, layers)
        self.decoder = GNMTDecoder(vocab, hidden, layers)

    def forward(self, src, tgt):
        memory, states = self.encoder(src)
        return self.decoder(tgt, memory, states)


class NMTEncoder(nn.Module):
    """TF NMT tutorial encoder (encoder_type=uni): a stack of LSTM layers.
    Returns the top layer's outputs and each layer's final (h, c)."""

    def __init__(self, vocab, hidden, layers):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList([nn.LSTM(hidden, hidden) for _ in range(layers)])

    def forward(self, src):
        x = self.embedding(src)
        states = []
        for lstm in self.layers:
            x, state = lstm(x)
            states.append(state)
        return x, states


class NMTDecoder(nn.Module):
    """TF NMT tutorial attention decoder (attention_architecture=standard,
    Luong output_attention) with teacher forcing: a stack of LSTM layers
    over the target embeddings, each starting from the final state of the
    encoder layer of the same index (pass_hidden_state); the top layer's
    outputs query scaled Luong attention over the encoder outputs; the
    attention vector tanh(W_c [context; h]) is projected to the vocabulary.
    Input feeding (the previous attention vector concatenated to the next
    step's input) is left out: it needs a per-step loop."""

    def __init__(self, vocab, hidden, layers):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList([nn.LSTM(hidden, hidden) for _ in range(layers)])
        self.attention = LuongAttention(hidden, scale=True)
        self.attention_layer = nn.Linear(2 * hidden, hidden, bias=False)
        self.projection = nn.Linear(hidden, vocab, bias=False)

    def forward(self, tgt, memory, states):
        x = self.embedding(tgt)
        for lstm, state in zip(self.layers, states):
            x, _ = lstm(x, state)
        context = self.attention(x, memory)
        a = torch.tanh(self.attention_layer(torch.cat([context, x], dim=-1)))
        return F.log_softmax(self.projection(a), dim=-1)


class NMT(nn.Module):
    def __init__(self, vocab=30000, hidden=1024, layers=2):
        super().__init__()
        self.encoder = NMTEncoder(vocab, hidden, layers)
        self.decoder = NMTDecoder(vocab, hidden, layers)

    def forward(self, src, tgt):
        memory, states = self.encoder(src)
        return self.decoder(tgt, memory, states)


def seq2seq_inputs(vocab, length, batch):
    src = torch.randint(0, vocab, (length, batch), dtype=torch.int64)
    tgt = torch.randint(0, vocab, (length, batch), dtype=torch.int64)
    return src, tgt


def build_gnmt4():
    model = GNMT(vocab=32000, hidden=256, layers=4)
    batch, length = SIZE["gnmt4"]
    return model, seq2seq_inputs(32000, length, batch), ["src", "tgt"], ["log_probs"]


def build_nmt2():
    model = NMT(vocab=30000, hidden=1024, layers=2)
    batch, length = SIZE["nmt2"]
    return model, seq2seq_inputs(30000, length, batch), ["src", "tgt"], ["log_probs"]


def build_nmt4():
    model = NMT(vocab=30000, hidden=1024, layers=4)
    batch, length = SIZE["nmt4"]
    return model, seq2seq_inputs(30000, length, batch), ["src", "tgt"], ["log_probs"]


# ---------------------------------------------------------------------------
# BERT-Base with a SQuAD span head, in plain torch. Module names follow
# Hugging Face's BertForQuestionAnswering, so ONNX scopes read
# /bert/encoder/layer.0/attention/self/MatMul and so on.
# ---------------------------------------------------------------------------

class BertConfig:
    vocab_size = 30522
    hidden_size = 768
    num_hidden_layers = 12
    num_attention_heads = 12
    intermediate_size = 3072
    max_position_embeddings = 512
    type_vocab_size = 2
    layer_norm_eps = 1e-12


class BertEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.word_embeddings = nn.Embedding(c.vocab_size, c.hidden_size)
        self.position_embeddings = nn.Embedding(c.max_position_embeddings, c.hidden_size)
        self.token_type_embeddings = nn.Embedding(c.type_vocab_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.register_buffer(
            "position_ids", torch.arange(c.max_position_embeddings).unsqueeze(0), persistent=False
        )

    def forward(self, input_ids, token_type_ids):
        seq = input_ids.shape[1]
        e = self.word_embeddings(input_ids)
        e = e + self.token_type_embeddings(token_type_ids)
        e = e + self.position_embeddings(self.position_ids[:, :seq])
        return self.LayerNorm(e)


class BertSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.num_heads = c.num_attention_heads
        self.head_size = c.hidden_size // c.num_attention_heads
        self.query = nn.Linear(c.hidden_size, c.hidden_size)
        self.key = nn.Linear(c.hidden_size, c.hidden_size)
        self.value = nn.Linear(c.hidden_size, c.hidden_size)

    def split_heads(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.num_heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, x, mask):
        q = self.split_heads(self.query(x))                      # [B, h, S, d]
        k = self.split_heads(self.key(x))
        v = self.split_heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        probs = F.softmax(scores + mask, dim=-1)                 # [B, h, S, S]
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3)        # [B, S, h, d]
        b, s = ctx.shape[0], ctx.shape[1]
        return ctx.reshape(b, s, self.num_heads * self.head_size)


class BertSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, h, x):
        return self.LayerNorm(self.dense(h) + x)


class BertAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = BertSelfAttention(c)
        self.output = BertSelfOutput(c)

    def forward(self, x, mask):
        return self.output(self.self(x, mask), x)


class BertIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.intermediate_size)

    def forward(self, x):
        return F.gelu(self.dense(x))


class BertOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.intermediate_size, c.hidden_size)
        self.LayerNorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, h, x):
        return self.LayerNorm(self.dense(h) + x)


class BertLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = BertAttention(c)
        self.intermediate = BertIntermediate(c)
        self.output = BertOutput(c)

    def forward(self, x, mask):
        a = self.attention(x, mask)
        return self.output(self.intermediate(a), a)


class BertEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(c) for _ in range(c.num_hidden_layers)])

    def forward(self, x, mask):
        for layer in self.layer:
            x = layer(x, mask)
        return x


class BertModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = BertEmbeddings(c)
        self.encoder = BertEncoder(c)

    def forward(self, input_ids, token_type_ids, attention_mask):
        # [B, S] of 1/0 -> additive mask [B, 1, 1, S] of 0/-10000.
        mask = attention_mask[:, None, None, :].to(torch.float32)
        mask = (1.0 - mask) * -10000.0
        return self.encoder(self.embeddings(input_ids, token_type_ids), mask)


class BertForQuestionAnswering(nn.Module):
    def __init__(self, c=BertConfig()):
        super().__init__()
        self.bert = BertModel(c)
        self.qa_outputs = nn.Linear(c.hidden_size, 2)

    def forward(self, input_ids, token_type_ids, attention_mask):
        h = self.bert(input_ids, token_type_ids, attention_mask)
        logits = self.qa_outputs(h)                               # [B, S, 2]
        start, end = logits.split(1, dim=-1)
        return start.squeeze(-1), end.squeeze(-1)


def build_bert_base():
    c = BertConfig()
    batch, seq = SIZE["bert_base"]
    input_ids = torch.randint(0, c.vocab_size, (batch, seq), dtype=torch.int64)
    token_type_ids = torch.cat(
        [torch.zeros(batch, seq // 2, dtype=torch.int64), torch.ones(batch, seq - seq // 2, dtype=torch.int64)],
        dim=1,
    )
    attention_mask = torch.ones(batch, seq, dtype=torch.int64)
    model = BertForQuestionAnswering(c)
    return (
        model,
        (input_ids, token_type_ids, attention_mask),
        ["input_ids", "token_type_ids", "attention_mask"],
        ["start_logits", "end_logits"],
    )


MODELS = {
    "inception_v3": build_inception_v3,
    "resnet50": build_resnet50,
    "gnmt4": build_gnmt4,
    "nmt2": build_nmt2,
    "nmt4": build_nmt4,
    "bert_base": build_bert_base,
}


# ---------------------------------------------------------------------------
# Export, strip, validate.
# ---------------------------------------------------------------------------

def perturb(model):
    """torch.onnx.export de-duplicates identical initializers into Identity
    nodes (fresh BatchNorm statistics, LayerNorm 1s and 0s, zero biases).
    Add small relative noise to every parameter and randomize BatchNorm
    running statistics so that every weight stays its own initializer."""
    with torch.no_grad():
        for p in model.parameters():
            scale = NOISE * (p.abs().mean().item() + 1.0)
            p.add_(torch.randn_like(p) * scale)
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)


def export(name, builder):
    torch.manual_seed(SEED)
    model, args, input_names, output_names = builder()
    perturb(model)
    model.eval()
    buf = io.BytesIO()
    with torch.no_grad():
        # PRESERVE with an eval-mode model: Dropout disappears, and
        # BatchNormalization stays its own node (EVAL would fold it into Conv).
        torch.onnx.export(
            model,
            args,
            buf,
            export_params=True,
            opset_version=OPSET,
            do_constant_folding=True,
            training=torch.onnx.TrainingMode.PRESERVE,
            input_names=input_names,
            output_names=output_names,
        )
    proto = onnx.load_model_from_string(buf.getvalue())
    proto.graph.name = name
    return proto


def remove_dead_nodes(graph):
    """Remove nodes none of whose outputs is used, and unused initializers."""
    while True:
        used = {o.name for o in graph.output}
        for node in graph.node:
            used.update(node.input)
        dead = [n for n in graph.node if not any(o in used for o in n.output if o)]
        if not dead:
            break
        for n in dead:
            graph.node.remove(n)
    used = {o.name for o in graph.output}
    for node in graph.node:
        used.update(node.input)
    unused = [i for i in graph.initializer if i.name not in used]
    for i in unused:
        graph.initializer.remove(i)


def drop_zero_initial_states(graph):
    """nn.LSTM called without (h0, c0) makes zero states, which torch exports
    as a zero Constant expanded to the batch size (Shape, Gather, Concat,
    Expand) and passes as initial_h/initial_c. ONNX LSTM defaults missing
    initial states to zero: drop those inputs and the subgraph behind them."""
    producer = {o: n for n in graph.node for o in n.output}

    def is_zero(name):
        n = producer.get(name)
        if n is not None and n.op_type == "Expand":
            n = producer.get(n.input[0])
        if n is None or n.op_type != "Constant":
            return False
        if n.attribute[0].name != "value":
            return False
        return not numpy_helper.to_array(n.attribute[0].t).any()

    for node in graph.node:
        if node.op_type not in ("LSTM", "GRU", "RNN"):
            continue
        inputs = list(node.input)
        for i in (5, 6):
            if i < len(inputs) and inputs[i] and is_zero(inputs[i]):
                inputs[i] = ""
        while inputs and not inputs[-1]:
            inputs.pop()
        del node.input[:]
        node.input.extend(inputs)
    remove_dead_nodes(graph)


def constants_to_initializers(graph):
    """Turn Constant nodes holding more than 64 elements into initializers,
    so that their bytes are stripped too."""
    for node in list(graph.node):
        if node.op_type != "Constant" or node.attribute[0].name != "value":
            continue
        t = node.attribute[0].t
        if numel(t) > MAX_INLINE_ELEMENTS:
            init = graph.initializer.add()
            init.CopyFrom(t)
            init.name = node.output[0]
            graph.node.remove(node)


def name_initializers(graph):
    """Give the initializers that torch named after a number (onnx::MatMul_1513:
    transposed Linear weights, LSTM weights re-ordered to ONNX's gate order,
    moved Constants) a name after the one node that uses them and the ONNX
    name of that input: /encoder/layers.0/LSTM's W becomes
    encoder.layers.0.LSTM.W."""
    uses = {}
    taken = {i.name for i in graph.input} | {o.name for o in graph.output}
    for node in graph.node:
        taken.update(node.output)
        for index, name in enumerate(node.input):
            uses.setdefault(name, []).append((node, index))
    taken.update(i.name for i in graph.initializer)
    for init in graph.initializer:
        if not (init.name.startswith("onnx::") or init.name.startswith("/")):
            continue
        if len(uses.get(init.name, [])) != 1:
            continue
        node, index = uses[init.name][0]
        schema = onnx.defs.get_schema(node.op_type, OPSET, node.domain)
        formal = schema.inputs[min(index, len(schema.inputs) - 1)].name
        new = node.name.strip("/").replace("/", ".") + "." + formal
        if new in taken:
            continue
        taken.add(new)
        node.input[index] = new
        init.name = new


def numel(tensor):
    n = 1
    for d in tensor.dims:
        n *= d
    return n


def strip_weights(model, name):
    """Drop the bytes of every float-typed or large initializer and mark it
    as external data in `<name>.weights`, laid out back to back at 64-byte
    aligned offsets. Returns (stripped count, total elements, total bytes)
    of all initializers, as computed from their dims."""
    location = name + ".weights"
    offset = 0
    stripped = 0
    total = 0
    elements = 0
    for init in model.graph.initializer:
        if init.data_type not in ELEMENT_SIZE:
            raise SystemExit(f"{name}: initializer {init.name}: unsupported data type {init.data_type}")
        n = numel(init)
        length = n * ELEMENT_SIZE[init.data_type]
        total += length
        elements += n
        if init.data_type not in FLOAT_TYPES and n <= MAX_INLINE_ELEMENTS:
            continue
        for field in ("raw_data", "float_data", "int32_data", "int64_data",
                      "double_data", "uint64_data", "string_data"):
            init.ClearField(field)
        del init.external_data[:]
        init.data_location = TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
            entry = init.external_data.add()
            entry.key = key
            entry.value = value
        offset += (length + ALIGN - 1) // ALIGN * ALIGN
        stripped += 1
    return stripped, elements, total


def validate(model, name):
    """Check an in-memory copy in which every external initializer is a
    graph input instead: checker, strict shape inference with data
    propagation, and a static shape for every node output."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    inputs = {i.name for i in graph.input}
    inline = []
    for init in graph.initializer:
        if init.data_location == TensorProto.EXTERNAL:
            if init.name not in inputs:
                graph.input.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
        else:
            inline.append(init)
    del graph.initializer[:]
    graph.initializer.extend(inline)

    onnx.checker.check_model(copy)
    inferred = onnx.shape_inference.infer_shapes(copy, check_type=True, strict_mode=True, data_prop=True)

    known = {}
    for vi in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
        known[vi.name] = vi
    for init in inferred.graph.initializer:
        known.setdefault(init.name, helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
    bad = []
    for node in inferred.graph.node:
        for out in node.output:
            if not out:
                continue
            vi = known.get(out)
            if vi is None or not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
                bad.append(f"{node.name} ({node.op_type}) output {out}: no shape")
                continue
            dims = vi.type.tensor_type.shape.dim
            if not all(d.HasField("dim_value") and d.dim_value >= 0 for d in dims):
                bad.append(f"{node.name} ({node.op_type}) output {out}: shape {helper.printable_type(vi.type)}")
    if bad:
        raise SystemExit(f"{name}: {len(bad)} node outputs without a static shape:\n  " + "\n  ".join(bad[:20]))


def main():
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(repo, "models"),
                        help="output directory (default: models/ of this repository)")
    parser.add_argument("--only", nargs="+", choices=sorted(MODELS), metavar="NAME",
                        help="export only these models: " + ", ".join(MODELS))
    parser.add_argument("--size", choices=sorted(SIZES), default="paper",
                        help="input sizes: the papers' (default), or the smaller ones of "
                        "bench/validate.py (see SIZES)")
    parser.add_argument("--batch", type=int, default=None,
                        help="the batch of every model instead of its size's (the sequence "
                        "lengths and resolutions stay): bench/validate.py's plan cases")
    args = parser.parse_args()
    global SIZE
    SIZE = dict(SIZES[args.size])
    if args.batch is not None:
        if args.batch < 1:
            parser.error("--batch must be at least 1")
        SIZE = {k: (args.batch,) + v[1:] if isinstance(v, tuple) else args.batch
                for k, v in SIZE.items()}

    # torch.onnx's advice about batch sizes, constant folding in PRESERVE mode
    # and prim::Constant shape inference does not apply here: every shape is
    # static and checked below.
    warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx")
    os.makedirs(args.out, exist_ok=True)
    print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, onnx {onnx.__version__}, opset {OPSET}")
    for name in args.only or list(MODELS):
        start = time.time()
        model = export(name, MODELS[name])
        model.metadata_props.add(key="dp.weights", value=f"stripped; external data {name}.weights is not shipped")
        t_export = time.time() - start
        drop_zero_initial_states(model.graph)
        constants_to_initializers(model.graph)
        name_initializers(model.graph)
        stripped, elements, total = strip_weights(model, name)
        t_strip = time.time() - start - t_export
        validate(model, name)
        t_validate = time.time() - start - t_export - t_strip
        data = model.SerializeToString()
        path = os.path.join(args.out, name + ".onnx")
        with open(path, "wb") as f:
            f.write(data)
        ops = {}
        for node in model.graph.node:
            ops[node.op_type] = ops.get(node.op_type, 0) + 1
        print(f"{name}: {len(model.graph.node)} nodes, {len(model.graph.initializer)} initializers "
              f"({stripped} stripped), {elements} weight elements, {total} weight bytes, file {len(data)} bytes, "
              f"{time.time() - start:.1f} s (export {t_export:.1f}, strip {t_strip:.1f}, validate {t_validate:.1f}) -> {path}")
        print("  ops: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
        sys.stdout.flush()
        if len(data) >= 1 << 20:
            raise SystemExit(f"{name}: file is {len(data)} bytes, not under 1 MB")


if __name__ == "__main__":
    main()
