"""utils/llama-model.py: the LLaMA-shaped models it writes are valid ONNX
with the parameters of their configuration, their weights are external
data that is never written, and dp-opt imports them (tiny also as a
training step costed on v100x8-nvlink, in which only the parameters are
trained)."""

import importlib.util
import os
import re
import subprocess
import sys

import onnx
import pytest
from onnx import TensorProto, helper

from conftest import PYTHON_DIR, dp_opt

SCRIPT = os.path.join(os.path.dirname(PYTHON_DIR), "utils", "llama-model.py")


def _formula(hidden, layers, heads, kv_heads, ffn, vocab):
    """Parameters of a LLaMA model: embedding and lm_head, per layer the q,
    k, v, o projections (k and v kv_heads * head_dim wide), the gate, up
    and down matrices and two RMSNorm weights, and the final RMSNorm."""
    kv = kv_heads * (hidden // heads)
    layer = 2 * hidden * hidden + 2 * hidden * kv + 3 * hidden * ffn \
        + 2 * hidden
    return 2 * vocab * hidden + layers * layer + hidden


# size: (parameters by the formula, the logits' dims at the default batch,
# sequence length and type).
MODELS = {
    "tiny": (_formula(64, 2, 4, 4, 128, 128), [1, 16, 128]),
    "1b": (_formula(2048, 16, 32, 8, 8192, 32000), [1, 2048, 32000]),
}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Each size of MODELS written at its defaults: {size: (path, the
    script's output)}."""
    out = tmp_path_factory.mktemp("llama")
    made = {}
    for size in MODELS:
        path = str(out / ("llama-%s.onnx" % size))
        proc = subprocess.run([sys.executable, SCRIPT, "--size", size,
                               "--out", path], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        made[size] = (path, proc.stdout)
    return made


def _without_absent_data(model):
    """The generator's own copy for the checker (external tensors as graph
    inputs: onnx 1.12's checker wants their data file)."""
    spec = importlib.util.spec_from_file_location("llama_model", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.without_absent_data(model)


def _external_tensors(model):
    yield from (t for t in model.graph.initializer
                if t.data_location == TensorProto.EXTERNAL)
    for node in model.graph.node:
        for a in node.attribute:
            if a.HasField("t") and \
                    a.t.data_location == TensorProto.EXTERNAL:
                yield a.t


@pytest.mark.parametrize("size", sorted(MODELS))
def test_valid_onnx(models, size):
    path, _ = models[size]
    model = onnx.load(path, load_external_data=False)
    assert model.opset_import[0].version == 17
    checked = _without_absent_data(onnx.load(path, load_external_data=False))
    onnx.checker.check_model(checked)
    inferred = onnx.shape_inference.infer_shapes(
        checked, check_type=True, strict_mode=True, data_prop=True)
    logits = inferred.graph.output[0]
    assert logits.name == "logits"
    assert [d.dim_value for d in logits.type.tensor_type.shape.dim] == \
        MODELS[size][1]
    names = {n.name for n in model.graph.node}
    assert "/model/layers.1/self_attn/q_proj/MatMul" in names
    assert "/model/layers.1/mlp/act_fn/Sigmoid" in names
    assert "/lm_head/MatMul" in names


@pytest.mark.parametrize("size", sorted(MODELS))
def test_parameters(models, size):
    path, printed = models[size]
    model = onnx.load(path, load_external_data=False)
    params = 0
    for t in model.graph.initializer:
        if t.data_type != TensorProto.INT64:
            n = 1
            for d in t.dims:
                n *= d
            params += n
    expected = MODELS[size][0]
    assert abs(params - expected) <= 0.01 * expected
    assert re.search(r": %d parameters " % params, printed), printed


@pytest.mark.parametrize("size", sorted(MODELS))
def test_weights_external_and_absent(models, size):
    path, _ = models[size]
    model = onnx.load(path, load_external_data=False)
    location = "llama-%s.weights" % size
    tensors = list(_external_tensors(model))
    # Every parameter, and the rotary cos and sin tables.
    assert len(tensors) == \
        sum(t.data_type != TensorProto.INT64
            for t in model.graph.initializer) + 2
    for t in tensors:
        info = {e.key: e.value for e in t.external_data}
        assert info["location"] == location
        assert int(info["offset"]) % 64 == 0 and int(info["length"]) > 0
        assert not t.raw_data
    assert not os.path.exists(os.path.join(os.path.dirname(path), location))


def _dp_opt(passes, path, *extra):
    proc = subprocess.run([dp_opt(), "-passes=" + passes, path,
                           "-disable-output"] + list(extra),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("size", sorted(MODELS))
def test_dp_opt_imports(models, size):
    path, _ = models[size]
    ops = len(onnx.load(path, load_external_data=False).graph.node)
    summary = _dp_opt("import-onnx,print-summary", path)
    assert "graph 'llama': %d ops" % ops in summary
    assert "%%logits : f%s[%s]" % (
        "32" if size == "tiny" else "16",
        ",".join(map(str, MODELS[size][1]))) in summary


def test_dp_opt_training_step(models):
    """Only the 21 parameters of tiny get an update: the rotary tables and
    the scalars are Constants, not weights."""
    path, _ = models["tiny"]
    summary = _dp_opt("import-onnx,training-graph,cost-annotate,"
                      "print-summary", path, "-cluster=v100x8-nvlink")
    assert re.search(r"dp::AdamUpdate +21\n", summary), summary
    updated = re.findall(r"%(\S+)/updated :", summary)
    assert len(updated) == 21
    assert all(n.endswith((".weight", ".MatMul.B")) for n in updated)


def test_layers_option(tmp_path):
    """--layers N writes N decoder layers: the parameters follow the
    formula at N, every layer adds the same nodes, and --layers 0 is an
    error."""
    nodes = {}
    for layers in (1, 2, 5):
        path = str(tmp_path / ("l%d.onnx" % layers))
        proc = subprocess.run([sys.executable, SCRIPT, "--size", "tiny",
                               "--layers", str(layers), "--out", path],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert re.search(r": %d parameters " % _formula(64, layers, 4, 4,
                                                         128, 128),
                         proc.stdout), proc.stdout
        nodes[layers] = len(onnx.load(path, load_external_data=False)
                            .graph.node)
    per_layer = nodes[2] - nodes[1]
    assert per_layer > 0 and nodes[5] - nodes[2] == 3 * per_layer
    proc = subprocess.run([sys.executable, SCRIPT, "--size", "tiny",
                           "--layers", "0", "--out",
                           str(tmp_path / "none.onnx")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "--layers must be positive" in proc.stderr
    assert not os.path.exists(str(tmp_path / "none.onnx"))
