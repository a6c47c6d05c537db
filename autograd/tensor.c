/* tensor.c — shapes, Arena, ParamSet.  See tensor.h. */
#include "autograd/tensor.h"
#include "autograd/base/util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long shape_numel(int ndim, const int *shape) {
    long n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

char *shape_str(const Tensor *t, char *buf, size_t len) {
    size_t k = 0;
    k += snprintf(buf + k, len - k, "[");
    for (int i = 0; i < t->ndim && k < len; i++)
        k += snprintf(buf + k, len - k, i ? ", %d" : "%d", t->shape[i]);
    if (k < len) snprintf(buf + k, len - k, "]");
    return buf;
}

int tdim(const Tensor *t, int d) {
    if (d < 0) d += t->ndim;
    if (d < 0 || d >= t->ndim) fatal("tdim: dimension %d out of range for a %d-D tensor '%s'", d, t->ndim, t->name ? t->name : "?");
    return t->shape[d];
}

long trows(const Tensor *t) { return t->ndim ? t->n / t->shape[t->ndim - 1] : 1; }

/* ---------------- Arena ---------------- */

void arena_init(Arena *a, size_t cap) {
    memset(a, 0, sizeof *a);
    a->cap = cap ? cap : (1u << 20);
    a->base = xcalloc_pages_huge(a->cap); /* zeroed by the kernel, but uninitialised by contract */
}

void *arena_alloc(Arena *a, size_t bytes) {
    size_t need = (bytes + 63) & ~(size_t)63;
    if (need == 0) need = 64;
    if (a->used + need <= a->cap) {
        void *p = a->base + a->used;
        a->used += need;
        if (a->used + a->overflow_used > a->peak) a->peak = a->used + a->overflow_used;
        return p;
    }
    /* Main block full: hand out a separate block for this step and remember the demand. */
    if (a->n_overflow == a->cap_overflow) {
        a->cap_overflow = a->cap_overflow ? 2 * a->cap_overflow : 16;
        a->overflow = xrealloc(a->overflow, a->cap_overflow * sizeof(char *));
    }
    char *p = xmalloc_aligned(need);
    a->overflow[a->n_overflow++] = p;
    a->overflow_used += need;
    if (a->used + a->overflow_used > a->peak) a->peak = a->used + a->overflow_used;
    return p;
}

void zero_fill(void *p, size_t bytes) {
    enum { CHUNK = 64 << 10 };
    if (bytes < 4 * CHUNK) {
        memset(p, 0, bytes);
        return;
    }
    const long n = (long)((bytes + CHUNK - 1) / CHUNK);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        const size_t at = (size_t)i * CHUNK;
        memset((char *)p + at, 0, bytes - at < CHUNK ? bytes - at : CHUNK);
    }
}

void *arena_calloc(Arena *a, size_t bytes) {
    void *p = arena_alloc(a, bytes);
    zero_fill(p, bytes);
    return p;
}

void arena_reset(Arena *a) {
    if (a->n_overflow) {
        for (int i = 0; i < a->n_overflow; i++) free(a->overflow[i]);
        a->n_overflow = 0;
        xfree_pages(a->base, a->cap);
        a->cap = a->peak + a->peak / 8 + 4096;
        a->base = xcalloc_pages_huge(a->cap);
    }
    a->used = 0;
    a->overflow_used = 0;
}

void arena_free(Arena *a) {
    for (int i = 0; i < a->n_overflow; i++) free(a->overflow[i]);
    free(a->overflow);
    xfree_pages(a->base, a->cap);
    memset(a, 0, sizeof *a);
}

/* ---------------- ParamSet ---------------- */

void params_init(ParamSet *ps) { memset(ps, 0, sizeof *ps); }

Tensor *params_add(ParamSet *ps, const char *name, int ndim, const int *shape) {
    if (ps->finalized) fatal("params_add('%s'): the parameter set is already finalized", name);
    if (ndim < 1 || ndim > TENSOR_MAX_DIMS) fatal("params_add('%s'): %d dimensions (1..4 allowed)", name, ndim);
    if (params_find(ps, name)) fatal("params_add: duplicate parameter name '%s'", name);
    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? 2 * ps->cap : 64;
        ps->params = xrealloc(ps->params, ps->cap * sizeof(Tensor *));
    }
    Tensor *t = xcalloc(1, sizeof(Tensor));
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] <= 0) fatal("params_add('%s'): dimension %d has size %d", name, i, shape[i]);
        t->shape[i] = shape[i];
    }
    t->n = shape_numel(ndim, shape);
    t->requires_grad = 1;
    t->is_param = 1;
    t->name = xstrdup(name);
    ps->params[ps->n++] = t;
    return t;
}

/* The size of each flat buffer. */
static size_t params_bytes(const ParamSet *ps) { return (size_t)(ps->total ? ps->total : 1) * sizeof(real); }

void params_finalize(ParamSet *ps) {
    if (ps->finalized) return;
    ps->offset = xcalloc(ps->n ? ps->n : 1, sizeof(long));
    long off = 0;
    for (int i = 0; i < ps->n; i++) {
        ps->offset[i] = off;
        off += (ps->params[i]->n + 15) & ~15L; /* each tensor starts 64-byte aligned */
    }
    ps->total = off;
    /* Pages mapped from the kernel, zero already: nothing is written here, so a page costs nothing until the
     * model touches it (a forward that loads a checkpoint writes the data once and never touches the
     * gradients; a zeroing memset here was ~7 % of predict on 32 records). */
    ps->data = xcalloc_pages(params_bytes(ps));
    ps->grad = xcalloc_pages(params_bytes(ps));
    for (int i = 0; i < ps->n; i++) {
        ps->params[i]->data = ps->data + ps->offset[i];
        ps->params[i]->grad = ps->grad + ps->offset[i];
    }
    ps->finalized = 1;
}

Tensor *params_find(const ParamSet *ps, const char *name) {
    for (int i = 0; i < ps->n; i++)
        if (!strcmp(ps->params[i]->name, name)) return ps->params[i];
    return NULL;
}

void params_zero_grad(ParamSet *ps) {
    if (ps->finalized) memset(ps->grad, 0, (size_t)ps->total * sizeof(real));
}

long params_count(const ParamSet *ps) {
    long n = 0;
    for (int i = 0; i < ps->n; i++) n += ps->params[i]->n;
    return n;
}

void params_free(ParamSet *ps) {
    for (int i = 0; i < ps->n; i++) {
        free((void *)ps->params[i]->name);
        free(ps->params[i]);
    }
    free(ps->params);
    free(ps->offset);
    if (ps->finalized) {
        xfree_pages(ps->data, params_bytes(ps));
        xfree_pages(ps->grad, params_bytes(ps));
    }
    memset(ps, 0, sizeof *ps);
}
