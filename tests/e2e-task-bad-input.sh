#!/bin/sh
# e2e-task-bad-input.sh — `deberta prep-task --format` on bad input files: each one error line naming
# the file and line and what is wrong, exit 1, and nothing half written: a TASKDIR that held task
# files keeps them byte for byte, a new TASKDIR is not created, no TASKDIR.tmp-* / .old-* is left.
# Cases: a missing column and a missing key, an empty text, a dev/test label absent from train, a
# CoNLL line with too few columns, invalid UTF-8 (TSV, CSV, JSONL, CoNLL), a malformed JSON line, an
# unterminated CSV quote, a non-numeric regression label, a number label with a fraction without
# --regression, a bad --labels-file (and a few neighbours of these).
# Exit 0 = pass, anything else = fail.
. "$(dirname "$0")/lib-e2e.sh"
e2e_need_bin
e2e_tmpdir T e2e-task-bad-input
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
F=tests/fixtures/task

cat $F/*.tsv $F/*.conll $F/*.jsonl | tr '\t' ' ' | awk 'NR % 6 == 0 { print ""; print "" } { print }' > "$T/corpus.txt"
"$BIN" prep --input "$T/corpus.txt" --out "$T/d" --vocab-size 300 --val-fraction 0.1 > "$T/prep.log" 2>&1 || { cat "$T/prep.log"; fail "prep"; exit 1; }
# a TASKDIR holding good task files, which every failing run below must leave as it is
"$BIN" prep-task --format tsv --train $F/sst2-train.tsv --text-field sentence --shards "$T/d" --out "$T/keep" --seq-len 16 > /dev/null ||
    { fail "prep-task of the kept task"; exit 1; }
sums() { cksum "$T/keep/train.h5" "$T/keep/dev.h5" "$T/keep/test.h5"; }
sums > "$T/keep.sum"

# bad NEEDLE -- prep-task flags...: one error line with NEEDLE, exit 1; the kept TASKDIR unchanged and a
# new TASKDIR not created
n=0
bad() {
    needle=$1; shift 2
    n=$((n + 1))
    e2e_bad "$needle" -- "$BIN" prep-task --shards "$T/d" --out "$T/keep" "$@"
    sums | cmp -s - "$T/keep.sum" || fail "case $n ($needle): the existing task files changed"
    e2e_bad "$needle" -- "$BIN" prep-task --shards "$T/d" --out "$T/new$n" "$@"
    [ ! -e "$T/new$n" ] || fail "case $n ($needle): a failed run created its TASKDIR"
    left=$(ls -d "$T"/keep.* "$T"/new$n.* 2>/dev/null | grep -v 'keep.sum$')
    [ -z "$left" ] || fail "case $n ($needle): left $left"
    echo "ok   $(sed 's/^error: //' "$T/err")"
}
w() { printf "x$2" | tail -c +2 > "$T/$1"; }  # w NAME PRINTF-TEXT: a bad input file

# a missing column or key
bad "h.tsv:1: no column 'sentence' (the header has: text, label)" -- --format tsv --train "$T/h.tsv" --text-field sentence \
    $(w h.tsv 'text\tlabel\na film\t1\n')
bad "k.jsonl:2: no key 'text'" -- --format jsonl --train "$T/k.jsonl" --text-field text \
    $(w k.jsonl '{"text": "good", "label": 1}\n{"txt": "bad", "label": 0}\n')
bad "l.jsonl:1: no label at key 'label'" -- --format jsonl --train "$T/l.jsonl" --text-field text \
    $(w l.jsonl '{"text": "good"}\n')
bad "t.jsonl:1: no key 'tags'" -- --format jsonl --train "$T/t.jsonl" $(w t.jsonl '{"tokens": ["a", "b"]}\n')
# an empty text
bad "e.csv:3: empty text in column 'review'" -- --format csv --train "$T/e.csv" --text-field review --label-field stars \
    $(w e.csv 'review,stars\n"a fine film",good\n"",bad\n')
bad "e.jsonl:2: empty text at key 'text'" -- --format jsonl --train "$T/e.jsonl" --text-field text \
    $(w e.jsonl '{"text": "good", "label": 1}\n{"text": "", "label": 0}\n')
# a dev/test label absent from train
bad "dv.tsv:3: label 'maybe' is not among the train split's labels (0, 1) (give the whole label set with --labels-file FILE" -- --format tsv --train $F/sst2-train.tsv --dev "$T/dv.tsv" \
    --text-field sentence $(w dv.tsv 'sentence\tlabel\ngood\t1\nunsure\tmaybe\n')
bad "tg.conll:4: tag 'B-MISC' (word 1) is not among the train split's labels" -- --format conll --train $F/ner-train.conll --test "$T/tg.conll" \
    $(w tg.conll 'Anna B-PER\nvisited O\n\nParis B-MISC\n')
# a CoNLL line with too few columns
bad "c.conll:3: 2 columns, --tag-column 4 needs at least 4" -- --format conll --train "$T/c.conll" --tag-column 4 \
    $(w c.conll '-DOCSTART- -X- -X- O\nAnna NNP B-NP B-PER\nvisited O\n')
bad "c1.conll:2: 1 column, a token and its tag need at least 2" -- --format conll --train "$T/c1.conll" $(w c1.conll 'Anna B-PER\nvisited\n')
# invalid UTF-8 (a lone continuation byte, a truncated sequence, an overlong encoding, a surrogate)
bad "u.tsv:3: invalid UTF-8 (byte 0x80 at offset 2 of column 'sentence')" -- --format tsv --train "$T/u.tsv" --text-field sentence \
    $(w u.tsv 'sentence\tlabel\ngood\t1\nba\200d\t0\n')
bad "u.csv:2: invalid UTF-8 (byte 0xc3 at offset 4 of column 'review')" -- --format csv --train "$T/u.csv" --text-field review --label-field stars \
    $(w u.csv 'review,stars\ngood\303,1\n')
bad "u.jsonl:1: invalid UTF-8 (byte 0xc0 at column 12)" -- --format jsonl --train "$T/u.jsonl" --text-field text \
    $(w u.jsonl '{"text": "a\300\257b", "label": 1}\n')
bad "u.conll:2: invalid UTF-8 (byte 0xed at column 1)" -- --format conll --train "$T/u.conll" $(w u.conll 'Anna B-PER\n\355\240\200 O\n')
# a malformed JSON line, and a line that is not an object
bad "j.jsonl:2: not JSON:" -- --format jsonl --train "$T/j.jsonl" --text-field text \
    $(w j.jsonl '{"text": "good", "label": 1}\n{"text": "bad", "label": 0\n')
bad "a.jsonl:1: not a JSON object" -- --format jsonl --train "$T/a.jsonl" --text-field text $(w a.jsonl '["good", 1]\n')
# an unterminated CSV quote, a stray quote
bad "q.csv:3: unterminated quoted field" -- --format csv --train "$T/q.csv" --text-field review --label-field stars \
    $(w q.csv 'review,stars\ngood film,1\n"bad film,0\nanother,1\n')
bad "s.csv:2: CSV: error parsing data while strict checking enabled" -- --format csv --train "$T/s.csv" --text-field review --label-field stars \
    $(w s.csv 'review,stars\ngo"od,1\n')
# a TSV line with another number of fields
bad "f.tsv:3: 3 fields, the header has 2" -- --format tsv --train "$T/f.tsv" --text-field sentence $(w f.tsv 'sentence\tlabel\ngood\t1\nbad\t0\textra\n')
# a non-numeric regression label (and a non-finite one)
bad "r.tsv:3: the label 'high' is not a finite number (--regression)" -- --format tsv --train "$T/r.tsv" --text-field s --label-field score \
    --regression $(w r.tsv 's\tscore\na\t1.5\nb\thigh\n')
bad "r2.tsv:2: the label 'nan' is not a finite number (--regression)" -- --format tsv --train "$T/r2.tsv" --text-field s --label-field score \
    --regression $(w r2.tsv 's\tscore\na\tnan\n')
# number labels with a fraction without --regression (JSONL reals, CSV text), and a bad --labels-file
bad "fr.jsonl:2: label '0.5' is a number that is not an integer (a number label needs --regression" -- --format jsonl --train "$T/fr.jsonl" \
    --text-field text $(w fr.jsonl '{"text": "good", "label": 1.5}\n{"text": "bad", "label": 0.5}\n')
bad "fr.csv:3: label '2.25' is a number that is not an integer" -- --format csv --train "$T/fr.csv" --text-field review --label-field stars \
    $(w fr.csv 'review,stars\ngood,1\nbad,2.25\n')
bad "labels-file .*lf.txt:3: 'O' twice" -- --format conll --train $F/ner-train.conll --tag-column 4 --labels-file "$T/lf.txt" $(w lf.txt 'O\nB-PER\nO\n')
bad "labels-file .*no-such.txt: cannot read (No such file or directory)" -- --format conll --train $F/ner-train.conll --tag-column 4 --labels-file "$T/no-such.txt"
# an empty file, and a train split with one label
bad "z.tsv: empty file" -- --format tsv --train "$T/z.tsv" --text-field s $(w z.tsv '')
bad "one.tsv: 1 different label in the train split (at least 2)" -- --format tsv --train "$T/one.tsv" --text-field s $(w one.tsv 's\tlabel\na\t1\nb\t1\n')

# --out a folder with other files, or a file: refused before anything is read, and left alone
mkdir -p "$T/mine" && echo notes > "$T/mine/notes.txt" && echo data > "$T/afile"
for o in "$T/mine" "$T/afile"; do
    "$BIN" prep-task --format tsv --train $F/sst2-train.tsv --text-field sentence --shards "$T/d" --out "$o" > "$T/out" 2> "$T/err"; rc=$?
    [ $rc -eq 2 ] && grep -q "is not a folder of task files" "$T/err" || fail "--out $o: exit $rc, $(cat "$T/err")"
done
[ "$(cat "$T/mine/notes.txt")" = notes ] && [ "$(ls "$T/mine")" = notes.txt ] && [ "$(cat "$T/afile")" = data ] || fail "--out: a user's folder or file was changed"
echo "ok   --out a folder of other files or a file: refused (exit 2), left as it was"
"$BIN" prep-task --task pos --brown "$T/no-brown" --shards "$T/d" --out "$T/nb" --labels-file "$T/lf.txt" > "$T/out" 2> "$T/err"; rc=$?
[ $rc -eq 2 ] && grep -q "are for your files (--format)" "$T/err" && [ "$(wc -l < "$T/err")" -eq 1 ] || fail "--labels-file with --task: exit $rc, $(cat "$T/err")"
echo "ok   --labels-file with the Brown tasks: refused (exit 2)"

[ $fails -eq 0 ] || { echo "e2e-task-bad-input: $fails failure(s)"; exit 1; }
echo "e2e-task-bad-input: all $n cases refused with one line, nothing written"
