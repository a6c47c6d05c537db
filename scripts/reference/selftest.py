#!/usr/bin/python3
"""selftest.py - checks that make the PyTorch reference trustworthy as an oracle.

  /usr/bin/python3 scripts/reference/selftest.py [--quick]

Prints one line per check ("ok ..." / "FAIL ...") and exits 0 if all pass, 1 otherwise.
Sections: (a) bucket function vs spec 1.3 vectors, float32 vs float64 tables; (b) gradcheck in
float64 of the encoder (every term subset) and of the G+D losses for each sharing/training mode,
plus the sharing semantics; (c) c2p/p2c against the explicit per-(i,j) formulas, masking; (d) the
command line round trip (HDF5 and safetensors)."""
import itertools
import json
import os
import struct
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import refmodel as rm  # noqa: E402
import refio  # noqa: E402

FAILS = []


def check(name, ok, detail=""):
    print("%s %s%s" % ("ok  " if ok else "FAIL", name, ("  (" + detail + ")") if detail else ""))
    if not ok:
        FAILS.append(name)


# ----------------------------------------------------------------------------------- (a) buckets

SPEC_VECTORS = {0: 0, 1: 1, 64: 64, 127: 127, 128: 128, 129: 129, 130: 130, 131: 131, 132: 131, 133: 132,
                140: 137, 150: 143, 175: 157, 200: 169, 225: 180, 250: 190, 255: 192, 256: 192, 300: 207,
                350: 221, 400: 233, 450: 244, 500: 254, 510: 255, 511: 255}


def test_buckets():
    ds = list(SPEC_VECTORS)
    r = torch.tensor(ds + [-d for d in ds], dtype=torch.int64)
    want = torch.tensor([SPEC_VECTORS[d] for d in ds] + [-SPEC_VECTORS[d] for d in ds])
    for tab in ("f32", "f64"):
        got = rm.log_bucket(r, 256, 512, tab)
        bad = [(int(a), int(b), int(c)) for a, b, c in zip(r, got, want) if b != c]
        check("bucket(256,512) %s matches the %d spec 1.3 vectors (+-d)" % (tab, len(r)), not bad, str(bad[:3]))
    oor = rm.log_bucket(torch.tensor([512, 600, -600, 10000]), 256, 512)
    check("bucket(256,512) clamps out of range: 512,600,-600,10000 -> 255,255,-255,255",
          oor.tolist() == [255, 255, -255, 255], str(oor.tolist()))
    for bs, mp in ((256, 512), (64, 128), (128, 512), (256, 1024), (64, 512)):
        a, b = rm.bucket_table_f32(bs, mp), rm.bucket_table_f64(bs, mp)
        nd = int((a != b).sum())
        check("bucket table (%d,%d): float32 official recipe == float64 over r in [-%d,%d)" % (bs, mp, mp, mp),
              nd == 0, "%d entries differ" % nd)
    # symmetry and range of the index c(i,j) used by c2p and p2c
    cfg = rm.make_config("tiny")
    c = rm.rel_index(128, cfg)
    S = rm.att_span(cfg)
    check("tiny c(i,j) in [0,2S) and bucket antisymmetric (c(i,j)+c(j,i) == 2S)",
          int(c.min()) >= 0 and int(c.max()) < 2 * S and bool(((c + c.t()) == 2 * S).all()),
          "range [%d,%d], S=%d" % (c.min(), c.max(), S))


# ----------------------------------------------------------------------- shared small fixtures

def small_cfg(**kw):
    base = dict(hidden_size=8, num_hidden_layers=2, num_attention_heads=2, attention_head_size=4,
                intermediate_size=12, vocab_size=12, max_position_embeddings=12, position_buckets=4,
                max_relative_positions=8, gen_num_hidden_layers=2, layer_norm_eps=1e-7)
    base.update(kw)
    return rm.validate(base)


def small_batch(cfg, B=2, T=7, seed=1):
    g = torch.Generator().manual_seed(seed)
    V = cfg["vocab_size"]
    ids = torch.randint(5, V, (B, T), generator=g)
    m = torch.ones(B, T, dtype=torch.int64)
    m[1, 4:] = 0                                  # row 1 padded (fully padded query rows exist)
    ids[:, 0] = 1
    ids[1, 4:] = 0
    labels = torch.zeros(B, T, dtype=torch.int64)
    labels[0, 2], labels[0, 5], labels[1, 1], labels[1, 2] = ids[0, 2], ids[0, 5], ids[1, 1], ids[1, 2]
    inp = torch.where(labels > 0, torch.full_like(ids, 4), ids)
    replaced = ids.clone()
    replaced[0, 2] = 5 if ids[0, 2] != 5 else 6   # replaced, different -> label 1
    replaced[1, 1] = 7 if ids[1, 1] != 7 else 8
    # [0,5] and [1,2] keep the original -> label 0
    return dict(input_ids=inp, attention_mask=m, labels=labels, replaced_ids=replaced, original=ids)


def leaves(P):
    return {n: t.detach().clone().requires_grad_(True) for n, t in P.items()}


# ---------------------------------------------------------------------------- (b) gradcheck

def gradcheck(fn, names, P, fast, label):
    ins = tuple(P[n] for n in names)
    t0 = time.time()
    try:
        ok = torch.autograd.gradcheck(fn, ins, eps=1e-6, atol=1e-7, rtol=1e-6, fast_mode=fast)
        err = ""
    except RuntimeError as e:
        ok, err = False, str(e).splitlines()[0][:200]
    n = sum(P[k].numel() for k in names)
    check("gradcheck %s (%d tensors, %d values, %s)" % (label, len(names), n, "fast" if fast else "full"),
          ok, err or "%.1fs" % (time.time() - t0))


def test_gradcheck_encoder(quick):
    for k in range(1, 4):
        for terms in itertools.combinations(rm.TERMS, k):
            cfg = small_cfg(pos_att_type="|".join(terms))
            P = leaves(rm.init_params(rm.encoder_shapes(cfg), seed=3, perturb=True))
            b = small_batch(cfg)
            w = torch.randn(2, 7, 8, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
            names = list(P)

            def fn(*ts, cfg=cfg, b=b, w=w, names=names):
                Q = dict(zip(names, ts))
                enc = rm.encoder(Q, "deberta.", cfg, 2, Q["deberta.embeddings.word_embeddings.weight"],
                                 b["original"], b["attention_mask"])
                return (enc["layers"][-1] * w).sum()
            gradcheck(fn, names, P, True, "encoder 2 layers, padded, terms=%s" % "|".join(terms))
            if terms == rm.TERMS and not quick:
                few = [n for n in names if n.endswith(("layer.0.attention.self.query_proj.weight",
                                                       "layer.0.attention.self.key_proj.bias",
                                                       "encoder.rel_embeddings.weight", "encoder.LayerNorm.weight",
                                                       "embeddings.LayerNorm.bias", "layer.1.output.dense.weight"))]

                def fn_few(*ts, fn=fn, few=few, names=names):
                    Q = dict(zip(names, (P[n] for n in names)))
                    Q.update(zip(few, ts))
                    return fn(*(Q[n] for n in names))
                gradcheck(fn_few, few, P, False, "encoder spot tensors, terms=%s" % "|".join(terms))


def full_loss_fn(cfg, names, P, b):
    """Scalar G+D loss as a function of the listed tensors.  Under GDES the generator word
    embedding seen by the discriminator is a constant snapshot (the stop-gradient made explicit),
    so finite differences and autograd differentiate the same function."""
    Eg_const = P["generator.deberta.embeddings.word_embeddings.weight"].detach().clone()

    def fn(*ts):
        Q = dict(P)
        Q.update(zip(names, ts))
        g = rm.generator_forward(Q, cfg, b["input_ids"], b["attention_mask"], b["labels"])
        if cfg["embedding_sharing"] == "gdes":
            Q = dict(Q)
            Q["generator.deberta.embeddings.word_embeddings.weight"] = Eg_const
        d = rm.discriminator_forward(Q, cfg, b["replaced_ids"], b["attention_mask"], b["labels"])
        return g["loss"] + d["loss"]
    return fn


def test_gradcheck_full(quick):
    for sh in rm.SHARING:
        for emd in ((1,) if quick else (1, 0)):
            cfg = small_cfg(embedding_sharing=sh, use_emd=emd, training_mode="joint", rtd_lambda=3.0)
            P = leaves(rm.init_params(rm.full_shapes(cfg), seed=11, perturb=True))
            b = small_batch(cfg)
            names = list(P)
            gradcheck(full_loss_fn(cfg, names, P, b), names, P, True,
                      "G+D loss (MLM + lambda*RTD), %s, emd=%d" % (sh, emd))
            # per-tensor spot check (full jacobian) on a few small tensors
            few = [n for n in names if n.endswith(("embeddings.position_embeddings.weight", "lm_head.bias",
                                                    "classifier.weight", "encoder.layer.1.attention.self.query_proj.bias",
                                                    "word_embeddings._weight"))]
            if not quick and emd:
                gradcheck(full_loss_fn(cfg, few, P, b), few, P, False, "G+D spot tensors, %s, emd=%d" % (sh, emd))


def test_sharing_semantics():
    """GDES: RTD-only backward leaves E_G's gradient at zero, E_delta's non-zero (padding row 0 zero).
    ES: both losses reach E (joint). NES: D loss never reaches generator tensors.
    decoupled full_grads: generator grads == MLM-only grads, discriminator grads == D-only grads."""
    Eg = "generator.deberta.embeddings.word_embeddings.weight"
    for sh in rm.SHARING:
        cfg = small_cfg(embedding_sharing=sh, training_mode="joint")
        P = leaves(rm.init_params(rm.full_shapes(cfg), seed=7, perturb=True))
        b = small_batch(cfg)
        g = rm.generator_forward(P, cfg, b["input_ids"], b["attention_mask"], b["labels"])
        d = rm.discriminator_forward(P, cfg, b["replaced_ids"], b["attention_mask"], b["labels"])
        gen_names = [n for n in P if n.startswith("generator.")]
        dg = torch.autograd.grad(d["loss"], [P[n] for n in gen_names], allow_unused=True, retain_graph=True)
        reached = [n for n, x in zip(gen_names, dg) if x is not None and float(x.abs().max()) > 0]
        if sh == "gdes":
            dd = torch.autograd.grad(d["loss"], P["discriminator.deberta.embeddings.word_embeddings._weight"],
                                     retain_graph=True)[0]
            check("GDES: RTD loss gives E_G no gradient, E_delta a non-zero one (padding row 0 zero)",
                  not reached and float(dd.abs().max()) > 0 and float(dd[0].abs().max()) == 0,
                  "reached=%s" % reached)
        elif sh == "es":
            check("ES: RTD loss reaches the shared E and only it among generator tensors",
                  reached == [Eg], "reached=%s" % reached)
            joint = rm.full_grads(P, cfg, g, d)[Eg]
            mg = torch.autograd.grad(g["loss"], P[Eg], retain_graph=True)[0]
            dg_e = torch.autograd.grad(d["loss"], P[Eg], retain_graph=True)[0]
            check("ES joint: grad E == dMLM/dE + dD/dE, both non-zero",
                  torch.allclose(joint, mg + dg_e, rtol=0, atol=1e-15) and mg.abs().max() > 0 and dg_e.abs().max() > 0)
        else:
            check("NES: RTD loss never reaches generator tensors", not reached, "reached=%s" % reached)
        cfg2 = dict(cfg, training_mode="decoupled")
        dec = rm.full_grads(P, cfg2, g, d)
        ok = True
        for n in P:
            loss = g["loss"] if n.startswith("generator.") else d["loss"]
            x = torch.autograd.grad(loss, P[n], allow_unused=True, retain_graph=True)[0]
            x = torch.zeros_like(P[n]) if x is None else x
            ok &= bool(torch.equal(x, dec[n]))
        check("%s decoupled: generator grads from MLM only, discriminator grads from D loss only" % sh.upper(), ok)


# ---------------------------------------------------------------- (c) explicit formulas, masking

def test_explicit_formulas():
    g = torch.Generator().manual_seed(2)
    cfg = small_cfg(max_relative_positions=8, position_buckets=4)
    T, A, D, S = 9, 2, 4, rm.att_span(cfg)
    q, k = torch.randn(1, A, T, D, generator=g, dtype=torch.float64), torch.randn(1, A, T, D, generator=g, dtype=torch.float64)
    Qr, Kr = torch.randn(A, 2 * S, D, generator=g, dtype=torch.float64), torch.randn(A, 2 * S, D, generator=g, dtype=torch.float64)
    c = rm.rel_index(T, cfg)
    bucket = lambda x: int(rm.log_bucket(torch.tensor([x]), 4, 8)[0])   # noqa: E731
    c2p = rm.attention_scores(q, k, Qr, Kr, c, ("c2p",), 1.0)
    p2c = rm.attention_scores(q, k, Qr, Kr, c, ("p2c",), 1.0)
    all3 = rm.attention_scores(q, k, Qr, Kr, c, rm.TERMS, 0.5)
    e_c2p = torch.zeros_like(c2p)
    e_p2c = torch.zeros_like(p2c)
    e_paper = torch.zeros_like(p2c)
    for h in range(A):
        for i in range(T):
            for j in range(T):
                cij = min(max(bucket(i - j) + S, 0), 2 * S - 1)
                e_c2p[0, h, i, j] = q[0, h, i] @ Kr[h, cij]
                e_p2c[0, h, i, j] = k[0, h, j] @ Qr[h, cij]
                cji = min(max(bucket(j - i) + S, 0), 2 * S - 1)       # paper's delta(j,i)
                e_paper[0, h, i, j] = k[0, h, j] @ Qr[h, cji]
    e_c2c = q @ k.transpose(-1, -2)
    check("c2p == explicit q_i . Kr[c(i,j)] (T=9 > S=4, buckets clamp)", torch.allclose(c2p, e_c2p, atol=1e-13, rtol=0),
          "max diff %.2e" % (c2p - e_c2p).abs().max())
    check("p2c == explicit k_j . Qr[c(i,j)]", torch.allclose(p2c, e_p2c, atol=1e-13, rtol=0),
          "max diff %.2e" % (p2c - e_p2c).abs().max())
    check("p2c differs from the paper's delta(j,i) variant (wrong index contraction caught)",
          float((p2c - e_paper).abs().max()) > 1e-3, "max diff %.2e" % (p2c - e_paper).abs().max())
    check("score with all terms == scale * (c2c + c2p + p2c)",
          torch.allclose(all3, 0.5 * (e_c2c + e_c2p + e_p2c), atol=1e-13, rtol=0))


def test_naive_model():
    """The whole G+D forward re-derived with per-position numpy loops straight from the spec
    pseudo-code (2.1, 2.2, 1.4-1.7, 3, 4.4), against the vectorised reference."""
    from math import erf, sqrt
    cfg = small_cfg(embedding_sharing="gdes", use_emd=1, rtd_lambda=3.0)
    P = rm.init_params(rm.full_shapes(cfg), seed=21, perturb=True)
    N = {k: v.numpy() for k, v in P.items()}
    b = small_batch(cfg)
    m = b["attention_mask"].numpy()
    B, T = m.shape
    H, A, D, eps = 8, 2, 4, cfg["layer_norm_eps"]
    S = rm.att_span(cfg)
    gelu = np.vectorize(lambda x: 0.5 * x * (1 + erf(x / sqrt(2))))

    def ln(x, pre):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * N[pre + ".weight"] + N[pre + ".bias"]

    def lin(x, pre):
        return x @ N[pre + ".weight"].T + N[pre + ".bias"]

    def cidx(i, j):
        return min(max(int(rm.bucket_table_f64(4, 8)[max(-7, min(7, i - j)) + 8]) + S, 0), 2 * S - 1)

    def layer(pre, qin, kv, Rn):
        sp = pre + "attention.self."
        q, k, v = lin(qin, sp + "query_proj"), lin(kv, sp + "key_proj"), lin(kv, sp + "value_proj")
        Qr, Kr = lin(Rn, sp + "query_proj"), lin(Rn, sp + "key_proj")
        ctx = np.zeros_like(q)
        for bb in range(B):
            for h in range(A):
                sl = slice(h * D, (h + 1) * D)
                for i in range(T):
                    sc = np.full(T, -np.inf)
                    for j in range(T):
                        if m[bb, i] and m[bb, j]:
                            c = cidx(i, j)
                            sc[j] = (q[bb, i, sl] @ k[bb, j, sl] + q[bb, i, sl] @ Kr[c, sl]
                                     + k[bb, j, sl] @ Qr[c, sl]) / sqrt(3 * D)
                    if np.isfinite(sc).any():
                        p = np.exp(sc - sc.max())
                        p /= p.sum()
                        ctx[bb, i, sl] = p @ v[bb, :, sl]
        a = ln(lin(ctx, pre + "attention.output.dense") + qin, pre + "attention.output.LayerNorm")
        f = gelu(lin(a, pre + "intermediate.dense"))
        return ln(lin(f, pre + "output.dense") + a, pre + "output.LayerNorm")

    def encoder(pre, E, ids, L):
        x = ln(E[ids], pre + "embeddings.LayerNorm") * m[:, :, None]
        Rn = ln(N[pre + "encoder.rel_embeddings.weight"], pre + "encoder.LayerNorm")
        outs = []
        for n in range(L):
            x = layer("%sencoder.layer.%d." % (pre, n), x, x, Rn)
            outs.append(x)
        return outs, Rn

    Eg = N["generator.deberta.embeddings.word_embeddings.weight"]
    gl, Rn = encoder("generator.deberta.", Eg, b["input_ids"].numpy(), 2)
    hs = gl[0]
    q = N["generator.deberta.embeddings.position_embeddings.weight"][np.arange(T)][None] + hs
    for _ in range(2):
        q = layer("generator.deberta.encoder.layer.1.", q, hs, Rn)
    lab = b["labels"].numpy()
    rows = [(bb, i) for bb in range(B) for i in range(T) if lab[bb, i] > 0]
    hd = "generator.lm_predictions.lm_head."
    t = ln(gelu(lin(np.stack([q[r] for r in rows]), hd + "dense")), hd + "LayerNorm")
    logits = t @ Eg.T + N[hd + "bias"]
    ce = [np.log(np.exp(lg - lg.max()).sum()) + lg.max() - lg[lab[r]] for lg, r in zip(logits, rows)]
    Ed = Eg + N["discriminator.deberta.embeddings.word_embeddings._weight"]
    rep = b["replaced_ids"].numpy()
    dl, _ = encoder("discriminator.deberta.", Ed, rep, 2)
    hL = dl[-1]
    hd = "discriminator.mask_predictions."
    s = gelu(lin(ln(hL + hL[:, :1], hd + "LayerNorm"), hd + "dense"))
    z = (s @ N[hd + "classifier.weight"].T + N[hd + "classifier.bias"])[..., 0]
    y = ((lab > 0) & (rep != lab)).astype(np.float64)
    bce = np.maximum(z, 0) - z * y + np.log1p(np.exp(-np.abs(z)))
    dloss = 3.0 * bce[m > 0].mean()

    g = rm.generator_forward(P, cfg, b["input_ids"], b["attention_mask"], b["labels"])
    d = rm.discriminator_forward(P, cfg, b["replaced_ids"], b["attention_mask"], b["labels"])
    errs = {"gen layers": max(np.abs(g["layers"][n].numpy() - gl[n]).max() for n in range(2)),
            "emd pass 2": np.abs(g["emd"][1].numpy() - q).max(),
            "mlm logits": np.abs(g["logits"].numpy() - logits).max(),
            "mlm loss": abs(g["loss"].item() - np.mean(ce)),
            "disc layers": max(np.abs(d["layers"][n].numpy() - dl[n]).max() for n in range(2)),
            "rtd logits": np.abs(d["logits"].numpy() - z).max(),
            "rtd loss": abs(d["loss"].item() - dloss)}
    worst = max(errs.values())
    check("G+D forward == per-position loop implementation of the spec (layers, EMD, heads, losses)",
          worst < 1e-12, ", ".join("%s %.1e" % kv for kv in errs.items()))


def test_masking():
    cfg = small_cfg()
    P = rm.init_params(rm.encoder_shapes(cfg), seed=4, perturb=True)
    b = small_batch(cfg)
    m = b["attention_mask"]
    ids = b["original"]
    probs = []

    def run(ids):
        probs.clear()
        Rn = rm._ln(P["deberta.encoder.rel_embeddings.weight"], P, "deberta.encoder.LayerNorm", cfg["layer_norm_eps"])
        emb = rm.embeddings(P["deberta.embeddings.word_embeddings.weight"], P, "deberta.", cfg, ids, m)
        mask2, c = rm.pairwise_mask(m), rm.rel_index(ids.shape[1], cfg)
        x = emb
        for n in range(2):
            x = rm.layer(P, "deberta.encoder.layer.%d." % n, cfg, x, x, mask2, Rn, c, probs_out=probs)
        return x
    h1 = run(ids)
    p1 = probs[0].clone()
    ids2 = ids.clone()
    ids2[1, 4:] = torch.tensor([9, 3, 11])          # change the content of the padded positions
    h2 = run(ids2)
    valid = m > 0
    diff = float((h1[valid] - h2[valid]).abs().max())
    check("changing padded tokens leaves every valid position unchanged", diff == 0.0, "max diff %.1e" % diff)
    pad_rows = p1[1, :, 4:, :]
    check("fully padded query rows get all-zero attention; padded keys get weight 0",
          float(pad_rows.abs().max()) == 0 and float(p1[1, :, :4, 4:].abs().max()) == 0)
    check("valid query rows sum to 1 over valid keys",
          torch.allclose(p1[1, :, :4, :4].sum(-1), torch.ones(2, 4, dtype=torch.float64), atol=1e-14))
    # padded positions of the embedding output are exactly zero
    emb = rm.embeddings(P["deberta.embeddings.word_embeddings.weight"], P, "deberta.", cfg, ids, m)
    check("embedding output is zero at padded positions", float(emb[1, 4:].abs().max()) == 0)


# ------------------------------------------------------------------------- (d) CLI round trip

def write_safetensors(path, tensors):
    header, off, blobs = {}, 0, []
    for n, a in tensors.items():
        a = np.ascontiguousarray(a, dtype="<f4")
        header[n] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
        blobs.append(a.tobytes())
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def test_cli():
    """Runs the command line in-process (saves the torch start-up of a subprocess per call)."""
    import contextlib
    import io
    import deberta_ref
    with tempfile.TemporaryDirectory() as d:
        def run(*a, expect=0):
            err = io.StringIO()
            out = io.StringIO()
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
                try:
                    rc = deberta_ref.main(list(a))
                except SystemExit as e:
                    rc = e.code
            if rc != expect:
                raise RuntimeError("deberta_ref.py %s: exit %s: %s" % (a[0], rc, err.getvalue().strip()))
            return err.getvalue()
        p = lambda n: os.path.join(d, n)   # noqa: E731
        try:
            run("init", "--preset", "test", "--encoder-only", "--perturb", "--out", p("enc.h5"))
            run("inputs", "--weights", p("enc.h5"), "--batch", "3", "--seq", "11", "--out", p("in.h5"))
            run("encoder", "--weights", p("enc.h5"), "--inputs", p("in.h5"), "--out", p("o32.h5"))
            run("encoder", "--weights", p("enc.h5"), "--inputs", p("in.h5"), "--out", p("o64.h5"), "--dtype", "float64")
            o32, _ = refio.read_h5_all(p("o32.h5"))
            o64, _ = refio.read_h5_all(p("o64.h5"))
            hd = max(float(np.abs(o32[k] - o64[k]).max()) for k in o32 if not k.startswith("grad/"))
            gd = max(float(np.abs(o32[k] - o64[k]).max() / (np.abs(o64[k]).max() + 1e-30))
                     for k in o32 if k.startswith("grad/"))
            check("CLI encoder: float32 vs float64 run agree (hidden %.1e abs, grads %.1e rel-to-max)" % (hd, gd),
                  hd < 1e-4 and gd < 1e-4)
            names = [k for k in o64 if k.startswith("grad/")]
            check("CLI encoder: every parameter has a grad/ dataset of its shape",
                  len(names) == len(rm.encoder_shapes(rm.make_config("test"))) and o64["grad/deberta.embeddings.position_embeddings.weight"].max() == 0)
            # the same weights through the safetensors + config.json path
            w, attrs = refio.read_h5_all(p("enc.h5"))
            os.mkdir(p("hf"))
            write_safetensors(p("hf/model.safetensors"), w)
            cj = {"model_type": "deberta-v2", "hidden_size": attrs["hidden_size"],
                  "num_hidden_layers": attrs["num_hidden_layers"], "num_attention_heads": attrs["num_attention_heads"],
                  "attention_head_size": attrs["attention_head_size"], "intermediate_size": attrs["intermediate_size"],
                  "vocab_size": attrs["vocab_size"], "max_position_embeddings": attrs["max_position_embeddings"],
                  "position_buckets": attrs["position_buckets"], "max_relative_positions": attrs["max_relative_positions"],
                  "layer_norm_eps": attrs["layer_norm_eps"], "pos_att_type": ["p2c", "c2p"], "relative_attention": True,
                  "position_biased_input": False, "share_att_key": True, "norm_rel_ebd": "layer_norm",
                  "hidden_act": "gelu", "type_vocab_size": 0, "hidden_dropout_prob": 0.0,
                  "attention_probs_dropout_prob": 0.0}
            with open(p("hf/config.json"), "w") as f:
                json.dump(cj, f)
            run("encoder", "--weights", p("hf"), "--inputs", p("in.h5"), "--out", p("ohf.h5"))
            ohf, _ = refio.read_h5_all(p("ohf.h5"))
            check("CLI encoder: safetensors+config.json weights give bit-identical outputs",
                  all(np.array_equal(ohf[k], o32[k]) for k in o32))
            for sh in rm.SHARING:
                run("init", "--preset", "test", "--perturb", "--sharing", sh, "--mode", "joint", "--out", p("f.h5"))
                run("dump", "--weights", p("f.h5"), "--batch", p("in.h5"), "--out", p("d.h5"), "--dtype", "float64")
                dd, _ = refio.read_h5_all(p("d.h5"))
                nm = int((refio.read_h5_all(p("in.h5"))[0]["labels"] > 0).sum())
                want = {"generator/embedding_output", "generator/emd/pass_1", "generator/emd/pass_2",
                        "generator/mlm_logits", "generator/loss", "discriminator/rtd_logits", "discriminator/loss",
                        "generator/hidden_states/layer_1", "discriminator/hidden_states/layer_1"}
                check("CLI dump %s: datasets present, mlm_logits [%d,V], finite" % (sh, nm),
                      want <= set(dd) and dd["generator/mlm_logits"].shape[0] == nm
                      and all(np.all(np.isfinite(v)) for v in dd.values()))
            # exported HF pair (generator folder, discriminator folder with E_G + E_delta) == GDES dump
            run("init", "--preset", "test", "--perturb", "--sharing", "gdes", "--out", p("g.h5"))
            run("dump", "--weights", p("g.h5"), "--batch", p("in.h5"), "--out", p("dg.h5"))
            w, attrs = refio.read_h5_all(p("g.h5"))
            gen = {k[len("generator."):]: v for k, v in w.items() if k.startswith("generator.")}
            dis = {k[len("discriminator."):]: v for k, v in w.items() if k.startswith("discriminator.")
                   and "._weight" not in k}
            dis["deberta.embeddings.word_embeddings.weight"] = (
                w["generator.deberta.embeddings.word_embeddings.weight"]
                + w["discriminator.deberta.embeddings.word_embeddings._weight"])
            for sub, tensors, layers in (("G", gen, attrs["gen_num_hidden_layers"]), ("D", dis, attrs["num_hidden_layers"])):
                os.mkdir(p(sub))
                write_safetensors(p(sub + "/model.safetensors"), tensors)
                with open(p(sub + "/config.json"), "w") as f:
                    json.dump(dict(cj, num_hidden_layers=int(layers)), f)
            run("dump", "--hf-generator", p("G"), "--hf-discriminator", p("D"), "--batch", p("in.h5"), "--out", p("dh.h5"))
            a, _ = refio.read_h5_all(p("dh.h5"))
            b, _ = refio.read_h5_all(p("dg.h5"))
            fwd = [k for k in b if not k.startswith("grad/")]
            diff = max(float(np.abs(a[k] - b[k]).max()) for k in fwd)
            check("CLI dump from exported HF folders (D embeddings = E_G + E_delta) == GDES dump forward",
                  diff <= 1e-6, "%d datasets, max diff %.1e" % (len(fwd), diff))
            # encoder --model generator|discriminator on the full GDES file == the dump's hidden states
            ins, _ = refio.read_h5_all(p("in.h5"))
            refio.write_h5(p("in_d.h5"), dict(ins, input_ids=ins["replaced_ids"]))
            run("encoder", "--model", "generator", "--weights", p("g.h5"), "--inputs", p("in.h5"), "--out", p("eg.h5"))
            run("encoder", "--model", "discriminator", "--weights", p("g.h5"), "--inputs", p("in_d.h5"), "--out", p("ed.h5"))
            eg, _ = refio.read_h5_all(p("eg.h5"))
            ed, _ = refio.read_h5_all(p("ed.h5"))
            L = int(attrs["num_hidden_layers"])
            dm = max(float(np.abs(e["hidden_states/layer_%d" % n] - b["%s/hidden_states/layer_%d" % (mdl, n)]).max())
                     for e, mdl, nl in ((eg, "generator", int(attrs["gen_num_hidden_layers"])), (ed, "discriminator", L))
                     for n in range(nl))
            check("CLI encoder --model generator|discriminator (GDES file) == dump hidden states", dm <= 1e-6,
                  "max diff %.1e" % dm)
            # a deberta.c checkpoint (params/<name>, config text) is accepted as --weights
            text = "# deberta.c model config (resolved)\n" + "".join(
                "%s = %s\n" % (k, ("true" if v else "false") if k == "use_emd" else v)
                for k, v in attrs.items()) + "train_steps = 3\n"
            ck = {"params/" + k: v for k, v in w.items()}
            ck["config"] = np.bytes_(text.encode())
            refio.write_h5(p("ck.h5"), ck, {"format": "deberta.c checkpoint", "version": 1})
            run("dump", "--weights", p("ck.h5"), "--batch", p("in.h5"), "--out", p("dc.h5"))
            a, _ = refio.read_h5_all(p("dc.h5"))
            check("CLI dump from a deberta.c checkpoint (params/ + config text) == dump from the weights file",
                  all(np.array_equal(a[k], b[k]) for k in b))
            # compare: a file against itself passes, a perturbed one fails
            e = run("compare", "--ours", p("dg.h5"), "--ref", p("dg.h5"), "--profile", "dump")
            bb = dict(b)
            bb["grad/generator.lm_predictions.lm_head.bias"] = b["grad/generator.lm_predictions.lm_head.bias"] * 1.01
            refio.write_h5(p("bad.h5"), bb)
            run("compare", "--ours", p("bad.h5"), "--ref", p("dg.h5"), "--profile", "dump", expect=1)
            check("CLI compare: identical files pass, a 1% gradient error fails", True)
            # an invalid file gives one clear error line and exit 1
            e = run("encoder", "--weights", p("in.h5"), "--inputs", p("in.h5"), "--out", p("x.h5"), expect=1)
            check("CLI: weights file without config attributes -> exit 1 with a clear error",
                  "missing" in e and e.count("\n") == 1, e.strip()[:120])
        except RuntimeError as e:
            check("CLI round trip", False, str(e)[:300])


def main():
    quick = "--quick" in sys.argv
    torch.set_num_threads(1)
    t0 = time.time()
    test_buckets()
    test_explicit_formulas()
    test_naive_model()
    test_masking()
    test_sharing_semantics()
    test_gradcheck_encoder(quick)
    test_gradcheck_full(quick)
    test_cli()
    print("selftest: %d failure(s), %.1fs" % (len(FAILS), time.time() - t0))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
