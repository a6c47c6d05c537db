#!/usr/bin/python3
"""bench_predict.py - the Python side of scripts/bench-predict.sh: `deberta predict` against a plain
torch.nn forward of the same fine-tuned model, exported with `deberta export`.

  bench_predict.py input --records N [--words W] --out FILE.jsonl GENRE.jsonl...
      N records {"text", "label"} cut from the texts of the Brown genre files (scripts/brown-task-files.py),
      W words each (default 200: well over 128 tokens, so that every record fills the sequence).
  bench_predict.py torch --model HFDIR --ids TASK.h5 [--batch 32] [--threads 2] [--warmup 3] [--reps 5]
                         [--out PRED.json] [--malloc tuned|default]
      The exported DebertaV2ForSequenceClassification folder as a torch.nn program (the modules of
      scripts/reference/plain_step.py, the fast torch.nn yardstick of scripts/bench-vs-torch.sh, plus the
      pooler and classifier) in eval() under torch.inference_mode(), on the input_ids of a task file
      (`deberta prep-task` of the same records predict reads).  Timed: one pass over all the batches
      (forward, softmax, argmax), --warmup untimed passes first, the median of --reps passes.  Prints
      a RESULT {json} line; --out gets every record's label and probabilities.
  bench_predict.py check --predict PRED.jsonl --torch PRED.json [--tol 1e-4]
      predict's JSON lines against the torch forward's: the same label and |prob - prob| <= tol for every
      record; exit 1 on a difference.
  bench_predict.py summary RESULTS [--machine S --flags S --blas-core S --torch-core-fix S]
      The RESULT lines of a run: medians over the rounds, deberta / the fastest torch run of each round
      (median and range over the rounds), for predict's whole pass and for its batches after the first
      (a warm forward, as torch's timed passes), one final RESULT line.

Exit status: 0 ok, 1 error or difference (one `bench_predict: error: ...` line), 2 usage.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "reference"))


def die(msg):
    print("bench_predict: error: " + msg, file=sys.stderr)
    sys.exit(1)


# ------------------------------------------------------------------------------------------------
# input
# ------------------------------------------------------------------------------------------------

def cmd_input(args):
    out = []
    for path in args.genre:
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            try:
                r = json.loads(line)
                words, label = r["text"].split(), r["label"]
            except (ValueError, KeyError, AttributeError) as e:
                die("%s:%d: not a genre record (%s)" % (path, n, e))
            for i in range(0, len(words) - args.words + 1, args.words):
                out.append({"text": " ".join(words[i:i + args.words]), "label": label})
                if len(out) == args.records:
                    break
            if len(out) == args.records:
                break
        if len(out) == args.records:
            break
    if len(out) < args.records:
        die("%s hold only %d records of %d words (%d asked)" % (", ".join(args.genre), len(out), args.words, args.records))
    with open(args.out + ".tmp", "w", encoding="utf-8") as f:
        f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out))
    os.replace(args.out + ".tmp", args.out)
    return 0


# ------------------------------------------------------------------------------------------------
# the torch.nn model
# ------------------------------------------------------------------------------------------------

def build_model(hf_dir):
    """The exported folder -> (nn.Module in eval mode, label names, cfg).  Every tensor of the file is
    used (the position table, which DeBERTa-V3 does not add at the input, excepted)."""
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import plain_step as ps
    import refio

    try:
        cfg, params = refio.read_hf(hf_dir)
        cj = json.load(open(os.path.join(hf_dir, "config.json")))
    except (refio.FileError, OSError, ValueError) as e:
        die(str(e))
    if "DebertaV2ForSequenceClassification" not in cj.get("architectures", []):
        die("%s: not a DebertaV2ForSequenceClassification export (architectures %s)" % (hf_dir, cj.get("architectures")))
    id2label = cj.get("id2label", {})
    labels = [id2label[str(i)] for i in range(len(id2label))]
    if len(labels) < 2:
        die("%s: a classification head needs >= 2 labels (id2label %s)" % (hf_dir, id2label))

    class SequenceClassifier(nn.Module):
        """Word lookup, the DeBERTa-V3 encoder, pooler (dense + gelu on the first token), classifier."""

        def __init__(self):
            super().__init__()
            H = cfg["hidden_size"]
            self.word = nn.Embedding(cfg["vocab_size"], H, padding_idx=0)
            self.encoder = ps.Encoder(cfg, cfg["num_hidden_layers"])
            self.pooler = nn.Linear(H, H)
            self.classifier = nn.Linear(H, len(labels))
            self.rel_index = ps.RelativeIndex(cfg)

        def forward(self, ids):  # ids [B, T], no padding: the encoder skips the mask
            _, outs, _, _ = self.encoder(self.word.weight, ids, None, self.rel_index(ids.shape[1]))
            return self.classifier(F.gelu(self.pooler(outs[-1][:, 0])))

    m = SequenceClassifier()
    AD = cfg["num_attention_heads"] * cfg["attention_head_size"]
    names = {"deberta.embeddings.word_embeddings.weight": (m.word.weight, None),
             "pooler.dense.weight": (m.pooler.weight, None), "pooler.dense.bias": (m.pooler.bias, None),
             "classifier.weight": (m.classifier.weight, None), "classifier.bias": (m.classifier.bias, None)}
    e = m.encoder
    names["deberta.embeddings.LayerNorm.weight"] = (e.emb_ln.weight, None)
    names["deberta.embeddings.LayerNorm.bias"] = (e.emb_ln.bias, None)
    names["deberta.encoder.rel_embeddings.weight"] = (e.rel_embeddings, None)
    names["deberta.encoder.LayerNorm.weight"] = (e.rel_ln.weight, None)
    names["deberta.encoder.LayerNorm.bias"] = (e.rel_ln.bias, None)
    for n, L in enumerate(e.layers):
        p = "deberta.encoder.layer.%d." % n
        for k, name in enumerate(("query_proj", "key_proj", "value_proj")):
            sl = slice(k * AD, (k + 1) * AD)
            names[p + "attention.self.%s.weight" % name] = (L.attention.qkv.weight, sl)
            names[p + "attention.self.%s.bias" % name] = (L.attention.qkv.bias, sl)
        for mod, name in ((L.attn_out, "attention.output.dense"), (L.attn_ln, "attention.output.LayerNorm"),
                          (L.intermediate, "intermediate.dense"), (L.out, "output.dense"), (L.out_ln, "output.LayerNorm")):
            names[p + name + ".weight"] = (mod.weight, None)
            names[p + name + ".bias"] = (mod.bias, None)
    missing = sorted(set(names) - set(params))
    unused = sorted(set(params) - set(names) - {"deberta.embeddings.position_embeddings.weight"})
    if missing or unused:
        die("%s: tensors missing %s, not used %s" % (hf_dir, missing[:5], unused[:5]))
    with torch.no_grad():
        for name, (t, sl) in names.items():
            dst = t if sl is None else t[sl]
            a = params[name]
            if tuple(a.shape) != tuple(dst.shape):
                die("%s: tensor '%s' has shape %s, expected %s" % (hf_dir, name, a.shape, tuple(dst.shape)))
            dst.copy_(torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)))
    return m.eval(), labels, cfg


def read_ids(path):
    """input_ids [N, T] of a task file, refused when a sequence is not full length (a pad id in it)."""
    import h5py
    import numpy as np
    try:
        with h5py.File(path, "r") as f:
            ids = np.asarray(f["input_ids"], dtype=np.int64)
            pad = int(f.attrs["pad_id"])
    except (OSError, KeyError) as e:
        die("%s: %s" % (path, e))
    short = int((ids == pad).any(axis=1).sum())
    if short:
        die("%s: %d of %d sequences are padded (not %d tokens long): the benchmark runs full-length "
            "sequences only" % (path, short, ids.shape[0], ids.shape[1]))
    return ids


def cmd_torch(args):
    import torch
    import deberta_ref as dr
    tuned = dr.tune_malloc() if args.malloc == "tuned" else False
    torch.set_num_threads(args.threads)
    try:  # the kernel set of the OpenBLAS that torch's sgemm calls (Debian's torch links it)
        import ctypes
        corename = ctypes.CDLL("libopenblas.so.0").openblas_get_corename
        corename.restype = ctypes.c_char_p
        core = corename().decode()
    except (OSError, AttributeError):
        core = "?"
    t_load = time.perf_counter()
    model, labels, cfg = build_model(args.model)
    ids = torch.from_numpy(read_ids(args.ids))
    N, T = ids.shape
    if N % args.batch:
        die("%s: %d sequences, not a multiple of the batch %d" % (args.ids, N, args.batch))
    batches = [ids[s:s + args.batch].contiguous() for s in range(0, N, args.batch)]
    t_load = time.perf_counter() - t_load

    def one_pass():
        out = []
        for b in batches:
            p = torch.softmax(model(b), dim=-1)
            out.append((p, p.argmax(dim=-1)))
        return out

    times = []
    with torch.inference_mode():
        for r in range(args.warmup + args.reps):
            t0 = time.perf_counter()
            res = one_pass()
            dt = time.perf_counter() - t0
            if r >= args.warmup:
                times.append(dt)
    med = statistics.median(times)
    if args.out:
        probs = torch.cat([p for p, _ in res]).tolist()
        pred = torch.cat([a for _, a in res]).tolist()
        with open(args.out + ".tmp", "w") as f:
            json.dump({"labels": labels, "pred": [labels[a] for a in pred], "probs": probs}, f)
        os.replace(args.out + ".tmp", args.out)
    result = {"impl": "torch", "batch": args.batch, "seq": int(T), "records": int(N), "threads": args.threads,
              "warmup": args.warmup, "reps": args.reps, "s_median": med, "s_min": min(times), "s_max": max(times),
              "tokens_per_s": N * T / med, "examples_per_s": N / med, "load_s": t_load,
              "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""), "torch": torch.__version__,
              "torch_threads": torch.get_num_threads(), "malloc_tuned": tuned, "blas_core": core,
              "hidden": cfg["hidden_size"], "layers": cfg["num_hidden_layers"]}
    print("torch.nn forward (OpenBLAS core %s): %d x %d tokens in batches of %d, %d threads: median %.3f s (min %.3f, max %.3f) over %d "
          "passes after %d warm-up: %.0f tokens/s" % (core, N, T, args.batch, args.threads, med, min(times), max(times),
                                                      args.reps, args.warmup, N * T / med))
    print("RESULT " + json.dumps(result, sort_keys=True))
    return 0


# ------------------------------------------------------------------------------------------------
# check and summary
# ------------------------------------------------------------------------------------------------

def cmd_check(args):
    try:
        ours = [json.loads(l) for l in open(args.predict) if l.strip()]
        ref = json.load(open(args.torch))
    except (OSError, ValueError) as e:
        die(str(e))
    if len(ours) != len(ref["pred"]):
        die("%s has %d records, %s %d" % (args.predict, len(ours), args.torch, len(ref["pred"])))
    worst, bad = 0.0, []
    for i, (o, lab, pr) in enumerate(zip(ours, ref["pred"], ref["probs"])):
        if o.get("label") not in ref["labels"]:
            die("%s record %d: label %r not among the export's %s" % (args.predict, i + 1, o.get("label"), ref["labels"]))
        # predict's label against torch's, and predict's probability of it against torch's probability of it
        d = abs(o["prob"] - pr[ref["labels"].index(o["label"])])
        worst = max(worst, d)
        if not (d <= args.tol) or (o["label"] != lab and abs(max(pr) - o["prob"]) > args.tol):
            bad.append("record %d: predict %s %.6f, torch %s %.6f" % (i + 1, o["label"], o["prob"], lab, max(pr)))
    if bad:
        die("%d of %d records differ by more than %g: %s" % (len(bad), len(ours), args.tol, "; ".join(bad[:3])))
    print("check: predict and the torch forward agree on all %d records (same label, max |prob difference| %.2e <= %g)"
          % (len(ours), worst, args.tol))
    return 0


def cmd_summary(args):
    rows = {}
    for line in open(args.results):
        if line.startswith("RESULT "):
            _, who, rnd, js = line.rstrip("\n").split(" ", 3)
            rows.setdefault(who, {})[int(rnd)] = json.loads(js)
    if "deberta" not in rows:
        die("%s: no deberta RESULT line" % args.results)
    # deberta's figure of a round: from the mean of its two times (before and after the torch runs)
    first = [r["first_batch_s"] for who in ("deberta", "deberta_after") for r in rows.get(who, {}).values()
             if r.get("first_batch_s") is not None]
    drift = []
    for rnd, a in rows.pop("deberta_after", {}).items():
        b = rows["deberta"][rnd]
        drift.append(a["tokens_per_s"] / b["tokens_per_s"])
        for key in ("tokens_per_s", "warm_tokens_per_s"):
            if a.get(key) and b.get(key):
                b[key] = 2 / (1 / a[key] + 1 / b[key])
    sg = rows.pop("sgemm", {}).get(0, {})
    torch_who = sorted(w for w in rows if w.startswith("torch"))
    T = rows["deberta"][min(rows["deberta"])]["seq"]
    print("%-22s %12s %12s   %s" % ("implementation", "tokens/s", "examples/s", "per round (tokens/s)"))
    med = {}
    for who in ["deberta"] + torch_who:
        rs = rows[who]
        med[who] = statistics.median(r["tokens_per_s"] for r in rs.values())
        print("%-22s %12.0f %12.1f   %s" % (who, med[who], med[who] / T, " ".join("%.0f" % rs[k]["tokens_per_s"] for k in sorted(rs))))
    if drift:
        print("deberta after / before the torch runs of each round (the machine's drift): %s" % ", ".join("%.2f" % d for d in drift))
    res = {"deberta_tokens_per_s": round(med["deberta"], 1), "batch": rows["deberta"][min(rows["deberta"])]["batch"], "seq": T,
           "threads": rows["deberta"][min(rows["deberta"])]["threads"], "cpu": args.machine, "flags": args.flags.split(),
           "blas_core": args.blas_core, "torch_openblas_coretype": args.torch_core_fix,
           "gemm_kernel": sg.get("gemm_kernel", "?"), "sgemm_2048_gflops": sg.get("gemm_peak_gflops"),
           "deberta_omp_wait": sorted({r["omp_wait"] for r in rows["deberta"].values()})}
    if sg:
        print("same-run 2048^3 sgemm: %.1f GFLOP/s (%s; OpenBLAS core %s)" % (sg["gemm_peak_gflops"], sg["gemm_kernel"], sg["blas_core"]))
    # the ratios: predict's pass over all the batches (the first, which maps the tape's memory, included), and its
    # batches after the first (a warm forward, as torch's timed passes after their warm-up)
    # (one batch per pass: nothing after the first, and only the whole pass's ratio)
    warm = all(r.get("warm_tokens_per_s") for r in rows["deberta"].values())
    if warm:
        warm_med = statistics.median(r["warm_tokens_per_s"] for r in rows["deberta"].values())
        print("deberta after its first batch (%.3f-%.3f s): %.0f tokens/s (per round: %s)" % (
            min(first), max(first), warm_med, " ".join("%.0f" % rows["deberta"][k]["warm_tokens_per_s"] for k in sorted(rows["deberta"]))))
        res["deberta_warm_tokens_per_s"] = round(warm_med, 1)
    for key, name, tag in (("tokens_per_s", "deberta predict", ""), ("warm_tokens_per_s", "deberta predict after its first batch", "warm_"))[:2 if warm else 1]:
        per = []
        for rnd, d in sorted(rows["deberta"].items()):
            ts = [(rows[w][rnd]["tokens_per_s"], w) for w in torch_who if rnd in rows[w]]
            if ts:
                per.append((d[key] / max(ts)[0], max(ts)[1]))
        if per:
            ratio = statistics.median(p[0] for p in per)
            print("%s / the fastest torch run of each round: %.2fx (range %.2f-%.2f; rounds: %s)"
                  % (name, ratio, min(p[0] for p in per), max(p[0] for p in per), ", ".join("%.2fx vs %s" % p for p in per)))
            best = max(torch_who, key=lambda w: med[w])
            res.update({"torch_tokens_per_s": round(med[best], 1), "torch_fastest_setting": best, tag + "ratio": round(ratio, 3),
                        tag + "ratio_min": round(min(p[0] for p in per), 3), tag + "ratio_max": round(max(p[0] for p in per), 3),
                        "rounds": len(per)})
    print("RESULT " + json.dumps(res, sort_keys=True))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench_predict.py", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("input")
    p.add_argument("genre", nargs="+")
    p.add_argument("--records", type=int, required=True)
    p.add_argument("--words", type=int, default=200)
    p.add_argument("--out", required=True)
    p = sub.add_parser("torch")
    p.add_argument("--model", required=True)
    p.add_argument("--ids", required=True)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--malloc", choices=("tuned", "default"), default="tuned")
    p.add_argument("--out")
    p = sub.add_parser("check")
    p.add_argument("--predict", required=True)
    p.add_argument("--torch", required=True)
    p.add_argument("--tol", type=float, default=1e-4)
    p = sub.add_parser("summary")
    p.add_argument("results")
    p.add_argument("--machine", default="?")
    p.add_argument("--flags", default="")
    p.add_argument("--blas-core", default="?")
    p.add_argument("--torch-core-fix", default="none")
    args = ap.parse_args(argv)
    return {"input": cmd_input, "torch": cmd_torch, "check": cmd_check, "summary": cmd_summary}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
