#!/usr/bin/python3
"""check-task-files.py — an independent check of the task files `deberta prep-task --format` wrote
(tests/e2e-task-formats.sh).  It reads the input file with Python's own csv/json modules, encodes
every text with `deberta encode` (the tokenizer alone, not the task builder), rebuilds each example
as docs/FORMATS.md "Task files" says — [CLS] a [SEP] (b [SEP]), Hugging Face's longest_first
truncation, the tag on each word's first sub-token and -100 elsewhere, word ids, windows at word
boundaries, the label set sorted from train, the seeded split's sizes — and compares it with the
HDF5 datasets.  Exit 1 with a message on the first difference.

usage: check-task-files.py DEBERTA TOKENIZER TASKDIR FORMAT TRAIN [DEV|- [TEST|-]] key=value...
  keys: text, pair, label, regression=1, token_col, tag_col (1-based), tokens, tags
"""
import csv, io, json, subprocess, sys
import h5py, numpy as np

deb, tok, taskdir, fmt = sys.argv[1:5]
rest = sys.argv[6:]
files = [sys.argv[5]]
while len(files) < 3 and rest and "=" not in rest[0]:
    a = rest.pop(0)
    files.append(None if a == "-" else a)
files += [None] * (3 - len(files))
opt = dict(a.split("=", 1) for a in rest)
tagging = fmt == "conll" or (fmt == "jsonl" and "text" not in opt)
regression = opt.get("regression") == "1"
pair = "pair" in opt


def fail(msg):
    sys.exit("check-task-files: " + msg)


def encode(texts):
    """ids of each text, via `deberta encode` (one text per line)"""
    if not texts:
        return []
    out = subprocess.run([deb, "encode", "--tokenizer", tok], input="\n".join(texts) + "\n", capture_output=True, text=True, check=True).stdout
    lines = out.split("\n")[: len(texts)]
    return [[int(x) for x in l.split()] for l in lines]


def records(path):
    """(line, text, pair, label) or (line, words, tags) per record, read independently"""
    raw = open(path, "rb").read().decode("utf-8")
    if raw.startswith("\ufeff"):
        raw = raw[1:]
    recs = []
    if fmt == "jsonl":
        for no, l in enumerate(raw.split("\n"), 1):
            if not l.strip():
                continue
            o = json.loads(l)
            if tagging:
                recs.append((no, o[opt.get("tokens", "tokens")], [str(t) for t in o[opt.get("tags", "tags")]]))
            else:
                lab = o[opt.get("label", "label")]
                lab = repr(lab) if isinstance(lab, float) else str(lab)
                recs.append((no, o[opt["text"]], o.get(opt.get("pair", "")), lab))
    elif fmt in ("csv", "tsv"):
        rows = csv.reader(io.StringIO(raw, newline=""), delimiter="," if fmt == "csv" else "\t", quoting=csv.QUOTE_MINIMAL if fmt == "csv" else csv.QUOTE_NONE)
        # line numbers: csv.reader counts physical lines read so far
        start = 1
        head = None
        for r in rows:
            line = start
            start = rows.line_num + 1
            if not r:
                continue
            if head is None:
                head = r
                continue
            d = dict(zip(head, r))
            recs.append((line, d[opt["text"]], d.get(opt.get("pair", "")), d[opt.get("label", "label")]))
    else:  # conll
        tc, gc = int(opt.get("token_col", 1)), int(opt.get("tag_col", 0))
        words, tags, first = [], [], 0
        for no, l in enumerate(raw.split("\n"), 1):
            c = l.split()
            if not c or c[0] == "-DOCSTART-":
                if words:
                    recs.append((first, words, tags))
                words, tags = [], []
                continue
            if not words:
                first = no
            words.append(c[tc - 1])
            tags.append(c[gc - 1] if gc else c[-1])
        if words:
            recs.append((first, words, tags))
    return recs


def load(split):
    with h5py.File("%s/%s.h5" % (taskdir, split), "r") as f:
        a = dict(f.attrs)
        d = {k: f[k][()] for k in f.keys()}
    return {k: (v.decode() if isinstance(v, bytes) else v) for k, v in a.items()}, d


recs = [records(p) if p else None for p in files]
attrs, data = {}, {}
for s in ("train", "dev", "test"):
    attrs[s], data[s] = load(s)
a0 = attrs["train"]
T, cls, sep, pad = int(a0["seq_len"]), int(a0["cls_id"]), int(a0["sep_id"]), int(a0["pad_id"])
kind = "tagging" if tagging else "regression" if regression else "classification"
if a0["kind"] != kind:
    fail("kind is %s, expected %s" % (a0["kind"], kind))

# the label set: sorted from train (numerically when every label is an integer)
if not regression:
    labs = sorted({t for r in recs[0] for t in (r[2] if tagging else [r[3]])})
    def isint(s):
        return s.lstrip("+-").isdigit()
    if all(isint(l) for l in labs):
        labs.sort(key=int)
    names = a0["label_names"].split("\n")
    if "labels_order" in opt:
        labs = opt["labels_order"].split(",")
    if names != labs:
        fail("label_names %s, expected %s" % (names, labs))
    lid = {l: i for i, l in enumerate(labs)}

# the split: record indices of each split, from the `example` dataset
n0 = len(recs[0])
used = []
for k, s in enumerate(("train", "dev", "test")):
    ex = sorted(set(int(x) for x in data[s]["example"]))
    if k == 0 or files[k] is None:
        used += ex
        if k:
            frac = float(attrs[s]["split_dev_fraction" if k == 1 else "split_test_fraction"])
            if len(ex) != round(n0 * frac):
                fail("%s has %d records of train's %d, expected round(%d * %g)" % (s, len(ex), n0, n0, frac))
    elif ex != list(range(len(recs[k]))):
        fail("%s does not hold every record of its file once" % s)
if sorted(used) != list(range(n0)):
    fail("train/dev/test drawn from train are not a partition of its %d records" % n0)

checked = 0
for k, s in enumerate(("train", "dev", "test")):
    src = recs[k] if files[k] else recs[0]
    ids, lab, exs, lines = data[s]["input_ids"], data[s]["labels"], data[s]["example"], data[s]["line"]
    wid = data[s].get("word_ids")
    rows_of = {}
    for n, e in enumerate(exs):
        rows_of.setdefault(int(e), []).append(n)
    for e, rows in sorted(rows_of.items()):
        r = src[e]
        if any(int(lines[n]) != r[0] for n in rows):
            fail("%s example %d: line %s, expected %d" % (s, e, [int(lines[n]) for n in rows], r[0]))
        if not tagging:
            if len(rows) != 1:
                fail("%s: record %d gives %d examples" % (s, e, len(rows)))
            n = rows[0]
            if regression:
                if not abs(float(lab[n]) - np.float32(float(r[3]))) <= 0:
                    fail("%s line %d: label %r, expected %r" % (s, r[0], float(lab[n]), r[3]))
            elif int(lab[n]) != lid[r[3]]:
                fail("%s line %d: label %d, expected %d (%s)" % (s, r[0], lab[n], lid[r[3]], r[3]))
            if "\n" in r[1] or (pair and "\n" in r[2]):
                continue  # `deberta encode` reads lines; the label is checked, the ids are not
            a = encode([r[1]])[0]
            b = encode([r[2]])[0] if pair else []
            la, lb = len(a), len(b)
            if not pair:
                la = min(la, T - 2)
            else:
                while la + lb > T - 3:  # longest_first: the longer side loses a token, the second on ties
                    if la > lb:
                        la -= 1
                    else:
                        lb -= 1
            want = [cls] + a[:la] + [sep] + (b[:lb] + [sep] if pair else [])
            want += [pad] * (T - len(want))
            if list(ids[n]) != want:
                fail("%s line %d: input_ids\n  %s\nexpected\n  %s" % (s, r[0], list(ids[n]), want))
            checked += 1
            continue
        words, tags = r[1], r[2]
        enc = encode([(" " if i else "") + w for i, w in enumerate(words)])
        toks, tl, tw = [], [], []
        for i, (w, ws) in enumerate(zip(enc, words)):
            toks += w
            tl += [lid[tags[i]]] + [-100] * (len(w) - 1)
            tw += [i] * len(w)
        # windows: whole words while they fit in T - 2
        wins, p0 = [], 0
        while p0 < len(toks):
            p1 = p0
            while p1 < len(toks):
                e2 = p1
                while e2 < len(toks) and tw[e2] == tw[p1]:
                    e2 += 1
                if e2 - p0 > T - 2:
                    break
                p1 = e2
            nxt = p1
            if p1 == p0:
                while nxt < len(toks) and tw[nxt] == tw[p0]:
                    nxt += 1
                p1 = p0 + T - 2
            wins.append((p0, p1))
            p0 = nxt
        if len(wins) != len(rows):
            fail("%s line %d: %d windows, expected %d" % (s, r[0], len(rows), len(wins)))
        for (p0, p1), n in zip(wins, rows):
            m = p1 - p0
            want = [cls] + toks[p0:p1] + [sep] + [pad] * (T - m - 2)
            wl = [-100] + tl[p0:p1] + [-100] * (T - m - 1)
            ww = [-1] + tw[p0:p1] + [-1] * (T - m - 1)
            if list(ids[n]) != want or list(lab[n]) != wl or list(wid[n]) != ww:
                fail("%s line %d window %d:\n  ids %s\n  labels %s\n  word_ids %s\nexpected\n  %s\n  %s\n  %s" %
                     (s, r[0], rows.index(n), list(ids[n]), list(lab[n]), list(wid[n]), want, wl, ww))
            checked += 1
print("check-task-files: %s %s: %d examples match their input records" % (taskdir, kind, checked))
