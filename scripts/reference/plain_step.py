#!/usr/bin/python3
"""plain_step.py - the pretraining step of `deberta_ref.py bench --part step`, written as a plain torch.nn
program, to keep the PyTorch yardstick of scripts/bench-vs-torch.sh honest (issue 15).

deberta_ref.py is functional (a dict of tensors by Hugging Face name, so that parity dumps and gradcheck
are easy): it concatenates the Q/K/V weights every step, masks every softmax, scales the T x T scores.
This file is what a PyTorch user would write for speed instead: nn.Module classes, the Q/K/V projections
stored as ONE nn.Linear (3AD x H, rows query | key | value), nn.LayerNorm, F.gelu, nn.Dropout,
torch.optim.AdamW (single-tensor: faster than foreach on CPU), zero_grad(set_to_none=True), the relative
index computed once per shape, the c2p/p2c terms as one matmul against the relative table plus
torch.gather (as Hugging Face's DebertaV2), the attention scale folded into the (small) query side, the
attention mask skipped when the batch has no padding (the same function: every mask entry is 1), and
glibc's malloc set to reuse freed memory (deberta_ref.tune_malloc, as its bench does; `--malloc default`
leaves it).  It does
the same work as deberta.c and the reference otherwise (every layer forward except, with EMD, the generator's
last layer's own output, which nothing reads and none of the three computes; the EMD's own K/V projections
in both passes).

Same step as deberta_ref.py bench_step: decoupled ELECTRA, generator (DeBERTa-V3 encoder of
gen_num_hidden_layers + EMD + tied MLM head) and discriminator (encoder + RTD head), GDES (discriminator
word table = E_G.detach() + E_delta, read after the generator's update), dropout 0.1, AdamW per model
(lr 1e-4, betas 0.9/0.999, eps 1e-6, weight decay 0.01 except biases and LayerNorm), global-norm clipping
at 1.0 per model, replacements sampled with torch.multinomial.

  plain_step.py bench --preset tiny --seq 128 --batch 16 --steps 20 --warmup 3 --threads 2
  plain_step.py check [--preset test]      # same losses, gradients and updates as deberta_ref.py, float64

`bench` prints the same `RESULT {json}` line as deberta_ref.py bench (plus "impl": "plain").  `check`
copies the reference's (perturbed) parameters into the modules, runs three steps of both with dropout 0 in
float64 (a full-length batch, a padded one, the full-length one again; the same torch seed before each, so
that both sample the same replacements) and compares both losses, every gradient (after clipping) and every
parameter update; exit 1 if one differs by more than --tol (1e-10) relative to the largest entry of the
reference tensor (floored at 1e-4 of the largest tensor of its kind).  Exit 2 on a usage error.
"""
import argparse
import json
import math
import os
import resource
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    print("plain_step: error: %s (needs Debian python3-torch; run with /usr/bin/python3)" % e, file=sys.stderr)
    sys.exit(1)

import refmodel as rm      # config/presets and the log-bucket table only (the model below is its own)
import deberta_ref as dr   # CLI flags, the benchmark's batches and FLOP count, and the step that check compares to


def dropout(p):
    return nn.Dropout(p) if p > 0 else nn.Identity()


# ------------------------------------------------------------------------------------------------
# model
# ------------------------------------------------------------------------------------------------

class RelativeIndex:
    """c(i,j) = clamp(bucket(i-j) + S, 0, 2S-1) for one T, and its transpose, both contiguous int64
    [T, T], built once per sequence length (the log-bucket table is the official float32 recipe,
    refmodel.bucket_table_f32)."""

    def __init__(self, cfg):
        self.pb, self.mrp = cfg["position_buckets"], cfg["max_relative_positions"]
        self.S = rm.att_span(cfg)
        self.cache = {}

    def __call__(self, T):
        if T not in self.cache:
            i = torch.arange(T)
            r = i[:, None] - i[None, :]
            if self.pb > 0:
                tab = rm.bucket_table_f32(self.pb, self.mrp)
                r = tab[r.clamp(-(self.mrp - 1), self.mrp - 1) + self.mrp]
            c = (r + self.S).clamp(0, 2 * self.S - 1)
            self.cache[T] = (c.contiguous(), c.t().contiguous())
        return self.cache[T]


class DisentangledSelfAttention(nn.Module):
    """c2c + c2p + p2c with share_att_key; Q/K/V in one Linear (rows query | key | value)."""

    def __init__(self, cfg):
        super().__init__()
        H, self.A, self.D = cfg["hidden_size"], cfg["num_attention_heads"], cfg["attention_head_size"]
        self.AD = self.A * self.D
        self.terms = cfg["terms"]
        self.scale = 1.0 / math.sqrt(self.D * len(self.terms))
        self.qkv = nn.Linear(H, 3 * self.AD)
        self.pos_dropout = dropout(cfg["hidden_dropout_prob"])
        self.probs_dropout = dropout(cfg["attention_probs_dropout_prob"])

    def forward(self, qin, kv, rel, idx, mask):
        """qin [B,T,H] queries, kv [B,T,H] keys/values (the same tensor except in the EMD), rel [R,H] the
        LayerNorm'd relative table, idx (c, c^T) int64 [T,T], mask None (no padding) or bool [1,B,T,T].
        Heads are laid out [A,B,T,D] (head-major), so that the position terms are A matmuls of B*T rows
        against the R-row table instead of A*B small ones against a broadcast copy of it."""
        B, T, _ = qin.shape
        A, D, AD = self.A, self.D, self.AD
        W, b = self.qkv.weight, self.qkv.bias
        if qin is kv:
            q, k, v = self.qkv(qin).view(B, T, 3, A, D).permute(2, 3, 0, 1, 4).contiguous().unbind(0)
        else:                                            # EMD: the query input differs from the keys'
            q = F.linear(qin, W[:AD], b[:AD]).view(B, T, A, D).permute(2, 0, 1, 3).contiguous()
            k, v = F.linear(kv, W[AD:], b[AD:]).view(B, T, 2, A, D).permute(2, 3, 0, 1, 4).contiguous().unbind(0)
        q = q * self.scale                               # the scale on the small side, not on T x T
        s = torch.matmul(q, k.transpose(-1, -2)) if "c2c" in self.terms else None     # [A,B,T,T]
        if "c2p" in self.terms or "p2c" in self.terms:
            R = rel.shape[0]
            # Qr = R~ Wq^T + bq, Kr = R~ Wk^T + bk: the layer's own query/key rows (share_att_key)
            qr, kr = F.linear(self.pos_dropout(rel), W[:2 * AD], b[:2 * AD]).view(R, 2, A, D).unbind(1)
            c, ct = idx
            if "c2p" in self.terms:                      # c2p[i,j] = q_i . Kr[c(i,j)]
                full = torch.matmul(q.view(A, B * T, D), kr.permute(1, 2, 0)).view(A, B, T, R)
                g = torch.gather(full, -1, c.expand(A, B, T, T))
                s = g if s is None else s + g
            if "p2c" in self.terms:                      # p2c[i,j] = k_j . Qr[c(i,j)]
                full = torch.matmul(k.reshape(A, B * T, D), qr.permute(1, 2, 0) * self.scale).view(A, B, T, R)
                g = torch.gather(full, -1, ct.expand(A, B, T, T)).transpose(-1, -2)
                s = g if s is None else s + g
        if mask is None:
            p = torch.softmax(s, dim=-1)
        else:                                            # masked keys and padded query rows get 0
            p = torch.softmax(s.masked_fill(~mask, torch.finfo(s.dtype).min), dim=-1).masked_fill(~mask, 0.0)
        ctx = torch.matmul(self.probs_dropout(p), v)     # [A,B,T,D]
        return ctx.permute(1, 2, 0, 3).reshape(B, T, AD)


class Layer(nn.Module):
    """Post-LN layer; the attention residual is the query input."""

    def __init__(self, cfg):
        super().__init__()
        H, I, AD = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_attention_heads"] * cfg["attention_head_size"]
        eps, p = cfg["layer_norm_eps"], cfg["hidden_dropout_prob"]
        self.attention = DisentangledSelfAttention(cfg)
        self.attn_out = nn.Linear(AD, H)
        self.attn_ln = nn.LayerNorm(H, eps=eps)
        self.intermediate = nn.Linear(H, I)
        self.out = nn.Linear(I, H)
        self.out_ln = nn.LayerNorm(H, eps=eps)
        self.drop1, self.drop2 = dropout(p), dropout(p)

    def forward(self, qin, kv, rel, idx, mask):
        a = self.attn_ln(self.drop1(self.attn_out(self.attention(qin, kv, rel, idx, mask))) + qin)
        return self.out_ln(self.drop2(self.out(F.gelu(self.intermediate(a)))) + a)


class Encoder(nn.Module):
    """Embedding LayerNorm + padding mask + dropout, the relative table (+ its LayerNorm, once per
    forward), n layers.  The word table is passed in (the generator's own, or the discriminator's
    E_G.detach() + E_delta)."""

    def __init__(self, cfg, n_layers):
        super().__init__()
        H, eps = cfg["hidden_size"], cfg["layer_norm_eps"]
        self.emb_ln = nn.LayerNorm(H, eps=eps)
        self.emb_dropout = dropout(cfg["hidden_dropout_prob"])
        self.rel_embeddings = nn.Parameter(torch.empty(2 * rm.att_span(cfg), H))
        self.rel_ln = nn.LayerNorm(H, eps=eps)
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(n_layers))

    def forward(self, word, ids, m, idx, n_run=None):
        """Returns the embedding output, every layer's output (the first n_run layers' when given), the
        LN'd relative table and the mask."""
        e = self.emb_ln(F.embedding(ids, word, padding_idx=0))
        if m is None:
            mask = None
        else:
            e = e * m.to(e.dtype)[:, :, None]
            mb = m > 0
            mask = mb[None, :, :, None] & mb[None, :, None, :]     # [1,B,T,T]
        x = self.emb_dropout(e)
        rel = self.rel_ln(self.rel_embeddings)
        outs = []
        for layer in self.layers[:n_run]:
            x = layer(x, x, rel, idx, mask)
            outs.append(x)
        return e, outs, rel, mask


class Generator(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        H, V, eps = cfg["hidden_size"], cfg["vocab_size"], cfg["layer_norm_eps"]
        self.use_emd = cfg["use_emd"]
        self.word = nn.Embedding(V, H, padding_idx=0)
        self.position = nn.Embedding(cfg["max_position_embeddings"], H)
        self.encoder = Encoder(cfg, cfg["gen_num_hidden_layers"])
        self.head_dense = nn.Linear(H, H)
        self.head_ln = nn.LayerNorm(H, eps=eps)
        self.head_bias = nn.Parameter(torch.zeros(V))

    def forward(self, ids, m, labels, idx):
        """MLM loss (mean over the masked positions) and the logits there [N, V]."""
        L = len(self.encoder.layers)
        skip_last = self.use_emd and L >= 2                   # its own output is never read (as deberta.c)
        e, outs, rel, mask = self.encoder(self.word.weight, ids, m, idx, L - 1 if skip_last else None)
        top = outs[-1]
        if self.use_emd:
            hs = outs[L - 2] if L >= 2 else e                 # the last layer's input
            last = self.encoder.layers[-1]
            q = self.position.weight[:ids.shape[1]] + hs      # raw position rows 0..T-1
            for _ in range(2):
                q = last(q, hs, rel, idx, mask)
            top = q
        sel = labels > 0
        h = top[sel]
        t = self.head_ln(F.gelu(self.head_dense(h)))
        logits = F.linear(t, self.word.weight, self.head_bias)   # tied to the word embeddings
        return F.cross_entropy(logits, labels[sel]), logits


class Discriminator(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        H, V, eps = cfg["hidden_size"], cfg["vocab_size"], cfg["layer_norm_eps"]
        self.rtd_lambda = cfg["rtd_lambda"]
        self.word_delta = nn.Parameter(torch.zeros(V, H))       # GDES E_delta
        self.position_delta = nn.Parameter(torch.zeros(cfg["max_position_embeddings"], H))  # P_delta, never read
        self.encoder = Encoder(cfg, cfg["num_hidden_layers"])
        self.head_ln = nn.LayerNorm(H, eps=eps)
        self.head_dense = nn.Linear(H, H)
        self.classifier = nn.Linear(H, 1)

    def forward(self, gen_word, replaced, m, labels, idx):
        """rtd_lambda x mean BCE over the valid tokens; the word table is E_G (detached) + E_delta."""
        _, outs, _, _ = self.encoder(gen_word.detach() + self.word_delta, replaced, m, idx)
        h = outs[-1]
        s = F.gelu(self.head_dense(self.head_ln(h + h[:, :1])))
        logit = self.classifier(s).squeeze(-1)
        y = ((labels > 0) & (replaced != labels)).to(logit.dtype)
        if m is None:
            return self.rtd_lambda * F.binary_cross_entropy_with_logits(logit, y)
        valid = m > 0
        return self.rtd_lambda * F.binary_cross_entropy_with_logits(logit[valid], y[valid])


def init_weights(model, std=0.02):
    """spec 4.8: Linear/Embedding weights N(0, std), biases 0, LayerNorm 1/0, GDES deltas 0."""
    for mod in model.modules():
        if isinstance(mod, (nn.Linear, nn.Embedding)):
            nn.init.normal_(mod.weight, 0.0, std)
            if getattr(mod, "bias", None) is not None:
                nn.init.zeros_(mod.bias)
        elif isinstance(mod, Encoder):
            nn.init.normal_(mod.rel_embeddings, 0.0, std)


def adamw(model, lr):
    """No weight decay for biases and LayerNorm parameters (the 1-d ones), 0.01 for the rest."""
    ps = [p for p in model.parameters()]
    groups = [{"params": [p for p in ps if p.dim() >= 2], "weight_decay": 0.01},
              {"params": [p for p in ps if p.dim() < 2], "weight_decay": 0.0}]
    # foreach=False (torch 1.13's default on CPU): its foreach path has no CPU kernels, loops over the
    # tensors anyway and allocates more intermediates; timed in isolation it took more CPU time
    return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.999), eps=1e-6, foreach=False)


class Step:
    """One decoupled ELECTRA step (the order of deberta_ref.py bench_step)."""

    def __init__(self, cfg, lr):
        if cfg["training_mode"] != "decoupled" or cfg["embedding_sharing"] != "gdes":
            raise rm.ConfigError("plain_step.py implements the benchmark's decoupled GDES step only")
        self.gen, self.disc = Generator(cfg), Discriminator(cfg)
        self.idx = RelativeIndex(cfg)
        self.gopt, self.dopt = adamw(self.gen, lr), adamw(self.disc, lr)

    def __call__(self, ids, m, labels):
        """ids/labels int64 [B,T]; m int64 [B,T] 0/1.  Returns (mlm loss, rtd loss, masked count)."""
        idx = self.idx(ids.shape[1])
        mm = None if bool(m.all()) else m                 # no padding: the masks are all ones, skip them
        self.gopt.zero_grad(set_to_none=True)
        self.dopt.zero_grad(set_to_none=True)
        gloss, logits = self.gen(ids, mm, labels, idx)
        with torch.no_grad():
            sampled = torch.multinomial(torch.softmax(logits.float(), dim=-1), 1).squeeze(-1)
            replaced = ids.masked_scatter(labels > 0, sampled)
        gloss.backward()
        nn.utils.clip_grad_norm_(self.gen.parameters(), 1.0)
        self.gopt.step()
        dloss = self.disc(self.gen.word.weight, replaced, mm, labels, idx)    # sees the updated E_G
        dloss.backward()
        nn.utils.clip_grad_norm_(self.disc.parameters(), 1.0)
        self.dopt.step()
        return gloss.item(), dloss.item(), logits.shape[0]


# ------------------------------------------------------------------------------------------------
# parameter names of the reference (Hugging Face names, spec 7.1) -> (tensor, row slice) here
# ------------------------------------------------------------------------------------------------

def reference_names(step, cfg):
    """{reference name: (parameter, slice of its first dimension or None)}."""
    AD = cfg["num_attention_heads"] * cfg["attention_head_size"]
    out = {}

    def encoder(pre, enc):
        out[pre + "embeddings.LayerNorm.weight"] = (enc.emb_ln.weight, None)
        out[pre + "embeddings.LayerNorm.bias"] = (enc.emb_ln.bias, None)
        out[pre + "encoder.rel_embeddings.weight"] = (enc.rel_embeddings, None)
        out[pre + "encoder.LayerNorm.weight"] = (enc.rel_ln.weight, None)
        out[pre + "encoder.LayerNorm.bias"] = (enc.rel_ln.bias, None)
        for n, L in enumerate(enc.layers):
            p = "%sencoder.layer.%d." % (pre, n)
            for k, name in enumerate(("query_proj", "key_proj", "value_proj")):
                sl = slice(k * AD, (k + 1) * AD)
                out[p + "attention.self.%s.weight" % name] = (L.attention.qkv.weight, sl)
                out[p + "attention.self.%s.bias" % name] = (L.attention.qkv.bias, sl)
            for mod, name in ((L.attn_out, "attention.output.dense"), (L.attn_ln, "attention.output.LayerNorm"),
                              (L.intermediate, "intermediate.dense"), (L.out, "output.dense"),
                              (L.out_ln, "output.LayerNorm")):
                out[p + name + ".weight"] = (mod.weight, None)
                out[p + name + ".bias"] = (mod.bias, None)

    g, d = step.gen, step.disc
    out["generator.deberta.embeddings.word_embeddings.weight"] = (g.word.weight, None)
    out["generator.deberta.embeddings.position_embeddings.weight"] = (g.position.weight, None)
    encoder("generator.deberta.", g.encoder)
    h = "generator.lm_predictions.lm_head."
    out[h + "dense.weight"], out[h + "dense.bias"] = (g.head_dense.weight, None), (g.head_dense.bias, None)
    out[h + "LayerNorm.weight"], out[h + "LayerNorm.bias"] = (g.head_ln.weight, None), (g.head_ln.bias, None)
    out[h + "bias"] = (g.head_bias, None)
    out["discriminator.deberta.embeddings.word_embeddings._weight"] = (d.word_delta, None)
    out["discriminator.deberta.embeddings.position_embeddings._weight"] = (d.position_delta, None)
    encoder("discriminator.deberta.", d.encoder)
    h = "discriminator.mask_predictions."
    for mod, name in ((d.head_dense, "dense"), (d.head_ln, "LayerNorm"), (d.classifier, "classifier")):
        out[h + name + ".weight"], out[h + name + ".bias"] = (mod.weight, None), (mod.bias, None)
    return out


def view(t, sl):
    return t if sl is None else t[sl]


# ------------------------------------------------------------------------------------------------
# bench
# ------------------------------------------------------------------------------------------------

def cmd_bench(args):
    tuned = dr.tune_malloc() if args.malloc == "tuned" else False
    torch.set_num_threads(args.threads)
    dtype = dr.DTYPES[args.dtype]
    try:
        cfg = dr.config_from_args(args)
        if args.dropout is None:
            cfg["hidden_dropout_prob"] = cfg["attention_probs_dropout_prob"] = 0.1
        torch.manual_seed(args.seed)
        step = Step(cfg, args.lr)
    except rm.ConfigError as e:
        dr.die(str(e))
    step.gen.to(dtype)
    step.disc.to(dtype)
    with torch.no_grad():
        init_weights(step.gen)
        init_weights(step.disc)
    B, T = args.batch, args.seq
    batches = [dr.make_inputs(cfg, B, T, args.seed + 1000 + i, min_len=T) for i in range(4)]
    batches = [tuple(torch.from_numpy(b[k]).long() for k in ("input_ids", "attention_mask", "labels"))
               for b in batches]
    times, last = [], None
    for i in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        last = step(*batches[i % len(batches)])
        dt = time.perf_counter() - t0
        if i >= args.warmup:
            times.append(dt)
    med = statistics.median(times)
    toks = B * T
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    fl = dr.model_flops(cfg, B, T, last[2])
    res = {"part": "step", "impl": "plain", "preset": args.preset, "batch": B, "seq": T,
           "threads": args.threads, "dtype": args.dtype, "steps": args.steps, "warmup": args.warmup,
           "dropout": cfg["hidden_dropout_prob"], "sharing": cfg["embedding_sharing"],
           "training_mode": cfg["training_mode"],
           "ms_median": med * 1e3, "ms_min": min(times) * 1e3, "ms_max": max(times) * 1e3,
           "tokens_per_s": toks / med, "peak_rss_mb": rss_mb,
           "model_gflop": fl / 1e9, "gflops": fl / 1e9 / med, "mlm_loss": last[0], "rtd_loss": last[1],
           "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""), "torch": torch.__version__,
           "malloc_tuned": tuned}
    print("bench step (plain torch.nn): preset=%s B=%d T=%d threads=%d gdes/decoupled dropout=%g malloc %s  "
          "median %.1f ms/step (min %.1f max %.1f)  %.0f tokens/s  ~%.1f GFLOP/step  %.1f GFLOP/s  peak RSS %.0f MB"
          % (args.preset, B, T, args.threads, cfg["hidden_dropout_prob"], "tuned" if tuned else "default",
             med * 1e3, min(times) * 1e3, max(times) * 1e3, toks / med, fl / 1e9, fl / 1e9 / med, rss_mb))
    if args.profile:
        with torch.autograd.profiler.profile() as prof:
            step(*batches[0])
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.profile))
    print("RESULT " + json.dumps(res, sort_keys=True))
    return 0


# ------------------------------------------------------------------------------------------------
# check against deberta_ref.py's bench step (float64, dropout 0)
# ------------------------------------------------------------------------------------------------

def rel_err(a, b, floor=0.0):
    """max|a-b| / max(max|b|, floor).  The floor (a small fraction of the largest tensor of the same kind)
    keeps a gradient that is zero up to rounding (e.g. the key bias with c2p alone: softmax does not see a
    per-query constant) from being compared relative to its own rounding noise."""
    d = (a - b).abs().max().item() if a.numel() else 0.0
    s = max(b.abs().max().item() if b.numel() else 0.0, floor)
    return d / s if s > 0 else (0.0 if d == 0 else float("inf"))


def cmd_check(args):
    torch.set_num_threads(args.threads)
    cfg = dr.config_from_args(args)
    cfg["hidden_dropout_prob"] = cfg["attention_probs_dropout_prob"] = 0.0
    dtype = torch.float64
    P = rm.init_params(rm.full_shapes(cfg), seed=args.seed, perturb=True, dtype=dtype)
    ref_step, _ = dr.bench_step(cfg, args, dtype, P=P)
    step = Step(cfg, args.lr)
    step.gen.to(dtype)
    step.disc.to(dtype)
    names = reference_names(step, cfg)
    if set(names) != set(P):
        print("check: FAIL parameter names differ: only here %s, only in the reference %s"
              % (sorted(set(names) - set(P)), sorted(set(P) - set(names))))
        return 1
    with torch.no_grad():
        for n, (t, sl) in names.items():
            view(t, sl).copy_(P[n])
    own = {id(t) for t, _ in names.values()}
    if own != {id(p) for p in list(step.gen.parameters()) + list(step.disc.parameters())}:
        print("check: FAIL the name map does not cover every module parameter")
        return 1
    B, T = args.batch, args.seq
    full = dr.make_inputs(cfg, B, T, args.seed + 1000, min_len=T)      # as bench: no padding
    padded = dr.make_inputs(cfg, B, T, args.seed + 2000)               # rows 1.. padded
    worst, bad, n_cmp = 0.0, [], 0

    def cmp(what, a, b, floor=0.0):
        nonlocal worst, n_cmp
        e = rel_err(a, b, floor)
        n_cmp += 1
        worst = max(worst, e)
        if not e <= args.tol:
            bad.append("%s: relative error %.3g > %.3g" % (what, e, args.tol))
        return e

    def cmp_all(what, pairs):
        """every (name, ours, reference) of one kind; the floor is 1e-4 of the largest reference entry"""
        top = max((r.abs().max().item() for _, _, r in pairs if r.numel()), default=0.0)
        return max((cmp(what % n, o, r, 1e-4 * top) for n, o, r in pairs), default=0.0)

    for k, (label, batch) in enumerate((("full-length", full), ("padded", padded), ("full-length again", full))):
        ids, m, labels = (torch.from_numpy(batch[f]).long() for f in ("input_ids", "attention_mask", "labels"))
        before = {n: P[n].detach().clone() for n in P}
        own_before = {n: view(t, sl).detach().clone() for n, (t, sl) in names.items()}
        torch.manual_seed(args.seed + 17 + k)
        rg, rd, rn = ref_step({"input_ids": ids, "attention_mask": m, "labels": labels})
        torch.manual_seed(args.seed + 17 + k)
        og, od, on = step(ids, m, labels)
        eg = cmp("step %d (%s) MLM loss" % (k + 1, label), torch.tensor([og]), torch.tensor([rg]))
        ed = cmp("step %d (%s) RTD loss" % (k + 1, label), torch.tensor([od]), torch.tensor([rd]))
        if on != rn:
            bad.append("step %d: %d masked rows here, %d in the reference" % (k + 1, on, rn))
        grads, updates = [], []
        for n, (t, sl) in names.items():
            rgrad, ograd = P[n].grad, t.grad
            if (rgrad is None) != (ograd is None):
                bad.append("step %d gradient of %s: present in one implementation only" % (k + 1, n))
                continue
            if rgrad is not None:
                grads.append((n, view(ograd, sl), rgrad))
            updates.append((n, view(t, sl).detach() - own_before[n], P[n].detach() - before[n]))
        gw = cmp_all("step %d gradient of %%s" % (k + 1), grads)
        uw = cmp_all("step %d update of %%s" % (k + 1), updates)
        print("check step %d (%s, B=%d T=%d): MLM %.12g vs %.12g (rel %.1e), RTD %.12g vs %.12g (rel %.1e), "
              "worst gradient %.1e, worst update %.1e" % (k + 1, label, B, T, og, rg, eg, od, rd, ed, gw, uw))
    for b in bad:
        print("FAIL " + b)
    print("check: %s, %d comparisons (losses, %d gradients and updates per step), worst relative error "
          "%.2e (tolerance %.0e), preset %s, float64, dropout 0"
          % ("ok" if not bad else "FAILED", n_cmp, len(names), worst, args.tol, args.preset))
    return 1 if bad else 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="plain_step.py", description="the benchmark step as a plain torch.nn program")
    sub = ap.add_subparsers(dest="cmd")
    p = sub.add_parser("bench", help="time the step (flags and RESULT line as deberta_ref.py bench)")
    dr.add_bench_flags(p, ("step",))
    p = sub.add_parser("check", help="float64, dropout 0: same losses, gradients, updates as deberta_ref.py")
    p.add_argument("--preset", choices=rm.PRESETS, default="test")
    dr.add_shape_flags(p)
    p.add_argument("--seq", type=int, default=24)
    p.add_argument("--batch", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tol", type=float, default=1e-10)
    args = ap.parse_args(argv)
    if not args.cmd:
        ap.print_help(sys.stderr)
        return 2
    return {"bench": cmd_bench, "check": cmd_check}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
