/* gemm.h — the one entry for the large products of the model (linear layers, the shared-weight
 * matmuls, the attention op's per-head products): C = alpha·op(A)·op(B) + beta·C, row-major,
 * op(X) = X or X^T.
 *
 * Called outside a parallel region with more than one OpenMP thread, the product is cut into one
 * contiguous block of C's rows per thread (of its columns when C has too few rows), and each thread
 * makes one single-threaded call on its block, which measured faster than the BLAS library splitting
 * one call itself at the model's shapes (docs/PERFORMANCE.md).
 * Each element of C is computed by one call over the whole inner dimension, so the result is
 * bitwise repeatable for a given thread count; it may differ in the last bit between thread counts
 * (as the library's own threading does).  Inside a parallel region, with one thread or for a small
 * product it is one single-threaded call; under oneDNN one thread makes the two calls two threads make.
 *
 * Each single-threaded call runs one product kernel, chosen once per process: in the float build on a
 * CPU that executes AVX-512 (F, BW, VL) and a build with oneDNN, oneDNN's matmul primitive
 * (autograd/gemm_dnnl.h; the same bits at 1 and 2 threads), where products under 2^21 multiply-adds
 * (the attention op's per-head ones at T 128) go to the own kernel when OpenBLAS lacks AVX-512, else to
 * BLAS; else, where the CPU has
 * AVX-512F and OpenBLAS runs a kernel set without it, the project's own kernel
 * (autograd/sgemm_avx512.h), whose results do not depend on the split at all; else OpenBLAS.
 * DEBERTA_GEMM=openblas|own|onednn overrides the choice (for measurements); any other value is fatal.
 */
#ifndef DEBERTA_GEMM_H
#define DEBERTA_GEMM_H
#include "autograd/tensor.h"

/* How gemm cuts an M×N×K product among nt threads: GEMM_ONE_CALL, GEMM_BY_ROWS (of C) or GEMM_BY_COLS. */
enum { GEMM_ONE_CALL, GEMM_BY_ROWS, GEMM_BY_COLS };
int gemm_split(int M, int N, int K, int nt);

/* "oneDNN", "own AVX-512" or "OpenBLAS": the kernel this process's gemm runs (benchmark and log lines). */
const char *gemm_kernel_name(void);

/* The OPENBLAS_CORETYPE build/deberta sets for itself (train/cli/omp_policy.c re-executes with it) when
 * OpenBLAS, not knowing the CPU, fell back to a kernel set without AVX2 (Prescott and the like: OpenBLAS
 * 0.3.21 on CPUs newer than it) on a CPU that executes AVX2 and FMA: "Haswell", its AVX2 kernels, the set
 * it runs on such CPUs when it knows them.  NULL: OpenBLAS's choice stands.  core is
 * openblas_get_corename()'s answer, avx2_fma whether the CPU executes both. */
const char *gemm_blas_core_fix(const char *core, int avx2_fma);

/* The one place a thread count is set: OpenMP's (every parallel loop, gemm's split) and OpenBLAS's.
 * n <= 0 leaves both as they are (OMP_NUM_THREADS, or all cores). */
void threads_set(int n);

void gemm(int ta, int tb, int M, int N, int K, real alpha, const real *A, int lda, const real *B, int ldb, real beta,
          real *C, int ldc);

/* The linear layer's forward, Y[M,N] = X[M,K]·W[N,K]^T + bias[N] (bias NULL: none), then GELU (erf form)
 * when gelu, cut and routed as gemm cuts and routes that product.  Under oneDNN the bias and the GELU are
 * added in the product's output pass (its gelu_erf with its own erf, so the last bits differ from rmath.h's
 * gelu1; tests/test_gemm.c holds both paths within 2e-5 of the exact value); elsewhere Y's rows
 * start as the bias, the product is added and gelu1 applied, block by block on the thread that wrote it. */
void gemm_linear(int M, int N, int K, const real *X, int ldx, const real *W, int ldw, const real *bias, int gelu, real *Y,
                 int ldy);

#endif
