#!/usr/bin/python3
"""make-seeds.py OUTDIR — small seed files made afresh at each use, not kept in the repo (tests/fuzz/run.sh
makes them for the safetensors, hf_config and spm targets, tests/test_spm.c for its models):
a safetensors file of every readable dtype and an integer one with crc32 entries, one with an empty
tensor, two DebertaV2 config.json, and three tiny SentencePiece models (unigram with and without
byte fallback; BPE, which the reader refuses; identity normalization, so no large character map)."""
import json, os, struct, sys, zlib

out = sys.argv[1]
for d in ("safetensors", "hf_config", "spm"):
    os.makedirs(os.path.join(out, d), exist_ok=True)

def safetensors(path, tensors, crc_names=()):
    header, blobs, off = {}, [], 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    meta = {"format": "pt"}
    for name, _, _, raw in tensors:
        if name in crc_names: meta["crc32." + name] = "%08x" % zlib.crc32(raw)
    header["__metadata__"] = meta
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))

safetensors(os.path.join(out, "safetensors", "dtypes.safetensors"), [
    ("a.weight", "F32", [2, 3], struct.pack("<6f", 1, -2, 0.5, 3e-39, float("inf"), -0.0)),
    ("b.bias", "F16", [4], struct.pack("<4H", 0x3c00, 0x8001, 0x7c00, 0x7e00)),
    ("c", "BF16", [2, 2], struct.pack("<4H", 0x3f80, 0xbf80, 0x0001, 0x7fc0)),
    ("d", "F64", [3], struct.pack("<3d", 1.5, -1e300, 5e-324)),
    ("e.ids", "I64", [2], struct.pack("<2q", 7, -1)),
    ("f.scalar", "F32", [], struct.pack("<f", 2.0)),
], crc_names=("a.weight", "d"))
safetensors(os.path.join(out, "safetensors", "empty-tensor.safetensors"), [("z", "F32", [0, 4], b"")])

cfg = {"model_type": "deberta-v2", "vocab_size": 300, "hidden_size": 16, "num_hidden_layers": 2,
       "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 512,
       "position_buckets": 16, "max_relative_positions": -1, "layer_norm_eps": 1e-7,
       "pos_att_type": ["p2c", "c2p"], "norm_rel_ebd": "layer_norm", "relative_attention": True,
       "position_biased_input": False, "share_att_key": True, "hidden_act": "gelu", "type_vocab_size": 0,
       "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
       "pad_token_id": 0, "architectures": ["DebertaV2ForMaskedLM"], "torch_dtype": "float32",
       "nested": {"ignored": [1, 2.5e-3, "x", None, {"deeper": True}]}}
with open(os.path.join(out, "hf_config", "config.json"), "w") as f:
    json.dump(cfg, f, indent=2)
with open(os.path.join(out, "hf_config", "pos-att-string.json"), "w") as f:
    json.dump(dict(cfg, pos_att_type="p2c|c2p", attention_head_size=8, position_buckets=-1), f)

import sentencepiece as spm, tempfile
with tempfile.TemporaryDirectory() as t:
    text = os.path.join(t, "text.txt")
    with open(text, "w") as f:
        for i in range(200):
            f.write("the cat sees %d dogs near the old river, caf\u00e9 \u4e2d\u6587 \U0001F600 line %d\n" % (i % 7, i))
    for name, kind, extra in (("unigram", "unigram", {"byte_fallback": True}), ("unigram-nobf", "unigram", {}), ("bpe", "bpe", {})):
        prefix = os.path.join(t, name)
        spm.SentencePieceTrainer.train(input=text, model_prefix=prefix, vocab_size=300 if name == "unigram" else 60,
                                       model_type=kind, normalization_rule_name="identity", hard_vocab_limit=False,
                                       pad_id=0, bos_id=1, eos_id=2, unk_id=3, minloglevel=2, **extra)
        with open(prefix + ".model", "rb") as src, open(os.path.join(out, "spm", name + ".model"), "wb") as dst:
            dst.write(src.read())
