/* memory.c — see memory.h. */
#include "train/memory.h"
#include <stdio.h>
#include <string.h>
#include "autograd/tensor.h"
#include "autograd/base/util.h"
#include "model/electra.h"

/* Per token of a micro-batch (N = B·T tokens), with Lt = generator + discriminator layers,
 * W = max(H, heads·head_size), R = rows of the relative-position table (2·S):
 *   Lt·(2·W + 4·I + heads·T + heads·R) + 0.6·V + 60·W   elements.
 * An upper bound of the arena peak of one pretrain_step, first fitted at 12 shapes (B·T from 256 to
 * 4096, H 64–256, I 256–1024, heads 4–8, V 1,000–8,000, 3–6 layers) as Lt·(4·W + 4·I + 3·heads·T +
 * 2·heads·R) + ...; refitted when the heads stayed in the projections' layout, LN(dropout + residual)
 * became one op and the attention backward's gathered gradients became per thread (the peak fell);
 * refitted again when P·V joined the attention op (no dropped [B, A, T, T] tensor or gradient: heads·T
 * per layer and token instead of 2·heads·T).  How far above the measured peak it lands:
 * tests/test_memory.c prints it at three shapes (docs/PERFORMANCE.md, "Memory estimate"). */
double memory_arena_elements(const ModelConfig *c, int B) {
    const double T = c->max_seq_len, N = (double)B * T, A = c->num_attention_heads;
    const double W = MAX((double)c->hidden_size, A * (double)c->attention_head_size);
    const double S = c->position_buckets > 0 ? c->position_buckets : c->max_relative_positions;
    const double Lt = (double)c->num_hidden_layers + (double)c->gen_num_hidden_layers;
    return N * (Lt * (2 * W + 4.0 * c->intermediate_size + A * T + A * 2 * S) + 0.6 * c->vocab_size + 60 * W);
}

double memory_forward_arena_bytes(const ModelConfig *c, int T, int B) {
    ModelConfig fwd = *c;
    fwd.max_seq_len = T;
    fwd.gen_num_hidden_layers = 0; /* the formula's layer count: the discriminator's alone */
    return MAX((double)(64 << 20), memory_arena_elements(&fwd, B) * sizeof(real));
}

void memory_estimate(const ModelConfig *c, int B, const Optimizer *opt, MemEstimate *e) {
    memset(e, 0, sizeof *e);
    e->param_elements = electra_param_slots(c);
    e->state_bytes = (2 + (opt ? opt : OPTIMIZERS[0])->n_state) * e->param_elements * sizeof(real); /* data, grad, the state buffers */
    /* the arena regrows to the peak + 1/8 (autograd/tensor.h) and starts at 64 MiB */
    e->arena_bytes = MAX((double)(64 << 20), 1.125 * memory_arena_elements(c, B) * sizeof(real));
    e->total_bytes = e->state_bytes + e->arena_bytes;
}

double memory_available_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return -1;
    char line[256];
    double kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

int memory_check(const ModelConfig *c, int B, const Optimizer *opt, double avail, char *err, size_t errlen) {
    MemEstimate e;
    memory_estimate(c, B, opt, &e);
    if (avail < 0 || e.total_bytes <= avail) return 0;
    const double G = 1024.0 * 1024 * 1024;
    return errf(err, errlen,
                "pretrain: this run needs about %.1f GiB: %.4g parameters (%.1f GiB with their gradients and optimizer state) and "
                "one step of %d x %d tokens (about %.1f GiB of activations), but only %.1f GiB is available (MemAvailable, "
                "/proc/meminfo); lower --batch or --max_seq_len, or choose a smaller model",
                e.total_bytes / G, e.param_elements, e.state_bytes / G, B, c->max_seq_len, e.arena_bytes / G, avail / G);
}
