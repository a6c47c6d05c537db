/* moments.h — the optimizer moments (train/optim.h) of the parameter sets a suite builds on the
 * stack, looked up by the set's address, so that the suites read as before the moments moved out of
 * ParamSet.  Included by test_checkpoint.c and test_optim.c. */
#ifndef DEBERTA_TESTS_MOMENTS_H
#define DEBERTA_TESTS_MOMENTS_H
#include "autograd/tensor.h"
#include "train/optim.h"

/* The moments of ps: created on first use (again when ps was rebuilt), freed with ps by free_set. */
static struct { const ParamSet *ps; OptimMoments mo; } MOMENTS[16];

static OptimMoments *MO(const ParamSet *ps) {
    int free_slot = -1;
    for (int i = 0; i < 16; i++) {
        if (MOMENTS[i].ps == ps) {
            if (MOMENTS[i].mo.total == ps->total) return &MOMENTS[i].mo;
            optim_moments_free(&MOMENTS[i].mo); /* the set was rebuilt */
            optim_moments_init(&MOMENTS[i].mo, ps, NULL);
            return &MOMENTS[i].mo;
        }
        if (!MOMENTS[i].ps && free_slot < 0) free_slot = i;
    }
    if (free_slot < 0) fail_msg("too many parameter sets");
    MOMENTS[free_slot].ps = ps;
    optim_moments_init(&MOMENTS[free_slot].mo, ps, NULL);
    return &MOMENTS[free_slot].mo;
}

static void free_set(ParamSet *ps) {
    for (int i = 0; i < 16; i++)
        if (MOMENTS[i].ps == ps) {
            optim_moments_free(&MOMENTS[i].mo);
            MOMENTS[i].ps = NULL;
        }
    params_free(ps);
}

#endif
