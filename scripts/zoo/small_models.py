#!/usr/bin/python3
"""Trains the small models shipped in models/ and exports them with torch.onnx.export.

Uses scikit-learn's bundled `digits` data set (1,797 8x8 images, no download) with a fixed-seed
80/20 split, a documented synthetic 5-class task for the jet-tagging MLP (the real hls4ml data set
cannot be fetched here), and PyTorch (Debian's CPU-only python3-torch: run with /usr/bin/python3).

    /usr/bin/python3 scripts/zoo/small_models.py --out models

Writes models/<name>.onnx for digits_mlp, digits_cnn, resblock_cnn and jet_mlp, the test splits
as .npy (digits_test_x.npy: float32 N x 1 x 8 x 8 scaled to [0, 1]; digits_test_x_flat.npy:
N x 64; digits_test_y.npy: int64 labels; jet_test_x.npy / jet_test_y.npy), and
models/training.json with each model's seed and float32 test accuracy in PyTorch.
scripts/zoo/manifest.py then writes models/MANIFEST.json with ONNX Runtime reference outputs.
"""
import argparse
import json
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 20261121


class MLP(torch.nn.Module):
    """n_in-64-32-32-n_out with ReLU, softmax output: digits_mlp (64 -> 10) and the hls4ml
    jet-tagging architecture jet_mlp (16 -> 5)."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.fc1 = torch.nn.Linear(n_in, 64)
        self.fc2 = torch.nn.Linear(64, 32)
        self.fc3 = torch.nn.Linear(32, 32)
        self.fc4 = torch.nn.Linear(32, n_out)

    def logits(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        x = torch.relu(self.fc3(x))
        return self.fc4(x)

    def forward(self, x):
        return torch.softmax(self.logits(x), dim=1)


class DigitsCNN(torch.nn.Module):
    """1x8x8 -> Conv3x3(8)-ReLU-Conv3x3(16)-ReLU-MaxPool2-Flatten-Dense(10), softmax output."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3)
        self.conv2 = torch.nn.Conv2d(8, 16, 3)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(16 * 2 * 2, 10)

    def logits(self, x):
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.conv2(x))
        x = self.pool(x)
        return self.fc(torch.flatten(x, 1))

    def forward(self, x):
        return torch.softmax(self.logits(x), dim=1)


class ResBlockCNN(torch.nn.Module):
    """1x8x8 -> Conv3x3(8)-ReLU-BN -> [Conv3x3(8)-ReLU-Conv3x3(8)] + skip -> BN-ReLU -> GAP -> Dense(10).

    The BatchNormalization layers sit after a ReLU and after the residual Add, where the
    exporter cannot fold them into a convolution, so they reach the ONNX file with their
    trained statistics and Triad's own BN folding is exercised."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv_a = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.conv_b = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 10)

    def logits(self, x):
        x = self.bn1(torch.relu(self.stem(x)))
        r = self.conv_b(torch.relu(self.conv_a(x)))
        x = torch.relu(self.bn2(x + r))
        x = torch.nn.functional.adaptive_avg_pool2d(x, 1)
        return self.fc(torch.flatten(x, 1))

    def forward(self, x):
        return torch.softmax(self.logits(x), dim=1)


def synthetic_jets(n, seed):
    """A synthetic 5-class task with the jet data set's shape: 16 standardized features.

    Each class (g, q, W, Z, t in the real task) is a mixture of two Gaussians with random
    means (scale 1.2) and random per-feature widths in [0.6, 1.4]; a fixed random rotation
    mixes the features so the classes are not axis-aligned. Balanced classes."""
    rng = np.random.default_rng(seed)
    means = rng.normal(0.0, 0.45, size=(5, 2, 16))
    widths = rng.uniform(0.6, 1.4, size=(5, 2, 16))
    rot, _ = np.linalg.qr(rng.normal(size=(16, 16)))
    y = np.repeat(np.arange(5), n // 5)
    comp = rng.integers(0, 2, size=len(y))
    x = means[y, comp] + widths[y, comp] * rng.normal(size=(len(y), 16))
    x = x @ rot
    x = (x - x.mean(0)) / x.std(0)
    perm = rng.permutation(len(y))
    return x[perm].astype(np.float32), y[perm].astype(np.int64)


def train(model, x, y, epochs, lr):
    torch.manual_seed(SEED)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    n = len(xs)
    for _ in range(epochs):
        perm = torch.randperm(n)
        for i in range(0, n, 32):
            idx = perm[i:i + 32]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model.logits(xs[idx]), ys[idx])
            loss.backward()
            opt.step()
    return model


def accuracy(model, x, y):
    with torch.no_grad():
        return float((model(torch.from_numpy(x)).argmax(1).numpy() == y).mean())


def export(model, example, path, input_name="input"):
    model.eval()
    torch.onnx.export(model, example, path, input_names=[input_name], output_names=["probs"],
                      dynamic_axes={input_name: {0: "batch"}, "probs": {0: "batch"}},
                      opset_version=17, do_constant_folding=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="models")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(SEED)
    np.random.seed(SEED)

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.2, random_state=SEED, stratify=y)
    np.save(os.path.join(args.out, "digits_test_x.npy"), xte[:, None, :, :])
    np.save(os.path.join(args.out, "digits_test_x_flat.npy"), xte.reshape(len(xte), 64))
    np.save(os.path.join(args.out, "digits_test_y.npy"), yte)

    results = {}

    def build(name, model, xtr_, ytr_, xte_, yte_, epochs, lr, example):
        torch.manual_seed(SEED)
        train(model, xtr_, ytr_, epochs=epochs, lr=lr)
        model.eval()
        export(model, example, os.path.join(args.out, f"{name}.onnx"))
        acc = accuracy(model, xte_, yte_)
        results[name] = {"seed": SEED, "epochs": epochs, "torch_test_accuracy": round(acc, 6)}
        print(f"{name}: test accuracy {acc:.4f}")

    build("digits_mlp", MLP(64, 10), xtr.reshape(-1, 64), ytr, xte.reshape(-1, 64), yte, 60, 2e-3,
          torch.zeros(1, 64))
    build("digits_cnn", DigitsCNN(), xtr[:, None], ytr, xte[:, None], yte, 40, 3e-3,
          torch.zeros(1, 1, 8, 8))
    build("resblock_cnn", ResBlockCNN(), xtr[:, None], ytr, xte[:, None], yte, 40, 3e-3,
          torch.zeros(1, 1, 8, 8))

    jx, jy = synthetic_jets(10000, SEED)
    jxtr, jxte, jytr, jyte = train_test_split(jx, jy, test_size=0.2, random_state=SEED, stratify=jy)
    np.save(os.path.join(args.out, "jet_test_x.npy"), jxte)
    np.save(os.path.join(args.out, "jet_test_y.npy"), jyte)
    build("jet_mlp", MLP(16, 5), jxtr, jytr, jxte, jyte, 30, 2e-3, torch.zeros(1, 16))

    with open(os.path.join(args.out, "training.json"), "w") as f:
        json.dump(results, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
