/* gemm_dnnl.h — oneDNN's matmul primitive as one single-threaded product of gemm (autograd/gemm.h).
 *
 * Float build only, and only when the build found oneDNN (libdnnl-dev: HAVE_DNNL).  Each OpenMP thread
 * number keeps its own primitives, one per product shape (transposes, M, N, K, leading dimensions,
 * beta, bias, GELU), made at the shape's first call (the first step) and kept for the process; the operands'
 * addresses are set at every call.  A shape oneDNN would run with its reference implementation, or
 * one that no longer fits the thread's table, is refused and gemm calls BLAS for it. */
#ifndef DEBERTA_GEMM_DNNL_H
#define DEBERTA_GEMM_DNNL_H

/* 1 when oneDNN is compiled in and its CPU engine started (decided once per process). */
int gemm_dnnl_available(void);

/* C = op(A)·op(B) + beta·C (row-major, alpha 1, beta 0 or 1) on the calling thread alone, with bias [N]
 * added to every row when bias != NULL, then GELU (erf form, oneDNN's own erf) when gelu; 0 when it
 * declined (the caller computes the product another way), 1 when C holds the product. */
int gemm_dnnl(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float beta,
              float *C, int ldc, const float *bias, int gelu);

#endif
