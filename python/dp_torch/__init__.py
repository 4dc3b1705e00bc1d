"""dp_torch: runs what dp places, on PyTorch.

    import dp_torch
    model = dp_torch.load("resnet50.placed.onnx", device_map="gpu:0=cpu")
    y = model(x)

`load` reads the placed ONNX model that dp-opt's ``emit{format=onnx}``
writes and returns a ``torch.nn.Module`` whose nodes run on their devices.
``python3 -m dp_torch run`` times inference or training steps in one
process or with one rank per device (docs/runtime.md).
"""

from .graph import PlacedGraph, RuntimeError_ as DpError, node_names
from .module import (Optimizer, PlacedModule, load, loss_of, make_inputs,
                     parse_device_map, train_step)

__all__ = ["DpError", "Optimizer", "PlacedGraph", "PlacedModule", "load",
           "loss_of", "make_inputs", "node_names", "parse_device_map",
           "train_step"]
