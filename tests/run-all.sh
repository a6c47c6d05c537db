#!/bin/sh
# Runs the given cmocka binaries, then tests/e2e-*.sh, and prints one summary line.
# Each e2e script exits 0 (pass), 77 (skipped, reason on its last line) or other (fail).
pass=0; fail=0; skip=0; failed=""
for t in "$@"; do
    echo "== $t"
    if "$t"; then pass=$((pass+1)); else fail=$((fail+1)); failed="$failed $t"; fi
done
for s in tests/e2e-*.sh; do
    [ -e "$s" ] || continue
    echo "== $s"
    sh "$s"; rc=$?
    if [ $rc -eq 0 ]; then pass=$((pass+1));
    elif [ $rc -eq 77 ]; then skip=$((skip+1)); echo "SKIPPED: $s";
    else fail=$((fail+1)); failed="$failed $s"; fi
done
echo "${PRECISION:-float}: $pass passed, $fail failed, $skip skipped"
[ -n "$failed" ] && echo "FAILED:$failed"
[ $fail -eq 0 ]
