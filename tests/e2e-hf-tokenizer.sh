#!/bin/sh
# e2e-hf-tokenizer.sh — the exported tokenizer.json, loaded by Hugging Face tokenizers (official Rust
# library via its Node binding), must encode each input text to exactly our ids and decode them back
# to that text, on a corpus of hard strings (runs of spaces, tabs, CRLF, CJK, emoji, ZWJ, combining
# marks, NBSP, digits, punctuation, control characters, a long word).  Needs node and scripts/fetch-hf-tokenizers.sh
# (network); skipped (77) without them.
BIN=${BUILD:-build}/deberta
PY=/usr/bin/python3
NPM_DIR=${DEBERTA_NPM_DIR:-build/npm}
[ -x "$BIN" ] || { echo "skip: $BIN not built"; exit 77; }
command -v node >/dev/null 2>&1 || { echo "skip: node not installed"; exit 77; }
[ -d "$NPM_DIR/node_modules/tokenizers" ] || { echo "skip: HF tokenizers not installed (run scripts/fetch-hf-tokenizers.sh)"; exit 77; }
$PY -c "import h5py" 2>/dev/null || { echo "skip: /usr/bin/python3 lacks h5py"; exit 77; }
T=$(mktemp -d /tmp/deberta_e2e_hf_XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/in"
$PY - "$T/in/h.jsonl" <<'EOF'
import json, random, sys
r = random.Random(1)
docs = ["Hello,  world!!  Two  spaces\tand\ttabs\n\nblank line inside",
        "  leading spaces and trailing   ", "x1.5 42 \n y", "中文字符测试，日本語のテキスト。 😀👍🏽 🇩🇪 emoji",
        "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c9cole", "numbers 1234567890 3.14159 1,000,000 $5.00 (50%)",
        "punct: \"quoted\" 'single' [brackets] {braces} <angle> a/b\\c @#^&*_+=|~`",
        "ctrl \x00\x01\x02\x1f\x7f bell", "line1\r\nline2\rline3\n\n\nafter blank lines", " ", "\n\n", "\t \t",
        "word" * 300, " ".join("".join(r.choice("abcdefghij") for _ in range(r.randint(1, 12))) for _ in range(500)),
        "mixed\u00a0nbsp\u2003emspace\u3000ideographic", "Greek αβγ Cyrillic абв Arabic مرحبا Hindi नमस्ते",
        "combining e\u0301 a\u0308", "rare \U00010348 gothic \U0001F9D1\u200D\U0001F4BB zwj"]
docs = docs * 3 + ["The jury said the election was conducted. " * 5 for _ in range(50)]
with open(sys.argv[1], "w") as f:
    for d in docs: f.write(json.dumps({"text": d}) + "\n")
EOF
"$BIN" prep --input "$T/in" --out "$T/out" --vocab-size 600 --val-fraction 0 >/dev/null || { echo "FAIL: prep"; exit 1; }
[ ! -e "$T/out/train-00001.h5" ] || { echo "FAIL: prep wrote more than one shard: the documents' order is not checked"; exit 1; }
$PY - "$T/out" "$T/sample.json" "$T/in/h.jsonl" <<'EOF' || { echo "FAIL: reading shards"; exit 1; }
import h5py, json, struct, sys
out, dst, src = sys.argv[1], sys.argv[2], sys.argv[3]
tb = open(out + "/tokenizer.bin", "rb").read()
ver, vocab, nspec, nch, nm = struct.unpack("<5I", tb[8:28])
pieces = [b"[PAD]", b"[CLS]", b"[SEP]", b"[UNK]", b"[MASK]"] + [bytes([i]) for i in range(256)]
p = 28
for _ in range(nch):
    l = tb[p]; pieces.append(tb[p + 1:p + 1 + l]); p += 1 + l
for _ in range(nm):
    a, b = struct.unpack("<II", tb[p:p + 8]); pieces.append(pieces[a] + pieces[b]); p += 8
h = h5py.File(out + "/train-00000.h5", "r")
off, t = h["doc_offsets"][:], h["tokens"][:]
# the input documents, in order (one shard, no val split): HF must encode each text to our ids and
# decode our ids back to the text
docs = [json.loads(l)["text"] for l in open(src, encoding="utf-8")]
if len(docs) != len(off) - 1: sys.exit("%d documents in, %d in the shard" % (len(docs), len(off) - 1))
res = [{"text": docs[i], "ids": [int(x) for x in t[off[i]:off[i + 1]]]} for i in range(len(off) - 1)]
json.dump(res, open(dst, "w"))
EOF
NODE_PATH="$NPM_DIR/node_modules" node scripts/check-hf-tokenizer.js "$T/out/tokenizer.json" "$T/sample.json"
