#!/bin/sh
# e2e-prep.sh — `deberta prep` end to end: flags, bad inputs (one clear error line, right exit code),
# byte-identical outputs across runs and thread counts, and the written shards read back with h5py
# and decoded by an independent Python reader of the tokenizer file (docs/FORMATS.md).
# Exit 0 = pass, 77 = skipped (reason printed), anything else = fail.
. "$(dirname "$0")/lib-e2e.sh"
BIN=${BUILD:-build}/deberta
PY=/usr/bin/python3
[ -x "$BIN" ] || { echo "skip: $BIN not built"; exit 77; }
$PY -c "import h5py, numpy" 2>/dev/null || { echo "skip: /usr/bin/python3 lacks h5py/numpy (scripts/install-deps.sh)"; exit 77; }

T=$(mktemp -d /tmp/deberta_e2e_prep_XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

# expect CODE NEEDLE -- command...: exit code and a single 'error:' line containing NEEDLE
expect() { _c=$1; shift; e2e_bad --rc "$_c" "$@"; } # (lib-e2e.sh)

# ---- flags
"$BIN" prep --help >"$T/help" || fail "--help exit code"
for f in --input --out --vocab-size --val-fraction --shard-tokens --tokenizer --seed --threads 8192; do
    grep -q -- "$f" "$T/help" || fail "--help does not mention $f"
done
mkdir -p "$T/in/sub"
printf 'Hello world.\n\nSecond document.\n' >"$T/in/a.txt"
expect 2 "unknown flag" -- "$BIN" prep --input "$T/in" --out "$T/o" --bogus 1
expect 2 "vocab-size" -- "$BIN" prep --input "$T/in" --out "$T/o" --vocab-size abc
expect 2 "vocab-size" -- "$BIN" prep --input "$T/in" --out "$T/o" --vocab-size 100
expect 2 "val-fraction" -- "$BIN" prep --input "$T/in" --out "$T/o" --val-fraction 1.5
expect 2 "--out is required" -- "$BIN" prep --input "$T/in"
expect 2 "--input is required" -- "$BIN" prep --out "$T/o"

# ---- bad inputs: unreadable path, empty input, invalid JSON, bad tokenizer file
expect 1 "$T/nope.txt" -- "$BIN" prep --input "$T/nope.txt" --out "$T/o"
mkdir -p "$T/empty"; : >"$T/empty/e.txt"; printf '\n \n\n' >"$T/empty/blank.txt"
expect 1 "e.txt: the file is empty (0 bytes)" -- "$BIN" prep --input "$T/empty" --out "$T/o"
rm "$T/empty/e.txt"
expect 1 "no documents" -- "$BIN" prep --input "$T/empty" --out "$T/o"
mkdir -p "$T/nofiles"
expect 1 "no .txt or .jsonl files" -- "$BIN" prep --input "$T/nofiles" --out "$T/o"
mkdir -p "$T/badjson"; printf '{"text": "ok"}\n{"text": "unterminated}\n' >"$T/badjson/x.jsonl"
expect 1 "x.jsonl:2:" -- "$BIN" prep --input "$T/badjson" --out "$T/o"
printf 'not a tokenizer' >"$T/tok.bin"
expect 1 "tokenizer $T/tok.bin" -- "$BIN" prep --input "$T/in" --out "$T/o" --tokenizer "$T/tok.bin"
[ ! -e "$T/o/train-00000.h5" ] || fail "a failed prep left a shard"

# ---- a small corpus: .txt with blank-line documents, .jsonl with escapes, invalid UTF-8, nesting
$PY - "$T/in" <<'EOF'
import json, os, random, sys
d = sys.argv[1]
rnd = random.Random(5)
words = "the of and to in a is that for it as was with be by on jury election county said Friday".split()
docs = []
for i in range(300):
    n = rnd.randint(3, 60)
    docs.append(" ".join(rnd.choice(words) for _ in range(n)) + ".")
with open(os.path.join(d, "sub", "b.txt"), "w") as f:
    f.write("\n\n".join(docs[:200]) + "\n")
with open(os.path.join(d, "c.jsonl"), "w") as f:
    for t in docs[200:]:
        f.write(json.dumps({"id": 1, "text": t + " caf\u00e9 \U0001F600 \u4e2d\n\ttab"}) + "\n")
with open(os.path.join(d, "d.txt"), "wb") as f:
    f.write(b"invalid utf-8: \xff\xfe \xc3( \xed\xa0\x80 end\n\nlast \xe2\x96\x81 marker\n")
EOF
"$BIN" prep --input "$T/in" --out "$T/o1" --vocab-size 400 --val-fraction 0.1 --shard-tokens 2000 --threads 1 >"$T/sum1" 2>"$T/log1" \
    || fail "prep run 1: $(cat "$T/log1")"
"$BIN" prep --input "$T/in" --out "$T/o2" --vocab-size 400 --val-fraction 0.1 --shard-tokens 2000 --threads 2 >"$T/sum2" 2>"$T/log2" \
    || fail "prep run 2: $(cat "$T/log2")"
grep -q "^prep: " "$T/sum1" || fail "no summary line"
n1=$(ls "$T/o1" | wc -l); n2=$(ls "$T/o2" | wc -l)
[ "$n1" -eq "$n2" ] && [ "$n1" -gt 4 ] || fail "file counts $n1 vs $n2"
for f in "$T"/o1/*; do
    cmp -s "$f" "$T/o2/$(basename "$f")" || fail "$(basename "$f") differs between runs (1 vs 2 threads)"
done
ls "$T/o1" | grep -q '\.tmp$' && fail "temporary files left"
ls "$T/o1/val-00000.h5" >/dev/null 2>&1 || fail "no val shard"

# ---- read back with h5py; decode every document with an independent reader of tokenizer.bin
$PY - "$T/in" "$T/o1" <<'EOF' || fail "h5py read-back"
import glob, json, os, struct, sys
import h5py, numpy as np
ind, out = sys.argv[1], sys.argv[2]
def fnv(b):
    h = 0xcbf29ce484222325
    for x in b: h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h
tb = open(os.path.join(out, "tokenizer.bin"), "rb").read()
assert tb[:8] == b"DBTOKENZ"
ver, vocab, nspec, nch, nm = struct.unpack("<5I", tb[8:28])
assert ver == 1 and nspec == 5 and vocab == 261 + nch + nm
assert struct.unpack("<Q", tb[-8:])[0] == fnv(tb[:-8])
pieces = [b"[PAD]", b"[CLS]", b"[SEP]", b"[UNK]", b"[MASK]"] + [bytes([i]) for i in range(256)]
p = 28
for _ in range(nch):
    l = tb[p]; pieces.append(tb[p + 1:p + 1 + l]); p += 1 + l
for _ in range(nm):
    a, b = struct.unpack("<II", tb[p:p + 8]); pieces.append(pieces[a] + pieces[b]); p += 8
assert p == len(tb) - 8 and len(pieces) == vocab
# the documents prep should have seen
want = []
for f in sorted(glob.glob(os.path.join(ind, "**", "*.*"), recursive=True)):
    raw = open(f, "rb").read()
    if f.endswith(".jsonl"):
        want += [json.loads(l)["text"].encode() for l in raw.split(b"\n") if l.strip()]
    else:
        import re
        want += [d.strip(b"\n") for d in re.split(rb"\n[ \t\r]*\n", raw) if d.strip()]
got = []
for split in ("train", "val"):
    for f in sorted(glob.glob(os.path.join(out, split + "-*.h5"))):
        h = h5py.File(f, "r")
        a = h.attrs
        assert a["format"] == b"deberta.c-shard" and a["version"] == 2, f
        assert a["vocab_size"] == vocab and a["split"] == split.encode()
        assert a["tokenizer_hash"].decode() == "%016x" % fnv(tb)
        assert (a["pad_id"], a["cls_id"], a["sep_id"], a["unk_id"], a["mask_id"]) == (0, 1, 2, 3, 4)
        assert bytes(h["tokenizer"][:]) == tb
        tok, off = h["tokens"], h["doc_offsets"][:]
        assert tok.dtype == np.uint16 and off.dtype == np.int64 and tok.chunks and tok.compression == "gzip"
        assert tok.fletcher32 and h["doc_offsets"].fletcher32, f
        assert a["max_token_id"] == tok[:].max() < vocab, f
        assert off[0] == 0 and off[-1] == len(tok) == a["n_tokens"] and len(off) == a["n_docs"] + 1
        assert np.all(np.diff(off) > 0)
        t = tok[:]
        assert t.max() < vocab and t.min() >= 5
        for i in range(len(off) - 1):
            got.append(b"".join(pieces[x] for x in t[off[i]:off[i + 1]]))
assert sorted(got) == sorted(want), (len(got), len(want))
assert any(b"\xff\xfe" in g for g in got)
# Hugging Face tokenizer.json: consistent vocab and merges
j = json.load(open(os.path.join(out, "tokenizer.json"), encoding="utf-8"))
v = j["model"]["vocab"]
assert len(v) == vocab and v["[MASK]"] == 4 and v["<0x0A>"] == 15 and j["model"]["byte_fallback"] is True
for m in j["model"]["merges"]:
    a, b = m.split(" ")
    assert a in v and b in v and a + b in v, m
print("read back %d documents, %d shards" % (len(got), len(glob.glob(os.path.join(out, "*.h5")))))
EOF

# ---- reuse the tokenizer; a second run with bigger shards removes the stale ones
"$BIN" prep --input "$T/in" --out "$T/o1" --tokenizer "$T/o1/tokenizer.bin" --val-fraction 0.1 >/dev/null 2>"$T/log3" \
    || fail "prep --tokenizer: $(cat "$T/log3")"
[ "$(ls "$T"/o1/train-*.h5 | wc -l)" -eq 1 ] || fail "stale train shards left: $(ls "$T/o1")"
cmp -s "$T/o1/tokenizer.bin" "$T/o2/tokenizer.bin" || fail "reused tokenizer.bin changed"

# ---- string attributes rewritten by h5py (numpy bytes: fixed length, NULLPAD, no terminating NUL)
# are read whole: the shards are still accepted
cp -r "$T/o1" "$T/o3"
$PY - "$T/o3" <<'EOF' || fail "h5py rewrite of the string attributes"
import glob, os, sys
import h5py, numpy as np
for f in glob.glob(os.path.join(sys.argv[1], "*.h5")):
    with h5py.File(f, "r+") as h:
        for k in ("format", "tokenizer_hash", "split"):
            v = bytes(h.attrs[k]).rstrip(b"\0")
            del h.attrs[k]
            h.attrs[k] = np.bytes_(v)
        t = h.attrs.get_id("format").get_type()
        assert t.get_strpad() == h5py.h5t.STR_NULLPAD and t.get_size() == len(b"deberta.c-shard"), f
EOF
# changed after they were written: refused by the seal until `deberta seal` vouches for them
"$BIN" pretrain --preset test --max_seq_len 16 --batch 2 --steps 1 --eval-every 0 --eval-batches 1 --data "$T/o3" --out "$T/run3" \
    >"$T/run3.log" 2>&1 && fail "shards changed by h5py were accepted without a new seal"
[ "$(grep -c '^error: shard .*does not match its seal.*deberta seal ' "$T/run3.log")" -eq 1 ] || fail "changed shard: $(cat "$T/run3.log")"
[ ! -e "$T/run3" ] || fail "a refused run left its directory"
"$BIN" seal "$T"/o3/*.h5 >/dev/null || fail "deberta seal of the shards h5py changed"
"$BIN" pretrain --preset test --max_seq_len 16 --batch 2 --steps 1 --eval-every 0 --eval-batches 1 --data "$T/o3" --out "$T/run3" \
    >"$T/run3.log" 2>&1 || fail "shards whose string attributes h5py rewrote are refused: $(grep error "$T/run3.log")"

# ---- a shard the shard fuzz target found: 11 bytes changed in the val shard of the fuzz seed corpus
# (tests/fuzz/run.sh makes it; prep's output is byte-deterministic) made HDF5 ask malloc for ~250 TiB.
# The offsets are those of the shard before the seal: the same bytes are now 512 further on.  The
# seal stops the file before libhdf5: one error line and rc 1.  Sealed again (as if on purpose), the
# file reaches libhdf5, which handles its failed allocation: still one error line and rc 1 (under
# ASan too: malloc may return NULL there).
awk 'BEGIN { srand(7); split("the a one every some that this my our your", det, " ");
      split("cat dog bird model teacher river city garden window letter", noun, " ");
      for (d = 0; d < 60; d++) { for (s = 0; s < 3; s++) printf "%s %s sees %s %s. ", det[1+int(rand()*10)], noun[1+int(rand()*10)], det[1+int(rand()*10)], noun[1+int(rand()*10)];
        printf "\n\n" } }' > "$T/fuzz-corpus.txt"
"$BIN" prep --input "$T/fuzz-corpus.txt" --out "$T/fz" --vocab-size 280 --val-fraction 0.2 >/dev/null 2>&1 || fail "fuzz seed prep"
# offset (1-based) and new byte value (octal), as `cmp -l` prints them
PATCH="134 375
1473 0
1474 14
4642 256
5333 11
6173 160
6174 141
6175 144
6176 137
6177 151
6178 144"
cp "$T/fz/val-00000.h5" "$T/fz-val-before.h5"
echo "$PATCH" | while read -r o v; do printf "\\$v" | dd of="$T/fz/val-00000.h5" bs=1 seek=$((o - 1 + 512)) conv=notrunc 2>/dev/null; done
# the patch was written: every byte holds its new value, and the shard differs from before
echo "$PATCH" | while read -r o v; do
    [ "$(od -An -to1 -j $((o - 1 + 512)) -N1 "$T/fz/val-00000.h5" | tr -d ' ')" = "$(printf %03o $((0$v)))" ] ||
        { echo "byte $o is not $v (octal)"; exit 1; }
done || fail "fuzz regression: the patch was not written"
cmp -s "$T/fz/val-00000.h5" "$T/fz-val-before.h5" && fail "fuzz regression: the patched shard was not written"
"$BIN" pretrain --preset test --max_seq_len 16 --batch 2 --steps 1 --data "$T/fz" --out "$T/fzrun" >"$T/fz.log" 2>&1
rc=$?
if [ $rc -ne 1 ] || [ "$(grep -c '^error:' "$T/fz.log")" -ne 1 ] || ! grep -q "val-00000.h5: does not match its seal" "$T/fz.log"; then
    fail "fuzz regression shard: rc $rc, $(cat "$T/fz.log")"
fi
"$BIN" seal "$T/fz/val-00000.h5" >/dev/null || fail "deberta seal of the fuzz regression shard"
"$BIN" pretrain --preset test --max_seq_len 16 --batch 2 --steps 1 --data "$T/fz" --out "$T/fzrun" >"$T/fz.log" 2>&1
rc=$?
if [ $rc -ne 1 ] || [ "$(grep -c '^error:' "$T/fz.log")" -ne 1 ] || ! grep -q "val-00000.h5" "$T/fz.log"; then
    fail "fuzz regression shard sealed again (huge HDF5 metadata allocation): rc $rc, $(cat "$T/fz.log")"
fi

if [ $fails -eq 0 ]; then echo "e2e-prep: all checks passed"; exit 0; fi
echo "e2e-prep: $fails check(s) failed"
exit 1
