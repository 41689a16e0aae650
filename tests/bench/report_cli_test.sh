#!/usr/bin/env bash
# `triad report` end to end on tests/data/bench_report_sample.json: re-rendering, the SQLite
# history (--add, --list), --compare with and without --fail-on-regression, and must-fail
# inputs (missing file, not JSON, another schema, unknown run id) with their exit codes.
# Usage: report_cli_test.sh TRIAD_BINARY SOURCE_DIR
set -u
TRIAD=$1
SRC=$2
source "$(dirname "$0")/../lib.sh"

R=$SRC/tests/data/bench_report_sample.json
DB=$TMP/hist/bench.db
ID1=20261124T184617Z-3f2a
ID2=20261125T090000Z-77aa

check help 0 "--compare" -- "$TRIAD" report --help
check markdown-stdout 0 "^## Latency and throughput" -- "$TRIAD" report "$R"
check render-files 0 "wrote .*report.html" -- "$TRIAD" report "$R" --html "$TMP/report.html" --md "$TMP/report.md"
ok html-written -- grep -q 'id="chart-partition"' "$TMP/report.html"
ok md-written -- grep -q '^| cpu | 1 | 2.31 | 50 |' "$TMP/report.md"

# The history: two runs, the second slower on the CPU at batch 1.
python3 - "$R" "$TMP/slower.json" "$ID2" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
r["run"]["id"] = sys.argv[3]
r["run"]["started"] = "2026-11-25T09:00:00Z"
for x in r["results"]:
    if x["target"] == "cpu" and x["batch"] == 1:
        x["latency_ms"]["p50"] *= 1.2
        x["latency_ms"]["mean"] *= 1.2
        x["throughput_per_s"] /= 1.2
json.dump(r, open(sys.argv[2], "w"))
PYEOF
check add-1 0 "added run $ID1" -- "$TRIAD" report "$R" --add --db "$DB"
check add-2 0 "added run $ID2" -- "$TRIAD" report "$TMP/slower.json" --add --db "$DB"
check add-again 2 "already in the benchmark history" -- "$TRIAD" report "$R" --add --db "$DB"
check list 0 "2 runs in" -- "$TRIAD" report --db "$DB" --list
ok list-rows -- grep -q "^$ID1 .*digits_cnn .*39d707f .*ci-1 .*12\$" "$TMP/out"
check render-from-db 0 "^# Triad benchmark: digits_cnn" -- "$TRIAD" report "$ID2" --db "$DB"
check compare-ids 0 "REGRESSION.*slower: p50 \+20\.0%" -- "$TRIAD" report --compare "$ID1" "$ID2" --db "$DB"
check compare-fail 1 "1 regression" -- "$TRIAD" report --compare "$ID1" "$ID2" --db "$DB" --fail-on-regression
check compare-threshold 0 "No regressions \(threshold 25%\)" -- "$TRIAD" report --compare "$ID1" "$ID2" --db "$DB" --threshold 0.25 --fail-on-regression
check compare-same 0 "No regressions" -- "$TRIAD" report --compare "$ID1" "$ID1" --db "$DB" --fail-on-regression
check compare-files 1 "REGRESSION" -- "$TRIAD" report --compare "$R" "$TMP/slower.json" --fail-on-regression
check compare-mixed 0 "faster: p50" -- "$TRIAD" report --compare "$TMP/slower.json" "$ID1" --db "$DB"
check compare-prefix 0 "\| Run \| $ID1 \| $ID2 \|" -- "$TRIAD" report --compare 20261124 20261125 --db "$DB"

# Must-fail inputs: a clear message naming the culprit, the documented exit code, no crash.
echo "not json {" >"$TMP/bad.json"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); r["schema"]="triad-bench/2"; json.dump(r, open(sys.argv[2],"w"))' "$R" "$TMP/v2.json"
echo '{"hello": 1}' >"$TMP/other.json"
check missing-file 3 "missing\.json" -- "$TRIAD" report "$TMP/missing.json"
check not-json 3 "bad\.json' is not JSON" -- "$TRIAD" report "$TMP/bad.json"
check other-json 3 "other\.json' is not a Triad benchmark report" -- "$TRIAD" report "$TMP/other.json"
check newer-schema 5 "triad-bench/2" -- "$TRIAD" report "$TMP/v2.json"
check unknown-id 2 "no run 'nosuchrun'" -- "$TRIAD" report nosuchrun --db "$DB"
check no-history 3 "no benchmark history at" -- "$TRIAD" report --list --db "$TMP/none.db"
check no-mode 2 "give one of" -- "$TRIAD" report
check two-modes 2 "give one of" -- "$TRIAD" report "$R" --list
check compare-one-arg 2 "" -- "$TRIAD" report --compare "$ID1"
check bad-threshold 2 "threshold" -- "$TRIAD" report --compare "$ID1" "$ID2" --db "$DB" --threshold -1
echo "garbage, not sqlite" >"$TMP/junk.db"
check junk-db 3 "junk\.db" -- "$TRIAD" report "$R" --add --db "$TMP/junk.db"
ok junk-db-intact -- grep -q "garbage, not sqlite" "$TMP/junk.db"
check html-to-missing-dir 3 "nodir" -- "$TRIAD" report "$R" --html "$TMP/nodir/report.html"

echo "report cli: $pass passed, $failn failed"
[[ $failn -eq 0 ]]
