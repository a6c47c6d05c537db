#!/bin/sh
# e2e-task-formats.sh — `deberta prep-task --format jsonl|csv|tsv|conll` on the fixtures of
# tests/fixtures/task/ (GLUE's SST-2, MRPC and STS-B layouts, CoNLL-2003 with BIO tags and
# -DOCSTART-, JSONL of both kinds, RFC 4180 CSV), each task file checked against an independent
# rebuild from the input (tests/check-task-files.py: Python's csv/json, `deberta encode`); with our
# BPE and with a SentencePiece model (shards of `prep --tokenizer X.model`), then a few fine-tuning
# steps on a tagging and a classification task, from a checkpoint pretrained on the SentencePiece
# shards, and from that model exported and brought back with `deberta import` (tokenizer: the model
# folder's spm.model).  The bad inputs are in tests/e2e-task-bad-input.sh.
# Exit 0 = pass, 77 = skipped (reason printed), anything else = fail.
. "$(dirname "$0")/lib-e2e.sh"
e2e_need_bin
e2e_need_h5py
e2e_tmpdir T e2e-task-formats
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
F=tests/fixtures/task

# a small pretraining corpus (the fixtures' words and the docs) -> shards of our BPE
cat $F/*.tsv $F/*.conll $F/*.jsonl $F/*.csv docs/FORMATS.md | tr '\t' ' ' | awk 'NR % 6 == 0 { print ""; print "" } { print }' > "$T/corpus.txt"
"$BIN" prep --input "$T/corpus.txt" --out "$T/bpe" --vocab-size 400 --val-fraction 0.1 > "$T/prep.log" 2>&1 || { cat "$T/prep.log"; fail "prep"; exit 1; }

# prep NAME SHARDS FORMAT TRAIN DEV TEST SEQLEN [prep-task flags]  (DEV/TEST "-": drawn from TRAIN)
prep() {
    name=$1 shards=$2 fmt=$3 tr=$4 dv=$5 te=$6 seq=$7; shift 7
    set -- --format "$fmt" --train "$tr" --shards "$shards" --out "$T/$name" --seq-len "$seq" "$@"
    [ "$dv" != - ] && set -- "$@" --dev "$dv"
    [ "$te" != - ] && set -- "$@" --test "$te"
    "$BIN" prep-task "$@" > "$T/$name.log" 2>&1 || { cat "$T/$name.log"; fail "prep-task $name"; return 1; }
}
# check NAME TOKENIZER FORMAT TRAIN DEV TEST [checker key=value]
check() {
    name=$1 tok=$2 fmt=$3 tr=$4 dv=$5 te=$6; shift 6
    "$PY" tests/check-task-files.py "$BIN" "$tok" "$T/$name" "$fmt" "$tr" "$dv" "$te" "$@" > "$T/$name.check" 2>&1 &&
        echo "ok   $name: $(sed 's/^check-task-files: [^ ]* //' "$T/$name.check")" ||
        { cat "$T/$name.check"; fail "$name: the task files differ from the input"; }
}
B=$T/bpe/tokenizer.bin
prep sst2 "$T/bpe" tsv $F/sst2-train.tsv $F/sst2-dev.tsv - 16 --text-field sentence &&
    check sst2 $B tsv $F/sst2-train.tsv $F/sst2-dev.tsv - text=sentence label=label
prep mrpc "$T/bpe" tsv $F/mrpc-train.tsv - - 12 --text-field "#1 String" --text-pair-field "#2 String" --label-field Quality &&
    check mrpc $B tsv $F/mrpc-train.tsv - - "text=#1 String" "pair=#2 String" label=Quality
prep stsb "$T/bpe" tsv $F/stsb-train.tsv - - 24 --text-field sentence1 --text-pair-field sentence2 --label-field score --regression &&
    check stsb $B tsv $F/stsb-train.tsv - - text=sentence1 pair=sentence2 label=score regression=1
prep ner "$T/bpe" conll $F/ner-train.conll - - 8 --name ner --tag-column 4 && check ner $B conll $F/ner-train.conll - - tag_col=4
prep tag "$T/bpe" jsonl $F/tag.jsonl - - 32 --name ner && check tag $B jsonl $F/tag.jsonl - -
prep cls "$T/bpe" jsonl $F/cls.jsonl - - 24 --text-field text && check cls $B jsonl $F/cls.jsonl - - text=text label=label
prep csv "$T/bpe" csv $F/reviews.csv - - 24 --text-field review --label-field stars && check csv $B csv $F/reviews.csv - - text=review label=stars

# what the checker compares must be there: pairs cut longest first, windows, unicode, a quoted line break
grep -q " examples cut to 12 tokens (longest first)" "$T/mrpc.log" || fail "mrpc at T=12: no pair was cut"
grep -q "split into windows" "$T/ner.log" || fail "ner at T=8: no sentence was split into windows"
"$PY" - "$T" <<'PYEOF' || fail "task file attributes"
import h5py, sys
t = sys.argv[1]
def at(d, s="train"):
    with h5py.File("%s/%s/%s.h5" % (t, d, s), "r") as f:
        return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}, {k: f[k].dtype.str for k in f}
a, d = at("stsb")
assert a["kind"] == "regression" and a["n_labels"] == 1 and a["label_names"] == "score" and d["labels"] == "<f4", (a, d)
assert a["split_seed"] == 1 and abs(a["split_dev_fraction"] - 0.1) < 1e-12 and a["pair"] == 1, a
a, d = at("ner")
assert a["kind"] == "tagging" and a["task"] == "ner" and a["label_names"] == "B-LOC\nB-ORG\nB-PER\nI-ORG\nO", a
assert "word_ids" in d and a["n_windows"] > 0 and a["input_format"] == "conll", (a, d)
a, d = at("sst2", "dev")
assert a["split_seed"] == -1 and a["source"].endswith("sst2-dev.tsv") and a["task"] == "classification", a
a, _ = at("sst2", "test")
assert a["split_seed"] == 1 and a["split_dev_fraction"] == 0 and abs(a["split_test_fraction"] - 0.1) < 1e-12, a
print("ok   attributes: kind, task, label_names, float32 regression labels, word_ids, split seed/fractions, source")
PYEOF

# a fine-tune of a few steps on a tagging and a pair-classification task (our BPE, from scratch)
for t in ner mrpc; do
    "$BIN" finetune --init scratch --preset test --task $( [ $t = ner ] && echo ner || echo classification ) --data "$T/$t" \
        --out "$T/ft-$t" --steps 4 --batch 4 --eval-every 2 > "$T/ft-$t.out" 2> "$T/ft-$t.err" || { cat "$T/ft-$t.err"; fail "finetune $t"; continue; }
    grep -q "test (best dev step [0-9]*, dev acc" "$T/ft-$t.out" || fail "finetune $t: no result line: $(cat "$T/ft-$t.out")"
    echo "ok   finetune $t: $(cat "$T/ft-$t.out")"
done

# SentencePiece: shards of a DeBERTa-V3-style unigram model, task files with its ids, a checkpoint
# pretrained on those shards fine-tuned on them (as for a model brought in with deberta import)
if "$PY" -c "import sentencepiece" 2>/dev/null; then
    "$PY" scripts/spm-ref.py train-v3 "$T/corpus.txt" "$T/v3" 1000 none > /dev/null 2>&1 || fail "spm-ref.py train-v3"
    "$BIN" prep --input "$T/corpus.txt" --out "$T/spm" --tokenizer "$T/v3.model" --val-fraction 0.1 > "$T/prep-spm.log" 2>&1 ||
        { cat "$T/prep-spm.log"; fail "prep --tokenizer v3.model"; }
    prep spm-ner "$T/spm" conll $F/ner-train.conll - - 12 --name ner && check spm-ner "$T/v3.model" conll $F/ner-train.conll - -
    prep spm-mrpc "$T/spm" tsv $F/mrpc-train.tsv - - 16 --text-field "#1 String" --text-pair-field "#2 String" --label-field Quality &&
        check spm-mrpc "$T/v3.model" tsv $F/mrpc-train.tsv - - "text=#1 String" "pair=#2 String" label=Quality
    "$PY" -c "import h5py, sys; a = h5py.File(sys.argv[1]).attrs; assert a['tokenizer_kind'] in (b'spm', 'spm'), dict(a)" "$T/spm-ner/train.h5" ||
        fail "spm-ner: tokenizer_kind is not spm"
    "$BIN" pretrain --data "$T/spm" --out "$T/pre-spm" --preset test --steps 1 --batch 2 --max_seq_len 16 > "$T/pre.log" 2>&1 ||
        { cat "$T/pre.log"; fail "pretrain on the SentencePiece shards"; }
    "$BIN" finetune --init "$T/pre-spm/checkpoint.h5" --task ner --data "$T/spm-ner" --out "$T/ft-spm" --steps 3 --batch 4 --eval-every 3 \
        > "$T/ft-spm.out" 2> "$T/ft-spm.err" || { cat "$T/ft-spm.err"; fail "finetune on SentencePiece task files"; }
    grep -q "^ner test (best dev step" "$T/ft-spm.out" && echo "ok   finetune from a SentencePiece checkpoint: $(cat "$T/ft-spm.out")" ||
        fail "finetune spm: $(cat "$T/ft-spm.out")"
    # a model brought in with deberta import (here: the export of that checkpoint, spm.model beside it):
    # prep-task takes the tokenizer from the model folder, finetune starts from the imported checkpoint
    "$BIN" export "$T/pre-spm/checkpoint.h5" "$T/hf" > /dev/null 2>&1 || fail "export of the SentencePiece checkpoint"
    "$BIN" import "$T/hf/discriminator" --generator "$T/hf/generator" --out "$T/imp" > "$T/imp.log" 2>&1 || { cat "$T/imp.log"; fail "import"; }
    prep imp-sst2 "$T/hf/discriminator" tsv $F/sst2-train.tsv $F/sst2-dev.tsv - 16 --text-field sentence --name sst2 &&
        check imp-sst2 "$T/hf/discriminator/spm.model" tsv $F/sst2-train.tsv $F/sst2-dev.tsv - text=sentence label=label
    "$BIN" finetune --init "$T/imp/checkpoint.h5" --task sst2 --data "$T/imp-sst2" --out "$T/ft-imp" --steps 3 --batch 4 --eval-every 3 \
        > "$T/ft-imp.out" 2> "$T/ft-imp.err" || { cat "$T/ft-imp.err"; fail "finetune from an imported model"; }
    grep -q "^sst2 test (best dev step" "$T/ft-imp.out" && echo "ok   finetune of an imported model on your TSV: $(cat "$T/ft-imp.out")" ||
        fail "finetune imported: $(cat "$T/ft-imp.out")"
    # the BPE task files do not go with the SentencePiece checkpoint
    e2e_bad "was pretrained with tokenizer" -- "$BIN" finetune --init "$T/pre-spm/checkpoint.h5" --task ner --data "$T/ner" --out "$T/ft-x"
else
    e2e_skip_part "the SentencePiece cases: $PY cannot import sentencepiece (apt-get install python3-sentencepiece)"
fi

[ $fails -eq 0 ] || { echo "e2e-task-formats: $fails failure(s)"; exit 1; }
e2e_end e2e-task-formats
