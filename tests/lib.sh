# Shared by the shell tests (sourced): a temporary folder $TMP removed on exit, pass/fail
# counters, and the checks. `finish` prints the tally and gives the script's exit status.
TMP=$(mktemp -d)
trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT
pass=0
failn=0

# check NAME EXPECTED_RC OUTPUT_REGEX -- COMMAND...: runs COMMAND, which must exit EXPECTED_RC
# (a number, or `nonzero`) and print something matching OUTPUT_REGEX (ERE; empty: anything) on
# stdout or stderr. Returns 1 on failure.
check() {
  local name=$1 want=$2 pattern=$3
  shift 4
  "$@" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [[ $want == nonzero && $rc -eq 0 ]] || [[ $want != nonzero && $rc -ne $want ]]; then
    echo "FAIL $name: exit $rc, expected $want"; sed 's/^/  /' "$TMP/err" "$TMP/out" | head -8
    failn=$((failn + 1)); return 1
  fi
  if [[ -n $pattern ]] && ! grep -Eq -e "$pattern" "$TMP/err" "$TMP/out"; then
    echo "FAIL $name: output does not match /$pattern/"; sed 's/^/  /' "$TMP/err" "$TMP/out" | head -8
    failn=$((failn + 1)); return 1
  fi
  echo "ok   $name"
  pass=$((pass + 1))
}
# ok NAME -- COMMAND: a check that must succeed.
ok() {
  local name=$1
  shift 2
  if "$@"; then good "$name"; else bad "$name"; fi
}
good() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; failn=$((failn + 1)); }
finish() {
  echo "$pass passed, $failn failed"
  [[ $failn -eq 0 ]]
}
