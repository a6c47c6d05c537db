#!/bin/sh
# Runs the given cmocka binaries, then tests/e2e-*.sh, and prints one summary line.
# Each binary and script exits 0 (pass), 77 (skipped, wholly or in part: the reason printed, a
# cmocka suite's after cmocka's own summary) or other (fail).
pass=0; fail=0; skip=0; failed=""
count() {
    if [ $1 -eq 0 ]; then pass=$((pass+1));
    elif [ $1 -eq 77 ]; then skip=$((skip+1)); echo "SKIPPED: $2";
    else fail=$((fail+1)); failed="$failed $2"; fi
}
for t in "$@"; do
    echo "== $t"
    "$t"; count $? "$t"
done
for s in tests/e2e-*.sh; do
    [ -e "$s" ] || continue
    echo "== $s"
    sh "$s"; count $? "$s"
done
echo "${PRECISION:-float}: $pass passed, $fail failed, $skip skipped"
[ -n "$failed" ] && echo "FAILED:$failed"
[ $fail -eq 0 ]
