#!/usr/bin/env python3
"""Writes models/MANIFEST.json for the shipped models, with ONNX Runtime reference outputs.

Run with the project's environment after scripts/zoo/small_models.py:

    .venv/bin/python scripts/zoo/manifest.py --models models

For every model it records the file and its sha256, the script and seed that made it, input and
output names and shapes, the float32 test accuracy under ONNX Runtime on its test split, and
reference outputs for a fixed set of inputs (the first REF_COUNT test samples), stored as
models/ref/<name>_input.npy and models/ref/<name>_output.npy.
"""
import argparse
import hashlib
import json
import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

REF_COUNT = 16

# name -> (test inputs, labels) within the models folder
TEST_DATA = {
    "digits_mlp": ("digits_test_x_flat.npy", "digits_test_y.npy"),
    "digits_cnn": ("digits_test_x.npy", "digits_test_y.npy"),
    "resblock_cnn": ("digits_test_x.npy", "digits_test_y.npy"),
    "jet_mlp": ("jet_test_x.npy", "jet_test_y.npy"),
}
NOTES = {
    "digits_mlp": "MLP 64-64-32-32-10, ReLU, softmax; trained on scikit-learn digits (80/20 split)",
    "digits_cnn": "Conv3x3(8)-ReLU-Conv3x3(16)-ReLU-MaxPool2-Flatten-Dense(10), softmax; digits",
    "resblock_cnn": "Conv-ReLU-BN, residual [Conv-ReLU-Conv] + skip, BN-ReLU, GAP, Dense(10); digits",
    "jet_mlp": "hls4ml jet-tagging layer sizes 16-64-32-32-5; trained on a SYNTHETIC 5-class task "
               "(the real data set cannot be fetched here), see scripts/zoo/small_models.py",
}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def dims(value_info):
    out = []
    for d in value_info.type.tensor_type.shape.dim:
        out.append(d.dim_param if d.dim_param else d.dim_value)
    return out


def atomic_write(path, text):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".manifest.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="models")
    args = ap.parse_args()
    root = args.models
    os.makedirs(os.path.join(root, "ref"), exist_ok=True)
    with open(os.path.join(root, "training.json")) as f:
        training = json.load(f)

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    manifest = {"generator": "scripts/zoo/manifest.py", "onnxruntime": ort.__version__,
                "reference_count": REF_COUNT, "models": {}}
    for name in sorted(TEST_DATA):
        path = os.path.join(root, f"{name}.onnx")
        model = onnx.load(path)
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        xfile, yfile = TEST_DATA[name]
        x = np.load(os.path.join(root, xfile))
        y = np.load(os.path.join(root, yfile))
        in_name = sess.get_inputs()[0].name
        probs = sess.run(None, {in_name: x})[0]
        acc = float((probs.argmax(1) == y).mean())
        ref_in = x[:REF_COUNT]
        ref_out = sess.run(None, {in_name: ref_in})[0]
        rin = os.path.join("ref", f"{name}_input.npy")
        rout = os.path.join("ref", f"{name}_output.npy")
        np.save(os.path.join(root, rin), ref_in)
        np.save(os.path.join(root, rout), ref_out)
        manifest["models"][name] = {
            "file": f"{name}.onnx",
            "sha256": sha256(path),
            "description": NOTES[name],
            "script": "scripts/zoo/small_models.py",
            "seed": training[name]["seed"],
            "epochs": training[name]["epochs"],
            "opset": next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
            "inputs": [{"name": i.name, "shape": dims(i)} for i in model.graph.input],
            "outputs": [{"name": o.name, "shape": dims(o)} for o in model.graph.output],
            "test_inputs": xfile,
            "test_labels": yfile,
            "test_count": int(len(y)),
            "test_accuracy": acc,
            "torch_test_accuracy": training[name]["torch_test_accuracy"],
            "reference": {
                "input": rin, "input_sha256": sha256(os.path.join(root, rin)),
                "output": rout, "output_sha256": sha256(os.path.join(root, rout)),
                "source": f"onnxruntime {ort.__version__} CPUExecutionProvider",
            },
        }
        print(f"{name}: sha256 {manifest['models'][name]['sha256'][:12]}, "
              f"ONNX Runtime test accuracy {acc:.4f} on {len(y)}")
    for f in sorted(set(sum(TEST_DATA.values(), ()))):
        manifest.setdefault("data", {})[f] = sha256(os.path.join(root, f))
    atomic_write(os.path.join(root, "MANIFEST.json"), json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
