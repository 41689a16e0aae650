#!/usr/bin/python3
"""Trains the digits models shipped in models/ and exports them with torch.onnx.export.

Uses scikit-learn's bundled `digits` data set (1,797 8x8 images, no download) with a fixed-seed
80/20 split, and PyTorch (Debian's CPU-only python3-torch: run with /usr/bin/python3).

    /usr/bin/python3 scripts/zoo/digits.py --out models

Writes models/<name>.onnx, models/digits_test_x.npy (float32, N x 1 x 8 x 8, scaled to [0, 1]),
models/digits_test_x_flat.npy (N x 64), models/digits_test_y.npy (int64 labels) and prints
the float32 test accuracy of each model.
"""
import argparse
import os

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

SEED = 20261121


class DigitsMLP(torch.nn.Module):
    """64-64-32-32-10 with ReLU, softmax output."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 64)
        self.fc2 = torch.nn.Linear(64, 32)
        self.fc3 = torch.nn.Linear(32, 32)
        self.fc4 = torch.nn.Linear(32, 10)

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

    torch.manual_seed(SEED)
    mlp = train(DigitsMLP(), xtr.reshape(-1, 64), ytr, epochs=60, lr=2e-3)
    export(mlp, torch.zeros(1, 64), os.path.join(args.out, "digits_mlp.onnx"))
    print(f"digits_mlp test accuracy {accuracy(mlp, xte.reshape(-1, 64), yte):.4f}")

    torch.manual_seed(SEED)
    cnn = train(DigitsCNN(), xtr[:, None], ytr, epochs=40, lr=3e-3)
    export(cnn, torch.zeros(1, 1, 8, 8), os.path.join(args.out, "digits_cnn.onnx"))
    print(f"digits_cnn test accuracy {accuracy(cnn, xte[:, None], yte):.4f}")


if __name__ == "__main__":
    main()
