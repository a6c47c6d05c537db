/* bench_ops.c — `deberta bench ops`: GFLOP/s of op_matmul, forward and backward separately, for
 * the model's shapes and every transpose variant, next to raw cblas gemm calls doing the same
 * products, measured in the same run (interleaved, alternating which goes first; median of
 * repeated runs after warm-up).
 *
 * Forward:  op_matmul(A, B, ta, tb)  vs  one gemm C = op(A)·op(B)               (2·M·N·K flops)
 * Backward: the op's backward via tape_backward_from (dA and dB, accumulating)
 *           vs the two gemms it needs: dA += dC·op(B)^T (or its transpose), dB += op(A)^T·dC
 *                                                                                (4·M·N·K flops) */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "autograd/gemm.h"
#include "autograd/ops.h"
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include "train/bench/bench.h"

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

/* The clock of the matmul table: wall time (default), or with --cpu-time the CPU time of the
 * process (all threads), which a loaded machine does not inflate when it deschedules us. */
static int use_cpu_time = 0;
static double bench_clock(void) {
    if (!use_cpu_time) return now_seconds();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

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

/* ---- the other ops at model shapes (tokens N = 2048 = batch 16 × seq 128, hidden 256,
 * intermediate 1024, 4 heads, vocab 8000, 300 masked rows): forward and backward times ---- */
enum { BN = 2048, BC = 256, BI = 1024, BB = 16, BH = 4, BT = 128, BV = 8000, BM = 300 };
typedef struct {
    Tensor *x, *x2, *b, *bi, *g, *xi, *tab, *att, *rel, *heads, *lg, *lbce;
    int32_t *ids, *idx, *rows, *tg, *tbce, *valid, *qm, *km;
} OpsIn;

static Tensor *bt(int ndim, const int *shape, uint64_t stream) {
    Tensor *x = bench_tensor(1, 1, stream);
    free(x->data);
    free(x->grad);
    x->ndim = ndim;
    for (int i = 0; i < ndim; i++) x->shape[i] = shape[i];
    x->n = shape_numel(ndim, shape);
    x->data = xcalloc_aligned((size_t)x->n * sizeof(real));
    x->grad = xcalloc_aligned((size_t)x->n * sizeof(real));
    for (long i = 0; i < x->n; i++) x->data[i] = (real)(2 * rng_uniform(1, rng_stream(RNG_TEST, stream, 1), i) - 1);
    return x;
}

typedef Tensor *(*OpFn)(Tape *t, OpsIn *in);
static Tensor *f_add(Tape *t, OpsIn *in) { return op_add(t, in->x, in->x2); }
static Tensor *f_bias_add(Tape *t, OpsIn *in) { return op_bias_add(t, in->xi, in->bi); }
static Tensor *f_scale(Tape *t, OpsIn *in) { return op_scale(t, in->x, (real)0.5); }
static Tensor *f_mul(Tape *t, OpsIn *in) { return op_mul(t, in->x, in->x2); }
static Tensor *f_gelu(Tape *t, OpsIn *in) { return op_gelu(t, in->xi); }
static Tensor *f_bias_gelu(Tape *t, OpsIn *in) { return op_bias_gelu(t, in->xi, in->bi); }
static Tensor *f_layernorm(Tape *t, OpsIn *in) { return op_layernorm(t, in->x, in->g, in->b, (real)1e-7); }
static Tensor *f_softmax(Tape *t, OpsIn *in) { return op_softmax_masked(t, in->att, in->qm, in->km); }
static Tensor *f_embedding(Tape *t, OpsIn *in) { return op_embedding(t, in->tab, in->ids, BN, 0); }
static Tensor *f_gather(Tape *t, OpsIn *in) { return op_gather_last(t, in->rel, in->idx, BT, BT); }
static Tensor *f_index_select(Tape *t, OpsIn *in) { return op_index_select(t, in->x, in->rows, BM); }
static Tensor *f_dropout(Tape *t, OpsIn *in) {
    t->training = 1;
    Tensor *y = op_dropout(t, in->xi, (real)0.1);
    t->training = 0;
    return y;
}
static Tensor *f_ce(Tape *t, OpsIn *in) { return op_cross_entropy(t, in->lg, in->tg); }
static Tensor *f_bce(Tape *t, OpsIn *in) { return op_bce_logits(t, in->lbce, in->tbce, in->valid); }
static Tensor *f_sum(Tape *t, OpsIn *in) { return op_sum(t, in->xi); }
static Tensor *f_mean(Tape *t, OpsIn *in) { return op_mean(t, in->xi); }
static Tensor *f_transpose(Tape *t, OpsIn *in) { return op_transpose(t, in->heads); }
static Tensor *f_split(Tape *t, OpsIn *in) {
    const int s3[3] = {BB, BT, BC};
    return op_split_heads(t, op_reshape(t, in->x, 3, s3), BH);
}
static Tensor *f_merge(Tape *t, OpsIn *in) { return op_merge_heads(t, in->heads); }

static void bench_other_ops(int reps, int warmup) {
    OpsIn in;
    in.x = bt(2, (const int[]){BN, BC}, 10);
    in.x2 = bt(2, (const int[]){BN, BC}, 11);
    in.b = bt(1, (const int[]){BC}, 12);
    in.g = bt(1, (const int[]){BC}, 13);
    in.bi = bt(1, (const int[]){BI}, 14);
    in.xi = bt(2, (const int[]){BN, BI}, 15);
    in.tab = bt(2, (const int[]){BV, BC}, 16);
    in.att = bt(4, (const int[]){BB, BH, BT, BT}, 17);
    in.rel = bt(4, (const int[]){BB, BH, BT, 2 * BT}, 18);
    in.heads = bt(4, (const int[]){BB, BH, BT, BC / BH}, 19);
    in.lg = bt(2, (const int[]){BM, BV}, 20);
    in.lbce = bt(1, (const int[]){BN}, 21);
    in.ids = xmalloc(BN * sizeof(int32_t));
    in.tbce = xmalloc(BN * sizeof(int32_t));
    in.valid = xmalloc(BN * sizeof(int32_t));
    in.qm = xmalloc(BN * sizeof(int32_t));
    in.km = xmalloc(BN * sizeof(int32_t));
    in.idx = xmalloc(BT * BT * sizeof(int32_t));
    in.rows = xmalloc(BM * sizeof(int32_t));
    in.tg = xmalloc(BM * sizeof(int32_t));
    for (int i = 0; i < BN; i++) {
        in.ids[i] = (int32_t)rng_below(1, 7, i, BV);
        in.tbce[i] = (int32_t)rng_below(1, 8, i, 2);
        in.valid[i] = in.qm[i] = in.km[i] = i % BT < 100; /* 28 padding positions per sequence */
    }
    for (int i = 0; i < BT; i++)
        for (int j = 0; j < BT; j++) in.idx[i * BT + j] = BT + (i - j) / 2; /* in [64, 191] */
    for (int i = 0; i < BM; i++) {
        in.rows[i] = (int32_t)rng_below(1, 9, i, BN);
        in.tg[i] = (int32_t)rng_below(1, 10, i, BV);
    }
    static const struct {
        const char *name, *shape;
        OpFn fn;
    } ops[] = {
        {"add", "[2048,256]+[2048,256]", f_add},
        {"bias_add", "[2048,1024]+[1024]", f_bias_add},
        {"scale", "[2048,256]", f_scale},
        {"mul", "[2048,256]*[2048,256]", f_mul},
        {"gelu", "[2048,1024]", f_gelu},
        {"bias_gelu", "[2048,1024]+[1024]", f_bias_gelu},
        {"layernorm", "[2048,256]", f_layernorm},
        {"softmax_masked", "[16,4,128,128] masks", f_softmax},
        {"embedding", "[8000,256] 2048 ids", f_embedding},
        {"gather_last", "[16,4,128,256] idx[128,128]", f_gather},
        {"index_select", "[2048,256] 300 rows", f_index_select},
        {"dropout", "[2048,1024] p=0.1", f_dropout},
        {"cross_entropy", "[300,8000]", f_ce},
        {"bce_logits", "[2048] masked", f_bce},
        {"sum", "[2048,1024]", f_sum},
        {"mean", "[2048,1024]", f_mean},
        {"transpose", "[16,4,128,64]", f_transpose},
        {"split_heads", "[16,128,256] H=4 (+reshape)", f_split},
        {"merge_heads", "[16,4,128,64]", f_merge},
    };
    Tape t;
    tape_init(&t, 256u << 20);
    double *tf = xmalloc(reps * sizeof(double)), *tb = xmalloc(reps * sizeof(double));
    real *dy = xcalloc_aligned((size_t)BB * BH * BT * 2 * BT * sizeof(real)); /* the largest output */
    for (long i = 0; i < (long)BB * BH * BT * 2 * BT; i++) dy[i] = (real)(rng_uniform(1, 11, i) - 0.5);
    printf("\nother ops at model shapes (median of %d runs after %d warm-up; backward from a given dY)\n", reps, warmup);
    printf("%-16s %-28s | %9s %9s\n", "op", "shapes", "fwd us", "bwd us");
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        for (int r = -warmup; r < reps; r++) {
            tape_reset(&t);
            double t0 = now_seconds();
            Tensor *y = ops[k].fn(&t, &in);
            double t1 = now_seconds();
            y->grad = dy;
            double t2 = now_seconds();
            tape_backward_from(&t, y, NULL);
            double t3 = now_seconds();
            if (r >= 0) {
                tf[r] = t1 - t0;
                tb[r] = t3 - t2;
            }
        }
        printf("%-16s %-28s | %9.1f %9.1f\n", ops[k].name, ops[k].shape, 1e6 * median(tf, reps), 1e6 * median(tb, reps));
        fflush(stdout);
    }
    free(tf);
    free(tb);
    free(dy);
    tape_free(&t);
    Tensor *all[] = {in.x, in.x2, in.b, in.g, in.bi, in.xi, in.tab, in.att, in.rel, in.heads, in.lg, in.lbce};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) bench_tensor_free(all[i]);
    int32_t *ints[] = {in.ids, in.tbce, in.valid, in.qm, in.km, in.idx, in.rows, in.tg};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) free(ints[i]);
}

int bench_ops(int argc, char **argv) {
    int reps = 21, warmup = 3, matmul_only = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--matmul-only")) matmul_only = 1;
        else if (!strcmp(argv[i], "--cpu-time")) use_cpu_time = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: deberta bench ops [--reps N (21)] [--warmup N (3)] [--matmul-only] [--cpu-time]\n"
                   "  GFLOP/s of op_matmul forward and backward for M x K x N = 2048x256x256, 2048x256x1024,\n"
                   "  2048x1024x256, every transpose variant, next to raw cblas gemm of the same products\n"
                   "  (interleaved in one run; median of N timed runs after the warm-up); then forward and\n"
                   "  backward times of every other op at model shapes.  --cpu-time: the matmul table uses the\n"
                   "  process CPU time instead of wall time (robust on a loaded machine).\n");
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
    double *fratio = xmalloc(reps * sizeof(double)), *bratio = xmalloc(reps * sizeof(double));
    printf("bench ops: %s, %d threads, median of %d runs after %d warm-up, %s; the op's gemm kernel %s, raw = BLAS "
           "core %s\n",
           REAL_IS_DOUBLE ? "dgemm" : "sgemm", omp_get_max_threads(), reps, warmup,
           use_cpu_time ? "CPU time of the process" : "wall time", gemm_kernel_name(), openblas_get_corename());
    printf("(GF/s from median times; ratio = op speed / raw speed: median of the per-run raw/op time ratios,\n"
           " and best = min raw time / min op time)\n");
    printf("%-16s %-5s | %9s %9s %6s %6s | %9s %9s %6s %6s\n", "M x K x N", "op", "fwd GF/s", "raw GF/s", "ratio", "best",
           "bwd GF/s", "raw GF/s", "ratio", "best");
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
                /* raw and op alternate which goes first, so that neither always meets warm caches */
                double fr = 0, fo = 0, br = 0, bo = 0;
                Tensor *c = NULL;
                for (int k = 0; k < 2; k++) {
                    if ((k == 0) == (r % 2 == 0)) { /* forward: one raw gemm */
                        double t0 = bench_clock();
                        cblas_gemm(CblasRowMajor, tr(ta), tr(tb), M, N, K, 1, a->data, a->shape[1], b->data, b->shape[1], 0, craw, N);
                        fr = bench_clock() - t0;
                    } else { /* forward: the op (output in the arena, node recorded) */
                        tape_reset(&t);
                        double t0 = bench_clock();
                        c = op_matmul(&t, a, b, ta, tb);
                        fo = bench_clock() - t0;
                    }
                }
                for (int k = 0; k < 2; k++) {
                    if ((k == 0) == (r % 2 == 0)) { /* backward: the two raw gemms */
                        double t0 = bench_clock();
                        raw_backward(a->grad, b->grad, dc, a->data, b->data, M, N, K, ta, tb);
                        br = bench_clock() - t0;
                    } else { /* backward: the op's, from dC (grads of a and b accumulate) */
                        c->grad = dc;
                        double t0 = bench_clock();
                        tape_backward_from(&t, c, NULL);
                        bo = bench_clock() - t0;
                    }
                }
                if (r >= 0) {
                    traw[r] = fr;
                    top[r] = fo;
                    braw[r] = br;
                    bop[r] = bo;
                }
            }
            /* ratio: median over runs of the paired raw/op time ratio of the same run (robust to
             * load changes on a shared machine); GF/s: medians of the times */
            for (int r = 0; r < reps; r++) {
                fratio[r] = traw[r] / top[r];
                bratio[r] = braw[r] / bop[r];
            }
            const double rf = median(fratio, reps), rb = median(bratio, reps);
            double mo = top[0], mr = traw[0], mbo = bop[0], mbr = braw[0]; /* best (min) times */
            for (int r = 1; r < reps; r++) {
                mo = top[r] < mo ? top[r] : mo;
                mr = traw[r] < mr ? traw[r] : mr;
                mbo = bop[r] < mbo ? bop[r] : mbo;
                mbr = braw[r] < mbr ? braw[r] : mbr;
            }
            const double f = 2.0 * M * N * K * 1e-9;
            const double fo = f / median(top, reps), fr = f / median(traw, reps);
            const double bo = 2 * f / median(bop, reps), br = 2 * f / median(braw, reps);
            char sh[32], op[8];
            snprintf(sh, sizeof sh, "%dx%dx%d", M, K, N);
            snprintf(op, sizeof op, "%s%s", ta ? "AT" : "A", tb ? "BT" : "B");
            printf("%-16s %-5s | %9.1f %9.1f %5.0f%% %5.0f%% | %9.1f %9.1f %5.0f%% %5.0f%%\n", sh, op, fo, fr, 100 * rf, 100 * mr / mo, bo,
                   br, 100 * rb, 100 * mbr / mbo);
            fflush(stdout);
            worst = rf < worst ? rf : worst;
            worst = rb < worst ? rb : worst;
            free(craw);
            free(dc);
            bench_tensor_free(a);
            bench_tensor_free(b);
        }
    }
    printf("lowest op/raw ratio (median): %.0f%% (target >= 90%%)\n", 100 * worst);
    { /* the op's own cost per call, on a 1x1x1 product: arena allocation + record + dispatch */
        Tensor *a = bench_tensor(1, 1, 4), *b = bench_tensor(1, 1, 5);
        real c1;
        enum { CALLS = 20000 };
        double best_op = 1e9, best_raw = 1e9;
        for (int r = 0; r < 5; r++) {
            tape_reset(&t);
            double t0 = now_seconds();
            for (int i = 0; i < CALLS; i++) op_matmul(&t, a, b, 0, 0);
            double t1 = now_seconds();
            for (int i = 0; i < CALLS; i++) cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 1, 1, 1, 1, a->data, 1, b->data, 1, 0, &c1, 1);
            double t2 = now_seconds();
            best_op = (t1 - t0) < best_op ? t1 - t0 : best_op;
            best_raw = (t2 - t1) < best_raw ? t2 - t1 : best_raw;
        }
        printf("op overhead per call (1x1x1, best of 5 x %d calls): op %.2f us, raw gemm %.2f us\n", CALLS, 1e6 * best_op / CALLS,
               1e6 * best_raw / CALLS);
        bench_tensor_free(a);
        bench_tensor_free(b);
    }
    if (!matmul_only) bench_other_ops(reps, warmup);
    free(top);
    free(traw);
    free(bop);
    free(braw);
    free(fratio);
    free(bratio);
    tape_free(&t);
    return 0;
}
