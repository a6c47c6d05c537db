/* bench.h — the modes of `deberta bench` (train/cli/cmd_bench.c dispatches on argv[1]).
 * Each mode gets argv shifted so that argv[0] is its own name. */
#ifndef DEBERTA_BENCH_H
#define DEBERTA_BENCH_H
#include <stdio.h>
#include "model/config.h"

int bench_ops(int argc, char **argv); /* GFLOP/s of the matmul op vs raw cblas gemm (train/bench/bench_ops.c) */
int bench_attention(int argc, char **argv); /* one attention block / one layer fwd+bwd (train/bench/bench_attention.c) */
int bench_allreduce(int argc, char **argv); /* the step's gradient allreduces under mpirun (train/bench/bench_allreduce.c) */
/* The full pretraining step, the default mode (train/bench/bench_step.c); wait: the OpenMP wait policy
 * as the command line describes it (train/cli/cli.h omp_wait_describe), printed with the results. */
int bench_step(int argc, char **argv, const char *wait);

/* The flags the modes share (train/bench/bench_flags.c): -h/--help, --batch, --seq, --steps, --warmup,
 * --threads, --profile (each an int; a NULL target = the mode has no such flag), then the mode's own
 * flags (extra: 1 = taken, advancing *i past any value; 0 = not one of its), then config keys as flags
 * (--preset, --hidden_size 64, ...; a bad one is fatal: "error: <who>: <reason>").  Anything else:
 * "error: <who>: unknown argument 'X' (see deberta <help_cmd> --help)" on stderr. */
typedef struct {
    const char *who, *help_cmd;
    void (*usage)(FILE *);
    int *batch, *seq, *steps, *warmup, *threads, *profile;
    int (*extra)(void *ctx, int argc, char **argv, int *i);
    void *ctx;
} BenchFlags;
/* Parses argv[1..]; returns -1 to go on, else the mode's exit code (0 after --help, 2 after an
 * unknown argument). */
int bench_parse_flags(const BenchFlags *f, ModelConfig *cfg, int argc, char **argv);

#endif
