/* cmd_bench.c — `deberta bench <mode> [options]`: benchmarks (never tests).  One line per mode in
 * the table below; each mode lives in its own train/bench/bench_*.c and is declared in train/bench/bench.h. */
#include <stdio.h>
#include <string.h>
#include "train/bench/bench.h"
#include "train/cli/cli.h"

typedef struct {
    const char *name;
    int (*fn)(int, char **);
    const char *help;
} BenchMode;

static int step_mode(int argc, char **argv) {
    char wait[160];
    return bench_step(argc, argv, omp_wait_describe(wait, sizeof wait));
}

static const BenchMode modes[] = {
    {"step", step_mode, "the full pretraining step: ms, tokens/s, GFLOP/s vs sgemm peak, RSS, per-op times (default)"},
    {"ops", bench_ops, "GFLOP/s of the matmul op (forward, backward) next to raw cblas gemm"},
    {"attention", bench_attention, "fwd+bwd ms of one attention block / one layer (vs scripts/bench-attention.sh)"},
    {"allreduce", bench_allreduce, "under mpirun: ms of the step's gradient allreduces alone, and the bandwidth"},
};

static void bench_usage(FILE *f) {
    fprintf(f, "usage: deberta bench [<mode>] [options]   (deberta bench <mode> --help; no mode = step)\n\nmodes:\n");
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) fprintf(f, "  %-10s %s\n", modes[i].name, modes[i].help);
}

int cmd_bench(int argc, char **argv) {
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        bench_usage(stdout);
        return 0;
    }
    if (argc < 2 || argv[1][0] == '-') return step_mode(argc, argv); /* default mode: options only */
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (!strcmp(argv[1], modes[i].name)) return modes[i].fn(argc - 1, argv + 1);
    return cli_usage_error("bench", "unknown mode '%s'", argv[1]);
}
