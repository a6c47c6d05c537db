#!/usr/bin/python3
"""train_ref.py — a short ELECTRA-style pretraining run of the PyTorch reference model on the same
shards `deberta pretrain` reads: a cross-check of *learning dynamics* (not of bits) between the
reference and deberta.c.  Decoupled G/D steps, torch.optim.AdamW per model (decay on weights, not on
biases/LayerNorm), clipping 1.0 per model, linear warm-up (10 %) then linear decay, dropout as given.

Differences from `deberta pretrain` (on purpose, to stay small): sequences are random windows of
T − 2 tokens of the shard's token stream between [CLS] and [SEP]; masking picks 15 % of the inner
positions uniformly (all [MASK]) instead of the official one-per-window rule; validation uses a fixed
set of such windows of the val shard.  The metrics are the same: generator MLM accuracy, RTD accuracy
at the 0.5 threshold, the all-original baseline, and the AUC.

usage: /usr/bin/python3 scripts/reference/train_ref.py --data data/shards [--steps 400] [--lr 5e-4]
       [--dropout 0.1] [--batch 16] [--seq 128] [--threads 1] [--eval-every 50] [--seed 1]
"""
import argparse
import glob
import os
import sys
import time

import h5py
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refmodel as rm  # noqa: E402

CLS, SEP, MASK = 1, 2, 4


def tokens_of(data, split):
    files = sorted(glob.glob(os.path.join(data, split + "-*.h5")))
    if not files:
        sys.exit("error: no %s-*.h5 shards in %s (run deberta prep)" % (split, data))
    return np.concatenate([h5py.File(f, "r")["tokens"][:].astype(np.int64) for f in files])


def make_batch(src, rng, B, T, mask_prob=0.15):
    ids = np.zeros((B, T), np.int64)
    sel = np.zeros((B, T), bool)
    n_mask = max(1, int(round(mask_prob * (T - 2))))
    for b in range(B):
        s = rng.integers(0, len(src) - T)
        ids[b, 0], ids[b, 1:T - 1], ids[b, T - 1] = CLS, src[s:s + T - 2], SEP
        sel[b, rng.choice(np.arange(1, T - 1), size=n_mask, replace=False)] = True
    labels = np.where(sel, ids, 0)
    inp = np.where(sel, MASK, ids)
    return torch.from_numpy(inp), torch.ones(B, T, dtype=torch.int64), torch.from_numpy(labels)


def auc_of(y, score):
    order = np.argsort(score, kind="mergesort")
    ranks = np.empty(len(score))
    ranks[order] = np.arange(1, len(score) + 1)
    pos = y.sum()
    return (ranks[y == 1].sum() - pos * (pos + 1) / 2) / (pos * (len(y) - pos))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--eval-batches", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    cfg = rm.make_config("tiny", hidden_dropout_prob=a.dropout, attention_probs_dropout_prob=a.dropout)
    P = rm.init_params(rm.full_shapes(cfg), seed=a.seed, dtype=torch.float32)
    for t in P.values():
        t.requires_grad_(True)
    names = {m: [n for n in P if n.startswith(m + ".")] for m in ("generator", "discriminator")}

    def optimizer(ns):
        groups = [{"params": [P[n] for n in ns if not rm.no_decay(n)], "weight_decay": 0.01},
                  {"params": [P[n] for n in ns if rm.no_decay(n)], "weight_decay": 0.0}]
        o = torch.optim.AdamW(groups, lr=a.lr, betas=(0.9, 0.999), eps=1e-6)
        warm = max(1, a.steps // 10)
        f = lambda s: (s + 1) / warm if s < warm else max(0.0, (a.steps - s) / (a.steps - warm))
        return o, torch.optim.lr_scheduler.LambdaLR(o, f)
    og, sg = optimizer(names["generator"])
    od, sd = optimizer(names["discriminator"])
    train, val = tokens_of(a.data, "train"), tokens_of(a.data, "val")
    rng = np.random.default_rng(a.seed)

    def generate(ids, m, labels, training):
        g = rm.generator_forward(P, cfg, ids, m, labels, training=training)
        with torch.no_grad():
            probs = torch.softmax(g["logits"].detach().float(), -1)
            rep = ids.clone()
            rep[g["sel"]] = torch.multinomial(probs, 1).squeeze(-1)
        return g, rep

    t0 = time.time()
    for s in range(a.steps):
        ids, m, labels = make_batch(train, rng, a.batch, a.seq)
        og.zero_grad()
        od.zero_grad()
        g, rep = generate(ids, m, labels, True)
        g["loss"].backward()
        torch.nn.utils.clip_grad_norm_([P[n] for n in names["generator"]], 1.0)
        og.step()
        sg.step()
        d = rm.discriminator_forward(P, cfg, rep, m, labels, training=True)
        d["loss"].backward()
        torch.nn.utils.clip_grad_norm_([P[n] for n in names["discriminator"]], 1.0)
        od.step()
        sd.step()
        if (s + 1) % a.eval_every and s + 1 != a.steps:
            continue
        vr = np.random.default_rng(12345)
        ys, ps, tgts, hits = [], [], [], 0
        with torch.no_grad():
            for _ in range(a.eval_batches):
                ids, m, labels = make_batch(val, vr, a.batch, a.seq)
                g, rep = generate(ids, m, labels, False)
                d = rm.discriminator_forward(P, cfg, rep, m, labels, training=False)
                ys.append(((labels > 0) & (rep != labels)).flatten().numpy())
                ps.append(d["logits"].flatten().numpy())
                tgt = labels[g["sel"]]
                hits += int((g["logits"].argmax(-1) == tgt).sum())
                tgts.append(tgt.numpy())
        y, p, tg = np.concatenate(ys), np.concatenate(ps), np.concatenate(tgts)
        n_sel, top = len(tg), np.bincount(tg).max()
        print("step %d  G %.3f  MLM acc %.4f (most-frequent %.4f)  RTD acc %.4f (all-original %.4f)  AUC %.3f  %.0f s"
              % (s + 1, g["loss"].item(), hits / n_sel, top / n_sel, ((p > 0) == y).mean(), 1 - y.mean(), auc_of(y, p),
                 time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
