#!/bin/sh
# Issue 4 parity: `deberta dump` against the PyTorch reference (scripts/reference/), for GDES, ES and
# NES with the EMD on and off (plus joint/decoupled variants, a 1-layer generator and a term subset):
#   reference init --perturb -> weights; reference inputs -> batch; build/deberta dump; reference dump;
#   compare (profile dump: losses 1e-5 rel, logits 1e-4 abs, every gradient 1e-3 rel, the rest 1e-4 abs).
# Checkpoints: one written by checkpoint_save (tests/test_export with EXPORT_KEEP) and one from a real
# 4-step `deberta pretrain` run: our dump of the checkpoint file matches the reference on the same tensors.
# Export: `deberta export` of each weights file and of both checkpoints, read back by an independent
# reader (json + struct below):
# header, contiguous in-range offsets, F32, shapes, byte-exact values, the exact config.json keys and
# types; the reference's `dump --hf-generator --hf-discriminator` on the exported folders reproduces our
# dump.  Bad input (missing file, wrong dtype/shape, NaN, missing/extra tensor, id out of range, no
# masked token) gives exit != 0 and one `error:` line.
# In the double build the reference computes in float64 and our dump must match it to 1e-9 (losses rel,
# the rest abs) and 1e-8 (gradients rel); what goes through an export (F32) keeps the float tolerances.
# Exit 0 pass, 77 skipped (reason printed), anything else fail.
. "$(dirname "$0")/lib-e2e.sh"
e2e_need_reference
e2e_need_bin
if [ "${PRECISION:-float}" = double ]; then DT=float64; else DT=float32; fi
e2e_tmpdir T deberta-e2e-parity
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# ---- phase 1 (reference): weights, batches, bad-input fixtures ----
cat > "$T/phase1.py" <<'EOF'
import sys, os
import numpy as np, h5py
sys.path.insert(0, "scripts/reference")
import deberta_ref as R
T = sys.argv[1]
# name, sharing, mode, emd, extra init flags
CASES = [("gdes-emd1", "gdes", "decoupled", 1, []), ("gdes-emd0", "gdes", "decoupled", 0, []),
         ("es-joint-emd1", "es", "joint", 1, []), ("es-joint-emd0", "es", "joint", 0, []),
         ("nes-emd1", "nes", "decoupled", 1, []), ("nes-emd0", "nes", "decoupled", 0, []),
         ("gdes-joint-emd1", "gdes", "joint", 1, []), ("es-decoupled-emd1", "es", "decoupled", 1, []),
         ("gdes-gen1-c2c-c2p", "gdes", "decoupled", 1, ["--gen-layers", "1", "--terms", "c2c|c2p"])]
def run(args):
    try:
        rc = R.main(args)
    except SystemExit as e:
        rc = e.code
    if rc:
        sys.exit("FAIL: deberta_ref %s -> exit %s" % (" ".join(args), rc))
with open(T + "/cases.txt", "w") as f:
    for i, (name, sh, mode, emd, extra) in enumerate(CASES):
        w, b = "%s/%s.w.h5" % (T, name), "%s/%s.b.h5" % (T, name)
        run(["init", "--preset", "test", "--perturb", "--seed", str(i + 1), "--sharing", sh, "--mode", mode,
             "--emd", str(emd)] + extra + ["--out", w])
        run(["inputs", "--weights", w, "--batch", "3", "--seq", "12", "--seed", str(i + 7), "--out", b])
        f.write("%s %s %s %d\n" % (name, sh, mode, emd))

def copy(src, dst, edit):
    with h5py.File(src, "r") as fi, h5py.File(dst, "w") as fo:
        for k, v in fi.attrs.items():
            fo.attrs[k] = v
        d = {k: fi[k][()] for k in fi.keys()}
        edit(d)
        for k, v in d.items():
            fo.create_dataset(k, data=v)
w0, b0 = T + "/gdes-emd1.w.h5", T + "/gdes-emd1.b.h5"
P = "discriminator.mask_predictions.dense.weight"
def dtype(d): d[P] = d[P].astype(np.int32)
def shape(d): d[P] = d[P][:, :-1]
def nan(d): d[P] = d[P].copy(); d[P][1, 2] = np.nan
def missing(d): del d[P]
def extra(d): d["discriminator.deberta.embeddings.word_embeddings.weight"] = d["generator.deberta.embeddings.word_embeddings.weight"]
def oob(d): d["input_ids"] = d["input_ids"].copy(); d["input_ids"][1, 2] = 45
def rep_oob(d): d["replaced_ids"] = d["replaced_ids"].copy(); d["replaced_ids"][0, 3] = -1
def float_ids(d): d["labels"] = d["labels"].astype(np.float32)
def nomask(d): d["labels"] = np.zeros_like(d["labels"])
for n, fn in [("dtype", dtype), ("shape", shape), ("nan", nan), ("missing", missing), ("extra", extra)]:
    copy(w0, "%s/bad-%s.w.h5" % (T, n), fn)
# the same weights with the attribute types h5py writes by default (variable-length UTF-8 strings,
# numpy bool enum, int32, float32): must give the same dump
def attr_types(d): pass
copy(w0, T + "/attrs.w.h5", attr_types)
with h5py.File(T + "/attrs.w.h5", "a") as f:
    f.attrs["pos_att_type"] = "c2c|c2p|p2c"; f.attrs["embedding_sharing"] = "gdes"; f.attrs["training_mode"] = "decoupled"
    f.attrs["use_emd"] = np.bool_(True); f.attrs["hidden_size"] = np.int32(16); f.attrs["rtd_lambda"] = np.float32(10.0)
    f.attrs["producer"] = "e2e-parity-dump (ignored)"
run(["init", "--preset", "test", "--terms", "c2p|p2c", "--out", T + "/noc2c.w.h5"])
run(["inputs", "--preset", "test", "--batch", "2", "--seq", "10", "--seed", "3", "--out", T + "/ckpt.b.h5"])  # ids < 40
for n, fn in [("oob", oob), ("rep-oob", rep_oob), ("float-ids", float_ids), ("nomask", nomask)]:
    copy(b0, "%s/bad-%s.b.h5" % (T, n), fn)
EOF
OMP_NUM_THREADS=1 "$PY" "$T/phase1.py" "$T" > "$T/phase1.log" 2>&1 || { cat "$T/phase1.log"; echo "FAIL: reference phase 1"; exit 1; }

# ---- phase 2 (ours): dump and export every case; bad inputs ----
"$BIN" dump --help > /dev/null || fail "deberta dump --help"
"$BIN" export --help > /dev/null || fail "deberta export --help"
while read -r name sh mode emd; do
    "$BIN" dump --weights "$T/$name.w.h5" --batch "$T/$name.b.h5" --out "$T/$name.ours.h5" > "$T/$name.dump.log" 2>&1 \
        || { cat "$T/$name.dump.log"; fail "deberta dump $name"; }
    "$BIN" export "$T/$name.w.h5" "$T/$name.export" --mlm-head both --rtd-head > "$T/$name.export.log" 2>&1 \
        || { cat "$T/$name.export.log"; fail "deberta export $name"; }
done < "$T/cases.txt"
"$BIN" dump --weights "$T/attrs.w.h5" --batch "$T/gdes-emd1.b.h5" --out "$T/attrs.ours.h5" > "$T/attrs.log" 2>&1 \
    || { cat "$T/attrs.log"; fail "deberta dump of weights with h5py-default attribute types"; }
# a real `deberta pretrain` run (4 steps, test preset, its own prep'd corpus and tokenizer):
# export its checkpoint and dump it (the reference checks both in phase 3)
mkdir -p "$T/pt"
e2e_corpus 7 200 > "$T/pt/corpus.txt"
if "$BIN" prep --input "$T/pt/corpus.txt" --out "$T/pt/shards" --vocab-size 320 --val-fraction 0.1 > "$T/pt/prep.log" 2>&1 \
   && "$BIN" pretrain --preset test --max_seq_len 32 --data "$T/pt/shards" --batch 4 --steps 4 --eval-every 4 --eval-batches 1 \
        --save-every 4 --out "$T/pt/run" > "$T/pt/run.log" 2>&1; then
    "$BIN" export "$T/pt/run/checkpoint.h5" "$T/pt/export" --mlm-head both --rtd-head > "$T/pt/export.log" 2>&1 || { cat "$T/pt/export.log"; fail "export of a pretrain checkpoint"; }
    grep -q "tokenizer.json written" "$T/pt/export.log" || fail "export of a pretrain checkpoint wrote no tokenizer.json"
    "$BIN" dump --weights "$T/pt/run/checkpoint.h5" --batch "$T/ckpt.b.h5" --out "$T/pretrain.ours.h5" > "$T/pt/dump.log" 2>&1 \
        || { cat "$T/pt/dump.log"; fail "dump of a pretrain checkpoint"; }
else
    tail -3 "$T/pt/prep.log" "$T/pt/run.log"; fail "deberta prep/pretrain (needed for the pretrain-checkpoint export check)"
fi
if command -v h5diff > /dev/null 2>&1; then
    h5diff -q "$T/attrs.ours.h5" "$T/gdes-emd1.ours.h5" > /dev/null 2>&1 || fail "weights with h5py-default attribute types gave a different dump"
else
    e2e_skip_part "weights with h5py-default attribute types: h5diff not installed (apt-get install hdf5-tools)"
fi
# a checkpoint written by checkpoint_save (+ tokenizer) and its export, kept by the cmocka suite
EXPORT_KEEP="$T/ckpt" "$BUILD/tests/test_export" > "$T/ckpt.log" 2>&1 || { cat "$T/ckpt.log"; fail "tests/test_export with EXPORT_KEEP"; }
# dump straight from that checkpoint (config from its text; dropout 0.1 there -> forced to 0 with a note)
"$BIN" dump --weights "$T/ckpt/run-gdes/checkpoint.h5" --batch "$T/ckpt.b.h5" --out "$T/ckpt.ours.h5" > "$T/ckpt-dump.log" 2>&1 \
    || { cat "$T/ckpt-dump.log"; fail "deberta dump of a checkpoint"; }
grep -q "note: dropout forced to 0" "$T/ckpt-dump.log" || fail "dump of a checkpoint with dropout 0.1 did not say it forced 0"

# bad input: exit != 0 and exactly one line, "error: ..." naming the problem (lib-e2e.sh's e2e_bad)
bad() {  # expected-substring command...
    want=$1; shift
    e2e_bad --rc any "^error: .*$want" -- "$@" && echo "ok: $(cat "$T/err")"
}
G=$T/gdes-emd1
bad "No such file" "$BIN" dump --weights "$T/nope.w.h5" --batch "$G.b.h5" --out "$T/x.h5"
bad "has dtype int32, expected float32 or float64" "$BIN" dump --weights "$T/bad-dtype.w.h5" --batch "$G.b.h5" --out "$T/x.h5"
bad "has shape \[16, 15\], the model expects \[16, 16\]" "$BIN" dump --weights "$T/bad-shape.w.h5" --batch "$G.b.h5" --out "$T/x.h5"
bad "contains NaN" "$BIN" dump --weights "$T/bad-nan.w.h5" --batch "$G.b.h5" --out "$T/x.h5"
bad "parameter 'discriminator.mask_predictions.dense.weight' is missing" "$BIN" dump --weights "$T/bad-missing.w.h5" --batch "$G.b.h5" --out "$T/x.h5"
bad "has tensor 'discriminator.deberta.embeddings.word_embeddings.weight' that the model does not have" "$BIN" dump --weights "$T/bad-extra.w.h5" --batch "$G.b.h5" --out "$T/x.h5"
bad "input_ids\[1, 2\] = 45 is outside the vocabulary \[0, 40)" "$BIN" dump --weights "$G.w.h5" --batch "$T/bad-oob.b.h5" --out "$T/x.h5"
bad "replaced_ids\[0, 3\] = -1 is outside" "$BIN" dump --weights "$G.w.h5" --batch "$T/bad-rep-oob.b.h5" --out "$T/x.h5"
bad "dataset 'labels' has dtype float32, expected int32" "$BIN" dump --weights "$G.w.h5" --batch "$T/bad-float-ids.b.h5" --out "$T/x.h5"
bad "no masked position" "$BIN" dump --weights "$G.w.h5" --batch "$T/bad-nomask.b.h5" --out "$T/x.h5"
bad "No such file" "$BIN" export "$T/nope.h5" "$T/x-export"
bad "has dtype int32" "$BIN" export "$T/bad-dtype.w.h5" "$T/x-export"
bad "without the c2c attention term" "$BIN" export "$T/noc2c.w.h5" "$T/x-export"
"$BIN" export "$T/noc2c.w.h5" "$T/noc2c-export" --allow-no-c2c > /dev/null 2>&1 || fail "export --allow-no-c2c"
[ -e "$T/x.h5" ] && fail "a failed dump left $T/x.h5 behind"

# ---- phase 3 (reference): reference dumps, compare, HF round trip, independent safetensors reader ----
cat > "$T/phase3.py" <<'EOF'
import sys, os, json, struct, fnmatch, zlib
import numpy as np, h5py
sys.path.insert(0, "scripts/reference")
import deberta_ref as R
T, DT = sys.argv[1], sys.argv[2]
fails = []
def run(args):
    try:
        rc = R.main(args)
    except SystemExit as e:
        rc = e.code
    if rc:
        fails.append("deberta_ref %s -> exit %s" % (" ".join(args), rc))
    return rc
# float32: the dump profile.  float64: 1e-9 absolute / relative, gradients 1e-8 relative (as
# e2e-parity-encoder.sh), for our dump against the reference on the same weights; what goes through an
# export (F32 safetensors: the weights rounded to float) keeps the float profile in both builds.
RULES_F = R.PROFILES["dump"]
RULES = RULES_F if DT == "float32" else [("*/loss", "rel", 1e-9), ("*logits", "abs", 1e-9), ("grad/*", "rel", 1e-8), ("*", "abs", 1e-9)]
def cls(name):
    if name.endswith("/loss"): return "loss(rel)"
    if name.endswith("logits"): return "logits(abs)"
    if name.startswith("grad/"): return "grad(rel)"
    return "hidden(abs)"
# Without p2c, a key bias and the rel-table LayerNorm bias only add a constant to every score of a
# query row (q_i.b_k, q_i.W_k.beta): softmax is invariant, the true gradient is exactly 0 and both
# sides hold rounding noise (~1e-13), so those are checked in absolute terms.
NO_P2C = [("grad/*key_proj.bias", "abs", 1e-9), ("grad/*encoder.LayerNorm.bias", "abs", 1e-9)]
def compare(ours, ref, what, skip=(), extra_rules=(), rules=None):
    rows, bad = R.compare_files(ours, ref, list(extra_rules) + (RULES if rules is None else rules))
    worst = {}
    for name, metric, err, tol, d, scale in rows:
        if any(fnmatch.fnmatchcase(name, s) for s in skip): continue
        c = cls(name)
        worst[c] = max(worst.get(c, 0.0), err)
    bad = [b for b in bad if not any(fnmatch.fnmatchcase(b[0], s) for s in skip)]
    for name, why in bad:
        fails.append("%s: %s: %s" % (what, name, why))
    print("  %-34s %s  %s" % (what, "  ".join("%s %.2e" % (c, worst.get(c, 0.0)) for c in
          ("loss(rel)", "logits(abs)", "hidden(abs)", "grad(rel)")), "ok" if not bad else "FAIL (%d)" % len(bad)))

# --- independent safetensors + config.json reader ---
SPEC_KEYS = {"model_type": str, "architectures": list, "vocab_size": int, "hidden_size": int,
             "num_hidden_layers": int, "num_attention_heads": int, "intermediate_size": int, "hidden_act": str,
             "hidden_dropout_prob": float, "attention_probs_dropout_prob": float, "max_position_embeddings": int,
             "type_vocab_size": int, "initializer_range": float, "layer_norm_eps": float, "relative_attention": bool,
             "max_relative_positions": int, "position_buckets": int, "norm_rel_ebd": str, "share_att_key": bool,
             "pos_att_type": list, "position_biased_input": bool, "pad_token_id": int, "pooler_hidden_size": int,
             "pooler_dropout": int, "pooler_hidden_act": str, "legacy": bool}
def read_st(path):
    raw = open(path, "rb").read()
    assert len(raw) >= 8, path
    (n,) = struct.unpack("<Q", raw[:8])
    assert 8 + n <= len(raw), "%s: header length %d beyond the file" % (path, n)
    hdr = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = hdr.pop("__metadata__", None)
    assert meta is not None and meta.pop("format", None) == "pt", path
    data = raw[8 + n:]
    assert set(meta) == {"crc32." + k for k in hdr}, "%s: checksum entries %s" % (path, sorted(meta))
    for k, v in hdr.items():
        b, e = v["data_offsets"]
        assert meta["crc32." + k] == "%08x" % zlib.crc32(data[b:e]), "%s: '%s' does not match its CRC-32" % (path, k)
    spans = sorted((v["data_offsets"][0], v["data_offsets"][1], k) for k, v in hdr.items())
    pos = 0
    for b, e, k in spans:
        assert b == pos, "%s: '%s' starts at %d, expected %d (offsets not contiguous)" % (path, k, b, pos)
        assert e >= b and e <= len(data), "%s: '%s' offsets out of range" % (path, k)
        pos = e
    assert pos == len(data), "%s: data is %d bytes, tensors cover %d" % (path, len(data), pos)
    out = {}
    for k, v in hdr.items():
        assert v["dtype"] == "F32", "%s: '%s' dtype %s" % (path, k, v["dtype"])
        b, e = v["data_offsets"]
        cnt = int(np.prod(v["shape"], dtype=np.int64))
        assert e - b == 4 * cnt, "%s: '%s' has %d bytes for shape %s" % (path, k, e - b, v["shape"])
        out[k] = (tuple(v["shape"]), data[b:e])
    return out
def check_export(src_params, attrs, folder, what, tol_prec):
    """src_params: {full name: ndarray} of the source; byte-exact check of both folders."""
    sh = attrs["embedding_sharing"]
    acc = np.float64 if tol_prec == "double" else np.float32
    gen = {k[len("generator."):]: v for k, v in src_params.items() if k.startswith("generator.")}
    for a, b in (("transform.dense.weight", "dense.weight"), ("transform.dense.bias", "dense.bias"),
                 ("transform.LayerNorm.weight", "LayerNorm.weight"), ("transform.LayerNorm.bias", "LayerNorm.bias"),
                 ("bias", "bias")):
        gen["cls.predictions." + a] = gen["lm_predictions.lm_head." + b]
    dis = {k[len("discriminator."):]: v for k, v in src_params.items()
           if k.startswith("discriminator.") and not k.endswith("._weight")}
    for t in ("word", "position"):
        n = "deberta.embeddings.%s_embeddings.weight" % t
        if sh == "gdes":
            dis[n] = (src_params["generator." + n].astype(acc) + src_params["discriminator.deberta.embeddings.%s_embeddings._weight" % t].astype(acc))
        elif sh == "es":
            dis[n] = src_params["generator." + n]
    for sub, exp, nl in (("generator", gen, attrs["gen_num_hidden_layers"]), ("discriminator", dis, attrs["num_hidden_layers"])):
        st = read_st("%s/%s/model.safetensors" % (folder, sub))
        if set(st) != set(exp):
            fails.append("%s/%s: tensors differ: extra %s, missing %s" % (what, sub, sorted(set(st) - set(exp))[:4], sorted(set(exp) - set(st))[:4]))
            continue
        for k, (shape, raw) in st.items():
            want = np.ascontiguousarray(exp[k].astype("<f4"))
            if shape != want.shape: fails.append("%s/%s: '%s' shape %s, expected %s" % (what, sub, k, shape, want.shape))
            elif raw != want.tobytes(): fails.append("%s/%s: '%s' values are not byte-exact" % (what, sub, k))
        cj = json.load(open("%s/%s/config.json" % (folder, sub)))
        keys = dict(SPEC_KEYS)
        if attrs["attention_head_size"] * attrs["num_attention_heads"] != attrs["hidden_size"]: keys["attention_head_size"] = int
        if set(cj) != set(keys): fails.append("%s/%s: config.json keys differ: extra %s, missing %s" % (what, sub, set(cj) - set(keys), set(keys) - set(cj)))
        for k, ty in keys.items():
            if k in cj and (type(cj[k]) is not ty): fails.append("%s/%s: config.json '%s' is %s, expected %s" % (what, sub, k, type(cj[k]).__name__, ty.__name__))
        terms = attrs["pos_att_type"].split("|")
        want = {"model_type": "deberta-v2", "vocab_size": attrs["vocab_size"], "hidden_size": attrs["hidden_size"],
                "num_hidden_layers": nl, "num_attention_heads": attrs["num_attention_heads"],
                "intermediate_size": attrs["intermediate_size"], "max_position_embeddings": attrs["max_position_embeddings"],
                "position_buckets": attrs["position_buckets"], "max_relative_positions": attrs["max_relative_positions"],
                "relative_attention": True, "position_biased_input": False, "share_att_key": True, "pad_token_id": 0,
                "layer_norm_eps": attrs["layer_norm_eps"], "pos_att_type": [t for t in ("p2c", "c2p") if t in terms]}
        for k, v in want.items():
            if cj.get(k) != v: fails.append("%s/%s: config.json %s = %r, expected %r" % (what, sub, k, cj.get(k), v))
    return True

def load_h5(path, group=None):
    with h5py.File(path, "r") as f:
        g = f[group] if group else f
        return {k: g[k][()] for k in g.keys() if isinstance(g[k], h5py.Dataset)}, {k: R.refio._attr(v) for k, v in f.attrs.items()}

def attrs_of(base):
    with h5py.File(base + ".w.h5", "r") as f:
        return {k: R.refio._attr(v) for k, v in f.attrs.items()}
print("parity (ours vs reference, %s; max error per tensor class):" % DT)
cases = [l.split() for l in open(T + "/cases.txt")]
for name, sh, mode, emd in cases:
    base = "%s/%s" % (T, name)
    if run(["dump", "--weights", base + ".w.h5", "--batch", base + ".b.h5", "--out", base + ".ref.h5", "--dtype", DT]) == 0:
        compare(base + ".ours.h5", base + ".ref.h5", name, extra_rules=NO_P2C if "p2c" not in attrs_of(base)["pos_att_type"] else ())
print("HF round trip (reference dump --hf-generator/--hf-discriminator on our export vs our dump):")
for name, sh, mode, emd in cases:
    base = "%s/%s" % (T, name)
    w, attrs = load_h5(base + ".w.h5")
    attrs = R.rm.validate(attrs)
    try:
        check_export(w, attrs, base + ".export", name + " export", "double" if DT == "float64" else "float")
    except AssertionError as e:
        fails.append("%s export: %s" % (name, e))
    if run(["dump", "--hf-generator", base + ".export/generator", "--hf-discriminator", base + ".export/discriminator",
            "--batch", base + ".b.h5", "--out", base + ".refhf.h5", "--dtype", DT, "--rtd-lambda", repr(attrs["rtd_lambda"]),
            "--use-emd", emd, "--training-mode", mode]):
        continue
    # the HF pair runs as NES: map our tensor names onto it
    with h5py.File(base + ".ours.h5", "r") as fi, h5py.File(base + ".ours-hf.h5", "w") as fo:
        def vis(n, o):
            if isinstance(o, h5py.Dataset):
                fo.create_dataset(n.replace("_embeddings._weight", "_embeddings.weight"), data=o[()])
        fi.visititems(vis)
    # ES: the shared table's gradient is split in two in the NES form (joint) - compared forward-only
    skip = ("grad/*embeddings.word_embeddings.weight", "grad/*embeddings.position_embeddings.weight") if sh == "es" else ()
    compare(base + ".ours-hf.h5", base + ".refhf.h5", name + " (HF)", skip, NO_P2C if "p2c" not in attrs["pos_att_type"] else (), RULES_F)
    if sh == "es":  # the shared table's gradient: the HF pair's generator part (+ discriminator part when joint)
        o, _ = load_h5(base + ".ours.h5", "grad")
        r, _ = load_h5(base + ".refhf.h5", "grad")
        for t in ("word", "position"):
            n = "deberta.embeddings.%s_embeddings.weight" % t
            want = r["generator." + n].astype(np.float64) + (r["discriminator." + n] if mode == "joint" else 0)
            d, sc = float(np.abs(o["generator." + n] - want).max()), float(np.abs(want).max())
            err = d / sc if sc > 0 else (0.0 if d == 0 else float("inf"))
            print("  %-34s grad/generator.%s vs HF G%s: rel %.2e" % (name + " (HF, shared E)", n, "+D" if mode == "joint" else "", err))
            if not err <= 1e-3:
                fails.append("%s (HF): shared %s gradient rel error %.3g" % (name, t, err))
def checkpoint_case(ckpt, export, ours, what, hf):
    """A checkpoint file, its export and our dump of it: the reference's dump of the same tensors
    (as a weights file) and, with hf, of the exported folders must match ours; the export is
    byte-exact and carries tokenizer.json."""
    if not os.path.isdir(export):
        fails.append("%s: no export in %s" % (what, export))
        return
    params, cattrs = load_h5(ckpt, "params")
    with h5py.File(ckpt, "r") as f:
        text = f["config"][()]
    text = text.decode() if isinstance(text, bytes) else str(text)
    kv = dict(l.split(" = ", 1) for l in text.splitlines() if " = " in l)
    a = {k: int(kv[k]) for k in ("hidden_size", "num_hidden_layers", "gen_num_hidden_layers", "num_attention_heads",
                                 "attention_head_size", "intermediate_size", "vocab_size", "max_position_embeddings",
                                 "position_buckets", "max_relative_positions")}
    a.update(embedding_sharing=kv["embedding_sharing"], pos_att_type=kv["pos_att_type"], layer_norm_eps=float(kv["layer_norm_eps"]))
    mode, emd = kv["training_mode"], int(kv["use_emd"] in ("true", "1"))
    wa = dict(a, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, rtd_lambda=float(kv["rtd_lambda"]),
              use_emd=emd, training_mode=mode)
    base = "%s/%s" % (T, what.replace(" ", "_"))
    R.refio.write_h5(base + ".w.h5", params, wa)
    if run(["dump", "--weights", base + ".w.h5", "--batch", T + "/ckpt.b.h5", "--out", base + ".ref.h5", "--dtype", DT]) == 0:
        compare(ours, base + ".ref.h5", what)
    if hf and run(["dump", "--hf-generator", export + "/generator", "--hf-discriminator", export + "/discriminator",
                   "--batch", T + "/ckpt.b.h5", "--out", base + ".refhf.h5", "--dtype", DT, "--ignore-dropout",
                   "--rtd-lambda", kv["rtd_lambda"], "--use-emd", str(emd), "--training-mode", mode]) == 0:
        with h5py.File(ours, "r") as fi, h5py.File(base + ".ours-hf.h5", "w") as fo:
            def vis(n, o):
                if isinstance(o, h5py.Dataset):
                    fo.create_dataset(n.replace("_embeddings._weight", "_embeddings.weight"), data=o[()])
            fi.visititems(vis)
        compare(base + ".ours-hf.h5", base + ".refhf.h5", what + " (HF)", rules=RULES_F)
    try:
        check_export(params, a, export, what + " export", cattrs["real"])
        for sub in ("generator", "discriminator"):
            tj = json.load(open("%s/%s/tokenizer.json" % (export, sub)))
            assert "model" in tj and "added_tokens" in tj, "tokenizer.json lacks model/added_tokens"
        print("  %s: export byte-exact (%s params, %d tensors), config.json keys/types ok, tokenizer.json ok"
              % (what, cattrs["real"], len(params)))
    except AssertionError as e:
        fails.append("%s export: %s" % (what, e))

print("checkpoints (our dump of the checkpoint file vs the reference on the same tensors / on our export):")
checkpoint_case(T + "/ckpt/run-gdes/checkpoint.h5", T + "/ckpt/export-gdes", T + "/ckpt.ours.h5", "checkpoint_save file", False)
if os.path.exists(T + "/pretrain.ours.h5"):
    checkpoint_case(T + "/pt/run/checkpoint.h5", T + "/pt/export", T + "/pretrain.ours.h5", "pretrain checkpoint", True)
print("  exports of %d weights files: safetensors header/offsets/dtypes/shapes/values and config.json checked" % len(cases))
for f in fails:
    print("FAIL: " + f)
sys.exit(1 if fails else 0)
EOF
OMP_NUM_THREADS=1 "$PY" "$T/phase3.py" "$T" "$DT" > "$T/phase3.log" 2>&1; rc3=$?
grep -v "^dump: \|^compare \|warning: ES under decoupled" "$T/phase3.log"
[ $rc3 -eq 0 ] || fail "reference phase 3 (parity, export reader, HF round trip)"
[ $fails -eq 0 ] || { echo "e2e-parity-dump: $fails failure(s)"; exit 1; }
echo "e2e-parity-dump: parity, export and bad-input checks done ($DT)"
e2e_end e2e-parity-dump
