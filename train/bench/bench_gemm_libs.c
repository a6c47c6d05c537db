/* bench_gemm_libs.c — the model's linear-layer gemms under each gemm library this machine has, side
 * by side in one run (issue #35: "measure before choosing, per CPU").
 *
 * A program of its own, built and run by scripts/bench-gemm-libs.sh (`make bench-gemm-libs`), never by
 * `make`: the optional libraries are compiled in only with HAVE_BLIS (BLIS, typed API), HAVE_DNNL
 * (oneDNN, matmul primitive) and HAVE_XSMM (libxsmm, JIT kernels), each when its Debian package is
 * installed.  OpenBLAS, the own AVX-512 kernel and the project's gemm() come from build/libdeberta.a.
 *
 * Products, row-major, exactly as autograd/ops_matmul.c's linear calls gemm (gemm.h), for the layer
 * y = x·W^T with X [M,K], W [N,K], dY [M,N]:
 *   fwd   Y [M,N]  = X · W^T      gemm(0, 1, M, N, K, X, K, W, K, 0, Y, N)
 *   dX    dX[M,K]  = dY · W       gemm(0, 0, M, K, N, dY, N, W, K, 0, dX, K)
 *   dW    dW[N,K] += dY^T · X     gemm(1, 0, N, K, M, dY, N, X, K, 1, dW, K)
 *   fwd+bias+GELU  GELU(X·W^T + b), erf form (oneDNN post-ops; the FFN's first layer only)
 * and the reference C [2048,2048] = A · B.  Each counts 2·M·N·K flops.  M = B·T = 2048 (T128 B16,
 * T256 B8, T512 B4 alike); (K, N) = (H, H), (H, I), (I, H) for tiny (H 256, I 1024) and xsmall
 * (H 384, I 1536).
 *
 * Per thread count, per product, every library is timed in turn within each repeat (the starting
 * library rotates), so VM drift hits all alike; a sample is as many back-to-back calls on the same
 * buffers as fill --min-ms; the figure is the median sample after --warmup calls.  "split" rows run
 * gemm.c's way: one single-threaded call per thread on a block of C's rows.  After timing, each
 * library computes the product once more from a fresh C and is compared with OpenBLAS (max |diff| /
 * max |OpenBLAS|); above 1e-4 (or NaN) its figure is printed as WRONG and not counted.
 * Columns: GFLOP/s; "% OB ref", of the same run's OpenBLAS 2048^3 rate at that thread count; "% best
 * ref", of the best library's 2048^3 rate there (OpenBLAS may run a kernel set below the CPU's).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "autograd/gemm.h"
#include "autograd/sgemm_avx512.h"
#ifdef HAVE_BLIS
#include <blis.h>
#endif
#ifdef HAVE_DNNL
#include <dnnl.h>
#endif
#ifdef HAVE_XSMM
#include <libxsmm.h>
#endif

#if REAL_IS_DOUBLE
#error "bench_gemm_libs measures float32: build with the float library (build/libdeberta.a)"
#endif

static const double MAX_REL_ERR = 1e-4; /* above this a library's result counts as wrong */

/* ---------------- one product ---------------- */

enum { P_FWD, P_DX, P_DW, P_FWD_BG, P_REF };
static const char *const prod_name[] = {"fwd", "dX", "dW", "fwd+bias+GELU", "2048^3"};

/* C = op(A)·op(B) + beta·C (row-major, gemm.h's contract with alpha 1); bias and gelu for P_FWD_BG. */
typedef struct {
    int prod, ta, tb, M, N, K, lda, ldb, ldc;
    float beta;
    const float *A, *B, *bias;
    float *C;
} Case;

static const float *a_rows(const Case *c, int r0) { return c->ta ? c->A + r0 : c->A + (long)r0 * c->lda; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static float *falloc(long n) {
    void *p = NULL;
    if (posix_memalign(&p, 64, (size_t)n * sizeof(float))) {
        fprintf(stderr, "error: bench-gemm-libs: out of memory (%ld floats)\n", n);
        exit(1);
    }
    return p;
}

static void fill(float *x, long n, unsigned seed) {
    unsigned s = seed * 2654435761u + 12345u;
    for (long i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((s >> 8) * (1.0 / 16777216.0)) - 0.5f;
    }
}

/* The bias-GELU epilogue on rows [r0, r1) of C (for the reference and the libraries without a fused one). */
static void bias_gelu_rows(const Case *c, int r0, int r1) {
    for (int i = r0; i < r1; i++) {
        float *y = c->C + (long)i * c->ldc;
        for (int j = 0; j < c->N; j++) {
            float v = y[j] + c->bias[j];
            y[j] = 0.5f * v * (1.0f + erff(v * 0.70710678f));
        }
    }
}

/* ---------------- the libraries ---------------- */

/* run: compute rows [r0, r1) of C with one call of the library (its own threading, or one thread when
 * called inside the split's parallel region); returns 0 when it cannot do this product. */
typedef struct {
    const char *name;
    int split;             /* 1: one single-threaded call per thread on a block of C's rows (gemm.c's way) */
    int twin;              /* a split row whose library has a row of its own threading: not run at 1 thread */
    int (*run)(const Case *c, int r0, int r1);
    int fused_bias_gelu;   /* runs P_FWD_BG itself (else the product is skipped for it) */
} Lib;

static int run_openblas(const Case *c, int r0, int r1) {
    if (c->prod == P_FWD_BG) return 0;
    cblas_sgemm(CblasRowMajor, c->ta ? CblasTrans : CblasNoTrans, c->tb ? CblasTrans : CblasNoTrans, r1 - r0, c->N, c->K,
                1.0f, a_rows(c, r0), c->lda, c->B, c->ldb, c->beta, c->C + (long)r0 * c->ldc, c->ldc);
    return 1;
}

static int have_avx512f;
static int run_own(const Case *c, int r0, int r1) {
    if (c->prod == P_FWD_BG || !have_avx512f) return 0;
    return sgemm_avx512(c->ta, c->tb, r1 - r0, c->N, c->K, 1.0f, a_rows(c, r0), c->lda, c->B, c->ldb, c->beta,
                        c->C + (long)r0 * c->ldc, c->ldc);
}

/* The project's gemm() as the step calls it: its own split and kernel choice (gemm.h). */
static int run_deberta(const Case *c, int r0, int r1) {
    if (c->prod == P_FWD_BG) return 0;
    gemm(c->ta, c->tb, r1 - r0, c->N, c->K, 1, a_rows(c, r0), c->lda, c->B, c->ldb, c->beta, c->C + (long)r0 * c->ldc,
         c->ldc);
    return 1;
}

#ifdef HAVE_BLIS
static int run_blis_rntm(const Case *c, int r0, int r1, rntm_t *rntm) {
    if (c->prod == P_FWD_BG) return 0;
    float one = 1.0f, beta = c->beta;
    /* BLIS takes the stored matrix's row and column strides and a transpose flag: row-major = (ld, 1). */
    bli_sgemm_ex(c->ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, c->tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, r1 - r0, c->N,
                 c->K, &one, (float *)a_rows(c, r0), c->lda, 1, (float *)c->B, c->ldb, 1, &beta,
                 c->C + (long)r0 * c->ldc, c->ldc, 1, NULL, rntm);
    return 1;
}
static int run_blis(const Case *c, int r0, int r1) { return run_blis_rntm(c, r0, r1, NULL); }
static int run_blis1(const Case *c, int r0, int r1) {
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    return run_blis_rntm(c, r0, r1, &rntm);
}
#endif

#ifdef HAVE_DNNL
/* One matmul primitive per product, row block and buffers, made at its first call and kept. */
typedef struct {
    Case key;
    int r0, r1;
    dnnl_primitive_t prim;
    dnnl_memory_t src, wei, bia, dst;
} DnnlEntry;
enum { DNNL_MAX_ENTRIES = 512, DNNL_MAX_THREADS = 64 };
static DnnlEntry dnnl_cache[DNNL_MAX_ENTRIES];
static int dnnl_n;
static dnnl_engine_t dnnl_eng;
static dnnl_stream_t dnnl_streams[DNNL_MAX_THREADS];
static int dnnl_verbose_impl = 1;

#define DNNL_OK(x)                                                                                  \
    do {                                                                                            \
        dnnl_status_t st_ = (x);                                                                    \
        if (st_ != dnnl_success) {                                                                  \
            fprintf(stderr, "error: bench-gemm-libs: oneDNN %s failed (status %d)\n", #x, (int)st_); \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

static int dnnl_same(const DnnlEntry *e, const Case *c, int r0, int r1) {
    const Case *k = &e->key;
    return e->r0 == r0 && e->r1 == r1 && k->prod == c->prod && k->ta == c->ta && k->tb == c->tb && k->M == c->M &&
           k->N == c->N && k->K == c->K && k->lda == c->lda && k->ldb == c->ldb && k->ldc == c->ldc &&
           k->beta == c->beta && k->A == c->A && k->B == c->B && k->C == c->C && k->bias == c->bias;
}

static DnnlEntry *dnnl_make(const Case *c, int r0, int r1) {
    const int m = r1 - r0;
    dnnl_memory_desc_t src_md, wei_md, bia_md, dst_md;
    dnnl_dims_t sd = {m, c->K}, ss = {c->ta ? 1 : c->lda, c->ta ? c->lda : 1};
    dnnl_dims_t wd = {c->K, c->N}, ws = {c->tb ? 1 : c->ldb, c->tb ? c->ldb : 1};
    dnnl_dims_t dd = {m, c->N}, ds = {c->ldc, 1};
    dnnl_dims_t bd = {1, c->N}, bs = {c->N, 1};
    DNNL_OK(dnnl_memory_desc_init_by_strides(&src_md, 2, sd, dnnl_f32, ss));
    DNNL_OK(dnnl_memory_desc_init_by_strides(&wei_md, 2, wd, dnnl_f32, ws));
    DNNL_OK(dnnl_memory_desc_init_by_strides(&dst_md, 2, dd, dnnl_f32, ds));
    DNNL_OK(dnnl_memory_desc_init_by_strides(&bia_md, 2, bd, dnnl_f32, bs));
    const int bg = c->prod == P_FWD_BG;
    dnnl_matmul_desc_t md;
    DNNL_OK(dnnl_matmul_desc_init(&md, &src_md, &wei_md, bg ? &bia_md : NULL, &dst_md));
    dnnl_primitive_attr_t attr;
    dnnl_post_ops_t po;
    DNNL_OK(dnnl_primitive_attr_create(&attr));
    DNNL_OK(dnnl_post_ops_create(&po));
    if (c->beta != 0) DNNL_OK(dnnl_post_ops_append_sum(po, c->beta)); /* C = beta·C + product */
    if (bg) DNNL_OK(dnnl_post_ops_append_eltwise(po, 1.0f, dnnl_eltwise_gelu_erf, 0, 0));
    DNNL_OK(dnnl_primitive_attr_set_post_ops(attr, po));
    dnnl_primitive_desc_t pd;
    DNNL_OK(dnnl_primitive_desc_create(&pd, &md, attr, dnnl_eng, NULL));
    if (dnnl_verbose_impl && r0 == 0 && r1 == c->M) {
        const char *impl = "?";
        dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
        printf("# oneDNN implementation for %s %dx%dx%d: %s\n", prod_name[c->prod], c->M, c->N, c->K, impl);
    }
    if (dnnl_n == DNNL_MAX_ENTRIES) {
        fprintf(stderr, "error: bench-gemm-libs: oneDNN primitive cache full\n");
        exit(1);
    }
    DnnlEntry *e = &dnnl_cache[dnnl_n++];
    e->key = *c;
    e->r0 = r0;
    e->r1 = r1;
    DNNL_OK(dnnl_primitive_create(&e->prim, pd));
    DNNL_OK(dnnl_memory_create(&e->src, &src_md, dnnl_eng, (void *)a_rows(c, r0)));
    DNNL_OK(dnnl_memory_create(&e->wei, &wei_md, dnnl_eng, (void *)c->B));
    DNNL_OK(dnnl_memory_create(&e->dst, &dst_md, dnnl_eng, c->C + (long)r0 * c->ldc));
    e->bia = NULL;
    if (bg) DNNL_OK(dnnl_memory_create(&e->bia, &bia_md, dnnl_eng, (void *)c->bias));
    dnnl_primitive_desc_destroy(pd);
    dnnl_post_ops_destroy(po);
    dnnl_primitive_attr_destroy(attr);
    return e;
}

static int run_dnnl(const Case *c, int r0, int r1) {
    DnnlEntry *e = NULL;
    const int t = omp_get_thread_num();
    if (t >= DNNL_MAX_THREADS) return 0;
#pragma omp critical(bench_dnnl_cache)
    {
        for (int i = 0; i < dnnl_n && !e; i++)
            if (dnnl_same(&dnnl_cache[i], c, r0, r1)) e = &dnnl_cache[i];
        if (!e) e = dnnl_make(c, r0, r1);
        if (!dnnl_streams[t]) DNNL_OK(dnnl_stream_create(&dnnl_streams[t], dnnl_eng, dnnl_stream_default_flags));
    }
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, e->src}, {DNNL_ARG_WEIGHTS, e->wei}, {DNNL_ARG_DST, e->dst}};
    int nargs = 3;
    if (e->bia) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, e->bia};
    DNNL_OK(dnnl_primitive_execute(e->prim, dnnl_streams[t], nargs, args));
    DNNL_OK(dnnl_stream_wait(dnnl_streams[t]));
    return 1;
}
#endif

#ifdef HAVE_XSMM
/* libxsmm's JIT kernels are column-major small-matrix products; the row-major C [M,N] is the column-
 * major C^T [N,M] = op(B)^T · op(A)^T, computed tile by tile (XT_M × XT_N of C^T, the inner dimension
 * XT_K at a time) with the tiles shared among the OpenMP threads.  op(B) = W^T (the forward) needs the
 * JIT's transpose-A and op(A) = dY^T (dW) its transpose-B; where the JIT has no such kernel, the operand
 * is transposed first (libxsmm_otrans, inside the timed call) and the plain kernel used. */
static int XT_M = 64, XT_N = 64, XT_K = 256;
static int xsmm_otrans_always; /* --xsmm-otrans: transpose first even where the JIT has the kernel */
static float *xsmm_scratch;
static long xsmm_scratch_n;
static int xsmm_note[5][4]; /* printed once per product and transpose way */

static libxsmm_smmfunction xsmm_kernel(int m, int n, int k, int lda, int ldb, int ldc, float beta, int flags) {
    const float alpha = 1.0f;
    return libxsmm_smmdispatch(m, n, k, &lda, &ldb, &ldc, &alpha, &beta, &flags, NULL);
}

static int run_xsmm(const Case *c, int r0, int r1) {
    if (c->prod == P_FWD_BG || r0 != 0 || r1 != c->M) return 0;
    /* C^T [m = N, n = M] = Acm [m, k] · Bcm [k, n];  Acm = op(B)^T, Bcm = op(A)^T, k = K. */
    const int m = c->N, n = c->M, k = c->K;
    const float *acm = c->B, *bcm = c->A;
    int lda = c->ldb, ldb = c->lda, ta = c->tb, tb = c->ta;
    /* Does the JIT make the transposed kernels this product needs?  Probe the full-tile kernel. */
    const int fl = (ta ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (tb ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
    const int pm = m < XT_M ? m : XT_M, pn = n < XT_N ? n : XT_N, pk = k < XT_K ? k : XT_K;
    if ((ta || tb) && (xsmm_otrans_always || !xsmm_kernel(pm, pn, pk, lda, ldb, c->ldc, c->beta, fl))) {
        /* Transpose the operand that needs it into scratch, then the plain kernel. */
        const long need = ta ? (long)m * k : (long)k * n;
        if (need > xsmm_scratch_n) {
            free(xsmm_scratch);
            xsmm_scratch = falloc(need);
            xsmm_scratch_n = need;
        }
        /* libxsmm_otrans(out, in, size, rows, cols, ldi, ldo): in is rows × cols, column-major */
        if (ta) { /* stored k×m (ld lda) -> m×k, ld m */
            libxsmm_otrans(xsmm_scratch, acm, sizeof(float), k, m, lda, m);
            acm = xsmm_scratch, lda = m, ta = 0;
        } else { /* stored n×k (ld ldb) -> k×n, ld k */
            libxsmm_otrans(xsmm_scratch, bcm, sizeof(float), n, k, ldb, k);
            bcm = xsmm_scratch, ldb = k, tb = 0;
        }
        if (!xsmm_note[c->prod][1]++)
            printf("# libxsmm: %s: %s, so libxsmm_otrans of the operand first (timed), then the plain kernels\n",
                   prod_name[c->prod], xsmm_otrans_always ? "--xsmm-otrans" : "the JIT has no kernel with its transpose");
    } else if ((ta || tb) && !xsmm_note[c->prod][2]++)
        printf("# libxsmm: %s runs the JIT's transpose-%s kernels\n", prod_name[c->prod], ta ? "A" : "B");
    const int flags = (ta ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (tb ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
    const int tm = (m + XT_M - 1) / XT_M, tn = (n + XT_N - 1) / XT_N;
    int ok = 1;
#pragma omp parallel for collapse(2) schedule(static) reduction(&& : ok)
    for (int j = 0; j < tn; j++)
        for (int i = 0; i < tm; i++) {
            const int i0 = i * XT_M, j0 = j * XT_N;
            const int mb = m - i0 < XT_M ? m - i0 : XT_M, nb = n - j0 < XT_N ? n - j0 : XT_N;
            for (int p0 = 0; p0 < k && ok; p0 += XT_K) {
                const int kb = k - p0 < XT_K ? k - p0 : XT_K;
                libxsmm_smmfunction f = xsmm_kernel(mb, nb, kb, lda, ldb, c->ldc, p0 ? 1.0f : c->beta, flags);
                if (!f) {
                    ok = 0;
                    break;
                }
                /* element (r, q) of op(X): stored at r + q·ld, or q + r·ld when transposed */
                const float *a = ta ? acm + p0 + (long)i0 * lda : acm + i0 + (long)p0 * lda;
                const float *b = tb ? bcm + j0 + (long)p0 * ldb : bcm + p0 + (long)j0 * ldb;
                f(a, b, c->C + i0 + (long)j0 * c->ldc);
            }
        }
    return ok;
}
#endif

static const Lib libs[] = {
    {"OpenBLAS", 0, 0, run_openblas, 0},
    {"OpenBLAS split", 1, 1, run_openblas, 0},
    {"deberta gemm()", 0, 0, run_deberta, 0},
    {"own AVX-512", 1, 0, run_own, 0}, /* split at > 1 thread */
#ifdef HAVE_BLIS
    {"BLIS", 0, 0, run_blis, 0},
    {"BLIS split", 1, 1, run_blis1, 0},
#endif
#ifdef HAVE_DNNL
    {"oneDNN", 0, 0, run_dnnl, 1},
    {"oneDNN split", 1, 1, run_dnnl, 1},
#endif
#ifdef HAVE_XSMM
    {"libxsmm tiles", 0, 0, run_xsmm, 0},
#endif
};
enum { NLIBS = sizeof libs / sizeof libs[0] };

/* ---------------- running and timing ---------------- */

/* Block i of n of `len` rows, edges on multiples of 32 (as gemm.c). */
static void block(int len, int n, int i, int *lo, int *hi) {
    int per = (len + n - 1) / n;
    per = (per + 31) / 32 * 32;
    *lo = i * per < len ? i * per : len;
    *hi = *lo + per < len ? *lo + per : len;
}

/* One call of library L on the whole product with nt threads; 0 when it cannot. */
static int call(const Lib *L, const Case *c, int nt) {
    int ok = 1;
    if (!L->split || nt == 1) {
        ok = L->run(c, 0, c->M);
    } else {
#pragma omp parallel num_threads(nt) reduction(&& : ok)
        {
            int lo, hi;
            block(c->M, nt, omp_get_thread_num(), &lo, &hi);
            if (hi > lo) ok = L->run(c, lo, hi);
        }
    }
    if (ok && c->prod == P_FWD_BG && !L->fused_bias_gelu) bias_gelu_rows(c, 0, c->M);
    return ok;
}

static void set_threads(int nt) {
    threads_set(nt); /* OpenMP's and OpenBLAS's (gemm.h) */
#ifdef HAVE_BLIS
    bli_thread_set_num_threads(nt);
#endif
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    int reps, warmup;
    double min_s;
} Opts;

/* Times every library on one product; fills gflops[] (0: not run, -1: wrong) and err[]. */
static void measure(const Case *c, int nt, const Opts *o, double *gflops, double *err) {
    const double flops = 2.0 * c->M * c->N * c->K;
    const long nc = (long)c->M * c->ldc;
    float *c0 = falloc(nc), *ref = falloc(nc);
    memcpy(c0, c->C, nc * sizeof(float));
    /* The reference: OpenBLAS (one call, its own threading) from the same starting C. */
    Case rc = *c;
    rc.C = ref;
    memcpy(ref, c0, nc * sizeof(float));
    if (c->prod == P_FWD_BG) {
        rc.prod = P_FWD;
        run_openblas(&rc, 0, c->M);
        rc.prod = P_FWD_BG;
        bias_gelu_rows(&rc, 0, c->M);
    } else
        run_openblas(&rc, 0, c->M);

    int run[NLIBS], inner[NLIBS];
    double *samples = malloc(sizeof(double) * NLIBS * o->reps);
    for (int l = 0; l < NLIBS; l++) {
        gflops[l] = 0;
        err[l] = 0;
        run[l] = !(libs[l].twin && nt == 1) && (c->prod != P_FWD_BG || libs[l].fused_bias_gelu);
        if (!run[l]) continue;
        double t = 0;
        for (int w = 0; w < o->warmup && run[l]; w++) {
            double t0 = now();
            run[l] = call(&libs[l], c, nt);
            t = now() - t0;
        }
        inner[l] = t > 0 && t < o->min_s ? (int)(o->min_s / t) + 1 : 1;
    }
    for (int r = 0; r < o->reps; r++)
        for (int i = 0; i < NLIBS; i++) {
            const int l = (i + r) % NLIBS; /* rotate who goes first */
            if (!run[l]) continue;
            double t0 = now();
            for (int q = 0; q < inner[l]; q++) call(&libs[l], c, nt);
            samples[l * o->reps + r] = flops * inner[l] / (now() - t0) * 1e-9;
        }
    for (int l = 0; l < NLIBS; l++) {
        if (!run[l]) continue;
        qsort(samples + l * o->reps, o->reps, sizeof(double), cmp_double);
        const double *s = samples + l * o->reps;
        gflops[l] = o->reps % 2 ? s[o->reps / 2] : 0.5 * (s[o->reps / 2 - 1] + s[o->reps / 2]);
        /* the check: one more call from the starting C, against OpenBLAS */
        memcpy(c->C, c0, nc * sizeof(float));
        call(&libs[l], c, nt);
        double dmax = 0, rmax = 0;
        long nan = 0;
        for (int i = 0; i < c->M; i++)
            for (int j = 0; j < c->N; j++) {
                const double d = fabs((double)c->C[(long)i * c->ldc + j] - ref[(long)i * c->ldc + j]);
                const double a = fabs((double)ref[(long)i * c->ldc + j]);
                nan += !(d == d);
                if (d > dmax) dmax = d;
                if (a > rmax) rmax = a;
            }
        err[l] = nan ? NAN : rmax > 0 ? dmax / rmax : dmax; /* a NaN anywhere makes the error NaN: WRONG */
        if (!(err[l] <= MAX_REL_ERR)) gflops[l] = -1;
    }
    memcpy(c->C, c0, nc * sizeof(float));
    free(samples);
    free(c0);
    free(ref);
}

/* ---------------- what the machine is ---------------- */

static void print_machine(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[8192];
    int seen_model = 0, seen_fam = 0, seen_mod = 0, seen_flags = 0;
    while (f && fgets(line, sizeof line, f)) {
        char *v = strchr(line, ':');
        if (!v) continue;
        v += 2;
        v[strcspn(v, "\n")] = 0;
        if (!seen_model && !strncmp(line, "model name", 10)) printf("# CPU: %s\n", v), seen_model = 1;
        else if (!seen_fam && !strncmp(line, "cpu family", 10)) printf("# CPU family: %s\n", v), seen_fam = 1;
        else if (!seen_mod && !strncmp(line, "model\t", 6)) printf("# CPU model: %s\n", v), seen_mod = 1;
        else if (!seen_flags && !strncmp(line, "flags", 5)) {
            printf("# vector flags:");
            for (char *tok = strtok(v, " "); tok; tok = strtok(NULL, " "))
                if (!strncmp(tok, "avx", 3) || !strcmp(tok, "fma") || !strncmp(tok, "amx", 3)) printf(" %s", tok);
            printf("\n");
            seen_flags = 1;
        }
    }
    if (f) fclose(f);
    printf("# logical CPUs online: %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
    printf("# OpenBLAS core: %s; config: %s\n", openblas_get_corename(), openblas_get_config());
    const char *cty = getenv("OPENBLAS_CORETYPE");
    printf("# OPENBLAS_CORETYPE=%s; deberta gemm() kernel: %s\n", cty ? cty : "(unset)", gemm_kernel_name());
    const char *wp = getenv("OMP_WAIT_POLICY"), *sc = getenv("GOMP_SPINCOUNT");
    printf("# OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s (libgomp's defaults when unset; build/deberta picks its own)\n",
           wp ? wp : "(unset)", sc ? sc : "(unset)");
    Dl_info di;
    if (dladdr((void *)cblas_sgemm, &di)) printf("# cblas_sgemm from %s\n", di.dli_fname);
#ifdef HAVE_BLIS
    printf("# BLIS %s, kernel set %s\n", bli_info_get_version_str(), bli_arch_string(bli_arch_query_id()));
    if (dladdr((void *)bli_sgemm_ex, &di)) printf("# bli_sgemm_ex from %s\n", di.dli_fname);
#else
    printf("# BLIS: not built in (libblis-openmp-dev missing)\n");
#endif
#ifdef HAVE_DNNL
    const dnnl_version_t *v = dnnl_version();
    const unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    const char *isa_name = isa == dnnl_cpu_isa_avx2 ? "avx2" : isa == dnnl_cpu_isa_avx2_vnni ? "avx2_vnni"
                         : isa == dnnl_cpu_isa_avx512_core ? "avx512_core" : isa == dnnl_cpu_isa_avx512_core_vnni ? "avx512_core_vnni"
                         : isa == dnnl_cpu_isa_avx512_core_bf16 ? "avx512_core_bf16" : isa == dnnl_cpu_isa_avx512_core_amx ? "avx512_core_amx"
                         : "other";
    printf("# oneDNN %d.%d.%d, effective ISA %s (0x%x)\n", v->major, v->minor, v->patch, isa_name, isa);
#else
    printf("# oneDNN: not built in (libdnnl-dev missing)\n");
#endif
#ifdef HAVE_XSMM
    printf("# libxsmm %s, JIT target %s, tiles %d x %d, inner %d\n", LIBXSMM_VERSION, libxsmm_get_target_arch(), XT_M,
           XT_N, XT_K);
#else
    printf("# libxsmm: not built in (libxsmm-dev missing)\n");
#endif
    printf("# own AVX-512 kernel: %s\n", have_avx512f ? "CPU has AVX-512F (run forced; split at > 1 thread)" : "no AVX-512F: not run");
}

/* ---------------- main ---------------- */

typedef struct {
    double openblas, best; /* the same run's 2048^3 rates at this thread count */
    const char *best_name;
} Ref;

/* One line per library that ran: GFLOP/s (or WRONG), the two fractions, the check's error. */
static void print_rows(int nt, const char *preset, const char *layer, const Case *c, const double *g, const double *e,
                       const Ref *ref) {
    char dims[48];
    snprintf(dims, sizeof dims, "%dx%dx%d", c->M, c->N, c->K);
    for (int l = 0; l < NLIBS; l++) {
        if (g[l] == 0) continue;
        printf("%-7d %-7s %-20s %-14s %-16s %-18s ", nt, preset, layer, prod_name[c->prod], dims, libs[l].name);
        if (g[l] < 0) printf("%9s %8s %9s", "WRONG", "-", "-");
        else printf("%9.1f %7.0f%% %8.0f%%", g[l], 100 * g[l] / ref->openblas, 100 * g[l] / ref->best);
        printf(" %11.2e\n", e[l]);
    }
}

static void usage(void) {
    printf("usage: bench_gemm_libs [--reps N (11)] [--warmup N (3)] [--min-ms MS (20)] [--threads LIST (1,2)]\n"
           "                       [--presets LIST (tiny,xsmall)] [--xsmm-tile M,N,K (64,64,256)] [--xsmm-otrans]\n"
           "  (the --xsmm options only with libxsmm built in)\n"
           "  GFLOP/s of the model's linear-layer gemms (fwd, dX, dW; M = 2048) and of 2048^3 under each\n"
           "  library built in, the fraction of the same-run OpenBLAS 2048^3 rate, and each result's\n"
           "  max relative difference from OpenBLAS.\n");
}

int main(int argc, char **argv) {
    Opts o = {11, 3, 0.020};
    char threads_list[64] = "1,2", presets[64] = "tiny,xsmall";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            return 0;
        }
#ifdef HAVE_XSMM
        if (!strcmp(a, "--xsmm-otrans")) {
            xsmm_otrans_always = 1;
            continue;
        }
#endif
        static const char *const valued[] = {"--reps", "--warmup", "--min-ms", "--threads", "--presets", "--xsmm-tile"};
        int known = 0;
        for (size_t q = 0; q < sizeof valued / sizeof valued[0]; q++) known |= !strcmp(a, valued[q]);
        if (!known) {
            fprintf(stderr, "error: bench-gemm-libs: unknown option %s (see --help)\n", a);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "error: bench-gemm-libs: %s needs a value (see --help)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        if (!strcmp(a, "--reps")) o.reps = atoi(v);
        else if (!strcmp(a, "--warmup")) o.warmup = atoi(v);
        else if (!strcmp(a, "--min-ms")) o.min_s = atof(v) * 1e-3;
        else if (!strcmp(a, "--threads")) snprintf(threads_list, sizeof threads_list, "%s", v);
        else if (!strcmp(a, "--presets")) snprintf(presets, sizeof presets, "%s", v);
        else { /* --xsmm-tile */
#ifdef HAVE_XSMM
            if (sscanf(v, "%d,%d,%d", &XT_M, &XT_N, &XT_K) != 3 || XT_M < 1 || XT_N < 1 || XT_K < 1) {
                fprintf(stderr, "error: bench-gemm-libs: --xsmm-tile wants M,N,K, got '%s'\n", v);
                return 2;
            }
#else
            fprintf(stderr, "error: bench-gemm-libs: --xsmm-tile: libxsmm is not built in\n");
            return 2;
#endif
        }
    }
    if (o.reps < 1 || o.warmup < 1 || !(o.min_s >= 0)) {
        fprintf(stderr, "error: bench-gemm-libs: --reps and --warmup must be >= 1, --min-ms >= 0\n");
        return 2;
    }
    /* check the lists before any output */
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%s", threads_list);
    for (char *ts = strtok(tmp, ","); ts; ts = strtok(NULL, ","))
        if (atoi(ts) < 1 || atoi(ts) > 1024) {
            fprintf(stderr, "error: bench-gemm-libs: --threads: bad thread count '%s' (a list like 1,2)\n", ts);
            return 2;
        }
    snprintf(tmp, sizeof tmp, "%s", presets);
    for (char *ps = strtok(tmp, ","); ps; ps = strtok(NULL, ","))
        if (strcmp(ps, "tiny") && strcmp(ps, "xsmall")) {
            fprintf(stderr, "error: bench-gemm-libs: --presets: unknown preset '%s' (tiny, xsmall)\n", ps);
            return 2;
        }
    __builtin_cpu_init();
    have_avx512f = __builtin_cpu_supports("avx512f");
#ifdef HAVE_DNNL
    DNNL_OK(dnnl_engine_create(&dnnl_eng, dnnl_cpu, 0));
#endif
#ifdef HAVE_XSMM
    libxsmm_init();
#endif
    print_machine();
    printf("# reps %d (median), warm-up %d calls, a sample >= %.0f ms of back-to-back calls; float32; M = B*T = 2048\n",
           o.reps, o.warmup, o.min_s * 1e3);

    /* the shapes: (K, N) of y = x·W^T for each preset's linear layers */
    typedef struct {
        const char *preset, *layer;
        int K, N;
    } Shape;
    static const Shape all_shapes[] = {
        {"tiny", "attn q/k/v/o (H->H)", 256, 256},   {"tiny", "FFN up (H->I)", 256, 1024},
        {"tiny", "FFN down (I->H)", 1024, 256},      {"xsmall", "attn q/k/v/o (H->H)", 384, 384},
        {"xsmall", "FFN up (H->I)", 384, 1536},      {"xsmall", "FFN down (I->H)", 1536, 384},
    };
    const int M = 2048, R = 2048;
    float *ra = falloc((long)R * R), *rb = falloc((long)R * R), *rcm = falloc((long)R * R);
    fill(ra, (long)R * R, 1);
    fill(rb, (long)R * R, 2);
    memset(rcm, 0, sizeof(float) * R * R);

    printf("%-7s %-7s %-20s %-14s %-16s %-18s %9s %8s %9s %11s\n", "threads", "preset", "layer", "product", "M x N x K",
           "library", "GFLOP/s", "% OB ref", "% best ref", "max rel err");
    char tl[64];
    snprintf(tl, sizeof tl, "%s", threads_list);
    for (char *ts = strtok(tl, ","); ts; ts = strtok(NULL, ",")) {
        const int nt = atoi(ts);
        set_threads(nt);
        double g[NLIBS], e[NLIBS];
        /* 1) the 2048^3 reference of every library: OpenBLAS's, and the best one's */
        Case rc = {P_REF, 0, 0, R, R, R, R, R, R, 0, ra, rb, NULL, rcm};
        measure(&rc, nt, &o, g, e);
        Ref ref = {g[0], 0, "-"};
        for (int l = 0; l < NLIBS; l++)
            if (g[l] > ref.best) ref.best = g[l], ref.best_name = libs[l].name;
        print_rows(nt, "-", "reference", &rc, g, e, &ref);
        printf("# %d thread%s: 2048^3 OpenBLAS %.1f GFLOP/s (\"%% OB ref\"), best %.1f by %s (\"%% best ref\")\n", nt,
               nt > 1 ? "s" : "", ref.openblas, ref.best, ref.best_name);
        fflush(stdout);
        /* 2) the linear layers' products */
        for (size_t s = 0; s < sizeof all_shapes / sizeof all_shapes[0]; s++) {
            const Shape *sh = &all_shapes[s];
            if (!strstr(presets, sh->preset)) continue;
            const int K = sh->K, N = sh->N;
            float *X = falloc((long)M * K), *W = falloc((long)N * K), *dY = falloc((long)M * N), *Y = falloc((long)M * N),
                  *dX = falloc((long)M * K), *dW = falloc((long)N * K), *b = falloc(N);
            fill(X, (long)M * K, 3), fill(W, (long)N * K, 4), fill(dY, (long)M * N, 5), fill(b, N, 6);
            fill(dW, (long)N * K, 7); /* dW accumulates (beta 1) */
            memset(Y, 0, sizeof(float) * M * N), memset(dX, 0, sizeof(float) * M * K);
            Case cs[4] = {
                {P_FWD, 0, 1, M, N, K, K, K, N, 0, X, W, NULL, Y},
                {P_DX, 0, 0, M, K, N, N, K, K, 0, dY, W, NULL, dX},
                {P_DW, 1, 0, N, K, M, N, K, K, 1, dY, X, NULL, dW},
                {P_FWD_BG, 0, 1, M, N, K, K, K, N, 0, X, W, b, Y},
            };
            const int ncases = K < N ? 4 : 3; /* bias-GELU follows the FFN's first layer only */
            for (int ci = 0; ci < ncases; ci++) {
                measure(&cs[ci], nt, &o, g, e);
                print_rows(nt, sh->preset, sh->layer, &cs[ci], g, e, &ref);
                fflush(stdout);
            }
            free(X), free(W), free(dY), free(Y), free(dX), free(dW), free(b);
        }
    }
    free(ra), free(rb), free(rcm);
    return 0;
}
