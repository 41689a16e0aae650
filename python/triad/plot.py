"""Precision plots of a quantized model (matplotlib).

:func:`precision` draws, per layer, the spread of the magnitudes of its float weights and
outputs (boxes: quartiles, whiskers: smallest and largest nonzero |x|) against the range its
fixed-point format holds (shaded, from one LSB to the largest value), with the saturations and
wraps the emulator counted, and beside it the largest error fixed vs float per layer. Like
hls4ml's ``numerical`` profile, with the overflow counts from the bit-accurate emulator.

The data come from the C++ library (fpga/Profile.h); this file only draws them. It also runs on
its own, without the extension module, for ``triad quantize --plot``:

    python plot.py PROFILE.json OUT.png
"""

import json
import sys

__all__ = ["precision", "profile", "draw"]


def profile(q, x, progress=None):
    """The numerical profile of quantized model ``q`` on inputs ``x`` (a dict; see
    fpga/Profile.h): per layer, weight and output magnitudes, formats, overflow counts and the
    error fixed vs float. ``progress(stage, fraction)``: "profile" at 0 and 1,
    "profile:emulator" and then "profile:LAYER" per layer of the float reference between."""
    from . import _bind  # the package; absent when this file runs as a script
    return json.loads(q._impl.profile(_bind(x, q.model.inputs), progress))


def precision(q, x, path=None):
    """Draws :func:`profile` of ``q`` on ``x``; saves to ``path`` when given (PNG, SVG, PDF by
    extension). Returns the matplotlib Figure."""
    return draw(profile(q, x), path)


def _box(ax, y, s, color):
    """A box from the first to the third quartile, whiskers to the extremes, the median."""
    if not s or "max" not in s:
        return
    ax.plot([s["min"], s["max"]], [y, y], color=color, lw=1)
    ax.barh(y, s["q75"] - s["q25"], left=s["q25"], height=0.3, color=color, alpha=0.8)
    ax.plot([s["median"]], [y], "|", color="black", ms=9)


def draw(data, path=None):
    """Draws a profile (the dict of :func:`profile`); saves to ``path`` when given."""
    import matplotlib
    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    layers = data["layers"]
    n = len(layers)
    fig, (ax, ex) = plt.subplots(1, 2, figsize=(12, 0.45 * n + 1.8), sharey=True,
                                 gridspec_kw={"width_ratios": [3, 1]})
    labels = []
    for i, layer in enumerate(layers):
        y = n - 1 - i
        labels.append(f"{layer['name']} ({layer['op']})")
        res = layer["result_format"]
        ax.barh(y + 0.17, res["max"] - res["lsb"], left=res["lsb"], height=0.34,
                color="tab:blue", alpha=0.15)
        _box(ax, y + 0.17, layer.get("outputs"), "tab:blue")
        wf = layer.get("weight_format")
        if wf:
            ax.barh(y - 0.17, wf["max"] - wf["lsb"], left=wf["lsb"], height=0.34,
                    color="tab:orange", alpha=0.15)
            _box(ax, y - 0.17, layer.get("weights"), "tab:orange")
        over = layer["saturated"] + layer["wrapped"] + layer.get("const_saturated", 0)
        if over:
            ax.annotate(f"{layer['saturated']} sat, {layer['wrapped']} wrap"
                        + (f", {layer['const_saturated']} const" if layer.get("const_saturated")
                           else ""), (1.0, y), xycoords=("axes fraction", "data"),
                        xytext=(-4, 0), textcoords="offset points", ha="right", va="center",
                        color="tab:red", fontsize=8)
        err = layer["max_abs_error"]
        ex.barh(y, err if err > 0 else 0, color="tab:red" if over else "tab:gray")
    ax.set_xscale("log", base=2)
    ax.set_yticks(range(n))
    ax.set_yticklabels(list(reversed(labels)), fontsize=8)
    ax.set_xlabel("|value| (log2); shaded: what the fixed-point format holds")
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color="tab:blue", alpha=0.8, label="outputs (float)"),
                       Patch(color="tab:blue", alpha=0.15, label="output format"),
                       Patch(color="tab:orange", alpha=0.8, label="weights (float)"),
                       Patch(color="tab:orange", alpha=0.15, label="weight format")],
              loc="lower left", fontsize=8)
    ax.set_title("values against formats")
    if any(layer["max_abs_error"] > 0 for layer in layers):
        ex.set_xscale("log")
    ex.set_xlabel("max |fixed - float|")
    ex.set_title("error per layer")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def _main(argv):
    if len(argv) != 3:
        print("usage: plot.py PROFILE.json OUT.png", file=sys.stderr)
        return 2
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(f"triad plot: matplotlib is not installed for {sys.executable} "
              "(pip install matplotlib)", file=sys.stderr)
        return 3
    with open(argv[1]) as f:
        draw(json.load(f), argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
