# lib-e2e.sh — the preamble shared by the end-to-end tests that run the PyTorch reference
# (scripts/reference/); each sources it first:  . "$(dirname "$0")/lib-e2e.sh"
# Not a test itself, and named so that tests/run-all.sh (which runs tests/e2e-*.sh) does not run it.
# Sourcing it changes to the repository root; then:
#   e2e_need_reference   PY = $REF_PYTHON (override only to test the skip path) or /usr/bin/python3;
#                        exit 77 with a SKIPPED line unless it exists and imports torch, h5py, numpy
#   e2e_need_bin         BUILD = ${BUILD:-build}, BIN = $BUILD/deberta; exit 1 with a FAIL line unless built
#   e2e_tmpdir VAR NAME  VAR = a new directory /tmp/NAME-XXXXXX, removed when the script exits
cd "$(dirname "$0")/.." || exit 1

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

e2e_tmpdir() {
    _e2e_dir=$(mktemp -d "/tmp/$2-XXXXXX") || exit 1
    eval "$1=\$_e2e_dir"
    trap 'rm -rf "$_e2e_dir"' EXIT
}
