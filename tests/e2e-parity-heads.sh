#!/bin/sh
# Parity of the fine-tuning heads and their losses against the PyTorch reference: an encoder with a
# token-classification head (classifier) and one with a sequence-classification head (pooler on the
# first token + GELU + classifier), weights from `deberta dump-encoder --init --head ... --perturb`,
# padded inputs from the reference plus labels (token: -100 on padding and on every third position;
# sequence: one per row), and one with the regression head (the sequence head with one output, MSE
# on float labels), dropout 0 -> logits within 1e-5 max abs, the mean cross-entropy over the
# labels that are not -100 within 1e-5 relative, every parameter gradient within 1e-4 norm-relative
# (`deberta_ref.py compare --profile encoder`).  double build: reference in float64, 1e-9 / 1e-8.
# Exit 0 pass, 77 skipped (reason on the last line), anything else fail.
. "$(dirname "$0")/lib-e2e.sh"
e2e_need_reference
e2e_need_bin
e2e_tmpdir TMP deberta-parity-heads
REF=scripts/reference/deberta_ref.py
if [ "${PRECISION:-float}" = "double" ]; then
    DTYPE=float64; TOL="--tol *:abs:1e-9 --tol loss:rel:1e-9 --tol grad/*:rel:1e-8"
else
    DTYPE=float32; TOL=""
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
fail=0
run_case() { # name, head, labels, batch, seq, init flags...
    name=$1 head=$2 L=$3 b=$4 s=$5; shift 5
    d="$TMP/$name"; mkdir -p "$d"
    if ! "$BIN" dump-encoder --init --out "$d/w.h5" --head "$head" --num-labels "$L" "$@" --hidden_dropout_prob 0 \
            --attention_probs_dropout_prob 0 --perturb >"$d/log" 2>&1 ||
       ! "$PY" $REF inputs --weights "$d/w.h5" --batch "$b" --seq "$s" --seed 7 --out "$d/in.h5" >>"$d/log" 2>&1 ||
       ! "$PY" - "$d/in.h5" "$head" "$L" >>"$d/log" 2>&1 <<'PYEOF' ||
import sys, h5py, numpy as np
path, head, L = sys.argv[1], sys.argv[2], int(sys.argv[3])
with h5py.File(path, "r+") as f:
    m = f["attention_mask"][()]
    B, T = m.shape
    rng = np.random.default_rng(11)
    if head == "regression":
        y = rng.normal(0, 2, size=(B,)).astype(np.float32)
    elif head == "token":
        y = rng.integers(0, L, size=(B, T)).astype(np.int32)
        y[m == 0] = -100
        y[:, ::3] = -100
    else:
        y = rng.integers(0, L, size=(B,)).astype(np.int32)
    if "labels" in f:  # the full-model batch fields of `inputs` include MLM labels; ours replace them
        del f["labels"]
    f.create_dataset("labels", data=y)
PYEOF
       ! "$PY" $REF encoder --head "$head" --weights "$d/w.h5" --inputs "$d/in.h5" --out "$d/ref.h5" --dtype $DTYPE >>"$d/log" 2>&1 ||
       ! "$BIN" dump-encoder --weights "$d/w.h5" --inputs "$d/in.h5" --out "$d/ours.h5" >>"$d/log" 2>&1; then
        echo "FAIL $name: could not produce the files:"; cat "$d/log"; fail=1; return
    fi
    if ! "$PY" -c "import h5py,sys; f=h5py.File(sys.argv[1]); sys.exit(0 if 'logits' in f else 1)" "$d/ours.h5"; then
        echo "FAIL $name: deberta dump-encoder wrote no logits (head not run)"; fail=1; return
    fi
    if "$PY" $REF compare --ours "$d/ours.h5" --ref "$d/ref.h5" --profile encoder $TOL --show 3 >"$d/cmp" 2>&1; then
        echo "ok   $name ($DTYPE): $(head -n 1 "$d/cmp" | sed 's/.*(profile encoder): //')"
        sed -n "2,4p" "$d/cmp"
    else
        echo "FAIL $name ($DTYPE):"; cat "$d/cmp"; fail=1
    fi
}
run_case token-head token 12 3 13 --preset test --seed 3
run_case sequence-head sequence 15 4 13 --preset test --seed 4
run_case regression-head regression 1 4 13 --preset test --seed 5
run_case token-head-tiny token 12 2 64 --preset tiny --seed 5
[ $fail -eq 0 ] && echo "e2e-parity-heads: all cases within tolerance"
exit $fail
