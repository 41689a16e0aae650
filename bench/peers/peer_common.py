"""What the peer harnesses share: arguments, the model's input shapes, input data, the JSON-lines
protocol loop, the standalone report and a checker for `triad-bench/1` result entries.

A harness (onnxruntime_peer.py, openvino_peer.py, tvm_peer.py) defines a `Peer` subclass and
calls `main(ThatPeer)`. The protocol is described in bench/peers/README.md.

Only the standard library and numpy are imported at module level: a peer whose runtime package
is missing still starts and answers {"ready": false, ...}. The `onnx` package reads the model's
input shapes (the `--dim`/batch overrides need the symbolic dimensions' names).
"""

import argparse
import json
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SCHEMA = "triad-bench/1"

# The protocol stream: fd 1 as it was when the harness started. protect_stdout() moves it to a
# private descriptor and points fd 1 (and sys.stdout) at stderr, so that whatever a runtime
# library prints on stdout (C or Python) cannot corrupt the JSON lines.
_proto = None


class PeerError(Exception):
    """A failure with a message meant for the caller (the `why` or `error` it answers)."""


class NotAModel(Exception):
    """The file parses as protobuf but holds no model."""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def protect_stdout():
    global _proto
    if _proto is not None:
        return
    sys.stdout.flush()
    _proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr


def send(obj):
    """One JSON line on the protocol stream (NaN and infinities become null)."""
    line = json.dumps(_finite(obj), separators=(", ", ": "))
    out = _proto if _proto is not None else sys.stdout
    out.write(line + "\n")
    out.flush()


def _finite(v):
    if isinstance(v, float) and not np.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_finite(x) for x in v]
    if isinstance(v, np.generic):
        return _finite(v.item())
    return v


def error_text(e):
    """An exception as one readable line or paragraph (no traceback)."""
    msg = str(e).strip() or type(e).__name__
    return msg if isinstance(e, PeerError) else f"{type(e).__name__}: {msg}"


def write_atomic(path, data):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".tmp.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data if isinstance(data, bytes) else data.encode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_npy_atomic(path, array):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".tmp.", suffix=".npy")
    try:
        with os.fdopen(fd, "wb") as f:
            np.save(f, array)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# ------------------------------------------------------------------------------------------------
# The machine


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def peak_rss_mib():
    """Peak resident set of this process (Linux ru_maxrss is in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def rss_mib():
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


# ------------------------------------------------------------------------------------------------
# The model's inputs


class InputSpec:
    def __init__(self, name, dtype, shape):
        self.name, self.dtype, self.shape = name, np.dtype(dtype), list(shape)

    def describe(self):
        return {"name": self.name, "dtype": self.dtype.name, "shape": self.shape}


class ModelSpec:
    """The model's graph inputs at concrete shapes (batch and --dim applied) and the values given
    to its symbolic dimensions (`dims`: name -> value, for runtimes that override by name)."""

    def __init__(self, inputs, dims, outputs):
        self.inputs, self.dims, self.outputs = inputs, dims, outputs


def _np_dtype(elem_type):
    from onnx import helper
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except Exception:  # noqa: BLE001 - older onnx
        from onnx import mapping
        return np.dtype(mapping.TENSOR_TYPE_TO_NP_TYPE[elem_type])


def model_spec(path, batch, dims):
    """Reads the graph inputs with the `onnx` package and fixes their shapes: the first dimension,
    when symbolic, is `batch`; a symbolic dimension named in `dims` takes its value; any other
    symbolic dimension is an error. A fixed first dimension other than `batch` is an error too
    (the export fixes the batch)."""
    try:
        import onnx
    except ImportError as e:
        raise PeerError(f"the onnx package is not installed (needed to read the input shapes): "
                        f"{e}") from None
    m = onnx.load(str(path), load_external_data=False)
    if not m.graph.output:
        # Protobuf reads many non-model files as an empty ModelProto.
        raise NotAModel("the model has no graph outputs (not an ONNX model?)")
    inits = {t.name for t in m.graph.initializer}
    values = dict(dims)
    inputs = []
    for v in m.graph.input:
        if v.name in inits:
            continue
        tt = v.type.tensor_type
        shape = []
        for axis, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value") and d.dim_value > 0:
                if axis == 0 and d.dim_value != batch:
                    raise PeerError(f"input '{v.name}' has a fixed batch (first) dimension of "
                                    f"{d.dim_value}; --batch {batch} cannot apply (export the "
                                    "model with a symbolic batch)")
                shape.append(int(d.dim_value))
            elif d.dim_param and d.dim_param in dims:
                shape.append(int(dims[d.dim_param]))
            elif axis == 0:
                shape.append(batch)
                if d.dim_param:
                    values.setdefault(d.dim_param, batch)
            else:
                raise PeerError(f"input '{v.name}' has a symbolic dimension "
                                f"'{d.dim_param or '?'}' at axis {axis}: pass --dim "
                                f"{d.dim_param or 'NAME'}=VALUE")
        inputs.append(InputSpec(v.name, _np_dtype(tt.elem_type), shape))
    outputs = [o.name for o in m.graph.output]
    return ModelSpec(inputs, values, outputs)


def random_input(spec, rng):
    """Seeded data: normal floats; ones for an integer input named like a mask; else integers in
    [0, 1000) (token ids)."""
    if spec.dtype.kind == "f":
        return rng.standard_normal(spec.shape).astype(spec.dtype)
    if spec.dtype.kind == "b":
        return np.ones(spec.shape, dtype=spec.dtype)
    if "mask" in spec.name.lower():
        return np.ones(spec.shape, dtype=spec.dtype)
    return rng.integers(0, 1000, size=spec.shape).astype(spec.dtype)


def fit_rows(array, spec, rows, what):
    """`array` as `rows` rows of the input's per-row shape: the first rows, tiled if fewer; cast to
    the input's dtype; reshaped when the per-row element count matches (e.g. images [N,1,8,8] for
    a model that takes [N,64])."""
    a = np.asarray(array)
    if a.ndim == 0 or a.shape[0] == 0:
        raise PeerError(f"{what}: no rows (shape {list(a.shape)})")
    row_shape = spec.shape[1:]
    if list(a.shape[1:]) != row_shape:
        if int(np.prod(a.shape[1:])) != int(np.prod(row_shape)):
            raise PeerError(f"{what}: rows of shape {list(a.shape[1:])} do not fit input "
                            f"'{spec.name}' (rows of {row_shape})")
        a = a.reshape([a.shape[0]] + row_shape)
    if a.shape[0] != rows:
        a = np.take(a, np.arange(rows) % a.shape[0], axis=0)
    return np.ascontiguousarray(a.astype(spec.dtype, copy=False))


def parse_input_files(items, specs):
    """--input values (FILE in input order, or NAME=FILE) -> {input name: path}."""
    names = [s.name for s in specs]
    out, pos = {}, 0
    for item in items or []:
        name, sep, path = item.partition("=")
        if sep and name in names:
            out[name] = path
            continue
        if pos >= len(names):
            raise PeerError(f"more --input files than model inputs ({', '.join(names)})")
        out[names[pos]] = item
        pos += 1
    return out


def load_npy(path, what):
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise PeerError(f"{what}: cannot read {path}: {e}") from None


def fixed_batch(specs, files, batch, seed):
    """The timed batch: the first `batch` rows of each given file (tiled if fewer), seeded random
    data for the inputs without one."""
    rng = np.random.default_rng(seed)
    arrays = []
    for s in specs:
        if s.name in files:
            arrays.append(fit_rows(load_npy(files[s.name], f"input '{s.name}'"), s, batch,
                                   f"input '{s.name}' ({files[s.name]})"))
        else:
            arrays.append(random_input(s, rng))
    return arrays


# ------------------------------------------------------------------------------------------------
# The peer interface


class Peer:
    """One runtime. Subclasses set `name` and `package`, and implement import_runtime(), load(),
    infer() and (for a lower-overhead timed path) timed_runner()."""

    name = "?"
    package = "?"

    def __init__(self, args):
        self.args = args
        self.threads = args.threads
        self.version = None
        self.device = f"{cpu_model()}, {args.threads} thread{'s' if args.threads != 1 else ''}"

    def import_runtime(self):
        """Imports the runtime; raises ImportError when its package is missing."""
        raise NotImplementedError

    def load(self, path, spec):
        """Compiles (or opens) the model at the concrete shapes of `spec`."""
        raise NotImplementedError

    def infer(self, arrays):
        """Runs one batch; returns the outputs as numpy arrays, in the model's output order."""
        raise NotImplementedError

    def timed_runner(self, arrays):
        """A callable that runs the batch once, as cheaply as the runtime allows from Python
        (bound buffers where it has them). Default: infer()."""
        return lambda: self.infer(arrays)

    def profile(self, arrays, n):
        """Per-node times over n runs: [{"layer", "kind", "op", "ms"}] (ms per run)."""
        raise PeerError(f"the {self.name} peer does not profile")


# ------------------------------------------------------------------------------------------------
# Arguments


class _Parser(argparse.ArgumentParser):
    """Usage errors are answered on the protocol stream too, then exit 2."""

    peer_name = "?"

    def error(self, message):
        self.print_usage(sys.stderr)
        log(f"{self.prog}: error: {message}")
        send({"ready": False, "peer": self.peer_name, "why": f"usage: {message}"})
        sys.exit(2)


def parse_args(peer_cls, argv=None):
    ap = _Parser(prog=f"{peer_cls.name}_peer.py",
                 description=f"The {peer_cls.name} peer of `triad bench` (protocol: "
                 "bench/peers/README.md), or with --report a standalone benchmark.")
    ap.peer_name = peer_cls.name
    ap.add_argument("--model", required=True, help="ONNX model file")
    ap.add_argument("--batch", required=True,
                    help="batch size (the model's symbolic first dimension); standalone mode "
                    "takes a comma list, e.g. 1,8")
    ap.add_argument("--threads", type=int, required=True, help="intra-op threads")
    ap.add_argument("--input", action="append", default=[], metavar="X.npy",
                    help="input data, in input order or as NAME=X.npy (repeatable); without "
                    "it seeded random data")
    ap.add_argument("--dim", action="append", default=[], metavar="NAME=V",
                    help="value of another symbolic dimension (repeatable)")
    ap.add_argument("--seed", type=int, default=5, help="seed of the random inputs")
    ap.add_argument("--no-spin", action="store_true",
                    help="idle worker threads sleep instead of spinning (where the runtime has "
                    "the setting)")
    ap.add_argument("--labels", help="standalone: labels .npy for top-1 accuracy")
    ap.add_argument("--report", help="standalone: write a list of triad-bench/1 results here")
    ap.add_argument("--repeat", type=int, default=50, help="standalone: timed runs")
    ap.add_argument("--warmup", type=int, default=3, help="standalone: untimed runs first")
    ap.add_argument("--profile", action="store_true",
                    help="standalone: also record per-node times (`layers`) where the peer can")
    args = ap.parse_args(argv)
    try:
        args.batches = [int(b) for b in str(args.batch).split(",") if b.strip()]
        if not args.batches or min(args.batches) < 1:
            raise ValueError
    except ValueError:
        ap.error(f"--batch {args.batch!r}: expected a positive integer (or a comma list)")
    if len(args.batches) > 1 and not args.report:
        ap.error("a list of batches needs --report (the protocol runs one batch)")
    if args.threads < 1:
        ap.error("--threads must be at least 1")
    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be at least 1, --warmup at least 0")
    args.dims = {}
    for d in args.dim:
        k, sep, v = d.partition("=")
        try:
            if not sep or not k:
                raise ValueError
            args.dims[k] = int(v)
        except ValueError:
            ap.error(f"--dim {d!r}: expected NAME=INTEGER")
    return args


# ------------------------------------------------------------------------------------------------
# Loading


class Loaded:
    """A peer with its model compiled at one batch and its fixed (timed) batch of inputs."""

    def __init__(self, peer, spec, batch, arrays, compile_s):
        self.peer, self.spec, self.batch, self.arrays = peer, spec, batch, arrays
        self.compile_s = compile_s
        self.first_run_ms = None
        self.runner = None


def open_peer(peer_cls, args, batch):
    """Imports the runtime and compiles the model. Returns (peer, Loaded) or raises PeerError with
    the reason; `missing` is set on the error when the runtime package is not installed."""
    peer = peer_cls(args)
    try:
        peer.import_runtime()
    except ImportError as e:
        err = PeerError(f"the {peer.package} package is not installed ({e})")
        err.missing = True
        raise err from None
    except Exception as e:  # noqa: BLE001 - a broken install is reported, not raised
        err = PeerError(f"the {peer.package} package does not import: {error_text(e)}")
        err.missing = True
        raise err from None
    path = Path(args.model)
    if not path.exists():
        raise PeerError(f"{args.model}: no such file")
    try:
        spec = model_spec(path, batch, args.dims)
    except PeerError:
        raise
    except Exception as e:  # noqa: BLE001 - the runtime's own message is the better one
        # The onnx package cannot read it: let the runtime say why in its own words.
        try:
            peer.load(str(path), None)
        except Exception as e2:  # noqa: BLE001
            raise PeerError(error_text(e2)) from None
        why = str(e) if isinstance(e, NotAModel) else \
            f"the onnx package cannot read it: {error_text(e)}"
        raise PeerError(f"{args.model}: {why}") from None
    files = parse_input_files(args.input, spec.inputs)
    arrays = fixed_batch(spec.inputs, files, batch, args.seed)
    t0 = time.perf_counter()
    try:
        peer.load(str(path), spec)
    except PeerError:
        raise
    except Exception as e:  # noqa: BLE001
        raise PeerError(error_text(e)) from None
    loaded = Loaded(peer, spec, batch, arrays, time.perf_counter() - t0)
    try:
        t0 = time.perf_counter()
        peer.infer(arrays)
        loaded.first_run_ms = (time.perf_counter() - t0) * 1e3
        loaded.runner = peer.timed_runner(arrays)
    except PeerError:
        raise
    except Exception as e:  # noqa: BLE001
        raise PeerError(f"the first run failed: {error_text(e)}") from None
    return peer, loaded


# ------------------------------------------------------------------------------------------------
# Commands


def time_runs(loaded, n, warmup=0):
    fn = loaded.runner
    clock = time.perf_counter_ns
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t0 = clock()
        fn()
        out.append(round((clock() - t0) * 1e-6, 6))
    return out


def infer_file(loaded, inputs, output):
    """All rows of the input file(s) in batches of B (the last padded by repeating its last row,
    then trimmed); the first output's rows are written to `output` (a list: the first outputs,
    in order, one file each). Returns the row count."""
    specs = loaded.spec.inputs
    if isinstance(inputs, str):
        inputs = [inputs]
    if isinstance(inputs, dict):
        files = {k: v for k, v in inputs.items()}
        unknown = set(files) - {s.name for s in specs}
        if unknown:
            raise PeerError(f"no model input named {', '.join(sorted(unknown))}")
    elif isinstance(inputs, list) and all(isinstance(x, str) for x in inputs):
        if len(inputs) != len(specs):
            raise PeerError(f"'input' names {len(inputs)} file(s); the model has "
                            f"{len(specs)} input(s) ({', '.join(s.name for s in specs)})")
        files = {s.name: f for s, f in zip(specs, inputs)}
    else:
        raise PeerError("'input' must be a file name, a list of them (input order) or an object "
                        "{input name: file}")
    if isinstance(output, str) and output:
        output = [output]
    if not isinstance(output, list) or not output or \
            not all(isinstance(x, str) and x for x in output):
        raise PeerError("'output' must be a file name (the first output) or a list of them "
                        "(outputs in order)")
    missing = [s.name for s in specs if s.name not in files]
    if missing:
        raise PeerError(f"no file for input(s) {', '.join(missing)}")
    data = []
    for s in specs:
        a = load_npy(files[s.name], f"input '{s.name}'")
        data.append(a)
    rows = int(data[0].shape[0]) if data[0].ndim else 0
    if rows == 0:
        raise PeerError(f"{files[specs[0].name]}: no rows")
    for s, a in zip(specs, data):
        if a.ndim == 0 or a.shape[0] != rows:
            raise PeerError(f"input '{s.name}' has {a.shape[0] if a.ndim else 0} rows, "
                            f"input '{specs[0].name}' {rows}")
    outs = [[] for _ in output]
    b = loaded.batch
    for start in range(0, rows, b):
        take = min(b, rows - start)
        chunk = []
        for s, a in zip(specs, data):
            part = a[start:start + take]
            if take < b:
                part = np.concatenate([part, np.repeat(part[-1:], b - take, axis=0)])
            chunk.append(fit_rows(part, s, b, f"input '{s.name}'"))
        ys = loaded.peer.infer(chunk)
        if len(ys) < len(output):
            raise PeerError(f"{len(output)} output files for {len(ys)} model outputs")
        for acc, y in zip(outs, ys):
            acc.append(np.asarray(y)[:take])
    for f, acc in zip(output, outs):
        save_npy_atomic(f, np.concatenate(acc, axis=0))
    return rows


def handle(loaded, line):
    """One protocol command line -> (answer object, quit?)."""
    try:
        cmd = json.loads(line)
    except json.JSONDecodeError as e:
        return {"error": f"not JSON: {e}"}, False
    if not isinstance(cmd, dict) or not isinstance(cmd.get("cmd"), str):
        return {"error": "expected an object with a \"cmd\" string"}, False
    c = cmd["cmd"]
    try:
        if c == "run":
            n, warm = cmd.get("n"), cmd.get("warmup", 0)
            if not _is_int(n) or n < 1:
                raise PeerError("\"run\" needs \"n\", a positive integer")
            if not _is_int(warm) or warm < 0:
                raise PeerError("\"warmup\" must be a non-negative integer")
            return {"samples_ms": time_runs(loaded, n, warm)}, False
        if c == "infer":
            if "input" not in cmd or "output" not in cmd:
                raise PeerError("\"infer\" needs \"input\" and \"output\"")
            return {"ok": True, "rows": infer_file(loaded, cmd["input"], cmd["output"])}, False
        if c == "stats":
            return {"peak_rss_mib": round(peak_rss_mib(), 3), "rss_mib": _round(rss_mib(), 3)}, \
                False
        if c == "profile":
            n = cmd.get("n", 10)
            if not _is_int(n) or n < 1:
                raise PeerError("\"profile\" takes \"n\", a positive integer")
            return {"layers": loaded.peer.profile(loaded.arrays, n), "runs": n}, False
        if c == "quit":
            return {"ok": True}, True
        return {"error": f"unknown command {c!r} (run, infer, stats, profile, quit)"}, False
    except Exception as e:  # noqa: BLE001 - every failure is answered; the peer stays alive
        if not isinstance(e, PeerError):
            import traceback
            traceback.print_exc(file=sys.stderr)
        return {"error": error_text(e)}, False


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _round(v, nd):
    return None if v is None else round(v, nd)


def serve(loaded, stdin):
    for line in stdin:
        answer, done = handle(loaded, line.strip())
        send(answer)
        if done:
            return


# ------------------------------------------------------------------------------------------------
# Standalone mode: a list of triad-bench/1 results


def latency_stats(samples_ms):
    a = np.asarray(samples_ms, dtype=np.float64)
    return {"count": int(a.size), "mean": float(a.mean()), "p50": float(np.percentile(a, 50)),
            "p90": float(np.percentile(a, 90)), "p99": float(np.percentile(a, 99)),
            "min": float(a.min()), "max": float(a.max()), "samples": [float(x) for x in a]}


ENERGY_WHY = ("not measured by the peer harnesses (standalone mode); `triad bench` measures the "
              "CPU package's joules where RAPL counters exist")


def energy_why():
    if not Path("/sys/class/powercap").exists():
        return f"{ENERGY_WHY} (none here: /sys/class/powercap absent)"
    return ENERGY_WHY


def result_entry(peer_cls, args, batch):
    """One `results` entry: the peer at one batch, or why it did not run."""
    entry = {"target": peer_cls.name, "kind": "peer", "batch": batch, "status": "ok", "why": None,
             "device": None, "threads": args.threads, "compile_s": None, "warmup_runs": 0,
             "latency_ms": None, "throughput_per_s": None,
             "accuracy": {"max_abs_err": None, "max_rel_err": None, "top1": None,
                          "top1_reference": None, "samples": 0,
                          "why": "a peer is not compared with Triad's interpreter here "
                                 "(`triad bench` compares the outputs of `infer`)"},
             "memory": {"peak_rss_mib": None, "arena_bytes": None,
                        "why": "peak_rss_mib is the whole harness process (Python included); "
                               "arena bytes are internal to the runtime"},
             "energy": {"joules_per_inference": None, "source": None, "why": energy_why()},
             "layers": [], "partition": None, "peer_version": None}
    try:
        peer, loaded = open_peer(peer_cls, args, batch)
    except PeerError as e:
        entry["status"] = "skipped" if getattr(e, "missing", False) else "failed"
        entry["why"] = str(e)
        for k in ("accuracy", "memory"):
            entry[k]["why"] = "not measured: the peer did not run"
        log(f"[{peer_cls.name} b{batch}] {entry['status']}: {e}")
        return entry
    entry.update({"device": peer.device, "compile_s": loaded.compile_s,
                  "warmup_runs": args.warmup, "peer_version": peer.version,
                  "first_run_ms": loaded.first_run_ms})
    samples = time_runs(loaded, args.repeat, args.warmup)
    st = latency_stats(samples)
    entry["latency_ms"] = st
    entry["throughput_per_s"] = batch * 1e3 / st["mean"] if st["mean"] > 0 else None
    if args.labels:
        acc = entry["accuracy"]
        try:
            if not args.input:
                raise PeerError("--labels needs --input (the data the labels belong to)")
            with tempfile.TemporaryDirectory() as d:
                out = Path(d) / "y.npy"
                rows = infer_file(loaded, parse_input_files(args.input, loaded.spec.inputs),
                                  str(out))
                y = np.load(out)
            labels = np.load(args.labels).reshape(-1)
            if labels.shape[0] != rows:
                raise PeerError(f"{args.labels} holds {labels.shape[0]} labels for {rows} rows")
            pred = np.argmax(y.reshape(rows, -1), axis=1)
            acc["top1"] = float(np.mean(pred == labels))
            acc["samples"] = rows
        except Exception as e:  # noqa: BLE001 - accuracy is optional; say why it is missing
            acc["why"] = f"top-1 not measured: {error_text(e)}"
    if args.profile:
        try:
            entry["layers"] = peer.profile(loaded.arrays, max(1, min(args.repeat, 20)))
        except Exception as e:  # noqa: BLE001
            entry["layers_why"] = error_text(e)
    entry["memory"]["peak_rss_mib"] = peak_rss_mib()
    log(f"[{peer_cls.name} b{batch}] p50 {st['p50']:.4g} ms, mean {st['mean']:.4g} ms "
        f"({st['count']} runs), compile {loaded.compile_s:.3g} s"
        + (f", top-1 {entry['accuracy']['top1']:.4f}" if entry["accuracy"]["top1"] is not None
           else ""))
    return entry


def standalone(peer_cls, args):
    entries = []
    for b in args.batches:
        entries.append(result_entry(peer_cls, args, b))
    problems = [p for e in entries for p in check_result(e)]
    if problems:  # a bug in this file, never the user's
        raise AssertionError("result entries do not match triad-bench/1: " + "; ".join(problems))
    write_atomic(args.report, json.dumps(_finite(entries), indent=1) + "\n")
    log(f"wrote {args.report}")
    return 1 if any(e["status"] == "failed" for e in entries) else 0


# ------------------------------------------------------------------------------------------------
# The schema of a result entry (docs/report-schema.md), as far as a peer fills it


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)


def check_result(e):
    """Problems with one `results` entry against triad-bench/1 (an empty list when it is valid).
    Checks the keys, their types, the null-comes-with-a-why rule and the latency statistics."""
    p = []
    need = {"target": str, "kind": str, "batch": int, "status": str, "threads": int}
    for k, t in need.items():
        if not isinstance(e.get(k), t) or isinstance(e.get(k), bool):
            p.append(f"'{k}' must be {t.__name__}, is {e.get(k)!r}")
    if e.get("kind") not in ("triad", "peer"):
        p.append(f"'kind' {e.get('kind')!r} is not triad or peer")
    if e.get("status") not in ("ok", "skipped", "failed"):
        p.append(f"'status' {e.get('status')!r} is not ok, skipped or failed")
    for k in ("why", "device", "compile_s", "warmup_runs", "latency_ms", "throughput_per_s",
              "accuracy", "memory", "energy", "layers"):
        if k not in e:
            p.append(f"'{k}' is missing")
    if e.get("status") != "ok":
        if not isinstance(e.get("why"), str) or not e["why"]:
            p.append("a result that is not ok needs a 'why'")
        return p
    if e.get("why") is not None:
        p.append("'why' must be null when status is ok")
    if not isinstance(e.get("device"), str):
        p.append("'device' must be a string")
    if not _num(e.get("compile_s")) or e["compile_s"] < 0:
        p.append("'compile_s' must be a non-negative number")
    lat = e.get("latency_ms")
    if not isinstance(lat, dict):
        p.append("'latency_ms' must be an object")
    else:
        for k in ("count", "mean", "p50", "p90", "p99", "min", "max"):
            if not _num(lat.get(k)):
                p.append(f"latency_ms.{k} must be a number")
        s = lat.get("samples")
        if not isinstance(s, list) or not all(_num(x) for x in s):
            p.append("latency_ms.samples must be a list of numbers")
        elif _num(lat.get("count")) and len(s) != lat["count"]:
            p.append("latency_ms.samples must hold count samples")
        if all(_num(lat.get(k)) for k in ("min", "p50", "p90", "p99", "max")) and not (
                lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]):
            p.append("latency_ms: min <= p50 <= p90 <= p99 <= max does not hold")
    if not _num(e.get("throughput_per_s")) or e["throughput_per_s"] <= 0:
        p.append("'throughput_per_s' must be a positive number")
    for k, keys in (("accuracy", ("max_abs_err", "max_rel_err", "top1", "top1_reference")),
                    ("memory", ("peak_rss_mib", "arena_bytes")),
                    ("energy", ("joules_per_inference",))):
        obj = e.get(k)
        if not isinstance(obj, dict):
            p.append(f"'{k}' must be an object")
            continue
        for kk in keys:
            if kk not in obj:
                p.append(f"{k}.{kk} is missing")
            elif obj[kk] is None:
                if not obj.get("why"):
                    p.append(f"{k}.{kk} is null without a 'why'")
            elif not _num(obj[kk]):
                p.append(f"{k}.{kk} must be a number or null")
    if not isinstance(e.get("layers"), list):
        p.append("'layers' must be a list")
    else:
        for i, layer in enumerate(e["layers"]):
            if not isinstance(layer, dict) or not isinstance(layer.get("layer"), str) or \
                    not _num(layer.get("ms")):
                p.append(f"layers[{i}] needs 'layer' (string) and 'ms' (number)")
    return p


# ------------------------------------------------------------------------------------------------


def main(peer_cls, argv=None):
    protect_stdout()
    args = parse_args(peer_cls, argv)
    if args.no_spin:
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    if args.report:
        sys.exit(standalone(peer_cls, args))
    try:
        peer, loaded = open_peer(peer_cls, args, args.batches[0])
    except PeerError as e:
        log(f"[{peer_cls.name}] not ready: {e}")
        send({"ready": False, "peer": peer_cls.name, "why": str(e)})
        sys.exit(0)
    except Exception as e:  # noqa: BLE001 - a bug here still answers the caller
        import traceback
        traceback.print_exc(file=sys.stderr)
        send({"ready": False, "peer": peer_cls.name, "why": error_text(e)})
        sys.exit(0)
    send({"ready": True, "peer": peer.name, "version": peer.version,
          "compile_s": round(loaded.compile_s, 6), "device": peer.device, "threads": peer.threads,
          "batch": loaded.batch, "first_run_ms": round(loaded.first_run_ms, 6),
          "inputs": [s.describe() for s in loaded.spec.inputs],
          "outputs": loaded.spec.outputs})
    try:
        serve(loaded, sys.stdin)
    except BrokenPipeError:  # the caller went away: nobody to answer
        os._exit(0)
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group
        os._exit(130)
    sys.exit(0)
