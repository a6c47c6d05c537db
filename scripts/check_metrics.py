#!/usr/bin/env python3
"""check_metrics.py — recomputes the fine-tuning metrics of train/eval/task_metrics.c with plain Python
formulas (no numpy, no sklearn) and compares them with the numbers the C code wrote.

    check_metrics.py CASES.jsonl     # lines from `test_task_metrics --dump` (gold, pred, C results)
    check_metrics.py --predict OUT.jsonl LOG   # `deberta predict` output with gold labels, and its
                                               # stderr: the printed scores (4 decimals) recomputed
    check_metrics.py --baselines TASKDIR RUNDIR    # the baselines of RUNDIR/metrics.jsonl's test record
                                               # refitted from TASKDIR/{train,test}.h5 (needs h5py)

Each line: {"case": "classification"|"regression"|"entities", "gold": [...], "pred": [...], ...the
C values...}.  Exit 0 when every value agrees within 1e-9 (counts exactly), 1 otherwise, naming
the first differences.

The formulas are written from their definitions, in a different shape from the C code:
  macro-F1   per-label F1 = 2 tp / (2 tp + fp + fn) averaged over labels present in gold or pred;
  MCC        (tp tn - fp fn) / sqrt(product of the four margins), 0 when that product is 0;
  Spearman   Pearson of the ranks, each tie group given the mean of its positions (1-based);
  entities   the chunk state machine of conlleval (CoNLL-2000/2003): a chunk ends before B, O, or a
             change of type; starts at B, or at I after O or after another type; a correct chunk is
             one where gold and prediction start together with the same type and end together.
"""
import json
import math
import re
import sys


def macro_f1(gold, pred):
    labels = sorted(set(gold) | set(pred))
    if not labels:
        return 0.0
    total = 0.0
    for c in labels:
        tp = sum(1 for g, p in zip(gold, pred) if g == c and p == c)
        fp = sum(1 for g, p in zip(gold, pred) if g != c and p == c)
        fn = sum(1 for g, p in zip(gold, pred) if g == c and p != c)
        total += 2 * tp / (2 * tp + fp + fn)
    return total / len(labels)


def binary(gold, pred):
    tp = sum(1 for g, p in zip(gold, pred) if g == 1 and p == 1)
    tn = sum(1 for g, p in zip(gold, pred) if g == 0 and p == 0)
    fp = sum(1 for g, p in zip(gold, pred) if g == 0 and p == 1)
    fn = sum(1 for g, p in zip(gold, pred) if g == 1 and p == 0)
    den = (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    mcc = (tp * tn - fp * fn) / math.sqrt(den) if den else 0.0
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
    return mcc, f1


def pearson(x, y):
    n = len(x)
    if n < 2:
        return None
    mx, my = sum(x) / n, sum(y) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(x, y))
    vx = sum((a - mx) ** 2 for a in x)
    vy = sum((b - my) ** 2 for b in y)
    if vx == 0 or vy == 0:
        return None
    return cov / math.sqrt(vx * vy)


def average_ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    pos = 0
    while pos < len(order):
        tie = [order[pos]]
        while pos + len(tie) < len(order) and v[order[pos + len(tie)]] == v[order[pos]]:
            tie.append(order[pos + len(tie)])
        mean_rank = sum(range(pos + 1, pos + len(tie) + 1)) / len(tie)
        for i in tie:
            r[i] = mean_rank
        pos += len(tie)
    return r


def split_tag(name):
    return ("O", "") if name == "O" else (name[0], name[2:])


def end_of_chunk(prev_tag, tag, prev_type, typ):
    if prev_tag in ("B", "I") and tag in ("B", "O"):
        return True
    return prev_tag != "O" and prev_type != typ


def start_of_chunk(prev_tag, tag, prev_type, typ):
    if tag == "B":
        return True
    if prev_tag == "O" and tag == "I":
        return True
    return tag != "O" and prev_type != typ


def conlleval_counts(gold_tags, pred_tags):
    """gold_tags, pred_tags: lists of sentences of tag names; returns (correct, gold, found)."""
    correct = found_gold = found_pred = 0
    for gs, ps in zip(gold_tags, pred_tags):
        in_correct = False
        pg, pp, pgt, ppt = "O", "O", "", ""
        for gname, pname in list(zip(gs, ps)) + [("O", "O")]:  # the sentence boundary closes chunks
            g, gt = split_tag(gname)
            p, pt = split_tag(pname)
            g_end, p_end = end_of_chunk(pg, g, pgt, gt), end_of_chunk(pp, p, ppt, pt)
            g_start, p_start = start_of_chunk(pg, g, pgt, gt), start_of_chunk(pp, p, ppt, pt)
            if in_correct:
                if g_end and p_end and pgt == ppt:
                    in_correct = False
                    correct += 1
                elif g_end != p_end or gt != pt:
                    in_correct = False
            if g_start and p_start and gt == pt:
                in_correct = True
            found_gold += g_start
            found_pred += p_start
            pg, pp, pgt, ppt = g, p, gt, pt
    return correct, found_gold, found_pred


def expected(case):
    kind, gold, pred = case["case"], case["gold"], case["pred"]
    out = {}
    if kind == "classification":
        out["acc"] = sum(1 for g, p in zip(gold, pred) if g == p) / len(gold)
        out["macro_f1"] = macro_f1(gold, pred)
        if case["L"] == 2:
            out["mcc"], out["pos_f1"] = binary(gold, pred)
    elif kind == "regression":
        out["mse"] = sum((p - g) ** 2 for g, p in zip(gold, pred)) / len(gold)
        out["pearson"] = pearson(gold, pred)
        out["spearman"] = pearson(average_ranks(gold), average_ranks(pred))
    elif kind == "entities":
        names, st = case["names"], case["starts"]
        gs = [[names[t] for t in gold[a:b]] for a, b in zip(st, st[1:])]
        ps = [[names[t] for t in pred[a:b]] for a, b in zip(st, st[1:])]
        c, ng, npred = conlleval_counts(gs, ps)
        p = c / npred if npred else 0.0
        r = c / ng if ng else 0.0
        out.update(entity_gold=ng, entity_pred=npred, entity_correct=c, entity_p=p, entity_r=r,
                   entity_f1=2 * p * r / (p + r) if p + r else 0.0)
    else:
        raise ValueError("unknown case " + kind)
    return out


def predict_check(out_path, log_path):
    """Recomputes the scores `deberta predict` printed from its own JSON lines (gold vs predicted)."""
    rows = [json.loads(l) for l in open(out_path, encoding="utf-8")]
    printed = None
    for line in open(log_path, encoding="utf-8"):
        if line.startswith("predict: ") and "  (n " in line and "loss" in line:
            printed = line
    if printed is None:
        sys.exit("check_metrics: no scores line in " + log_path)
    nums = dict(re.findall(r"(acc|macro-F1|MCC|F1\(pos\)|Pearson|Spearman|MSE|P|R|F1) (-?[0-9.e+-]+|nan)", printed))
    if "value" in rows[0]:
        gold = [r["gold"] for r in rows]
        pred = [r["value"] for r in rows]
        want = {"Pearson": pearson(gold, pred), "Spearman": pearson(average_ranks(gold), average_ranks(pred)),
                "MSE": sum((p - g) ** 2 for g, p in zip(gold, pred)) / len(gold)}
    else:
        tagging = "tags" in rows[0]
        gold = [t for r in rows for t in (r["gold"] if tagging else [r["gold"]])]
        pred = [t for r in rows for t in (r["tags"] if tagging else [r["label"]])]
        want = {"acc": sum(1 for g, p in zip(gold, pred) if g == p) / len(gold), "macro-F1": macro_f1(gold, pred)}
        names = sorted(set(gold) | set(pred))
        if not tagging and "MCC" in nums:  # the label set's second label is the positive class
            labels = sorted(set(gold) | set(pred))  # as prep-task orders labels: numerically when all are integers
            if all(re.fullmatch(r"-?[0-9]+", x) for x in labels):
                labels.sort(key=int)
            pos = labels[-1] if len(labels) == 2 else None
            b = binary([int(g == pos) for g in gold], [int(p == pos) for p in pred])
            want["MCC"], want["F1(pos)"] = b
        if tagging and all(n == "O" or n[:2] in ("B-", "I-") for n in names):
            c, ng, npred = conlleval_counts([r["gold"] for r in rows], [r["tags"] for r in rows])
            p = c / npred if npred else 0.0
            r_ = c / ng if ng else 0.0
            want.update({"P": p, "R": r_, "F1": 2 * p * r_ / (p + r_) if p + r_ else 0.0})
    bad = 0
    for k, v in want.items():
        got = nums.get(k)
        ok = got is not None and ((v is None and got == "nan") or (v is not None and got != "nan" and abs(float(got) - v) <= 6e-5 * max(1, abs(v))))
        print("%s %-9s printed %s, Python %s" % ("ok  " if ok else "FAIL", k, got, "nan" if v is None else "%.6f" % v))
        bad += not ok
    sys.exit(1 if bad else 0)


def baselines_check(taskdir, rundir):
    """Majority class, most frequent tag per word, naive Bayes and train mean, refitted here."""
    import h5py
    def load(split):
        with h5py.File("%s/%s.h5" % (taskdir, split), "r") as f:
            d = {k: f[k][()] for k in f if k != "tokenizer"}
            d.update({k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()})
        return d
    tr, te = load("train"), load("test")
    rec = [json.loads(l) for l in open(rundir + "/metrics.jsonl") if '"kind":"test"' in l][-1]
    kind, L = tr["kind"], int(tr["n_labels"])
    want = {}
    if kind == "regression":
        mean = sum(float(x) for x in tr["labels"]) / len(tr["labels"])
        want["baseline_mean_mse"] = sum((mean - float(g)) ** 2 for g in te["labels"]) / len(te["labels"])
    else:
        def rows(d):  # labelled rows: (label, example, position)
            if kind == "tagging":
                return [(int(d["labels"][n][i]), n, i) for n in range(len(d["labels"])) for i in range(d["labels"].shape[1])
                        if d["labels"][n][i] != -100]
            return [(int(d["labels"][n]), n, 0) for n in range(len(d["labels"]))]
        trr, ter = rows(tr), rows(te)
        counts = [0] * L
        for l, _, _ in trr:
            counts[l] += 1
        maj = max(range(L), key=lambda c: (counts[c], -c))
        gold = [l for l, _, _ in ter]
        want["baseline_majority_acc"] = sum(1 for g in gold if g == maj) / len(gold)
        if kind == "tagging":
            def word(d, n, i):  # the word's sub-token ids
                w = d["word_ids"][n]
                return tuple(int(d["input_ids"][n][j]) for j in range(i, len(w)) if w[j] == w[i] and all(w[k] == w[i] for k in range(i, j + 1)))
            tags = {}
            for l, n, i in trr:
                tags.setdefault(word(tr, n, i), [0] * L)[l] += 1
            pred = [max(range(L), key=lambda c: (tags[w][c], -c)) if w in tags else maj for w in (word(te, n, i) for _, n, i in ter)]
            want["baseline_word_tag_acc"] = sum(1 for g, p in zip(gold, pred) if g == p) / len(gold)
            want["baseline_word_tag_macro_f1"] = macro_f1(gold, pred)
        else:
            special = {int(tr["cls_id"]), int(tr["sep_id"]), int(tr["pad_id"])}
            bags = lambda d, n: [int(t) for t in d["input_ids"][n] if int(t) not in special]
            vocab = set()
            tok_count = [dict() for _ in range(L)]
            for l, n, _ in trr:
                for t in bags(tr, n):
                    vocab.add(t)
                    tok_count[l][t] = tok_count[l].get(t, 0) + 1
            totals = [sum(c.values()) for c in tok_count]
            pred = []
            for _, n, _ in ter:
                best, best_c = None, 0
                for c in range(L):
                    if counts[c] == 0:
                        continue
                    sc = math.log(counts[c] / len(trr)) + sum(math.log((tok_count[c].get(t, 0) + 1) / (totals[c] + len(vocab)))
                                                             for t in bags(te, n) if t in vocab)
                    if best is None or sc > best:
                        best, best_c = sc, c
                pred.append(best_c)
            want["baseline_naive_bayes_acc"] = sum(1 for g, p in zip(gold, pred) if g == p) / len(gold)
            want["baseline_naive_bayes_macro_f1"] = macro_f1(gold, pred)
            if L == 2:
                want["baseline_naive_bayes_mcc"], want["baseline_naive_bayes_pos_f1"] = binary(gold, pred)
    bad = 0
    for k, v in want.items():
        got = rec.get(k)
        ok = got is not None and abs(got - v) <= 1e-6 * max(1, abs(v))
        print("%s %s: metrics.jsonl %s, Python %.9g" % ("ok  " if ok else "FAIL", k, got, v))
        bad += not ok
    sys.exit(1 if bad else 0)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--baselines":
        baselines_check(sys.argv[2], sys.argv[3])
    if len(sys.argv) == 4 and sys.argv[1] == "--predict":
        predict_check(sys.argv[2], sys.argv[3])
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    bad = checked = 0
    with open(sys.argv[1]) as f:
        for lineno, line in enumerate(f, 1):
            case = json.loads(line)
            for key, want in expected(case).items():
                got = case.get(key, "missing")
                checked += 1
                same = (got is None and want is None) or (
                    got not in ("missing", None) and want is not None and abs(got - want) <= 1e-9)
                if not same:
                    bad += 1
                    if bad <= 10:
                        print(f"{sys.argv[1]}:{lineno}: {case['case']} {key}: C {got}, Python {want}")
    print(f"check_metrics: {checked} values, {bad} differ")
    sys.exit(1 if bad or not checked else 0)


if __name__ == "__main__":
    main()
