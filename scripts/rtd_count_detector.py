#!/usr/bin/python3
"""How hard is replaced-token detection on our shards for a detector that knows only n-gram counts?

A yardstick for the discriminator, not part of training.  On the validation tokens (read as one
stream: document and sequence boundaries are ignored, an approximation), positions are
masked at 15 % (at most one per window of 6, like the official masking) and replaced by a draw from a
stand-in generator; a Bayes detector built from counts of the training shards then calls each token
"replaced" when

    m * q(x_i) * P2(x_{i+1} | x_{i-1})  >  (1 - m) * P(x_i | x_{i-1}) * P(x_{i+1} | x_i)

(m = masking rate, q = the stand-in generator's probability of the token, P = smoothed bigram,
P2 = smoothed skip-bigram, neighbours assumed original).  Prints, per stand-in generator, the share
of replaced tokens, the all-original baseline accuracy, the detector's accuracy, AUC, the number of
flagged tokens and their precision (the metrics `deberta eval` reports) and the accuracy of the best
single threshold on the detector's score (what a calibrated detector with this ranking could reach).

Stand-in generators: `unigram` (a generator that has learnt token frequencies only, as ours has
after ~200 steps) and `bigram` (draws from P(. | x_{i-1}): a stronger, left-context generator).

usage: scripts/rtd_count_detector.py SHARD_DIR [--alpha A] [--seed S]
"""
import argparse
import glob
import sys

import h5py
import numpy as np


def read_tokens(pattern):
    files = sorted(glob.glob(pattern))
    if not files:
        sys.exit(f"error: no shard matches {pattern}")
    parts, vocab = [], None
    for f in files:
        with h5py.File(f, "r") as h:
            parts.append(h["tokens"][:].astype(np.int64))
            vocab = int(h.attrs["vocab_size"])
    return np.concatenate(parts), vocab


class Counts:
    """Smoothed conditional P(b | a) from pair counts at distance `gap`, backed off to the unigram."""

    def __init__(self, tok, vocab, gap, uni, alpha):
        a, b = tok[:-gap], tok[gap:]
        codes, n = np.unique(a * vocab + b, return_counts=True)
        self.codes, self.n, self.vocab, self.uni, self.alpha = codes, n, vocab, uni, alpha
        self.ctx = np.bincount(a, minlength=vocab)

    def prob(self, a, b):
        code = a * self.vocab + b
        i = np.searchsorted(self.codes, code)
        i = np.minimum(i, len(self.codes) - 1)
        c = np.where(self.codes[i] == code, self.n[i], 0)
        return (c + self.alpha * self.uni[b]) / (self.ctx[a] + self.alpha)


def auc(score, y):
    order = np.argsort(score, kind="mergesort")
    s = score[order]
    ranks = np.empty(len(s))
    i = 0
    while i < len(s):  # average ranks of ties
        j = i
        while j < len(s) and s[j] == s[i]:
            j += 1
        ranks[i:j] = (i + 1 + j) / 2.0
        i = j
    r = np.empty(len(s))
    r[order] = ranks
    pos = y.sum()
    neg = len(y) - pos
    return (r[y == 1].sum() - pos * (pos + 1) / 2.0) / (pos * neg)


def best_accuracy(score, y):
    """Accuracy of the best single threshold on the score (flag: score > threshold)."""
    order = np.argsort(-score, kind="mergesort")
    ys = y[order]
    # flagging the top k: correct = (replaced among top k) + (originals outside top k)
    tp = np.concatenate([[0], np.cumsum(ys)])
    k = np.arange(len(ys) + 1)
    correct = tp + ((len(ys) - ys.sum()) - (k - tp))
    return correct.max() / len(ys)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("shards")
    ap.add_argument("--alpha", type=float, default=20.0, help="smoothing weight of the unigram back-off")
    ap.add_argument("--mask-prob", type=float, default=0.15)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    train, V = read_tokens(f"{args.shards}/train-*.h5")
    val, _ = read_tokens(f"{args.shards}/val-*.h5")
    uni = (np.bincount(train, minlength=V) + 0.5) / (len(train) + 0.5 * V)
    big = Counts(train, V, 1, uni, args.alpha)
    skip = Counts(train, V, 2, uni, args.alpha)
    rng = np.random.default_rng(args.seed)
    m = args.mask_prob

    # one masked position per window of 6 tokens with probability 6m (expected rate m), interior only
    n = len(val)
    starts = np.arange(1, n - 7, 6)
    chosen = starts[rng.random(len(starts)) < 6 * m]
    pos = chosen + rng.integers(0, 6, size=len(chosen))
    print(f"validation tokens {n}, masked {len(pos)} ({len(pos) / n:.3f}); training tokens {len(train)}, vocab {V}")
    print(f"{'stand-in generator':<20} {'replaced':>9} {'baseline':>9} {'accuracy':>9} {'AUC':>7} {'flagged':>8} {'precision':>9} {'best acc':>9}")
    for name in ("unigram", "bigram"):
        x = val.copy()
        if name == "unigram":
            x[pos] = rng.choice(V, size=len(pos), p=uni)
        else:  # draw from P(. | left neighbour), one distribution per distinct left neighbour
            left = val[pos - 1]
            for prev in np.unique(left):
                at = pos[left == prev]
                probs = big.prob(np.full(V, prev), np.arange(V))
                x[at] = rng.choice(V, size=len(at), p=probs / probs.sum())
        y = np.zeros(n, dtype=np.int64)
        y[pos] = x[pos] != val[pos]
        i = np.arange(1, n - 1)
        prev, cur, nxt = x[i - 1], x[i], x[i + 1]
        if name == "unigram":
            q = uni[cur]
        else:
            q = big.prob(prev, cur)
        log_rep = np.log(m) + np.log(q) + np.log(skip.prob(prev, nxt))
        log_org = np.log(1 - m) + np.log(big.prob(prev, cur)) + np.log(big.prob(cur, nxt))
        score = log_rep - log_org
        yy = y[i]
        flag = score > 0
        base = 1 - yy.mean()
        acc = (flag == (yy == 1)).mean()
        prec = (yy[flag] == 1).mean() if flag.any() else float("nan")
        print(f"{name:<20} {yy.mean():9.4f} {base:9.4f} {acc:9.4f} {auc(score, yy):7.4f} {int(flag.sum()):8d} {prec:9.4f} {best_accuracy(score, yy):9.4f}")


if __name__ == "__main__":
    main()
