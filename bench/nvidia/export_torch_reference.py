"""Exports the zoo's ResNet-50 and BERT-base (same seeds and code as scripts/zoo/large_models.py)
with fixed-seed inputs (in0.npy, ...) and PyTorch's CPU outputs (ref.npy) into OUT/NAME/, and
times them in PyTorch eager on the GPU (float32, batch 1, 30 runs after 5) as a reference:
OUT/torch.json. Used by bench/nvidia/run.sh on a machine without network or ONNX Runtime's CUDA
provider.

  python3 bench/nvidia/export_torch_reference.py OUT [NAME ...]   (default: resnet50 bert_base)
"""
import json, os, sys, time
import numpy as np
import torch
sys.path.insert(0, "scripts/zoo")
import large_models as lm

out = sys.argv[1]
res = {"torch": torch.__version__, "cuda": torch.cuda.get_device_name(0)}
for name in sys.argv[2:] or ("resnet50", "bert_base"):
    spec = lm.MODELS[name]
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    torch.manual_seed(lm.SEED)
    model = spec["make"]().eval()
    g = np.random.default_rng(0)
    ins = []
    for k, s in spec["inputs"].items():
        if s["dtype"] == "int64":
            if s.get("fill") == "mask":
                a = np.zeros(s["shape"], np.int64); a[..., : s["valid"]] = 1
            else:
                a = g.integers(s.get("low", 0), s.get("high", 2), size=s["shape"]).astype(np.int64)
        else:
            a = g.standard_normal(s["shape"]).astype(np.float32)
        np.save(os.path.join(folder, f"in{len(ins)}.npy"), a)
        ins.append(torch.from_numpy(a))
    t0 = time.time()
    with torch.no_grad():
        kw = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
        torch.onnx.export(model, tuple(ins), os.path.join(folder, f"{name}.onnx"),
                          opset_version=lm.OPSET, do_constant_folding=True,
                          input_names=list(spec["inputs"]), output_names=spec["outputs"], **kw)
        ref = model(*ins)
        ref = ref[0] if isinstance(ref, (tuple, list)) else ref
        np.save(os.path.join(folder, "ref.npy"), ref.numpy())
        m = model.cuda(); ci = [x.cuda() for x in ins]
        for _ in range(5): m(*ci)
        torch.cuda.synchronize()
        ts = []
        for _ in range(30):
            s0 = time.perf_counter(); m(*ci); torch.cuda.synchronize(); ts.append(time.perf_counter() - s0)
    res[name] = {"torch_cuda_p50_ms": float(np.median(ts) * 1e3), "export_s": time.time() - t0}
    print(name, res[name], flush=True)
json.dump(res, open(os.path.join(out, "torch.json"), "w"), indent=1)
