/* gemm_dnnl.c — oneDNN's matmul primitive as gemm's single-threaded product (gemm_dnnl.h).
 *
 * op(A) [M,K], op(B) [K,N] and C [M,N] are described to oneDNN by their strides, so the transposes
 * cost no copy; beta 1 is its "sum" post-op, the bias its bias operand, GELU its gelu_erf post-op.  Called
 * inside a parallel region (gemm's split, or the attention op's loop over heads), oneDNN runs on the calling
 * thread alone. */
#include <omp.h>
#include <pthread.h>
#include <string.h>
#include "autograd/gemm_dnnl.h"
#include "autograd/base/util.h"

#ifdef HAVE_DNNL
#include <dnnl.h>

enum {
    DNNL_THREADS = 64, /* thread numbers with a table; beyond: BLAS */
    DNNL_SHAPES = 96,  /* shapes per thread; beyond: BLAS */
};

typedef struct {
    int ta, tb, M, N, K, lda, ldb, ldc;
    float beta;
    int bias, gelu;        /* a bias row [N] added in the output pass; then GELU (erf) applied */
    dnnl_primitive_t prim; /* NULL: oneDNN declined this shape, BLAS computes it */
    dnnl_memory_t src, wei, dst, bia;
} Shape;

typedef struct {
    Shape shape[DNNL_SHAPES];
    int n;
    dnnl_stream_t stream;
} Table;

static dnnl_engine_t engine;
static int started;
static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static Table *tables[DNNL_THREADS]; /* tables[t] is touched only by thread number t */

static void start(void) { started = dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success; }

int gemm_dnnl_available(void) {
    pthread_once(&start_once, start);
    return started;
}

/* The row-major X [rows, cols] (stored transposed when t: X^T is [cols, rows] with leading dimension ld). */
static int describe(dnnl_memory_desc_t *md, int rows, int cols, int t, int ld) {
    dnnl_dims_t dims = {rows, cols}, strides = {t ? 1 : ld, t ? ld : 1};
    return dnnl_memory_desc_init_by_strides(md, 2, dims, dnnl_f32, strides) == dnnl_success;
}

/* The primitive and its three memory objects for s's shape; s->prim stays NULL when oneDNN cannot
 * run the shape with one of its optimised implementations. */
static void make(Shape *s) {
    dnnl_memory_desc_t a, b, c, bias;
    if (!describe(&a, s->M, s->K, s->ta, s->lda) || !describe(&b, s->K, s->N, s->tb, s->ldb) ||
        !describe(&c, s->M, s->N, 0, s->ldc) || (s->bias && !describe(&bias, 1, s->N, 0, s->N)))
        return;
    dnnl_matmul_desc_t md;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    int ok = dnnl_matmul_desc_init(&md, &a, &b, s->bias ? &bias : NULL, &c) == dnnl_success &&
             dnnl_primitive_attr_create(&attr) == dnnl_success && dnnl_post_ops_create(&po) == dnnl_success &&
             (s->beta == 0 || dnnl_post_ops_append_sum(po, s->beta) == dnnl_success) &&
             (!s->gelu || dnnl_post_ops_append_eltwise(po, 1, dnnl_eltwise_gelu_erf, 0, 0) == dnnl_success) &&
             dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success &&
             dnnl_primitive_desc_create(&pd, &md, attr, engine, NULL) == dnnl_success;
    const char *impl = NULL;
    if (ok) ok = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl &&
                 strncmp(impl, "ref", 3) != 0;
    if (ok && dnnl_primitive_create(&s->prim, pd) == dnnl_success &&
        (dnnl_memory_create(&s->src, &a, engine, DNNL_MEMORY_NONE) != dnnl_success ||
         dnnl_memory_create(&s->wei, &b, engine, DNNL_MEMORY_NONE) != dnnl_success ||
         dnnl_memory_create(&s->dst, &c, engine, DNNL_MEMORY_NONE) != dnnl_success ||
         (s->bias && dnnl_memory_create(&s->bia, &bias, engine, DNNL_MEMORY_NONE) != dnnl_success))) {
        dnnl_primitive_destroy(s->prim);
        if (s->src) dnnl_memory_destroy(s->src);
        if (s->wei) dnnl_memory_destroy(s->wei);
        if (s->dst) dnnl_memory_destroy(s->dst);
        s->prim = NULL;
    }
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (po) dnnl_post_ops_destroy(po);
    if (attr) dnnl_primitive_attr_destroy(attr);
}

/* This thread's primitive for the shape (made at its first call) and its stream; NULL when declined
 * or out of room. */
static Shape *find(int ta, int tb, int M, int N, int K, int lda, int ldb, int ldc, float beta, int bias, int gelu,
                   dnnl_stream_t *stream) {
    const int t = omp_get_thread_num();
    if (t >= DNNL_THREADS) return NULL;
    Table *tab = tables[t];
    if (!tab) {
        tab = tables[t] = xcalloc(1, sizeof *tab);
        if (dnnl_stream_create(&tab->stream, engine, dnnl_stream_default_flags) != dnnl_success) tab->stream = NULL;
    }
    if (!(*stream = tab->stream)) return NULL;
    for (int i = 0; i < tab->n; i++) {
        Shape *s = &tab->shape[i];
        if (s->M == M && s->N == N && s->K == K && s->ta == ta && s->tb == tb && s->lda == lda && s->ldb == ldb &&
            s->ldc == ldc && s->beta == beta && s->bias == bias && s->gelu == gelu)
            return s->prim ? s : NULL;
    }
    if (tab->n == DNNL_SHAPES) return NULL;
    Shape *s = &tab->shape[tab->n++];
    *s = (Shape){.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .lda = lda, .ldb = ldb, .ldc = ldc, .beta = beta, .bias = bias,
                 .gelu = gelu};
    make(s);
    return s->prim ? s : NULL;
}

int gemm_dnnl(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float beta,
              float *C, int ldc, const float *bias, int gelu) {
    if (!gemm_dnnl_available() || (beta != 0 && beta != 1)) return 0;
    dnnl_stream_t stream;
    Shape *s = find(ta, tb, M, N, K, lda, ldb, ldc, beta, bias != NULL, gelu != 0, &stream);
    if (!s) return 0;
    if (dnnl_memory_set_data_handle(s->src, (void *)A) != dnnl_success ||
        dnnl_memory_set_data_handle(s->wei, (void *)B) != dnnl_success ||
        dnnl_memory_set_data_handle(s->dst, C) != dnnl_success ||
        (bias && dnnl_memory_set_data_handle(s->bia, (void *)bias) != dnnl_success))
        return 0;
    const dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, s->src}, {DNNL_ARG_WEIGHTS, s->wei}, {DNNL_ARG_DST, s->dst},
                                     {DNNL_ARG_BIAS, s->bia}};
    if (dnnl_primitive_execute(s->prim, stream, bias ? 4 : 3, args) != dnnl_success)
        fatal("oneDNN matmul failed (%d×%d×%d)", M, N, K);
    dnnl_stream_wait(stream);
    return 1;
}

#else /* without oneDNN: gemm never asks */

int gemm_dnnl_available(void) { return 0; }
int gemm_dnnl(int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb, float beta,
              float *C, int ldc, const float *bias, int gelu) {
    return 0;
}

#endif
