#!/bin/sh
# Runs the given cmocka binaries, then tests/e2e-*.sh (not with --units first), and prints one summary line.
# Each binary and script exits 0 (pass), 77 (skipped, wholly or in part: the reason printed, a
# cmocka suite's after cmocka's own summary) or other (fail).
pass=0; fail=0; skip=0; failed=""
count() {
    if [ $1 -eq 0 ]; then pass=$((pass+1));
    elif [ $1 -eq 77 ]; then skip=$((skip+1)); echo "SKIPPED: $2";
    else fail=$((fail+1)); failed="$failed $2"; fi
}
units=0
[ "${1:-}" = --units ] && { units=1; shift; }
for t in "$@"; do
    echo "== $t"
    "$t"; count $? "$t"
done
for s in tests/e2e-*.sh; do
    [ $units -eq 0 ] && [ -e "$s" ] || continue
    echo "== $s"
    sh "$s"; count $? "$s"
done
what=${PRECISION:-float}
[ $units -eq 1 ] && what="$what ($BUILD, the suites only)"
echo "$what: $pass passed, $fail failed, $skip skipped"
[ -n "$failed" ] && echo "FAILED:$failed"
[ $fail -eq 0 ]
