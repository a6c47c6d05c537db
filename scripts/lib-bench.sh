# lib-bench.sh — sourced by the benchmark scripts that compare deberta.c with PyTorch (bench-vs-torch.sh,
# bench-predict.sh): the machine a measurement ran on, and the OpenBLAS kernel set PyTorch gets.
#
# bench_torch_coretype BIN: sets CORE, the OpenBLAS kernel set BIN runs ('BLAS' of `deberta --version`),
# OWN, OpenBLAS's own choice on this CPU, and TCORE, the OPENBLAS_CORETYPE every PyTorch run gets (empty:
# OpenBLAS's own choice).  Where OpenBLAS does not know the CPU it falls back to a set without AVX2
# (Prescott and the like: OpenBLAS 0.3.21 on an Intel family 6 model 207); BIN then runs Haswell and says
# so ("BLAS Haswell set by deberta: OpenBLAS chose Prescott": train/cli/omp_policy.c decides, by
# gemm_blas_core_fix's list), and PyTorch's matmuls would run on the fallback (Debian's torch calls the
# system BLAS), so TCORE is SkylakeX (CPUs with avx512f) or Haswell: the fastest kernels OpenBLAS has for
# the CPU, so that the yardstick stays a fast PyTorch.  TORCH_CORETYPE=X forces a kernel set for the
# PyTorch runs, TORCH_CORETYPE=none leaves OpenBLAS's choice; an OPENBLAS_CORETYPE of the environment is
# left to both programs.
bench_torch_coretype() {
    _v=$("$1" --version)
    CORE=$(echo "$_v" | sed -n 's/.*, BLAS \([A-Za-z0-9_]*\).*/\1/p')
    OWN=$(echo "$_v" | sed -n 's/.*set by deberta: OpenBLAS chose \([A-Za-z0-9_]*\).*/\1/p')
    TCORE=${TORCH_CORETYPE:-}
    if [ -z "$TCORE" ] && [ -z "${OPENBLAS_CORETYPE:-}" ] && [ -n "$OWN" ]; then
        if grep -qw avx512f /proc/cpuinfo; then TCORE=SkylakeX; else TCORE=Haswell; fi
    fi
    OWN=${OWN:-$CORE}
    [ "$TCORE" != none ] || TCORE=
}

# bench_machine: sets CPU (model name), CPU_FAMILY, CPU_MODEL (lscpu's "CPU family" and "Model", the
# numbers that tell CPU generations apart when the model name does not) and FLAGS (the vector flags among
# avx avx2 fma avx512f avx512bw avx512vl avx512_bf16 amx_tile), and prints '#' lines: the date, cores,
# CPU and flags; the OPENBLAS_* variables of the environment (both programs) with CORE; TCORE when set
# (call bench_torch_coretype first).
bench_machine() {
    CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
    CPU_FAMILY=$(sed -n 's/^cpu family[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
    CPU_MODEL=$(sed -n 's/^model[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
    FLAGS=$(grep -m 1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx|avx2|fma|avx512f|avx512bw|avx512vl|avx512_bf16|amx_tile)$' | tr '\n' ' ')
    echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, $CPU (family $CPU_FAMILY model $CPU_MODEL), flags: $FLAGS"
    echo "# OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-unset} OPENBLAS_L2_SIZE=${OPENBLAS_L2_SIZE:-unset} (both programs; deberta.c reports the kernel set it runs as 'BLAS core': ${CORE:-?})"
    if [ -n "${TCORE:-}" ]; then echo "# OpenBLAS's own choice here is $OWN: the PyTorch runs get OPENBLAS_CORETYPE=$TCORE"; fi
}
