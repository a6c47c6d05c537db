/* bench_ops.c — `deberta bench ops`: GFLOP/s of op_matmul, forward and backward separately, for
 * the model's shapes and every transpose variant, next to raw cblas gemm calls doing the same
 * products, measured in the same run (interleaved, median of repeated runs after warm-up).
 *
 * Forward:  op_matmul(A, B, ta, tb)  vs  one gemm C = op(A)·op(B)               (2·M·N·K flops)
 * Backward: the op's backward via tape_backward_from (dA and dB, accumulating)
 *           vs the two gemms it needs: dA += dC·op(B)^T (or its transpose), dB += op(A)^T·dC
 *                                                                                (4·M·N·K flops) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/ops.h"
#include "autograd/rng.h"
#include "autograd/util.h"
#include "train/bench.h"

static Tensor *bench_tensor(int r, int c, uint64_t stream) {
    Tensor *x = xcalloc(1, sizeof(Tensor));
    x->ndim = 2;
    x->shape[0] = r;
    x->shape[1] = c;
    x->n = (long)r * c;
    x->data = xcalloc_aligned((size_t)x->n * sizeof(real));
    x->grad = xcalloc_aligned((size_t)x->n * sizeof(real));
    x->requires_grad = 1;
    x->is_param = 1; /* not arena memory: tape_grad returns the existing buffer */
    x->name = "bench";
    for (long i = 0; i < x->n; i++) x->data[i] = (real)(rng_uniform(1, rng_stream(RNG_TEST, stream, 0), i) - 0.5);
    return x;
}
static void bench_tensor_free(Tensor *x) {
    free(x->data);
    free(x->grad);
    free(x);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static inline CBLAS_TRANSPOSE tr(int t) { return t ? CblasTrans : CblasNoTrans; }

/* The raw gemms of the backward of C = op(A)·op(B) (A: [M,K] or [K,M], B: [K,N] or [N,K]). */
static void raw_backward(real *da, real *db, const real *dc, const real *a, const real *b, int M, int N, int K, int ta, int tb) {
    const int lda = ta ? M : K, ldb = tb ? K : N;
    if (!ta) /* dA [M,K] += dC[M,N] · op(B)^T */
        cblas_gemm(CblasRowMajor, CblasNoTrans, tb ? CblasNoTrans : CblasTrans, M, K, N, 1, dc, N, b, ldb, 1, da, K);
    else /* dA [K,M] += op(B)[K,N] · dC^T */
        cblas_gemm(CblasRowMajor, tr(tb), CblasTrans, K, M, N, 1, b, ldb, dc, N, 1, da, M);
    if (!tb) /* dB [K,N] += op(A)^T · dC */
        cblas_gemm(CblasRowMajor, ta ? CblasNoTrans : CblasTrans, CblasNoTrans, K, N, M, 1, a, lda, dc, N, 1, db, N);
    else /* dB [N,K] += dC^T · op(A) */
        cblas_gemm(CblasRowMajor, CblasTrans, tr(ta), N, K, M, 1, dc, N, a, lda, 1, db, K);
}

int bench_ops(int argc, char **argv) {
    int reps = 21, warmup = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: deberta bench ops [--reps N (21)] [--warmup N (3)]\n"
                   "  GFLOP/s of op_matmul forward and backward for M x K x N = 2048x256x256, 2048x256x1024,\n"
                   "  2048x1024x256, every transpose variant, next to raw cblas gemm of the same products\n"
                   "  (interleaved in one run; median of N timed runs after the warm-up).\n");
            return 0;
        } else {
            fprintf(stderr, "error: bench ops: unknown argument '%s' (see deberta bench ops --help)\n", argv[i]);
            return 2;
        }
    }
    if (reps < 1 || warmup < 0) {
        fprintf(stderr, "error: bench ops: --reps must be >= 1 and --warmup >= 0\n");
        return 2;
    }
    static const int shapes[][3] = {{2048, 256, 256}, {2048, 256, 1024}, {2048, 1024, 256}};
    Tape t;
    tape_init(&t, 64u << 20);
    double *top = xmalloc(reps * sizeof(double)), *traw = xmalloc(reps * sizeof(double));
    double *bop = xmalloc(reps * sizeof(double)), *braw = xmalloc(reps * sizeof(double));
    printf("bench ops: %s gemm, %d threads, median of %d runs after %d warm-up\n", REAL_IS_DOUBLE ? "dgemm" : "sgemm",
           omp_get_max_threads(), reps, warmup);
    printf("%-16s %-5s | %9s %9s %6s | %9s %9s %6s\n", "M x K x N", "op", "fwd GF/s", "raw GF/s", "ratio", "bwd GF/s", "raw GF/s",
           "ratio");
    double worst = 1e9;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
        for (int v = 0; v < 4; v++) {
            const int ta = v >> 1, tb = v & 1;
            Tensor *a = ta ? bench_tensor(K, M, 1) : bench_tensor(M, K, 1);
            Tensor *b = tb ? bench_tensor(N, K, 2) : bench_tensor(K, N, 2);
            real *craw = xcalloc_aligned((size_t)M * N * sizeof(real));
            real *dc = xcalloc_aligned((size_t)M * N * sizeof(real));
            for (long i = 0; i < (long)M * N; i++) dc[i] = (real)(rng_uniform(1, rng_stream(RNG_TEST, 3, 0), i) - 0.5);
            for (int r = -warmup; r < reps; r++) {
                /* forward: raw, then the op */
                double t0 = now_seconds();
                cblas_gemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, 1, a->data, a->shape[1], b->data, b->shape[1], 0, craw, N);
                double t1 = now_seconds();
                tape_reset(&t);
                double t2 = now_seconds();
                Tensor *c = op_matmul(&t, a, b, ta, tb);
                double t3 = now_seconds();
                /* backward: raw, then the op (dC given, grads of a and b accumulate) */
                double t4 = now_seconds();
                raw_backward(a->grad, b->grad, dc, a->data, b->data, M, N, K, ta, tb);
                double t5 = now_seconds();
                c->grad = dc;
                double t6 = now_seconds();
                tape_backward_from(&t, c, NULL);
                double t7 = now_seconds();
                if (r >= 0) {
                    traw[r] = t1 - t0;
                    top[r] = t3 - t2;
                    braw[r] = t5 - t4;
                    bop[r] = t7 - t6;
                }
            }
            const double f = 2.0 * M * N * K * 1e-9;
            const double fo = f / median(top, reps), fr = f / median(traw, reps);
            const double bo = 2 * f / median(bop, reps), br = 2 * f / median(braw, reps);
            char sh[32], op[8];
            snprintf(sh, sizeof sh, "%dx%dx%d", M, K, N);
            snprintf(op, sizeof op, "%s%s", ta ? "AT" : "A", tb ? "BT" : "B");
            printf("%-16s %-5s | %9.1f %9.1f %5.0f%% | %9.1f %9.1f %5.0f%%\n", sh, op, fo, fr, 100 * fo / fr, bo, br, 100 * bo / br);
            fflush(stdout);
            worst = fo / fr < worst ? fo / fr : worst;
            worst = bo / br < worst ? bo / br : worst;
            free(craw);
            free(dc);
            bench_tensor_free(a);
            bench_tensor_free(b);
        }
    }
    printf("lowest op/raw ratio: %.0f%% (target >= 90%%)\n", 100 * worst);
    free(top);
    free(traw);
    free(bop);
    free(braw);
    tape_free(&t);
    return 0;
}
