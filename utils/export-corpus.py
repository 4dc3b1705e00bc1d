#!/usr/bin/env -S /usr/bin/python3
"""Add torchvision (and torch.nn) architectures to the model corpus.

Run with Debian's interpreter, which has the python3-torch (1.13.1),
python3-torchvision (0.14.1) and python3-onnx (1.12) packages (the `python3`
first on PATH may lack them), from anywhere:

    /usr/bin/python3 utils/export-corpus.py [--out DIR] [--only NAME ...]
                                            [--manifest FILE] [--dp-opt BIN]

Unlike utils/export-models.py, which builds the papers' benchmarks with
static shapes, this script exports the models the way a typical user does,
to give dp's importer real exporter output: each model is built by its
torchvision constructor with weights=None (random initialization under a
fixed seed), put in eval mode, and exported by torch.onnx.export at
opset_version=17 with do_constant_folding=True, input name 'input', output
'output' (DeepLabV3's dict output: 'out'), and a dynamic batch axis
(dynamic_axes {'input': {0: 'batch'}, 'output': {0: 'batch'}});
transformer_encoder, a torch.nn.TransformerEncoder, has a dynamic
'sequence' axis too. The export goes to an in-memory buffer, whose sha256
and size are recorded; then the weights are stripped exactly as
utils/strip-weights.py strips them (its functions are loaded from that file,
not copied: float initializers and large ones become external data in a
'<name>.weights' file that is never written; small integer initializers
stay inline), and DIR/<name>.onnx is written. A stripped file larger than
--max-kib (300 KiB) is not written, and the model is reported as skipped.

Each written file gets an entry in models/corpus/manifest.json (--manifest),
with the keys of the existing entries: source_package, version,
path_in_package (here: the constructor call), file (relative to the
manifest's directory), sha256_original, size_original, license, ir_version,
opsets, inputs, bindings, pipeline. Existing entries keep their place and
content; an entry for the same file is replaced in place, new ones are
appended. 'pipeline' is 'training' when dp-opt imports the file and places
and simulates a training step (import-onnx{BINDINGS},training-graph,
cost-annotate,place{algo=expert},simulate on -cluster=p100x4), 'fails' when
it does not; it is only checked with --dp-opt BIN (e.g. build/bin/dp-opt),
otherwise an updated entry keeps its old value and a new one says
'unchecked'.

The export of vit_b_16 and swin_t takes a minute or two on a small machine;
models are exported one at a time.
"""

import argparse
import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import warnings

import onnx
import torch
import torch.nn as nn
import torchvision

OPSET = 17
SEED = 0
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_VERSION = "1.13.1"
TORCHVISION_VERSION = "0.14.1"


def load_strip_weights():
    """utils/strip-weights.py as a module (its name is not importable)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "strip-weights.py")
    spec = importlib.util.spec_from_file_location("strip_weights", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------
# The models. Each entry: how to build it, the example input, the output
# names and dynamic axes, and what the manifest says about where it is from.
# ---------------------------------------------------------------------------

BATCH = {0: "batch"}


def tv(name, size=224, module="models", **kwargs):
    """A torchvision model of torchvision.<module>: image input, one output."""
    ctor = torchvision
    for attr in module.split(".") + [name]:
        ctor = getattr(ctor, attr)
    args = ", ".join(["weights=None"] + ["%s=%r" % kv for kv in kwargs.items()])
    return dict(
        build=lambda: ctor(weights=None, **kwargs),
        input_shape=(1, 3, size, size),
        output_names=["output"],
        dynamic_axes={"input": BATCH, "output": BATCH},
        bindings="dim=batch:1",
        source_package="torchvision",
        version="%s (exported by torch %s, opset %d)"
                % (TORCHVISION_VERSION, TORCH_VERSION, OPSET),
        constructor="torchvision.%s.%s(%s)" % (module, name, args),
        license="BSD-3-Clause",
    )


def deeplab():
    m = tv("deeplabv3_mobilenet_v3_large", size=520, module="models.segmentation",
           weights_backbone=None)
    # forward() returns OrderedDict(out=...) (no aux classifier by default).
    m["output_names"] = ["out"]
    m["dynamic_axes"] = {"input": BATCH, "out": BATCH}
    return m


def transformer_encoder():
    def build():
        layer = nn.TransformerEncoderLayer(d_model=256, nhead=4, batch_first=True)
        return nn.TransformerEncoder(layer, num_layers=2)
    axes = {0: "batch", 1: "sequence"}
    return dict(
        build=build,
        input_shape=(1, 128, 256),
        output_names=["output"],
        dynamic_axes={"input": axes, "output": axes},
        bindings="dim=batch:1,dim=sequence:128",
        source_package="torch.nn",
        version="%s (exported by torch %s, opset %d)"
                % (TORCH_VERSION, TORCH_VERSION, OPSET),
        constructor="torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer("
                    "d_model=256, nhead=4, batch_first=True), num_layers=2)",
        license="BSD-3-Clause",
    )


MODELS = {
    "mobilenet_v3_small": lambda: tv("mobilenet_v3_small"),
    "efficientnet_b0": lambda: tv("efficientnet_b0"),
    "squeezenet1_1": lambda: tv("squeezenet1_1"),
    "shufflenet_v2_x1_0": lambda: tv("shufflenet_v2_x1_0"),
    "regnet_y_400mf": lambda: tv("regnet_y_400mf"),
    "convnext_tiny": lambda: tv("convnext_tiny"),
    "vit_b_16": lambda: tv("vit_b_16", image_size=224),
    "swin_t": lambda: tv("swin_t"),
    "deeplabv3_mobilenet_v3_large": deeplab,
    "transformer_encoder": transformer_encoder,
}


# ---------------------------------------------------------------------------
# Export, strip, describe.
# ---------------------------------------------------------------------------

def export(spec):
    """The original export, as bytes."""
    torch.manual_seed(SEED)
    model = spec["build"]().eval()
    torch.manual_seed(SEED)
    x = torch.randn(*spec["input_shape"])
    buf = io.BytesIO()
    # Not under torch.no_grad(): with autograd off, eval-mode
    # nn.MultiheadAttention and nn.TransformerEncoderLayer take torch 1.13's
    # fused fast path, whose ops (aten::_native_multi_head_attention,
    # aten::_transformer_encoder_layer_fwd) torch.onnx cannot export.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), buf, opset_version=OPSET,
                          do_constant_folding=True, input_names=["input"],
                          output_names=spec["output_names"],
                          dynamic_axes=spec["dynamic_axes"])
    return buf.getvalue()


def dim(d):
    if d.HasField("dim_value"):
        return d.dim_value
    if d.HasField("dim_param"):
        return d.dim_param
    return "?"


def describe_inputs(model):
    inits = {t.name for t in model.graph.initializer}
    out = []
    for i in model.graph.input:
        if i.name in inits:
            continue
        shape = i.type.tensor_type.shape
        out.append({"name": i.name, "shape": [dim(d) for d in shape.dim]})
    return out


def opsets(model):
    return {(o.domain or "ai.onnx"): o.version for o in model.opset_import}


def count_nodes(graph):
    n = 0
    for node in graph.node:
        n += 1
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                n += count_nodes(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                n += sum(count_nodes(g) for g in a.graphs)
    return n


def check_pipeline(dp_opt, path, bindings):
    passes = ("import-onnx{%s},training-graph,cost-annotate,place{algo=expert},"
              "simulate" % bindings)
    r = subprocess.run([dp_opt, "-cluster=p100x4", "-disable-output",
                        "-passes=" + passes, path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    return "training" if r.returncode == 0 else "fails"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=os.path.join(REPO, "models", "corpus",
                                                      "torchvision"),
                        help="output directory (default: models/corpus/torchvision)")
    parser.add_argument("--only", nargs="+", choices=sorted(MODELS), metavar="NAME",
                        help="export only these models: " + ", ".join(MODELS))
    parser.add_argument("--manifest", default=os.path.join(REPO, "models", "corpus",
                                                           "manifest.json"),
                        help="manifest to update (default: models/corpus/manifest.json)")
    parser.add_argument("--max-kib", type=float, default=300,
                        help="skip a model whose stripped file is larger (default 300)")
    parser.add_argument("--dp-opt", metavar="BIN",
                        help="check the pipeline with this dp-opt to set 'pipeline'")
    args = parser.parse_args()

    sw = load_strip_weights()
    names = args.only or list(MODELS)
    os.makedirs(args.out, exist_ok=True)
    with open(args.manifest) as f:
        manifest = json.load(f)
    base = os.path.dirname(os.path.abspath(args.manifest))
    failed, skipped = [], []

    for name in names:
        spec = MODELS[name]()
        print("%s: exporting %s" % (name, spec["constructor"]), flush=True)
        try:
            original = export(spec)
        except Exception as e:  # an exporter failure: report and go on
            msg = str(e).strip().splitlines()
            failed.append((name, "%s: %s" % (type(e).__name__, msg[0] if msg else "")))
            print("%s: export FAILED: %s" % (name, failed[-1][1]), flush=True)
            continue
        sha = hashlib.sha256(original).hexdigest()
        model = onnx.load_model_from_string(original)
        dst = os.path.join(args.out, name + ".onnx")
        location = name + ".weights"
        n_stripped = sw.strip(model, location)
        model.DiscardUnknownFields()
        data = model.SerializeToString()
        if len(data) > args.max_kib * 1024:
            skipped.append((name, len(data)))
            print("%s: SKIPPED, stripped file would be %d bytes" % (name, len(data)))
            continue
        with open(dst, "wb") as f:
            f.write(data)
        wpath = os.path.join(args.out, location)
        if os.path.exists(wpath):
            os.remove(wpath)
        onnx.load(dst, load_external_data=False)  # check it loads

        rel = os.path.relpath(os.path.abspath(dst), base).replace(os.sep, "/")
        old = next((e for e in manifest if e.get("file") == rel), None)
        pipeline = old.get("pipeline", "unchecked") if old else "unchecked"
        if args.dp_opt:
            pipeline = check_pipeline(args.dp_opt, dst, spec["bindings"])
        entry = {
            "source_package": spec["source_package"],
            "version": spec["version"],
            "path_in_package": spec["constructor"],
            "file": rel,
            "sha256_original": sha,
            "size_original": len(original),
            "license": spec["license"],
            "ir_version": model.ir_version,
            "opsets": opsets(model),
            "inputs": describe_inputs(model),
            "bindings": spec["bindings"],
            "pipeline": pipeline,
        }
        if old is not None:
            manifest[manifest.index(old)] = entry
        else:
            manifest.append(entry)
        with open(args.manifest, "w") as f:
            f.write(json.dumps(manifest, indent=1))
        print("%s: %d nodes, ir %d, opsets %s, %d initializers stripped, "
              "original %d bytes (sha256 %s) -> %s (%d bytes), pipeline %s"
              % (name, count_nodes(model.graph), model.ir_version, opsets(model),
                 n_stripped, len(original), sha, dst, len(data), pipeline),
              flush=True)

    for name, size in skipped:
        print("skipped %s: stripped file %d bytes > %g KiB" % (name, size, args.max_kib))
    for name, err in failed:
        print("export failed %s: %s" % (name, err))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
