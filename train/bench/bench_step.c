/* bench_step.c — `deberta bench [step]`: times the full pretraining step exactly as the training
 * loop runs it (train/pretrain.c pretrain_step: generator forward/backward, sampling, discriminator
 * forward/backward, both optimizer updates; decoupled GDES and dropout 0.1 unless flags say
 * otherwise) on synthetic batches: random ids, full length (no padding, as the reference's bench),
 * masked by the loader's own official masking (mask_sequence, p = 0.15).  Four distinct batches are
 * cycled.  After --warmup steps, the median of --steps timed steps.
 *
 * Reports: ms/step, tokens/s, model FLOPs per step (docs/PERFORMANCE.md: matmul FLOPs, 2·M·N·K
 * forward and twice that backward), GFLOP/s, the raw sgemm rate of a big square product measured in
 * the same run (and the fraction of it the step achieves), peak RSS, the phases of the step and a
 * per-op-kind time table (extra profiled steps after the timed ones, so the timing is clean), then a
 * RESULT {json} line for scripts/bench-vs-torch.sh. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "autograd/gemm.h"
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include "data/loader.h"
#include "train/bench/bench.h"
#include "train/step.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: deberta bench [step] [--preset tiny|xsmall] [--seq T] [--batch B] [--steps N] [--warmup N]\n"
            "                     [--threads N] [--profile N] [--no-sgemm] [--KEY VALUE ...]\n"
            "Times the full pretraining step (generator fwd/bwd, sampling, discriminator fwd/bwd, both\n"
            "updates) on synthetic masked batches: median of --steps (default 20) after --warmup (3).\n"
            "--profile N: N extra steps timed per op kind (default 3; 0 = none).  Config keys as flags\n"
            "(--hidden_dropout_prob 0, --training_mode joint, ...).  Prints a RESULT {json} line last.\n");
}

/* Matmul FLOPs of one full step (docs/PERFORMANCE.md, "Model FLOPs"): forward ×3 for
 * forward + backward.  Per layer application and token: 8H² (q, k, v, o) + 4HI (FFN) + 2TH for
 * P·V + 2TH for c2c + 2RH per position term; per layer application: 2RH² per position term (the
 * table projections, once per forward); LM head at the masked rows: 2H² + 2HV; RTD head per
 * token: 2H² + 2H. */
static double bench_model_flops(const ModelConfig *c, int B, int T, long n_masked) {
    const double H = c->hidden_size, FF = c->intermediate_size, V = c->vocab_size;
    const double AD = (double)c->num_attention_heads * c->attention_head_size;
    const double R = config_rel_rows(c);
    const int npos = !!(c->att_terms & ATT_C2P) + !!(c->att_terms & ATT_P2C);
    const int c2c = !!(c->att_terms & ATT_C2C);
    const double per_tok = 6 * H * AD + 2 * AD * H + 4 * H * FF + 2.0 * T * AD * (1 + c2c) + 2 * R * AD * npos;
    const double per_fwd = 2 * R * H * AD * npos;
    /* layer applications with a backward: the discriminator's, the generator's (with EMD not its last
     * layer's own output, which nothing reads and the step does not compute) and the two EMD passes */
    const int Lg = c->gen_num_hidden_layers;
    const int apps = c->num_hidden_layers + Lg - (c->use_emd && Lg >= 2 ? 1 : 0) + (c->use_emd ? 2 : 0);
    double fwd = apps * ((double)B * T * per_tok + per_fwd);
    fwd += (double)n_masked * (2 * H * H + 2 * H * V) + (double)B * T * (2 * H * H + 2 * H);
    return 3 * fwd;
}

/* Best GFLOP/s of a square n×n×n sgemm/dgemm over `reps` runs of each of the two ways the project
 * can call it (after one warm-up): one BLAS call threaded by the library, and autograd/gemm.h's
 * split among the OpenMP threads (with the own AVX-512 kernel where it runs), alternating.  The better
 * one is the peak the step is measured against. */
static double bench_gemm_peak(int n, int reps, double *blas, double *split) {
    real *a = xcalloc_aligned((size_t)n * n * sizeof(real)), *b = xcalloc_aligned((size_t)n * n * sizeof(real)),
         *c = xcalloc_aligned((size_t)n * n * sizeof(real));
    for (long i = 0; i < (long)n * n; i++) {
        a[i] = (real)(rng_uniform(7, 1, (uint64_t)i) - 0.5);
        b[i] = (real)(rng_uniform(7, 2, (uint64_t)i) - 0.5);
    }
    double best[2] = {0, 0};
    for (int r = 0; r <= 2 * reps + 1; r++) {
        const double t0 = now_seconds();
        if (r % 2)
            gemm(0, 0, n, n, n, 1, a, n, b, n, 0, c, n);
        else
            cblas_gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
        const double gf = 2.0 * n * n * n / (now_seconds() - t0) / 1e9;
        if (r > 1 && gf > best[r % 2]) best[r % 2] = gf;
    }
    free(a);
    free(b);
    free(c);
    *blas = best[0];
    *split = best[1];
    return best[0] > best[1] ? best[0] : best[1];
}

/* Full-length synthetic batch: [CLS] random ids [SEP], official masking. */
static void synth_batch(Batch *b, const ModelConfig *c, uint64_t seed, int which) {
    const int B = b->B, T = b->T;
    b->n_masked = b->n_tokens = 0;
    for (int s = 0; s < B; s++) {
        int32_t *ids = b->input_ids + (long)s * T, *lab = b->labels + (long)s * T, *am = b->attention_mask + (long)s * T;
        for (int i = 0; i < T; i++) {
            ids[i] = 5 + (int32_t)rng_below(seed, rng_stream(RNG_TEST, (uint64_t)which, (uint64_t)s), (uint64_t)i,
                                            (uint64_t)(c->vocab_size - 5));
            am[i] = 1;
        }
        ids[0] = c->cls_id;
        ids[T - 1] = c->sep_id;
        b->n_tokens += T;
        b->n_masked += mask_sequence(ids, lab, T, T, MASK_OFFICIAL, 0.15, c->vocab_size, seed,
                                     rng_stream(RNG_MASK, (uint64_t)which, 0), (uint64_t)s << 20);
    }
}

static long peak_rss_kb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static const char *phase_names[PHASE_COUNT] = {"generator forward", "sampling", "generator backward", "generator update",
                                               "discriminator forward", "discriminator backward", "discriminator update",
                                               "gradient allreduce"};

typedef struct {
    int op, bwd;
    double s, mb;
    long n;
} ProfRow;
static int cmp_prof(const void *a, const void *b) {
    double x = ((const ProfRow *)a)->s, y = ((const ProfRow *)b)->s;
    return (x < y) - (x > y);
}

/* the mode's own flag (bench_parse_flags does the shared ones); ctx = do_sgemm */
static int step_flag(void *ctx, int argc, char **argv, int *i) {
    if (strcmp(argv[*i], "--no-sgemm")) return 0;
    *(int *)ctx = 0;
    return 1;
}

int bench_step(int argc, char **argv, const char *wait) {
    ModelConfig cfg;
    config_preset(&cfg, "tiny");
    int B = 16, T = 0, steps = 20, warmup = 3, threads = 0, prof_steps = 3, do_sgemm = 1;
    const BenchFlags fl = {.who = "bench", .help_cmd = "bench step", .usage = usage, .batch = &B, .seq = &T, .steps = &steps,
                           .warmup = &warmup, .threads = &threads, .profile = &prof_steps, .extra = step_flag, .ctx = &do_sgemm};
    const int rc = bench_parse_flags(&fl, &cfg, argc, argv);
    if (rc >= 0) return rc;
    char err[512];
    if (T > 0) cfg.max_seq_len = T;
    T = cfg.max_seq_len;
    if (config_validate(&cfg, err, sizeof err)) fatal("bench: %s", err);
    if (B < 1 || T < 4 || T > cfg.max_position_embeddings || steps < 1 || warmup < 0 || prof_steps < 0)
        fatal("bench: need --batch >= 1, 4 <= --seq <= %d, --steps >= 1", cfg.max_position_embeddings);
    threads_set(threads);
    threads = omp_get_max_threads();

    Electra m;
    electra_build(&m, &cfg, 1234);
    Tape t;
    tape_init(&t, (size_t)64 << 20);
    t.seed = 1234;
    OptimConfig oc;
    optim_config_default(&oc, OPTIM_ADAMW);
    oc.lr = 1e-4;
    oc.schedule = OPTIM_SCHED_CONSTANT;
    oc.total_steps = 1000000;
    OptimMoments moments;
    optim_moments_init(&moments, &m.ps, oc.opt);
    OptimGroup groups[2];
    if (cfg.training_mode == TRAIN_DECOUPLED) {
        optim_group_init(&groups[0], "generator", &oc, &m.ps, &moments, "generator.");
        optim_group_init(&groups[1], "discriminator", &oc, &m.ps, &moments, "discriminator.");
    } else {
        optim_group_init(&groups[0], "all", &oc, &m.ps, &moments, NULL);
    }
    enum { NB = 4 };
    Batch batches[NB];
    long masked_sum = 0;
    for (int i = 0; i < NB; i++) {
        batch_alloc(&batches[i], B, T);
        synth_batch(&batches[i], &cfg, 1234, i);
        masked_sum += batches[i].n_masked;
    }
    int32_t *replaced = xmalloc((size_t)B * T * sizeof(int32_t));
    int32_t *rep[1] = {replaced};

    double *ms = xcalloc((size_t)steps, sizeof(double));
    double phase[PHASE_COUNT] = {0};
    StepStats last;
    memset(&last, 0, sizeof last);
    uint64_t allocs_after_warmup = 0;
    for (int s = 0; s < warmup + steps; s++) {
        if (s == warmup) allocs_after_warmup = g_alloc_count;
        const StepCtx c = {&m, &t, groups, &batches[s % NB], rep, 1, 1234, NULL};
        const double t0 = now_seconds();
        last = pretrain_step(&c, s, 1);
        const double dt = now_seconds() - t0;
        if (s >= warmup) {
            ms[s - warmup] = dt * 1e3;
            for (int p = 0; p < PHASE_COUNT; p++) phase[p] += last.phase[p];
        }
    }
    const uint64_t step_allocs = g_alloc_count - allocs_after_warmup;
    const double med = median(ms, steps), mn = ms[0], mx = ms[steps - 1];
    const long rss = peak_rss_kb(); /* before the sgemm's own buffers */

    /* per-op-kind profile over extra steps */
    TapeProfile prof;
    memset(&prof, 0, sizeof prof);
    double prof_total = 0;
    if (prof_steps > 0) {
        t.prof = &prof;
        for (int s = 0; s < prof_steps; s++) {
            const StepCtx c = {&m, &t, groups, &batches[s % NB], rep, 1, 1234, NULL};
            const double t0 = now_seconds();
            pretrain_step(&c, warmup + steps + s, 1);
            prof_total += now_seconds() - t0;
        }
        t.prof = NULL;
    }
    double peak_blas = 0, peak_split = 0;
    const double peak = do_sgemm ? bench_gemm_peak(REAL_IS_DOUBLE ? 1536 : 2048, 5, &peak_blas, &peak_split) : 0;

    const double n_masked = (double)masked_sum / NB;
    const double flops = bench_model_flops(&cfg, B, T, (long)(n_masked + 0.5));
    const double gflops = flops / 1e9 / (med / 1e3);
    const double tok_s = (double)B * T / (med / 1e3);
    printf("bench step: preset H=%d L=%d+%d A=%d I=%d V=%d R=%d %s/%s dropout=%g B=%d T=%d threads=%d %s gemm kernel %s, "
           "BLAS core %s\n",
           cfg.hidden_size, cfg.gen_num_hidden_layers, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.intermediate_size,
           cfg.vocab_size, config_rel_rows(&cfg), config_sharing_str(cfg.embedding_sharing), config_mode_str(cfg.training_mode),
           cfg.hidden_dropout_prob, B, T, threads, REAL_NAME, gemm_kernel_name(), openblas_get_corename());
    printf("  median %.1f ms/step (min %.1f, max %.1f, %d steps after %d warm-up)  %.0f tokens/s\n", med, mn, mx, steps, warmup,
           tok_s);
    printf("  model %.1f GFLOP/step (%.0f masked rows)  %.1f GFLOP/s", flops / 1e9, n_masked, gflops);
    if (do_sgemm)
        printf("  = %.0f%% of raw %s peak %.1f GFLOP/s (%d^3, same run: OpenBLAS call %.1f, gemm.h %.1f)", 100 * gflops / peak,
               REAL_IS_DOUBLE ? "dgemm" : "sgemm", peak, REAL_IS_DOUBLE ? 1536 : 2048, peak_blas, peak_split);
    printf("\n  peak RSS %.0f MB  arena %.1f MB  heap allocations in the timed steps: %llu\n", rss / 1024.0,
           t.arena.cap / 1048576.0, (unsigned long long)step_allocs);
    printf("  OpenMP wait policy: %s\n", wait);
    printf("  phases (mean ms/step):");
    for (int p = 0; p < PHASE_COUNT; p++) printf("%s %s %.1f", p ? "," : "", phase_names[p], phase[p] * 1e3 / steps);
    printf("\n");
    if (prof_steps > 0) {
        ProfRow rows[2 * OP_COUNT];
        int nr = 0;
        double sum = 0;
        for (int op = 1; op < OP_COUNT; op++)
            for (int bw = 0; bw < 2; bw++) {
                const double s = bw ? prof.bwd[op] : prof.fwd[op];
                const long n = bw ? prof.nbwd[op] : prof.nfwd[op];
                if (n == 0) continue;
                rows[nr++] = (ProfRow){op, bw, s, bw ? prof.mbbwd[op] : prof.mbfwd[op], n};
                sum += s;
            }
        qsort(rows, (size_t)nr, sizeof rows[0], cmp_prof);
        printf("  per op kind over %d profiled steps (ms/step; forward includes the glue code before the op):\n", prof_steps);
        printf("    %-31s %-4s %9s %7s %8s %10s\n", "op", "pass", "ms/step", "share", "calls", "arena MB");
        for (int i = 0; i < nr; i++)
            printf("    %-31s %-4s %9.2f %6.1f%% %8.0f %10.1f\n", op_table[rows[i].op].name, rows[i].bwd ? "bwd" : "fwd",
                   rows[i].s * 1e3 / prof_steps, 100 * rows[i].s / prof_total, (double)rows[i].n / prof_steps,
                   rows[i].mb / prof_steps / 1048576.0);
        printf("    %-31s %-4s %9.2f %6.1f%%\n", "(outside ops: sampling, optimizer, ...)", "", (prof_total - sum) * 1e3 / prof_steps,
               100 * (prof_total - sum) / prof_total);
    }
    printf("RESULT {\"part\": \"step\", \"batch\": %d, \"seq\": %d, \"hidden\": %d, \"threads\": %d, \"real\": \"%s\", "
           "\"ms_median\": %.3f, \"ms_min\": %.3f, \"ms_max\": %.3f, \"tokens_per_s\": %.1f, \"model_gflop\": %.3f, "
           "\"gflops\": %.2f, \"gemm_peak_gflops\": %.2f, \"peak_rss_mb\": %.1f, \"step_allocs\": %llu, \"mlm_loss\": %.5f, "
           "\"rtd_loss\": %.5f, \"blas_core\": \"%s\", \"gemm_kernel\": \"%s\", \"gemm_peak_blas\": %.2f, "
           "\"gemm_peak_split\": %.2f, \"omp_wait\": \"%s\", \"dropout\": %g, \"attention_dropout\": %g}\n",
           B, T, cfg.hidden_size, threads, REAL_NAME, med, mn, mx, tok_s, flops / 1e9, gflops, peak, rss / 1024.0,
           (unsigned long long)step_allocs, last.g_loss, last.d_loss, openblas_get_corename(), gemm_kernel_name(), peak_blas,
           peak_split, wait, cfg.hidden_dropout_prob, cfg.attention_probs_dropout_prob);
    free(ms);
    free(replaced);
    for (int i = 0; i < NB; i++) batch_free(&batches[i]);
    for (int i = 0; i < (cfg.training_mode == TRAIN_DECOUPLED ? 2 : 1); i++) optim_group_free(&groups[i]);
    tape_free(&t);
    optim_moments_free(&moments);
    electra_free(&m);
    return 0;
}
