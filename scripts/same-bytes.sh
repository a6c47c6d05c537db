#!/bin/sh
# same-bytes.sh — do two builds of deberta write the same bytes? The check of a refactor (issue #33):
# prep, prep-task (the Brown task, and each input format on the files of tests/fixtures/task), a fixed
# 3-step pretraining, a 3-step fine-tuning, predict (jsonl and conll, and bad inputs: their error lines
# land in the console), export, import and dump, each run with both binaries on the same inputs, and
# every file they write compared byte for byte (metrics.jsonl and the console without their timing
# fields, cmdline.txt without the binary's path, predict's speed lines left out).
#
# Usage:  sh scripts/same-bytes.sh BEFORE/deberta AFTER/deberta [CORPUS]
#   CORPUS: scripts/fetch-corpus.sh's folder (brown.txt, nlp-corpus.txt, brown-tagged/)  [data/corpus]
# Prints one line per output file (same / DIFFERS); exit 0 when every file is the same, 1 otherwise,
# 2 when a command failed under either build.
set -u
A=$1 B=$2 C=${3:-data/corpus}
F=$(cd "$(dirname "$0")/../tests/fixtures/task" && pwd) || exit 2
PY=/usr/bin/python3
for f in "$A" "$B"; do [ -x "$f" ] || { echo "error: $f is not an executable" >&2; exit 2; }; done
[ -d "$C/brown-tagged" ] || { echo "error: $C has no brown-tagged/ (sh scripts/fetch-corpus.sh)" >&2; exit 2; }
W=$(mktemp -d /tmp/same-bytes-XXXXXX) || exit 2
trap 'rm -rf "$W"' EXIT
head -c 1500000 "$C/brown.txt" > "$W/brown.txt"
head -c 800000 "$C/nlp-corpus.txt" > "$W/other.txt"
printf '{"tokens": ["The", "dog", "runs", "."]}\n{"tokens": ["A", "man", "sees", "the", "river", "."]}\n' > "$W/words.jsonl"
printf 'The DET\ndog NOUN\nruns VERB\n. .\n\nA DET\nman NOUN\nsees VERB\nthe DET\nriver ADJ\n. .\n' > "$W/words.conll"
printf 'The DET\ndog NOUN\n\nA DET\nman NOUN\nsees SEES\n' > "$W/bad-tag.conll"

# the same commands, in $W/a with the first binary and in $W/b with the second
run() { # DIR BIN
    d=$1 bin=$2
    mkdir -p "$d" && cd "$d" || exit 2
    {
        "$bin" prep --input ../brown.txt ../other.txt --out data --vocab-size 2000 --val-fraction 0.05 \
            --holdout-brown "$C/brown-tagged" --threads 2
        "$bin" prep-task --task pos --brown "$C/brown-tagged" --shards data --out task --seq-len 32
        "$bin" pretrain --preset test --data data --out pre --steps 3 --batch 4 --max_seq_len 32 --threads 2 \
            --seed 7 --eval-every 3 --eval-batches 2 --save-every 3 --log-every 1
        "$bin" finetune --init pre/checkpoint.h5 --task pos --data task --out ft --steps 3 --batch 4 --threads 2 \
            --seed 7 --eval-every 3
        # the user's input formats: task files, predictions, and one error line per bad input
        "$bin" prep-task --format tsv --train "$F/mrpc-train.tsv" --shards data --out t-tsv --seq-len 12 \
            --text-field "#1 String" --text-pair-field "#2 String" --label-field Quality
        "$bin" prep-task --format csv --train "$F/reviews.csv" --shards data --out t-csv --seq-len 24 --text-field review --label-field stars
        "$bin" prep-task --format jsonl --train "$F/cls.jsonl" --shards data --out t-jsonl --seq-len 24 --text-field text
        "$bin" prep-task --format jsonl --train "$F/tag.jsonl" --shards data --out t-tag --seq-len 32 --name ner
        "$bin" prep-task --format conll --train "$F/ner-train.conll" --shards data --out t-conll --seq-len 8 --name ner --tag-column 4
        "$bin" predict ft/best.h5 --input ../words.jsonl --format jsonl --output pred-jsonl.jsonl 2> pred-jsonl.err
        "$bin" predict ft/best.h5 --input ../words.conll --format conll --output pred-conll.jsonl 2> pred-conll.err
        "$bin" prep-task --format xml --train "$F/cls.jsonl" --shards data --out t-bad
        "$bin" prep-task --format csv --train "$F/reviews.csv" --shards data --out t-bad
        "$bin" prep-task --format jsonl --train "$F/tag.jsonl" --shards data --out t-bad --label-field tags
        "$bin" predict ft/best.h5 --input "$F/reviews.csv" --format csv --text-field review
        "$bin" predict ft/best.h5 --input "$F/reviews.csv" --format csv
        "$bin" predict ft/best.h5 --input "$F/ner-train.conll" --format conll
        "$bin" predict ft/best.h5 --input ../bad-tag.conll --format conll
        "$bin" predict ft/best.h5 --input ../words.jsonl
        "$bin" export pre/checkpoint.h5 hf --mlm-head official --rtd-head
        "$bin" import hf/discriminator --generator hf/generator --out imp
        "$bin" dump --weights pre/checkpoint.h5 --batch ../batch.h5 --out dump.h5
    } > console.txt 2>&1
    echo "rc $?" >> console.txt
    cd - > /dev/null || exit 2
}
C=$(cd "$C" && pwd)
$PY - "$W/batch.h5" <<'EOF'
import sys, h5py, numpy as np
r = np.random.default_rng(3)
ids = r.integers(5, 2000, size=(2, 32)).astype(np.int32); ids[:, 0] = 1; ids[:, -1] = 2
lab = np.zeros_like(ids); pos = r.random(ids.shape) < 0.15; pos[:, 0] = pos[:, -1] = False; pos[0, 3] = True
lab[pos] = ids[pos]; rep = ids.copy(); rep[pos] = r.integers(5, 2000, size=pos.sum()); ids[pos] = 4
with h5py.File(sys.argv[1], "w") as f:
    for k, v in (("input_ids", ids), ("attention_mask", np.ones_like(ids)), ("labels", lab), ("replaced_ids", rep)):
        f[k] = v
EOF
run "$W/a" "$A"
run "$W/b" "$B"
# a command that failed under either build makes the comparison meaningless (both may fail alike)
for side in a b; do
    grep -qx 'rc 0' "$W/$side/console.txt" || { echo "error: a command failed with the $([ $side = a ] && echo first || echo second) build:" >&2;
        grep '^error' "$W/$side/console.txt" | head -3 >&2; exit 2; }
done

# timing fields, the binary's path and its version line (it names the commit) are not the output
clean() {
    case "$1" in
        *.err) grep -v '^predict: .*examples/s\|^predict: the first batch' "$1" ;;
        *console.txt | *cmdline.txt) grep -v '^#\? \?deberta [0-9][0-9.]* (commit ' "$1" | clean_more "$1" ;;
        *) clean_more "$1" < "$1" ;;
    esac
}
clean_more() {
    case "$1" in
        *.jsonl) sed -E 's/"(tokens_per_s|seconds|elapsed_s|step_ms|time|wall_s|[a-z_]*_s|[a-z_]*seconds)": ?[-0-9.e+]+,? ?//g' ;;
        *console.txt) sed -E 's/[0-9.]+k? ?tok(ens)?\/s//g; s/[0-9.]+ ?ms//g; s/ETA [0-9hms]+//g; s/[0-9.]+ ?s\b//g' ;;
        *cmdline.txt) sed "s|$A||; s|$B||" ;;
        *) cat ;;
    esac
}
bad=0 seen=""
for f in $(cd "$W/a" && find . -type f | sort) $(cd "$W/b" && find . -type f | sort); do
    case " $seen " in *" $f "*) continue ;; esac
    seen="$seen $f"
    if [ ! -f "$W/a/$f" ] || [ ! -f "$W/b/$f" ]; then
        echo "DIFFERS  $f (only in $([ -f "$W/a/$f" ] && echo before || echo after))"; bad=1; continue
    fi
    if cmp -s "$W/a/$f" "$W/b/$f"; then echo "same     $f"
    elif [ "$(clean "$W/a/$f" | md5sum)" = "$(clean "$W/b/$f" | md5sum)" ]; then echo "same     $f (timings and version line aside)"
    else echo "DIFFERS  $f"; bad=1
    fi
done
[ "${KEEP:-0}" = 1 ] && { trap - EXIT; echo "kept: $W"; }
exit $bad
