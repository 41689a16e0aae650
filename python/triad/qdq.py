"""`triad quantize --format qdq`: a float ONNX model to an int8 QDQ model with ONNX Runtime's
post-training quantizer (onnxruntime.quantization.quantize_static), calibrated on the user's
data. Run on its own by the CLI (cli/Quantize.cpp) with the peers' Python environment
(.venv-peers: the newest onnxruntime and onnx), so the model it writes is exactly what ONNX
Runtime's own tool makes: QuantizeLinear/DequantizeLinear pairs around every quantizable op,
int8 weights (per output channel unless --per-tensor), int32 biases, 8-bit activations.

    python qdq.py MODEL.onnx CALIBRATION.npy OUT.onnx [--per-tensor] [--method minmax]
                  [--activations uint8|int8]

Prints one JSON line: the op counts of the written model and the calibration used. Exit codes:
2 bad arguments or data, 3 onnxruntime.quantization missing, 4 the quantizer failed. OUT is
written to a temporary name next to it and moved into place.
"""
import argparse
import json
import os
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("calibration")
    ap.add_argument("out")
    ap.add_argument("--per-tensor", action="store_true")
    ap.add_argument("--method", choices=["minmax", "percentile", "entropy"], default="minmax")
    ap.add_argument("--activations", choices=["uint8", "int8"], default="uint8")
    ap.add_argument("--batch", type=int, default=32, help="rows per calibration batch")
    args = ap.parse_args()
    try:
        import numpy as np
        import onnx
        from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod,
                                              QuantFormat, QuantType, quantize_static)
        from onnxruntime.quantization.shape_inference import quant_pre_process
    except ImportError as e:
        print(f"qdq.py: {e}", file=sys.stderr)
        sys.exit(3)

    model = onnx.load(args.model, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in inits]
    if len(inputs) != 1:
        print(f"qdq.py: the model has {len(inputs)} inputs; --format qdq takes one", file=sys.stderr)
        sys.exit(2)
    name = inputs[0].name
    dims = inputs[0].type.tensor_type.shape.dim
    data = np.load(args.calibration)
    if data.ndim != len(dims):
        print(f"qdq.py: calibration data has shape {list(data.shape)}, input '{name}' has rank "
              f"{len(dims)}", file=sys.stderr)
        sys.exit(2)
    data = data.astype(np.float32)
    # Rows per batch: the model's fixed batch, else --batch.
    rows = dims[0].dim_value if dims[0].dim_value > 0 else args.batch
    batches = [data[i:i + rows] for i in range(0, data.shape[0] - rows + 1, rows)]
    if not batches:
        print(f"qdq.py: calibration data has {data.shape[0]} rows, the model takes batches of "
              f"{rows}", file=sys.stderr)
        sys.exit(2)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{name: b} for b in batches])

        def get_next(self):
            return next(self.it, None)

    method = {"minmax": CalibrationMethod.MinMax, "percentile": CalibrationMethod.Percentile,
              "entropy": CalibrationMethod.Entropy}[args.method]
    out_dir = os.path.dirname(os.path.abspath(args.out))
    fd, tmp = tempfile.mkstemp(suffix=".onnx", dir=out_dir)
    os.close(fd)
    pre = tmp + ".pre.onnx"
    try:
        # ONNX Runtime's recommended pre-processing: shape inference and its basic graph
        # optimizations (BatchNormalization folded into Conv, ...), so more ops quantize.
        quant_pre_process(args.model, pre, skip_symbolic_shape=True)
        quantize_static(pre, tmp, Reader(), quant_format=QuantFormat.QDQ,
                        per_channel=not args.per_tensor,
                        activation_type=QuantType.QUInt8 if args.activations == "uint8"
                        else QuantType.QInt8,
                        weight_type=QuantType.QInt8, calibrate_method=method)
        os.replace(tmp, args.out)
    except Exception as e:  # the quantizer's own errors, reported as they are
        print(f"qdq.py: quantize_static failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(4)
    finally:
        for f in (tmp, pre):
            if os.path.exists(f):
                os.unlink(f)
    ops = {}
    for n in onnx.load(args.out).graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    print(json.dumps({"ops": ops, "calibration_batches": len(batches), "rows_per_batch": rows,
                      "method": args.method, "per_channel": not args.per_tensor,
                      "activations": args.activations}))


if __name__ == "__main__":
    main()
