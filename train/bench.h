/* bench.h — the modes of `deberta bench` (train/cmd_bench.c dispatches on argv[1]).
 * Each mode gets argv shifted so that argv[0] is its own name. */
#ifndef DEBERTA_BENCH_H
#define DEBERTA_BENCH_H
int bench_ops(int argc, char **argv); /* GFLOP/s of the matmul op vs raw cblas gemm (train/bench_ops.c) */
int bench_attention(int argc, char **argv); /* one attention block / one layer fwd+bwd (train/bench_attention.c) */
int bench_step(int argc, char **argv); /* the full pretraining step, the default mode (train/bench_step.c) */
#include "model/config.h"
double bench_model_flops(const ModelConfig *c, int B, int T, long n_masked); /* matmul FLOPs of one step */
double bench_gemm_peak(int n, int reps); /* best GFLOP/s of an n^3 gemm */
#endif
