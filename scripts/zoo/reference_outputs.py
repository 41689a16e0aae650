#!/usr/bin/env python3
"""Writes ONNX Runtime reference outputs and the manifest entry for one on-demand zoo model.

Called by scripts/zoo/large_models.py with the project's environment (ONNX Runtime is not in
Debian's Python):

    .venv/bin/python scripts/zoo/reference_outputs.py --folder CACHE/NAME --meta JSON

--meta carries the model name, seed, opset, versions, export time and, per graph input, how to
draw its values (normal: N(0, 1) float32; randint: integers in [low, high); mask: `valid` ones
then zeros). Inputs are drawn with numpy.random.default_rng(seed) in graph-input order. Writes
<name>_input<i>.npy, <name>_output<i>.npy (ONNX Runtime, CPU, one thread) and, last, <name>.json.
"""
import argparse
import hashlib
import json
import os
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def atomic(path, write):
    """Calls write(file object) on a temporary file next to `path`, then moves it into place."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp.")
    os.chmod(tmp, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def draw(rng, spec):
    shape = spec["shape"]
    if spec["fill"] == "normal":
        return rng.standard_normal(shape, dtype=np.float32)
    if spec["fill"] == "randint":
        return rng.integers(spec["low"], spec["high"], size=shape, dtype=np.int64)
    if spec["fill"] == "mask":
        x = np.zeros(shape, dtype=np.int64)
        x[..., :spec["valid"]] = 1
        return x
    raise ValueError(f"unknown fill {spec['fill']!r}")


def dims(value_info):
    return [d.dim_param if d.dim_param else d.dim_value
            for d in value_info.type.tensor_type.shape.dim]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folder", required=True)
    ap.add_argument("--meta", required=True, help="JSON from large_models.py")
    args = ap.parse_args()
    meta = json.loads(args.meta)
    name, folder = meta["name"], args.folder
    model_path = os.path.join(folder, f"{name}.onnx")

    # Graph inputs and outputs as exported (initializers are not listed as inputs at opset 17).
    graph = onnx.load(model_path, load_external_data=False).graph
    init_names = {t.name for t in graph.initializer}
    g_inputs = [i for i in graph.input if i.name not in init_names]
    elem = onnx.helper.tensor_dtype_to_np_dtype

    rng = np.random.default_rng(meta["seed"])
    feeds, entry_inputs = {}, []
    for i, vi in enumerate(g_inputs):
        x = draw(rng, meta["input_specs"][vi.name])
        assert list(x.shape) == dims(vi) and x.dtype == elem(vi.type.tensor_type.elem_type), vi.name
        fn = f"{name}_input{i}.npy"
        atomic(os.path.join(folder, fn), lambda f: np.save(f, x))
        feeds[vi.name] = x
        entry_inputs.append({"name": vi.name, "shape": dims(vi), "dtype": str(x.dtype),
                             "reference": fn, "reference_sha256": sha256(os.path.join(folder, fn))})

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
    start = time.monotonic()
    results = sess.run(None, feeds)
    ort_seconds = time.monotonic() - start

    entry_outputs = []
    for i, (vi, y) in enumerate(zip(graph.output, results)):
        fn = f"{name}_output{i}.npy"
        atomic(os.path.join(folder, fn), lambda f: np.save(f, y))
        entry_outputs.append({"name": vi.name, "shape": list(y.shape), "dtype": str(y.dtype),
                              "reference": fn, "reference_sha256": sha256(os.path.join(folder, fn))})

    entry = {
        "name": name,
        "description": meta["description"],
        "file": f"{name}.onnx",
        "sha256": sha256(model_path),
        "bytes": os.path.getsize(model_path),
        "script": meta["script"],
        "seed": meta["seed"],
        "opset": meta["opset"],
        "torch": meta["torch"],
        "torchvision": meta["torchvision"],
        "export_seconds": meta["export_seconds"],
        "inputs": entry_inputs,
        "input_specs": meta["input_specs"],
        "outputs": entry_outputs,
        "reference_source": f"onnxruntime {ort.__version__} CPUExecutionProvider, 1 thread",
        "onnxruntime_seconds": round(ort_seconds, 3),
    }
    atomic(os.path.join(folder, f"{name}.json"),
           lambda f: f.write((json.dumps(entry, indent=2) + "\n").encode()))
    for o, y in zip(entry_outputs, results):
        print(f"  {o['name']} {o['shape']} {o['dtype']}: mean {float(y.mean()):.4g}, "
              f"std {float(y.std()):.4g}; onnxruntime {ort_seconds:.2f}s")


if __name__ == "__main__":
    main()
