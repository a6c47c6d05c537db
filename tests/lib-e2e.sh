# lib-e2e.sh — the preamble shared by the end-to-end tests that run the PyTorch reference
# (scripts/reference/); each sources it first:  . "$(dirname "$0")/lib-e2e.sh"
# Not a test itself, and named so that tests/run-all.sh (which runs tests/e2e-*.sh) does not run it.
# Sourcing it changes to the repository root; then:
#   e2e_need_reference   PY = $REF_PYTHON (override only to test the skip path) or /usr/bin/python3;
#                        exit 77 with a SKIPPED line unless it exists and imports torch, h5py, numpy
#   e2e_need_bin         BUILD = ${BUILD:-build}, BIN = $BUILD/deberta; exit 1 with a FAIL line unless built
#   e2e_need_h5py        PY = $REF_PYTHON or /usr/bin/python3; exit 77 with a SKIPPED line unless it
#                        imports h5py and numpy
#   e2e_need_mpi BIN     exit 77 with a SKIPPED line unless mpirun exists and BIN is linked with MPI
#   e2e_tmpdir VAR NAME  VAR = a new directory /tmp/NAME-XXXXXX, removed when the script exits
#   e2e_bad [--rc N] [--late] NEEDLE -- cmd...  the one check of "one error line": runs cmd (its
#                        output in $E2E_DIR/out and $E2E_DIR/err, E2E_DIR defaults to $T) and calls the
#                        script's fail() (then returns 1) unless cmd exits N (default 1; --rc any: any
#                        status from 1 to 125, so neither a signal's 128+n nor the shell's 126/127) with
#                        exactly one line on stderr, beginning "error: " and matching the grep pattern
#                        NEEDLE.  --late: the failure comes after the work began (a disk filling mid-run),
#                        so the command's progress lines may come first; the error line must still be the
#                        only "error: " line and the last, and no line a sanitizer's, crash's or HDF5's
#   e2e_skip_part REASON     a part of the test cannot run here: says so; e2e_end then exits 77
#   e2e_end NAME         the last line: "NAME: all checks passed" and exit 0, or, after e2e_skip_part,
#                        a SKIPPED line with the reasons and exit 77
#   e2e_wait_logged METRICS N PID LOG  waits (up to 60 s) until METRICS holds N "train" lines; fails
#                        (printing LOG) if PID ends first, kills it if it takes longer
#   e2e_wait_end PID SECONDS WHAT  waits until PID (a child of the script) ends, E2E_RC its exit status;
#                        fails with "WHAT: still running after SECONDS s" if it takes longer
#   e2e_corpus SEED DOCS [MOST] [ADJ]  prints DOCS documents of 2 to MOST (default 5) generated
#                        sentences ("the cat sees a dog."; ADJ 1: an adjective before the first noun),
#                        the same for the same arguments
#   fail MSG, ok MSG     "FAIL: MSG" and exit 1; "ok   MSG" (a test may define its own after sourcing)
# Also for tests that do not run the reference (the helpers need only sh and grep).
cd "$(dirname "$0")/.." || exit 1

fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok   $*"; }

e2e_need_reference() {
    PY=${REF_PYTHON:-/usr/bin/python3}
    if [ ! -x "$PY" ]; then
        echo "SKIPPED: $PY not found (install python3-torch python3-h5py python3-numpy)"
        exit 77
    fi
    if ! err=$("$PY" -c "import torch, h5py, numpy" 2>&1); then
        echo "SKIPPED: $PY cannot import torch/h5py/numpy: $(echo "$err" | tail -n 1) (apt-get install python3-torch python3-h5py python3-numpy)"
        exit 77
    fi
}

e2e_need_bin() {
    BUILD=${BUILD:-build}
    BIN=$BUILD/deberta
    [ -x "$BIN" ] || { echo "FAIL: $BIN is not built"; exit 1; }
}

e2e_need_h5py() {
    PY=${REF_PYTHON:-/usr/bin/python3}
    "$PY" -c "import h5py, numpy" > /dev/null 2>&1 || { echo "SKIPPED: $PY cannot import h5py/numpy (apt-get install python3-h5py python3-numpy)"; exit 77; }
}

e2e_need_mpi() {
    command -v mpirun > /dev/null 2>&1 || { echo "SKIPPED: mpirun not found (apt-get install openmpi-bin libopenmpi-dev, then make clean && make)"; exit 77; }
    ldd "$1" | grep -q libmpi || { echo "SKIPPED: $1 was built without MPI (install libopenmpi-dev, then make clean && make)"; exit 77; }
}

e2e_tmpdir() {
    _e2e_dir=$(mktemp -d "/tmp/$2-XXXXXX") || exit 1
    eval "$1=\$_e2e_dir"
    trap 'rm -rf "$_e2e_dir"' EXIT
}

e2e_bad() {
    _want=1 _late=0
    [ "$1" = --rc ] && { _want=$2; shift 2; }
    [ "$1" = --late ] && { _late=1; shift; }
    _needle=$1; shift 2
    _d=${E2E_DIR:-$T}
    "$@" > "$_d/out" 2> "$_d/err"; _rc=$?
    case $_want in
        any) [ $_rc -ge 1 ] && [ $_rc -le 125 ] || { fail "$*: exit $_rc, expected an error status 1-125 ($(cat "$_d/err"))"; return 1; } ;;
        *) [ $_rc -eq "$_want" ] || { fail "$*: exit $_rc, expected $_want ($(cat "$_d/err"))"; return 1; } ;;
    esac
    if [ $_late -eq 1 ]; then
        [ "$(grep -c '^error: ' "$_d/err")" -eq 1 ] && tail -n 1 "$_d/err" | grep -q '^error: ' &&
            ! grep -qi 'sanitizer\|runtime error\|segmentation\|HDF5-DIAG' "$_d/err" ||
            { fail "$*: stderr does not end in its one error line: $(cat "$_d/err")"; return 1; }
    else
        [ "$(awk 'END { print NR }' "$_d/err")" -eq 1 ] && grep -q '^error: ' "$_d/err" ||
            { fail "$*: stderr is not one error line: $(cat "$_d/err")"; return 1; }
    fi
    tail -n 1 "$_d/err" | grep -q -- "$_needle" || { fail "$*: the error line lacks '$_needle': $(cat "$_d/err")"; return 1; }
}

_e2e_skipped=""
e2e_skip_part() {
    echo "SKIPPED (this part): $*"
    _e2e_skipped="$_e2e_skipped${_e2e_skipped:+; }$*"
}
e2e_end() {
    [ -z "$_e2e_skipped" ] || { echo "SKIPPED: $1: the rest passed, but not all ran: $_e2e_skipped"; exit 77; }
    echo "$1: all checks passed"
    exit 0
}

e2e_wait_logged() {
    _i=0
    while _c=$(grep -c '"kind":"train"' "$1" 2>/dev/null); [ "${_c:-0}" -lt "$2" ]; do
        _i=$((_i + 1))
        [ $_i -lt 600 ] || { kill -9 "$3"; fail "$1: the run did not log $2 steps in 60 s"; }
        kill -0 "$3" 2>/dev/null || { cat "$4"; fail "$1: the run ended before logging $2 steps"; }
        sleep 0.1
    done
}

e2e_wait_end() {
    _i=0
    while kill -0 "$1" 2>/dev/null; do
        _i=$((_i + 1))
        [ $_i -lt $(($2 * 10)) ] || fail "$3: still running after $2 s"
        sleep 0.1
    done
    wait "$1"; E2E_RC=$?
}

e2e_corpus() {
    awk -v seed="$1" -v docs="$2" -v most="${3:-5}" -v adj="${4:-0}" 'BEGIN { srand(seed);
      split("the a one every some that this my our your", det, " ");
      split("cat dog bird model teacher river city garden window letter", noun, " ");
      split("sees finds likes carries paints opens follows reads keeps moves", verb, " ");
      split("red small old quiet bright green tall happy cold slow", adjs, " ");
      for (d = 0; d < docs; d++) { n = 2 + int(rand() * (most - 1));
        for (s = 0; s < n; s++)
          if (adj) printf "%s %s %s %s %s %s. ", det[1+int(rand()*10)], adjs[1+int(rand()*10)], noun[1+int(rand()*10)], verb[1+int(rand()*10)], det[1+int(rand()*10)], noun[1+int(rand()*10)];
          else printf "%s %s %s %s %s. ", det[1+int(rand()*10)], noun[1+int(rand()*10)], verb[1+int(rand()*10)], det[1+int(rand()*10)], noun[1+int(rand()*10)];
        printf "\n\n" } }'
}
