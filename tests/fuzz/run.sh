#!/bin/sh
# Runs each libFuzzer target of build-fuzz/ for SECONDS: tests/fuzz/run.sh SECONDS TARGET...
# The seed corpus is made the way the tests make their files (build/deberta prep, a 2-step
# pretrain of the test preset, its export): a shard, a checkpoint, tokenizer.bin, config.txt,
# model.safetensors and config.json; with the small files tests/fuzz/seeds/make-seeds.py makes here
# (every safetensors dtype, config.json variants, SentencePiece models) and, for the task-input targets
# task_jsonl, task_csv, task_conll, the files of tests/fuzz/seeds/<target>/.
# libFuzzer adds its finds to build-fuzz/corpus/<target>/.  A crash is kept in build-fuzz/crashes/<target>/ and
# makes the run fail; turn it into a regression test (tests/test_shard.c, test_checkpoint.c, ...).
set -u
S=$1; shift
D=build/deberta
F=build-fuzz
[ -x "$D" ] || { echo "FAIL: $D is not built"; exit 1; }
W=$(mktemp -d /tmp/deberta-fuzz-seed.XXXXXX)
trap 'rm -rf "$W"' EXIT
awk 'BEGIN { srand(7); split("the a one every some that this my our your", det, " ");
      split("cat dog bird model teacher river city garden window letter", noun, " ");
      for (d = 0; d < 60; d++) { for (s = 0; s < 3; s++) printf "%s %s sees %s %s. ", det[1+int(rand()*10)], noun[1+int(rand()*10)], det[1+int(rand()*10)], noun[1+int(rand()*10)];
        printf "\n\n" } }' > "$W/corpus.txt"
$D prep --input "$W/corpus.txt" --out "$W/shards" --vocab-size 280 --val-fraction 0.2 > /dev/null 2>&1 || { echo "FAIL: seed prep"; exit 1; }
OMP_NUM_THREADS=1 $D pretrain --preset test --max_seq_len 16 --batch 2 --steps 2 --eval-every 0 --eval-batches 1 \
    --data "$W/shards" --out "$W/run" > /dev/null 2>&1 || { echo "FAIL: seed pretrain"; exit 1; }
$D export "$W/run/checkpoint.h5" "$W/hf" > /dev/null 2>&1 || { echo "FAIL: seed export"; exit 1; }
/usr/bin/python3 tests/fuzz/seeds/make-seeds.py "$W/seeds" || { echo "FAIL: tests/fuzz/seeds/make-seeds.py"; exit 1; }
for t in shard checkpoint tokenizer config safetensors hf_config spm "$@"; do
    mkdir -p "$F/corpus/$t" "$F/crashes/$t"
    for s in "tests/fuzz/seeds/$t" "$W/seeds/$t"; do [ -d "$s" ] && cp "$s"/* "$F/corpus/$t/"; done
done
cp "$W/shards/val-00000.h5" "$F/corpus/shard/seed-val.h5"
cp "$W/run/checkpoint.h5" "$F/corpus/checkpoint/seed.h5"
cp "$W/shards/tokenizer.bin" "$F/corpus/tokenizer/seed.bin"
cp "$W/run/config.txt" "$F/corpus/config/seed.txt"
cp "$W/hf/discriminator/model.safetensors" "$F/corpus/safetensors/seed-export.safetensors"
cp "$W/hf/discriminator/config.json" "$F/corpus/hf_config/seed-export.json"
failed=0
for t in "$@"; do
    # HDF5 keeps free lists for the life of the process (leak checking is left to make sanitize), and
    # on corrupt metadata it asks malloc for absurd sizes and handles the NULL: let malloc return it
    ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 OMP_NUM_THREADS=1 "$F/fuzz_$t" -max_total_time="$S" -rss_limit_mb=4096 -timeout=30 \
        -artifact_prefix="$F/crashes/$t/" -print_final_stats=1 "$F/corpus/$t" > "$F/fuzz_$t.log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$F/fuzz_$t.log")
    if [ $rc -eq 0 ]; then
        echo "fuzz $t: ${runs:-?} inputs executed in ${S} s, no finding (corpus: $(ls "$F/corpus/$t" | wc -l) files)"
    else
        echo "FAIL: fuzz $t: exit $rc after ${runs:-?} inputs; see $F/fuzz_$t.log and $F/crashes/$t/"
        grep -m1 -A12 "ERROR: \|deadly signal\|fuzz target exited" "$F/fuzz_$t.log"
        failed=1
    fi
done
exit $failed
