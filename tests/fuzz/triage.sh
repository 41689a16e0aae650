#!/usr/bin/env bash
# Groups a campaign's findings by root cause: replays each input (crash-*, timeout-*, oom-*,
# leak-*) with the libFuzzer binary and prints one signature per input (the harness's message,
# or the sanitizer's summary and the first Triad or ONNX frame), then the counts per signature.
#
#   triage.sh FUZZER ARTIFACT_DIR [TIMEOUT_S]
set -uo pipefail
fuzzer=$1 dir=$2 limit=${3:-20}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
shopt -s nullglob
for a in "$dir"/crash-* "$dir"/timeout-* "$dir"/oom-* "$dir"/leak-* "$dir"/slow-unit-*; do
  timeout "$limit" "$fuzzer" -runs=1 -rss_limit_mb=2048 -malloc_limit_mb=2048 "$a" > "$tmp" 2>&1
  rc=$?
  sig=$(grep -m1 -E '^fuzz: ' "$tmp" | sed -E 's/[0-9]+/N/g' | cut -c1-160)
  if [[ -z $sig ]]; then
    what=$(grep -m1 -E 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error:|Assertion' "$tmp" |
      sed -E 's/^==[0-9]+==//; s/0x[0-9a-f]+/ADDR/g; s/[0-9]+/N/g' | cut -c1-100)
    frame=$(grep -m1 -E '^ +#[0-9]+ 0x[0-9a-f]+ in (triad::|onnx::|\(anonymous)' "$tmp" |
      sed -E 's/^ +#[0-9]+ 0x[0-9a-f]+ in //; s/\(.*//' | cut -c1-100)
    sig="$what @ $frame"
    ((rc == 124)) && sig="timeout (> ${limit} s) @ $frame"
    [[ $sig == " @ " ]] && sig="no finding on replay (rc $rc)"
  fi
  printf '%s\t%s\n' "$(basename "$a")" "$sig"
done | tee "$tmp.list"
echo
echo "by signature:"
cut -f2 "$tmp.list" | sort | uniq -c | sort -rn
rm -f "$tmp.list"
