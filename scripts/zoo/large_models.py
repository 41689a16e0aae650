#!/usr/bin/python3
"""Builds the on-demand model zoo: large models with random weights, generated locally.

Nothing is downloaded. Each model is made from its architecture with a fixed-seed random
initialisation (torch.manual_seed), exported with torch.onnx.export (opset 17, batch 1, static
shapes, named inputs and outputs), and given ONNX Runtime reference outputs for fixed-seed
random inputs. Run with Debian's Python, which has python3-torch and python3-torchvision:

    /usr/bin/python3 scripts/zoo/large_models.py --list
    /usr/bin/python3 scripts/zoo/large_models.py --model resnet18 --model bert_base
    /usr/bin/python3 scripts/zoo/large_models.py --all [--cache DIR] [--force]

Files go to a cache outside the repository: --cache DIR, else $TRIAD_ZOO_CACHE, else
~/.cache/triad/zoo; each model in <cache>/<name>/:

    <name>.onnx                       the model
    <name>_input<i>.npy               reference inputs, in graph-input order
    <name>_output<i>.npy              ONNX Runtime outputs, in graph-output order
    <name>.json                       manifest entry: files, sha256, names/shapes/dtypes, seed, ...

The reference outputs are computed by scripts/zoo/reference_outputs.py under the project's
.venv/bin/python (ONNX Runtime is not in Debian's Python). A model whose cached files all match
their recorded sha256 is skipped; anything missing or mismatched is rebuilt. Every file is
written to a temporary name and moved into place, and <name>.json last.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import transformers_small  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_PYTHON = os.path.join(REPO, ".venv", "bin", "python")
HELPER = os.path.join(REPO, "scripts", "zoo", "reference_outputs.py")
SEED = 20261121
OPSET = 17

IMAGE = {"shape": [1, 3, 224, 224], "dtype": "float32", "fill": "normal"}


def vision(arch):
    return lambda: calibrate_batchnorm(getattr(torchvision.models, arch)(weights=None))


def calibrate_batchnorm(model, batches=4, batch_size=8):
    """Sets BatchNorm running statistics from random images (cumulative average).

    With torchvision's initialisation and the default statistics (mean 0, variance 1), deep
    networks such as MobileNetV2 give outputs near 1e-10, which no tolerance can check. A few
    training-mode passes over N(0, 1) images make every layer's activations O(1), and give the
    BatchNormalization layers non-trivial statistics. Weights are untouched."""
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return model
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(torch.randn(batch_size, *IMAGE["shape"][1:]))
    return model.eval()


# name -> description, approximate ONNX size, constructor, example inputs, outputs.
# Input specs tell reference_outputs.py how to draw the fixed-seed inputs:
#   normal: N(0, 1) float32;  randint: integers in [low, high);  mask: `valid` ones, then zeros.
MODELS = {
    "resnet18": dict(
        what="torchvision ResNet-18 (ImageNet classifier, 1000 classes)", size_mb=47,
        make=vision("resnet18"), inputs={"input": IMAGE}, outputs=["logits"]),
    "resnet50": dict(
        what="torchvision ResNet-50 (bottleneck blocks, 1000 classes)", size_mb=102,
        make=vision("resnet50"), inputs={"input": IMAGE}, outputs=["logits"]),
    "mobilenet_v2": dict(
        what="torchvision MobileNetV2 (depthwise-separable, ReLU6 as Clip, 1000 classes)", size_mb=14,
        make=vision("mobilenet_v2"), inputs={"input": IMAGE}, outputs=["logits"]),
    "vgg16": dict(
        what="torchvision VGG-16 (13 conv + 3 dense, 1000 classes)", size_mb=553,
        make=vision("vgg16"), inputs={"input": IMAGE}, outputs=["logits"]),
    "squeezenet1_1": dict(
        what="torchvision SqueezeNet 1.1 (fire modules, 1000 classes)", size_mb=5,
        make=vision("squeezenet1_1"), inputs={"input": IMAGE}, outputs=["logits"]),
    "bert_base": dict(
        what="BERT-base encoder (12 layers, 768 hidden, 12 heads), sequence 128, "
             "see scripts/zoo/transformers_small.py", size_mb=435,
        make=transformers_small.BertBase,
        inputs={"input_ids": {"shape": [1, 128], "dtype": "int64", "fill": "randint",
                              "low": 0, "high": transformers_small.BertConfig.vocab_size},
                "attention_mask": {"shape": [1, 128], "dtype": "int64", "fill": "mask",
                                   "valid": 100}},
        outputs=["last_hidden_state"]),
    "gpt2_small": dict(
        what="GPT-2 small (12 layers, 768 hidden, 12 heads, tied LM head), sequence 64, no KV "
             "cache, see scripts/zoo/transformers_small.py", size_mb=652,
        make=transformers_small.GPT2Small,
        inputs={"input_ids": {"shape": [1, 64], "dtype": "int64", "fill": "randint",
                              "low": 0, "high": transformers_small.GPT2Config.vocab_size}},
        outputs=["logits"]),
}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def cache_root(arg):
    if arg:
        return os.path.abspath(arg)
    if os.environ.get("TRIAD_ZOO_CACHE"):
        return os.path.abspath(os.environ["TRIAD_ZOO_CACHE"])
    return os.path.join(os.path.expanduser("~"), ".cache", "triad", "zoo")


def verify_cached(folder, name):
    """True when <name>.json exists and every file it lists matches its sha256."""
    entry_path = os.path.join(folder, f"{name}.json")
    try:
        with open(entry_path) as f:
            entry = json.load(f)
        files = [(entry["file"], entry["sha256"])]
        for t in entry["inputs"] + entry["outputs"]:
            files.append((t["reference"], t["reference_sha256"]))
        return all(sha256(os.path.join(folder, fn)) == digest for fn, digest in files)
    except (OSError, KeyError, ValueError):
        return False


def example_input(spec):
    """A stand-in tensor of the right shape and dtype for tracing (values do not matter)."""
    if spec["dtype"] == "int64":
        return torch.ones(spec["shape"], dtype=torch.int64)
    return torch.zeros(spec["shape"], dtype=torch.float32)


def export(name, spec, folder):
    """Builds the model with seeded random weights and exports it; returns the export time."""
    torch.manual_seed(SEED)
    model = spec["make"]().eval()
    args = tuple(example_input(s) for s in spec["inputs"].values())
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".onnx")
    os.close(fd)
    os.chmod(tmp, 0o644)
    try:
        start = time.monotonic()
        with torch.no_grad():
            torch.onnx.export(model, args, tmp, opset_version=OPSET, do_constant_folding=True,
                              input_names=list(spec["inputs"]), output_names=spec["outputs"])
        seconds = time.monotonic() - start
        os.replace(tmp, os.path.join(folder, f"{name}.onnx"))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return seconds


def build(name, root, force):
    spec = MODELS[name]
    folder = os.path.join(root, name)
    os.makedirs(folder, exist_ok=True)
    t0 = time.monotonic()

    def step(msg):
        print(f"[{name}] {msg} ({time.monotonic() - t0:.1f}s)", flush=True)

    if not force and verify_cached(folder, name):
        step("cached, verified")
        return
    if os.path.exists(os.path.join(folder, f"{name}.json")):
        step("cached files do not match their sha256: rebuilding" if not force else "rebuilding (--force)")
        os.remove(os.path.join(folder, f"{name}.json"))
    step(f"exporting with torch {torch.__version__}, opset {OPSET}")
    export_s = export(name, spec, folder)
    size = os.path.getsize(os.path.join(folder, f"{name}.onnx")) / 1e6
    step(f"exported {name}.onnx, {size:.1f} MB in {export_s:.1f}s")
    meta = {
        "name": name,
        "description": spec["what"],
        "script": "scripts/zoo/large_models.py",
        "seed": SEED,
        "opset": OPSET,
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "export_seconds": round(export_s, 2),
        "input_specs": spec["inputs"],
    }
    step("computing reference outputs with ONNX Runtime")
    r = subprocess.run([VENV_PYTHON, HELPER, "--folder", folder, "--meta", json.dumps(meta)])
    if r.returncode != 0:
        sys.exit(f"[{name}] reference_outputs.py failed (exit {r.returncode})")
    step("done")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="models: " + ", ".join(MODELS))
    ap.add_argument("--model", action="append", default=[], metavar="NAME",
                    help="a model to build (repeatable)")
    ap.add_argument("--all", action="store_true", help="build every model")
    ap.add_argument("--list", action="store_true", help="list the models and their cache state")
    ap.add_argument("--cache", metavar="DIR",
                    help="cache folder (default: $TRIAD_ZOO_CACHE or ~/.cache/triad/zoo)")
    ap.add_argument("--force", action="store_true", help="rebuild even when cached and verified")
    args = ap.parse_args()
    root = cache_root(args.cache)

    unknown = [m for m in args.model if m not in MODELS]
    if unknown:
        print(f"large_models.py: unknown model {', '.join(unknown)}; known: {', '.join(MODELS)}",
              file=sys.stderr)
        return 2
    if args.list:
        print(f"cache: {root}")
        for name, spec in MODELS.items():
            state = "cached" if verify_cached(os.path.join(root, name), name) else "not built"
            print(f"  {name:14} ~{spec['size_mb']:>4} MB  {state:9}  {spec['what']}")
        return 0
    names = list(MODELS) if args.all else list(dict.fromkeys(args.model))
    if not names:
        ap.error("give --model NAME (repeatable), --all or --list")
    if not os.path.exists(VENV_PYTHON):
        sys.exit(f"large_models.py: {VENV_PYTHON} not found; run scripts/setup.sh first")
    print(f"cache: {root}", flush=True)
    for name in names:
        build(name, root, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
