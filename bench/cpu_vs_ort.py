#!/usr/bin/env python3
"""Triad's CPU target against ONNX Runtime: batch-1 latency and batch-32 throughput.

Both run in this one Python process on the same machine, at the same explicit thread count:

- Triad: `triad compile MODEL --target cpu --batch B -o DIR` writes standalone sources; they are
  built here into a shared object with the flags the CPU target uses (`c++ -std=c++17 -O3
  -march=native -pthread -fPIC -shared`) and called through ctypes (`P_create(weights, threads,
  NULL, NULL)`, `P_run(state, inputs, outputs)` on preallocated buffers).
- ONNX Runtime: an InferenceSession with intra_op_num_threads=N, inter_op_num_threads=1,
  sequential execution, all graph optimisations, run through an IOBinding on preallocated
  buffers (its lowest-overhead Python path; plain `session.run` is also timed on the identity
  model, to show what a typical caller pays).

For every case (model, batch, threads) Triad's outputs are first checked against ONNX Runtime's on
the benchmark inputs (rtol 1e-3, atol 1e-4; the script stops with exit code 1 otherwise). Then
both are warmed up and timed in alternating blocks (T O, O T, T O, ...; a short pause between
blocks lets the other side's spinning worker threads go idle; each block of short calls starts
with one untimed call), and p50/p90/p99 of the per-call times are reported. The per-call fixed
overhead of each side is measured on an identity-sized model (Relu on a [1,1] tensor), GFLOP/s
as 2 x MACs (from `triad inspect --json`) / p50, and the machine's FMA peak with
`triad-gemm-bench`.

The large models have a fixed batch of 1 in their export; for batch 32 the script writes a copy
with a symbolic batch dimension (CNNs only: their only reshape is a Flatten). BERT-base is run
at batch 1 (its export's Reshapes bake in batch 1 and sequence length 128).

Examples:
  .venv/bin/python bench/cpu_vs_ort.py --quick
  .venv/bin/python bench/cpu_vs_ort.py --threads 1 2 --repeat 3 --json cpu_vs_ort.json
"""

import argparse
import ctypes
import datetime
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ["digits_mlp", "jet_mlp", "digits_cnn"]
LARGE = ["resnet18", "resnet50", "mobilenet_v2", "bert_base"]
BATCH_FIXED = {"bert_base"}  # export bakes in batch 1 (Reshape constants)
CXX_FLAGS = ["-std=c++17", "-O3", "-march=native", "-pthread", "-fPIC", "-shared"]
RTOL, ATOL = 1e-3, 1e-4
IDENTITY = "identity_relu"


class BenchError(Exception):
    pass


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def c_identifier(name):
    """cpu::cIdentifier: the symbol prefix and file stem of the generated API ("/fc1/Gemm" ->
    "fc1_Gemm")."""
    s = ""
    for ch in name:
        if ch.isascii() and ch.isalnum():
            s += ch
        elif s and s[-1] != "_":
            s += "_"
    s = s.rstrip("_")
    return "l" + s if not s or s[0].isdigit() else s


# ------------------------------------------------------------------------------------------------
# Models


def identity_model(path):
    """The identity-sized model: Relu on a float [1,1] tensor (what a call costs by itself)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], IDENTITY, [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="bench")
    m.ir_version = 8
    onnx.checker.check_model(m)
    write_atomic(path, m.SerializeToString())


def write_atomic(path, data):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".tmp.")
    with os.fdopen(fd, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    os.replace(tmp, path)


def model_path(name, zoo_dir, build_missing):
    if name in SHIPPED:
        return ROOT / "models" / f"{name}.onnx"
    p = Path(zoo_dir) / name / f"{name}.onnx"
    if not p.exists():
        if not build_missing:
            raise BenchError(f"{p} is missing: build it with /usr/bin/python3 "
                             f"scripts/zoo/large_models.py --model {name}")
        log(f"[zoo] building {name} (scripts/zoo/large_models.py)")
        subprocess.run(["/usr/bin/python3", str(ROOT / "scripts/zoo/large_models.py"), "--model",
                        name], check=True)
    return p


def with_symbolic_batch(src, dst):
    """A copy of a fixed-batch-1 model whose batch (first) dimension is symbolic, 'batch'."""
    m = onnx.load(str(src))
    for v in list(m.graph.input) + list(m.graph.output):
        dims = v.type.tensor_type.shape.dim
        if len(dims) and dims[0].dim_value == 1:
            dims[0].Clear()
            dims[0].dim_param = "batch"
    del m.graph.value_info[:]
    for n in m.graph.node:
        if n.op_type == "Reshape":
            raise BenchError(f"{src}: has a Reshape ({n.name}); cannot make its batch symbolic")
    write_atomic(dst, m.SerializeToString())


# ------------------------------------------------------------------------------------------------
# Triad: standalone sources -> shared object -> ctypes


class TriadLib:
    """The standalone sources of one model at one batch size, built into lib<P>.so.

    generate() runs `triad compile`; build_command() is the compiler call still needed (None when
    the shared object is up to date with the sources and flags); load() opens it with ctypes."""

    def __init__(self, triad, onnx_path, batch, outdir, cxx):
        self.dir = Path(outdir)
        self.prefix = c_identifier(Path(onnx_path).stem)
        self.triad, self.onnx_path, self.batch, self.cxx = triad, onnx_path, batch, cxx
        self.build_seconds = 0.0

    def generate(self):
        cmd = [str(self.triad), "compile", str(self.onnx_path), "--target", "cpu", "--batch",
               str(self.batch), "-o", str(self.dir)]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise BenchError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
        self.compile_report = r.stdout.strip().splitlines()
        src = self.dir / f"{self.prefix}.cpp"
        if not src.exists():
            raise BenchError(f"{' '.join(cmd)} did not write {src}")
        self.so = self.dir / f"lib{self.prefix}.so"
        flags = CXX_FLAGS + ["-I" + str(self.dir)]
        h = hashlib.sha256(" ".join([self.cxx] + flags).encode())
        for f in (src, self.dir / f"{self.prefix}.h", self.dir / "triad_kernels.h"):
            h.update(f.read_bytes())
        self.hash = h.hexdigest()
        self.stamp = self.dir / "bench.stamp"
        self.cmd = [self.cxx] + flags + [str(src), "-o", str(self.so) + ".tmp"]

    def build_command(self):
        if self.so.exists() and self.stamp.exists() and self.stamp.read_text() == self.hash:
            return None
        return self.cmd

    def built(self, seconds):
        os.replace(str(self.so) + ".tmp", self.so)
        write_atomic(self.stamp, self.hash)
        self.build_seconds = seconds

    def load(self):
        self.lib = ctypes.CDLL(str(self.so), mode=os.RTLD_NOW | os.RTLD_LOCAL)
        P = self.prefix
        self.create = getattr(self.lib, P + "_create")
        self.create.restype = ctypes.c_void_p
        self.create.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        self.run = getattr(self.lib, P + "_run")
        self.run.restype = ctypes.c_int
        self.run.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        self.error = getattr(self.lib, P + "_error")
        self.error.restype = ctypes.c_char_p
        self.error.argtypes = [ctypes.c_void_p]
        self.destroy = getattr(self.lib, P + "_destroy")
        self.destroy.restype = None
        self.destroy.argtypes = [ctypes.c_void_p]
        nbytes = getattr(self.lib, P + "_weights_bytes")
        nbytes.restype = ctypes.c_size_t
        n = nbytes()
        blob = (self.dir / f"{P}.weights").read_bytes()
        if len(blob) != n:
            raise BenchError(f"{P}.weights holds {len(blob)} bytes, the model expects {n}")
        # 64-byte aligned copy that outlives every model state made from it.
        raw = np.empty(n + 128, dtype=np.uint8)
        off = (-raw.ctypes.data) % 64
        self.weights = raw[off:off + n]
        self.weights[:] = np.frombuffer(blob, dtype=np.uint8)
        self._raw = raw


class TriadModel:
    """One P_create'd state with N threads, its inputs and preallocated outputs."""

    def __init__(self, lib, threads, inputs, outputs):
        self.lib = lib
        self.state = lib.create(self.lib.weights.ctypes.data, threads, None, None)
        if not self.state:
            raise BenchError(f"{lib.prefix}_create returned NULL")
        self.inputs = [np.ascontiguousarray(a) for a in inputs]
        self.outputs = [np.empty_like(o) for o in outputs]
        self.in_ptrs = (ctypes.c_void_p * len(self.inputs))(*[a.ctypes.data for a in self.inputs])
        self.out_ptrs = (ctypes.c_void_p * len(self.outputs))(
            *[a.ctypes.data for a in self.outputs])
        self._run, self._state = lib.run, self.state
        self._ip, self._op = ctypes.cast(self.in_ptrs, ctypes.c_void_p), ctypes.cast(
            self.out_ptrs, ctypes.c_void_p)

    def __call__(self):
        if self._run(self._state, self._ip, self._op) != 0:
            raise BenchError(f"{self.lib.prefix}_run failed: {self.lib.error(self._state)}")

    def close(self):
        if self.state:
            self.lib.destroy(self.state)
            self.state = None


# ------------------------------------------------------------------------------------------------
# ONNX Runtime

NP_OF_ORT = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32,
             "tensor(double)": np.float64, "tensor(bool)": np.bool_}


SPIN = True  # --no-spin clears it


def ort_session(path, threads):
    so = ort.SessionOptions()
    if not SPIN:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(str(path), sess_options=so, providers=["CPUExecutionProvider"])


class OrtModel:
    def __init__(self, sess, inputs, out_shapes):
        self.sess = sess
        self.inputs = [np.ascontiguousarray(a) for a in inputs]
        self.outputs = []
        b = sess.io_binding()
        for meta, a in zip(sess.get_inputs(), self.inputs):
            b.bind_input(meta.name, "cpu", 0, a.dtype, list(a.shape), a.ctypes.data)
        for meta, shape in zip(sess.get_outputs(), out_shapes):
            o = np.empty(shape, dtype=NP_OF_ORT[meta.type])
            self.outputs.append(o)
            b.bind_output(meta.name, "cpu", 0, o.dtype, list(o.shape), o.ctypes.data)
        self.binding = b
        self._run = sess.run_with_iobinding

    def __call__(self):
        self._run(self.binding)


class OrtPlainRun:
    """session.run(None, feeds): the everyday call, outputs allocated per call."""

    def __init__(self, sess, inputs):
        self.feeds = {m.name: a for m, a in zip(sess.get_inputs(), inputs)}
        self._run = sess.run

    def __call__(self):
        self._run(None, self.feeds)


def make_inputs(name, sess, batch, rng, zoo_dir):
    """Benchmark inputs: the zoo's reference inputs where they fit, else seeded random data."""
    arrays = []
    for i, meta in enumerate(sess.get_inputs()):
        shape = [batch if (j == 0 and not isinstance(d, int)) else d
                 for j, d in enumerate(meta.shape)]
        ref = Path(zoo_dir) / name / f"{name}_input{i}.npy"
        if ref.exists():
            a = np.load(ref)
            if list(a.shape) == shape:
                arrays.append(a.astype(NP_OF_ORT[meta.type]))
                continue
        if meta.type == "tensor(float)":
            arrays.append(rng.standard_normal(shape).astype(np.float32))
        elif "mask" in meta.name:
            arrays.append(np.ones(shape, dtype=NP_OF_ORT[meta.type]))
        else:
            arrays.append(rng.integers(0, 1000, size=shape).astype(NP_OF_ORT[meta.type]))
    return arrays


# ------------------------------------------------------------------------------------------------
# Profiling (--profile): where the time goes, per layer kind, on both sides

LAYER_DEF = re.compile(r"((?:^// \S+ \S+ -> .*\n)+)static int (layer_\w+)\(", re.M)


def layer_kinds(source):
    """layer function -> (kind, [node names]) from the generated source's comments."""
    kinds = {}
    for m in LAYER_DEF.finditer(source):
        ops = [line.split()[1:3] for line in m.group(1).strip().splitlines()]
        body = source[m.end():source.find("\n}\n", m.end())]
        kind = ops[0][0]
        if kind == "Conv":
            g = re.search(r"s\.C = (\d+);.*?s\.KH = (\d+); s\.KW = (\d+); s\.group = (\d+);",
                          body, re.S)
            if g:
                c, kh, kw, grp = map(int, g.groups())
                kind = ("Conv depthwise" if grp > 1 and grp == c else
                        "Conv 1x1" if kh == kw == 1 else f"Conv {kh}x{kw}")
        elif len(ops) > 1 and kind not in ("MatMul", "Gemm"):
            kind = "+".join(dict.fromkeys(o[0] for o in ops))
        kinds[m.group(2)] = (kind, [o[1] for o in ops])
    return kinds


def profile_case(case, threads, inputs, ref, calls, work, zoo_macs):
    """Per-layer-kind time of Triad (the generated P_set_profiling / P_profile timers) and of
    ONNX Runtime (its profiler), over `calls` calls after two warm-up calls."""
    lib = case["lib"]
    P = lib.prefix
    try:
        set_prof = getattr(lib.lib, P + "_set_profiling")
        get_prof = getattr(lib.lib, P + "_profile")
    except AttributeError:
        raise BenchError(f"{lib.so} has no {P}_set_profiling/{P}_profile: regenerate it with a "
                         "newer triad") from None
    set_prof.restype, set_prof.argtypes = None, [ctypes.c_void_p, ctypes.c_int]
    get_prof.restype = ctypes.c_int
    get_prof.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)),
                         ctypes.POINTER(ctypes.POINTER(ctypes.c_double))]
    kinds = layer_kinds((lib.dir / f"{P}.cpp").read_text())
    tri = TriadModel(lib, threads, inputs, ref)
    for _ in range(2):
        tri()
    set_prof(tri.state, 1)
    t0 = time.perf_counter()
    for _ in range(calls):
        tri()
    wall = (time.perf_counter() - t0) / calls
    names_p, ms_p = ctypes.POINTER(ctypes.c_char_p)(), ctypes.POINTER(ctypes.c_double)()
    n = get_prof(tri.state, ctypes.byref(names_p), ctypes.byref(ms_p))
    layers = [(names_p[i].decode(), ms_p[i] * 1e-3 / calls) for i in range(n)]
    tri.close()
    triad = {}
    for name, sec in layers:
        kind, nodes = kinds.get("layer_" + name, ("?", []))
        e = triad.setdefault(kind, {"seconds": 0.0, "layers": 0, "macs": 0})
        e["seconds"] += sec
        e["layers"] += 1
        e["macs"] += sum(zoo_macs.get(x, 0) for x in nodes)

    pdir = work / "ort_profiles"
    pdir.mkdir(parents=True, exist_ok=True)
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if not SPIN:
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.enable_profiling = True
    so.profile_file_prefix = str(pdir / case["model"])
    so.log_severity_level = 3
    sess = ort.InferenceSession(str(case["path"]), sess_options=so,
                                providers=["CPUExecutionProvider"])
    feeds = {m.name: a for m, a in zip(sess.get_inputs(), inputs)}
    for _ in range(2):
        sess.run(None, feeds)
    t0 = time.perf_counter()
    for _ in range(calls):
        sess.run(None, feeds)
    ort_wall = (time.perf_counter() - t0) / calls
    prof_file = sess.end_profiling()
    events = json.loads(Path(prof_file).read_text())
    Path(prof_file).unlink()
    ortk = {}
    ortl = {}  # per node (ORT's fused node names), seconds per call
    # A run's node events come before its model_run event; the warm-up runs come first.
    skip = sum(1 for e in events if e.get("name") == "model_run") - calls
    runs_done = 0
    for e in events:
        if e.get("name") == "model_run":
            runs_done += 1
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        if runs_done < skip:
            continue
        d = ortk.setdefault(e.get("args", {}).get("op_name", "?"), {"seconds": 0.0, "layers": 0})
        d["seconds"] += e["dur"] * 1e-6 / calls
        d["layers"] += 1
        node = e["name"][: -len("_kernel_time")]
        ortl[node] = ortl.get(node, 0.0) + e["dur"] * 1e-6 / calls
    for d in ortk.values():
        d["layers"] //= calls
    return {"triad": triad, "triad_layers": layers, "triad_wall": wall, "ort": ortk,
            "ort_layers": sorted(ortl.items(), key=lambda kv: -kv[1]), "ort_wall": ort_wall,
            "calls": calls}


def print_profile(tag, p):
    print(f"\nProfile {tag} ({p['calls']} calls; Triad {fmt_time(p['triad_wall'])} per call, ORT "
          f"{fmt_time(p['ort_wall'])} per call with its profiler on):")
    tt = sum(e["seconds"] for e in p["triad"].values()) or 1.0
    print("  Triad layer kind              layers      time   share  GFLOP/s")
    for k, e in sorted(p["triad"].items(), key=lambda kv: -kv[1]["seconds"]):
        gf = 2 * e["macs"] / e["seconds"] / 1e9 if e["seconds"] > 0 and e["macs"] else 0.0
        print(f"  {k[:28]:<28} {e['layers']:>7} {fmt_time(e['seconds']):>9} "
              f"{100 * e['seconds'] / tt:>6.1f}% {gf:>8.1f}")
    to = sum(e["seconds"] for e in p["ort"].values()) or 1.0
    print("  ORT kernel (op_name)          nodes      time   share")
    for k, e in sorted(p["ort"].items(), key=lambda kv: -kv[1]["seconds"]):
        print(f"  {k[:28]:<28} {e['layers']:>7} {fmt_time(e['seconds']):>9} "
              f"{100 * e['seconds'] / to:>6.1f}%")


# ------------------------------------------------------------------------------------------------
# Timing


def percentiles(ts):
    a = np.sort(np.asarray(ts, dtype=np.float64))
    return {"n": int(a.size), "p50": float(np.percentile(a, 50)),
            "p90": float(np.percentile(a, 90)),
            "p99": float(np.percentile(a, 99)), "min": float(a[0]), "mean": float(a.mean())}


def measure_pair(fns, budget_s, max_runs, min_runs, block_s, settle_s, warm_s):
    """Times the callables in fns (dict name -> fn) in alternating blocks; returns name -> stats."""
    names = list(fns)
    clock = time.perf_counter_ns
    est = {}
    for n in names:  # warm-up: at least 2 calls and about warm_s seconds
        t_end, calls, t_min = time.perf_counter() + warm_s, 0, float("inf")
        while calls < 2 or (time.perf_counter() < t_end and calls < max_runs):
            t0 = clock()
            fns[n]()
            t_min = min(t_min, (clock() - t0) * 1e-9)
            calls += 1
        est[n] = t_min
        time.sleep(settle_s)
    per_call = max(est.values())
    runs = int(min(max_runs, max(min_runs, budget_s / max(sum(est.values()), 1e-9))))
    block = max(1, min(runs, int(block_s / per_call)))
    lead_in = per_call < 0.02  # an untimed call at a block's start wakes the worker threads
    times = {n: [] for n in names}
    k = 0
    while min(len(v) for v in times.values()) < runs:
        order = names if k % 2 == 0 else names[::-1]
        for n in order:
            fn, ts = fns[n], times[n]
            if lead_in:
                fn()
            for _ in range(min(block, runs - len(ts))):
                t0 = clock()
                fn()
                ts.append((clock() - t0) * 1e-9)
            time.sleep(settle_s)
        k += 1
    return {n: percentiles(times[n]) for n in names}, block


# ------------------------------------------------------------------------------------------------


def wait_for_load(limit, max_wait):
    if limit <= 0:
        return os.getloadavg()[0]
    t_end = time.time() + max_wait
    while os.getloadavg()[0] > limit and time.time() < t_end:
        time.sleep(5)
    return os.getloadavg()[0]


def check_outputs(case, triad_outs, ort_outs, out_names):
    for name, t, o in zip(out_names, triad_outs, ort_outs):
        if t.shape != o.shape:
            raise BenchError(f"{case}: output '{name}' has shape {t.shape} in Triad, "
                             f"{o.shape} in ONNX Runtime")
        if not np.allclose(t, o, rtol=RTOL, atol=ATOL):
            err = np.abs(t.astype(np.float64) - o)
            i = np.unravel_index(np.argmax(err - RTOL * np.abs(o)), err.shape)
            raise BenchError(f"{case}: output '{name}' differs from ONNX Runtime beyond rtol "
                             f"{RTOL}, atol {ATOL}: max abs err {err.max():.3g}; at {tuple(i)} "
                             f"Triad {t[i]!r}, ORT {o[i]!r}")
    return max(float(np.max(np.abs(t.astype(np.float64) - o))) if t.size else 0.0
               for t, o in zip(triad_outs, ort_outs))


def build_all(libs, jobs):
    """Compiles the shared objects that are out of date, `jobs` compilers at a time."""
    todo = [lib for lib in libs if lib.build_command()]
    running = []
    while todo or running:
        while todo and len(running) < jobs:
            lib = todo.pop(0)
            log(f"[c++] {' '.join(lib.build_command())}")
            running.append((lib, time.perf_counter(),
                            subprocess.Popen(lib.build_command(), stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, text=True)))
        lib, t0, p = running.pop(0)
        out, _ = p.communicate()
        if p.returncode != 0:
            for _, _, q in running:
                q.kill()
            raise BenchError(f"{' '.join(lib.cmd)} failed:\n{out[:4000]}")
        lib.built(time.perf_counter() - t0)
        log(f"[c++] {lib.so.name} built in {lib.build_seconds:.1f} s")


def inspect_macs(triad, path, batch, work):
    j = Path(work) / f"inspect_{Path(path).stem}_b{batch}.json"
    subprocess.run([str(triad), "inspect", str(path), "--batch", str(batch), "--json", str(j)],
                   check=True, capture_output=True)
    d = json.loads(j.read_text())
    return int(d["totals"]["macs"]), {x["name"]: int(x.get("macs", 0)) for x in d["layers"]}


def fma_peak(gemm_bench, threads):
    if not gemm_bench or not Path(gemm_bench).exists():
        log(f"[peak] {gemm_bench} not found: FMA peak not measured")
        return {}
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "peak.json"
        subprocess.run([str(gemm_bench), "--threads", *map(str, threads), "--sizes", "64",
                        "--samples", "1", "--json", str(out)], check=True, capture_output=True)
        j = json.loads(out.read_text())
    return {int(k): float(v) for k, v in j["fma_peak_gflops"].items()}


def machine_info():
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "onnxruntime": ort.__version__, "nproc": os.cpu_count()}
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in lscpu.splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("Model name", "CPU family", "Model", "Core(s) per socket",
                             "Thread(s) per core", "Hypervisor vendor", "L2 cache", "L3 cache"):
                info[k.strip()] = v.strip()
    except OSError:
        pass
    try:
        cxx = subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout
        info["cxx"] = cxx.splitlines()[0]
    except OSError:
        pass
    return info


def unit_of(seconds):
    return (1e6, "µs") if seconds < 1e-3 else (1e3, "ms") if seconds < 1 else (1.0, "s")


def fmt_num(v):
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def fmt_time(seconds):
    k, u = unit_of(seconds)
    return f"{fmt_num(seconds * k)} {u}"


def fmt_cell(st):
    """p50 (p90 / p99), all in the unit p50 reads best in."""
    k, u = unit_of(st["p50"])
    return f"{fmt_num(st['p50'] * k)} ({fmt_num(st['p90'] * k)} / {fmt_num(st['p99'] * k)}) {u}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("--models", nargs="+", default=None, metavar="NAME",
                    help=f"models (default: {' '.join(SHIPPED + LARGE)})")
    ap.add_argument("--quick", action="store_true",
                    help="shipped models only, short budgets (< 2 minutes once built)")
    ap.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--batches", nargs="+", type=int, default=[1, 32])
    ap.add_argument("--repeat", type=int, default=1,
                    help="measure every case this many times (the spread is reported)")
    ap.add_argument("--budget", type=float, default=None,
                    help="timed seconds per case and side (default 3, quick 0.6)")
    ap.add_argument("--max-runs", type=int, default=None, help="timed calls per side at most")
    ap.add_argument("--min-runs", type=int, default=None, help="timed calls per side at least")
    ap.add_argument("--wait-load", type=float, default=0.0, metavar="L",
                    help="before each case wait until the 1-minute load average is below L")
    ap.add_argument("--wait-max", type=float, default=180.0,
                    help="longest wait for --wait-load, seconds")
    ap.add_argument("--triad", default=os.environ.get("TRIAD", str(ROOT / "build/cli/triad")))
    ap.add_argument("--gemm-bench", default=str(ROOT / "build/bench/triad-gemm-bench"))
    ap.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="compilers run at once while building the models")
    ap.add_argument("--work", default=str(Path.home() / ".cache/triad/bench"),
                    help="generated sources and shared objects (reused when unchanged)")
    ap.add_argument("--zoo", default=str(Path.home() / ".cache/triad/zoo"))
    ap.add_argument("--no-build-missing", action="store_true",
                    help="fail instead of building a missing large model")
    ap.add_argument("--json", default=None, help="write all results to this file (atomically)")
    ap.add_argument("--no-spin", action="store_true",
                    help="idle worker threads sleep instead of spinning: OMP_WAIT_POLICY=passive "
                    "for Triad (libgomp), session.intra_op.allow_spinning=0 for ONNX Runtime")
    ap.add_argument("--profile", action="store_true",
                    help="instead of timing: per-layer-kind time of Triad (a copy of the sources "
                    "with a timer around each layer) and of ONNX Runtime (its profiler)")
    ap.add_argument("--markdown", default=None, help="write the tables as Markdown to this file")
    args = ap.parse_args()

    global SPIN
    if args.no_spin:
        SPIN = False
        os.environ["OMP_WAIT_POLICY"] = "passive"  # read by libgomp when the first model loads
    elif os.environ.get("OMP_WAIT_POLICY"):
        log(f"note: OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']} is set for Triad's threads")
    models = args.models or (SHIPPED if args.quick else SHIPPED + LARGE)
    budget = args.budget if args.budget is not None else (0.6 if args.quick else 3.0)
    max_runs = args.max_runs or (1000 if args.quick else 5000)
    min_runs = args.min_runs or (5 if args.quick else 10)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if not Path(args.triad).exists():
        raise BenchError(f"{args.triad} not found: build Triad first (scripts/build.sh) or pass "
                         "--triad")
    rng = np.random.default_rng(5)
    t_start = time.time()
    log(f"load average at start: {os.getloadavg()}")

    # Build (or reuse) every shared object before timing anything.
    cases = []  # (name, batch, onnx path for Triad & ORT, macs)
    for name in ([] if args.profile else [IDENTITY]) + models:
        if name == IDENTITY:
            src = work / IDENTITY / f"{IDENTITY}.onnx"
            identity_model(src)
        else:
            src = model_path(name, args.zoo, not args.no_build_missing)
        fixed = None
        try:
            m = onnx.load(str(src), load_external_data=False)
            d0 = m.graph.input[0].type.tensor_type.shape.dim[0]
            fixed = d0.dim_value if d0.HasField("dim_value") else None
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            log(f"[{name}] cannot read the input shape: {e}")
        for batch in ([1] if name == IDENTITY else args.batches):
            path = src
            if fixed is not None and batch != fixed:
                if name in BATCH_FIXED:
                    log(f"[{name}] batch {batch} skipped: the export fixes batch {fixed}")
                    continue
                path = work / f"{name}_symbolic" / f"{name}.onnx"
                if not path.exists() or path.stat().st_mtime < src.stat().st_mtime:
                    with_symbolic_batch(src, path)
            t0 = time.perf_counter()
            lib = TriadLib(args.triad, path, batch, work / f"{name}_b{batch}", args.cxx)
            lib.generate()
            macs, layer_macs = inspect_macs(args.triad, path, batch, work)
            log(f"[{name} b{batch}] sources generated in {time.perf_counter() - t0:.1f} s; "
                f"{macs:,} MACs")
            cases.append({"model": name, "batch": batch, "path": path, "lib": lib, "macs": macs,
                          "layer_macs": layer_macs})
    build_all([c["lib"] for c in cases], args.jobs)
    for c in cases:
        c["lib"].load()

    peak = fma_peak(args.gemm_bench, args.threads)
    log(f"FMA peak GFLOP/s by threads: {peak}")

    results, profiles = [], []
    overhead = {}
    for rep in range(args.repeat):
        for threads in args.threads:
            # The kernels' thread count is set per process by P_create (the last call wins), so
            # each Triad state is created right before its case is timed and destroyed after.
            for case in cases:
                name, batch, lib = case["model"], case["batch"], case["lib"]
                tag = f"{name} b{batch} t{threads}" + (f" r{rep}" if args.repeat > 1 else "")
                load0 = wait_for_load(args.wait_load, args.wait_max)
                sess = ort_session(case["path"], threads)
                inputs = make_inputs(name, sess, batch, rng, args.zoo)
                ref = sess.run(None, {m.name: a for m, a in zip(sess.get_inputs(), inputs)})
                tri = TriadModel(lib, threads, inputs, ref)
                orm = OrtModel(sess, inputs, [r.shape for r in ref])
                tri()
                orm()
                out_names = [o.name for o in sess.get_outputs()]
                err = check_outputs(tag, tri.outputs, ref, out_names)
                check_outputs(tag + " (ORT IOBinding)", orm.outputs, ref, out_names)
                if args.profile:
                    tri.close()
                    del orm
                    t0 = time.perf_counter()
                    tri = TriadModel(lib, threads, inputs, ref)
                    tri()
                    per_call = time.perf_counter() - t0
                    tri.close()
                    calls = int(min(max_runs, max(3, budget / max(per_call, 1e-7))))
                    p = profile_case(case, threads, inputs, ref, calls, work, case["layer_macs"])
                    p.update({"model": name, "batch": batch, "threads": threads})
                    profiles.append(p)
                    print_profile(tag, p)
                    continue
                fns = {"triad": tri, "ort": orm}
                if name == IDENTITY:
                    fns["ort_run"] = OrtPlainRun(sess, inputs)
                stats, block = measure_pair(fns, budget, max_runs, min_runs,
                                            block_s=0.05 if args.quick else 0.1, settle_s=0.02,
                                            warm_s=0.2 if args.quick else 0.5)
                tri.close()
                del orm, sess
                load1 = os.getloadavg()[0]
                r = {"model": name, "batch": batch, "threads": threads, "repeat": rep,
                     "macs": case["macs"], "block": block, "max_abs_err": err,
                     "load_before": load0, "load_after": load1}
                for side, s in stats.items():
                    r[side] = s
                    s["gflops_p50"] = 2.0 * case["macs"] / s["p50"] / 1e9
                    s["per_s_p50"] = batch / s["p50"]
                r["speedup_p50"] = stats["ort"]["p50"] / stats["triad"]["p50"]
                if peak.get(threads):
                    r["triad"]["pct_peak"] = 100 * r["triad"]["gflops_p50"] / peak[threads]
                    r["ort"]["pct_peak"] = 100 * r["ort"]["gflops_p50"] / peak[threads]
                results.append(r)
                if name == IDENTITY:
                    overhead.setdefault(threads, []).append(stats)
                log(f"[{tag}] Triad p50 {fmt_time(stats['triad']['p50'])}, ORT p50 "
                    f"{fmt_time(stats['ort']['p50'])}, ORT/Triad {r['speedup_p50']:.2f}x "
                    f"(n={stats['triad']['n']}, load {load0:.1f}->{load1:.1f})")

    if args.profile:
        if args.json:
            write_atomic(args.json, json.dumps({"machine": machine_info(), "profiles": profiles},
                                               indent=1) + "\n")
        return
    summary = summarize(results, args.repeat)
    print_table(summary, peak)
    if args.json:
        doc = {"machine": machine_info(), "spin": SPIN,
               "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
               "fma_peak_gflops": {str(k): v for k, v in peak.items()},
               "command": " ".join([Path(sys.executable).name] + sys.argv),
               "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "seconds": time.time() - t_start, "rtol": RTOL, "atol": ATOL,
               "triad_cxx_flags": " ".join(CXX_FLAGS), "summary": summary, "runs": results}
        write_atomic(args.json, json.dumps(doc, indent=1) + "\n")
        log(f"wrote {args.json}")
    if args.markdown:
        write_atomic(args.markdown, markdown(summary, peak))
        log(f"wrote {args.markdown}")


def summarize(results, repeats):
    """Per (model, batch, threads): median over repeats of each p50, with the range."""
    keyed = {}
    for r in results:
        keyed.setdefault((r["model"], r["batch"], r["threads"]), []).append(r)
    out = []
    for (model, batch, threads), rs in keyed.items():
        row = {"model": model, "batch": batch, "threads": threads, "repeats": len(rs),
               "macs": rs[0]["macs"], "load": [min(r["load_before"] for r in rs),
                                               max(r["load_after"] for r in rs)]}
        for side in ("triad", "ort", "ort_run"):
            if side not in rs[0]:
                continue
            p50s = sorted(r[side]["p50"] for r in rs)
            row[side] = {"p50": float(np.median(p50s)), "p50_range": [p50s[0], p50s[-1]],
                         "p90": float(np.median([r[side]["p90"] for r in rs])),
                         "p99": float(np.median([r[side]["p99"] for r in rs])),
                         "n": sum(r[side]["n"] for r in rs)}
            row[side]["gflops"] = 2.0 * row["macs"] / row[side]["p50"] / 1e9
            row[side]["per_s"] = batch / row[side]["p50"]
        sp = sorted(r["speedup_p50"] for r in rs)
        row["speedup"] = float(np.median(sp))
        row["speedup_range"] = [sp[0], sp[-1]]
        out.append(row)
    return out


def table_rows(summary):
    """The result table as rows of strings (stdout and the Markdown file share it)."""
    head = ["model", "batch", "threads", "Triad p50 (p90 / p99)", "ORT p50 (p90 / p99)",
            "ORT/Triad", "Triad GFLOP/s", "ORT GFLOP/s", "Triad inf/s", "ORT inf/s", "load"]
    rows = []
    for row in summary:
        if row["model"] == IDENTITY:
            continue
        t, o = row["triad"], row["ort"]
        sp = f"{row['speedup']:.2f}"
        if row["repeats"] > 1:
            sp += f" ({row['speedup_range'][0]:.2f}-{row['speedup_range'][1]:.2f})"
        rows.append([row["model"], str(row["batch"]), str(row["threads"]), fmt_cell(t),
                     fmt_cell(o), sp, f"{t['gflops']:.1f}", f"{o['gflops']:.1f}",
                     fmt_num(t["per_s"]), fmt_num(o["per_s"]),
                     f"{row['load'][0]:.1f}-{row['load'][1]:.1f}"])
    return head, rows


def overhead_lines(summary):
    lines = []
    for row in summary:
        if row["model"] != IDENTITY:
            continue
        t, o, r = row["triad"], row["ort"], row.get("ort_run")
        line = (f"threads {row['threads']}: Triad {fmt_cell(t)}, ORT IOBinding {fmt_cell(o)}")
        if r:
            line += f", ORT session.run {fmt_cell(r)}"
        lines.append(line)
    return lines


def print_table(summary, peak):
    print()
    print("Per-call fixed overhead (identity-sized model: Relu on [1,1]), p50 (p90 / p99):")
    for line in overhead_lines(summary):
        print("  " + line)
    print()
    print("ORT/Triad = ORT p50 / Triad p50 (> 1: Triad faster); GFLOP/s = 2 x MACs / p50; FMA "
          f"peak {', '.join(f'{v:.0f} GFLOP/s at {k} thread(s)' for k, v in sorted(peak.items()))}")
    head, rows = table_rows(summary)
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    print("  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(head, widths))))
    for r in rows:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))


def markdown(summary, peak):
    head, rows = table_rows(summary)
    out = ["Per-call fixed overhead (identity-sized model), p50 (p90 / p99):", ""]
    out += ["- " + line for line in overhead_lines(summary)]
    out += ["", "FMA peak: " + ", ".join(f"{v:.0f} GFLOP/s ({k} thread{'s' if k > 1 else ''})"
                                           for k, v in sorted(peak.items())), ""]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        log(f"error: {e}")
        sys.exit(1)
