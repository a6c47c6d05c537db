#!/usr/bin/python3
"""refmodel.py - independent PyTorch reference of the DeBERTa-V3 model used by deberta.c.

Written from a specification of the papers and the official code (the "spec N.N" section
numbers below refer to it; it is not kept in the repository, docs/MODEL.md describes the same
model), not from the official or Hugging Face code.  The model is written functionally: every function takes a dict
P of parameter tensors keyed by their Hugging Face DebertaV2 names (spec 7.1), so the same code
serves the parity dumps (gradients by name), torch.autograd.gradcheck and the benchmark.

Shapes: B batch, T sequence, H hidden, A heads, D head size, I FFN size, V vocab,
R = 2*S rows of the relative-position table (S = att_span).
"""
import math
import functools

import numpy as np
import torch
import torch.nn.functional as F

TERMS = ("c2c", "c2p", "p2c")
SHARING = ("gdes", "es", "nes")
MODES = ("decoupled", "joint")

# --------------------------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------------------------

ENCODER_KEYS = ("hidden_size", "num_hidden_layers", "num_attention_heads", "attention_head_size",
                "intermediate_size", "vocab_size", "max_position_embeddings", "position_buckets",
                "max_relative_positions", "layer_norm_eps", "pos_att_type",
                "hidden_dropout_prob", "attention_probs_dropout_prob")
FULL_KEYS = ("gen_num_hidden_layers", "embedding_sharing", "rtd_lambda", "use_emd", "training_mode")

PRESETS = {
    # spec: hidden 256, 4 layers, 4 heads of 64, FFN 1024, buckets 64, vocab 8192; max_rel 512 (the spec's
    # 128 clamps distances that Hugging Face does not clamp: max_rel = max_pos is exact at every length)
    "tiny": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, attention_head_size=64,
                 intermediate_size=1024, vocab_size=8192, max_position_embeddings=512,
                 position_buckets=64, max_relative_positions=512, gen_num_hidden_layers=2),
    # spec 6.1 xsmall shape, vocab 8192 unless told
    "xsmall": dict(hidden_size=384, num_hidden_layers=12, num_attention_heads=6, attention_head_size=64,
                   intermediate_size=1536, vocab_size=8192, max_position_embeddings=512,
                   position_buckets=256, max_relative_positions=512, gen_num_hidden_layers=6),
    # very small, for self-tests and gradient checks (S = 4, R = 8 rows)
    "test": dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, attention_head_size=8,
                 intermediate_size=32, vocab_size=40, max_position_embeddings=32,
                 position_buckets=8, max_relative_positions=16, gen_num_hidden_layers=2),
}
DEFAULTS = dict(layer_norm_eps=1e-7, pos_att_type="c2c|c2p|p2c", hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0, embedding_sharing="gdes", rtd_lambda=10.0,
                use_emd=1, training_mode="decoupled")


class ConfigError(ValueError):
    pass


def parse_terms(v):
    """'c2c|c2p' or ['c2p','p2c'] -> ordered tuple of terms; error if empty or unknown."""
    if isinstance(v, (bytes, np.bytes_)):
        v = v.decode()
    parts = v.split("|") if isinstance(v, str) else list(v)
    parts = [p.strip() for p in parts if p.strip()]
    bad = [p for p in parts if p not in TERMS]
    if bad:
        raise ConfigError("pos_att_type: unknown attention term(s) %s (allowed: c2c, c2p, p2c)" % bad)
    out = tuple(t for t in TERMS if t in parts)
    if not out:
        raise ConfigError("pos_att_type: no attention term selected")
    return out


def make_config(preset=None, **over):
    cfg = dict(DEFAULTS)
    if preset is not None:
        if preset not in PRESETS:
            raise ConfigError("unknown preset '%s' (tiny, xsmall, test)" % preset)
        cfg.update(PRESETS[preset])
    cfg.update({k: v for k, v in over.items() if v is not None})
    return validate(cfg)


def validate(cfg):
    cfg = dict(cfg)
    for k in ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
              "vocab_size", "max_position_embeddings"):
        if k not in cfg:
            raise ConfigError("config: missing '%s'" % k)
        cfg[k] = int(cfg[k])
        if cfg[k] < 1:
            raise ConfigError("config: %s must be >= 1 (got %d)" % (k, cfg[k]))
    for k, v in DEFAULTS.items():
        cfg.setdefault(k, v)
    for k in ("layer_norm_eps", "hidden_dropout_prob", "attention_probs_dropout_prob", "rtd_lambda"):
        cfg[k] = float(cfg[k])
    for k in ("embedding_sharing", "training_mode"):
        if isinstance(cfg[k], (bytes, np.bytes_)):
            cfg[k] = cfg[k].decode()
        cfg[k] = str(cfg[k])
    if cfg.get("attention_head_size") is None or int(cfg["attention_head_size"]) < 1:
        if cfg["hidden_size"] % cfg["num_attention_heads"]:
            raise ConfigError("config: hidden_size %d not divisible by num_attention_heads %d"
                              % (cfg["hidden_size"], cfg["num_attention_heads"]))
        cfg["attention_head_size"] = cfg["hidden_size"] // cfg["num_attention_heads"]
    cfg["attention_head_size"] = int(cfg["attention_head_size"])
    cfg["position_buckets"] = int(cfg.get("position_buckets", -1))
    mrp = int(cfg.get("max_relative_positions", -1))
    cfg["max_relative_positions"] = mrp if mrp >= 1 else cfg["max_position_embeddings"]
    pb, mrp = cfg["position_buckets"], cfg["max_relative_positions"]
    if pb > 0 and not (mrp - 1 > pb // 2 and pb >= 2):
        raise ConfigError("config: position_buckets %d needs max_relative_positions - 1 > buckets/2 "
                          "(got max_relative_positions %d)" % (pb, mrp))
    cfg["terms"] = parse_terms(cfg["pos_att_type"])
    cfg["pos_att_type"] = "|".join(cfg["terms"])
    cfg["use_emd"] = int(cfg["use_emd"])
    cfg.setdefault("gen_num_hidden_layers", max(1, cfg["num_hidden_layers"] // 2))
    cfg["gen_num_hidden_layers"] = int(cfg["gen_num_hidden_layers"])
    if cfg["embedding_sharing"] not in SHARING:
        raise ConfigError("config: embedding_sharing '%s' (gdes, es, nes)" % cfg["embedding_sharing"])
    if cfg["training_mode"] not in MODES:
        raise ConfigError("config: training_mode '%s' (decoupled, joint)" % cfg["training_mode"])
    return cfg


def att_span(cfg):
    """S (spec 1.1): position_buckets if > 0, else max_relative_positions.  Table has 2S rows."""
    return cfg["position_buckets"] if cfg["position_buckets"] > 0 else cfg["max_relative_positions"]


def config_attrs(cfg, full):
    """The root attributes of a weights file (docs/FORMATS.md, 'Parity and dump files')."""
    keys = ENCODER_KEYS + (FULL_KEYS if full else ())
    return {k: cfg[k] for k in keys}

# --------------------------------------------------------------------------------------------
# relative positions (spec 1.2, 1.3, 1.6)
# --------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def bucket_table_f32(bucket_size, max_position):
    """Bucket of every r in [-max_position, max_position), arithmetic in float32 as the official
    code does it: float32 log of |r|/mid, divided by a double log ratio, times (mid-1), ceil.
    Returns int64 tensor of length 2*max_position; entry k is bucket(k - max_position)."""
    r = torch.arange(-max_position, max_position, dtype=torch.int64)
    mid = bucket_size // 2
    sign = torch.sign(r)
    inner = (r < mid) & (r > -mid)
    absr = torch.where(inner, torch.full_like(r, mid - 1), r.abs())      # placeholder avoids log(0)
    ratio = absr.to(torch.float32) / mid                                 # float32
    lp = torch.ceil(torch.log(ratio) / math.log((max_position - 1) / mid) * (mid - 1)) + mid
    out = torch.where(absr <= mid, r.to(torch.float32), lp * sign.to(torch.float32))
    return out.to(torch.int64)


@functools.lru_cache(maxsize=None)
def bucket_table_f64(bucket_size, max_position):
    """The same table computed independently in float64 (numpy, math), for the equality check."""
    mid = bucket_size // 2
    denom = math.log((max_position - 1) / mid)
    out = np.empty(2 * max_position, dtype=np.int64)
    for k in range(2 * max_position):
        r = k - max_position
        a = abs(r)
        if a <= mid:
            out[k] = r
        else:
            lp = math.ceil(math.log(a / mid) / denom * (mid - 1)) + mid
            out[k] = lp if r > 0 else -lp
    return torch.from_numpy(out)


def log_bucket(r, bucket_size, max_position, table="f32"):
    """bucket(r) for an int64 tensor r, official recipe: clamp to +-(max_position-1), then table."""
    tab = bucket_table_f32(bucket_size, max_position) if table == "f32" else \
        bucket_table_f64(bucket_size, max_position)
    rc = r.clamp(-(max_position - 1), max_position - 1)
    return tab[rc + max_position]


@functools.lru_cache(maxsize=None)
def _rel_index(T, pb, mrp):
    S = pb if pb > 0 else mrp
    i = torch.arange(T, dtype=torch.int64)
    r = i[:, None] - i[None, :]                        # rel[i, j] = i - j
    b = log_bucket(r, pb, mrp) if (pb > 0 and mrp > 0) else r
    return (b + S).clamp(0, 2 * S - 1).contiguous()    # c(i, j), used by both c2p and p2c


def rel_index(T, cfg):
    """c(i,j) = clamp(bucket(i-j) + S, 0, 2S-1), int64 [T, T] (spec 1.6)."""
    return _rel_index(T, cfg["position_buckets"], cfg["max_relative_positions"])

# --------------------------------------------------------------------------------------------
# layers
# --------------------------------------------------------------------------------------------


def _drop(x, p, training):
    return F.dropout(x, p, True) if (training and p > 0) else x


def _ln(x, P, name, eps):
    return F.layer_norm(x, (x.shape[-1],), P[name + ".weight"], P[name + ".bias"], eps)


def _lin(x, P, name):
    return F.linear(x, P[name + ".weight"], P[name + ".bias"])


def pairwise_mask(m):
    """[B,T] 0/1 -> bool [B,1,T,T] with M[b,i,j] = m[b,i] * m[b,j] (spec 1.7)."""
    mb = m > 0
    return (mb[:, None, :, None] & mb[:, None, None, :])


def attention_scores(q, k, Qr, Kr, c, terms, scale):
    """Disentangled scores before masking.
    q [B,A,T,D] content queries, k [B,A,T,D] content keys, Qr/Kr [A,R,D] position queries/keys,
    c [T,T] int64 table index c(i,j).  Never builds a [T,T,D] tensor: c2p and p2c are a matmul
    against the R-row table followed by a gather.
      c2c[i,j] = q_i . k_j
      c2p[i,j] = q_i . Kr[c(i,j)]          = (q Kr^T)[i, c(i,j)]
      p2c[i,j] = k_j . Qr[c(i,j)]          = (k Qr^T)[j, c(i,j)]
    """
    B, A, T, _ = q.shape
    s = None
    if "c2c" in terms:
        s = torch.matmul(q, k.transpose(-1, -2))
    if "c2p" in terms:
        full = torch.matmul(q, Kr.transpose(-1, -2))                   # [B,A,T,R] rows = query i
        g = torch.gather(full, -1, c.expand(B, A, T, T))              # g[i,j] = full[i, c(i,j)]
        s = g if s is None else s + g
    if "p2c" in terms:
        full = torch.matmul(k, Qr.transpose(-1, -2))                   # [B,A,T,R] rows = key j
        g = torch.gather(full, -1, c.t().expand(B, A, T, T))          # g[j,i] = full[j, c(i,j)]
        g = g.transpose(-1, -2)                                        # -> [i,j]
        s = g if s is None else s + g
    return s * scale


def masked_softmax(s, mask2):
    """Softmax over keys with the pairwise mask; masked entries are exactly 0 and a fully masked
    (padded) query row is all zeros, as the official XSoftmax.  A finite fill keeps the backward
    free of NaN for fully masked rows."""
    fill = torch.finfo(s.dtype).min
    p = torch.softmax(s.masked_fill(~mask2, fill), dim=-1)
    return p.masked_fill(~mask2, 0.0)


def attention(P, pre, cfg, qin, kv, mask2, Rn, c, training=False, probs_out=None):
    """Disentangled self-attention with share_att_key (spec 1.4-1.7).  pre = '...attention.'
    qin [B,T,H] query states, kv [B,T,H] key/value states, Rn [R,H] LayerNorm'd rel table."""
    B, T, _ = qin.shape
    A, D = cfg["num_attention_heads"], cfg["attention_head_size"]
    terms = cfg["terms"]
    sp = pre + "self."

    def heads(x):
        return x.reshape(x.shape[0], x.shape[1], A, D).transpose(1, 2)

    def proj(x, names):
        """One GEMM for several projections of the same input (same math as separate Linears)."""
        if len(names) == 1:
            return [_lin(x, P, sp + names[0])]
        W = torch.cat([P[sp + n + ".weight"] for n in names])
        b = torch.cat([P[sp + n + ".bias"] for n in names])
        return F.linear(x, W, b).split(A * D, dim=-1)

    if qin is kv:
        q, k, v = (heads(t) for t in proj(qin, ("query_proj", "key_proj", "value_proj")))
    else:                                                             # EMD: query differs from kv
        q = heads(proj(qin, ("query_proj",))[0])
        k, v = (heads(t) for t in proj(kv, ("key_proj", "value_proj")))
    Qr = Kr = None
    pos = [n for t, n in (("c2p", "key_proj"), ("p2c", "query_proj")) if t in terms]
    if pos:
        R = _drop(Rn, cfg["hidden_dropout_prob"], training)          # pos_dropout, per layer
        nR = R.shape[0]
        outs = dict(zip(pos, proj(R, pos)))                          # Kr = R Wk^T + bk, Qr = R Wq^T + bq
        if "key_proj" in outs:
            Kr = outs["key_proj"].reshape(nR, A, D).transpose(0, 1)      # [A,R,D]
        if "query_proj" in outs:
            Qr = outs["query_proj"].reshape(nR, A, D).transpose(0, 1)    # [A,R,D]
    scale = 1.0 / math.sqrt(D * len(terms))
    s = attention_scores(q, k, Qr, Kr, c, terms, scale)
    p = masked_softmax(s, mask2)
    if probs_out is not None:
        probs_out.append(p)
    p = _drop(p, cfg["attention_probs_dropout_prob"], training)
    ctx = torch.matmul(p, v).transpose(1, 2).reshape(B, T, A * D)
    return ctx


def layer(P, pre, cfg, qin, kv, mask2, Rn, c, training=False, probs_out=None):
    """Post-LN transformer layer (spec 2.2); the attention residual is the QUERY input."""
    eps, ph = cfg["layer_norm_eps"], cfg["hidden_dropout_prob"]
    ctx = attention(P, pre + "attention.", cfg, qin, kv, mask2, Rn, c, training, probs_out)
    a = _ln(_drop(_lin(ctx, P, pre + "attention.output.dense"), ph, training) + qin,
            P, pre + "attention.output.LayerNorm", eps)
    f = F.gelu(_lin(a, P, pre + "intermediate.dense"))                # exact erf GELU
    y = _ln(_drop(_lin(f, P, pre + "output.dense"), ph, training) + a, P, pre + "output.LayerNorm", eps)
    return y


def embeddings(word_w, P, pre, cfg, ids, m, training=False):
    """Word lookup (padding_idx 0: row 0 gets no lookup gradient), LN, padding mask, dropout
    (spec 2.1).  pre = '<...>deberta.'  No absolute positions at the input (V3)."""
    e = F.embedding(ids, word_w, padding_idx=0)
    e = _ln(e, P, pre + "embeddings.LayerNorm", cfg["layer_norm_eps"])
    e = e * m.to(e.dtype)[:, :, None]
    return _drop(e, cfg["hidden_dropout_prob"], training)


def encoder(P, pre, cfg, n_layers, word_w, ids, m, training=False, n_run=None):
    """Embeddings + n_layers layers (only the first n_run when given).  Returns dict(emb, layers, Rn, c,
    mask2).  The rel-table LayerNorm and the rel index are computed once and shared by all layers."""
    T = ids.shape[1]
    emb = embeddings(word_w, P, pre, cfg, ids, m, training)
    mask2 = pairwise_mask(m)
    c = rel_index(T, cfg)
    Rn = _ln(P[pre + "encoder.rel_embeddings.weight"], P, pre + "encoder.LayerNorm", cfg["layer_norm_eps"])
    x, outs = emb, []
    for n in range(n_layers if n_run is None else n_run):
        x = layer(P, "%sencoder.layer.%d." % (pre, n), cfg, x, x, mask2, Rn, c, training)
        outs.append(x)
    return dict(emb=emb, layers=outs, Rn=Rn, c=c, mask2=mask2)

# --------------------------------------------------------------------------------------------
# parameters: names (spec 7.1), shapes, init (spec 4.8)
# --------------------------------------------------------------------------------------------


def backbone_shapes(cfg, pre, n_layers, word=True, position=True, word_delta=False):
    H, I, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    AD = cfg["num_attention_heads"] * cfg["attention_head_size"]
    R = 2 * att_span(cfg)
    s = {}
    e = pre + "embeddings."
    if word:
        s[e + "word_embeddings.weight"] = (V, H)
    if position:
        s[e + "position_embeddings.weight"] = (cfg["max_position_embeddings"], H)
    if word_delta:
        s[e + "word_embeddings._weight"] = (V, H)
        s[e + "position_embeddings._weight"] = (cfg["max_position_embeddings"], H)
    s[e + "LayerNorm.weight"] = (H,)
    s[e + "LayerNorm.bias"] = (H,)
    for n in range(n_layers):
        l = "%sencoder.layer.%d." % (pre, n)
        for p in ("query_proj", "key_proj", "value_proj"):
            s[l + "attention.self.%s.weight" % p] = (AD, H)
            s[l + "attention.self.%s.bias" % p] = (AD,)
        s[l + "attention.output.dense.weight"] = (H, AD)
        s[l + "attention.output.dense.bias"] = (H,)
        s[l + "attention.output.LayerNorm.weight"] = (H,)
        s[l + "attention.output.LayerNorm.bias"] = (H,)
        s[l + "intermediate.dense.weight"] = (I, H)
        s[l + "intermediate.dense.bias"] = (I,)
        s[l + "output.dense.weight"] = (H, I)
        s[l + "output.dense.bias"] = (H,)
        s[l + "output.LayerNorm.weight"] = (H,)
        s[l + "output.LayerNorm.bias"] = (H,)
    s[pre + "encoder.rel_embeddings.weight"] = (R, H)
    s[pre + "encoder.LayerNorm.weight"] = (H,)
    s[pre + "encoder.LayerNorm.bias"] = (H,)
    return s


def encoder_shapes(cfg):
    return backbone_shapes(cfg, "deberta.", cfg["num_hidden_layers"])


def head_shapes(cfg, kind, n_labels):
    """Fine-tuning heads (names of HF DebertaV2ForTokenClassification / ...ForSequenceClassification)."""
    H = cfg["hidden_size"]
    s = {"classifier.weight": (n_labels, H), "classifier.bias": (n_labels,)}
    if kind in ("sequence", "regression"):
        s.update({"pooler.dense.weight": (H, H), "pooler.dense.bias": (H,)})
    return s


def task_head(P, kind, hidden, labels):
    """Logits and loss of a fine-tuning head on the last hidden state [B, T, H] (dropout off).
    token:    logits[b, i] = classifier(h[b, i]);                 labels [B, T]
    sequence: p = gelu(pooler.dense(h[b, 0])) (the first token); logits[b] = classifier(p); labels [B]
    regression: the sequence head with one output; float labels [B]; loss = MSE (HF num_labels == 1)
    loss:     mean cross-entropy over the labels that are not -100."""
    if kind == "token":
        logits = _lin(hidden.reshape(-1, hidden.shape[-1]), P, "classifier")
    else:
        logits = _lin(F.gelu(_lin(hidden[:, 0], P, "pooler.dense")), P, "classifier")
    if kind == "regression":
        return logits, F.mse_loss(logits.view(-1), labels.view(-1).to(logits.dtype))
    y = labels.reshape(-1)
    keep = y != -100
    lp = torch.log_softmax(logits[keep], dim=-1)
    loss = -lp.gather(1, y[keep].unsqueeze(1)).sum() / max(int(keep.sum()), 1)
    return logits, loss


def full_shapes(cfg):
    H, V = cfg["hidden_size"], cfg["vocab_size"]
    s = backbone_shapes(cfg, "generator.deberta.", cfg["gen_num_hidden_layers"])
    h = "generator.lm_predictions.lm_head."
    s.update({h + "dense.weight": (H, H), h + "dense.bias": (H,), h + "LayerNorm.weight": (H,),
              h + "LayerNorm.bias": (H,), h + "bias": (V,)})
    sh = cfg["embedding_sharing"]
    s.update(backbone_shapes(cfg, "discriminator.deberta.", cfg["num_hidden_layers"],
                             word=(sh == "nes"), position=(sh == "nes"), word_delta=(sh == "gdes")))
    d = "discriminator.mask_predictions."
    s.update({d + "dense.weight": (H, H), d + "dense.bias": (H,), d + "LayerNorm.weight": (H,),
              d + "LayerNorm.bias": (H,), d + "classifier.weight": (1, H), d + "classifier.bias": (1,)})
    return s


def init_params(shapes, seed=0, std=0.02, perturb=False, dtype=torch.float64):
    """Spec 4.8: Linear/Embedding weights N(0, std) (padding row included), biases 0, LN weight 1
    bias 0, GDES deltas 0.  perturb=True instead draws biases, LN affine and deltas at random too, so
    that a parity or gradient test exercises every path."""
    g = torch.Generator().manual_seed(seed)
    P = {}
    for name, shp in shapes.items():
        if name.endswith("LayerNorm.weight"):
            t = torch.ones(shp, dtype=torch.float64)
            if perturb:
                t += 0.1 * torch.randn(shp, generator=g, dtype=torch.float64)
        elif name.endswith("._weight") or name.endswith("bias"):
            t = torch.zeros(shp, dtype=torch.float64)
            if perturb:
                t = (0.01 if name.endswith("._weight") else 0.05) * torch.randn(shp, generator=g, dtype=torch.float64)
        else:
            t = std * torch.randn(shp, generator=g, dtype=torch.float64)
        P[name] = t.to(dtype)
    return P


def no_decay(name):
    """AdamW groups (spec 4.7): no weight decay for biases and LayerNorm weights."""
    return "bias" in name or "LayerNorm.weight" in name

# --------------------------------------------------------------------------------------------
# generator, discriminator, losses (spec 3, 4.3-4.6, 5)
# --------------------------------------------------------------------------------------------


def generator_forward(P, cfg, ids, m, labels, pos_ids=None, training=False, all_layers=True):
    """Encoder + EMD + MLM head at masked positions (row-major).  Returns dict with
    emb, layers, emd (list of the EMD passes), logits [N,V], loss (mean CE), sel (bool [B,T]).
    all_layers=False: with EMD, the last layer's own output (which nothing reads) is not computed
    (as deberta.c's training step; layers then lacks it)."""
    pre = "generator.deberta."
    Lg = cfg["gen_num_hidden_layers"]
    Eg = P[pre + "embeddings.word_embeddings.weight"]
    skip_last = cfg["use_emd"] and Lg >= 2 and not all_layers
    enc = encoder(P, pre, cfg, Lg, Eg, ids, m, training, n_run=Lg - 1 if skip_last else None)
    emd = []
    if cfg["use_emd"]:
        hs = enc["layers"][Lg - 2] if Lg >= 2 else enc["emb"]  # input of the last layer
        T = ids.shape[1]
        if pos_ids is None:
            pos_ids = torch.arange(T, dtype=torch.int64)[None, :].expand(ids.shape[0], T)
        z = P[pre + "embeddings.position_embeddings.weight"][pos_ids]    # raw rows: no LN, no dropout
        q = z + hs
        last = "%sencoder.layer.%d." % (pre, Lg - 1)
        for _ in range(2):                                             # same layer applied twice
            q = layer(P, last, cfg, q, hs, enc["mask2"], enc["Rn"], enc["c"], training)
            emd.append(q)
        top = q
    else:
        top = enc["layers"][-1]
    sel = labels > 0
    h = top[sel]                                                       # [N,H], row-major order
    hd = "generator.lm_predictions.lm_head."
    t = F.gelu(_lin(h, P, hd + "dense"))
    t = _ln(t, P, hd + "LayerNorm", cfg["layer_norm_eps"])
    logits = F.linear(t, Eg, P[hd + "bias"])                           # tied word embeddings
    loss = F.cross_entropy(logits, labels[sel]) if h.shape[0] > 0 else logits.sum() * 0.0
    return dict(emb=enc["emb"], layers=enc["layers"], emd=emd, logits=logits, loss=loss, sel=sel)


def discriminator_word_weight(P, cfg):
    sh = cfg["embedding_sharing"]
    Eg = P["generator.deberta.embeddings.word_embeddings.weight"]
    if sh == "gdes":
        return Eg.detach() + P["discriminator.deberta.embeddings.word_embeddings._weight"]
    if sh == "es":
        return Eg
    return P["discriminator.deberta.embeddings.word_embeddings.weight"]


def rtd_labels(labels, replaced):
    return (labels > 0) & (replaced != labels)


def discriminator_forward(P, cfg, replaced, m, labels, training=False):
    """Encoder + RTD head (spec 4.4); loss = rtd_lambda * mean BCE over tokens with mask 1."""
    pre = "discriminator.deberta."
    enc = encoder(P, pre, cfg, cfg["num_hidden_layers"], discriminator_word_weight(P, cfg),
                  replaced, m, training)
    hL = enc["layers"][-1]
    hd = "discriminator.mask_predictions."
    s = _ln(hL + hL[:, 0:1, :], P, hd + "LayerNorm", cfg["layer_norm_eps"])   # [CLS] added everywhere
    s = F.gelu(_lin(s, P, hd + "dense"))
    logit = _lin(s, P, hd + "classifier").squeeze(-1)                      # [B,T]
    y = rtd_labels(labels, replaced).to(logit.dtype)
    bce = F.binary_cross_entropy_with_logits(logit, y, reduction="none")
    valid = m > 0
    loss = cfg["rtd_lambda"] * bce[valid].mean()
    return dict(emb=enc["emb"], layers=enc["layers"], logits=logit, loss=loss)


def full_grads(P, cfg, g, d):
    """Gradients by name, following the training mode (spec 4.6, 5):
    decoupled: generator.* from the MLM loss only, discriminator.* from the D loss only;
    joint: every parameter from MLM + D loss.  Unused parameters get zeros."""
    names = list(P.keys())
    if cfg["training_mode"] == "joint":
        groups = [(names, g["loss"] + d["loss"])]
    else:
        groups = [([n for n in names if n.startswith("generator.")], g["loss"]),
                  ([n for n in names if n.startswith("discriminator.")], d["loss"])]
    out = {}
    for ns, loss in groups:
        ts = [P[n] for n in ns]
        gs = torch.autograd.grad(loss, ts, allow_unused=True, retain_graph=True)
        for n, t, gr in zip(ns, ts, gs):
            out[n] = torch.zeros_like(t) if gr is None else gr
    return out
