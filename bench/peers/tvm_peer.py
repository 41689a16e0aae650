#!/usr/bin/env python3
"""Apache TVM as a peer of `triad bench` (protocol: bench/peers/README.md); optional: answers
{"ready": false, ...} when the `apache-tvm` PyPI package is not installed.

The ONNX model is imported at the concrete input shapes (the batch and every --dim, weights
frozen as constants) and built for the host CPU (`llvm`, -mcpu = LLVM's name of this CPU) with
TVM's default pipeline and no auto-tuning. TVM_NUM_THREADS = --threads (set before TVM loads).

- TVM >= 0.20 (Relay removed): Relax, `tvm.relax.frontend.onnx.from_onnx`, `tvm.compile`, run on
  the Relax VM (tested with apache-tvm 0.27.0.post1).
- Older TVM: Relay, `relay.frontend.onnx.from_onnx`, `relay.build` at opt_level 3, the graph
  executor (not tested here: no such wheel for this Python).

The compile time includes the import and the build. Untuned TVM schedules are far from TVM's
best: treat its numbers as "TVM out of the box".

  pip install apache-tvm   # into the venv that runs the peer
  .venv/bin/python bench/peers/tvm_peer.py --model models/digits_cnn.onnx --batch 1 --threads 2
"""

import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer_common  # noqa: E402


class TvmPeer(peer_common.Peer):
    name = "tvm"
    package = "apache-tvm"

    def import_runtime(self):
        os.environ["TVM_NUM_THREADS"] = str(self.threads)  # read when TVM's thread pool starts
        import tvm
        self.tvm = tvm
        self.version = str(tvm.__version__)
        try:
            from tvm import relay  # noqa: F401
            self.flavour = "relay"
        except ImportError:
            self.flavour = "relax"

    def target(self):
        tvm = self.tvm
        cpu = None
        try:
            cpu = tvm.target.codegen.llvm_get_system_cpu()
        except Exception:  # noqa: BLE001
            pass
        if self.flavour == "relax":
            t = {"kind": "llvm", "num-cores": self.threads}
            if cpu:
                t["mcpu"] = cpu
            return tvm.target.Target(t)
        return tvm.target.Target("llvm" + (f" -mcpu={cpu}" if cpu else ""))

    def load(self, path, spec):
        import onnx
        tvm = self.tvm
        model = onnx.load(path)
        shapes = {s.name: s.shape for s in spec.inputs} if spec is not None else None
        self.names = [s.name for s in spec.inputs] if spec is not None else []
        self.dev = tvm.cpu()
        target = self.target()
        self.device = (f"{peer_common.cpu_model()} (llvm -mcpu={target.attrs.get('mcpu', '?')}), "
                       f"{self.threads} thread{'s' if self.threads != 1 else ''}")
        if self.flavour == "relax":
            from tvm import relax
            from tvm.relax.frontend.onnx import from_onnx
            mod = from_onnx(model, shape_dict=shapes, keep_params_in_input=False)
            ex = tvm.compile(mod, target=target)
            self.vm = relax.VirtualMachine(ex, self.dev)
        else:
            from tvm import relay
            from tvm.contrib import graph_executor
            mod, params = relay.frontend.from_onnx(model, shape=shapes, freeze_params=True)
            with tvm.transform.PassContext(opt_level=3):
                lib = relay.build(mod, target=target, params=params)
            self.gm = graph_executor.GraphModule(lib["default"](self.dev))

    def _tensor(self, a):
        tvm = self.tvm
        make = getattr(tvm.runtime, "tensor", None) or tvm.nd.array
        return make(np.ascontiguousarray(a), self.dev)

    def infer(self, arrays):
        if self.flavour == "relax":
            out = self.vm["main"](*[self._tensor(a) for a in arrays])
            outs = [out] if hasattr(out, "numpy") else list(out)
            return [o.numpy() for o in outs]
        for name, a in zip(self.names, arrays):
            self.gm.set_input(name, self._tensor(a))
        self.gm.run()
        return [self.gm.get_output(i).numpy() for i in range(self.gm.get_num_outputs())]

    def timed_runner(self, arrays):
        tensors = [self._tensor(a) for a in arrays]
        if self.flavour == "relax":
            self.vm.set_input("main", *tensors)
            invoke = self.vm.invoke_stateful
            return lambda: invoke("main")
        for name, t in zip(self.names, tensors):
            self.gm.set_input(name, t)
        return self.gm.run


if __name__ == "__main__":
    peer_common.main(TvmPeer)
