#!/bin/sh
# bench-gemm-libs.sh [OPTIONS for bench_gemm_libs] — the model's linear-layer gemms under OpenBLAS, the own
# AVX-512 kernel, the project's gemm(), BLIS, oneDNN and libxsmm, side by side in one run (issue #35;
# docs/PERFORMANCE.md "Gemm libraries"; `build/bench_gemm_libs --help` for the options).
#
# The optional libraries come from Debian 12: libblis-openmp-dev (BLIS 0.9, OpenMP), libdnnl-dev (oneDNN
# 2.6) and libxsmm-dev (libxsmm 1.17).  As root the missing ones are installed with apt-get (NO_INSTALL=1
# skips that); a library whose package is absent is left out of the build and the run says so.  Nothing
# else in the project needs them.  BLIS registers itself for libblas.so.3 at a lower priority (80) than
# OpenBLAS (95), so programs that load libblas.so.3 (numpy, torch) keep OpenBLAS; the script checks that.
set -eu
BUILD=${BUILD:-build}
OPT_PKGS="libblis-openmp-dev libdnnl-dev libxsmm-dev"
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=""
for p in $OPT_PKGS; do have "$p" || missing="$missing $p"; done
if [ -n "$missing" ] && [ "${NO_INSTALL:-0}" != 1 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "bench-gemm-libs: installing:$missing"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends $missing || echo "bench-gemm-libs: some packages did not install; going on without them" >&2
    else
        echo "bench-gemm-libs: not root, so not installing:$missing (apt-get install -y$missing); going on without them" >&2
    fi
fi
blas3=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
case "$blas3" in *blis*) echo "bench-gemm-libs: warning: libblas.so.3 now points to BLIS ($blas3); numpy/torch would use it:" \
    "update-alternatives --set libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3" >&2 ;; esac

make -s BUILD="$BUILD" PRECISION=float "$BUILD/libdeberta.a"
BLASINC=/usr/include/x86_64-linux-gnu/openblas-openmp
FLAGS="" LIBS=""
# OpenBLAS first on the link line: BLIS also exports cblas_sgemm, and the OpenBLAS rows must be OpenBLAS's
# (the program prints which library each entry point came from).
if have libblis-openmp-dev; then
    BLISDIR=/usr/lib/x86_64-linux-gnu/blis-openmp
    FLAGS="$FLAGS -DHAVE_BLIS -idirafter /usr/include/x86_64-linux-gnu/blis-openmp"
    LIBS="$LIBS -L$BLISDIR -Wl,-rpath,$BLISDIR -lblis"
fi
if have libdnnl-dev; then FLAGS="$FLAGS -DHAVE_DNNL"; LIBS="$LIBS -ldnnl"; fi
if have libxsmm-dev; then FLAGS="$FLAGS -DHAVE_XSMM"; LIBS="$LIBS -lxsmm -lpthread -lrt -ldl"; fi
# The project's own libraries (OpenBLAS first among them) from the Makefile, then the optional ones.
DEB_LIBS=$(make -s print-ldlibs)
cc -O3 -march=native -std=c11 -D_GNU_SOURCE -fopenmp -I. -I$BLASINC $FLAGS train/bench/bench_gemm_libs.c "$BUILD/libdeberta.a" \
   -o "$BUILD/bench_gemm_libs" $DEB_LIBS $LIBS
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- 2>/dev/null || commit="$commit-dirty"
echo "# bench-gemm-libs: commit $commit," \
     "$(date -u +%Y-%m-%dT%H:%MZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
exec "$BUILD/bench_gemm_libs" "$@"
