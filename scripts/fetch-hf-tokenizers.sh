#!/bin/sh
# fetch-hf-tokenizers.sh [DIR] — installs Hugging Face tokenizers' Node binding (npm "tokenizers", which
# ships the compiled Rust library) into DIR (default build/npm), for tests/e2e-hf-tokenizer.sh, which
# checks that our exported tokenizer.json encodes and decodes exactly as our own tokenizer.
set -eu
case "${1:-}" in
-h | --help) sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
-*) echo "error: fetch-hf-tokenizers: unknown option '$1' (usage: scripts/fetch-hf-tokenizers.sh [DIR])" >&2; exit 2 ;;
esac
[ $# -le 1 ] || { echo "error: fetch-hf-tokenizers: one directory at most (usage: scripts/fetch-hf-tokenizers.sh [DIR])" >&2; exit 2; }
DIR=${1:-build/npm}
if [ -d "$DIR/node_modules/tokenizers" ]; then echo "fetch-hf-tokenizers: already in $DIR"; exit 0; fi
command -v npm >/dev/null 2>&1 || { echo "error: fetch-hf-tokenizers: npm not found (apt-get install npm)" >&2; exit 1; }
mkdir -p "$DIR"
npm install --silent --no-audit --no-fund --prefix "$DIR" tokenizers@0.23.2
echo "fetch-hf-tokenizers: installed into $DIR"
