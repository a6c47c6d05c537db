#!/bin/sh
# bench-tokenizer.sh [CORPUS_DIR] [VOCAB] — our tokenizer next to SentencePiece BPE, same run.
#
# Same input (the documents of CORPUS_DIR, default data/corpus from scripts/fetch-corpus.sh; one
# document per line for SentencePiece), same vocabulary size (default 8192), same thread count
# (all cores).  Reports training time, encoding throughput (MB of input text per second) and their
# ratios, then the batch loader's throughput on shards written by `deberta prep`.
# SentencePiece: Debian's python3-sentencepiece via /usr/bin/python3, model_type=bpe,
# byte_fallback=true, character_coverage=0.9995 (as ours), split_digits=false.
set -eu
CORPUS=${1:-data/corpus}
VOCAB=${2:-8192}
PY=/usr/bin/python3
BUILD=${BUILD:-build}
[ -d "$CORPUS" ] || { echo "error: bench-tokenizer: $CORPUS missing (run scripts/fetch-corpus.sh)" >&2; exit 1; }
make -s BUILD="$BUILD" "$BUILD/deberta" "$BUILD/bench_data"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
NPROC=$(nproc)
echo "== machine: $NPROC threads, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "== deberta.c prep (shards for the loader benchmark)"
"$BUILD/deberta" prep --input "$CORPUS" --out "$TMP/shards" --vocab-size "$VOCAB"
echo "== deberta.c tokenizer"
"$BUILD/bench_data" "$CORPUS" "$VOCAB" "$TMP/ours.bin" "$TMP/shards" | tee "$TMP/ours.txt"
echo "== SentencePiece $($PY -c 'import sentencepiece; print(sentencepiece.__version__)')"
"$PY" - "$CORPUS" "$VOCAB" "$NPROC" "$TMP" <<'EOF' | tee "$TMP/spm.txt"
import glob, os, re, sys, time
import sentencepiece as spm
corpus, vocab, nproc, tmp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
docs = []
for f in sorted(glob.glob(os.path.join(corpus, "**", "*.txt"), recursive=True)):
    raw = open(f, "rb").read().decode("utf-8", "replace")
    docs += [" ".join(d.split("\n")) for d in re.split(r"\n[ \t\r]*\n", raw) if d.strip()]
inp = os.path.join(tmp, "spm_input.txt")
with open(inp, "w", encoding="utf-8") as fh:
    fh.write("\n".join(docs) + "\n")
nbytes = sum(len(d.encode("utf-8")) for d in docs)
print("corpus_docs %d\ncorpus_mb %.2f" % (len(docs), nbytes / 1e6))
t = time.perf_counter()
spm.SentencePieceTrainer.train(input=inp, model_prefix=os.path.join(tmp, "spm"), vocab_size=vocab, model_type="bpe",
    character_coverage=0.9995, byte_fallback=True, num_threads=nproc, max_sentence_length=1 << 20,
    input_sentence_size=0, shuffle_input_sentence=False, split_digits=False, minloglevel=2,
    pad_id=0, bos_id=1, eos_id=2, unk_id=3, user_defined_symbols=["[MASK]"])
print("train_seconds %.3f" % (time.perf_counter() - t))
sp = spm.SentencePieceProcessor(model_file=os.path.join(tmp, "spm.model"))
for threads, key in ((nproc, "encode_mb_per_s"), (1, "encode_mb_per_s_1thread")):
    best = 1e30
    for _ in range(3):
        t = time.perf_counter()
        ids = sp.encode(docs, num_threads=threads)
        best = min(best, time.perf_counter() - t)
    print("%s %.2f" % (key, nbytes / 1e6 / best))
print("tokens %d" % sum(len(x) for x in ids))
EOF
echo "== ratios (deberta.c / SentencePiece; > 1 means ours is faster)"
val() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
awk -v a="$(val train_seconds "$TMP/spm.txt")" -v b="$(val train_seconds "$TMP/ours.txt")" \
    'BEGIN { printf "training speed ratio (SentencePiece seconds / ours): %.1fx\n", a / b }'
awk -v a="$(val encode_mb_per_s "$TMP/ours.txt")" -v b="$(val encode_mb_per_s "$TMP/spm.txt")" \
    'BEGIN { printf "encoding throughput ratio, all threads: %.1fx\n", a / b }'
awk -v a="$(val encode_mb_per_s_1thread "$TMP/ours.txt")" -v b="$(val encode_mb_per_s_1thread "$TMP/spm.txt")" \
    'BEGIN { printf "encoding throughput ratio, 1 thread: %.1fx\n", a / b }'
