/* memory.h — the memory a pretraining run needs, estimated from its config before anything is built
 * or created, against the memory the machine has available (/proc/meminfo MemAvailable). */
#ifndef DEBERTA_MEMORY_H
#define DEBERTA_MEMORY_H
#include <stddef.h>
#include "model/config.h"
#include "train/optim.h"

typedef struct MemEstimate {
    double param_elements;  /* elements of the flat parameter buffer (padding included) */
    double state_bytes;     /* parameters, gradients and the optimizer's state buffers */
    double arena_bytes;     /* the step's arena: activations, their gradients, tape records */
    double total_bytes;
} MemEstimate;

/* Floats per step of the arena peak for micro-batches of B sequences of cfg->max_seq_len tokens
 * (the formula of memory.c; calibrated against measured arena peaks: tests/test_memory.c). */
double memory_arena_elements(const ModelConfig *cfg, int B);
/* Bytes of the arena that a forward of the encoder and a task head (deberta predict; nothing recorded)
 * reserves for micro-batches of B sequences of T tokens: the formula above at T with no generator
 * layers, an upper bound of the forward's peak (tests/test_memory.c), and at least 64 MiB. */
double memory_forward_arena_bytes(const ModelConfig *cfg, int T, int B);
/* opt: the optimizer (its n_state buffers per parameter); NULL: the default. */
void memory_estimate(const ModelConfig *cfg, int B, const Optimizer *opt, MemEstimate *e);
/* MemAvailable of /proc/meminfo in bytes, or -1 when unknown. */
double memory_available_bytes(void);
/* 0 when the estimate fits in avail_bytes (< 0: unknown, always fits); else -1 and one message. */
int memory_check(const ModelConfig *cfg, int B, const Optimizer *opt, double avail_bytes, char *err, size_t errlen);
#endif
