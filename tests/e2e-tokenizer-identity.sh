#!/bin/sh
# Tokenizer identity (FNV-1a 64 of the tokenizer file's bytes; docs/FORMATS.md): two tokenizers with
# the same vocabulary size must never meet.  Train shards of one and val shards of the other,
# tokenizer.bin of one beside shards of the other, eval of a checkpoint on shards of the other,
# --resume on data of the other, a checkpoint whose tokenizer_hash attribute disagrees with its bytes:
# each one error line naming both hashes, exit 1.
set -u
. "$(dirname "$0")/lib-e2e.sh"
BUILD=${BUILD:-build}
D=$BUILD/deberta
[ -x "$D" ] || { echo "FAIL: $D is not built"; exit 1; }
W=$(mktemp -d /tmp/deberta-e2e-tokid.XXXXXX)
trap 'rm -rf "$W"' EXIT
export OMP_NUM_THREADS=1

e2e_corpus 7 300 > "$W/a.txt"
e2e_corpus 8 300 | tr 'aeiou' 'eioua' > "$W/b.txt"
$D prep --input "$W/a.txt" --out "$W/A" --vocab-size 300 --val-fraction 0.1 > "$W/A.log" 2>&1 || { cat "$W/A.log"; fail "prep A"; }
$D prep --input "$W/b.txt" --out "$W/B" --vocab-size 300 --val-fraction 0.1 > "$W/B.log" 2>&1 || { cat "$W/B.log"; fail "prep B"; }
ha=$(sed -n 's/.*tokenizer \([0-9a-f]\{16\}\).*/\1/p' "$W/A.log"); hb=$(sed -n 's/.*tokenizer \([0-9a-f]\{16\}\).*/\1/p' "$W/B.log")
grep -q "vocab 300," "$W/A.log" && grep -q "vocab 300," "$W/B.log" || fail "the two tokenizers should both have 300 ids"
[ "$ha" != "$hb" ] || fail "the two corpora gave the same tokenizer"

E2E_DIR=$W
expect_err() { _p=$1; shift; e2e_bad "^error: .*$_p" -- "$@"; } # PATTERN COMMAND...: exit 1, one error line matching PATTERN (lib-e2e.sh)
RUN="--preset test --max_seq_len 32 --batch 4 --steps 2 --eval-every 0 --eval-batches 1"

# train shards of A, val shards of B
mkdir -p "$W/mixed" && cp "$W/A"/train-*.h5 "$W/A/tokenizer.bin" "$W/mixed/" && cp "$W/B"/val-*.h5 "$W/mixed/"
expect_err "val shards were made with tokenizer $hb, the train shards with $ha" $D pretrain $RUN --data "$W/mixed" --out "$W/r1"
[ ! -e "$W/r1" ] || fail "a refused run created its run directory"
# tokenizer.bin of B beside the shards of A
mkdir -p "$W/mixtok" && cp "$W/A"/*.h5 "$W/mixtok/" && cp "$W/B/tokenizer.bin" "$W/mixtok/"
expect_err "tokenizer.bin is tokenizer $hb, but the shards were made with $ha" $D pretrain $RUN --data "$W/mixtok" --out "$W/r2"
ok "pretrain refuses train/val shards or tokenizer.bin of two tokenizers with the same vocabulary size"

$D pretrain $RUN --data "$W/A" --out "$W/run" --stop-after 1 > "$W/run.log" 2>&1 || { cat "$W/run.log"; fail "run on A"; }
grep -q "^tokenizer_hash = $ha\$" "$W/run/config.txt" || fail "config.txt does not hold the tokenizer identity"
h5dump -a /tokenizer_hash "$W/run/checkpoint.h5" | grep -q "\"$ha\"" || fail "the checkpoint does not hold the tokenizer identity"
expect_err "shards were made with tokenizer $hb, but checkpoint .* was trained with tokenizer $ha" $D eval "$W/run/checkpoint.h5" --data "$W/B" --batches 1
expect_err "tokenizer differs" $D pretrain --resume "$W/run" --data "$W/B"
ok "config.txt and the checkpoint hold the identity; eval and --resume refuse shards of another tokenizer with the same vocabulary size"

# a config.txt of another tokenizer's run
cp -r "$W/run" "$W/run2" && sed -i "s/^tokenizer_hash = .*/tokenizer_hash = $hb/" "$W/run2/config.txt"
expect_err "'tokenizer_hash' is $ha in the checkpoint but $hb now" $D pretrain --resume "$W/run2" --data "$W/A"
# the attribute rewritten: the checkpoint is refused by every reader
cp "$W/run/checkpoint.h5" "$W/bad.h5"
/usr/bin/python3 -c "import h5py, sys; f = h5py.File(sys.argv[1], 'r+'); f.attrs.modify('tokenizer_hash', b'$hb')" "$W/bad.h5" 2>"$W/py.err" ||
    { cat "$W/py.err"; fail "rewriting the tokenizer_hash attribute with /usr/bin/python3 h5py (scripts/install-deps.sh installs it)"; }
expect_err "bad.h5: does not match its seal" $D eval "$W/bad.h5" --data "$W/A" --batches 1
$D seal "$W/bad.h5" >/dev/null || fail "deberta seal"  # as if on purpose: the identity check behind the seal
expect_err "tokenizer bytes hash to '$ha', attribute 'tokenizer_hash' says '$hb'" $D eval "$W/bad.h5" --data "$W/A" --batches 1
expect_err "tokenizer bytes hash to '$ha'" $D export "$W/bad.h5" "$W/export"
ok "a config.txt or a tokenizer_hash attribute of another tokenizer is refused (resume, eval, export)"
echo "e2e-tokenizer-identity: all checks passed"
