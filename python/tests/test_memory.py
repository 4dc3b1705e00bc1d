"""The runtime frees a tensor after its last reader, as an executor does:
what stays through a step is the graph outputs and what autograd saves,
so that the peak memory it measures is the step's, not the runtime's."""

import gc
import weakref

import torch
import torch.nn as nn

from conftest import export, place_by_hand
from dp_torch.graph import PlacedGraph
from dp_torch.module import Optimizer, PlacedModule, train_step


class Chain(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x)) + 1
        return x


def _module(tmp_path):
    torch.manual_seed(0)
    src = export(Chain().eval(), (torch.randn(3, 8),),
                 str(tmp_path / "m.onnx"), ["x"], ["y"])
    place_by_hand(src, str(tmp_path / "p.onnx"), lambda i, n: "cpu:0")
    return PlacedModule(PlacedGraph(str(tmp_path / "p.onnx")))


def test_run_keeps_only_outputs_and_sources(tmp_path):
    module = _module(tmp_path)
    graph = module.graph
    feeds = module.bind_inputs((torch.randn(3, 8),), {})
    with torch.no_grad():
        kept = module.run(feeds)
        freed = module.run(feeds, free=True)
    made = {t for n in graph.nodes for t in n.outputs if t}
    # Without free= every tensor made stays (the ranks' segments read
    # them); with it, none but the outputs, with the same values.
    assert made <= set(kept)
    assert set(freed) & made == set(graph.outputs)
    for name in graph.outputs:
        assert torch.equal(kept[name], freed[name])


def test_intermediates_are_released(tmp_path):
    module = _module(tmp_path)
    graph = module.graph
    feeds = module.bind_inputs((torch.randn(3, 8),), {})
    seen = []
    run_node = module.run_node

    def watch(node, args):
        outs = run_node(node, args)
        seen.extend((node.outputs[i], weakref.ref(t))
                    for i, t in enumerate(outs) if t is not None)
        return outs
    module.run_node = watch
    with torch.no_grad():
        env = module.run(feeds, free=True)
    gc.collect()
    # Constant nodes' tensors are the module's, made once.
    constants = {t for n in graph.nodes if n.constant is not None
                 for t in n.outputs}
    alive = {name for name, ref in seen if ref() is not None}
    assert alive - constants == set(graph.outputs)
    del env


def test_training_step_is_unchanged(tmp_path):
    # The same loss and weights after a step whether or not the forward
    # pass's tensors stay (train_step frees them).
    a, b = _module(tmp_path), _module(tmp_path)
    x = torch.randn(3, 8)
    la = train_step(a, a.bind_inputs((x,), {}), Optimizer("adam"))
    env = b.run(b.bind_inputs((x,), {}))
    from dp_torch.module import loss_of
    outs = [env[n] for n in b.graph.outputs]
    lb = loss_of(outs, b.graph.outputs, b.graph)
    for p in b.parameters():
        p.grad = None
    lb.backward()
    Optimizer("adam").step(b.named_weights(), b.profile_names)
    assert la == float(lb.detach())
    for (na, pa), (nb, pb) in zip(a.named_weights(), b.named_weights()):
        assert na == nb and torch.equal(pa, pb)
