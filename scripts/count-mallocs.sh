#!/bin/sh
# glibc malloc calls per training step, by gemm kernel (docs/PERFORMANCE.md "Gemm libraries").
# `deberta bench` counts the project's own allocations (step_allocs); this counts every malloc() call of
# the process, libraries included (calloc, realloc and aligned_alloc are not counted), with an LD_PRELOAD
# counter: the same bench at S1 and S2 steps, the difference divided by S2 - S1.
#   sh scripts/count-mallocs.sh [KERNELS]     KERNELS: of openblas own onednn  [openblas onednn]
set -eu
D=${DEBERTA:-build/deberta}
[ -x "$D" ] || { echo "error: count-mallocs: $D is not built (make)" >&2; exit 1; }
W=$(mktemp -d /tmp/count-mallocs-XXXXXX)
trap 'rm -rf "$W"' EXIT
cat > "$W/count.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
static atomic_long n;
static void *(*next_malloc)(size_t);
void *malloc(size_t s) {
    if (!next_malloc) next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    atomic_fetch_add(&n, 1);
    return next_malloc(s);
}
__attribute__((destructor)) static void report(void) { fprintf(stderr, "MALLOCS %ld\n", (long)n); }
EOF
gcc -O2 -shared -fPIC "$W/count.c" -o "$W/count.so" -ldl
S1=2 S2=6
count() { DEBERTA_GEMM=$1 LD_PRELOAD=$W/count.so "$D" bench --preset tiny --steps "$2" --warmup 1 --profile 0 \
    --threads 2 --no-sgemm 2>&1 >/dev/null | sed -n 's/^MALLOCS //p'; }
for k in ${1:-openblas onednn}; do
    a=$(count "$k" $S1) b=$(count "$k" $S2)
    echo "$k: $(( (b - a) / (S2 - S1) )) mallocs per tiny step (bench, 2 threads; $a after $S1 steps, $b after $S2)"
done
