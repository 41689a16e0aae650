"""The FPGA flow from Python: precision configs, Verilog, simulation, synthesis, benchmarks.

:func:`config` returns the precision config of ``triad quantize --config`` (docs/fpga.md,
"Config file") as a plain dict, one entry per layer, to edit before :meth:`Model.quantize`.
"""

import copy
import json
import os

import numpy as np

from . import _triad


def config(model, default="fixed<16,6>", reuse=1, accumulator="exact"):
    """A precision config for ``model`` with every layer spelled out (the layers the FPGA
    emulator plans, by ONNX node name): layers with weights get ``weight``, ``bias`` and
    ``result`` at ``default`` (their accumulators ``accumulator``: "exact" by default), other
    layers a ``result``; pass-through layers (reshapes) none. ``reuse`` (an int) is written per
    Dense/Conv layer under the top-level ``reuse`` key, which ``triad compile --target fpga``
    and :meth:`Quantized.write_verilog` read. The dict is the JSON file's schema: edit it per
    layer, or ``json.dump`` it for the CLI."""
    cfg = {
        "default": {"precision": default, "accumulator": accumulator},
        "input": {"precision": default},
        "auto_margin": 1,
        "layers": {},
        "reuse": {},
    }
    for name, op, uses_weights, pass_through in model._impl.fpga_layers():
        if pass_through:
            continue
        if uses_weights:
            cfg["layers"][name] = {"weight": default, "bias": default, "result": default}
            cfg["reuse"][name] = int(reuse)
        else:
            cfg["layers"][name] = {"result": default}
    return cfg


def without_reuse(cfg):
    """``cfg`` without its ``reuse`` key (a copy)."""
    cfg = copy.deepcopy(cfg)
    cfg.pop("reuse", None)
    return cfg


def _progress(callback, stage, fraction):
    if callback is not None:
        callback(stage, fraction)


def _f32(x):
    return np.ascontiguousarray(np.asarray(x, dtype=np.float32))


def write_verilog(q, directory, x=None, reuse=None, clock_mhz=200):
    """Writes the Verilog design of quantized model ``q`` to ``directory`` (``triad compile
    --target fpga``'s folder: rtl/, tb/tb.cpp, summary.json; with inputs ``x`` also the
    expected outputs for :func:`sim`). ``reuse``: an int for every Dense/Conv layer, "auto", or
    None for the config's per-layer ``reuse`` (else 1). The config and the calibration inputs go
    into the folder (config.json, calibration.npy) so that :func:`sim` on other inputs can
    recompute the emulator's outputs. Returns summary.json as a dict."""
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    cfg = q.config if q.config is not None else {}
    config_path = os.path.abspath(os.path.join(directory, "config.json"))
    with open(config_path, "w") as f:
        json.dump(cfg, f, indent=2)
    calibration_path = ""
    if q.calibration is not None:
        calibration_path = os.path.abspath(os.path.join(directory, "calibration.npy"))
        np.save(calibration_path, _f32(q.calibration))
    layer_reuse = {k: int(v) for k, v in cfg.get("reuse", {}).items()}
    auto = reuse == "auto"
    if isinstance(reuse, int):
        layer_reuse = {}
    arrays = [] if x is None else [_f32(x)]
    text = q._impl.write_verilog(directory, arrays, reuse if isinstance(reuse, int) else 1, auto,
                                 layer_reuse, float(clock_mhz), config_path, calibration_path)
    return json.loads(text)


def sim(directory, x, seed=1, trace=None, progress=None):
    """Simulates a design folder in Verilator on inputs ``x`` against the emulator, as ``triad
    sim --json`` does: a dict with samples, latency_cycles, ii, mismatches, missing,
    fifo_peak, total_cycles, inferences_per_second, ... and ``outputs`` (the RTL's outputs,
    dequantized, [samples, elements]). A deadlock raises :class:`triad.RunError` naming the
    full FIFOs. ``trace``: a .vcd or .fst file for the waveform. ``progress(stage, fraction)``
    is called with "sim" at 0 and 1 and "sim:inputs", "sim:expected" (the emulator's outputs)
    and "sim:verilator" (the Verilator build and run) as those steps end; the GIL is released
    while it runs."""
    text, outputs = _triad.simulate(os.fspath(directory), _f32(x), int(seed),
                                    os.fspath(trace) if trace else "", progress)
    report = json.loads(text)
    report["outputs"] = outputs
    return report


def synth(directory, family="xc7", jobs=0, pnr=False, device="up5k", progress=None):
    """Yosys on a design folder, as ``triad synth --json`` reports it: LUT, FF, DSP, BRAM,
    logic depth and (xc7) estimated Fmax per layer module and in total; ``pnr`` (ice40):
    nextpnr place and route. ``progress(stage, fraction)`` at the start and the end."""
    _progress(progress, "synth", 0.0)
    report = json.loads(_triad.synthesize(os.fspath(directory), family, int(jobs), bool(pnr),
                                          device))
    _progress(progress, "synth", 1.0)
    return report
