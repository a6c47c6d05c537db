#!/bin/sh
# A full disk at every kind of write: prep (tokenizer files, shards), pretrain (a checkpoint with
# room for one but not the next, --resume on the still-full disk, then --resume with room again),
# export, prep-task, finetune, import, dump-encoder and seal.  Each failure must be one error line and exit 1, with the previous good file intact and no
# .tmp left; the resumed run must end exactly where an uninterrupted one does.
# Needs to mount small tmpfs file systems (root); skipped with a message otherwise.
set -u
. "$(dirname "$0")/lib-e2e.sh"
BUILD=${BUILD:-build}
D=$BUILD/deberta
[ -x "$D" ] || { echo "FAIL: $D is not built"; exit 1; }
W=$(mktemp -d /tmp/deberta-e2e-full-disk.XXXXXX)
FS=$W/fs
mkdir -p "$FS"
cleanup() { umount "$FS" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
export OMP_NUM_THREADS=2

# mount_fs KBYTES: a fresh tmpfs of that size on $FS
mount_fs() {
    umount "$FS" 2>/dev/null
    mount -t tmpfs -o "size=${1}k" tmpfs "$FS" 2>"$W/mount.err"
}
if ! mount_fs 64; then
    echo "SKIPPED: e2e-full-disk: cannot mount a tmpfs ($(cat "$W/mount.err")); run the tests as root to check full-disk handling"
    exit 77
fi

# expect_full_disk PATTERN COMMAND...: exit 1, stderr ending in its one error line, matching PATTERN (the
# disk fills mid-run, so progress may come first; no crash, no HDF5 stack: lib-e2e.sh's e2e_bad --late),
# no .tmp in $FS
E2E_DIR=$W
expect_full_disk() {
    pat=$1; shift
    e2e_bad --late "^error: .*$pat" -- "$@"
    [ -z "$(find "$FS" -name '*.tmp')" ] || { find "$FS" -name '*.tmp'; fail "'$*' left a .tmp file"; }
}

e2e_corpus 7 300 > "$W/corpus.txt"
PREP="prep --input $W/corpus.txt --vocab-size 320 --val-fraction 0.1"
$D $PREP --out "$W/shards" > /dev/null 2>&1 || fail "prep on a normal disk"

# prep: 8 KiB holds tokenizer.bin but not tokenizer.json; 20 KiB holds both but not the shards
mount_fs 8
expect_full_disk "tokenizer.json: write failed" $D $PREP --out "$FS/shards"
mount_fs 20
expect_full_disk "shard .*train-00000.h5: cannot write .*disk full" $D $PREP --out "$FS/shards"
[ ! -e "$FS/shards/train-00000.h5" ] || fail "prep on a full disk left a shard under its final name"
# a second prep over complete shards on a disk that has filled up meanwhile: the old shards survive
mount_fs 128
$D $PREP --out "$FS/shards" > /dev/null 2>&1 || fail "prep into 128 KiB"
cp -r "$FS/shards" "$W/shards-before"
head -c $(( $(df -k --output=avail "$FS" | tail -1) * 1024 - 12288 )) /dev/zero > "$FS/filler" 2>/dev/null
expect_full_disk "shard .*: cannot write .*disk full" $D $PREP --out "$FS/shards"
for f in train-00000.h5 val-00000.h5; do cmp -s "$W/shards-before/$f" "$FS/shards/$f" || fail "a failed prep changed $f"; done
ok "prep on a full disk (tokenizer.json, a new shard, a shard over an old one): one error line, exit 1, old shards intact, no .tmp"

# pretrain: room for the step-2 checkpoint but not the step-4 one (written beside it as .tmp)
RUN="--preset test --max_seq_len 32 --data $W/shards --batch 4 --steps 4 --save-every 2 --eval-every 2 --eval-batches 1 --log-every 1"
$D pretrain $RUN --out "$W/ref" > "$W/ref.log" 2>&1 || { cat "$W/ref.log"; fail "reference run"; }
$D pretrain $RUN --out "$W/ref2" --stop-after 2 > /dev/null 2>&1 || fail "reference run of 2 steps"
ck=$(( $(stat -c %s "$W/ref/checkpoint.h5") / 1024 ))
mount_fs $(( ck * 3 / 2 + 16 ))
expect_full_disk "checkpoint .*disk full.*previous checkpoint is intact.*--resume" $D pretrain $RUN --out "$FS/run"
cmp -s "$FS/run/checkpoint.h5" "$W/ref2/checkpoint.h5" || fail "after a failed save, checkpoint.h5 is not the step-2 checkpoint"
expect_full_disk "checkpoint .*disk full" $D pretrain --resume "$FS/run" --data "$W/shards"
cmp -s "$FS/run/checkpoint.h5" "$W/ref2/checkpoint.h5" || fail "a --resume on a full disk changed checkpoint.h5"
mount -o remount,size=$(( ck * 3 + 64 ))k "$FS" || fail "remount with more room"
$D pretrain --resume "$FS/run" --data "$W/shards" > "$W/resume.log" 2>&1 || { cat "$W/resume.log"; fail "--resume with room again"; }
cmp -s "$FS/run/checkpoint.h5" "$W/ref/checkpoint.h5" || fail "the resumed run's final checkpoint differs from the uninterrupted run's"
cmp -s "$FS/run/metrics.jsonl" "$W/ref/metrics.jsonl" || fail "the resumed run's metrics.jsonl differs from the uninterrupted run's"
ok "pretrain with room for one checkpoint: one error line, exit 1, step-2 checkpoint intact (also after a --resume on the full disk); with room again --resume ends byte-identical to the uninterrupted run"

# export onto a full disk
mount_fs 16
expect_full_disk "export: .*" $D export "$W/ref/checkpoint.h5" "$FS/export"
ok "export on a full disk: one error line, exit 1, no .tmp"
# ---- prep-task, finetune, import, dump-encoder and seal
. "$(dirname "$0")/lib-brown.sh"
make_brown_corpus "$W/brown"
$D prep --input "$W/brown/brown.txt" "$W/brown/other.txt" --out "$W/bd" --vocab-size 300 --holdout-brown "$W/brown/brown-tagged" > "$W/log" 2>&1 ||
    { cat "$W/log"; fail "prep --holdout-brown"; }
$D prep-task --task pos --brown "$W/brown/brown-tagged" --shards "$W/bd" --out "$W/task" --seq-len 24 > "$W/log" 2>&1 || { cat "$W/log"; fail "prep-task"; }
$D export "$W/ref/checkpoint.h5" "$W/hf" --rtd-head > "$W/log" 2>&1 || { cat "$W/log"; fail "export"; }
FT="--task pos --data $W/task --steps 4 --batch 2 --eval-every 2 --save-every 2"
# full KBYTES PATTERN COMMAND...: on a fresh tmpfs of KBYTES
full() { kb=$1; shift; mount_fs "$kb" || fail "mount"; expect_full_disk "$@"; }
full 24 "disk full\|No space\|write failed" $D prep-task --task pos --brown "$W/brown/brown-tagged" --shards "$W/bd" --out "$FS/task" --seq-len 24
full 24 "disk full\|No space\|write failed\|cannot write" $D finetune --init scratch --preset test $FT --out "$FS/ft"
full 24 "disk full\|No space\|write failed\|cannot write" $D import "$W/hf/discriminator" --out "$FS/imp"
full 16 "weights .*w.h5: cannot write .*(No space left on device; disk full)" $D dump-encoder --init --preset test --out "$FS/w.h5"
mount_fs 64
cp "$W/bd/tokenizer.bin" "$FS/"  # a file to leave almost no room
tail -c +513 "$W/shards/val-00000.h5" > "$FS/old.h5"  # without its seal
head -c $(( $(df -k --output=avail "$FS" | tail -1) * 1024 - 4096 )) /dev/zero > "$FS/filler" 2>/dev/null
cp "$FS/old.h5" "$W/old.h5"
expect_full_disk "disk full\|No space\|cannot write" $D seal "$FS/old.h5"
cmp -s "$FS/old.h5" "$W/old.h5" || fail "a seal on a full disk changed the file"
ok "full disk under prep-task, finetune, import, dump-encoder and seal: one error line, exit 1, no .tmp, the file intact"
echo "e2e-full-disk: all checks passed"
