/* sgemm_avx512.h — the project's own single-threaded sgemm for CPUs that execute AVX-512.
 *
 * Row-major C = alpha·op(A)·op(B) + beta·C with op(X) = X or X^T, the contract of cblas_sgemm; beta 0
 * never reads C.  gemm.c calls it for each thread's block in the float build when the CPU executes
 * AVX-512F but OpenBLAS runs a kernel set without it (an environment that forces OPENBLAS_CORETYPE=
 * Haswell, or an OpenBLAS that does not know the CPU), checked once at run time: for every product
 * when the build has no oneDNN, else for the products oneDNN does not take (under 2^21 multiply-adds,
 * alpha != 1); DEBERTA_GEMM=own forces it for all.  Where OpenBLAS runs its own AVX-512 kernels
 * (SkylakeX, Cooperlake, SapphireRapids) they are used: they measured faster than this kernel at
 * the model's shapes (docs/PERFORMANCE.md "Own AVX-512 kernel").  The file builds with any x86-64
 * gcc or clang; the AVX-512 code sits behind target attributes.
 */
#ifndef DEBERTA_SGEMM_AVX512_H
#define DEBERTA_SGEMM_AVX512_H

/* 1 when this CPU executes AVX-512F and OpenBLAS's kernel set lacks it. */
int sgemm_avx512_available(void);

/* Computes the product and returns 1, or returns 0 having done nothing (an empty or K = 0 product, or
 * a thread number beyond the packing buffers'): the caller then calls the BLAS library. */
int sgemm_avx512(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                 float beta, float *C, int ldc);

#endif
