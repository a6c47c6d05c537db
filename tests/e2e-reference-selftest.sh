#!/bin/sh
# Self-test of the PyTorch reference (scripts/reference/): bucket vectors and float32/float64
# tables, gradcheck of encoder and G+D losses, explicit c2p/p2c formulas, masking, CLI round trip.
# The reference does not depend on the C build, so it runs once, in the PRECISION=float pass.
# Exit 0 pass, 77 skipped (reason printed), anything else fail.
PY=${REF_PYTHON:-/usr/bin/python3}   # override only to test the skip path
if [ "${PRECISION:-float}" != "float" ]; then
    echo "SKIPPED: reference selftest runs once, in the PRECISION=float pass (this is ${PRECISION})"
    exit 77
fi
if [ ! -x "$PY" ]; then
    echo "SKIPPED: $PY not found (install python3-torch python3-h5py python3-numpy)"
    exit 77
fi
if ! err=$("$PY" -c "import torch, h5py, numpy" 2>&1); then
    echo "SKIPPED: $PY cannot import torch/h5py/numpy: $(echo "$err" | tail -n 1) (apt-get install python3-torch python3-h5py python3-numpy)"
    exit 77
fi
cd "$(dirname "$0")/.." || exit 1
OMP_NUM_THREADS=1 "$PY" scripts/reference/selftest.py
