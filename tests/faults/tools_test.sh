#!/usr/bin/env bash
# Missing or broken tools and an unwritable or full cache folder (docs/reliability.md, "Faults and
# interruptions"): each is a clear error naming the tool or path with its documented exit code,
# and the other targets still work in the same environment.
#
# - no C++ compiler (TRIAD_CXX names a file that does not exist): exit 3 naming it; a compiler
#   that fails everything: exit 3; one that runs but builds nothing: exit 2 naming it and its
#   flags. interp, fpga and gpu still run; triad bench reports cpu failed (named), the rest ok.
# - no OpenCL platform (OCL_ICD_VENDORS on an empty folder): --target gpu and triad devices exit 5;
#   triad bench reports gpu skipped, triad partition leaves gpu out with a note; cpu still runs.
# - no verilator / no yosys on PATH: triad sim / triad synth exit 3 naming them; compile --target
#   fpga and the other targets still work.
# - an unwritable cache folder (TRIAD_CACHE_DIR under a regular file: root ignores chmod):
#   --target cpu exits 3 naming the folder; gpu runs (its binary cache is optional) with a warning
#   naming it; outputs and the history under a file exit 3.
# - where this container may mount (unshare -m + tmpfs): a read-only tmpfs (Read-only file system)
#   and a full 1 MiB tmpfs (No space left on device): the same, and a failed write keeps the old
#   output, report and history whole and leaves no temporary behind. Without mounts those cases
#   print SKIP and a file-size limit stands in for the full disk (ulimit -f, SIGXFSZ ignored:
#   "File too large").
# Usage: tools_test.sh TRIAD_BINARY SOURCE_DIR
set -u
TRIAD=$1
SRC=$2
if [[ ${3:-} == --mounted ]]; then # the second half, inside a private mount namespace
  TMP=$4
else
  TMP=$(mktemp -d)
  trap 'umount "$TMP/ro" "$TMP/full" 2>/dev/null; rm -rf "$TMP"' EXIT
fi
pass=0
failn=0

check() { # name expected_rc expected_output_regex -- command...
  local name=$1 want=$2 pattern=$3
  shift 4
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [[ $rc -ne $want ]]; then
    echo "FAIL $name: exit $rc, expected $want"; sed 's/^/  /' "$TMP/err" "$TMP/out" | head -8
    failn=$((failn + 1)); return
  fi
  if [[ -n $pattern ]] && ! grep -Eq -e "$pattern" "$TMP/err" "$TMP/out"; then
    echo "FAIL $name: output does not match /$pattern/"; sed 's/^/  /' "$TMP/err" "$TMP/out" | head -8
    failn=$((failn + 1)); return
  fi
  echo "ok   $name"
  pass=$((pass + 1))
}
ok() { # name -- command: a check that must succeed
  local name=$1
  shift 2
  if "$@"; then echo "ok   $name"; pass=$((pass + 1)); else echo "FAIL $name"; failn=$((failn + 1)); fi
}
finish() {
  echo "$pass passed, $failn failed"
  [[ $failn -eq 0 ]]
  exit $?
}

PY=$SRC/.venv/bin/python
M=$SRC/models/jet_mlp.onnx
X=$TMP/x.npy
R=$SRC/tests/data/bench_report_sample.json
export TRIAD_CXXFLAGS=-O0 TRIAD_CACHE_DIR=$TMP/cache XDG_DATA_HOME=$TMP/xdg TRIAD_THREADS=2
run() { "$TRIAD" run "$M" --batch 4 --input "$X" "$@"; }
HAVE_GPU=0
"$TRIAD" devices >/dev/null 2>&1 && HAVE_GPU=1
no_temps() { # folder: no temporaries (".*.tmp.*") left anywhere under it
  [[ -z $(find "$1" -name '*.tmp.*' 2>/dev/null) ]]
}
same_file() { cmp -s "$1" "$2"; }
runs_in() { # db: number of runs in the history
  "$PY" -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); assert c.execute('PRAGMA integrity_check').fetchone()[0]=='ok'; print(c.execute('select count(*) from runs').fetchone()[0])" "$1"
}

# ---- read-only and full tmpfs (run again inside `unshare -m`) --------------------------------
if [[ ${3:-} == --mounted ]]; then
  mount -t tmpfs -o ro,size=1m tmpfs "$TMP/ro" || exit 1
  # The full one: an output, a report and a history written first, then filled to the last block.
  mount -t tmpfs -o size=1m tmpfs "$TMP/full" || exit 1
  cp "$TMP/keep.npy" "$TMP/full/y.npy"
  cp -r "$TMP/bench" "$TMP/full/bench"
  cp "$TMP/h.db" "$TMP/full/h.db"
  dd if=/dev/zero of="$TMP/full/fill" bs=4k 2>/dev/null
  dd if=/dev/zero of="$TMP/full/fill2" bs=512 2>/dev/null

  check ro-cpu 3 "'$TMP/ro/cache/cpu'.*Read-only file system" -- env TRIAD_CACHE_DIR="$TMP/ro/cache" "$TRIAD" run "$M" --batch 4 --input "$X" --target cpu
  if [[ $HAVE_GPU == 1 ]]; then
    check ro-gpu-runs-with-warning 0 "warning: the OpenCL binary cache is not written: .*$TMP/ro/cache/opencl.*Read-only" -- env TRIAD_CACHE_DIR="$TMP/ro/cache" "$TRIAD" run "$M" --batch 4 --input "$X" --target gpu
  fi
  check ro-interp-runs 0 "" -- env TRIAD_CACHE_DIR="$TMP/ro/cache" "$TRIAD" run "$M" --batch 4 --input "$X"
  check ro-output 3 "'$TMP/ro/y.npy'.*Read-only file system" -- run --output "$TMP/ro/y.npy"
  check ro-report 3 "'$TMP/ro/r.md': Read-only file system" -- "$TRIAD" report "$R" --md "$TMP/ro/r.md"
  check ro-bench 3 "$TMP/ro/bench.*Read-only file system" -- "$TRIAD" bench "$M" --targets interp --repeat 2 --warmup 1 --rounds 1 -o "$TMP/ro/bench" --no-db
  check ro-history 3 "$TMP/ro/h.db" -- "$TRIAD" report --add "$R" --db "$TMP/ro/h.db"

  check full-cpu 3 "No space left on device" -- env TRIAD_CACHE_DIR="$TMP/full/cache" "$TRIAD" run "$M" --batch 4 --input "$X" --target cpu
  ok full-cpu-leaves-no-temporaries -- no_temps "$TMP/full"
  if [[ $HAVE_GPU == 1 ]]; then
    check full-gpu-runs-with-warning 0 "warning: the OpenCL binary cache is not written: .*No space left on device" -- env TRIAD_CACHE_DIR="$TMP/full/cache" "$TRIAD" run "$M" --batch 4 --input "$X" --target gpu
  fi
  check full-output 3 "writing '$TMP/full/y.npy' failed: No space left on device" -- run --output "$TMP/full/y.npy" --repeat 1
  ok full-output-keeps-old-file -- same_file "$TMP/keep.npy" "$TMP/full/y.npy"
  check full-bench 3 "$TMP/full/bench/report.*No space left on device" -- "$TRIAD" bench "$M" --targets interp --repeat 2 --warmup 1 --rounds 1 -o "$TMP/full/bench" --no-db
  ok full-bench-keeps-old-report -- diff -r "$TMP/bench" "$TMP/full/bench"
  check full-history 3 "$TMP/full/h.db.*(full|No space)" -- "$TRIAD" report --add "$SRC/tests/data/bench_report_sample.json" --db "$TMP/full/h.db"
  ok full-history-intact -- test "$(runs_in "$TMP/full/h.db")" = 1
  ok full-leaves-no-temporaries -- no_temps "$TMP/full"
  echo "$pass $failn" >"$TMP/mounted.counts"
  exit 0
fi

"$PY" -c "import numpy as n,sys; n.save(sys.argv[1], n.load(sys.argv[2])[:4])" "$X" "$SRC/models/jet_test_x.npy"

# ---- no C++ compiler, a failing compiler ---------------------------------------------------
check cxx-missing 3 "C\+\+ compiler '/nonexistent/bin/c\+\+' does not run" -- env TRIAD_CXX=/nonexistent/bin/c++ "$TRIAD" run "$M" --batch 4 --input "$X" --target cpu
check cxx-missing-interp-runs 0 "ran on interp" -- env TRIAD_CXX=/nonexistent/bin/c++ "$TRIAD" run "$M" --batch 4 --input "$X"
check cxx-missing-fpga-runs 0 "ran on fpga" -- env TRIAD_CXX=/nonexistent/bin/c++ "$TRIAD" run "$M" --batch 4 --input "$X" --target fpga
if [[ $HAVE_GPU == 1 ]]; then
  check cxx-missing-gpu-runs 0 "ran on gpu" -- env TRIAD_CXX=/nonexistent/bin/c++ "$TRIAD" run "$M" --batch 4 --input "$X" --target gpu
fi
check cxx-missing-bench 0 "" -- env TRIAD_CXX=/nonexistent/bin/c++ "$TRIAD" bench "$M" --targets interp,cpu,fpga --repeat 2 --warmup 1 --rounds 1 -o "$TMP/b-nocxx" --no-db
ok cxx-missing-bench-names-it -- "$PY" -c "
import json,sys; r={x['target']: x for x in json.load(open(sys.argv[1]))['results']}
assert r['interp']['status'] == 'ok' and r['fpga']['status'] == 'ok', r
assert r['cpu']['status'] == 'failed' and '/nonexistent/bin/c++' in r['cpu']['why'], r['cpu']" "$TMP/b-nocxx/report.json"

printf '#!/bin/sh\necho "garbage \\001\\002"; exit 1\n' >"$TMP/cxx-fails"
printf '#!/bin/sh\ncase "$*" in *--version*) echo "fake c++ 1.0";; *) echo "garbage: $*"; exit 1;; esac\n' >"$TMP/cxx-broken"
printf '#!/bin/sh\necho garbage\nexit 0\n' >"$TMP/cxx-silent"
chmod +x "$TMP/cxx-fails" "$TMP/cxx-broken" "$TMP/cxx-silent"
check cxx-fails 3 "C\+\+ compiler '$TMP/cxx-fails' does not run" -- env TRIAD_CXX="$TMP/cxx-fails" "$TRIAD" run "$M" --batch 4 --input "$X" --target cpu
# (A sanitized triad appends its -fsanitize flags to the generated code's: docs/reliability.md.)
check cxx-builds-nothing 2 "C\+\+ compiler '$TMP/cxx-broken' with flags '-O0( -fsanitize[^']*)?' cannot build even an empty library" -- env TRIAD_CXX="$TMP/cxx-broken" "$TRIAD" run "$M" --batch 4 --input "$X" --target cpu
check cxx-exits-0-without-output 2 "C\+\+ compiler '$TMP/cxx-silent' .*cannot build even an empty library" -- env TRIAD_CXX="$TMP/cxx-silent" "$TRIAD" run "$M" --batch 4 --input "$X" --target cpu
ok cxx-failures-leave-no-temporaries -- no_temps "$TMP/cache"

# ---- no OpenCL platform ----------------------------------------------------------------------
mkdir -p "$TMP/no-icd"
export_noocl() { env OCL_ICD_VENDORS="$TMP/no-icd" "$@"; }
check noocl-gpu 5 "no OpenCL device found" -- export_noocl "$TRIAD" run "$M" --batch 4 --input "$X" --target gpu
check noocl-devices 5 "no OpenCL device found" -- export_noocl "$TRIAD" devices
check noocl-cpu-runs 0 "ran on cpu" -- export_noocl "$TRIAD" run "$M" --batch 4 --input "$X" --target cpu
check noocl-bench 0 "" -- export_noocl "$TRIAD" bench "$M" --targets cpu,gpu,auto --repeat 2 --warmup 1 --rounds 1 -o "$TMP/b-noocl" --no-db
ok noocl-bench-skips-gpu -- "$PY" -c "
import json,sys; r={x['target']: x for x in json.load(open(sys.argv[1]))['results']}
assert r['cpu']['status'] == 'ok' and r['auto']['status'] == 'ok', r
assert r['gpu']['status'] == 'skipped' and 'no OpenCL device' in r['gpu']['why'], r['gpu']" "$TMP/b-noocl/report.json"
check noocl-partition 0 "gpu: left out of the plan: no OpenCL device" -- export_noocl "$TRIAD" partition "$M" --targets cpu,gpu,fpga

# ---- no verilator, no yosys --------------------------------------------------------------------
mkdir -p "$TMP/bin"
for d in /usr/local/bin /usr/bin /bin; do
  for f in "$d"/*; do
    n=${f##*/}
    [[ -e $TMP/bin/$n || $n == verilator* || $n == yosys* ]] || ln -s "$f" "$TMP/bin/$n"
  done
done
check fpga-compile-without-tools 0 "jet_mlp: 8 layers" -- env PATH="$TMP/bin" "$TRIAD" compile "$M" --target fpga -o "$TMP/fpga" --input "$X"
check no-verilator 3 "verilator is not on PATH" -- env PATH="$TMP/bin" "$TRIAD" sim "$TMP/fpga" --input "$X"
check no-verilator-fpga-rtl 3 "verilator is not on PATH" -- env PATH="$TMP/bin" "$TRIAD" run "$M" --batch 4 --input "$X" --target fpga --fpga-rtl
check no-yosys 3 "yosys is not on PATH" -- env PATH="$TMP/bin" "$TRIAD" synth "$TMP/fpga"
check no-tools-cpu-runs 0 "ran on cpu" -- env PATH="$TMP/bin" "$TRIAD" run "$M" --batch 4 --input "$X" --target cpu
check no-tools-fpga-emulator-runs 0 "ran on fpga" -- env PATH="$TMP/bin" "$TRIAD" run "$M" --batch 4 --input "$X" --target fpga

# ---- an unwritable cache folder: a path under a regular file -----------------------------------
touch "$TMP/afile"
check unwritable-cpu 3 "'$TMP/afile/cache/cpu': Not a directory .*TRIAD_CACHE_DIR" -- env TRIAD_CACHE_DIR="$TMP/afile/cache" "$TRIAD" run "$M" --batch 4 --input "$X" --target cpu
if [[ $HAVE_GPU == 1 ]]; then
  check unwritable-gpu-runs-with-warning 0 "warning: the OpenCL binary cache is not written: .*$TMP/afile/cache/opencl" -- env TRIAD_CACHE_DIR="$TMP/afile/cache" "$TRIAD" run "$M" --batch 4 --input "$X" --target gpu
fi
check unwritable-interp-runs 0 "ran on interp" -- env TRIAD_CACHE_DIR="$TMP/afile/cache" "$TRIAD" run "$M" --batch 4 --input "$X"
check unwritable-fpga-runs 0 "ran on fpga" -- env TRIAD_CACHE_DIR="$TMP/afile/cache" "$TRIAD" run "$M" --batch 4 --input "$X" --target fpga
check unwritable-bench 0 "" -- env TRIAD_CACHE_DIR="$TMP/afile/cache" "$TRIAD" bench "$M" --targets interp,cpu --repeat 2 --warmup 1 --rounds 1 -o "$TMP/b-unwritable" --no-db
ok unwritable-bench-names-it -- "$PY" -c "
import json,sys; r={x['target']: x for x in json.load(open(sys.argv[1]))['results']}
assert r['interp']['status'] == 'ok', r
assert r['cpu']['status'] == 'failed' and sys.argv[2] in r['cpu']['why'], r['cpu']" "$TMP/b-unwritable/report.json" "$TMP/afile/cache/cpu"
check unwritable-output 3 "cannot write '$TMP/afile/y.npy'" -- run --output "$TMP/afile/y.npy"
check unwritable-history 3 "$TMP/afile/h.db" -- "$TRIAD" report --add "$R" --db "$TMP/afile/h.db"

# ---- a full disk without mounts: a file-size limit (EFBIG) -------------------------------------
# 150 KiB: the generated sources fit, the compiled model (about 170 KiB at -O0) does not.
check fsize-limit-cpu 3 "cannot write the compiled model in .*File too large" -- bash -c 'trap "" XFSZ; ulimit -f 150; exec "$@"' _ env TRIAD_CACHE_DIR="$TMP/fsize" "$TRIAD" run "$M" --batch 4 --input "$X" --target cpu
ok fsize-limit-no-temporaries -- no_temps "$TMP/fsize"
# 1 KiB: the outputs of 64 rows (1,280 bytes of data) do not fit; the old file stays.
"$PY" -c "import numpy as n,sys; n.save(sys.argv[1], n.load(sys.argv[2])[:64])" "$TMP/x64.npy" "$SRC/models/jet_test_x.npy"
run --output "$TMP/old.npy" >/dev/null 2>&1
cp "$TMP/old.npy" "$TMP/old-copy.npy"
check fsize-limit-output 3 "writing '$TMP/old.npy' failed: File too large" -- bash -c 'trap "" XFSZ; ulimit -f 1; exec "$@"' _ "$TRIAD" run "$M" --batch 64 --input "$TMP/x64.npy" --output "$TMP/old.npy"
ok fsize-limit-keeps-old-file -- same_file "$TMP/old.npy" "$TMP/old-copy.npy"
ok fsize-limit-output-no-temporaries -- no_temps "$TMP"

# ---- read-only and full tmpfs, where mounts are allowed --------------------------------------
mkdir -p "$TMP/ro" "$TMP/full" "$TMP/probe"
if unshare -m sh -c "mount -t tmpfs -o size=64k tmpfs '$TMP/probe'" 2>"$TMP/mount.err"; then
  run --output "$TMP/keep.npy" >/dev/null 2>&1
  "$TRIAD" bench "$M" --targets interp --repeat 2 --warmup 1 --rounds 1 -o "$TMP/bench" --no-db >/dev/null 2>&1
  "$TRIAD" report --add "$R" --db "$TMP/h.db" >/dev/null
  unshare -m "$0" "$TRIAD" "$SRC" --mounted "$TMP"
  if [[ -f $TMP/mounted.counts ]]; then
    read -r p f <"$TMP/mounted.counts"
    pass=$((pass + p)) failn=$((failn + f))
  else
    echo "FAIL the mounted cases did not run"; failn=$((failn + 1))
  fi
else
  echo "SKIP read-only and full tmpfs cases: this container cannot mount ($(head -1 "$TMP/mount.err")); the file-size limit above stands in for a full disk"
fi
finish
