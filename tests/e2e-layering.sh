#!/bin/sh
# The rooms' dependency order (docs/ARCHITECTURE.md, "Dependencies"): every `#include "..."` of a .c or
# .h file under autograd/, model/, data/ and train/ names a file of its own room or of a room on a
# lower row of the table below; rooms on one row do not include each other. A file in a directory the
# table does not name, or an include of one, fails too (a new room gets its row here first).
# The one exception, EXCEPT below: train/eval/ (the evaluations, which the loop calls) uses two of the
# loop room's services, train/dist.h (the ranks' sums) and train/metrics.h (the metrics.jsonl record).
# Then the check is shown to fail on planted bad includes in a copy of the sources (a lower room
# including a higher one, a row's rooms including each other, an undeclared room, train/eval/
# including a train/ header outside the exception, an exception no include uses), so it cannot pass
# by checking nothing.
# Exit 0 pass, 1 fail.
. "$(dirname "$0")/lib-e2e.sh"
export LC_ALL=C
e2e_tmpdir T deberta-e2e-layering
bad=0
no() { echo "FAIL: $*"; bad=1; } # a failed check; the next ones still run

# row room: a room includes only its own room and rooms of a lower row.
ROWS="
0 autograd/base
1 autograd
2 autograd/gradcheck
3 model
3 data
4 train/eval
5 train
6 train/interop
6 train/infer
6 train/parity
7 train/bench
8 train/cli
"
# room file: includes allowed beside the rows
EXCEPT="
train/eval train/dist.h
train/eval train/metrics.h
"

# layering DIR: one line per include that breaks the order (FILE:LINE: ...), status 1 if any; the
# number of includes checked in $T/edges
layering() {
    (cd "$1" && find autograd model data train -type f \( -name '*.c' -o -name '*.h' \) | sort |
        xargs grep -n -H -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' /dev/null) |
    awk -v rows="$ROWS" -v except="$EXCEPT" -v edges="$T/edges" '
        BEGIN { n = split(rows, r, "\n")
                for (i = 1; i <= n; i++) if (split(r[i], f, " ") == 2) row[f[2]] = f[1]
                n = split(except, r, "\n")
                for (i = 1; i <= n; i++) if (split(r[i], f, " ") == 2) ok[f[1] " " f[2]] = 1 }
        function dir(p) { if (p !~ /\//) return "."; sub(/\/[^\/]*$/, "", p); return p }
        { i = index($0, ":"); file = substr($0, 1, i - 1); rest = substr($0, i + 1)
          i = index(rest, ":"); line = substr(rest, 1, i - 1)
          inc = rest; sub(/^[^"]*"/, "", inc); sub(/".*$/, "", inc)
          from = dir(file); to = dir(inc); checked++
          if (!(from in row)) { printf "%s:%s: %s is no room of the table (give it a row)\n", file, line, from; st = 1; next }
          if (!(to in row)) { printf "%s:%s: includes \"%s\" of %s, no room of the table\n", file, line, inc, to; st = 1; next }
          if (from == to) next
          if ((from " " inc) in ok) { used[from " " inc] = 1; next }
          if (row[to] > row[from]) { printf "%s:%s: %s (row %d) includes \"%s\" of the higher room %s (row %d)\n", file, line, from, row[from], inc, to, row[to]; st = 1 }
          else if (row[to] == row[from]) { printf "%s:%s: %s includes \"%s\" of %s, a room of its own row %d\n", file, line, from, inc, to, row[to]; st = 1 } }
        END { for (k in ok) if (!(k in used)) { printf "EXCEPT: \"%s\" is used by no include (drop it)\n", k; st = 1 }
              print checked + 0 > edges; exit st }'
}

# ---- the sources as they are ----
if layering . > "$T/out"; then
    n=$(cat "$T/edges")
    [ "$n" -gt 300 ] && ok "$n includes of autograd/ model/ data/ train/ keep the rooms' order" ||
        no "only $n includes found (the scan finds nothing?)"
else
    cat "$T/out"; no "includes against the rooms' order (above)"
fi

# ---- each rule fails on a planted bad include, in a copy ----
# plant NAME FILE LINE PATTERN: copy the sources, append LINE to FILE, expect a failure matching PATTERN
plant() {
    rm -rf "$T/src" && mkdir "$T/src" && cp -R autograd model data train "$T/src/" || { no "copy the sources"; return; }
    mkdir -p "$T/src/$(dirname "$2")" && echo "$3" >> "$T/src/$2"
    if layering "$T/src" > "$T/out"; then no "$1: passes"
    elif grep -q -- "$4" "$T/out"; then ok "$1 fails: $(head -n 1 "$T/out")"
    else cat "$T/out"; no "$1: fails, but not with \"$4\""; fi
}
plant "model/ including train/ (lower includes higher)" model/encoder.h '#include "train/step.h"' \
    '^model/encoder.h:[0-9]*: model (row 3) includes "train/step.h" of the higher room train (row 5)'
plant "the base including the engine" autograd/base/util.c '#include "autograd/tensor.h"' \
    '^autograd/base/util.c:[0-9]*: autograd/base (row 0) includes "autograd/tensor.h"'
plant "data/ including model/ (one row)" data/loader.c '#include "model/electra.h"' \
    '^data/loader.c:[0-9]*: data includes "model/electra.h" of model, a room of its own row 3'
plant "train/ including train/cli/" train/pretrain.c '#include "train/cli/cli.h"' \
    'train/pretrain.c:[0-9]*: train (row 5) includes "train/cli/cli.h" of the higher room train/cli'
plant "train/ including train/infer/" train/finetune.c '#include "train/infer/predict.h"' \
    'train/finetune.c:[0-9]*: train (row 5) includes "train/infer/predict.h" of the higher room train/infer (row 6)'
plant "train/infer/ including train/parity/ (one row)" train/infer/fill_mask.c '#include "train/parity/dump.h"' \
    'includes "train/parity/dump.h" of train/parity, a room of its own row 6'
plant "train/eval/ including the loop beyond the exception" train/eval/evaluate.c '#include "train/pretrain.h"' \
    'train/eval/evaluate.c:[0-9]*: train/eval (row 4) includes "train/pretrain.h" of the higher room train (row 5)'
plant "train/ including train/interop/" train/checkpoint.c '#include "train/interop/safetensors.h"' \
    'train/checkpoint.c:[0-9]*: train (row 5) includes "train/interop/safetensors.h" of the higher room train/interop (row 6)'
plant "train/parity/ including train/interop/ (one row)" train/parity/dump.c '#include "train/interop/hf_config.h"' \
    'includes "train/interop/hf_config.h" of train/interop, a room of its own row 6'
plant "a directory without a row" train/newroom/x.c '#include "autograd/base/util.h"' \
    '^train/newroom/x.c:[0-9]*: train/newroom is no room of the table'
plant "an include of no room" train/run.c '#include "nowhere/x.h"' \
    '^train/run.c:[0-9]*: includes "nowhere/x.h" of nowhere, no room of the table'
# an exception that no include needs any more fails too (so the list only shrinks)
rm -rf "$T/src" && mkdir "$T/src" && cp -R autograd model data train "$T/src/" &&
    sed -i '/#include "train\/metrics.h"/d' "$T/src"/train/eval/*.[ch] || no "copy the sources"
if layering "$T/src" > "$T/out"; then no "an unused exception: passes"
elif grep -q '^EXCEPT: "train/eval train/metrics.h" is used by no include' "$T/out"; then ok "an unused exception fails: $(head -n 1 "$T/out")"
else cat "$T/out"; no "an unused exception: fails, but not for the exception"; fi

[ $bad -eq 0 ] && echo "e2e-layering: pass" || echo "e2e-layering: FAIL"
exit $bad
