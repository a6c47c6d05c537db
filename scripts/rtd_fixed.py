#!/usr/bin/python3
"""Writes the fixed-corruption RTD evaluation file SHARD_DIR/rtd-fixed.h5 (docs/FORMATS.md).

The validation split packed as the loader packs it (per shard: d0 [SEP] d1 [SEP] ..., chunks of T-2
tokens, [CLS] chunk [SEP], padded), N sequences taken evenly through it, masked once with the
official windowing (data/loader.h: num = min(max_preds, max(1, rint(p*n))), windows of int(1/p)
candidates, one position per window, the first num windows) from numpy's generator with --seed, each
masked position replaced by a draw from a stand-in bigram generator P(. | original left neighbour)
(scripts/rtd_count_detector.py's smoothed counts of the train shards, special ids excluded).  The
same file records the count detector's score of every token and its AUC, flagged count and precision
on the scored tokens (the non-special real tokens), so `deberta eval` and every in-run evaluation can
print the discriminator's figures beside the counter's on the very same tokens.  Deterministic:
same shards and flags, same file.  Written as OUT.tmp, sealed with `deberta seal`, renamed.

usage: scripts/rtd_fixed.py SHARD_DIR [--out FILE] [--seq-len 128] [--n-seq 512] [--seed 1]
                            [--mask-prob 0.15] [--alpha 20] [--deberta ./build/deberta]
"""
import argparse
import glob
import os
import subprocess
import sys

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rtd_count_detector import Counts, auc  # noqa: E402


def shard_files(shards, split):
    files = sorted(glob.glob(f"{shards}/{split}-*.h5"))
    if not files:
        sys.exit(f"error: rtd_fixed: no {split} shard in {shards} (run deberta prep first)")
    return files


def stream(f, sep):
    """A shard's documents as the loader's stream d0 [SEP] d1 [SEP] ... (int64)."""
    with h5py.File(f, "r") as h:
        tok = h["tokens"][:].astype(np.int64)
        off = h["doc_offsets"][:]
        attrs = {k: h.attrs[k] for k in h.attrs}
    ends = off[1:]
    out = np.insert(tok, ends, sep)  # a [SEP] after every document
    return out, attrs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("shards")
    ap.add_argument("--out", default=None, help="default SHARD_DIR/rtd-fixed.h5")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--n-seq", type=int, default=512)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mask-prob", type=float, default=0.15)
    ap.add_argument("--alpha", type=float, default=20.0, help="smoothing weight of the unigram back-off")
    ap.add_argument("--deberta", default="./build/deberta", help="the binary that seals the file")
    a = ap.parse_args()
    out = a.out or f"{a.shards}/rtd-fixed.h5"
    T, p = a.seq_len, a.mask_prob
    if T < 8 or a.n_seq < 1 or not 0 < p < 1:
        sys.exit("error: rtd_fixed: --seq-len >= 8, --n-seq >= 1 and --mask-prob in (0, 1) wanted")

    # counts on the train stream with [SEP] at document ends ([CLS] is read as [SEP] below)
    parts, attrs = [], None
    for f in shard_files(a.shards, "train"):
        with h5py.File(f, "r") as h:
            attrs = {k: h.attrs[k] for k in h.attrs}
        parts.append(stream(f, int(attrs["sep_id"]))[0])
    train = np.concatenate(parts)
    V = int(attrs["vocab_size"])
    thash = attrs["tokenizer_hash"]
    thash = thash.decode() if isinstance(thash, bytes) else str(thash)
    pad, cls, sep = int(attrs["pad_id"]), int(attrs["cls_id"]), int(attrs["sep_id"])
    special = np.zeros(V, dtype=bool)
    special[[int(attrs[k]) for k in ("pad_id", "cls_id", "sep_id", "unk_id", "mask_id")]] = True
    uni = (np.bincount(train, minlength=V) + 0.5) / (len(train) + 0.5 * V)
    big = Counts(train, V, 1, uni, a.alpha)
    skip = Counts(train, V, 2, uni, a.alpha)

    # the val split packed as the loader packs it
    seqs = []
    for f in shard_files(a.shards, "val"):
        s, va = stream(f, sep)
        h2 = va["tokenizer_hash"]
        if (h2.decode() if isinstance(h2, bytes) else str(h2)) != thash:
            sys.exit(f"error: rtd_fixed: {f} has another tokenizer than the train shards")
        L = T - 2
        for k in range(0, len(s), L):
            c = s[k:k + L]
            row = np.full(T, pad, dtype=np.int64)
            row[0], row[1:1 + len(c)], row[1 + len(c)] = cls, c, sep
            seqs.append((row, len(c) + 2))
    n_all = len(seqs)
    N = min(a.n_seq, n_all)
    pick = (np.arange(N) * n_all) // N
    orig = np.stack([seqs[i][0] for i in pick])
    length = np.array([seqs[i][1] for i in pick])

    rng = np.random.default_rng(a.seed)
    ids = orig.copy()
    masked = np.zeros_like(orig, dtype=bool)
    win = max(1, int(1.0 / p))
    max_preds = int(np.ceil(T * p / 10.0)) * 10
    for r in range(N):
        n = int(length[r])
        cand = np.nonzero(~special[orig[r, :n]])[0]
        num = min(max_preds, max(1, int(np.rint(n * p))))
        done = 0
        for off in range(0, len(cand), win):
            m = int(rng.integers(min(win, len(cand) - off)))
            if done < num:
                masked[r, cand[off + m]] = True
                done += 1
    # replacements: one draw per masked position from P(. | original left neighbour), specials excluded
    rows, cols = np.nonzero(masked)
    left = orig[rows, cols - 1]
    left = np.where(left == cls, sep, left)
    allv = np.arange(V)
    for prev in np.unique(left):
        at = np.nonzero(left == prev)[0]
        q = big.prob(np.full(V, prev), allv)
        q[special] = 0
        ids[rows[at], cols[at]] = rng.choice(V, size=len(at), p=q / q.sum())
    replaced = (ids != orig) & masked
    attn = np.zeros_like(orig, dtype=np.int8)
    for r in range(N):
        attn[r, :length[r]] = 1
    scored = (attn == 1) & ~special[orig]

    # the count detector on the corrupted tokens (neighbours inside the sequence, [CLS] read as [SEP])
    x = np.where(ids == cls, sep, ids)
    score = np.full(orig.shape, np.nan, dtype=np.float64)
    r_, c_ = np.nonzero(scored)
    prev, cur, nxt = x[r_, c_ - 1], x[r_, c_], x[r_, c_ + 1]
    # the stand-in's probability of cur: the bigram renormalised without the special ids
    norm = 1.0 - sum(big.prob(allv, np.full(V, s)) for s in np.nonzero(special)[0])
    q = big.prob(prev, cur) / norm[prev]
    log_rep = np.log(p) + np.log(q) + np.log(skip.prob(prev, nxt))
    log_org = np.log(1 - p) + np.log(big.prob(prev, cur)) + np.log(big.prob(cur, nxt))
    score[r_, c_] = log_rep - log_org
    y = replaced[r_, c_].astype(np.int64)
    sc = score[r_, c_]
    flag = sc > 0
    c_auc = auc(sc, y)
    c_prec = float((y[flag] == 1).mean()) if flag.any() else float("nan")
    c_acc = float((flag == (y == 1)).mean())
    base = 1 - y.mean()

    tmp = out + ".tmp"
    with h5py.File(tmp, "w") as h:
        h.create_dataset("input_ids", data=ids.astype(np.int32))
        h.create_dataset("original_ids", data=orig.astype(np.int32))
        h.create_dataset("attention_mask", data=attn)
        h.create_dataset("scored", data=scored.astype(np.int8))
        h.create_dataset("replaced", data=replaced.astype(np.int8))
        h.create_dataset("counter_score", data=score.astype(np.float32))
        h.attrs["format"] = np.bytes_("deberta.c-rtd-fixed")
        h.attrs["version"] = np.int64(1)
        h.attrs["tokenizer_hash"] = np.bytes_(thash)
        h.attrs["vocab_size"] = np.int64(V)
        h.attrs["seq_len"] = np.int64(T)
        h.attrs["n_seq"] = np.int64(N)
        h.attrs["n_val_seq"] = np.int64(n_all)
        h.attrs["seed"] = np.int64(a.seed)
        h.attrs["mask_prob"] = np.float64(p)
        h.attrs["generator"] = np.bytes_("bigram")
        h.attrs["alpha"] = np.float64(a.alpha)
        h.attrs["n_masked"] = np.int64(masked.sum())
        h.attrs["n_scored"] = np.int64(len(y))
        h.attrs["n_replaced"] = np.int64(y.sum())
        h.attrs["counter_auc"] = np.float64(c_auc)
        h.attrs["counter_flagged"] = np.int64(flag.sum())
        h.attrs["counter_precision"] = np.float64(c_prec)
        h.attrs["counter_accuracy"] = np.float64(c_acc)
        h.attrs["baseline_accuracy"] = np.float64(base)
    rc = subprocess.run([a.deberta, "seal", tmp]).returncode
    if rc != 0:
        os.unlink(tmp)
        sys.exit(f"error: rtd_fixed: `{a.deberta} seal {tmp}` failed")
    os.replace(tmp, out)
    print(f"rtd_fixed: {out}: {N} of {n_all} val sequences of {T} tokens, {int(masked.sum())} masked, "
          f"{int(y.sum())} replaced of {len(y)} scored tokens (all-original {base:.4f}); count detector on them: "
          f"AUC {c_auc:.4f}, {int(flag.sum())} flagged, precision {c_prec:.4f}, accuracy {c_acc:.4f}")


if __name__ == "__main__":
    main()
