#!/bin/sh
# The bad-input suite (issue #16): every command and every reader of build/deberta given bad input
# ends in exactly one `error:` line on stderr and exit status 1 (2 for a command-line mistake), no
# crash, nothing already written lost (the files a refused command would have replaced are compared
# byte for byte) and no .tmp left.  Run in both builds by `make test` and under ASan/UBSan by `make
# sanitize`.  Other suites hold more cases of their own (e2e-prep, e2e-pretrain, e2e-finetune,
# e2e-import, e2e-spm, e2e-parity-dump, e2e-tokenizer-identity, e2e-run-dir, e2e-full-disk).
#   commands: prep, pretrain, eval, export, import, dump, dump-encoder, encode, prep-task, finetune,
#             bench, gradcheck, seal (and seal --check); scripts/fetch-corpus.sh and
#             scripts/fetch-hf-tokenizers.sh (unknown option, two directories, --help)
#   readers:  shard, checkpoint, tokenizer.bin, config text, task file, safetensors + config.json,
#             SentencePiece model, parity weights and batch files, tagged Brown texts, text inputs
#   a byte changed in the middle of a shard, a checkpoint, a task file, tokenizer.bin and a
#   model.safetensors: one error line, exit 1
#   an empty (0-byte) file of every kind: one error line "<what> <file>: the file is empty (0 bytes)"
. "$(dirname "$0")/lib-e2e.sh"
e2e_need_bin
e2e_tmpdir W deberta-e2e-bad-input
export OMP_NUM_THREADS=1
D=$BIN
cases=0

# bad RC NEEDLE COMMAND...: exit status RC, stderr one "error: ..." line matching NEEDLE (a grep
# pattern), nothing else (no progress, no sanitizer report, no HDF5 error stack): lib-e2e.sh's e2e_bad
E2E_DIR=$W
bad() {
    want=$1 needle=$2; shift 2
    cases=$((cases + 1))
    e2e_bad --rc "$want" "$needle" -- "$@"
    echo "ok   $(cut -c1-160 "$W/err")"
}
# e2e_bad itself: it refuses a second line (also an unterminated one), a line without "error: ", a
# status other than the one asked for, a signal's status under --rc any, a line without the needle
selfcheck() { # WHAT ARGS...: e2e_bad ARGS must fail
    _what=$1; shift
    ( fail() { exit 1; }; e2e_bad "$@" ) > /dev/null && fail "e2e_bad accepted $_what"
}
selfcheck "two lines" x -- sh -c 'echo "error: x" >&2; echo "error: y" >&2; exit 1'
selfcheck "a note before" x -- sh -c 'echo "note: n" >&2; echo "error: x" >&2; exit 1'
selfcheck "an unterminated second line" x -- sh -c 'printf "error: x\nmore" >&2; exit 1'
selfcheck "no error: prefix" x -- sh -c 'echo "x" >&2; exit 1'
selfcheck "exit 0" x -- sh -c 'echo "error: x" >&2'
selfcheck "exit 2 for 1" x -- sh -c 'echo "error: x" >&2; exit 2'
selfcheck "a signal" --rc any x -- sh -c 'echo "error: x" >&2; kill -SEGV $$'
selfcheck "a signal's status" --rc any x -- sh -c 'echo "error: x" >&2; exit 139'
selfcheck "no needle" y -- sh -c 'echo "error: x" >&2; exit 1'
selfcheck "--late: a second error line" --late x -- sh -c 'echo "error: y" >&2; echo "error: x" >&2; exit 1'
selfcheck "--late: a line after the error" --late x -- sh -c 'echo "error: x" >&2; echo "step 2 (x)" >&2; exit 1'
selfcheck "--late: a sanitizer's report" --late x -- sh -c 'echo "==1==ERROR: AddressSanitizer: x" >&2; echo "error: x" >&2; exit 1'
selfcheck "--late: the needle only in the progress" --late x -- sh -c 'echo "step x" >&2; echo "error: y" >&2; exit 1'
e2e_bad --late "x" -- sh -c 'echo "step 1" >&2; echo "error: x" >&2; exit 1'
e2e_bad --rc any "x" -- sh -c 'echo "error: x" >&2; exit 2'
e2e_bad "x" -- sh -c 'echo "error: x" >&2; exit 1'
ok "e2e_bad refuses two lines, a note before, no 'error: ', a wrong status, a signal, a missing needle (and under --late a second error line, a line after it, a sanitizer's report)"
# flip FILE [OFFSET]: one byte of FILE changed (xor 1), in the middle unless OFFSET is given
flip() {
    sz=$(stat -c %s "$1")
    at=${2:-$((sz / 2))}
    b=$(od -An -tu1 -j "$at" -N1 "$1" | tr -d ' ')
    printf "\\$(printf %o $((b ^ 1)))" | dd of="$1" bs=1 seek="$at" conv=notrunc 2>/dev/null
}
# snap DIR / same DIR: a copy of DIR now; later, every file of the copy unchanged in DIR
snap() { rm -rf "$W/snap.$(basename "$1")"; cp -r "$1" "$W/snap.$(basename "$1")"; }
same() {
    for f in "$W/snap.$(basename "$1")"/*; do
        # RUNDIR/lock names whoever took the run last (docs/FORMATS.md): a refused --resume takes it
        # before it finds the checkpoint bad, and the lock holds no result
        [ "$(basename "$f")" = lock ] && continue
        cmp -s "$f" "$1/$(basename "$f")" || fail "$1/$(basename "$f") changed by a refused command"
    done
    [ -z "$(find "$1" -name '*.tmp')" ] || fail "a refused command left a .tmp in $1"
}

# ---- fixtures: shards, a 2-step run, synthetic tagged Brown texts, task files, an export
e2e_corpus 11 120 4 > "$W/corpus.txt"
$D prep --input "$W/corpus.txt" --out "$W/d" --vocab-size 300 --val-fraction 0.2 > "$W/log" 2>&1 || { cat "$W/log"; fail "prep"; }
RUN="--preset test --max_seq_len 16 --batch 2 --eval-every 0 --eval-batches 1"
$D pretrain $RUN --steps 2 --data "$W/d" --out "$W/run" > "$W/log" 2>&1 || { cat "$W/log"; fail "pretrain"; }
C=$W/brown
mkdir -p "$C/brown-tagged"
for g in a b; do
    for n in 1 2 3 4 5; do
        awk -v s="$n$g" 'BEGIN { srand(length(s) + substr(s, 1, 1) * 3); split("the a this every", DT, " ");
            split("dog cat house tree man car ship star", NN, " "); split("saw liked took found", VB, " ");
            for (i = 0; i < 12; i++) printf "\n\n\t%s/at %s/nn %s/vbd %s/at %s/nn ./.\n", DT[int(rand()*4)+1], NN[int(rand()*8)+1],
                VB[int(rand()*4)+1], DT[int(rand()*4)+1], NN[int(rand()*8)+1] }' > "$C/brown-tagged/c${g}0$n"
    done
done
for f in "$C"/brown-tagged/c*; do tr -s ' \t\n' '\n' <"$f" | grep . | sed 's|/[^/]*$||' | tr '\n' ' '; printf '\n\n'; done > "$C/brown.txt"
$D prep --input "$C/brown.txt" "$W/corpus.txt" --out "$W/bd" --vocab-size 300 --holdout-brown "$C/brown-tagged" > "$W/log" 2>&1 ||
    { cat "$W/log"; fail "prep --holdout-brown"; }
$D prep-task --task pos --brown "$C/brown-tagged" --shards "$W/bd" --out "$W/task" --seq-len 24 > "$W/log" 2>&1 ||
    { cat "$W/log"; fail "prep-task"; }
$D pretrain $RUN --steps 2 --data "$W/bd" --out "$W/brun" > "$W/log" 2>&1 || { cat "$W/log"; fail "pretrain on the Brown shards"; }
FT="--task pos --data $W/task --steps 4 --batch 2 --eval-every 2 --save-every 2"
$D finetune --init scratch --preset test $FT --out "$W/ft" --stop-after 2 > "$W/log" 2>&1 || { cat "$W/log"; fail "finetune"; }
$D export "$W/run/checkpoint.h5" "$W/hf" --rtd-head > "$W/log" 2>&1 || { cat "$W/log"; fail "export"; }
$D dump-encoder --init --preset test --out "$W/enc.w.h5" > "$W/log" 2>&1 || { cat "$W/log"; fail "dump-encoder --init"; }
ok "fixtures: shards, a 2-step run, task files, a fine-tuning run stopped at step 2, an export"

# corrupted copies: a byte changed in the middle, truncated, without the seal (the first 512 bytes
# cut: an HDF5 file of an older deberta.c), text
mkd() { rm -rf "$W/$1"; cp -r "$2" "$W/$1"; }
mkd d-flip "$W/d"; flip "$W/d-flip/train-00000.h5"
mkd d-trunc "$W/d"; truncate -s -1000 "$W/d-trunc/val-00000.h5"
mkd d-old "$W/d"; for f in "$W"/d-old/*.h5; do tail -c +513 "$f" > "$f.x" && mv "$f.x" "$f"; done
mkd d-tok "$W/d"; flip "$W/d-tok/tokenizer.bin"
cp "$W/run/checkpoint.h5" "$W/ck-flip.h5"; flip "$W/ck-flip.h5"
printf 'not an HDF5 file\n' > "$W/text.h5"

# ---- shards (pretrain, eval, prep-task)
bad 1 "train-00000.h5: does not match its seal .*re-run deberta prep" $D pretrain $RUN --steps 1 --data "$W/d-flip" --out "$W/x1"
[ ! -e "$W/x1" ] || fail "a refused pretrain created its run directory"
bad 1 "val-00000.h5: is [0-9]* bytes, its seal says [0-9]*: truncated" $D pretrain $RUN --steps 1 --data "$W/d-trunc" --out "$W/x1"
bad 1 "train-00000.h5: has no seal .*deberta seal " $D pretrain $RUN --steps 1 --data "$W/d-old" --out "$W/x1"
mkd d-vflip "$W/d"; flip "$W/d-vflip/val-00000.h5"
bad 1 "shard .*val-00000.h5: does not match its seal" $D eval "$W/run/checkpoint.h5" --data "$W/d-vflip"
mkd bd-flip "$W/bd"; flip "$W/bd-flip/train-00000.h5"
cp -r "$W/task" "$W/task-keep"; snap "$W/task-keep"
bad 1 "train-00000.h5: does not match its seal" $D prep-task --task pos --brown "$C/brown-tagged" --shards "$W/bd-flip" --out "$W/task-keep"
same "$W/task-keep"
$D seal "$W"/d-old/*.h5 > /dev/null || fail "deberta seal of shards without a seal"
$D eval "$W/run/checkpoint.h5" --data "$W/d-old" --batches 1 > "$W/log" 2>&1 || { cat "$W/log"; fail "eval on the shards sealed by deberta seal"; }
cmp -s "$W/d-old/train-00000.h5" "$W/d/train-00000.h5" || fail "deberta seal did not give back the shard prep wrote"
ok "shards: changed, truncated, unsealed (deberta seal then gives back prep's bytes)"

# ---- tokenizer.bin (prep --tokenizer, pretrain, prep-task, encode)
bad 1 "tokenizer" $D pretrain $RUN --steps 1 --data "$W/d-tok" --out "$W/x1"
snap "$W/d"
bad 1 "tokenizer.bin" $D prep --input "$W/corpus.txt" --out "$W/d" --tokenizer "$W/d-tok/tokenizer.bin"
same "$W/d"
head -c 30 "$W/d/tokenizer.bin" > "$W/tok-trunc.bin"
bad 1 "tok-trunc.bin" $D encode --tokenizer "$W/tok-trunc.bin" "$W/corpus.txt"
bad 1 "tokenizer.bin" $D encode --tokenizer "$W/d-tok/tokenizer.bin" "$W/corpus.txt"
mkd bd-tok "$W/bd"; flip "$W/bd-tok/tokenizer.bin"
bad 1 "tokenizer.bin" $D prep-task --task pos --brown "$C/brown-tagged" --shards "$W/bd-tok" --out "$W/x2"
: > "$W/empty.bin"
bad 1 "empty.bin" $D encode --tokenizer "$W/empty.bin" "$W/corpus.txt"

# ---- SentencePiece model (encode)
printf 'this is not a protobuf\n' > "$W/bad.model"
bad 1 "bad.model" $D encode --tokenizer "$W/bad.model" "$W/corpus.txt"
bad 1 "no-such.txt" $D encode --tokenizer "$W/d/tokenizer.bin" "$W/no-such.txt"

# ---- text inputs (prep): nothing of an earlier prep in the same folder is lost
snap "$W/d"
printf '{"text": "one"}\n{"text": 5}\n' > "$W/bad.jsonl"
bad 1 "bad.jsonl:2" $D prep --input "$W/bad.jsonl" --out "$W/d" --vocab-size 300
printf '\n\n   \n' > "$W/blank.txt"
bad 1 "no input documents\|no documents" $D prep --input "$W/blank.txt" --out "$W/d" --vocab-size 300
bad 1 "no-such-dir" $D prep --input "$W/no-such-dir" --out "$W/d" --vocab-size 300
same "$W/d"
bad 1 "text.h5" $D prep --input "$W/corpus.txt" --out "$W/text.h5/sub" --vocab-size 300

# ---- checkpoints (pretrain --resume, eval, export, dump, finetune --init / --resume)
snap "$W/run"
cp "$W/ck-flip.h5" "$W/run/checkpoint.h5"
bad 1 "checkpoint.h5: does not match its seal .*use an earlier checkpoint" $D pretrain --resume "$W/run" --data "$W/d"
cp "$W/snap.run/checkpoint.h5" "$W/run/checkpoint.h5"
same "$W/run"
bad 1 "ck-flip.h5: does not match its seal" $D eval "$W/ck-flip.h5" --data "$W/d"
bad 1 "text.h5: has no seal" $D eval "$W/text.h5" --data "$W/d"
bad 1 "format is 'deberta.c-shard'" $D eval "$W/d/train-00000.h5" --data "$W/d"
snap "$W/hf/generator"
bad 1 "ck-flip.h5: does not match its seal" $D export "$W/ck-flip.h5" "$W/hf"
same "$W/hf/generator"
bad 1 "ck-flip.h5: does not match its seal" $D finetune --init "$W/ck-flip.h5" $FT --out "$W/x3"
[ ! -e "$W/x3" ] || fail "a refused finetune created its run directory"
cp "$W/run/checkpoint.h5" "$W/ck-trunc.h5"; truncate -s -1 "$W/ck-trunc.h5"
bad 1 "ck-trunc.h5: is [0-9]* bytes, its seal says [0-9]*: truncated" $D dump --weights "$W/ck-trunc.h5" --batch "$W/text.h5" --out "$W/x.h5"
snap "$W/ft"
flip "$W/ft/checkpoint.h5"
bad 1 "checkpoint.h5: does not match its seal" $D finetune --resume "$W/ft"
cp "$W/snap.ft/checkpoint.h5" "$W/ft/checkpoint.h5"
same "$W/ft"
flip "$W/ft/best.h5" 2000
bad 1 "best.h5: does not match its seal" $D export "$W/ft/best.h5" "$W/x4"
cp "$W/snap.ft/best.h5" "$W/ft/best.h5"

# ---- config text (pretrain --config, --resume's config.txt, bench)
printf 'hidden_size = 16\nthis line has no equals sign\n' > "$W/bad.cfg"
bad 1 "bad.cfg" $D pretrain $RUN --steps 1 --data "$W/d" --out "$W/x1" --config "$W/bad.cfg"
printf 'no_such_key = 3\n' > "$W/unknown.cfg"
bad 1 "no_such_key" $D pretrain $RUN --steps 1 --data "$W/d" --out "$W/x1" --config "$W/unknown.cfg"
printf 'num_attention_heads = 0\n' > "$W/range.cfg"
bad 2 "num_attention_heads" $D pretrain $RUN --steps 1 --data "$W/d" --out "$W/x1" --config "$W/range.cfg"
[ ! -e "$W/x1" ] || fail "a refused pretrain created its run directory"
snap "$W/run"
sed -i 's/^hidden_size = .*/hidden_size = sixteen/' "$W/run/config.txt"
bad 1 "'hidden_size' is 16 in the checkpoint but sixteen now" $D pretrain --resume "$W/run" --data "$W/d"
cp "$W/snap.run/config.txt" "$W/run/config.txt"
printf 'hidden_size = 8\n' >> "$W/run/config.txt"
bad 1 "'hidden_size' is set twice now (the second time to 8)" $D pretrain --resume "$W/run" --data "$W/d"
cp "$W/snap.run/config.txt" "$W/run/config.txt"
same "$W/run"
bad 1 "hidden_size" $D bench step --preset test --hidden_size -3
bad 1 "unknown preset 'bogus'" $D bench --preset bogus

# ---- task files (finetune)
mkd task-flip "$W/task"; flip "$W/task-flip/train.h5"
bad 1 "train.h5: does not match its seal .*re-run deberta prep-task" $D finetune --init scratch --preset test $FT --data "$W/task-flip" --out "$W/x3"
mkd task-trunc "$W/task"; truncate -s 3000 "$W/task-trunc/dev.h5"
bad 1 "dev.h5: is 3000 bytes, its seal says" $D finetune --init scratch --preset test $FT --data "$W/task-trunc" --out "$W/x3"
mkd task-shard "$W/task"; cp "$W/bd/val-00000.h5" "$W/task-shard/test.h5"
bad 1 "test.h5: format is 'deberta.c-shard'" $D finetune --init scratch --preset test $FT --data "$W/task-shard" --out "$W/x3"
[ ! -e "$W/x3" ] || fail "a refused finetune created its run directory"

# ---- tagged Brown texts (prep-task)
mkd brown-bad "$C/brown-tagged"; printf '\n\n\tthe/at dog\n' >> "$W/brown-bad/ca01"
bad 1 "ca01" $D prep-task --task pos --brown "$W/brown-bad" --shards "$W/bd" --out "$W/x2"
bad 1 "no-such-brown" $D prep-task --task pos --brown "$W/no-such-brown" --shards "$W/bd" --out "$W/x2"

# ---- Hugging Face folders (import): config.json, model.safetensors
mkd hf-cfg "$W/hf/discriminator"; printf '{"model_type": "deberta-v2", ' > "$W/hf-cfg/config.json"
bad 1 "config.json" $D import "$W/hf-cfg" --out "$W/x5"
mkd hf-flip "$W/hf/discriminator"; flip "$W/hf-flip/model.safetensors"
bad 1 "model.safetensors: tensor '.*' does not match its crc32 metadata entry" $D import "$W/hf-flip" --out "$W/x5"
mkd hf-head "$W/hf/discriminator"; flip "$W/hf-head/model.safetensors" 5
bad 1 "model.safetensors: the header claims" $D import "$W/hf-head" --out "$W/x5"
bad 1 "no-such-hf" $D import "$W/no-such-hf" --out "$W/x5"
[ ! -e "$W/x5" ] || fail "a refused import created its run directory"

# ---- parity files (dump, dump-encoder, export of a weights file)
bad 1 "text.h5: not an HDF5 file" $D dump --weights "$W/text.h5" --batch "$W/text.h5" --out "$W/x.h5"
bad 1 "batch .*text.h5: not an HDF5 file" $D dump --weights "$W/run/checkpoint.h5" --batch "$W/text.h5" --out "$W/x.h5"
bad 1 "dataset 'input_ids' is missing" $D dump --weights "$W/run/checkpoint.h5" --batch "$W/d/val-00000.h5" --out "$W/x.h5"
bad 1 "text.h5" $D dump-encoder --weights "$W/text.h5" --inputs "$W/text.h5" --out "$W/x.h5"
bad 1 "inputs .*text.h5" $D dump-encoder --weights "$W/enc.w.h5" --inputs "$W/text.h5" --out "$W/x.h5"
bad 1 "text.h5: not an HDF5 file" $D export "$W/text.h5" "$W/x4"
[ ! -e "$W/x.h5" ] && [ ! -e "$W/x4" ] || fail "a refused dump or export wrote its output"

# ---- empty (0-byte) files, one of each kind: named as empty, with the reader's hint
E="the file is empty (0 bytes)"
: > "$W/empty.h5"
mkd d-e0 "$W/d"; : > "$W/d-e0/train-00000.h5"
bad 1 "shard .*d-e0/train-00000.h5: $E; re-run deberta prep$" $D pretrain $RUN --steps 1 --data "$W/d-e0" --out "$W/x1"
mkd d-e1 "$W/d"; : > "$W/d-e1/val-00000.h5"
bad 1 "shard .*d-e1/val-00000.h5: $E" $D eval "$W/run/checkpoint.h5" --data "$W/d-e1"
mkd d-e2 "$W/d"; : > "$W/d-e2/tokenizer.bin"
bad 1 "d-e2/tokenizer.bin: $E" $D pretrain $RUN --steps 1 --data "$W/d-e2" --out "$W/x1"
bad 1 "checkpoint .*empty.h5: $E; use an earlier checkpoint$" $D eval "$W/empty.h5" --data "$W/d"
bad 1 "checkpoint .*empty.h5: $E" $D finetune --init "$W/empty.h5" $FT --out "$W/x3"
bad 1 "empty.h5: $E" $D export "$W/empty.h5" "$W/x4"
mkd run-e "$W/run"; : > "$W/run-e/checkpoint.h5"
bad 1 "run-e/checkpoint.h5: $E" $D pretrain --resume "$W/run-e" --data "$W/d"
mkd run-ec "$W/run"; : > "$W/run-ec/config.txt"
bad 1 "run-ec/config.txt: $E" $D pretrain --resume "$W/run-ec" --data "$W/d"
# a file that exists but cannot be read (here a directory in its place) is not taken for an absent one
mkd run-dc "$W/run"; rm "$W/run-dc/config.txt"; mkdir "$W/run-dc/config.txt"
bad 1 "run-dc/config.txt: cannot read" $D pretrain --resume "$W/run-dc" --data "$W/d"
mkd d-dt "$W/d"; rm "$W/d-dt/tokenizer.bin"; mkdir "$W/d-dt/tokenizer.bin"
bad 1 "d-dt/tokenizer.bin: cannot read" $D pretrain $RUN --steps 1 --data "$W/d-dt" --out "$W/x1"
mkd task-e "$W/task"; : > "$W/task-e/dev.h5"
bad 1 "task .*task-e/dev.h5: $E; re-run deberta prep-task$" $D finetune --init scratch --preset test $FT --data "$W/task-e" --out "$W/x3"
bad 1 "tokenizer .*empty.bin: $E" $D encode --tokenizer "$W/empty.bin" "$W/corpus.txt"
bad 1 "tokenizer .*empty.bin: $E" $D prep --input "$W/corpus.txt" --out "$W/x7" --tokenizer "$W/empty.bin"
: > "$W/empty.model"
bad 1 "empty.model: $E" $D encode --tokenizer "$W/empty.model" "$W/corpus.txt"
mkd d-e3 "$W/d"; : > "$W/d-e3/spm.model"
bad 1 "d-e3/spm.model: $E" $D pretrain $RUN --steps 1 --data "$W/d-e3" --out "$W/x1"
: > "$W/empty.txt"
bad 1 "input .*empty.txt: $E" $D prep --input "$W/corpus.txt" "$W/empty.txt" --out "$W/x7" --vocab-size 300
: > "$W/empty.cfg"
bad 1 "config .*empty.cfg: $E" $D pretrain $RUN --steps 1 --data "$W/d" --out "$W/x1" --config "$W/empty.cfg"
mkd hf-e1 "$W/hf/discriminator"; : > "$W/hf-e1/model.safetensors"
bad 1 "hf-e1/model.safetensors: $E" $D import "$W/hf-e1" --out "$W/x5"
mkd hf-e2 "$W/hf/discriminator"; : > "$W/hf-e2/config.json"
bad 1 "hf-e2/config.json: $E" $D import "$W/hf-e2" --out "$W/x5"
mkd brown-e "$C/brown-tagged"; : > "$W/brown-e/ca02"
bad 1 "brown .*brown-e/ca02: $E" $D prep-task --task pos --brown "$W/brown-e" --shards "$W/bd" --out "$W/x6" --seq-len 24
bad 1 "empty.h5: $E" $D dump --weights "$W/empty.h5" --batch "$W/d/val-00000.h5" --out "$W/x.h5"
bad 1 "batch .*empty.h5: $E" $D dump --weights "$W/run/checkpoint.h5" --batch "$W/empty.h5" --out "$W/x.h5"
bad 1 "empty.h5: $E" $D dump-encoder --weights "$W/empty.h5" --inputs "$W/empty.h5" --out "$W/x.h5"
bad 1 "inputs .*empty.h5: $E" $D dump-encoder --weights "$W/enc.w.h5" --inputs "$W/empty.h5" --out "$W/x.h5"
bad 1 "empty.h5: $E" $D seal "$W/empty.h5"
bad 1 "empty.h5: $E" $D seal --check "$W/empty.h5"
for x in x1 x3 x4 x5 x6 x7 x.h5; do [ ! -e "$W/$x" ] || fail "a command refusing an empty file wrote $W/$x"; done
ok "empty files (shard, val shard, tokenizer.bin, spm.model, checkpoint, config.txt, task file, encode's tokenizers, text input, --config, model.safetensors, config.json, Brown text, parity weights and batches, seal): one error line naming the file as empty"

# ---- an output that is an input (another path to it too: a symlink, a hard link), a run directory, a
# sealed file, or in a missing folder (train/outpath.h): refused before anything is read (the batch
# or input given is not even valid) or written; the inputs byte for byte as they were
snap "$W/run"; snap "$W/d"; snap "$W/task"
ln -s "$W/run" "$W/run-link"; ln "$W/enc.w.h5" "$W/enc-hard.h5"; ln -s corpus.txt "$W/corpus-link.txt"
cp "$W/run/checkpoint.h5" "$W/ck-copy.h5"; cp "$W/enc.w.h5" "$W/enc-keep.h5"; cp "$W/corpus.txt" "$W/corpus-keep.txt"
bad 1 "dump: --out .*run-link/checkpoint.h5: is the input .*run/checkpoint.h5 (the same file)" \
    $D dump --weights "$W/run/checkpoint.h5" --batch "$W/text.h5" --out "$W/run-link/checkpoint.h5"
bad 1 "dump: --out .*run/checkpoint.h5: is a sealed deberta.c file" $D dump --weights "$W/ck-copy.h5" --batch "$W/text.h5" --out "$W/run/checkpoint.h5"
bad 1 "dump: --out .*no-such-dir/x.h5: cannot write a file in .*no-such-dir (No such file or directory)" \
    $D dump --weights "$W/run/checkpoint.h5" --batch "$W/text.h5" --out "$W/no-such-dir/x.h5"
bad 1 "dump-encoder: --out .*enc-hard.h5: is the input .*enc.w.h5" $D dump-encoder --weights "$W/enc.w.h5" --inputs "$W/text.h5" --out "$W/enc-hard.h5"
bad 1 "dump-encoder: --out .*task/train.h5: is a sealed deberta.c file" $D dump-encoder --init --preset test --out "$W/task/train.h5"
bad 1 "export: OUTDIR .*/run: is a run directory (it holds checkpoint.h5)" $D export "$W/ck-copy.h5" "$W/run"
bad 1 "export: OUTDIR .*ck-copy.h5: is the input" $D export "$W/ck-copy.h5" "$W/ck-copy.h5"
bad 1 "import: --out .*hf/discriminator: is the input .*(the same folder)" $D import "$W/hf/discriminator" --out "$W/hf/discriminator"
bad 1 "prep: --out .*corpus-link.txt: is the input .*corpus.txt" $D prep --input "$W/corpus.txt" --out "$W/corpus-link.txt"
bad 1 "prep: --out .*/run: is a run directory" $D prep --input "$W/corpus.txt" --out "$W/run"
bad 1 "prep-task: --out .*/task: is the input .*/task (the same folder)" \
    $D prep-task --format tsv --train "$W/text.h5" --text-field s --shards "$W/task" --out "$W/task"
bad 1 "prep-task: --out .*text.h5/t: cannot create it: .*text.h5 is not a folder (Not a directory)" \
    $D prep-task --format tsv --train "$W/text.h5" --text-field s --shards "$W/d" --out "$W/text.h5/t"
bad 1 "--out .*task: is the input" $D finetune --init scratch --preset test $FT --out "$W/task"
bad 1 "--out .*d: is the input" $D pretrain $RUN --steps 1 --data "$W/d" --out "$W/d"
same "$W/run"; same "$W/d"; same "$W/task"
cmp -s "$W/enc.w.h5" "$W/enc-keep.h5" && cmp -s "$W/ck-copy.h5" "$W/run/checkpoint.h5" && cmp -s "$W/corpus.txt" "$W/corpus-keep.txt" ||
    fail "a refused command changed its input"
[ ! -e "$W/no-such-dir" ] && [ -z "$(find "$W" -name '*.tmp-*' -o -name '.deberta-probe-*')" ] || fail "a refused command left a file or folder"
ok "outputs that are inputs (also by a symlink or a hard link), a run directory, a sealed file, or in a missing folder: refused, nothing changed"

# ---- seal, gradcheck (command-line mistakes are exit status 2)
bad 1 "neither sealed nor an HDF5 file" $D seal "$W/text.h5"
bad 1 "train-00000.h5: does not match its seal" $D seal --check "$W/d/val-00000.h5" "$W/d-flip/train-00000.h5"
$D seal --check "$W"/d/*.h5 "$W/run/checkpoint.h5" "$W"/task/*.h5 > "$W/log" 2>&1 || { cat "$W/log"; fail "seal --check of intact files"; }
bad 1 "no-such.h5: cannot open" $D seal "$W/no-such.h5"
bad 2 "gradcheck: no case for op 'bogus'" $D gradcheck --op bogus
bad 2 "seal: no FILE given" $D seal
# ---- the fetch scripts' command line (run inside $W: a mistaken argument must not become a directory)
R=$(pwd)
for s in fetch-corpus fetch-hf-tokenizers; do
    bad 2 "$s: unknown option '--bogus'" sh -c "cd '$W' && sh '$R/scripts/$s.sh' --bogus"
    bad 2 "$s: one directory at most" sh -c "cd '$W' && sh '$R/scripts/$s.sh' a b"
    [ ! -e "$W/--bogus" ] && [ ! -e "$W/a" ] || fail "$s.sh made a directory of a refused argument"
    sh "scripts/$s.sh" --help | grep -q "^$s.sh \[DIR\]" || fail "$s.sh --help prints no usage"
done
# ---- the usage's printed defaults are train_options_default's (a stray '%' in its text once shifted every value)
$D pretrain --help > "$W/usage" 2>&1 || true
for l in 'steps N .*\[2000\]$' 'batch B .*\[16\]$' 'seed S .*\[1234\]$' 'mask-prob P .*\[0\.15\]$' \
         'max-bad-steps K .*\[5\]$' 'lr X .*\[0\.00025; joint 0\.0005\]$' 'd-lr X .*\[2 x --lr\]$' 'max-grad-norm X .*\[0\.9 0\.999 1e-06 0\.01 1\]$'; do
    grep -q -- "--$l" "$W/usage" || { cat "$W/usage"; fail "pretrain --help: no line matching '--$l'"; }
done
ok "$cases bad inputs: one error line each, the right exit status, nothing lost"

echo "e2e-bad-input: all checks passed ($cases cases)"
