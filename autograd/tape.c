/* tape.c — see tape.h */
#include "autograd/tape.h"
#include "autograd/base/util.h"
#include <stdarg.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

void op_fail(const char *opname, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fprintf(stderr, "error: op %s: ", opname);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

void tape_init(Tape *t, size_t arena_bytes) {
    memset(t, 0, sizeof *t);
    arena_init(&t->arena, arena_bytes);
    t->cap_nodes = 256;
    t->nodes = xcalloc(t->cap_nodes, sizeof(TapeNode));
    t->seed = 1234;
}

void tape_free(Tape *t) {
    arena_free(&t->arena);
    free(t->nodes);
    memset(t, 0, sizeof *t);
}

/* Profiling: start a forward interval now (no-op when t->prof is NULL). */
static void tape_prof_mark(Tape *t);

void tape_reset(Tape *t) {
    arena_reset(&t->arena);
    t->pool.n = 0;
    t->n_nodes = 0;
    t->n_random = 0;
    t->row0 = 0;
    t->rows = 0;
    tape_prof_mark(t);
}

static size_t arena_taken(const Arena *a) { return a->used + a->overflow_used; }

static void tape_prof_mark(Tape *t) {
    if (t->prof) {
        t->prof->mark = now_seconds();
        t->prof->mark_bytes = arena_taken(&t->arena);
    }
}

static Tensor *new_header(Tape *t, int ndim, const int *shape, const char *name) {
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) fatal("tensor '%s': %d dimensions (0..4 allowed)", name ? name : "?", ndim);
    Tensor *x = arena_alloc(&t->arena, sizeof(Tensor));
    memset(x, 0, sizeof *x);
    x->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) fatal("tensor '%s': negative dimension %d", name ? name : "?", shape[i]);
        x->shape[i] = shape[i];
    }
    x->n = shape_numel(ndim, shape);
    x->name = name;
    return x;
}

Tensor *tape_tensor(Tape *t, int ndim, const int *shape, const char *name) {
    Tensor *x = new_header(t, ndim, shape, name);
    x->data = arena_alloc(&t->arena, (size_t)x->n * sizeof(real));
    return x;
}

Tensor *tape_view(Tape *t, const Tensor *src, int ndim, const int *shape) {
    Tensor *x = new_header(t, ndim, shape, src->name);
    if (x->n != src->n) fatal("view of '%s': %ld elements cannot be viewed as %ld", src->name ? src->name : "?", src->n, x->n);
    x->data = src->data;
    return x;
}

int tape_records(const Tape *t, int nin, Tensor *const *in) {
    if (t->nograd > 0) return 0;
    for (int i = 0; i < nin; i++)
        if (in[i] && in[i]->requires_grad) return 1;
    return 0;
}

TapeNode *tape_record(Tape *t, int op, Tensor *out, int nin, Tensor *const *in) {
    if (t->prof) { /* the op's forward has just run */
        const double now = now_seconds();
        t->prof->fwd[op] += now - t->prof->mark;
        t->prof->nfwd[op]++;
        t->prof->mark = now;
        t->prof->mbfwd[op] += (double)(arena_taken(&t->arena) - t->prof->mark_bytes);
        t->prof->mark_bytes = arena_taken(&t->arena);
    }
    const int need = tape_records(t, nin, in);
    out->requires_grad = need;
    if (!need) return NULL;
    if (nin > TAPE_MAX_INPUTS) fatal("tape_record: op %s has %d inputs (max %d)", op_table[op].name, nin, TAPE_MAX_INPUTS);
    if (t->n_nodes == t->cap_nodes) {
        t->cap_nodes *= 2;
        t->nodes = xrealloc(t->nodes, (size_t)t->cap_nodes * sizeof(TapeNode));
    }
    TapeNode *nd = &t->nodes[t->n_nodes++];
    memset(nd, 0, sizeof *nd);
    nd->op = op;
    nd->nin = nin;
    nd->out = out;
    for (int i = 0; i < nin; i++) nd->in[i] = in[i];
    return nd;
}

static size_t round64(size_t bytes) { return (bytes + 63) & ~(size_t)63; }

/* A free buffer of exactly `bytes` (64-rounded) from the pool, or NULL. */
static void *pool_take(GradPool *gp, size_t bytes) {
    for (int c = 0; c < gp->n; c++)
        if (gp->bytes[c] == bytes && gp->head[c]) {
            void *p = gp->head[c];
            memcpy(&gp->head[c], p, sizeof(void *));
            return p;
        }
    return NULL;
}

/* Puts a dead buffer of `bytes` (64-rounded, >= 64) on its size's free list (a new size class if
 * there is room; rare sizes beyond the table are simply not reused). */
static void pool_give(GradPool *gp, void *p, size_t bytes) {
    int c = 0;
    while (c < gp->n && gp->bytes[c] != bytes) c++;
    if (c == gp->n) {
        if (gp->n == TAPE_GRAD_CLASSES) return;
        gp->bytes[gp->n] = bytes;
        gp->head[gp->n++] = NULL;
    }
    memcpy(p, &gp->head[c], sizeof(void *));
    gp->head[c] = p;
}

real *tape_grad_put(Tape *t, Tensor *x, int *fresh) {
    *fresh = !x->grad;
    if (x->grad) return x->grad;
    const size_t bytes = (size_t)x->n * sizeof(real);
    void *p = pool_take(&t->pool, round64(bytes));
    x->grad = p ? p : arena_alloc(&t->arena, bytes);
    x->grad_pooled = 1;
    return x->grad;
}

real *tape_grad(Tape *t, Tensor *x) {
    int fresh;
    real *g = tape_grad_put(t, x, &fresh);
    if (fresh) zero_fill(g, (size_t)x->n * sizeof(real));
    return g;
}

/* x's gradient is dead: its buffer goes to the pool. */
static void grad_recycle(Tape *t, Tensor *x) {
    if (t->keep_grads || !x->grad_pooled || !x->grad || x->n == 0) return;
    pool_give(&t->pool, x->grad, round64((size_t)x->n * sizeof(real)));
    x->grad = NULL;
    x->grad_pooled = 0;
}

void *tape_scratch(Tape *t, size_t bytes, int zeroed) {
    void *p = pool_take(&t->pool, round64(bytes ? bytes : 1));
    if (!p) p = arena_alloc(&t->arena, bytes);
    if (zeroed) zero_fill(p, bytes);
    return p;
}

void tape_scratch_release(Tape *t, void *p, size_t bytes) {
    if (p) pool_give(&t->pool, p, round64(bytes ? bytes : 1));
}

size_t tape_mark(const Tape *t) { return t->arena.n_overflow ? SIZE_MAX : t->arena.used; }

/* Unlinks every free block at or above lo in the main block from the pool's lists. */
static void pool_forget_above(GradPool *gp, const char *lo, const char *hi) {
    for (int c = 0; c < gp->n; c++) {
        void **link = &gp->head[c];
        while (*link) {
            char *p = *link;
            if (p >= lo && p < hi) memcpy(link, p, sizeof(void *)); /* skip p */
            else link = (void **)p;
        }
    }
}

Tensor *tape_keep_only(Tape *t, size_t mark, Tensor *x) {
    Arena *a = &t->arena;
    if (t->nograd <= 0) fatal("tape_keep_only: outside a no-grad scope (recorded nodes may refer to the memory)");
    char *lo = a->base + mark, *top = a->base + a->used, *xd = (char *)x->data;
    const size_t bytes = (size_t)x->n * sizeof(real);
    if (mark == SIZE_MAX || a->n_overflow || mark > a->used || xd + bytes > top || xd < a->base)
        return x; /* an overflow since the mark, or x outside the block: keep all */
    const int below = xd + bytes <= lo; /* written over a tensor below the mark (op_..._over): it stays there */
    if (!below && xd != lo && xd < lo + bytes) return x; /* overlapping its new place: keep all */
    const Tensor h = *x;
    if (!below && xd != lo) {
        enum { CHUNK = 256 << 10 };
        const long nch = (long)((bytes + CHUNK - 1) / CHUNK);
#pragma omp parallel for schedule(static) if (nch >= 4)
        for (long i = 0; i < nch; i++) {
            const size_t at = (size_t)i * CHUNK;
            memcpy(lo + at, xd + at, bytes - at < CHUNK ? bytes - at : CHUNK);
        }
        t->kept_moved += bytes;
    }
    pool_forget_above(&t->pool, lo, a->base + a->cap);
    a->used = mark;
    real *data = below ? x->data : arena_alloc(a, bytes); /* arena_alloc: = lo */
    Tensor *y = new_header(t, h.ndim, h.shape, h.name);
    *y = h;
    y->data = data;
    return y;
}

void tape_backward(Tape *t, Tensor *loss, real seed_grad) {
    if (loss->n != 1) fatal("tape_backward: the loss '%s' has %ld elements, expected a scalar", loss->name ? loss->name : "?", loss->n);
    if (!loss->requires_grad) fatal("tape_backward: the loss '%s' does not depend on anything that requires grad", loss->name ? loss->name : "?");
    tape_grad(t, loss)[0] += seed_grad;
    tape_backward_from(t, loss, NULL);
}

void tape_backward_from(Tape *t, Tensor *out, const real *out_grad) {
    if (out_grad) {
        real *g = tape_grad(t, out);
        for (long i = 0; i < out->n; i++) g[i] += out_grad[i];
    }
    for (int i = t->n_nodes - 1; i >= 0; i--) {
        TapeNode *nd = &t->nodes[i];
        if (!nd->out->grad) continue; /* no gradient flowed into this output */
        if (t->prof) {
            const double t0 = now_seconds();
            const size_t b0 = arena_taken(&t->arena);
            op_table[nd->op].backward(t, nd);
            t->prof->bwd[nd->op] += now_seconds() - t0;
            t->prof->nbwd[nd->op]++;
            t->prof->mbbwd[nd->op] += (double)(arena_taken(&t->arena) - b0);
        } else {
            op_table[nd->op].backward(t, nd);
        }
        if (nd->out != out) grad_recycle(t, nd->out);
    }
    tape_prof_mark(t);
}

Tensor *op_detach(Tape *t, Tensor *x) {
    Tensor *y = tape_view(t, x, x->ndim, x->shape);
    y->requires_grad = 0;
    return y;
}

