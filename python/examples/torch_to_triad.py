"""PyTorch -> ONNX -> triad: CPU, GPU and FPGA numbers and a precision plot (docs/python.md)."""
import sys; sys.path.append("/usr/lib/python3/dist-packages")  # noqa: E702 Debian's python3-torch
import time
import numpy as np, torch  # noqa: E401
import triad, triad.fpga, triad.plot  # noqa: E401

torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32),
                          torch.nn.ReLU(), torch.nn.Linear(32, 5), torch.nn.Softmax(dim=1)).eval()
torch.onnx.export(net, torch.zeros(1, 16), "mlp.onnx", input_names=["x"], output_names=["y"],
                  dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
x = np.load("models/jet_test_x.npy")[:500]  # 500 rows of 16 features
with torch.no_grad():
    ref = net(torch.from_numpy(x)).numpy()

m = triad.load("mlp.onnx", batch=len(x))
print(m.inspect()["totals"])
for target in ("cpu", "gpu", "fpga"):
    exe = m.compile(target)
    y = exe(x)
    t0 = time.perf_counter(); exe(x); ms = 1e3 * (time.perf_counter() - t0)  # noqa: E702
    print(f"{target:5} {ms:7.2f} ms  max |y - torch| {np.abs(y - ref).max():.1e}")

cfg = triad.fpga.config(m, default="fixed<16,6>", reuse=4)  # a plain dict, one entry per layer
cfg["layers"]["/2/Gemm"]["weight"] = "fixed<6,1>"            # narrower weights in one layer
q = m.quantize(cfg, calibration=x)
agree = (q.predict(x).argmax(1) == ref.argmax(1)).mean()
print(f"fixed point: top-1 agreement with torch {agree:.3f}")
triad.plot.precision(q, x, "precision.png")                 # ranges vs formats, errors
design = q.write_verilog("out/mlp_rtl", x[:20])
r = triad.sim("out/mlp_rtl", x[:20])                         # Verilator, bit-exact with predict
print(f"RTL: latency {r['latency_cycles']} cycles, II {r['ii']}, {r['mismatches']} mismatches, "
      f"estimate {design['estimate']}")
