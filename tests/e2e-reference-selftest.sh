#!/bin/sh
# Self-test of the PyTorch reference (scripts/reference/): bucket vectors and float32/float64
# tables, gradcheck of encoder and G+D losses, explicit c2p/p2c formulas, masking, CLI round trip;
# then that the plain torch.nn benchmark step (plain_step.py) computes the reference's bench step
# (float64, dropout 0: losses, gradients and updates over three steps, full-length and padded).
# The reference does not depend on the C build, so it runs once, in the PRECISION=float pass.
# Exit 0 pass, 77 skipped (reason printed), anything else fail.
. "$(dirname "$0")/lib-e2e.sh"
if [ "${PRECISION:-float}" != "float" ]; then
    echo "SKIPPED: reference selftest runs once, in the PRECISION=float pass (this is ${PRECISION})"
    exit 77
fi
e2e_need_reference
OMP_NUM_THREADS=1 "$PY" scripts/reference/selftest.py || exit 1
OMP_NUM_THREADS=1 "$PY" scripts/reference/plain_step.py check || exit 1
