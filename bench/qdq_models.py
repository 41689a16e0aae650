#!/usr/bin/env python3
"""QDQ copies of the zoo's float models, made by ONNX Runtime's own post-training quantizers:
the int8 models `triad bench` compares with ONNX Runtime and OpenVINO (docs/performance.md,
"QDQ models on the CPU").

Run with the peers' environment (.venv-peers: the newest onnxruntime and onnx; the project's
.venv pins onnx 1.13, with which onnxruntime.quantization does not import):

    .venv-peers/bin/python bench/qdq_models.py resnet50 mobilenet_v2      # quantize_static
    .venv-peers/bin/python bench/qdq_models.py --dynamic bert_base        # quantize_dynamic

Static: QDQ format, per-channel int8 weights, uint8 activations, calibrated (min-max) on
--calibration seeded N(0, 1) batches of the model's input shape (the zoo's exports take random
normal images). Dynamic: DynamicQuantizeLinear + MatMulInteger, per-tensor int8 weights (what
quantize_dynamic emits for transformers). Each model NAME in the zoo (--zoo, else
$TRIAD_ZOO_CACHE, else ~/.cache/triad/zoo; scripts/zoo/large_models.py builds them) gets
<zoo>/NAME_qdq/NAME_qdq.onnx (or NAME_dyn/NAME_dyn.onnx) and the zoo's reference input copied
next to it as NAME_qdq_input0.npy. Files are written to a temporary name and moved into place.
Nothing is downloaded.
"""
import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_dynamic, quantize_static)


class RandomReader(CalibrationDataReader):
    """`batches` seeded N(0, 1) inputs of the model's (static) input shapes."""

    def __init__(self, model, batches, seed):
        rng = np.random.default_rng(seed)
        feeds = []
        for _ in range(batches):
            feed = {}
            for i in model.graph.input:
                dims = [d.dim_value if d.dim_value > 0 else 1 for d in i.type.tensor_type.shape.dim]
                et = i.type.tensor_type.elem_type
                if et == onnx.TensorProto.FLOAT:
                    feed[i.name] = rng.standard_normal(dims, dtype=np.float32)
                else:  # token ids and masks
                    feed[i.name] = np.ones(dims, dtype=onnx.helper.tensor_dtype_to_np_dtype(et))
            feeds.append(feed)
        self.it = iter(feeds)

    def get_next(self):
        return next(self.it, None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--dynamic", action="store_true", help="quantize_dynamic (transformers)")
    ap.add_argument("--calibration", type=int, default=8, help="calibration batches (static)")
    ap.add_argument("--zoo", default=os.environ.get("TRIAD_ZOO_CACHE",
                                                    str(Path.home() / ".cache" / "triad" / "zoo")))
    args = ap.parse_args()
    zoo = Path(args.zoo)
    for name in args.models:
        src = zoo / name / f"{name}.onnx"
        if not src.is_file():
            sys.exit(f"qdq_models.py: {src} not found (build it: scripts/zoo/large_models.py "
                     f"--model {name})")
        tag = "dyn" if args.dynamic else "qdq"
        out_dir = zoo / f"{name}_{tag}"
        out_dir.mkdir(parents=True, exist_ok=True)
        dst = out_dir / f"{name}_{tag}.onnx"
        with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
            tmp_model = Path(tmp) / "model.onnx"
            if args.dynamic:
                quantize_dynamic(str(src), str(tmp_model), weight_type=QuantType.QInt8)
            else:
                reader = RandomReader(onnx.load(str(src)), args.calibration, 20261127)
                quantize_static(str(src), str(tmp_model), reader, quant_format=QuantFormat.QDQ,
                                per_channel=True, activation_type=QuantType.QUInt8,
                                weight_type=QuantType.QInt8)
            os.replace(tmp_model, dst)
        for ref in sorted((zoo / name).glob(f"{name}_input*.npy")):
            target = out_dir / ref.name.replace(name, f"{name}_{tag}", 1)
            shutil.copyfile(ref, target.with_suffix(".tmp"))
            os.replace(target.with_suffix(".tmp"), target)
        ops = {}
        for n in onnx.load(str(dst)).graph.node:
            ops[n.op_type] = ops.get(n.op_type, 0) + 1
        print(f"{dst}: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))


if __name__ == "__main__":
    main()
