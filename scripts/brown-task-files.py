#!/usr/bin/python3
"""brown-task-files.py BROWN_TAGGED_DIR OUTDIR — the Brown tasks as files of the common formats, for
`deberta prep-task --format` (docs/FORMATS.md "Brown tasks"):

  OUTDIR/pos-{train,dev,test}.conll   one word per line, "word<TAB>universal tag" (`` and '' written
                                      as "), a blank line after each sentence, "-DOCSTART-" before each text
  OUTDIR/genre-{train,dev,test}.jsonl one line per text: {"name": "ca01", "text": its plain form,
                                      "label": its genre}

The split is the fixed one of data/brown.h (a text number ending in 2 is dev, in 3 test); the tag
mapping is the table of docs/FORMATS.md (data/brown.c's; tests/e2e-brown-files.sh checks that both
give the same tag to every word).  The plain text joins words as scripts/fetch-corpus.sh does.
"""
import json, os, re, sys

GENRES = dict(zip("abcdefghjklmnpr", ["press-reportage", "press-editorial", "press-reviews", "religion", "skill-and-hobbies",
                                      "popular-lore", "belles-lettres", "government", "learned", "fiction-general",
                                      "fiction-mystery", "fiction-science", "fiction-adventure", "fiction-romance", "humor"]))
TABLE = {
    "ADJ": "jj jjr jjs jjt od", "ADP": "in", "ADV": "rb rbr rbt rn ql qlp wql wrb *", "CONJ": "cc cs",
    "DET": "abl abn abx ap at dt dti dts dtx wdt ex", "NOUN": "nn nns np nps nr nrs", "NUM": "cd",
    "PRON": "pn pp$ pp$$ ppl ppls ppo pps ppss wp$ wpo wps", "PRT": "rp to",
    "VERB": "vb vbd vbg vbn vbz md be bed bedz beg bem ben ber bez do dod doz hv hvd hvg hvn hvz",
    ".": ". , : ( ) -- ' '' `` `", "X": "nil uh",
}
BASE = {t: u for u, ts in TABLE.items() for t in ts.split()}


def upos(tag):
    t = tag.lower()
    if t.startswith("fw-"):
        return "X"
    if "+" in t[1:]:
        t = t[: t.index("+", 1)]
    while len(t) > 3 and t[-3:] in ("-hl", "-tl", "-nc"):
        t = t[:-3]
    if t in BASE:
        return BASE[t]
    if len(t) > 1 and t[-1] in "*$" and t[:-1] in BASE:
        return BASE[t[:-1]]
    sys.exit("brown-task-files: unknown tag %r" % tag)


def detok(words):  # as scripts/fetch-corpus.sh
    s = " ".join(words)
    s = s.replace("``", '"').replace("''", '"')
    s = re.sub(r' ([,.;:!?%)\]])', r'\1', s)
    s = re.sub(r'([(\[$]) ', r'\1', s)
    s = re.sub(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", s)
    s = re.sub(r'" (.*?) "', r'"\1"', s)
    return s


def main():
    src, out = sys.argv[1:3]
    os.makedirs(out, exist_ok=True)
    names = sorted(n for n in os.listdir(src) if re.fullmatch(r"c[abcdefghjklmnpr][0-9][0-9]", n))
    if not names:
        sys.exit("brown-task-files: no tagged Brown texts in %s" % src)
    pos = {s: [] for s in ("train", "dev", "test")}
    genre = {s: [] for s in ("train", "dev", "test")}
    for n in names:
        split = "dev" if n[3] == "2" else "test" if n[3] == "3" else "train"
        sents = []
        for line in open(os.path.join(src, n), encoding="utf-8"):
            toks = line.split()
            if toks:
                sents.append([(t[: t.rindex("/")], t[t.rindex("/") + 1:]) for t in toks])
        quote = lambda w: '"' if w in ("``", "''") else w  # as data/brown.c reads them
        pos[split].append("-DOCSTART-\tO\n\n" + "".join("".join("%s\t%s\n" % (quote(w), upos(t)) for w, t in s) + "\n" for s in sents))
        words = [w for s in sents for w, _ in s]
        genre[split].append(json.dumps({"name": n, "text": detok(words), "label": GENRES[n[1]]}, ensure_ascii=False) + "\n")
    for s in pos:
        for kind, parts, ext in (("pos", pos[s], "conll"), ("genre", genre[s], "jsonl")):
            path = os.path.join(out, "%s-%s.%s" % (kind, s, ext))
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                f.write("".join(parts))
            os.replace(path + ".tmp", path)
    print("brown-task-files: %d texts -> %s/pos-{train,dev,test}.conll, genre-{train,dev,test}.jsonl" % (len(names), out))


if __name__ == "__main__":
    main()
