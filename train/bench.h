/* bench.h — the modes of `deberta bench` (train/cmd_bench.c dispatches on argv[1]).
 * Each mode gets argv shifted so that argv[0] is its own name. */
#ifndef DEBERTA_BENCH_H
#define DEBERTA_BENCH_H
int bench_ops(int argc, char **argv); /* GFLOP/s of the matmul op vs raw cblas gemm (train/bench_ops.c) */
int bench_attention(int argc, char **argv); /* one attention block / one layer fwd+bwd (train/bench_attention.c) */
#endif
