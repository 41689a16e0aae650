#!/usr/bin/env python3
"""SIGKILL at random points of triad's compile, run, sim, bench and report --add, repeated.

After every kill: nothing Triad leaves on disk is corrupt or half-written (output .npy files load
and have the right shape; report.json parses as a complete report, report.md/html are whole; the
SQLite history passes `PRAGMA integrity_check` and `triad report --list` reads it; every CPU
compiled-model entry, Verilator build and OpenCL binary in the caches is absent or valid by its
manifest/checksum; an FPGA output folder with summary.json holds every file it lists), and the
next run, not killed, succeeds with the right answer (the interpreter's outputs; bit-exact RTL).

Before the kills: three processes compile the same model into one empty cache at once (all
succeed with the same outputs; one entry, no temporaries left).

The kill lands uniformly in [0, the scenario's un-killed duration]; half the kills hit triad
alone (its compiler and Verilator children run on as orphans, still writing into their build
folders), half its whole process group. Caches are emptied at random so that kills land in cold
compiles too.

Usage: kill_test.py TRIAD SOURCE_DIR [--kills N] [--seed S] [--scenarios cpu,gpu,fpga,bench,report]
Environment: TRIAD_FAULT_KILLS (default 10: the CTest run), TRIAD_FAULT_SEED (default: random,
printed so that a failure can be replayed). The issue's bar is 100 kills in a row:
    TRIAD_FAULT_KILLS=100 ctest -R faults.kill --output-on-failure
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import numpy as np

FNV_OFFSET = 0xCBF29CE484222325  # gpu/BinaryCache.cpp
TRIAD_FNV_OFFSET = 1469598103934665603  # ir/System.h's kFnvOffset (cache entry manifests)
FNV_PRIME = 0x100000001B3
MASK = (1 << 64) - 1
TEMP_RE = re.compile(r"\.tmp\.[0-9a-f]{8}\.\d+\.")


def fnv1a(data, h=FNV_OFFSET):
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK
    return h


class Failure(Exception):
    pass


def is_temp(name):
    return bool(TEMP_RE.search(name))


def check_entry(d):
    """A cache entry folder (ir/Files.h): manifest, then each file's size and FNV-1a."""
    m = os.path.join(d, ".triad-entry")
    if not os.path.exists(m):
        raise Failure(f"cache entry {d} has no manifest")
    lines = open(m).read().splitlines()
    if not lines or lines[0] != "triad-cache-entry 1" or len(lines) < 2:
        raise Failure(f"cache entry {d}: bad manifest {lines!r}")
    for line in lines[1:]:
        size, hx, name = line.split(" ", 2)
        data = open(os.path.join(d, name), "rb").read()
        if len(data) != int(size) or f"{fnv1a(data, TRIAD_FNV_OFFSET):016x}" != hx:
            raise Failure(f"cache entry {d}: {name} does not match its manifest")


def check_entry_root(root):
    """Every entry in a cache folder is valid; temporaries and lock files are allowed."""
    if not os.path.isdir(root):
        return 0
    n = 0
    for name in os.listdir(root):
        p = os.path.join(root, name)
        if is_temp(name) or name.endswith(".lock"):
            continue
        if re.fullmatch(r"[0-9a-f]{16}", name):
            check_entry(p)
            n += 1
        elif name == "kernels" and os.path.basename(root) == "cpu":
            check_entry_root(p)  # the CPU target's run-time kernels, compiled once per flags
        else:
            raise Failure(f"unexpected {p} in the cache")
    return n


def check_clbin_root(root):
    """OpenCL binary cache entries (gpu/BinaryCache.h): header, lengths, checksum."""
    if not os.path.isdir(root):
        return
    for name in os.listdir(root):
        if is_temp(name):
            continue
        p = os.path.join(root, name)
        data = open(p, "rb").read()
        magic = b"TRIAD-CLBIN 1\n"
        if not data.startswith(magic):
            raise Failure(f"{p}: bad header")
        rest = data[len(magic):]
        eol = rest.index(b"\n")
        key_len, bin_len, csum = rest[:eol].split()
        body = rest[eol + 1:]
        if len(body) != int(key_len) + int(bin_len):
            raise Failure(f"{p}: truncated ({len(body)} of {int(key_len) + int(bin_len)} bytes)")
        if f"{fnv1a(body[int(key_len):]):016x}" != csum.decode():
            raise Failure(f"{p}: checksum mismatch")


def check_no_stray(folder, allowed):
    """Only `allowed` names (and temporaries) in `folder`."""
    if not os.path.isdir(folder):
        return
    for name in os.listdir(folder):
        if not is_temp(name) and name not in allowed:
            raise Failure(f"unexpected {os.path.join(folder, name)}")


class Test:
    def __init__(self, a):
        self.triad = a.triad
        self.src = a.source_dir
        self.rng = random.Random(a.seed)
        self.tmp = tempfile.mkdtemp(prefix="triad-kill-")
        self.keep = a.keep
        self.groups = []  # process groups started, killed at the end
        t = self.tmp
        self.cache = os.path.join(t, "cache")
        self.out = os.path.join(t, "out")
        os.makedirs(self.out)
        os.makedirs(os.path.join(t, "tmp"))
        self.env = dict(os.environ)
        self.env.update(
            TRIAD_CACHE_DIR=self.cache,
            TRIAD_CXXFLAGS="-O0",  # correctness, not speed: short compiles
            TRIAD_THREADS="2",
            XDG_DATA_HOME=os.path.join(t, "xdg"),
            POCL_CACHE_DIR=os.path.join(t, "pocl"),  # PoCL's own kernel cache, kept across kills
            TMPDIR=os.path.join(t, "tmp"),
        )
        self.db = os.path.join(t, "hist.db")
        self.model = os.path.join(self.src, "models", "jet_mlp.onnx")
        self.x = os.path.join(t, "x.npy")
        np.save(self.x, np.load(os.path.join(self.src, "models", "jet_test_x.npy"))[:4])
        self.durations = {}
        self.killed = 0

    # -- processes ----------------------------------------------------------------------------

    def start(self, args, log):
        f = open(os.path.join(self.tmp, log), "wb")
        p = subprocess.Popen([self.triad] + args, env=self.env, stdout=f, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        f.close()
        self.groups.append(p.pid)
        return p

    def run(self, args, what, ok=(0,)):
        """Runs triad to the end; returns (rc, output, seconds)."""
        t0 = time.monotonic()
        p = self.start(args, "last.log")
        rc = p.wait()
        dt = time.monotonic() - t0
        out = open(os.path.join(self.tmp, "last.log"), errors="replace").read()
        if rc not in ok:
            raise Failure(f"{what}: triad {' '.join(args)} exited {rc}:\n{out[-3000:]}")
        return rc, out, dt

    def kill_during(self, args, limit):
        """Starts triad, SIGKILLs it (or its process group) after a random delay in [0, limit]."""
        delay = self.rng.uniform(0, limit)
        group = self.rng.random() < 0.5
        p = self.start(args, "killed.log")
        t0 = time.monotonic()
        while time.monotonic() - t0 < delay and p.poll() is None:
            time.sleep(min(0.005, delay))
        finished = p.poll() is not None
        if not finished:
            if group:
                os.killpg(p.pid, signal.SIGKILL)
            else:
                p.kill()
        p.wait()
        self.killed += not finished
        return f"{'finished before the kill' if finished else 'killed'} at {delay:.2f} s" + (
            " (process group)" if group and not finished else "")

    def wipe(self, path, p):
        if self.rng.random() < p:
            shutil.rmtree(path, ignore_errors=True)
            return True
        return False

    # -- checks -------------------------------------------------------------------------------

    def check_npy(self, path, shape):
        if not os.path.exists(path):
            return
        try:
            a = np.load(path)
        except Exception as e:
            raise Failure(f"{path} does not load: {e}")
        if a.shape != shape:
            raise Failure(f"{path} has shape {a.shape}, expected {shape}")

    def check_reports(self, d):
        if not os.path.isdir(d):
            return
        check_no_stray(d, {"report.json", "report.md", "report.html"})
        j = os.path.join(d, "report.json")
        if os.path.exists(j):
            try:
                r = json.load(open(j))
            except Exception as e:
                raise Failure(f"{j} does not parse: {e}")
            if r.get("schema") != "triad-bench/1" or r["run"]["status"] != "complete":
                raise Failure(f"{j} is not a complete report")
        h = os.path.join(d, "report.html")
        if os.path.exists(h) and not open(h).read().rstrip().endswith("</html>"):
            raise Failure(f"{h} is truncated")
        m = os.path.join(d, "report.md")
        if os.path.exists(m) and not open(m).read().startswith("# Triad benchmark"):
            raise Failure(f"{m} is not a report")

    def check_db(self):
        if not os.path.exists(self.db):
            return
        # triad's own reader first: it must cope with a hot journal a killed writer left.
        self.run(["report", "--list", "--db", self.db], "reading the history")
        c = sqlite3.connect(self.db)
        res = c.execute("PRAGMA integrity_check").fetchall()
        if res != [("ok",)]:
            raise Failure(f"{self.db}: integrity_check says {res}")
        c.close()

    def check_fpga_dir(self, d):
        if not os.path.isdir(d):
            return
        s = os.path.join(d, "summary.json")
        if os.path.exists(s):
            try:
                json.load(open(s))
            except Exception as e:
                raise Failure(f"{s} does not parse: {e}")
            for f in open(os.path.join(d, "rtl", "files.f")).read().splitlines():
                if f.startswith("//") or not f.strip():
                    continue
                if not os.path.exists(os.path.join(d, "rtl", os.path.basename(f))):
                    raise Failure(f"{d}: summary.json present but {f} is missing")
            self.check_npy(os.path.join(d, "expected_raw.npy"), (8, 2))
        check_entry_root(os.path.join(d, "obj"))

    def check_all(self):
        check_entry_root(os.path.join(self.cache, "cpu"))
        check_clbin_root(os.path.join(self.cache, "opencl"))
        for t in ("cpu", "gpu"):
            self.check_npy(os.path.join(self.out, f"{t}.npy"), (4, 5))
        self.check_reports(os.path.join(self.out, "bench"))
        self.check_db()
        self.check_fpga_dir(os.path.join(self.out, "fpga"))
        self.check_npy(os.path.join(self.out, "sim.npy"), (8, 2))

    def same(self, path, ref, tol=1e-4):
        y = np.load(path)
        if y.shape != ref.shape or not np.allclose(y, ref, rtol=tol, atol=1e-5):
            raise Failure(f"{path} differs from the reference")

    # -- scenarios ----------------------------------------------------------------------------
    # Each: (kill, recover); recover runs to the end and checks the answer.

    def run_target(self, target):
        args = ["run", self.model, "--target", target, "--batch", "4", "--input", self.x,
                "--output", os.path.join(self.out, f"{target}.npy")]
        return args

    def cpu_kill(self):
        cold = self.wipe(os.path.join(self.cache, "cpu"), 0.7)
        return ("cold " if cold else "") + self.kill_during(
            self.run_target("cpu"), self.durations["cpu" if cold else "cpu-warm"])

    def cpu_recover(self):
        self.run(self.run_target("cpu"), "cpu run")
        self.same(os.path.join(self.out, "cpu.npy"), self.ref)

    def gpu_kill(self):
        cold = self.wipe(os.path.join(self.cache, "opencl"), 0.7)
        return ("cold " if cold else "") + self.kill_during(
            self.run_target("gpu"), self.durations["gpu" if cold else "gpu-warm"])

    def gpu_recover(self):
        self.run(self.run_target("gpu"), "gpu run")
        self.same(os.path.join(self.out, "gpu.npy"), self.ref)

    def fpga_compile(self):
        return ["compile", self.tiny, "--target", "fpga", "-o", os.path.join(self.out, "fpga"),
                "--input", self.tx]

    def fpga_sim(self):
        d = os.path.join(self.out, "fpga")
        return ["sim", d, "--input", self.tx, "--json", os.path.join(self.out, "sim.json"),
                "--output", os.path.join(self.out, "sim.npy")]

    def fpga_kill(self):
        if self.rng.random() < 0.4 or not os.path.exists(
                os.path.join(self.out, "fpga", "summary.json")):
            return "compile " + self.kill_during(self.fpga_compile(), self.durations["fpga-compile"])
        cold = self.wipe(os.path.join(self.out, "fpga", "obj"), 0.5)
        return ("cold " if cold else "") + "sim " + self.kill_during(
            self.fpga_sim(), self.durations["fpga-sim" if cold else "fpga-sim-warm"])

    def fpga_recover(self):
        # A folder whose compile was cut is refused by triad sim (usage error, named) until
        # compiled again; a complete one simulates as it is.
        d = os.path.join(self.out, "fpga")
        if os.path.isdir(d) and not os.path.exists(os.path.join(d, "summary.json")):
            _, out, _ = self.run(self.fpga_sim(), "sim of an interrupted compile", ok=(2,))
            if "interrupted" not in out:
                raise Failure(f"sim of an interrupted compile: unclear error:\n{out}")
        if self.rng.random() < 0.5 or not os.path.exists(os.path.join(d, "summary.json")):
            self.run(self.fpga_compile(), "fpga compile")
        self.run(self.fpga_sim(), "sim")
        s = json.load(open(os.path.join(self.out, "sim.json")))
        if s["mismatches"] or s["missing"]:
            raise Failure(f"sim: {s['mismatches']} mismatches, {s['missing']} missing")
        self.same(os.path.join(self.out, "sim.npy"), self.sim_ref, tol=0)

    def bench_args(self):
        return ["bench", self.model, "--targets", "interp,cpu", "--repeat", "3", "--warmup", "1",
                "--rounds", "1", "-o", os.path.join(self.out, "bench"), "--db", self.db]

    def bench_kill(self):
        cold = self.wipe(os.path.join(self.cache, "cpu"), 0.3)
        return ("cold " if cold else "") + self.kill_during(
            self.bench_args(), self.durations["bench"] + (self.durations["cpu"] if cold else 0))

    def bench_recover(self):
        self.run(self.bench_args(), "bench")
        r = json.load(open(os.path.join(self.out, "bench", "report.json")))
        st = {x["target"]: x["status"] for x in r["results"]}
        if st.get("cpu") != "ok" or st.get("interp") != "ok":
            raise Failure(f"bench results: {st}")
        self.check_db()

    def report_file(self):
        """A report with a fresh run id and many results (a longer transaction to land in)."""
        self.report_n = getattr(self, "report_n", 0) + 1
        r = json.loads(self.report_template)
        r["run"]["id"] = f"kill-{self.report_n:04d}"
        r["results"] = (r["results"] * (3000 // max(1, len(r["results"])) + 1))[:3000]
        p = os.path.join(self.tmp, "add.json")
        json.dump(r, open(p, "w"))
        return p, r["run"]["id"], len(r["results"])

    def report_kill(self):
        self.pending = self.report_file()
        return self.kill_during(["report", "--add", self.pending[0], "--db", self.db],
                                self.durations["report"])

    def report_recover(self):
        p, rid, n = self.pending
        rc, out, _ = self.run(["report", "--add", p, "--db", self.db], "report --add", ok=(0, 2))
        if rc == 2 and "already in the benchmark history" not in out:
            raise Failure(f"report --add: {out}")
        c = sqlite3.connect(self.db)
        runs = c.execute("SELECT count(*) FROM runs WHERE id = ?", (rid,)).fetchone()[0]
        res = c.execute("SELECT count(*) FROM results WHERE run_id = ?", (rid,)).fetchone()[0]
        c.close()
        if runs != 1 or res != n:
            raise Failure(f"history: run {rid} stored {runs} times with {res} of {n} results")

    # -- set-up -------------------------------------------------------------------------------

    def opencl(self):
        rc, out, _ = self.run(["devices"], "devices", ok=(0, 5))
        return rc == 0

    def verilator(self):
        return shutil.which("verilator") is not None

    def setup(self, scenarios):
        py = os.path.join(self.src, ".venv", "bin", "python")
        self.tiny = os.path.join(self.tmp, "tiny.onnx")
        self.tx = os.path.join(self.tmp, "tx.npy")
        _, _, _ = self.run(["run", self.model, "--batch", "4", "--input", self.x, "--output",
                            os.path.join(self.tmp, "ref.npy")], "interpreter reference")
        self.ref = np.load(os.path.join(self.tmp, "ref.npy"))
        avail = []
        for s in scenarios:
            if s == "gpu" and not self.opencl():
                print("SKIP gpu: no OpenCL device")
                continue
            if s == "fpga" and not self.verilator():
                print("SKIP fpga: verilator is not on PATH")
                continue
            avail.append(s)
        # Un-killed durations (cold caches) bound the kill delays.
        if "cpu" in avail or "bench" in avail:
            _, _, self.durations["cpu"] = self.run(self.run_target("cpu"), "cpu run")
            _, _, self.durations["cpu-warm"] = self.run(self.run_target("cpu"), "cpu run")
            self.same(os.path.join(self.out, "cpu.npy"), self.ref)
        if "gpu" in avail:
            self.run(self.run_target("gpu"), "gpu run (PoCL's own cache)")
            shutil.rmtree(os.path.join(self.cache, "opencl"))
            _, _, self.durations["gpu"] = self.run(self.run_target("gpu"), "gpu run")
            _, _, self.durations["gpu-warm"] = self.run(self.run_target("gpu"), "gpu run")
            self.same(os.path.join(self.out, "gpu.npy"), self.ref)
        if "fpga" in avail:
            subprocess.run([py, "-c", TINY_MODEL, self.tiny, self.tx], check=True)
            _, _, self.durations["fpga-compile"] = self.run(self.fpga_compile(), "fpga compile")
            _, _, self.durations["fpga-sim"] = self.run(self.fpga_sim(), "sim")
            _, _, self.durations["fpga-sim-warm"] = self.run(self.fpga_sim(), "sim")
            self.sim_ref = np.load(os.path.join(self.out, "sim.npy"))
        if "bench" in avail or "report" in avail:
            _, _, self.durations["bench"] = self.run(self.bench_args(), "bench")
            self.report_template = open(os.path.join(self.out, "bench", "report.json")).read()
        if "report" in avail:
            p, _, _ = self.report_file()
            _, _, self.durations["report"] = self.run(["report", "--add", p, "--db", self.db],
                                                      "report --add")
        self.check_all()
        return avail

    def concurrent(self):
        """Three processes compile one model into one empty cache at once."""
        shutil.rmtree(os.path.join(self.cache, "cpu"), ignore_errors=True)
        procs = []
        for i in range(3):
            procs.append(self.start(["run", self.model, "--target", "cpu", "--batch", "4",
                                     "--input", self.x, "--output",
                                     os.path.join(self.out, f"conc{i}.npy")], f"conc{i}.log"))
        for i, p in enumerate(procs):
            if p.wait() != 0:
                raise Failure(f"concurrent compile {i} failed:\n" +
                              open(os.path.join(self.tmp, f"conc{i}.log")).read())
            self.same(os.path.join(self.out, f"conc{i}.npy"), self.ref)
            os.remove(os.path.join(self.out, f"conc{i}.npy"))
        root = os.path.join(self.cache, "cpu")
        if check_entry_root(root) != 1 or any(is_temp(n) for n in os.listdir(root)):
            raise Failure(f"concurrent compiles left {sorted(os.listdir(root))}")
        print("ok   three concurrent cold compiles of one model: one cache entry, same outputs")

    def cleanup(self):
        for g in self.groups:
            try:
                os.killpg(g, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if not self.keep:
            shutil.rmtree(self.tmp, ignore_errors=True)


TINY_MODEL = r"""
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
w1 = np.array([[0.37, -0.61, 1.23, -0.83], [0.71, 0.29, -1.37, 0.43],
               [-0.91, 1.11, 0.57, -0.33]], np.float32)
w2 = np.array([[1.31, -0.77, 0.39], [-0.59, 0.93, -1.17]], np.float32)
init = [numpy_helper.from_array(w1, "w1"),
        numpy_helper.from_array(np.array([0.1, -0.2, 0.3], np.float32), "b1"),
        numpy_helper.from_array(w2, "w2"),
        numpy_helper.from_array(np.array([0.05, -0.15], np.float32), "b2")]
nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="/fc1/Gemm", transB=1),
         helper.make_node("Relu", ["h"], ["r"], name="/Relu"),
         helper.make_node("Gemm", ["r", "w2", "b2"], ["y"], name="/fc2/Gemm", transB=1)]
g = helper.make_graph(nodes, "tiny",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])], init)
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
np.save(sys.argv[2], np.random.default_rng(1).uniform(-1, 1, (8, 4)).astype(np.float32))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("triad")
    ap.add_argument("source_dir")
    ap.add_argument("--kills", type=int, default=int(os.environ.get("TRIAD_FAULT_KILLS", "10")))
    ap.add_argument("--seed", type=int,
                    default=int(os.environ.get("TRIAD_FAULT_SEED", str(random.randrange(1 << 30)))))
    ap.add_argument("--scenarios", default="cpu,gpu,fpga,bench,report")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    a = ap.parse_args()
    print(f"kill test: {a.kills} kills, seed {a.seed} (replay: TRIAD_FAULT_SEED={a.seed})")
    t = Test(a)
    t0 = time.monotonic()
    done = 0
    try:
        avail = t.setup(a.scenarios.split(","))
        print("un-killed durations: " +
              ", ".join(f"{k} {v:.2f} s" for k, v in sorted(t.durations.items())))
        t.concurrent()
        order = []
        for i in range(a.kills):
            if not order:
                order = list(avail)
                t.rng.shuffle(order)
            s = order.pop()
            how = getattr(t, f"{s}_kill")()
            try:
                t.check_all()
                getattr(t, f"{s}_recover")()
                t.check_all()
            except Failure as e:
                raise Failure(f"kill {i + 1} ({s}, {how}): {e}")
            done += 1
            print(f"ok   kill {i + 1:3d}/{a.kills}: {s:6s} {how}", flush=True)
    except Failure as e:
        print(f"FAIL {e}")
        print(f"after {done} kills in a row; seed {a.seed}; files kept in {t.tmp}")
        t.keep = True
        return 1
    finally:
        t.cleanup()
    print(f"PASS: {done} kills in a row ({t.killed} landed before the run ended), nothing "
          f"corrupt, every next run right ({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
