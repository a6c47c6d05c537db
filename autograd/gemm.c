/* gemm.c — one product split by blocks of C across the OpenMP threads (gemm.h). */
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "autograd/gemm.h"
#include "autograd/gemm_dnnl.h"
#include "autograd/sgemm_avx512.h"
#include "autograd/rmath.h"
#include "autograd/base/util.h"

enum {
    GEMM_ROW_ALIGN = 32,          /* block edges on a multiple of the BLAS kernels' unroll */
    GEMM_MIN_ROWS = 64,           /* fewest rows (or columns) a thread's block may have */
};
/* M·N·K below this: one call, the split does not pay; and BLAS, not oneDNN: every oneDNN call mallocs its
 * bookkeeping, and the attention op's many small products bought ~1 % of a step for 13× the mallocs
 * (docs/PERFORMANCE.md "Gemm libraries") */
static const double GEMM_MIN_WORK = 1 << 21;

/* The single-threaded product every call of this process runs (gemm.h), chosen once. */
enum { KERNEL_BLAS, KERNEL_OWN, KERNEL_DNNL };
static int kernel;
static pthread_once_t kernel_once = PTHREAD_ONCE_INIT;

/* Does the CPU execute the AVX-512 subsets oneDNN's avx512_core kernels and the own kernel use? */
static int cpu_avx512(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
}

static void kernel_choose(void) {
    kernel = KERNEL_BLAS;
    if (REAL_IS_DOUBLE) return;
    const char *want = getenv("DEBERTA_GEMM");
    if (want && *want) {
        if (!strcmp(want, "openblas")) return;
        if (!strcmp(want, "own") && cpu_avx512()) kernel = KERNEL_OWN;
        else if (!strcmp(want, "onednn") && gemm_dnnl_available()) kernel = KERNEL_DNNL;
        else fatal("DEBERTA_GEMM=%s: want openblas, own (AVX-512 CPUs) or onednn (a build with oneDNN)", want);
    } else if (cpu_avx512() && gemm_dnnl_available()) {
        kernel = KERNEL_DNNL;
    } else if (sgemm_avx512_available()) {
        kernel = KERNEL_OWN;
    }
}

static int kernel_get(void) {
    pthread_once(&kernel_once, kernel_choose);
    return kernel;
}

/* Under oneDNN, the kernel of the products oneDNN does not take (small ones, alpha != 1): the own
 * AVX-512 kernel where OpenBLAS runs a kernel set without AVX-512, else BLAS. */
static int small_kernel(void) { return sgemm_avx512_available() ? KERNEL_OWN : KERNEL_BLAS; }

static inline CBLAS_TRANSPOSE tr(int t) { return t ? CblasTrans : CblasNoTrans; }

/* The linear layer's epilogue: a bias row added to C, then GELU (ep == NULL: none). */
typedef struct {
    const real *bias;
    int gelu;
} Epilogue;

/* One single-threaded product: oneDNN or the own AVX-512 kernel where chosen (float build), else BLAS.  With an
 * epilogue (beta 0, alpha 1): oneDNN adds it in its output pass; elsewhere C's rows start as the bias, the
 * product is added (beta 1) and GELU applied row by row. */
static void gemm1(int kern, int ta, int tb, int M, int N, int K, real alpha, const real *A, int lda, const real *B, int ldb,
                  real beta, real *C, int ldc, const Epilogue *ep) {
#if !REAL_IS_DOUBLE
    if (kern == KERNEL_DNNL &&
        gemm_dnnl(ta, tb, M, N, K, A, lda, B, ldb, beta, C, ldc, ep ? ep->bias : NULL, ep ? ep->gelu : 0))
        return;
#endif
    if (ep && ep->bias) {
        for (int i = 0; i < M; i++) memcpy(C + (long)i * ldc, ep->bias, (size_t)N * sizeof(real));
        beta = 1;
    }
#if !REAL_IS_DOUBLE
    if (kern == KERNEL_OWN && sgemm_avx512(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) goto epilogue;
#endif
    cblas_gemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#if !REAL_IS_DOUBLE
epilogue:
#endif
    if (ep && ep->gelu)
        for (int i = 0; i < M; i++) {
            real *row = C + (long)i * ldc;
#pragma omp simd
            for (int j = 0; j < N; j++) row[j] = gelu1(row[j]);
        }
}

/* Block i of n of a length-`len` dimension, edges aligned: [*lo, *hi). */
static void block(int len, int n, int i, int *lo, int *hi) {
    int per = (len + n - 1) / n;
    per = (per + GEMM_ROW_ALIGN - 1) / GEMM_ROW_ALIGN * GEMM_ROW_ALIGN;
    *lo = i * per < len ? i * per : len;
    *hi = *lo + per < len ? *lo + per : len;
}

int gemm_split(int M, int N, int K, int nt) {
    if (nt <= 1 || (double)M * N * K < GEMM_MIN_WORK) return GEMM_ONE_CALL;
    if (M >= GEMM_MIN_ROWS * nt) return GEMM_BY_ROWS;
    return N >= GEMM_MIN_ROWS * nt ? GEMM_BY_COLS : GEMM_ONE_CALL;
}

const char *gemm_blas_core_fix(const char *core, int avx2_fma) {
    /* OpenBLAS 0.3.21's kernel sets without AVX2, the ones it falls back to on a CPU it does not know */
    static const char *const fallback[] = {"Prescott", "Core2",  "Penryn",  "Dunnington", "Nehalem",
                                           "Atom",     "Katmai", "Generic", "Sandybridge"};
    if (!core || !avx2_fma) return NULL;
    for (size_t i = 0; i < sizeof fallback / sizeof fallback[0]; i++)
        if (!strcasecmp(core, fallback[i])) return "Haswell";
    return NULL;
}

const char *gemm_kernel_name(void) {
    static const char *const name[] = {[KERNEL_BLAS] = "OpenBLAS", [KERNEL_OWN] = "own AVX-512", [KERNEL_DNNL] = "oneDNN"};
    return name[kernel_get()];
}

void threads_set(int n) {
    if (n <= 0) return;
    omp_set_num_threads(n);
    openblas_set_num_threads(n);
}

/* Block i of `parts` of the product cut `how`: one single-threaded call on those rows or columns of C. */
static void gemm_block(int kern, int how, int parts, int i, int ta, int tb, int M, int N, int K, real alpha, const real *A,
                       int lda, const real *B, int ldb, real beta, real *C, int ldc, const Epilogue *ep) {
    int lo, hi;
    block(how == GEMM_BY_ROWS ? M : N, parts, i, &lo, &hi);
    if (hi <= lo) return;
    if (how == GEMM_BY_ROWS) { /* rows lo..hi of op(A) and of C */
        gemm1(kern, ta, tb, hi - lo, N, K, alpha, ta ? A + lo : A + (long)lo * lda, lda, B, ldb, beta, C + (long)lo * ldc, ldc, ep);
    } else { /* columns lo..hi of op(B), of C and of the bias */
        const Epilogue cols = {ep && ep->bias ? ep->bias + lo : NULL, ep ? ep->gelu : 0};
        gemm1(kern, ta, tb, M, hi - lo, K, alpha, A, lda, tb ? B + (long)lo * ldb : B + lo, ldb, beta, C + lo, ldc,
              ep ? &cols : NULL);
    }
}

static void gemm_run(int ta, int tb, int M, int N, int K, real alpha, const real *A, int lda, const real *B, int ldb, real beta,
                     real *C, int ldc, const Epilogue *ep) {
    const int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    /* oneDNN or BLAS is decided on the whole product, never on a block: a block's size depends on the
     * thread count, and a block that went to BLAS would change the bits (tests/test_gemm.c). */
    int kern = kernel_get();
    if (kern == KERNEL_DNNL && (alpha != 1 || (double)M * N * K < GEMM_MIN_WORK)) kern = small_kernel();
    /* oneDNN chooses its implementation by the operands' layout: a block of rows of a transposed A is not
     * dense, and its sums run in another order than the whole A's.  So under oneDNN one thread (outside a
     * parallel region) cuts the product as two threads do and runs both blocks: the same bits at 1 and 2
     * threads (tests/test_gemm.c). */
    const int parts = kern == KERNEL_DNNL && nt == 1 && !omp_in_parallel() ? 2 : nt;
    const int how = gemm_split(M, N, K, parts);
    if (how == GEMM_ONE_CALL) {
        gemm1(kern, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ep);
    } else if (nt == 1) {
        for (int i = 0; i < parts; i++) gemm_block(kern, how, parts, i, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ep);
    } else {
#pragma omp parallel num_threads(nt)
        gemm_block(kern, how, parts, omp_get_thread_num(), ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, ep);
    }
}

void gemm(int ta, int tb, int M, int N, int K, real alpha, const real *A, int lda, const real *B, int ldb, real beta,
          real *C, int ldc) {
    gemm_run(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL);
}

void gemm_linear(int M, int N, int K, const real *X, int ldx, const real *W, int ldw, const real *bias, int gelu, real *Y,
                 int ldy) {
    const Epilogue ep = {bias, gelu};
    gemm_run(0, 1, M, N, K, 1, X, ldx, W, ldw, 0, Y, ldy, bias || gelu ? &ep : NULL);
}
