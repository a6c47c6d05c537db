/* bench_allreduce.c — `mpirun -np N deberta bench allreduce [--preset tiny|xsmall ...]`: the time of
 * the step's gradient allreduces alone (train/step.c: the generator's span of the flat gradient
 * buffer, then the discriminator's), on the model a preset builds, with no training around them.
 * Next to the "gradient allreduce" time a pretraining run reports (which also holds the wait for
 * the slowest rank), this is the transfer itself.  Prints ms per step, the bytes each rank sends
 * and receives in a ring allreduce (2(N-1)/N x the buffer), and the bandwidth that implies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "model/electra.h"
#include "train/bench/bench.h"
#include "train/dist.h"

static void usage(FILE *f) {
    fprintf(f, "usage: mpirun -np N deberta bench allreduce [--steps K] [--warmup W] [--preset tiny|xsmall] [config keys]\n"
               "  the generator's and the discriminator's gradient allreduce of one step, K times (default 20, after 3)\n");
}

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int bench_allreduce(int argc, char **argv) {
    ModelConfig cfg;
    config_defaults(&cfg);
    int steps = 20, warmup = 3;
    const BenchFlags f = {"bench allreduce", "bench allreduce", usage, NULL, NULL, &steps, &warmup, NULL, NULL, NULL, NULL};
    const int rc = bench_parse_flags(&f, &cfg, argc, argv);
    if (rc >= 0) return rc;
    char err[512];
    if (config_validate(&cfg, err, sizeof err)) fatal("bench allreduce: %s", err);
    dist_init(&argc, &argv);
    const int W = dist_world();
    Electra m;
    electra_build(&m, &cfg, 1234);
    const ParamSet *ps = &m.ps;
    const long n_gen = ps->offset[m.n_gen_params], n_all = ps->total;
    for (long i = 0; i < n_all; i++) ps->grad[i] = (real)1e-3;
    double *t = xcalloc((size_t)steps, sizeof(double));
    for (int s = -warmup; s < steps; s++) {
        dist_barrier();
        const double t0 = now_seconds();
        dist_allreduce_real(ps->grad, n_gen);
        dist_allreduce_real(ps->grad + n_gen, n_all - n_gen);
        const double dt = now_seconds() - t0;
        if (s >= 0) t[s] = dt;
    }
    double mine[1] = {0};
    qsort(t, (size_t)steps, sizeof *t, cmp_double);
    mine[0] = t[steps / 2];
    dist_allreduce_double(mine, 1); /* the mean over ranks of each rank's median */
    if (dist_rank() == 0) {
        const double ms = mine[0] / W * 1e3, bytes = (double)n_all * sizeof(real), ring = W > 1 ? 2.0 * (W - 1) / W * bytes : 0;
        printf("allreduce: %d ranks, %ld parameters (%.1f MB of %s gradients; generator %ld, discriminator %ld): "
               "%.3f ms per step (median of %d), ring traffic %.1f MB per rank per step -> %.2f GB/s\n",
               W, params_count(ps), bytes / 1e6, sizeof(real) == 8 ? "double" : "float", n_gen, n_all - n_gen, ms, steps, ring / 1e6,
               ms > 0 ? ring / (ms * 1e-3) / 1e9 : 0.0);
    }
    free(t);
    electra_free(&m);
    dist_finalize();
    return 0;
}
