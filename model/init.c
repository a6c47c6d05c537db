/* init.c — see init.h */
#include "model/init.h"
#include <string.h>
#include "autograd/base/rng.h"

static int ends_with(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

enum { INIT_NORMAL, INIT_ONE, INIT_ZERO_BIAS, INIT_ZERO_DELTA };

static int kind_of(const char *name) {
    if (ends_with(name, "LayerNorm.weight")) return INIT_ONE;
    if (ends_with(name, "bias")) return INIT_ZERO_BIAS;
    if (ends_with(name, "._weight")) return INIT_ZERO_DELTA;
    return INIT_NORMAL;
}

void model_init_params(ParamSet *ps, double range, uint64_t seed) {
    for (int i = 0; i < ps->n; i++) {
        Tensor *p = ps->params[i];
        const int kind = kind_of(p->name);
        const uint64_t stream = rng_stream(RNG_INIT, (uint64_t)i, 0);
#pragma omp parallel for schedule(static) if (p->n >= 65536)
        for (long e = 0; e < p->n; e++)
            p->data[e] = kind == INIT_NORMAL ? (real)(range * rng_normal(seed, stream, (uint64_t)e)) : kind == INIT_ONE ? 1 : 0;
    }
}

void model_perturb_params(ParamSet *ps, uint64_t seed) {
    for (int i = 0; i < ps->n; i++) {
        Tensor *p = ps->params[i];
        const int kind = kind_of(p->name);
        if (kind == INIT_NORMAL) continue;
        const double s = kind == INIT_ONE ? 0.1 : kind == INIT_ZERO_BIAS ? 0.05 : 0.01;
        const uint64_t stream = rng_stream(RNG_TEST, 5000 + (uint64_t)i, 0);
        for (long e = 0; e < p->n; e++) p->data[e] = (real)((kind == INIT_ONE ? 1.0 : 0.0) + s * rng_normal(seed, stream, (uint64_t)e));
    }
}
