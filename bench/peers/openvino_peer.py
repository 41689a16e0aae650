#!/usr/bin/env python3
"""OpenVINO as a peer of `triad bench` (protocol: bench/peers/README.md); optional: answers
{"ready": false, ...} when the `openvino` PyPI package is not installed.

The ONNX model is read by OpenVINO's own frontend and reshaped to the concrete input shapes (the
batch and every --dim), then compiled for the CPU device with INFERENCE_NUM_THREADS = --threads,
PERFORMANCE_HINT = LATENCY (one stream) and INFERENCE_PRECISION_HINT = f32 (OpenVINO would
otherwise pick bf16 on CPUs that have it; Triad's CPU target computes in f32). Timed runs reuse
one infer request whose input tensors share the batch's memory.

  pip install openvino   # into the venv that runs the peer
  .venv/bin/python bench/peers/openvino_peer.py --model models/digits_cnn.onnx --batch 1 --threads 2
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer_common  # noqa: E402


class OpenVinoPeer(peer_common.Peer):
    name = "openvino"
    package = "openvino"

    def import_runtime(self):
        import openvino
        self.ov = openvino
        try:
            from importlib.metadata import version
            self.version = version("openvino")
        except Exception:  # noqa: BLE001
            self.version = str(getattr(openvino, "__version__", "?")).split("-")[0]

    def config(self, profiling=False):
        cfg = {"INFERENCE_NUM_THREADS": self.threads, "PERFORMANCE_HINT": "LATENCY",
               "INFERENCE_PRECISION_HINT": "f32"}
        if profiling:
            cfg["PERF_COUNT"] = True
        return cfg

    def compile(self, path, spec, profiling=False):
        model = self.core.read_model(path)
        if spec is not None:
            model.reshape({s.name: s.shape for s in spec.inputs})
        return self.core.compile_model(model, "CPU", self.config(profiling))

    def load(self, path, spec):
        self.core = self.ov.Core()
        self.path, self.spec = path, spec
        try:
            name = self.core.get_property("CPU", "FULL_DEVICE_NAME")
            self.device = f"{name}, {self.threads} thread{'s' if self.threads != 1 else ''}"
        except Exception:  # noqa: BLE001 - keep the /proc/cpuinfo name
            pass
        self.compiled = self.compile(path, spec)
        self.request = self.compiled.create_infer_request()
        self.in_names = [i.get_any_name() for i in self.compiled.inputs]
        if spec is not None and sorted(self.in_names) != sorted(s.name for s in spec.inputs):
            raise peer_common.PeerError(f"OpenVINO sees inputs {self.in_names}, the model file "
                                        f"{[s.name for s in spec.inputs]}")
        self.names = [s.name for s in spec.inputs] if spec is not None else self.in_names

    def infer(self, arrays):
        res = self.request.infer(dict(zip(self.names, arrays)))
        return [np.array(res[o]) for o in self.compiled.outputs]

    def timed_runner(self, arrays):
        req = self.compiled.create_infer_request()
        self._kept = [np.ascontiguousarray(a) for a in arrays]
        for name, a in zip(self.names, self._kept):
            req.set_tensor(name, self.ov.Tensor(a, shared_memory=True))
        req.infer()
        return req.infer

    def profile(self, arrays, n):
        """OpenVINO's performance counters (PERF_COUNT) on a second compiled model: per executed
        node, its time per run after two untimed runs."""
        compiled = self.compile(self.path, self.spec, profiling=True)
        req = compiled.create_infer_request()
        feeds = dict(zip(self.names, arrays))
        for _ in range(2):
            req.infer(feeds)
        layers = {}
        for _ in range(n):
            req.infer(feeds)
            for p in req.profiling_info:
                if str(p.status).endswith("NOT_RUN"):
                    continue
                layer = layers.setdefault(p.node_name, {"layer": p.node_name, "kind": "layer",
                                                        "op": p.node_type, "ms": 0.0})
                layer["ms"] += p.real_time.total_seconds() * 1e3 / n
        return list(layers.values())


if __name__ == "__main__":
    peer_common.main(OpenVinoPeer)
