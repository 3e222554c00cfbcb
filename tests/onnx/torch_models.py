"""The PyTorch models the ONNX tests and bench/compare_onnxruntime.py export: a ResNet-style
network (basic blocks, batch norm, a strided 1x1 shortcut) and a MobileNet-style one (inverted
residuals: 1x1 expand, 3x3 depthwise, 1x1 project, ReLU6), both for 3x32x32 images.

    /usr/bin/python3 tests/onnx/torch_models.py OUT_DIR   # writes resnet.onnx, mobilenet.onnx
"""
import os
import sys

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNetStyle(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.layers = nn.Sequential(BasicBlock(16, 16, 1), BasicBlock(16, 32, 2),
                                    BasicBlock(32, 64, 2))
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        y = self.layers(self.stem(x))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.block = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class MobileNetStyle(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6())
        self.blocks = nn.Sequential(InvertedResidual(16, 16, 1, 1), InvertedResidual(16, 24, 2, 6),
                                    InvertedResidual(24, 24, 1, 6), InvertedResidual(24, 32, 2, 6),
                                    InvertedResidual(32, 32, 1, 6))
        self.head = nn.Sequential(nn.Conv2d(32, 128, 1, bias=False), nn.BatchNorm2d(128), nn.ReLU6())
        self.fc = nn.Linear(128, classes)

    def forward(self, x):
        y = self.head(self.blocks(self.stem(x)))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(y, 1), 1))


def trained_looking(make, seed):
    """The model `make()` builds from seeded random weights, with batch-norm statistics far from
    the identity (so that folding them is tested), in eval mode."""
    torch.manual_seed(seed)
    model = make()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return model.eval()


MODELS = {"resnet": lambda: trained_looking(ResNetStyle, 1),
          "mobilenet": lambda: trained_looking(MobileNetStyle, 2)}


def export(name, path, opset=13, fold=True):
    """Exports MODELS[name] with a symbolic batch dim; returns the torch module. fold=False keeps
    the batch norms as nodes (PyTorch's exporter folds them into the convolutions by default)."""
    model = MODELS[name]()
    torch.onnx.export(model, torch.randn(1, 3, 32, 32), path, opset_version=opset,
                      input_names=["x"], output_names=["logits"], do_constant_folding=fold,
                      dynamic_axes={"x": {0: "batch"}, "logits": {0: "batch"}})
    return model


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    for n in MODELS:
        export(n, os.path.join(out, n + ".onnx"))
        print(os.path.join(out, n + ".onnx"))
