#!/bin/sh
# Installs the Debian packages deberta.c needs to build, test and run its demo.
# As root it runs apt-get; otherwise it prints the exact command to run.
set -e
PKGS="build-essential pkg-config libopenblas-openmp-dev libhdf5-dev hdf5-tools libcmocka-dev \
python3-torch python3-h5py python3-numpy python3-sentencepiece gnuplot-nox libopenmpi-dev openmpi-bin \
libjansson-dev libcsv-dev libdnnl-dev zlib1g-dev"
# `make fuzz` (scripts/install-deps.sh --fuzz): clang with libFuzzer and its sanitizer runtimes only
if [ "${1:-}" = "--fuzz" ]; then PKGS="clang libclang-rt-14-dev"; fi

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# npm (only scripts/fetch-corpus.sh needs it): any npm on PATH will do — a Node.js build that ships
# its own npm conflicts with Debian's npm package, so the package is only asked for when none exists.
[ "${1:-}" = "--fuzz" ] || command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
    echo "install-deps: installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing
else
    echo "install-deps: missing packages:$missing" >&2
    echo "install-deps: run as root:  apt-get update && apt-get install -y$missing" >&2
    exit 1
fi
