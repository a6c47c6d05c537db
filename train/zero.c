/* zero.c — ZeRO-1's collectives; see zero.h. */
#include "train/zero.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "autograd/base/util.h"
#include "train/dist.h"

static void sum_partials(double *partial, int n) { dist_allreduce_double(partial, n); }

void zero_init(Zero *z, int on, OptimGroup *groups, int n_groups, const ParamSet *ps, OptimMoments *mo) {
    memset(z, 0, sizeof *z);
    z->rank = dist_rank();
    z->world = dist_world();
    z->groups = groups;
    z->n_groups = n_groups;
    z->ps = ps;
    z->mo = mo;
    z->on = on && z->world > 1;
    if (!z->on) return;
    if (n_groups > ZERO_MAX_GROUPS) fatal("ZeRO-1: %d optimizer groups, at most %d", n_groups, ZERO_MAX_GROUPS);
    for (int i = 0; i < n_groups; i++) {
        optim_group_shard(&groups[i], z->rank, z->world);
        groups[i].sum_partials = sum_partials;
        z->counts[i] = xmalloc((size_t)z->world * sizeof(long));
        long begin;
        for (int r = 0; r < z->world; r++) z->counts[i][r] = optim_shard_span(&groups[i], r, &begin);
    }
}

void zero_free(Zero *z) {
    for (int i = 0; i < ZERO_MAX_GROUPS; i++) free(z->counts[i]);
    memset(z, 0, sizeof *z);
}

static const long *counts_of(const Zero *z, const OptimGroup *g) {
    for (int i = 0; z && z->on && i < z->n_groups; i++)
        if (&z->groups[i] == g) return z->counts[i];
    return NULL;
}

void zero_sync_grads(const Zero *z, OptimGroup *g, int bad) {
    if (dist_world() == 1) return;
    real *lo = g->p[0].t->grad, *hi = lo;
    for (int k = 0; k < g->n; k++) {
        real *a = g->p[k].t->grad, *b = a + g->p[k].t->n;
        lo = a < lo ? a : lo;
        hi = b > hi ? b : hi;
    }
    if (bad) lo[0] = (real)NAN;
    const long *n = counts_of(z, g);
    if (n) dist_reduce_scatter_real(lo, n);
    else dist_allreduce_real(lo, (long)(hi - lo));
}

void zero_after_update(const Zero *z, OptimGroup *g) {
    const long *n = counts_of(z, g);
    if (n) dist_allgather_real(g->p[0].t->data, n);
}

double zero_release(const Zero *z) {
    if (!z->on) return (double)z->mo->n * z->ps->total * sizeof(real);
    const long page = sysconf(_SC_PAGESIZE);
    double kept = 0;
    for (int i = 0; i < z->n_groups; i++) {
        const long base = z->groups[i].p[0].t->grad - z->ps->grad;
        long begin = 0; /* the shards tile the group's span in rank order */
        for (int q = 0; q < z->world; q++) {
            const long n = z->counts[i][q];
            if (q == z->rank) kept += (double)z->mo->n * n * sizeof(real);
            for (int b = 0; b < z->mo->n && q != z->rank; b++) {
                uintptr_t a0 = (uintptr_t)(z->mo->buf[b] + base + begin), a1 = (uintptr_t)(z->mo->buf[b] + base + begin + n);
                a0 = (a0 + page - 1) / page * page;
                a1 = a1 / page * page;
                if (a1 > a0) madvise((void *)a0, a1 - a0, MADV_DONTNEED);
            }
            begin += n;
        }
    }
    return kept;
}

void zero_gather_for_save(const Zero *z) {
    if (!z->on) return;
    for (int i = 0; i < z->n_groups; i++) {
        const long base = z->groups[i].p[0].t->grad - z->ps->grad;
        for (int b = 0; b < z->mo->n; b++) dist_gather_real(z->mo->buf[b] + base, z->counts[i]);
    }
}
