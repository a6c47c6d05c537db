#!/bin/sh
# e2e-spm-pretrain.sh — continuing the pretraining of an imported model on text sharded with its
# SentencePiece vocabulary (docs/FORMATS.md "Shard", "Import"; README "Start from a published model"):
#   * two DeBERTa-V3-style unigram models trained by python3-sentencepiece (scripts/spm-ref.py train-v3:
#     [PAD] [CLS] [SEP] [UNK] = 0..3, a control piece [CTL] = 4): A with a user-defined [MASK] = 7, B
#     without a [MASK] piece, as the published spm.model ([MASK] = 400, the id after the last piece);
#   * deberta prep --tokenizer X.model: special-id attributes, vocab_size and tokenizer_hash (FNV-1a 64
#     of the .model bytes) of the shards, DIR/spm.model, and the ids of every document equal to
#     python3-sentencepiece's and `deberta encode`'s;
#   * reference HF folders of the `test` shape (A: 400 rows; B: 500 rows for 401 ids, padded as the
#     published 128,100 for 128,001) import (A with --tokenizer, B from HF_DIR/spm.model), and
#     pretrain --init-from continues 3 steps: finite losses, config.txt with the model's special ids; with
#     --lr 0 the parameters stay the imported ones (they were loaded); 2 steps + --resume = 3 steps;
#     eval; export writes spm.model;
#   * bad input, one error line and exit 1 each: a truncated .model and a model without [PAD] to prep;
#     shards of our BPE with the imported model; an import without a tokenizer ([MASK] 4) with spm shards;
#     a swapped spm.model beside the shards; eval of the continued run on BPE shards.
# That masked positions hold the model's [MASK] id (and never a special or control id is masked or drawn)
# is checked batch by batch in tests/test_tokfile.c.  Float build only (the double build repeats it).
# Exit 0 = pass, 77 = skipped (reason printed), anything else = fail.
. "$(dirname "$0")/lib-e2e.sh"
if [ "${PRECISION:-float}" = "double" ]; then echo "SKIPPED: e2e-spm-pretrain: float build only (the double run has nothing of its own to check here)"; exit 77; fi
e2e_need_reference
e2e_need_bin
if ! "$PY" -c "import sentencepiece" 2>/dev/null; then
    echo "SKIPPED: $PY cannot import sentencepiece (apt-get install python3-sentencepiece)"
    exit 77
fi
e2e_tmpdir T e2e-spm-pretrain
R=scripts/reference/deberta_ref.py
export OMP_NUM_THREADS=2
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
bad() { e2e_bad "$@"; } # bad NEEDLE -- command...: exit 1 and exactly one error line containing NEEDLE
RUN="--max_seq_len 32 --batch 4 --steps 3 --eval-every 3 --eval-batches 2 --log-every 1 --lr 1e-3"

# documents: the non-blank lines of this repository's docs, one per blank-line-separated block
cat README.md docs/*.md | grep -v '^[[:space:]]*$' | head -n 600 > "$T/docs.txt"
awk '{ print; print "" }' "$T/docs.txt" > "$T/text.txt"
for m in A:user B:none; do
    "$PY" scripts/spm-ref.py train-v3 "$T/docs.txt" "$T/${m%%:*}" 400 "${m#*:}" || fail "training model ${m%%:*}"
done

# ---- prep: ids, attributes, the model beside the shards
for m in A:7:400 B:400:401; do
    n=${m%%:*}; rest=${m#*:}; mask=${rest%%:*}; vocab=${rest#*:}
    "$BIN" prep --input "$T/text.txt" --out "$T/S$n" --tokenizer "$T/$n.model" --val-fraction 0.1 > "$T/prep$n.log" 2>&1 \
        || { cat "$T/prep$n.log"; fail "prep with $n.model"; continue; }
    grep -q "\[PAD\] 0 \[CLS\] 1 \[SEP\] 2 \[UNK\] 3 \[MASK\] $mask" "$T/prep$n.log" || fail "prep $n: special ids: $(cat "$T/prep$n.log")"
    cmp -s "$T/$n.model" "$T/S$n/spm.model" || fail "prep $n: DIR/spm.model is not a copy of the model"
    [ ! -e "$T/S$n/tokenizer.bin" ] || fail "prep $n wrote tokenizer.bin"
    "$BIN" encode --tokenizer "$T/$n.model" "$T/docs.txt" > "$T/enc$n.txt" || fail "deberta encode $n"
    "$PY" - "$T" "$n" "$mask" "$vocab" <<'PYEOF' || fail "prep $n: shards differ from sentencepiece"
import glob, sys
import h5py, numpy as np, sentencepiece as spm
T, n, mask, vocab = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
docs = open(T + "/docs.txt", encoding="utf-8").read().split("\n")[:-1]
sp = spm.SentencePieceProcessor(model_file="%s/%s.model" % (T, n))
ref = sorted(tuple(sp.encode(d)) for d in docs)
ours_enc = sorted(tuple(int(x) for x in l.split()) for l in open("%s/enc%s.txt" % (T, n)).read().split("\n")[:-1])
raw = open("%s/%s.model" % (T, n), "rb").read()
h = 0xcbf29ce484222325
for b in raw:
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
got, bad = [], 0
for path in sorted(glob.glob("%s/S%s/*-*.h5" % (T, n))):
    with h5py.File(path, "r") as f:
        a = f.attrs
        ids = tuple(int(a[k]) for k in ("pad_id", "cls_id", "sep_id", "unk_id", "mask_id"))
        if ids != (0, 1, 2, 3, mask) or int(a["vocab_size"]) != vocab:
            print("%s: special ids %s, vocab %d" % (path, ids, int(a["vocab_size"]))); bad += 1
        hv = a["tokenizer_hash"]
        hv = hv.decode() if isinstance(hv, bytes) else str(hv)
        if hv != "%016x" % h or bytes(f["tokenizer"][()]) != raw:
            print("%s: tokenizer_hash %s, FNV-1a of the model %016x" % (path, hv, h)); bad += 1
        tok, off = f["tokens"][()], f["doc_offsets"][()]
        got += [tuple(int(x) for x in tok[off[d]:off[d + 1]]) for d in range(len(off) - 1)]
got.sort()
if got != ref:
    print("shards: %d documents, sentencepiece: %d; first difference at %s" % (len(got), len(ref),
          next((i for i, (x, y) in enumerate(zip(got, ref)) if x != y), min(len(got), len(ref))))); bad += 1
if ours_enc != ref:
    print("deberta encode differs from sentencepiece"); bad += 1
if bad == 0:
    print("ok: prep %s: %d documents, %d ids, equal to sentencepiece and deberta encode; [MASK] %d, vocab %d" % (n, len(got), sum(map(len, got)), mask, vocab))
sys.exit(1 if bad else 0)
PYEOF
done

# ---- reference folders, import, continued pretraining
"$PY" $R init --preset test --vocab 400 --seed 3 --out "$T/wA.h5" > /dev/null || fail "reference init A"
"$PY" $R write-hf --weights "$T/wA.h5" --out "$T/hfA" > /dev/null || fail "write-hf A"
"$PY" $R init --preset test --vocab 500 --seed 4 --out "$T/wB.h5" > /dev/null || fail "reference init B"
"$PY" $R write-hf --weights "$T/wB.h5" --out "$T/hfB" > /dev/null || fail "write-hf B"
cp "$T/B.model" "$T/hfB/discriminator/spm.model"
"$BIN" import "$T/hfA/discriminator" --generator "$T/hfA/generator" --tokenizer "$T/A.model" --out "$T/RA" > "$T/impA.log" 2>&1 \
    || { cat "$T/impA.log"; fail "import A"; }
grep -q "\[MASK\] 7" "$T/impA.log" || fail "import A: special ids: $(cat "$T/impA.log")"
"$BIN" import "$T/hfB/discriminator" --generator "$T/hfB/generator" --out "$T/RB" > "$T/impB.log" 2>&1 \
    || { cat "$T/impB.log"; fail "import B"; }
grep -q "tokenizer $T/hfB/discriminator/spm.model (401 ids" "$T/impB.log" || fail "import B did not take HF_DIR/spm.model: $(cat "$T/impB.log")"

for n in A B; do
    "$BIN" pretrain --init-from "$T/R$n/checkpoint.h5" --data "$T/S$n" --out "$T/P$n" $RUN > "$T/P$n.log" 2>&1 \
        || { cat "$T/P$n.log"; fail "pretrain --init-from $n"; continue; }
    [ "$(grep -c '"kind":"train"' "$T/P$n/metrics.jsonl")" -eq 3 ] || fail "pretrain $n: not 3 train lines"
    grep -q '"[gd]_loss":null\|_grad_norm":null' "$T/P$n/metrics.jsonl" && fail "pretrain $n: a non-finite loss or norm: $(cat "$T/P$n/metrics.jsonl")"
    grep -q '"skipped":1' "$T/P$n/metrics.jsonl" && fail "pretrain $n: a step was skipped"
    grep -q "init: the parameters of $T/R$n/checkpoint.h5" "$T/P$n.log" || fail "pretrain $n: no init line"
done
grep -q "^mask_id = 7$" "$T/PA/config.txt" && grep -q "^vocab_size = 400$" "$T/PA/config.txt" || fail "run A: config.txt ids: $(grep _id "$T/PA/config.txt")"
grep -q "^mask_id = 400$" "$T/PB/config.txt" && grep -q "^vocab_size = 500$" "$T/PB/config.txt" || fail "run B: config.txt ids: $(grep _id "$T/PB/config.txt")"
echo "ok: pretrain --init-from an import continues on spm shards (A: [MASK] 7 of 400; B: [MASK] 400, 401 ids in 500 rows)"
# the parameters were loaded: with lr 0 they come out as they went in
"$BIN" pretrain --init-from "$T/RA/checkpoint.h5" --data "$T/SA" --out "$T/P0" $RUN --lr 0 > "$T/P0.log" 2>&1 || { cat "$T/P0.log"; fail "pretrain lr 0"; }
h5diff -q "$T/RA/checkpoint.h5" "$T/P0/checkpoint.h5" /params /params || fail "with --lr 0 the parameters differ from the imported ones"
# exact resume of a run started from an import
"$BIN" pretrain --init-from "$T/RA/checkpoint.h5" --data "$T/SA" --out "$T/PR" $RUN --stop-after 2 > "$T/PR1.log" 2>&1 || { cat "$T/PR1.log"; fail "pretrain --stop-after 2"; }
"$BIN" pretrain --resume "$T/PR" --data "$T/SA" > "$T/PR2.log" 2>&1 || { cat "$T/PR2.log"; fail "pretrain --resume"; }
cmp -s "$T/PA/metrics.jsonl" "$T/PR/metrics.jsonl" || fail "2 steps + --resume differ from 3 steps"
h5diff -q "$T/PA/checkpoint.h5" "$T/PR/checkpoint.h5" /params /params || fail "resumed parameters differ"
echo "ok: --lr 0 keeps the imported parameters; 2 steps + --resume = 3 steps"
"$BIN" eval "$T/PA/checkpoint.h5" --data "$T/SA" > "$T/evalA.txt" 2>&1 || { cat "$T/evalA.txt"; fail "eval on spm shards"; }
"$BIN" export "$T/PB/checkpoint.h5" "$T/expB" > "$T/expB.log" 2>&1 || { cat "$T/expB.log"; fail "export B"; }
cmp -s "$T/B.model" "$T/expB/generator/spm.model" && cmp -s "$T/B.model" "$T/expB/discriminator/spm.model" || fail "export B: no spm.model"
grep -q "spm.model written" "$T/expB.log" || fail "export B: $(cat "$T/expB.log")"

# ---- bad input
head -c 3000 "$T/A.model" > "$T/trunc.model"
bad "truncated" -- "$BIN" prep --input "$T/text.txt" --out "$T/x1" --tokenizer "$T/trunc.model"
[ ! -e "$T/x1" ] || fail "prep with a truncated model left an output folder"
"$PY" -c "
import sentencepiece as s
s.SentencePieceTrainer.train(input='$T/docs.txt', model_prefix='$T/plain', vocab_size=300, hard_vocab_limit=False, minloglevel=2, num_threads=1)" \
    || fail "training a model with sentencepiece's default pieces"
bad "no piece '\[PAD\]'" -- "$BIN" prep --input "$T/text.txt" --out "$T/x2" --tokenizer "$T/plain.model"
"$BIN" prep --input "$T/text.txt" --out "$T/bpe" --vocab-size 400 --val-fraction 0.1 > /dev/null 2>&1 || fail "prep with our BPE"
bad "the model was made with tokenizer" -- "$BIN" pretrain --init-from "$T/RA/checkpoint.h5" --data "$T/bpe" --out "$T/x3" $RUN
"$BIN" import "$T/hfA/discriminator" --generator "$T/hfA/generator" --out "$T/RA0" > "$T/impA0.log" 2>&1 || fail "import A without a tokenizer"
grep -q "no tokenizer" "$T/impA0.log" || fail "import without a tokenizer: $(cat "$T/impA0.log")"
bad "mask_id is 4 in the model but 7 in the shards" -- "$BIN" pretrain --init-from "$T/RA0/checkpoint.h5" --data "$T/SA" --out "$T/x4" $RUN
mkdir -p "$T/swap" && cp "$T/SA"/*.h5 "$T/swap/" && cp "$T/B.model" "$T/swap/spm.model"
bad "spm.model is tokenizer" -- "$BIN" pretrain --init-from "$T/RA/checkpoint.h5" --data "$T/swap" --out "$T/x5" $RUN
bad "the shards were made with tokenizer" -- "$BIN" eval "$T/PA/checkpoint.h5" --data "$T/bpe"
for x in x3 x4 x5; do [ ! -e "$T/$x/checkpoint.h5" ] || fail "a refused run ($x) wrote a checkpoint"; done

[ $fails -eq 0 ] && echo "e2e-spm-pretrain: all checks passed"
[ $fails -eq 0 ]
