#!/bin/sh
# e2e-brown-files.sh — scripts/brown-task-files.py writes the Brown tasks as CoNLL (pos) and JSONL
# (genre); `deberta prep-task --format` reads them; on the synthetic tagged corpus of lib-brown.sh the
# pos files hold the same words with the same universal tags, in the same order, as `prep-task --task
# pos --brown` (the script's tag table equals data/brown.c's), and genre has one example per text with
# its genre.  The two paths differ on purpose in packing and spacing (docs/FORMATS.md, "Brown tasks").
# Exit 0 = pass, 77 = skipped (reason printed), anything else = fail.
. "$(dirname "$0")/lib-e2e.sh"
. tests/lib-brown.sh
e2e_need_bin
e2e_need_h5py
e2e_tmpdir T e2e-brown-files
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
make_brown_corpus "$T/c"
"$BIN" prep --input "$T/c/brown.txt" "$T/c/other.txt" --out "$T/d" --vocab-size 300 --holdout-brown "$T/c/brown-tagged" > /dev/null 2>&1 || { fail "prep"; exit 1; }
"$PY" scripts/brown-task-files.py "$T/c/brown-tagged" "$T/f" > /dev/null || { fail "brown-task-files.py"; exit 1; }
"$BIN" prep-task --task pos --brown "$T/c/brown-tagged" --shards "$T/d" --out "$T/pos" --seq-len 24 > /dev/null || fail "prep-task --task pos"
"$BIN" prep-task --format conll --train "$T/f/pos-train.conll" --dev "$T/f/pos-dev.conll" --test "$T/f/pos-test.conll" --name pos \
    --labels "ADJ,ADP,ADV,CONJ,DET,NOUN,NUM,PRON,PRT,VERB,.,X" --shards "$T/d" --out "$T/gpos" --seq-len 24 > /dev/null || fail "prep-task --format conll"
"$BIN" prep-task --format jsonl --train "$T/f/genre-train.jsonl" --dev "$T/f/genre-dev.jsonl" --test "$T/f/genre-test.jsonl" --name genre \
    --text-field text --shards "$T/d" --out "$T/ggenre" --seq-len 24 > /dev/null || fail "prep-task --format jsonl (genre)"
"$PY" - "$T" <<'PYEOF' || fail "the two pos paths differ in their words' tags"
import h5py, numpy as np, sys
t = sys.argv[1]
for s in ("train", "dev", "test"):
    a, b = h5py.File("%s/pos/%s.h5" % (t, s)), h5py.File("%s/gpos/%s.h5" % (t, s))
    assert a.attrs["label_names"] == b.attrs["label_names"], s
    la, lb = a["labels"][()], b["labels"][()]
    fa, fb = la[la != -100], lb[lb != -100]
    assert fa.size > 0 and np.array_equal(fa, fb), (s, fa.size, fb.size)
    g = h5py.File("%s/ggenre/%s.h5" % (t, s))
    names = g.attrs["label_names"]
    names = (names.decode() if isinstance(names, bytes) else names).split("\n")
    assert names == ["press-editorial", "press-reportage"], names
    assert list(g["labels"][()]) == [1] * (g["labels"].shape[0] // 2) + [0] * (g["labels"].shape[0] // 2), list(g["labels"][()])
    print("ok   %s: %d words, the same tags in the same order; genre %d texts" % (s, fa.size, g["labels"].shape[0]))
PYEOF
[ $fails -eq 0 ] || { echo "e2e-brown-files: $fails failure(s)"; exit 1; }
echo "e2e-brown-files: all checks passed"
