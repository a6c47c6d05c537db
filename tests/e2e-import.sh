#!/bin/sh
# e2e-import.sh — `deberta import` of Hugging Face DebertaV2 folders written by the PyTorch reference
# (scripts/reference: random init of the xsmall shape — hidden 384, 12 + 6 layers, 6 heads, FFN 1536,
# 256 buckets, max_relative_positions 512 — with a 1,000-token vocabulary to keep the test short;
# published V3 layout: discriminator deberta.* + mask_predictions.*, generator deberta.* + MLM head):
#   * float32 (official head names) and float16 (cls.predictions names) folders import, and
#     `deberta dump` of the run equals the reference run on the same folders: embedding output, hidden
#     states and MLM/RTD logits within 1e-5 (absolute), every gradient within 1e-4 (relative);
#   * import -> export (--mlm-head official --rtd-head) gives back every tensor byte for byte
#     (float16 ones as their exact float32 values);
#   * (the small `test` shape from here on, to keep the test short) bfloat16 imports; a discriminator
#     alone imports (generator of the default depth initialised; the summary line says so);
#   * export warns about the distance clamp exactly when max_relative_positions < max_position_embeddings;
#   * a folder as DebertaV2Model.save_pretrained writes it (no "deberta." prefix, no heads) imports as
#     the same tensors prefixed do, its config.json read as full JSON (\u escapes, long strings);
#   * scripts/convert-to-safetensors.py turns a PyTorch pickle into a file import reads;
#   * absurd sizes in config.json (num_hidden_layers 1000 / 100000, hidden_size 1048576, intermediate_size
#     1073741824, vocab_size 2147483647, ...): one line naming the bound or the tensor's shape, in under
#     1 s and 100 MB, before anything is allocated;
#   * bad input: config shapes that disagree with the tensors, a truncated safetensors file, a header
#     that lies about a tensor's size, an unknown dtype, a missing tensor, a pickle-only folder: one
#     error line each (the reader's other refusals: tests/test_safetensors.c).
# Exit 0 = pass, 77 = skipped (reason printed), anything else = fail.
. "$(dirname "$0")/lib-e2e.sh"
e2e_need_reference
e2e_need_bin
# the folders and checkpoints are a few hundred MB written with fsync: on tmpfs when there is one
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
    T=$(mktemp -d /dev/shm/e2e-import-XXXXXX) || exit 1
    trap 'rm -rf "$T"' EXIT
else
    e2e_tmpdir T e2e-import
fi
R=scripts/reference/deberta_ref.py
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }
bad() { e2e_bad "$@"; } # bad NEEDLE -- command...: exit 1 and exactly one error line containing NEEDLE

"$PY" $R init --preset xsmall --vocab 1000 --perturb --sharing gdes --seed 3 --out "$T/w.h5" > /dev/null || fail "reference init"
"$PY" $R inputs --weights "$T/w.h5" --batch 2 --seq 24 --seed 4 --out "$T/in.h5" > /dev/null || fail "reference inputs"
"$PY" $R write-hf --weights "$T/w.h5" --out "$T/f32" --dtype F32 --head official > /dev/null || fail "write-hf F32"
"$PY" $R write-hf --weights "$T/w.h5" --out "$T/f16" --dtype F16 --head cls > /dev/null || fail "write-hf F16"
"$PY" $R init --preset test --perturb --sharing gdes --seed 5 --out "$T/s.h5" > /dev/null || fail "reference init (test)"
"$PY" $R inputs --weights "$T/s.h5" --batch 2 --seq 12 --seed 6 --out "$T/s-in.h5" > /dev/null || fail "reference inputs (test)"
"$PY" $R write-hf --weights "$T/s.h5" --out "$T/s32" --dtype F32 > /dev/null || fail "write-hf F32 (test)"
"$PY" $R write-hf --weights "$T/s.h5" --out "$T/bf16" --dtype BF16 > /dev/null || fail "write-hf BF16"

for d in f32 f16; do
    "$BIN" import "$T/$d/discriminator" --generator "$T/$d/generator" --out "$T/run-$d" > "$T/$d.log" 2>&1 \
        || { cat "$T/$d.log"; fail "import $d"; continue; }
    grep -q "; 0 tensors initialised$" "$T/$d.log" || fail "import $d initialised tensors: $(cat "$T/$d.log")"
    "$BIN" dump --weights "$T/run-$d/checkpoint.h5" --batch "$T/in.h5" --out "$T/ours-$d.h5" > /dev/null || fail "dump $d"
    "$PY" $R dump --hf-generator "$T/$d/generator" --hf-discriminator "$T/$d/discriminator" --batch "$T/in.h5" \
        --out "$T/ref-$d.h5" --use-emd 1 --rtd-lambda 10 --training-mode decoupled > /dev/null || fail "reference dump $d"
    "$PY" $R compare --ours "$T/ours-$d.h5" --ref "$T/ref-$d.h5" --profile dump --show 3 \
        --tol '*embedding_output:abs:1e-5' --tol '*hidden_states/*:abs:1e-5' --tol '*emd/*:abs:1e-5' \
        --tol '*logits:abs:1e-5' --tol '*loss:rel:1e-5' --tol 'grad/*:rel:1e-4' > "$T/cmp-$d.txt" \
        || { cat "$T/cmp-$d.txt"; fail "import $d: deberta dump differs from the reference"; }
    grep "): [1-9][0-9]* tensors, 0 failing$" "$T/cmp-$d.txt" || fail "compare $d printed no summary (or compared no tensor)"
    "$BIN" export "$T/run-$d/checkpoint.h5" "$T/exp-$d" --mlm-head official --rtd-head > /dev/null 2> "$T/exp-$d.err" || fail "export $d"
    grep -q "clamps relative distances" "$T/exp-$d.err" && fail "export $d warned about the distance clamp (max_relative_positions = max_position_embeddings)"
done
"$BIN" import "$T/bf16/discriminator" --generator "$T/bf16/generator" --out "$T/run-bf16" > /dev/null || fail "import bf16"

# round trip: every tensor of the source folders comes back (float16 as its exact float32 value)
"$PY" - "$T" <<'PYEOF' || fail "import -> export round trip"
import json, struct, sys
import numpy as np
T = sys.argv[1]
def read(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    h = json.loads(raw[8:8 + n]); h.pop("__metadata__", None)
    dt = {"F32": "<f4", "F16": "<f2"}
    return {k: np.frombuffer(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], dt[v["dtype"]]).reshape(v["shape"])
            for k, v in h.items()}
legacy = {"cls.predictions.transform.dense.weight": "lm_predictions.lm_head.dense.weight",
          "cls.predictions.transform.dense.bias": "lm_predictions.lm_head.dense.bias",
          "cls.predictions.transform.LayerNorm.weight": "lm_predictions.lm_head.LayerNorm.weight",
          "cls.predictions.transform.LayerNorm.bias": "lm_predictions.lm_head.LayerNorm.bias",
          "cls.predictions.bias": "lm_predictions.lm_head.bias"}
bad = 0
for d in ("f32", "f16"):
    for sub in ("generator", "discriminator"):
        a = read("%s/%s/%s/model.safetensors" % (T, d, sub))
        a = {legacy.get(k, k): v for k, v in a.items()}
        b = read("%s/exp-%s/%s/model.safetensors" % (T, d, sub))
        if set(a) != set(b):
            print("%s/%s: names differ: %s / %s" % (d, sub, sorted(set(a) - set(b))[:3], sorted(set(b) - set(a))[:3])); bad += 1; continue
        for k in a:
            if b[k].dtype != np.dtype("<f4") or a[k].astype("<f4").tobytes() != b[k].tobytes():
                print("%s/%s: %s differs" % (d, sub, k)); bad += 1
        print("round trip %s/%s: %d tensors byte-identical" % (d, sub, len(a)))
sys.exit(1 if bad else 0)
PYEOF

# a discriminator alone: the generator (default depth: half) is initialised
"$BIN" import "$T/s32/discriminator" --out "$T/run-disc" > "$T/disc.log" 2>&1 || { cat "$T/disc.log"; fail "import without a generator"; }
grep -q ", generator 1 layers (initialised)" "$T/disc.log" || fail "import without a generator: $(cat "$T/disc.log")"
"$BIN" dump --weights "$T/run-disc/checkpoint.h5" --batch "$T/s-in.h5" --out "$T/ours-disc.h5" > /dev/null || fail "dump of a discriminator-only import"
"$BIN" export "$T/run-disc/checkpoint.h5" "$T/exp-disc" > /dev/null 2> "$T/exp-disc.err" || fail "export of the test shape"
grep -q "max_relative_positions 16 < max_position_embeddings 32" "$T/exp-disc.err" || fail "export did not warn about the clamp of the test shape: $(cat "$T/exp-disc.err")"

# a folder as DebertaV2Model.save_pretrained writes it (transformers is not installed here, so made by
# renaming: the encoder without the "deberta." prefix, no head): imports exactly as the same tensors
# under their prefixed names do (the heads initialised alike), and config.json is read as JSON (a \u
# escape in model_type, a string longer than 255 bytes)
"$PY" - "$T" <<'PYEOF' || fail "writing the save_pretrained folders"
import json, os, struct, sys
import numpy as np
sys.path.insert(0, "scripts/reference"); import refio
T = sys.argv[1]
def write_safetensors(path, tensors):  # F32, in the given order
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for k, v in tensors.items():
        b = np.ascontiguousarray(v, "<f4").tobytes()
        header[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b); off += len(b)
    h = json.dumps(header).encode(); h += b" " * (-len(h) % 8)
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
st = refio.read_safetensors(T + "/s32/discriminator/model.safetensors")
enc = {k: v for k, v in st.items() if k.startswith("deberta.")}
cfg = json.load(open(T + "/s32/discriminator/config.json"))
for name, tensors in (("bare", {k[len("deberta."):]: v for k, v in enc.items()}), ("prefixed", enc)):
    os.makedirs(T + "/" + name, exist_ok=True)
    write_safetensors(T + "/" + name + "/model.safetensors", tensors)
    text = json.dumps(dict(cfg, _name_or_path="x" * 300), indent=2)
    open(T + "/" + name + "/config.json", "w").write(text.replace('"deberta-v2"', '"deberta\\u002dv2"'))
PYEOF
grep -q 'deberta\\u002dv2' "$T/bare/config.json" || fail "the save_pretrained config.json has no \\u escape"
for n in bare prefixed; do
    "$BIN" import "$T/$n" --out "$T/run-$n" --seed 7 > "$T/$n.log" 2>&1 || { cat "$T/$n.log"; fail "import of the $n folder"; }
done
grep -q "tensors initialised (discriminator.mask_predictions.\*" "$T/bare.log" || fail "bare import: the RTD head not reported initialised: $(cat "$T/bare.log")"
cmp -s "$T/run-bare/checkpoint.h5" "$T/run-prefixed/checkpoint.h5" || fail "the save_pretrained folder imports differently from the same tensors prefixed"

# a PyTorch pickle, converted
mkdir -p "$T/pt"
"$PY" -c "
import sys; sys.path.insert(0, 'scripts/reference'); import refio, torch
st = refio.read_safetensors('$T/s32/discriminator/model.safetensors')
torch.save({k: torch.from_numpy(v.copy()).half() if 'encoder.layer.0.' in k else torch.from_numpy(v.copy()) for k, v in st.items()}, '$T/pt/pytorch_model.bin')
" || fail "writing a pickle"
cp "$T/s32/discriminator/config.json" "$T/pt/"
bad "convert-to-safetensors.py" -- "$BIN" import "$T/pt" --out "$T/run-pt0"
"$PY" scripts/convert-to-safetensors.py "$T/pt" > /dev/null || fail "convert-to-safetensors.py"
"$BIN" import "$T/pt" --out "$T/run-pt" > /dev/null || fail "import of a converted pickle"

# bad input
mkdir -p "$T/badcfg" "$T/trunc"
sed 's/"intermediate_size": 32/"intermediate_size": 24/' "$T/s32/discriminator/config.json" > "$T/badcfg/config.json"
ln -s "$T/s32/discriminator/model.safetensors" "$T/badcfg/model.safetensors"
bad "config and weights disagree" -- "$BIN" import "$T/badcfg" --out "$T/run-x1"
cp "$T/s32/discriminator/config.json" "$T/trunc/"
head -c 20000 "$T/s32/discriminator/model.safetensors" > "$T/trunc/model.safetensors"
bad "truncated" -- "$BIN" import "$T/trunc" --out "$T/run-x2"
"$PY" - "$T" <<'PYEOF' || fail "writing safetensors files with a lying header"
import json, os, shutil, struct, sys
T = sys.argv[1]
src = T + "/s32/discriminator"
raw = open(src + "/model.safetensors", "rb").read()
(n,) = struct.unpack("<Q", raw[:8])
hdr, data = json.loads(raw[8:8 + n]), raw[8 + n:]
def write(name, edit):
    h = json.loads(json.dumps(hdr))
    edit(h[next(k for k in h if k != "__metadata__")])
    os.makedirs(T + "/" + name, exist_ok=True)
    shutil.copy(src + "/config.json", T + "/" + name)
    b = json.dumps(h).encode()
    b += b" " * (-len(b) % 8)
    open(T + "/" + name + "/model.safetensors", "wb").write(struct.pack("<Q", len(b)) + b + data)
write("baddtype", lambda t: t.update(dtype="Q4"))
write("badsize", lambda t: t["data_offsets"].__setitem__(1, t["data_offsets"][1] + 4))
PYEOF
bad "unknown dtype 'Q4'" -- "$BIN" import "$T/baddtype" --out "$T/run-x4"
bad "lies about sizes" -- "$BIN" import "$T/badsize" --out "$T/run-x5"
mkdir -p "$T/deepgen"
sed 's/"num_hidden_layers": 2/"num_hidden_layers": 3/' "$T/s32/generator/config.json" > "$T/deepgen/config.json"
ln -s "$T/s32/generator/model.safetensors" "$T/deepgen/model.safetensors"
bad "deepgen/config.json has num_hidden_layers 3, but .*deepgen/model.safetensors holds 2 layers" -- "$BIN" import "$T/s32/discriminator" --generator "$T/deepgen" --out "$T/run-x3"
# absurd sizes in an otherwise valid config.json (the xsmall folder: 12 layers, width 384, vocabulary 1,000): refused
# before anything is allocated, one line naming the key, its value and the bound it breaks or the tensor's shape;
# each in under 1 s and 100 MB (GNU time's elapsed seconds and maximum RSS)
absurd() { # NAME KEY VALUE NEEDLE
    mkdir -p "$T/ab-$1"
    "$PY" -c "import json, sys; c = json.load(open(sys.argv[1])); c[sys.argv[2]] = int(sys.argv[3]); json.dump(c, open(sys.argv[4], 'w'))" \
        "$T/f32/discriminator/config.json" "$2" "$3" "$T/ab-$1/config.json" || fail "writing $1's config.json"
    ln -sf "$T/f32/discriminator/model.safetensors" "$T/ab-$1/model.safetensors"
    bad "$4" -- /usr/bin/time -f "%e %M" -o "$T/ab-$1.time" "$BIN" import "$T/ab-$1" --out "$T/run-ab-$1"
    tail -n 1 "$T/ab-$1.time" > "$T/ab-$1.em" # GNU time puts "Command exited with non-zero status 1" first
    awk '{ exit !($1 < 1.0 && $2 < 102400) }' "$T/ab-$1.em" || fail "import of $2 $3 took $(cat "$T/ab-$1.em") (seconds, KB; at most 1 s and 100 MB)"
    [ ! -e "$T/run-ab-$1" ] || fail "a refused import ($2 $3) created its run directory"
    echo "ok   $2 $3: $(cut -d' ' -f1 "$T/ab-$1.em") s, $(($(cut -d' ' -f2 "$T/ab-$1.em") / 1024)) MB: $(sed 's/^error: import: //' "$T/err" | cut -c1-150)"
}
if [ -x /usr/bin/time ]; then
    absurd l1 num_hidden_layers 1000 "config.json has num_hidden_layers 1000, but .*model.safetensors holds 12 layers (deberta.encoder.layer.0 to deberta.encoder.layer.11; config and weights disagree)"
    absurd l2 num_hidden_layers 100000 "config.json: num_hidden_layers 100000 is above the bound 1024 of this implementation"
    absurd h1 hidden_size 1048576 "config.json: hidden_size 1048576 is above the bound 65536 of this implementation"
    absurd h2 hidden_size 768 "has vocab_size and hidden_size 1000 and 768, but tensor 'deberta.embeddings.word_embeddings.weight' of .* has shape \[1000, 384\]"
    absurd i1 intermediate_size 1073741824 "config.json: intermediate_size 1073741824 is above the bound 262144 of this implementation"
    absurd i2 intermediate_size 200000 "has intermediate_size and hidden_size 200000 and 384, but tensor 'deberta.encoder.layer.0.intermediate.dense.weight' of .* has shape \[1536, 384\]"
    absurd v1 vocab_size 2147483647 "config.json: vocab_size 2147483647 is above the bound 16777216 of this implementation"
    absurd v2 vocab_size 16000000 "has vocab_size and hidden_size 16000000 and 384, but tensor 'deberta.embeddings.word_embeddings.weight' .* has shape \[1000, 384\]"
    absurd p1 max_position_embeddings 1000000 "config.json: max_position_embeddings 1000000 is above the bound 16384 of this implementation"
    absurd b1 position_buckets 200 "has position_buckets and hidden_size 200 (400 rows) and 384, but tensor 'deberta.encoder.rel_embeddings.weight' .* has shape \[512, 384\]"
else
    echo "SKIPPED: the size and time of refused imports: no /usr/bin/time (apt-get install time)"; fails=77
fi
for x in x1 x2 x3 x4 x5; do [ ! -e "$T/run-$x/checkpoint.h5" ] || fail "a refused import ($x) left a checkpoint"; done
bad "already holds a run" -- "$BIN" import "$T/s32/discriminator" --out "$T/run-disc"

[ $fails -eq 77 ] && exit 77
[ $fails -eq 0 ] && echo "e2e-import: all checks passed"
[ $fails -eq 0 ]
