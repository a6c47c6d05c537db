#!/bin/sh
# scripts/shard_subset.py (the repetition run of docs/RECIPE.md): every K-th document of a train shard,
# checked against the source by an independent reading; the copy is sealed and trains; bad input (no
# such source, an unsealed or damaged one, a validation shard, K < 1, a destination that cannot be
# written) is one error line, exit 1, and no DST or DST.tmp left.  Needs /usr/bin/python3 with h5py and
# numpy (else exit 77).  Exit 0 pass, anything else fail.
. "$(dirname "$0")/lib-e2e.sh"
e2e_need_bin
e2e_need_h5py
e2e_tmpdir T deberta-e2e-shard-subset
W=$T
export OMP_NUM_THREADS=1 DEBERTA=$BIN
e2e_corpus 7 60 > "$W/corpus.txt"
$BIN prep --input "$W/corpus.txt" --out "$W/d" --vocab-size 300 --val-fraction 0.1 > "$W/prep.log" 2>&1 || { cat "$W/prep.log"; fail "prep"; }
S=$W/d/train-00000.h5
mkdir "$W/sub"
cp "$W/d"/val-*.h5 "$W/d"/tokenizer* "$W/sub/" 2>/dev/null
"$PY" scripts/shard_subset.py "$S" "$W/sub/train-00000.h5" 3 > "$W/out" 2>&1 || { cat "$W/out"; fail "shard_subset.py K=3"; }
"$PY" - "$S" "$W/sub/train-00000.h5" <<'EOF' || fail "the subset is not every third document of the source"
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
ta, oa = a["tokens"][:], a["doc_offsets"][:]
want = [ta[oa[d]:oa[d + 1]] for d in range(0, len(oa) - 1, 3)]
tb, ob = b["tokens"][:], b["doc_offsets"][:]
assert len(ob) - 1 == len(want) == b.attrs["n_docs"], (len(ob), len(want))
assert all((tb[ob[i]:ob[i + 1]] == w).all() for i, w in enumerate(want))
assert b.attrs["n_tokens"] == len(tb) == sum(len(w) for w in want)
assert (a["tokenizer"][:] == b["tokenizer"][:]).all() and b.attrs["split"] == b"train"
EOF
$BIN seal --check "$W/sub/train-00000.h5" > /dev/null 2>&1 || fail "the subset's seal"
ok "K=3: every third document, tokenizer and attributes kept, sealed"
$BIN pretrain --preset test --data "$W/sub" --out "$W/run" --steps 2 --eval-every 0 --save-every 0 > "$W/run.log" 2>&1 \
    || { tail -n 5 "$W/run.log"; fail "pretrain on the subset"; }
ok "pretrain reads the subset"

bad() { # NEEDLE DST ARGS...: one error line, exit 1, neither DST nor DST.tmp
    needle=$1; dst=$2; shift 2
    e2e_bad "$needle" -- "$PY" scripts/shard_subset.py "$@"
    [ ! -e "$dst" ] && [ ! -e "$dst.tmp" ] || fail "$needle: $dst or $dst.tmp left behind"
}
bad "seal $W/none.h5: cannot open" "$W/x1.h5" "$W/none.h5" "$W/x1.h5" 2
head -c 4000 "$S" > "$W/cut.h5"
bad "seal $W/cut.h5: is 4000 bytes, its seal says" "$W/x2.h5" "$W/cut.h5" "$W/x2.h5" 2
bad "is not a deberta.c train shard" "$W/x3.h5" "$(ls "$W/d"/val-*.h5 | head -n 1)" "$W/x3.h5" 2
bad "usage: shard_subset.py" "$W/x4.h5" "$S" "$W/x4.h5" 0
bad "cannot write $W/no/dir/x5.h5" "$W/no/dir/x5.h5" "$S" "$W/no/dir/x5.h5" 2
mkdir "$W/adir" # written to DST.tmp, then DST cannot be replaced: the .tmp goes
e2e_bad "cannot write $W/adir" -- "$PY" scripts/shard_subset.py "$S" "$W/adir" 2
[ ! -e "$W/adir.tmp" ] && [ -d "$W/adir" ] || fail "a directory as DST: $W/adir.tmp left behind, or the directory changed"
ok "bad input: one error line, exit 1, nothing left behind (6 cases)"
echo "e2e-shard-subset: all checks passed"
