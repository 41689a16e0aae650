#!/usr/bin/env python3
"""ONNX Runtime as a peer of `triad bench` (protocol: bench/peers/README.md).

Session: CPU execution provider, intra_op_num_threads = --threads, inter_op_num_threads = 1,
sequential execution, all graph optimisations; the symbolic dimensions are fixed with
free-dimension overrides (the batch and every --dim), so ORT plans for the concrete shapes.
Timed runs go through an IOBinding on preallocated input and output buffers (ORT's cheapest
Python path). --no-spin sets session.intra_op.allow_spinning=0.

  .venv/bin/python bench/peers/onnxruntime_peer.py --model models/digits_cnn.onnx --batch 1 --threads 2
  .venv/bin/python bench/peers/onnxruntime_peer.py --model models/digits_cnn.onnx --batch 1,8 \\
      --threads 2 --input models/digits_test_x.npy --labels models/digits_test_y.npy --report ort.json
"""

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer_common  # noqa: E402

NP_OF_ORT = {"tensor(float)": np.float32, "tensor(double)": np.float64,
             "tensor(float16)": np.float16, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
             "tensor(int8)": np.int8, "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}


class OnnxRuntimePeer(peer_common.Peer):
    name = "onnxruntime"
    package = "onnxruntime"

    def import_runtime(self):
        import onnxruntime
        self.ort = onnxruntime
        self.version = onnxruntime.__version__

    def options(self, spec):
        ort = self.ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.log_severity_level = 3
        if self.args.no_spin:
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        for name, value in (spec.dims.items() if spec else ()):
            so.add_free_dimension_override_by_name(name, int(value))
        return so

    def load(self, path, spec):
        self.path = path
        self.spec = spec
        self.sess = self.ort.InferenceSession(path, sess_options=self.options(spec),
                                              providers=["CPUExecutionProvider"])
        self.in_names = [i.name for i in self.sess.get_inputs()]
        if spec is not None and self.in_names != [s.name for s in spec.inputs]:
            raise peer_common.PeerError(f"ONNX Runtime sees inputs {self.in_names}, the model "
                                        f"file {[s.name for s in spec.inputs]}")

    def infer(self, arrays):
        return self.sess.run(None, dict(zip(self.in_names, arrays)))

    def timed_runner(self, arrays):
        outs = self.infer(arrays)
        b = self.sess.io_binding()
        keep = []
        for name, a in zip(self.in_names, arrays):
            a = np.ascontiguousarray(a)
            keep.append(a)
            b.bind_input(name, "cpu", 0, a.dtype, list(a.shape), a.ctypes.data)
        for meta, o in zip(self.sess.get_outputs(), outs):
            dtype = NP_OF_ORT.get(meta.type)
            if dtype is None or not isinstance(o, np.ndarray):  # sequences, maps: ORT allocates
                b.bind_output(meta.name, "cpu")
                continue
            buf = np.empty(o.shape, dtype=dtype)
            keep.append(buf)
            b.bind_output(meta.name, "cpu", 0, buf.dtype, list(buf.shape), buf.ctypes.data)
        self._bound = keep  # the buffers live as long as the binding
        run = self.sess.run_with_iobinding
        return lambda: run(b)

    def profile(self, arrays, n):
        """ORT's own profiler on a second session with the same options: per node, the kernel
        time per run (after two untimed runs), in execution order."""
        so = self.options(self.spec)
        so.enable_profiling = True
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            so.profile_file_prefix = str(Path(d) / "ort")
            sess = self.ort.InferenceSession(self.path, sess_options=so,
                                             providers=["CPUExecutionProvider"])
            feeds = dict(zip(self.in_names, arrays))
            for _ in range(2):
                sess.run(None, feeds)
            for _ in range(n):
                sess.run(None, feeds)
            events = json.loads(Path(sess.end_profiling()).read_text())
        # A run's node events come before its model_run event; the untimed runs come first.
        skip = sum(1 for e in events if e.get("name") == "model_run") - n
        done, layers = 0, {}
        for e in events:
            if e.get("name") == "model_run":
                done += 1
            if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
                continue
            if done < skip:
                continue
            node = e["name"][: -len("_kernel_time")]
            layer = layers.setdefault(node, {"layer": node, "kind": "layer",
                                             "op": e.get("args", {}).get("op_name", "?"),
                                             "ms": 0.0})
            layer["ms"] += e["dur"] * 1e-3 / n
        return list(layers.values())


if __name__ == "__main__":
    peer_common.main(OnnxRuntimePeer)
