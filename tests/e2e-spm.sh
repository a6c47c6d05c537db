#!/bin/sh
# e2e-spm.sh — the SentencePiece reader and encoder (data/spm.c) against python3-sentencepiece:
# unigram models trained here (nmt_nfkc and identity normalisation with byte fallback; nmt_nfkc
# without byte fallback, so unknown runs merge into [UNK]) must give exactly the same ids as
# sentencepiece on the repository's own documents, a slice of the fetched corpus when present, and
# the hard strings of scripts/spm-ref.py (CJK, emoji, combining marks, NBSP, control characters,
# NUL, very long words, leading/trailing/multiple spaces, user-defined and control pieces).
# Then bad model files: each one clear error line.
# Exit 0 = pass, 77 = skipped (reason printed), anything else = fail.
. "$(dirname "$0")/lib-e2e.sh"
e2e_need_bin
PY=${REF_PYTHON:-/usr/bin/python3}
if ! "$PY" -c "import sentencepiece" 2>/dev/null; then
    echo "SKIPPED: $PY cannot import sentencepiece (apt-get install python3-sentencepiece)"
    exit 77
fi
e2e_tmpdir T e2e-spm
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

# the text: this repository's documents (always present), a corpus slice when fetched, hard strings
cat README.md docs/*.md > "$T/text.txt"
c=${CORPUS_DIR:-data/corpus}/nlp-corpus.txt   # scripts/fetch-corpus.sh puts it there
[ -s "$c" ] && head -n 1500 "$c" >> "$T/text.txt"
"$PY" scripts/spm-ref.py hard "$T/hard.txt" || fail "spm-ref.py hard"
cat "$T/hard.txt" >> "$T/text.txt"

for kind in nmt_nfkc:unigram identity:unigram nmt_nfkc:unigram-nobf; do
    norm=${kind%%:*}; type=${kind#*:}; m="$T/$norm-$type"
    "$PY" scripts/spm-ref.py train "$T/text.txt" "$m" "$norm" 1500 "$type" || { fail "training $kind"; continue; }
    "$PY" scripts/spm-ref.py encode "$m.model" "$T/text.txt" > "$m.ref" || fail "reference encode $kind"
    "$BIN" encode --tokenizer "$m.model" "$T/text.txt" > "$m.ours" || fail "deberta encode $kind"
    if cmp -s "$m.ref" "$m.ours"; then
        echo "ok: $kind: $(wc -l < "$m.ours") lines, $(wc -w < "$m.ours") ids equal to sentencepiece"
    else
        fail "$kind: ids differ from sentencepiece (first difference: line $(cmp "$m.ref" "$m.ours" | sed 's/.*line //'))"
    fi
done
# the comparison must see the paths it claims to cover
m="$T/nmt_nfkc-unigram"
"$BIN" encode --tokenizer "$m.model" --pieces "$T/hard.txt" > "$T/pieces"
grep -q '<0xE6>' "$T/pieces" || fail "byte fallback never used on the hard strings"
grep -q '\[MASK\]' "$T/pieces" || fail "the user-defined piece [MASK] never came out"
grep -q '\[CTL\]' "$T/pieces" && fail "the control piece [CTL] came out of encoding"
unk=$("$PY" -c "import sentencepiece as s; print(s.SentencePieceProcessor(model_file='$T/nmt_nfkc-unigram-nobf.model').unk_id())")
grep -qw "$unk" "$T/nmt_nfkc-unigram-nobf.ours" || fail "no [UNK] in the no-byte-fallback encoding"

# bad files: one error line each, exit 1
expect_err() { _n=$1; shift; e2e_bad "$_n" -- "$BIN" encode --tokenizer "$@" "$T/hard.txt"; } # NEEDLE TOKENIZER: lib-e2e.sh
size=$(wc -c < "$m.model")
head -c $((size / 2)) "$m.model" > "$T/trunc.model"
expect_err "truncated" "$T/trunc.model"
: > "$T/empty.model"
expect_err "empty" "$T/empty.model"
"$PY" scripts/spm-ref.py train "$T/text.txt" "$T/bpe" nmt_nfkc 500 bpe || fail "training bpe"
expect_err "only unigram" "$T/bpe.model"
expect_err "cannot open" "$T/missing.model"

[ $fails -eq 0 ] && echo "e2e-spm: all checks passed"
[ $fails -eq 0 ]
