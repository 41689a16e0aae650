#!/usr/bin/python3
"""Exports the MLPerf Tiny architectures (v0.7 reference models) from PyTorch at a fixed batch of
1, the default of torch.onnx.export, for the FPGA target's fitting tests and docs/fpga.md.

    /usr/bin/python3 scripts/zoo/mlperf_tiny.py --out DIR [--only ad08,resnet8,dscnn] [--samples N]

- ad08: the anomaly-detection autoencoder, 640-128-128-128-128-8-128-128-128-128-640, each
  hidden Dense followed by BatchNorm and ReLU (ToyADMOS log-mel frames, 5 x 128 flattened).
- resnet8: the image-classification ResNet (32x32x3, stacks of 16, 32, 64 channels, 10 classes).
- dscnn: the keyword-spotting DS-CNN (49x10x1 MFCCs, 64 channels, 4 depthwise-separable blocks,
  12 classes).

The data sets (ToyADMOS, CIFAR-10, Speech Commands) cannot be fetched here, so the weights are
seeded initialisations with BatchNorm statistics drawn once (not trained): the models exercise
the architectures' shapes, resources and streaming, not their accuracy. Writes DIR/<name>.onnx
and DIR/<name>_x.npy (N seeded inputs in the model's input shape, batch first).
"""
import argparse
import os

import numpy as np
import torch

SEED = 20261128


def randomize_bn(model, gen):
    """Running statistics and affine parameters drawn once, so BatchNorm is not the identity."""
    for m in model.modules():
        if isinstance(m, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(n, generator=gen) * 0.1)


class AD08(torch.nn.Module):
    def __init__(self):
        super().__init__()
        dims = [640, 128, 128, 128, 128, 8, 128, 128, 128, 128]
        layers = []
        for a, b in zip(dims, dims[1:]):
            layers += [torch.nn.Linear(a, b), torch.nn.BatchNorm1d(b), torch.nn.ReLU()]
        layers.append(torch.nn.Linear(128, 640))
        self.net = torch.nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


def conv_bn(cin, cout, k, stride=1, groups=1, relu=True, padding=None):
    pad = k // 2 if padding is None else padding
    mods = [torch.nn.Conv2d(cin, cout, k, stride, pad, groups=groups, bias=False),
            torch.nn.BatchNorm2d(cout)]
    if relu:
        mods.append(torch.nn.ReLU())
    return torch.nn.Sequential(*mods)


class Block(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = conv_bn(cin, cout, 3, stride)
        self.b = conv_bn(cout, cout, 3, 1, relu=False)
        self.short = None if stride == 1 and cin == cout else conv_bn(cin, cout, 1, stride,
                                                                       relu=False)

    def forward(self, x):
        s = x if self.short is None else self.short(x)
        return torch.relu(self.b(self.a(x)) + s)


class ResNet8(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 16, 3)
        self.s1 = Block(16, 16, 1)
        self.s2 = Block(16, 32, 2)
        self.s3 = Block(32, 64, 2)
        self.fc = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = self.s3(self.s2(self.s1(self.stem(x))))
        x = torch.nn.functional.avg_pool2d(x, 8).flatten(1)
        return torch.softmax(self.fc(x), dim=1)


class DSCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(1, 64, (10, 4), 2, padding=(5, 1))
        blocks = []
        for _ in range(4):
            blocks += [conv_bn(64, 64, 3, groups=64), conv_bn(64, 64, 1)]
        self.blocks = torch.nn.Sequential(*blocks)
        self.fc = torch.nn.Linear(64, 12)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        x = torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return torch.softmax(self.fc(x), dim=1)


MODELS = {
    "ad08": (AD08, (640,)),
    "resnet8": (ResNet8, (3, 32, 32)),
    "dscnn": (DSCNN, (1, 49, 10)),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default=",".join(MODELS))
    ap.add_argument("--samples", type=int, default=64)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name in args.only.split(","):
        if name not in MODELS:
            raise SystemExit(f"unknown model '{name}' (known: {', '.join(MODELS)})")
        cls, shape = MODELS[name]
        torch.manual_seed(SEED)
        gen = torch.Generator().manual_seed(SEED)
        model = cls()
        randomize_bn(model, gen)
        model.eval()
        x = torch.randn(args.samples, *shape, generator=gen)
        if name == "ad08":
            x = x * 0.5  # log-mel frames, standardized
        path = os.path.join(args.out, f"{name}.onnx")
        torch.onnx.export(model, x[:1], path, input_names=["input"], output_names=["output"],
                          opset_version=17)
        np.save(os.path.join(args.out, f"{name}_x.npy"), x.numpy().astype(np.float32))
        print(f"{name}: {path}, inputs {tuple(x.shape)}")


if __name__ == "__main__":
    main()
