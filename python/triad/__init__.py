"""Triad from Python: load an ONNX model, inspect it, compile it for the CPU, GPU, FPGA or the
reference interpreter and run it on NumPy arrays; quantize it for the FPGA and look inside.

A thin layer over the C++ library (the extension module ``triad._triad``): every answer comes
from the same code as the ``triad`` command. See docs/python.md.

    >>> import triad, numpy as np
    >>> m = triad.load("models/jet_mlp.onnx")          # the batch stays symbolic
    >>> exe = m.compile("cpu")
    >>> y = exe(np.zeros((4, 16), np.float32))        # binds batch=4, compiles: (4, 5)
    >>> y = exe(np.zeros((7, 16), np.float32))        # batch=7: compiled once more
"""

import json
import os

import numpy as np

from . import _triad
from .errors import (Error, InternalError, InvalidModelError, IoError, ResourceError, RunError,
                     UnsupportedError, UsageError)

__all__ = [
    "load", "max_memory", "set_max_memory", "Model", "Executable", "Quantized", "sim", "synth", "bench",
    "Error", "UsageError", "IoError", "InvalidModelError", "UnsupportedError", "RunError",
    "ResourceError", "InternalError",
]

__version__ = "0.1.0"

TARGETS = ("interp", "cpu", "gpu", "fpga")

_NUMPY_DTYPES = {
    "f32": np.float32, "f16": np.float16, "f64": np.float64, "i64": np.int64, "i32": np.int32,
    "i16": np.int16, "i8": np.int8, "u64": np.uint64, "u32": np.uint32, "u16": np.uint16,
    "u8": np.uint8, "bool": np.bool_,
}


def _progress(callback, stage, fraction):
    if callback is not None:
        callback(stage, fraction)


def _io(text):
    """[{name, dtype, shape}] from the module's JSON, with the NumPy dtype added."""
    items = json.loads(text)
    for item in items:
        item["numpy_dtype"] = _NUMPY_DTYPES.get(item["dtype"])
    return items


def _bind(inputs, specs):
    """Inputs (a dict by name, a sequence in order, or one array) as a list of C-contiguous
    arrays in graph-input order. Arrays of another dtype of the same kind (float64 for float32)
    are cast; the library checks shapes and names the input at fault."""
    names = [s["name"] for s in specs]
    if isinstance(inputs, dict):
        unknown = [k for k in inputs if k not in names]
        if unknown:
            raise UsageError(f"the model has no input named '{unknown[0]}' "
                             f"(inputs: {', '.join(names)})")
        missing = [n for n in names if n not in inputs]
        if missing:
            raise UsageError(f"no array for model input '{missing[0]}'")
        ordered = [inputs[n] for n in names]
    elif isinstance(inputs, (list, tuple)):
        ordered = list(inputs)
    else:
        ordered = [inputs]
    arrays = []
    for value, spec in zip(ordered, specs):
        want = spec["numpy_dtype"]
        a = np.asarray(value)
        if want is not None and a.dtype != want and np.can_cast(a.dtype, want, "same_kind"):
            a = a.astype(want)
        arrays.append(np.ascontiguousarray(a))
    arrays.extend(np.ascontiguousarray(v) for v in ordered[len(specs):])  # the library counts
    return arrays


def max_memory():
    """The most bytes a model may hold in tensors (default: the machine's memory)."""
    return _triad.memory_limit()


def set_max_memory(nbytes):
    """Sets :func:`max_memory` (``triad --max-memory``): a model or input that needs more is
    refused with :class:`ResourceError` naming the node and the size."""
    if int(nbytes) < 1:
        raise UsageError(f"max memory {nbytes}: expected a positive number of bytes")
    _triad.set_memory_limit(int(nbytes))


def load(path, batch=None, dims=None):
    """Imports an ONNX model (``triad inspect``/``run``'s ``--batch`` and ``--dim``).

    Symbolic dimensions stay symbolic: each run binds them from the shapes of the arrays it is
    given (as ONNX Runtime and ``triad run`` do) and compiles once per distinct binding.
    ``batch`` fixes a symbolic first dimension ahead of time, ``dims`` other symbolic
    dimensions by name; an array that contradicts a fixed size raises :class:`RunError` with
    ``triad run``'s message. Raises :class:`IoError`, :class:`InvalidModelError` or
    :class:`UnsupportedError` naming the file and the node at fault."""
    return Model(_triad.load(os.fspath(path), None if batch is None else int(batch),
                             dict(dims or {})), os.fspath(path))


class Model:
    """An imported model (``triad.load``)."""

    def __init__(self, impl, path):
        self._impl = impl
        self.path = path

    @property
    def batch(self):
        """The batch size fixed at load (None: bound from the data of each run)."""
        return self._impl.batch

    @property
    def dynamic(self):
        """Whether some input dimension is symbolic (bound from the arrays of each run)."""
        return self._impl.dynamic

    @property
    def inputs(self):
        """[{name, dtype, shape, numpy_dtype}] of the graph inputs; a symbolic dimension is
        its name (``"?"`` when unnamed)."""
        return _io(self._impl.inputs())

    @property
    def outputs(self):
        """[{name, dtype, shape, numpy_dtype}] of the graph outputs (symbolic dimensions by
        name, as declared)."""
        return _io(self._impl.outputs())

    @property
    def warnings(self):
        """Import warnings (e.g. ONNX shape inference disagreements)."""
        return list(self._impl.warnings())

    def inspect(self):
        """What ``triad inspect --json`` writes, as a dict: inputs, outputs, layers (name, op,
        outputs, params, macs), totals and per-target support with the reasons. Symbolic
        dimensions show by name in the inputs and outputs; the layers are those of a batch
        of 1."""
        return json.loads(self._impl.inspect())

    def compile(self, target="cpu", threads=0, device="", fpga_rtl=False, profile=False,
                progress=None):
        """Compiles for ``target`` ("interp", "cpu", "gpu" or "fpga") and returns an
        :class:`Executable`. ``threads``: the CPU's worker threads (0: TRIAD_THREADS, else the
        physical cores); ``device``: the OpenCL device (as ``triad run --device``);
        ``fpga_rtl``: run the Verilated RTL instead of the emulator; ``profile``: record
        per-layer times from the first run on. With every dimension fixed (``batch``/``dims``
        or a static model) it compiles now; else on each run that brings a new binding of the
        symbolic dimensions (then cached). ``progress(stage, fraction)`` is called as each
        compile goes: ``stage`` is "compile" (or "compile N=4" for a binding) at 0 and 1 and
        "compile...:STEP" in between (the CPU target: "codegen LAYER" per layer, then "c++"),
        with a growing fraction. The GIL is released while it compiles."""
        exe = Executable(self._impl.compile(target, int(threads), device, bool(fpga_rtl),
                                            progress))
        if profile:
            exe._impl.set_profiling(True)
        return exe

    def quantize(self, config=None, calibration=None, progress=None):
        """The bit-accurate FPGA emulator of this model with a precision ``config`` (a dict in
        the schema of ``triad quantize --config``, docs/fpga.md; see :func:`triad.fpga.config`;
        None: the built-in fixed<16,6>). ``calibration`` (inputs as for :meth:`Executable.run`)
        gives the value ranges of "auto" precisions, as ``triad quantize``'s ``--input`` does.
        ``progress(stage, fraction)``: "quantize" at 0 and 1, "quantize:LAYER" per layer of the
        calibration run in between."""
        cal = [] if calibration is None else _bind(calibration, self.inputs)
        text = json.dumps(config if config is not None else {})
        q = Quantized(self._impl.quantize(text, cal, progress), self, config)
        q.calibration = None if calibration is None else cal[0]
        return q

    def __repr__(self):
        return f"<triad.Model {self.path!r} batch={self.batch}>"


class Executable:
    """A model compiled for one target (:meth:`Model.compile`), run on NumPy arrays."""

    def __init__(self, impl):
        self._impl = impl
        self.inputs = _io(impl.inputs())

    @property
    def outputs(self):
        """[{name, dtype, shape, numpy_dtype}] of the outputs, as compiled for the last run's
        binding (before any run: as declared)."""
        return _io(self._impl.outputs())

    @property
    def target(self):
        """The target's name."""
        return self._impl.target

    @property
    def bindings(self):
        """The bindings of the symbolic dimensions compiled so far, e.g. ``["N=1", "N=4"]``
        (``""``: the sizes fixed ahead of time): one compile each."""
        return list(self._impl.bindings())

    @property
    def compiles(self):
        """How many times this executable compiled (once per binding)."""
        return self._impl.compiles()

    def run(self, inputs):
        """Runs on ``inputs`` (a dict by input name, a list in input order, or one array) and
        returns a dict of output arrays by output name. The outputs are the target's own
        buffers (no copy); inputs are copied once into the runtime's tensors. The GIL is
        released while it runs."""
        outs = self._impl.run(_bind(inputs, self.inputs))
        return {spec["name"]: a for spec, a in zip(self.outputs, outs)}

    def __call__(self, *inputs):
        """``exe(x)``: the output array (a tuple of arrays for several outputs)."""
        outs = self._impl.run(_bind(list(inputs), self.inputs))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def profile(self, inputs=None, repeat=10):
        """Per-layer times as ``triad run --profile`` reports them: a list of dicts (layer,
        kind, ms, cycles_per_sample), slowest first. With ``inputs``: runs once untimed, then
        ``repeat`` times with profiling on, and ``ms`` is the mean per run. Without: the times
        accumulated since ``compile(profile=True)`` (summed over the runs since)."""
        runs = 1
        if inputs is not None:
            arrays = _bind(inputs, self.inputs)
            self._impl.run(arrays)
            self._impl.set_profiling(True)
            for _ in range(repeat):
                self._impl.run(arrays)
            runs = max(1, repeat)
        rows = [{"layer": layer, "kind": kind, "ms": ms / runs, "cycles_per_sample": cycles}
                for layer, kind, ms, cycles in self._impl.profile()]
        return sorted(rows, key=lambda r: -r["ms"])

    def __repr__(self):
        return f"<triad.Executable target={self.target}>"


class Quantized:
    """A model in fixed point (:meth:`Model.quantize`): the FPGA target's bit-accurate
    emulator, planned once per binding of the symbolic dimensions the inputs bring."""

    def __init__(self, impl, model, config):
        self._impl = impl
        self.model = model
        self.config = config
        self.calibration = None

    def predict(self, x):
        """The emulator's outputs (dequantized, float32) for ``x`` (one array, a list or a
        dict by input name): one array, or a tuple for several outputs. Bit-exact with
        ``triad quantize --output`` and with the RTL."""
        outs = self._impl.predict(_bind(x, self.model.inputs))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def trace(self, x):
        """Every layer's output, float and fixed side by side: a dict by layer name (the first
        entry, "(input)", is the input's quantization) of dicts with ``op``, ``formats``,
        ``format`` (the output's), ``fixed`` and ``float`` (arrays, float32), ``saturated``,
        ``wrapped`` (overflow counts), ``max_abs_error`` and ``elements``."""
        rows, _ = self._impl.trace(_bind(x, self.model.inputs))
        out = {}
        for name, op, formats, fmt, fixed, flt, sat, wrap, err, n in rows:
            out[name] = {"op": op, "formats": formats, "format": fmt, "fixed": fixed,
                         "float": flt, "saturated": sat, "wrapped": wrap,
                         "max_abs_error": err, "elements": n}
        return out

    @property
    def bindings(self):
        """The bindings of the symbolic dimensions planned so far (one emulator each)."""
        return list(self._impl.bindings())

    def layers(self):
        """The planned layers: name, op, formats per role (with each format's min and max),
        input and output formats, and the float constants (weights, bias) of each layer."""
        return json.loads(self._impl.layers())

    def write_verilog(self, directory, x=None, reuse=None, clock_mhz=200):
        """Writes the Verilog design, its Verilator testbench and (with ``x``) the expected
        outputs to ``directory``, as ``triad compile --target fpga`` does; returns its
        summary.json as a dict. See :func:`triad.fpga.write_verilog`."""
        from . import fpga
        return fpga.write_verilog(self, directory, x=x, reuse=reuse, clock_mhz=clock_mhz)

    def __repr__(self):
        return f"<triad.Quantized {self.model.path!r}>"


def sim(*args, **kwargs):
    """See :func:`triad.fpga.sim`."""
    from . import fpga
    return fpga.sim(*args, **kwargs)


def synth(*args, **kwargs):
    """See :func:`triad.fpga.synth`."""
    from . import fpga
    return fpga.synth(*args, **kwargs)


def bench(model, targets=("interp", "cpu", "gpu", "fpga", "auto"), batch=(1,), data=None,
          labels=None, peers=(), repeat=50, warmup=3, rounds=5, threads=0, reuse="auto",
          precision="", fpga_part="xcku115", clock_mhz=200, fpga_rtl=False, timeout=600,
          seed=1, out_dir=None, history=False, progress=None):
    """``triad bench``: ``model`` on every target and batch size (and ``peers`` such as
    "onnxruntime") in interleaved rounds; returns the report (report.json, docs/report-schema.md)
    as a dict. ``data``/``labels``: .npy files of input rows and class indices for accuracy.
    The report files go to ``out_dir`` (default: a temporary folder, removed); ``history``
    appends the run to the history database as the CLI does. Targets run in worker processes;
    the GIL is released meanwhile. ``progress(stage, fraction)``: at the start and the end."""
    import tempfile
    o = _triad.BenchOptions()
    o.model = os.fspath(model)
    o.targets = [targets] if isinstance(targets, str) else list(targets)
    o.batches = [int(batch)] if isinstance(batch, int) else [int(b) for b in batch]
    o.data = os.fspath(data) if data else ""
    o.labels = os.fspath(labels) if labels else ""
    o.peers = [peers] if isinstance(peers, str) else list(peers)
    o.repeat, o.warmup, o.rounds, o.threads = int(repeat), int(warmup), int(rounds), int(threads)
    o.reuse, o.precision, o.fpga_part = str(reuse), precision, fpga_part
    o.clock_mhz, o.fpga_rtl, o.timeout_s, o.seed = float(clock_mhz), bool(fpga_rtl), \
        float(timeout), int(seed)
    o.no_db = not history
    o.command = f"triad.bench({o.model!r})"
    _progress(progress, "bench", 0.0)
    if out_dir is None:
        with tempfile.TemporaryDirectory(prefix="triad-bench-") as d:
            o.out_dir = d
            report = json.loads(_triad.bench(o))
    else:
        o.out_dir = os.fspath(out_dir)
        report = json.loads(_triad.bench(o))
    _progress(progress, "bench", 1.0)
    return report
