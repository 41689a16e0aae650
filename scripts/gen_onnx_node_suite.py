#!/usr/bin/env python3
"""Writes the ONNX node-test suite of the installed `onnx` package to a directory.

Since onnx 1.16 the wheel no longer ships backend/test/data/node; the cases are Python code
(onnx.backend.test.case.node) that computes each model and its expected outputs. This script
runs them and writes the usual layout, which tests/conformance/OnnxNodeTests.cpp reads:

    OUT/test_<case>/model.onnx
    OUT/test_<case>/test_data_set_<k>/input_<j>.pb, output_<j>.pb

Sequence, map and optional inputs are written with onnx's own helpers (the harness skips
them as unsupported types). The directory is written next to OUT and renamed into place, so
an interrupted run leaves no half-written suite; OUT/.onnx_version names the generator.

Usage: gen_onnx_node_suite.py OUT
"""
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node as node_cases


def proto_for(value, value_info):
    t = value_info.type
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, value_info.name)
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, value_info.name)
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, value_info.name)
    if isinstance(value, TensorProto):
        return value
    return numpy_helper.from_array(np.asarray(value), value_info.name)


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = os.path.abspath(sys.argv[1])
    parent = os.path.dirname(out)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".node-suite-", dir=parent)
    try:
        cases = node_cases.collect_testcases()
        for case in cases:
            case_dir = os.path.join(tmp, case.name)
            os.makedirs(case_dir)
            with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
                f.write(case.model.SerializeToString())
            for i, (inputs, outputs) in enumerate(case.data_sets):
                ds = os.path.join(case_dir, f"test_data_set_{i}")
                os.makedirs(ds)
                for j, value in enumerate(inputs):
                    vi = case.model.graph.input[j]
                    with open(os.path.join(ds, f"input_{j}.pb"), "wb") as f:
                        f.write(proto_for(value, vi).SerializeToString())
                for j, value in enumerate(outputs):
                    vi = case.model.graph.output[j]
                    with open(os.path.join(ds, f"output_{j}.pb"), "wb") as f:
                        f.write(proto_for(value, vi).SerializeToString())
        with open(os.path.join(tmp, ".onnx_version"), "w") as f:
            f.write(f"onnx {onnx.__version__}, {len(cases)} cases\n")
        if os.path.exists(out):
            old = out + ".old"
            shutil.rmtree(old, ignore_errors=True)
            os.rename(out, old)
            os.rename(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    print(f"gen_onnx_node_suite: {len(cases)} cases (onnx {onnx.__version__}) in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
