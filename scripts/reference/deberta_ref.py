#!/usr/bin/python3
"""deberta_ref.py - command line of the independent PyTorch reference of deberta.c.

  deberta_ref.py encoder --weights W.h5 --inputs I.h5 --out O.h5 [--dtype float32|float64]
  deberta_ref.py dump    --weights W.h5 --batch B.h5 --out D.h5 [--dtype ...]
  deberta_ref.py dump    --hf-generator DIR --hf-discriminator DIR --batch B.h5 --out D.h5 [...]
  deberta_ref.py init    --preset tiny|xsmall|test [--encoder-only] [shape flags] --out W.h5
  deberta_ref.py inputs  --weights W.h5 --batch 2 --seq 16 --out I.h5
  deberta_ref.py bench   --preset tiny --seq 128 --batch 16 --steps 20 --threads 2

File layouts: docs/FORMATS.md, section 'Parity and dump files'.  Usage: scripts/reference/README.md.
Exit status: 0 ok, 1 bad input / file error, 2 usage error.
"""
import argparse
import ctypes
import json
import os
import resource
import statistics
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    print("deberta_ref: error: %s (needs Debian python3-torch, python3-numpy, python3-h5py; "
          "run with /usr/bin/python3)" % e, file=sys.stderr)
    sys.exit(1)

import refmodel as rm
import refio

DTYPES = {"float32": torch.float32, "float64": torch.float64}


def die(msg):
    print("deberta_ref: error: " + msg, file=sys.stderr)
    sys.exit(1)


def np_out(t):
    return t.detach().cpu().numpy()


def check_dropout(cfg, args):
    if cfg["hidden_dropout_prob"] != 0 or cfg["attention_probs_dropout_prob"] != 0:
        if not args.ignore_dropout:
            die("dropout is %g/%g in the weights' config; parity runs need 0 (pass --ignore-dropout to "
                "run with dropout off anyway)" % (cfg["hidden_dropout_prob"], cfg["attention_probs_dropout_prob"]))


def int_field(ds, name, path, shape=None, lo=None, hi=None):
    if name not in ds:
        die("%s: dataset '%s' missing" % (path, name))
    a = ds[name]
    if a.dtype.kind not in "iu":
        die("%s: dataset '%s' has dtype %s, expected int32" % (path, name, a.dtype))
    if shape is not None and tuple(a.shape) != tuple(shape):
        die("%s: dataset '%s' has shape %s, expected %s" % (path, name, tuple(a.shape), tuple(shape)))
    if a.size and lo is not None and a.min() < lo:
        die("%s: dataset '%s' has value %d < %d" % (path, name, a.min(), lo))
    if a.size and hi is not None and a.max() >= hi:
        die("%s: dataset '%s' has value %d >= %d (out of range)" % (path, name, a.max(), hi))
    return torch.from_numpy(a.astype(np.int64))


# ---------------------------------------------------------------------------------------------
# encoder
# ---------------------------------------------------------------------------------------------

def run_encoder(cfg, P, ids, m, lw, head=None, labels=None):
    enc = rm.encoder(P, "deberta.", cfg, cfg["num_hidden_layers"],
                     P["deberta.embeddings.word_embeddings.weight"], ids, m, training=False)
    if head:
        enc["logits"], loss = rm.task_head(P, head, enc["layers"][-1], labels)
    else:
        loss = (enc["layers"][-1] * lw).sum()
    names = list(P.keys())
    gs = torch.autograd.grad(loss, [P[n] for n in names], allow_unused=True)
    grads = {n: (torch.zeros_like(P[n]) if g is None else g) for n, g in zip(names, gs)}
    return enc, loss, grads


def backbone_of(cfg, raw, model):
    """One backbone of a full-model file as an encoder-only parameter set (names deberta.*).
    The discriminator's tables are materialised as an export would: GDES E_G + E_delta, ES E_G."""
    pre = model + "."
    out = {k[len(pre):]: v for k, v in raw.items() if k.startswith(pre + "deberta.")}
    cfg = dict(cfg)
    if model == "generator":
        cfg["num_hidden_layers"] = cfg["gen_num_hidden_layers"]
    else:
        for t in ("word_embeddings", "position_embeddings"):
            g = raw.get("generator.deberta.embeddings.%s.weight" % t)
            if cfg["embedding_sharing"] == "gdes":
                out["deberta.embeddings.%s.weight" % t] = g + out.pop("deberta.embeddings.%s._weight" % t)
            elif cfg["embedding_sharing"] == "es":
                out["deberta.embeddings.%s.weight" % t] = g
    return cfg, out


def cmd_encoder(args):
    dtype = DTYPES[args.dtype]
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        cfg, raw = refio.read_weights(args.weights)
        if args.model:
            missing = [k for k in rm.FULL_KEYS if k not in cfg.get("_given", ())]
            if missing:
                die("%s: --model needs a full-model file (attribute(s) %s missing)" % (args.weights, ", ".join(missing)))
            cfg, raw = backbone_of(cfg, raw, args.model)
        shapes = rm.encoder_shapes(cfg)
        if args.head:
            if "classifier.weight" not in raw:
                die("%s: --head needs classifier.weight in the weights" % args.weights)
            shapes.update(rm.head_shapes(cfg, args.head, raw["classifier.weight"].shape[0]))
        P = refio.select_params(raw, shapes, args.weights, dtype)
    except (refio.FileError, rm.ConfigError) as e:
        die(str(e))
    check_dropout(cfg, args)
    ds, _ = refio.read_h5_all(args.inputs)
    ids = int_field(ds, "input_ids", args.inputs, lo=0, hi=cfg["vocab_size"])
    if ids.dim() != 2:
        die("%s: input_ids must be [B,T]" % args.inputs)
    B, T = ids.shape
    m = int_field(ds, "attention_mask", args.inputs, shape=(B, T), lo=0, hi=2)
    lw = labels = None
    if args.head == "regression":
        if "labels" not in ds or tuple(ds["labels"].shape) != (B,) or ds["labels"].dtype.kind != "f":
            die("%s: --head regression needs float labels [%d]" % (args.inputs, B))
        labels = torch.tensor(ds["labels"], dtype=dtype)
    elif args.head:
        L = P["classifier.weight"].shape[0]
        labels = int_field(ds, "labels", args.inputs, shape=(B, T) if args.head == "token" else (B,), lo=-100, hi=L)
        if ((labels < 0) & (labels != -100)).any():
            die("%s: labels must be in [0, %d) or -100" % (args.inputs, L))
    else:
        if "loss_weight" not in ds:
            die("%s: dataset 'loss_weight' missing" % args.inputs)
        lw = ds["loss_weight"]
        if tuple(lw.shape) != (B, T, cfg["hidden_size"]):
            die("%s: loss_weight has shape %s, expected %s" % (args.inputs, lw.shape, (B, T, cfg["hidden_size"])))
        lw = torch.tensor(lw, dtype=dtype)
    enc, loss, grads = run_encoder(cfg, P, ids, m, lw, args.head, labels)
    out = {"embedding_output": np_out(enc["emb"]), "loss": np_out(loss)}
    if args.head:
        out["logits"] = np_out(enc["logits"])
    for n, h in enumerate(enc["layers"]):
        out["hidden_states/layer_%d" % n] = np_out(h)
    for n, g in grads.items():
        out["grad/" + n] = np_out(g)
    refio.write_h5(args.out, out, {"producer": "scripts/reference/deberta_ref.py encoder", "dtype": args.dtype})
    print("encoder: B=%d T=%d layers=%d loss=%.9g -> %s" % (B, T, cfg["num_hidden_layers"], loss.item(), args.out))


# ---------------------------------------------------------------------------------------------
# dump (generator + discriminator)
# ---------------------------------------------------------------------------------------------

LEGACY_HEAD = {"cls.predictions.transform.dense.weight": "lm_predictions.lm_head.dense.weight",
               "cls.predictions.transform.dense.bias": "lm_predictions.lm_head.dense.bias",
               "cls.predictions.transform.LayerNorm.weight": "lm_predictions.lm_head.LayerNorm.weight",
               "cls.predictions.transform.LayerNorm.bias": "lm_predictions.lm_head.LayerNorm.bias",
               "cls.predictions.bias": "lm_predictions.lm_head.bias"}


def load_hf_pair(args):
    """Two exported HF folders -> (cfg, raw params).  The exported discriminator word embeddings are
    E_G + E_delta (spec 5.1), so the pair is run as NES: same forward values as the GDES model."""
    gcfg, graw = refio.read_hf(args.hf_generator)
    dcfg, draw = refio.read_hf(args.hf_discriminator)
    for k in ("hidden_size", "num_attention_heads", "attention_head_size", "intermediate_size", "vocab_size",
              "max_position_embeddings", "position_buckets", "max_relative_positions", "pos_att_type"):
        if gcfg[k] != dcfg[k]:
            die("generator and discriminator configs differ in %s (%s vs %s)" % (k, gcfg[k], dcfg[k]))
    cfg = dict(dcfg)
    cfg.update(gen_num_hidden_layers=gcfg["num_hidden_layers"], embedding_sharing="nes",
               rtd_lambda=args.rtd_lambda, use_emd=args.use_emd, training_mode=args.training_mode)
    cfg = rm.validate(cfg)
    if not any(k.startswith("lm_predictions.") for k in graw):
        for old, new in LEGACY_HEAD.items():
            if old in graw:
                graw[new] = graw[old]
    pe = "deberta.embeddings.position_embeddings.weight"
    if pe not in draw:            # optional in an export; the discriminator never reads it (no EMD)
        draw[pe] = graw.get(pe, np.zeros((cfg["max_position_embeddings"], cfg["hidden_size"]), np.float32))
    raw = {"generator." + k: v for k, v in graw.items()}
    raw.update({"discriminator." + k: v for k, v in draw.items()})
    return cfg, raw


def run_full(cfg, P, batch):
    g = rm.generator_forward(P, cfg, batch["input_ids"], batch["attention_mask"], batch["labels"],
                             batch.get("position_ids"), training=False)
    d = rm.discriminator_forward(P, cfg, batch["replaced_ids"], batch["attention_mask"], batch["labels"],
                                 training=False)
    grads = rm.full_grads(P, cfg, g, d)
    return g, d, grads


def read_batch(path, cfg):
    ds, _ = refio.read_h5_all(path)
    V = cfg["vocab_size"]
    ids = int_field(ds, "input_ids", path, lo=0, hi=V)
    if ids.dim() != 2:
        die("%s: input_ids must be [B,T]" % path)
    B, T = ids.shape
    b = {"input_ids": ids,
         "attention_mask": int_field(ds, "attention_mask", path, shape=(B, T), lo=0, hi=2),
         "labels": int_field(ds, "labels", path, shape=(B, T), lo=0, hi=V),
         "replaced_ids": int_field(ds, "replaced_ids", path, shape=(B, T), lo=0, hi=V)}
    if "position_ids" in ds:
        b["position_ids"] = int_field(ds, "position_ids", path, shape=(B, T), lo=0, hi=cfg["max_position_embeddings"])
    elif cfg["use_emd"] and T > cfg["max_position_embeddings"]:
        die("%s: T=%d exceeds max_position_embeddings %d (EMD position rows)" % (path, T, cfg["max_position_embeddings"]))
    if int((b["labels"] > 0).sum()) == 0:
        die("%s: no masked position (labels > 0 nowhere); the MLM loss is undefined" % path)
    if int(((b["labels"] > 0) & (b["attention_mask"] == 0)).sum()):
        die("%s: labels > 0 at a padded position" % path)
    return b


def cmd_dump(args):
    dtype = DTYPES[args.dtype]
    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        if args.hf_generator or args.hf_discriminator:
            if not (args.hf_generator and args.hf_discriminator) or args.weights:
                die("give either --weights W.h5 or both --hf-generator and --hf-discriminator")
            cfg, raw = load_hf_pair(args)
            src = args.hf_discriminator
        else:
            if not args.weights:
                die("--weights is required")
            cfg, raw = refio.read_weights(args.weights)
            missing = [k for k in rm.FULL_KEYS if k not in cfg.get("_given", ())]
            if missing:
                die("%s: full-model root attribute(s) %s missing (docs/FORMATS.md)" % (args.weights, ", ".join(missing)))
            src = args.weights
        if args.training_mode_override:
            cfg["training_mode"] = args.training_mode_override
        P = refio.select_params(raw, rm.full_shapes(cfg), src, dtype)
    except (refio.FileError, rm.ConfigError) as e:
        die(str(e))
    check_dropout(cfg, args)
    if cfg["embedding_sharing"] == "es" and cfg["training_mode"] == "decoupled":
        refio.warn("ES under decoupled training: the shared embedding gets MLM gradients only "
                   "(official behaviour, spec 5.2); use training_mode joint for a true ES baseline")
    batch = read_batch(args.batch, cfg)
    g, d, grads = run_full(cfg, P, batch)
    out = {"generator/embedding_output": np_out(g["emb"]),
           "generator/mlm_logits": np_out(g["logits"]),
           "generator/loss": np_out(g["loss"]),
           "discriminator/embedding_output": np_out(d["emb"]),
           "discriminator/rtd_logits": np_out(d["logits"]),
           "discriminator/loss": np_out(d["loss"])}
    for n, h in enumerate(g["layers"]):
        out["generator/hidden_states/layer_%d" % n] = np_out(h)
    for n, h in enumerate(g["emd"]):
        out["generator/emd/pass_%d" % (n + 1)] = np_out(h)
    for n, h in enumerate(d["layers"]):
        out["discriminator/hidden_states/layer_%d" % n] = np_out(h)
    for n, gr in grads.items():
        out["grad/" + n] = np_out(gr)
    refio.write_h5(args.out, out, {"producer": "scripts/reference/deberta_ref.py dump", "dtype": args.dtype,
                                   "embedding_sharing": cfg["embedding_sharing"],
                                   "training_mode": cfg["training_mode"]})
    print("dump: %s/%s emd=%d  mlm_loss=%.9g  rtd_loss=%.9g  masked=%d -> %s"
          % (cfg["embedding_sharing"], cfg["training_mode"], cfg["use_emd"], g["loss"].item(), d["loss"].item(),
             g["logits"].shape[0], args.out))


# ---------------------------------------------------------------------------------------------
# init, inputs
# ---------------------------------------------------------------------------------------------

SHAPE_FLAGS = [("hidden", "hidden_size", int), ("layers", "num_hidden_layers", int),
               ("gen_layers", "gen_num_hidden_layers", int), ("heads", "num_attention_heads", int),
               ("head_size", "attention_head_size", int), ("ffn", "intermediate_size", int),
               ("vocab", "vocab_size", int), ("max_pos", "max_position_embeddings", int),
               ("buckets", "position_buckets", int), ("max_rel", "max_relative_positions", int),
               ("terms", "pos_att_type", str), ("sharing", "embedding_sharing", str),
               ("emd", "use_emd", int), ("mode", "training_mode", str), ("rtd_lambda", "rtd_lambda", float),
               ("eps", "layer_norm_eps", float), ("dropout", None, float)]


def add_shape_flags(p):
    for flag, _, typ in SHAPE_FLAGS:
        p.add_argument("--" + flag.replace("_", "-"), dest=flag, type=typ, default=None)


def add_bench_flags(p, parts):
    """The flags of `bench` (also plain_step.py's): shape, budget, threads, dtype, malloc; --part
    chooses among parts.  Both programs print the same RESULT line for scripts/bench-vs-torch.sh."""
    p.add_argument("--preset", choices=rm.PRESETS, default="tiny")
    add_shape_flags(p)
    p.add_argument("--part", choices=parts, default="step")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="after timing, profile one more step and print the N op kinds with most self time")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=DTYPES, default="float32")
    p.add_argument("--malloc", choices=("tuned", "default"), default="tuned",
                   help="glibc malloc set to reuse freed memory (tune_malloc) or left as it is")

def config_from_args(args):
    over = {}
    for flag, key, _ in SHAPE_FLAGS:
        v = getattr(args, flag)
        if v is None:
            continue
        if flag == "dropout":
            over["hidden_dropout_prob"] = over["attention_probs_dropout_prob"] = v
        else:
            over[key] = v
    return rm.make_config(args.preset, **over)


def cmd_init(args):
    try:
        cfg = config_from_args(args)
    except rm.ConfigError as e:
        die(str(e))
    shapes = rm.encoder_shapes(cfg) if args.encoder_only else rm.full_shapes(cfg)
    P = rm.init_params(shapes, seed=args.seed, perturb=args.perturb, dtype=DTYPES[args.store_dtype])
    refio.write_h5(args.out, {n: t.numpy() for n, t in P.items()}, rm.config_attrs(cfg, not args.encoder_only))
    print("init: %s %s, %d tensors, %d parameters -> %s"
          % (args.preset or "custom", "encoder" if args.encoder_only else "generator+discriminator (%s)"
             % cfg["embedding_sharing"], len(P), sum(t.numel() for t in P.values()), args.out))


def make_inputs(cfg, B, T, seed, min_len=None):
    """Random batch: [CLS] tokens [SEP] then padding; row 0 full length, others random lengths.
    ~15% of the real tokens masked (>= 1 per row); replacements random, about a third equal to the
    original (RTD label 0)."""
    g = torch.Generator().manual_seed(seed)
    V, H = cfg["vocab_size"], cfg["hidden_size"]
    if V <= 5:
        raise rm.ConfigError("vocab_size must be > 5 (ids 0-4 are special)")
    min_len = min_len or max(3, T // 2)
    ids = torch.zeros(B, T, dtype=torch.int64)
    m = torch.zeros(B, T, dtype=torch.int64)
    labels = torch.zeros(B, T, dtype=torch.int64)
    for b in range(B):
        n = T if b == 0 else int(torch.randint(min(min_len, T), T + 1, (1,), generator=g))
        n = max(n, 3)
        ids[b, :n] = torch.randint(5, V, (n,), generator=g)
        ids[b, 0], ids[b, n - 1] = 1, 2
        m[b, :n] = 1
        cand = torch.arange(1, n - 1)
        k = max(1, int(round(0.15 * n)))
        pick = cand[torch.randperm(len(cand), generator=g)[:k]]
        labels[b, pick] = ids[b, pick]
    inp = torch.where(labels > 0, torch.full_like(ids, 4), ids)
    rnd = torch.randint(5, V, (B, T), generator=g)
    keep = torch.rand(B, T, generator=g) < 0.33
    replaced = torch.where((labels > 0) & ~keep, rnd, ids)
    lw = torch.randn(B, T, H, generator=g, dtype=torch.float64)
    return {"input_ids": inp.to(torch.int32).numpy(), "attention_mask": m.to(torch.int32).numpy(),
            "labels": labels.to(torch.int32).numpy(), "replaced_ids": replaced.to(torch.int32).numpy(),
            "loss_weight": lw.to(torch.float32).numpy(), "original_ids": ids.to(torch.int32).numpy()}


def cmd_inputs(args):
    try:
        if args.weights:
            cfg, _ = refio.read_weights(args.weights)
        else:
            cfg = config_from_args(args)
        d = make_inputs(cfg, args.batch, args.seq, args.seed)
    except (refio.FileError, rm.ConfigError) as e:
        die(str(e))
    if args.encoder_input_ids_original:
        d["input_ids"] = d["original_ids"]
    refio.write_h5(args.out, d, {"producer": "scripts/reference/deberta_ref.py inputs", "seed": args.seed})
    print("inputs: B=%d T=%d masked=%d -> %s" % (args.batch, args.seq, int((d["labels"] > 0).sum()), args.out))


# ---------------------------------------------------------------------------------------------
# bench
# ---------------------------------------------------------------------------------------------

def tune_malloc():
    """glibc malloc: serve blocks up to 32 MB (its maximum) from the heap instead of fresh mmaps, and never
    give freed heap memory back to the system, so that the tensors PyTorch frees and allocates again in
    every step (gradients after set_to_none, activations, optimizer temporaries) reuse pages instead of
    page-faulting on fresh ones.  The in-process equivalent of the LD_PRELOAD of jemalloc/tcmalloc that
    PyTorch's CPU performance advice gives.  Returns whether it was applied."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(-3, 32 << 20)) and bool(libc.mallopt(-1, 1 << 30))   # M_MMAP_/M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        return False


def model_flops(cfg, B, T, n_masked):
    """Matmul FLOPs of one G+D training step (forward x3 for forward+backward).  Per layer
    application and token: 8H^2 (q,k,v,o) + 4HI (FFN) + 4TH (c2c, PV) + 2RH per position term;
    per layer application and sequence: 2RH^2 per position term (Qr/Kr projections);
    LM head on n_masked rows: 2H^2 + 2HV; RTD head: 2H^2 + 2H per token."""
    H, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    R = 2 * rm.att_span(cfg)
    npos = sum(t in cfg["terms"] for t in ("c2p", "p2c"))
    c2c = 1 if "c2c" in cfg["terms"] else 0
    per_tok = 8 * H * H + 4 * H * I + 2 * T * H * (1 + c2c) + 2 * R * H * npos
    per_seq = 2 * R * H * H * npos
    # layer applications with a backward: the discriminator's, the generator's (with EMD not its last
    # layer's own output, which nothing reads: neither program computes it) and the two EMD passes
    Lg = cfg["gen_num_hidden_layers"]
    apps = cfg["num_hidden_layers"] + Lg - (1 if cfg["use_emd"] and Lg >= 2 else 0) + (2 if cfg["use_emd"] else 0)
    fwd = apps * (B * T * per_tok + B * per_seq)
    fwd += n_masked * (2 * H * H + 2 * H * V) + B * T * (2 * H * H + 2 * H)
    return 3 * fwd


def bench_step(cfg, args, dtype, P=None):
    """The timed step (a closure over the parameters) and four full-length batches.  P: the parameters
    by name (default: rm.init_params of the preset; plain_step.py check passes its own)."""
    if P is None:
        P = rm.init_params(rm.full_shapes(cfg), seed=args.seed, dtype=dtype)
    for t in P.values():
        t.requires_grad_(True)
    gnames = [n for n in P if n.startswith("generator.")]
    dnames = [n for n in P if n.startswith("discriminator.")]

    def groups(names):
        return [{"params": [P[n] for n in names if not rm.no_decay(n)], "weight_decay": 0.01},
                {"params": [P[n] for n in names if rm.no_decay(n)], "weight_decay": 0.0}]
    kw = dict(lr=args.lr, betas=(0.9, 0.999), eps=1e-6)
    if cfg["training_mode"] == "joint":
        opts = [torch.optim.AdamW(groups(gnames + dnames), **kw)]
    else:
        opts = [torch.optim.AdamW(groups(gnames), **kw), torch.optim.AdamW(groups(dnames), **kw)]
    B, T = args.batch, args.seq
    batches = [make_inputs(cfg, B, T, args.seed + 1000 + i, min_len=T) for i in range(4)]
    batches = [{k: torch.from_numpy(v.astype(np.int64)) for k, v in b.items()
                if k in ("input_ids", "attention_mask", "labels")} for b in batches]

    def step(bt):
        ids, m, labels = bt["input_ids"], bt["attention_mask"], bt["labels"]
        for o in opts:
            o.zero_grad(set_to_none=True)
        g = rm.generator_forward(P, cfg, ids, m, labels, training=True, all_layers=False)
        with torch.no_grad():
            probs = torch.softmax(g["logits"].detach().float(), dim=-1)
            sampled = torch.multinomial(probs, 1).squeeze(-1)
            replaced = ids.clone()
            replaced[g["sel"]] = sampled                      # discriminator input (spec 4.3)
        if cfg["training_mode"] == "joint":
            d = rm.discriminator_forward(P, cfg, replaced, m, labels, training=True)
            (g["loss"] + d["loss"]).backward()
            torch.nn.utils.clip_grad_norm_([P[n] for n in P], 1.0)
            opts[0].step()
        else:
            g["loss"].backward()
            torch.nn.utils.clip_grad_norm_([P[n] for n in gnames], 1.0)
            opts[0].step()
            d = rm.discriminator_forward(P, cfg, replaced, m, labels, training=True)   # sees updated E_G
            d["loss"].backward()
            torch.nn.utils.clip_grad_norm_([P[n] for n in dnames], 1.0)
            opts[1].step()
        return g["loss"].item(), d["loss"].item(), int(g["sel"].sum())
    return step, batches


def bench_part(cfg, args, dtype):
    """One attention layer or one full layer, forward + backward, at the preset's shape."""
    P = rm.init_params(rm.backbone_shapes(cfg, "", 1, word=False, position=False), seed=args.seed, dtype=dtype)
    for t in P.values():
        t.requires_grad_(True)
    B, T, H = args.batch, args.seq, cfg["hidden_size"]
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randn(B, T, H, generator=gen, dtype=dtype).requires_grad_(True)
    w = torch.randn(B, T, H, generator=gen, dtype=dtype)
    m = torch.ones(B, T, dtype=torch.int64)
    mask2 = rm.pairwise_mask(m)
    c = rm.rel_index(T, cfg)

    def step(_):
        for t in list(P.values()) + [x]:
            t.grad = None
        Rn = F.layer_norm(P["encoder.rel_embeddings.weight"], (H,), P["encoder.LayerNorm.weight"],
                          P["encoder.LayerNorm.bias"], cfg["layer_norm_eps"])
        if args.part == "attention":
            y = rm.attention(P, "encoder.layer.0.attention.", cfg, x, x, mask2, Rn, c, training=True)
        else:
            y = rm.layer(P, "encoder.layer.0.", cfg, x, x, mask2, Rn, c, training=True)
        (y * w).sum().backward()
        return 0.0, 0.0, 0
    return step, [None]


def cmd_bench(args):
    tuned = tune_malloc() if args.malloc == "tuned" else False
    torch.set_num_threads(args.threads)
    dtype = DTYPES[args.dtype]
    try:
        cfg = config_from_args(args)
        if args.dropout is None:
            cfg["hidden_dropout_prob"] = cfg["attention_probs_dropout_prob"] = 0.1
    except rm.ConfigError as e:
        die(str(e))
    torch.manual_seed(args.seed)
    step, batches = bench_step(cfg, args, dtype) if args.part == "step" else bench_part(cfg, args, dtype)
    times, last = [], None
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        last = step(batches[i % len(batches)])
        dt = time.perf_counter() - t0
        if i >= args.warmup:
            times.append(dt)
    med = statistics.median(times)
    toks = args.batch * args.seq
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    res = {"part": args.part, "preset": args.preset, "batch": args.batch, "seq": args.seq,
           "threads": args.threads, "dtype": args.dtype, "steps": args.steps, "warmup": args.warmup,
           "dropout": cfg["hidden_dropout_prob"], "sharing": cfg["embedding_sharing"],
           "training_mode": cfg["training_mode"],
           "ms_median": med * 1e3, "ms_min": min(times) * 1e3, "ms_max": max(times) * 1e3,
           "tokens_per_s": toks / med, "peak_rss_mb": rss_mb,
           "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""), "torch": torch.__version__,
           "malloc_tuned": tuned}
    if args.part == "step":
        fl = model_flops(cfg, args.batch, args.seq, last[2])
        res.update(model_gflop=fl / 1e9, gflops=fl / 1e9 / med, mlm_loss=last[0], rtd_loss=last[1])
        print("bench step: preset=%s B=%d T=%d threads=%d %s/%s dropout=%g malloc %s  median %.1f ms/step "
              "(min %.1f max %.1f)  %.0f tokens/s  ~%.1f GFLOP/step  %.1f GFLOP/s  peak RSS %.0f MB"
              % (args.preset, args.batch, args.seq, args.threads, cfg["embedding_sharing"], cfg["training_mode"],
                 cfg["hidden_dropout_prob"], "tuned" if tuned else "default", med * 1e3, min(times) * 1e3,
                 max(times) * 1e3, toks / med, fl / 1e9, fl / 1e9 / med, rss_mb))
    else:
        print("bench %s: preset=%s B=%d T=%d threads=%d  median %.2f ms fwd+bwd  peak RSS %.0f MB"
              % (args.part, args.preset, args.batch, args.seq, args.threads, med * 1e3, rss_mb))
    if args.profile:
        with torch.autograd.profiler.profile() as prof:
            step(batches[0])
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.profile))
    print("RESULT " + json.dumps(res, sort_keys=True))


# ---------------------------------------------------------------------------------------------
# compare (parity checks: one implementation's output file against the reference's)
# ---------------------------------------------------------------------------------------------

# (glob pattern, metric, tolerance); first match wins.  abs = max |a-b|;
# rel = max |a-b| / max |ref| over the whole tensor (norm-relative, robust to near-zero entries;
# a tensor whose reference is all zero must match exactly).
PROFILES = {
    "encoder": [("loss", "rel", 1e-5), ("grad/*", "rel", 1e-4), ("*", "abs", 1e-5)],
    "dump": [("*/loss", "rel", 1e-5), ("*logits", "abs", 1e-4), ("grad/*", "rel", 1e-3), ("*", "abs", 1e-4)],
}


def compare_files(ours, ref, rules, only_ref_names=True):
    import fnmatch
    a, _ = refio.read_h5_all(ours)
    b, _ = refio.read_h5_all(ref)
    rows, bad = [], []
    for name in sorted(b):
        if name not in a:
            bad.append((name, "missing in %s" % ours))
            continue
        x, y = np.asarray(a[name], dtype=np.float64), np.asarray(b[name], dtype=np.float64)
        if x.shape != y.shape:
            bad.append((name, "shape %s vs %s" % (x.shape, y.shape)))
            continue
        metric, tol = next((m, t) for p, m, t in rules if fnmatch.fnmatchcase(name, p))
        if not np.all(np.isfinite(x)):
            bad.append((name, "non-finite values"))
            continue
        d = float(np.abs(x - y).max()) if x.size else 0.0
        scale = float(np.abs(y).max()) if y.size else 0.0
        err = d if metric == "abs" else (d / scale if scale > 0 else (0.0 if d == 0 else float("inf")))
        rows.append((name, metric, err, tol, d, scale))
        if not err <= tol:
            bad.append((name, "%s error %.3g > %.3g (max|diff| %.3g, max|ref| %.3g)" % (metric, err, tol, d, scale)))
    if not only_ref_names:
        for name in sorted(set(a) - set(b)):
            bad.append((name, "not in %s" % ref))
    return rows, bad


def cmd_compare(args):
    rules = [tuple(r) for r in PROFILES[args.profile]]
    for spec in args.tol or []:
        try:
            pat, metric, tol = spec.split(":")
            rules.insert(0, (pat, metric, float(tol)))
            assert metric in ("abs", "rel")
        except (ValueError, AssertionError):
            die("--tol wants PATTERN:abs|rel:TOL, got '%s'" % spec)
    for p in (args.ours, args.ref):
        if not os.path.exists(p):
            die("%s: no such file" % p)
    rows, bad = compare_files(args.ours, args.ref, rules)
    rows.sort(key=lambda r: -(r[2] / r[3] if r[3] else 0))
    print("compare %s vs reference %s (profile %s): %d tensors, %d failing" % (args.ours, args.ref, args.profile,
                                                                              len(rows) + len([b for b in bad if "missing" in b[1] or "shape" in b[1]]), len(bad)))
    for name, metric, err, tol, d, scale in rows[:args.show]:
        print("  %-70s %s %.3e (tol %.0e)" % (name, metric, err, tol))
    for name, why in bad:
        print("FAIL %s: %s" % (name, why))
    return 1 if bad else 0


# ---------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------
# write-hf: a full-model weights file as two Hugging Face folders in the published V3 layout
# ---------------------------------------------------------------------------------------------

def _st_bytes(arr, dtype):
    a = np.ascontiguousarray(arr, dtype=np.float32)
    if dtype == "F32":
        return a.astype("<f4").tobytes()
    if dtype == "F16":
        return a.astype("<f2").tobytes()
    u = a.view(np.uint32).astype(np.uint64)                 # BF16: round to nearest even
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype("<u2").tobytes()


def write_safetensors(path, tensors, dtype):
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, arr in tensors:
        b = _st_bytes(arr, dtype)
        header[name] = {"dtype": dtype, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def write_hf_config(path, cfg, layers, arch):
    terms = [t for t in ("p2c", "c2p") if t in cfg["pos_att_type"].split("|")]
    j = {"model_type": "deberta-v2", "architectures": [arch], "vocab_size": cfg["vocab_size"],
         "hidden_size": cfg["hidden_size"], "num_hidden_layers": layers,
         "num_attention_heads": cfg["num_attention_heads"], "intermediate_size": cfg["intermediate_size"],
         "hidden_act": "gelu", "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
         "max_position_embeddings": cfg["max_position_embeddings"], "type_vocab_size": 0,
         "initializer_range": 0.02, "layer_norm_eps": cfg["layer_norm_eps"], "relative_attention": True,
         "max_relative_positions": cfg["max_relative_positions"],
         "position_buckets": cfg["position_buckets"] if cfg["position_buckets"] > 0 else -1,
         "norm_rel_ebd": "layer_norm", "share_att_key": True, "pos_att_type": "|".join(terms),
         "position_biased_input": False, "pad_token_id": 0}
    if cfg["attention_head_size"] * cfg["num_attention_heads"] != cfg["hidden_size"]:
        j["attention_head_size"] = cfg["attention_head_size"]
    with open(path, "w") as f:
        json.dump(j, f, indent=2)


def cmd_write_hf(args):
    """generator/ and discriminator/ folders under OUT: config.json + model.safetensors (DTYPE), the
    published layout: discriminator deberta.* (its word/position tables materialised: GDES E_G+E_delta,
    ES E_G, NES its own) + mask_predictions.*; generator deberta.* + the MLM head (official
    lm_predictions.lm_head.* or cls.predictions.*)."""
    cfg, raw = refio.read_weights(args.weights)
    if "embedding_sharing" not in cfg.get("_given", []) and "discriminator.mask_predictions.dense.weight" not in raw:
        die("%s: not a full-model weights file" % args.weights)
    sh = cfg["embedding_sharing"]
    gen = [(k[len("generator."):], v) for k, v in raw.items() if k.startswith("generator.")]
    if args.head == "cls":
        inv = {v: k for k, v in LEGACY_HEAD.items()}
        gen = [(inv.get(k, k), v) for k, v in gen]
    disc = []
    for emb in ("word_embeddings", "position_embeddings"):
        own = raw.get("discriminator.deberta.embeddings.%s.weight" % emb)
        g = raw["generator.deberta.embeddings.%s.weight" % emb]
        if sh == "nes":
            t = own
        elif sh == "es":
            t = g
        else:
            t = (g.astype(np.float32) + raw["discriminator.deberta.embeddings.%s._weight" % emb].astype(np.float32))
        disc.append(("deberta.embeddings.%s.weight" % emb, t))
    disc += [(k[len("discriminator."):], v) for k, v in raw.items() if k.startswith("discriminator.")
             and ".embeddings.word_embeddings." not in k and ".embeddings.position_embeddings." not in k]
    for sub, tensors, layers, arch in (("generator", gen, cfg["gen_num_hidden_layers"], "DebertaV2ForMaskedLM"),
                                       ("discriminator", disc, cfg["num_hidden_layers"], "DebertaV2Model")):
        d = os.path.join(args.out, sub)
        os.makedirs(d, exist_ok=True)
        write_safetensors(os.path.join(d, "model.safetensors"), tensors, args.dtype)
        write_hf_config(os.path.join(d, "config.json"), cfg, layers, arch)
    print("write-hf: %s (%s) -> %s/{generator,discriminator}: %d + %d tensors, %s, head %s"
          % (args.weights, sh, args.out, len(gen), len(disc), args.dtype, args.head))


def main(argv=None):
    ap = argparse.ArgumentParser(prog="deberta_ref.py", description="PyTorch reference of deberta.c")
    sub = ap.add_subparsers(dest="cmd")

    p = sub.add_parser("encoder", help="encoder forward + gradients of sum(last_hidden * loss_weight)")
    p.add_argument("--weights", required=True, help="HDF5 weights (deberta.* names) or HF folder/.safetensors")
    p.add_argument("--inputs", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--dtype", choices=DTYPES, default="float32")
    p.add_argument("--ignore-dropout", action="store_true", help="run with dropout off even if config says not")
    p.add_argument("--model", choices=("generator", "discriminator"),
                   help="run one backbone of a full-model weights file or checkpoint (GDES/ES tables materialised)")
    p.add_argument("--head", choices=("token", "sequence", "regression"),
                   help="a fine-tuning head (classifier.*, pooler.*) on top: loss = its cross-entropy on the "
                        "inputs' labels (-100 ignored), or for regression the MSE on float labels [B], "
                        "instead of sum(last_hidden * loss_weight)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own)")

    p = sub.add_parser("dump", help="generator + discriminator: activations, logits, losses, gradients")
    p.add_argument("--weights", help="HDF5 full-model weights (generator.*, discriminator.*)")
    p.add_argument("--hf-generator", help="exported HF folder of the generator (with --hf-discriminator)")
    p.add_argument("--hf-discriminator", help="exported HF folder of the discriminator")
    p.add_argument("--rtd-lambda", type=float, default=10.0, help="HF pair only (default 10)")
    p.add_argument("--use-emd", type=int, default=1, help="HF pair only (default 1)")
    p.add_argument("--training-mode", default="decoupled", choices=rm.MODES, help="HF pair only")
    p.add_argument("--override-training-mode", dest="training_mode_override", choices=rm.MODES)
    p.add_argument("--batch", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--dtype", choices=DTYPES, default="float32")
    p.add_argument("--ignore-dropout", action="store_true")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's own)")

    p = sub.add_parser("init", help="random weights (spec 4.8) into an HDF5 weights file")
    p.add_argument("--preset", choices=rm.PRESETS, default="test")
    add_shape_flags(p)
    p.add_argument("--encoder-only", action="store_true", help="deberta.* encoder file")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--perturb", action="store_true", help="random biases, LN affine and GDES deltas too")
    p.add_argument("--store-dtype", choices=DTYPES, default="float32")
    p.add_argument("--out", required=True)

    p = sub.add_parser("write-hf", help="a full-model weights file as two HF folders (published V3 layout)")
    p.add_argument("--weights", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--dtype", choices=("F32", "F16", "BF16"), default="F32")
    p.add_argument("--head", choices=("official", "cls"), default="official",
                   help="generator MLM head names: lm_predictions.lm_head.* or cls.predictions.*")

    p = sub.add_parser("inputs", help="random encoder inputs + full-model batch in one HDF5 file")
    p.add_argument("--weights", help="take vocab/hidden from this weights file")
    p.add_argument("--preset", choices=rm.PRESETS, default="test")
    add_shape_flags(p)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--encoder-input-ids-original", action="store_true",
                   help="input_ids without [MASK] (the original tokens)")
    p.add_argument("--out", required=True)

    p = sub.add_parser("bench", help="time the full pretraining step (or one layer)")
    add_bench_flags(p, ("step", "layer", "attention"))

    p = sub.add_parser("compare", help="compare an output file against the reference's, with tolerances")
    p.add_argument("--ours", required=True, help="file from the implementation under test (e.g. deberta dump)")
    p.add_argument("--ref", required=True, help="file from this reference (every dataset in it is checked)")
    p.add_argument("--profile", choices=PROFILES, default="encoder")
    p.add_argument("--tol", action="append", help="PATTERN:abs|rel:TOL, overrides the profile (repeatable)")
    p.add_argument("--show", type=int, default=8, help="print the N worst tensors (relative to tolerance)")

    args = ap.parse_args(argv)
    if not args.cmd:
        ap.print_help(sys.stderr)
        return 2
    rc = {"encoder": cmd_encoder, "dump": cmd_dump, "init": cmd_init, "inputs": cmd_inputs,
          "bench": cmd_bench, "compare": cmd_compare, "write-hf": cmd_write_hf}[args.cmd](args)
    return rc or 0


if __name__ == "__main__":
    sys.exit(main())
