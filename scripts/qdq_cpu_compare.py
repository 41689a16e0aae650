"""The CPU target on ONNX Runtime's QDQ models: integer kernels (fuse-qdq, TRIAD_CPU_QDQ=int) vs
the float QDQ path (TRIAD_CPU_QDQ=float, the default) vs ONNX Runtime (all graph optimizations: its QDQ fusions
into QLinearConv/QGemm; and none: the QDQ graph as written), in one process.

Prints, per model: how many output values equal ONNX Runtime's (both settings) and the latency
of each at batch 1 and at the whole test set, measured in interleaved rounds (medians).
Usage: PYTHONPATH=build/python .venv/bin/python scripts/qdq_cpu_compare.py [--rounds 7]"""
import argparse
import os
import pathlib
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

import triad

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODELS = {
    "jet_mlp_qdq": "jet_test_x.npy",
    "jet_mlp_qdq_pc": "jet_test_x.npy",
    "resblock_cnn_qdq": "digits_test_x.npy",
}


def logits_model(path, out_dir):
    """The model ending at the quantized (uint8/int8) input of its Softmax: the last integer
    layer's own output, before ONNX Runtime's QLinearSoftmax (a table) rounds differently."""
    m = onnx.load(path)
    producer = {o: n for n in m.graph.node for o in n.output}
    soft = next(n for n in m.graph.node if n.op_type == "Softmax")
    dq = producer[soft.input[0]]
    q_out = dq.input[0]
    elem = onnx.TensorProto.INT8 if "_pc" in path.name else onnx.TensorProto.UINT8
    for init in m.graph.initializer:
        if init.name == dq.input[2]:
            elem = init.data_type
    del m.graph.output[:]
    m.graph.output.append(onnx.helper.make_tensor_value_info(q_out, elem, None))
    p = pathlib.Path(out_dir) / path.name.replace(".onnx", "_logits.onnx")
    onnx.save(m, p)
    return p


def triad_cpu(path, qdq, threads, batches):
    """A CPU executable with the integer kernels (qdq="int") or the float QDQ path, compiled
    for each of `batches` rows (the target reads TRIAD_CPU_QDQ when it compiles)."""
    os.environ["TRIAD_CPU_QDQ"] = qdq
    try:
        exe = triad.load(path).compile("cpu", threads=threads)
        for x in batches:
            exe(x)
        return exe
    finally:
        os.environ.pop("TRIAD_CPU_QDQ", None)


def ort_session(path, optimize, threads):
    o = ort.SessionOptions()
    o.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize
                                  else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
    o.intra_op_num_threads = threads
    s = ort.InferenceSession(str(path), o, providers=["CPUExecutionProvider"])
    name = s.get_inputs()[0].name
    return lambda x: s.run(None, {name: x})[0]


def timed(f, x, repeat):
    f(x)
    t0 = time.perf_counter()
    for _ in range(repeat):
        f(x)
    return (time.perf_counter() - t0) / repeat * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    for model, data in MODELS.items():
        path = ROOT / "models" / f"{model}.onnx"
        x = np.load(ROOT / "models" / data)
        runners = {
            "triad int": triad_cpu(path, "int", a.threads, (x[:1], x)),
            "triad float": triad_cpu(path, "float", a.threads, (x[:1], x)),
            "ort fused": ort_session(path, True, a.threads),
            "ort unfused": ort_session(path, False, a.threads),
        }
        out = {k: f(x) for k, f in runners.items()}
        step = 1 / 255  # the outputs are DequantizeLinear of uint8 softmax levels
        print(f"{model}: {x.shape[0]} samples, {out['ort fused'].size} output values")
        with tempfile.TemporaryDirectory() as d:
            lp = logits_model(path, d)
            logits = {"triad int": triad_cpu(lp, "int", a.threads, (x,))(x),
                      "triad float": triad_cpu(lp, "float", a.threads, (x,))(x),
                      "ort fused": ort_session(lp, True, a.threads)(x),
                      "ort unfused": ort_session(lp, False, a.threads)(x)}
        for k in ("triad int", "triad float"):
            for r in ("ort fused", "ort unfused"):
                d = np.abs(out[k] - out[r]) / step
                dl = np.abs(logits[k].astype(np.int32) - logits[r].astype(np.int32))
                print(f"  {k:11s} vs {r:11s}: probs {int(np.sum(d < 0.5))} identical, "
                      f"{int(np.sum(d >= 0.5))} differ (max {d.max():.0f} levels); quantized "
                      f"logits {int(np.sum(dl == 0))} identical, {int(np.sum(dl > 0))} differ "
                      f"(max {dl.max()}); top-1 agreement "
                      f"{np.mean(out[k].argmax(1) == out[r].argmax(1)):.4f}")
        for batch in (1, x.shape[0]):
            xb = np.ascontiguousarray(x[:batch])
            repeat = max(3, int(20000 / batch))
            times = {k: [] for k in runners}
            for _ in range(a.rounds):  # interleaved rounds
                for k, f in runners.items():
                    times[k].append(timed(f, xb, repeat))
            med = {k: float(np.median(v)) for k, v in times.items()}
            base = med["triad int"]
            print(f"  batch {batch:4d}: " + ", ".join(
                f"{k} {v:.4f} ms ({v / base:.2f}x)" for k, v in med.items()))


if __name__ == "__main__":
    main()
