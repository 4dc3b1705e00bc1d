"""The runtime computes what torch computes: outputs and training steps of
small models exported with their weights, placed across two devices, in
one process and with one rank per device."""

import copy

import numpy as np
import pytest
import torch
import torch.nn as nn

from conftest import export, max_rel_err, place_by_hand, run_runtime

TOL = 1e-4


class ResNetLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(3, stride=2, padding=1)
        self.c1 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.stem(x))))
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        x = torch.relu(x + y)
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(x)


class InceptionLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.b1 = nn.Conv2d(8, 4, 1)
        self.b3a = nn.Conv2d(8, 4, 1)
        self.b3b = nn.Conv2d(4, 6, 3, padding=1)
        self.b5a = nn.Conv2d(8, 2, 1)
        self.b5b = nn.Conv2d(2, 4, 5, padding=2)
        self.bp = nn.Conv2d(8, 2, 1)
        self.fc = nn.Linear(16, 7)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        a = torch.relu(self.b1(x))
        b = torch.relu(self.b3b(torch.relu(self.b3a(x))))
        c = torch.relu(self.b5b(torch.relu(self.b5a(x))))
        d = torch.relu(self.bp(nn.functional.avg_pool2d(x, 3, 1, 1)))
        x = torch.cat([a, b, c, d], 1)
        x = nn.functional.max_pool2d(x, 2)
        return self.fc(x.mean((2, 3)))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0,
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(16, 5)

    def forward(self, ids):
        return self.head(self.enc(self.emb(ids)))


class LSTMNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(40, 12)
        self.lstm = nn.LSTM(12, 16, num_layers=2)
        self.out = nn.Linear(16, 40)

    def forward(self, ids):
        h, _ = self.lstm(self.emb(ids))
        return torch.log_softmax(self.out(h), -1)


def _randomize(module):
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.normal_(0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.1)


def _make(name):
    torch.manual_seed(0)
    if name == "resnet":
        m, x, training = ResNetLike(), torch.randn(2, 3, 32, 32), False
    elif name == "inception":
        m, x, training = InceptionLike(), torch.randn(2, 3, 16, 16), False
    elif name == "encoder":
        # torch 1.13 exports the fused eval-mode attention only in
        # training mode (dropout is 0).
        m, x, training = Encoder(), torch.randint(0, 50, (2, 9)), True
    else:
        m, x, training = LSTMNet(), torch.randint(0, 40, (7, 3)), False
    _randomize(m)
    m.eval()
    return m, x, training


MODELS = ["resnet", "inception", "encoder", "lstm"]


@pytest.fixture(scope="module", params=MODELS)
def placed(request, tmp_path_factory):
    """The model, its input, and its file placed alternately on 2 devices
    (the most cyclic placement there is)."""
    name = request.param
    tmp = tmp_path_factory.mktemp(name)
    m, x, training = _make(name)
    src = export(m, (x,), str(tmp / "m.onnx"), ["x"], ["y"],
                 training=training)
    dst = str(tmp / "m.placed.onnx")
    place_by_hand(src, dst, lambda i, n: "cpu:%d" % (i % 2))
    np.savez(str(tmp / "in.npz"), x=x.numpy())
    return name, m, x, tmp


@pytest.mark.parametrize("nproc", [None, 2])
def test_inference_matches_torch(placed, nproc):
    name, m, x, tmp = placed
    args = ["run", "m.placed.onnx", "--steps", "1", "--warmup", "0",
            "--inputs", "in.npz", "--outputs", "out.npz",
            "--require-weights"]
    if nproc:
        args += ["--nproc", str(nproc)]
    run_runtime(args, tmp)
    with torch.no_grad():
        ref = m(x).numpy()
    got = np.load(str(tmp / "out.npz"))["y"]
    assert got.shape == ref.shape
    assert max_rel_err(got, ref) < TOL


def _torch_training(m, x, optimizer, steps, input_grads):
    ref = copy.deepcopy(m)
    params = list(ref.parameters())
    if optimizer == "adam":
        opt = torch.optim.Adam(params, lr=1e-3)
    elif optimizer == "momentum":
        opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    else:
        opt = torch.optim.SGD(params, lr=0.01)
    informative = {}
    for step in range(steps):
        opt.zero_grad()
        xx = x.clone()
        if input_grads and xx.is_floating_point():
            xx.requires_grad_(True)
        ref(xx).sum().backward()
        if step == 0:
            # Adam divides a gradient by its own size, so an element whose
            # gradient is zero but for rounding (the key projection's bias
            # in attention) moves by +-lr at random: only elements with a
            # real gradient can be compared.
            for k, p in ref.named_parameters():
                g = p.grad.abs()
                informative[k] = (g > 1e-5 * max(float(g.max()), 1e-30)
                                  ).numpy()
        opt.step()
    return ({k: v.detach().numpy() for k, v in ref.named_parameters()},
            informative)


@pytest.mark.parametrize("nproc,optimizer", [(None, "adam"), (2, "adam"),
                                             (2, "momentum")])
def test_three_training_steps_match_torch(placed, nproc, optimizer):
    name, m, x, tmp = placed
    args = ["run", "m.placed.onnx", "--train", "--optimizer", optimizer,
            "--steps", "1", "--warmup", "2", "--inputs", "in.npz",
            "--save-weights", "w.npz", "--require-weights"]
    if nproc:
        args += ["--nproc", str(nproc)]
    run_runtime(args, tmp)
    want, informative = _torch_training(m, x, optimizer, 3,
                                        input_grads=True)
    got = np.load(str(tmp / "w.npz"))
    compared = 0
    initial = dict(m.named_parameters())
    for key, value in want.items():
        if key not in got.files:
            continue
        compared += 1
        mask = informative[key] if optimizer == "adam" else \
            np.ones(value.shape, dtype=bool)
        assert mask.sum() > 0, key
        assert max_rel_err(got[key][mask], value[mask]) < TOL, key
    # Most parameters keep their torch names in the export; the test must
    # compare real weights, and they must have moved.
    assert compared >= len(want) // 2
    moved = sum(1 for k in got.files if k in initial and not np.allclose(
        got[k], initial[k].detach().numpy()))
    assert moved >= compared // 2
