/* ops_dropout.c — inverted dropout with counter-based keep masks.
 *
 * Decisions (see docs/ARCHITECTURE.md, "Dropout and randomness"):
 * - Element i is dropped iff w < floor(p · 2^32), where w is 32-bit word i mod 4 of the Philox block
 *   rng_block(seed, stream, i / 4) with stream = rng_stream(RNG_DROPOUT, tape->step, k),
 *   k = tape->n_random at the call (one block serves four elements: 4x cheaper than one
 *   rng_uniform per element).  The mask is a pure function of (seed, step, k, i): independent of
 *   threads, and a resumed run at the same step draws the same masks.
 * - In training mode EVERY op_dropout call takes the next k (tape->n_random++), also when p == 0, so
 *   the k of a call site does not shift when another dropout's p is set to 0 (ablations).  tape_reset
 *   sets n_random back to 0: every step numbers its calls from 0.
 * - When !tape->training, or p == 0, the op is the identity and returns x itself: no copy, no node,
 *   no RNG draw (eval and p == 0 cost nothing).  Outside training n_random does not advance.
 * - Data parallel (train/dist.h): a rank holds rows [row0, row0 + rows) of a global batch (tape->row0,
 *   tape->rows).  op_dropout_batch, for activations whose outermost dimension is the batch, draws
 *   element i's decision from global element row0·(n/rows) + i, so N ranks × B rows drop exactly
 *   what one process with N·B rows drops; op_dropout (tensors shared by the whole batch, e.g. the
 *   relative-position table) uses element i on every rank.  rows = 0: both are the same.
 * - Kept elements are scaled by 1/(1 − p); the keep mask is stored as one byte per element in the
 *   arena (cheaper than regenerating it in the backward: 1 byte vs a Philox block per element). */
#include "autograd/ops.h"
#include "autograd/rmath.h"
#include "autograd/base/rng.h"

/* y[n] = keep[n] ? x[n] / (1 − p) : 0,  keep[n] = word g%4 of rng_block(seed, stream, g/4) >= p·2^32 with
 * g = off + n (off > 0: x is a slice of a larger tensor that starts at element off).  The blocks are
 * drawn DROPOUT_CHUNK at a time into a local buffer (a loop the compiler vectorises over counters),
 * then the mask is applied in a second, also vectorisable, pass: the masks are those of one
 * rng_block per four elements, bit for bit. */
enum { DROPOUT_CHUNK = 64 }; /* Philox blocks drawn at a time: 256 elements */

void dropout_apply(real *y, uint8_t *keep, const real *x, long n, real p, uint64_t seed, uint64_t stream, int64_t off) {
    const real s = 1 / (1 - p);
    const uint32_t thr = (uint32_t)((double)p * 4294967296.0); /* p < 1: thr < 2^32 */
    const int64_t b1 = (off + n + 3) / 4;
    for (int64_t c = off / 4; c < b1; c += DROPOUT_CHUNK) {
        uint32_t w[4 * DROPOUT_CHUNK];
        const int nb = (int)(b1 - c < DROPOUT_CHUNK ? b1 - c : DROPOUT_CHUNK);
        rng_blocks(seed, stream, (uint64_t)c, nb, w);
        const int64_t g0 = 4 * c - off; /* element of w[0] */
        const int64_t i0 = g0 > 0 ? g0 : 0, i1 = g0 + 4 * nb < n ? g0 + 4 * nb : n;
        for (int64_t i = i0; i < i1; i++) { /* a select, not a branch: it vectorises without AVX-512 too */
            const uint8_t k = w[i - g0] >= thr;
            keep[i] = k;
            y[i] = rselect(k, x[i] * s, 0);
        }
    }
}

/* dropout_apply over slices of 16 chunks (4,096 elements) aligned to the global element grid, in parallel */
static void dropout_forward(real *y, uint8_t *keep, const real *x, long n, real p, uint64_t seed, uint64_t stream, int64_t off) {
    const int64_t span = 16 * 4 * DROPOUT_CHUNK;
#pragma omp parallel for schedule(static) if (n >= OMP_MIN_ELEMS / 8)
    for (int64_t g = off / span * span; g < off + n; g += span) {
        const int64_t i0 = g > off ? g - off : 0, i1 = g + span - off < n ? g + span - off : n;
        dropout_apply(y + i0, keep + i0, x + i0, i1 - i0, p, seed, stream, off + i0);
    }
}

int64_t dropout_begin(Tape *t, const Tensor *x, real p, int batch, uint64_t *stream) {
    char sx[64];
    OP_CHECK(p >= 0 && p < 1, "dropout", "p = %g outside [0, 1) for x %s", (double)p, shape_str(x, sx, 64));
    int64_t off = 0;
    if (batch && t->rows > 0) {
        OP_CHECK(x->n % t->rows == 0, "dropout", "x %s is not made of the batch's %d rows", shape_str(x, sx, 64), t->rows);
        off = t->row0 * (x->n / t->rows);
    }
    if (!t->training) return -1;
    *stream = rng_stream(RNG_DROPOUT, t->step, t->n_random++);
    return p == 0 ? -1 : off;
}

/* dx[n] += keep[n] ? dy[n] / (1 − p) : 0  (= when fresh: dx from tape_grad_put).  Every element is read and
 * written, the mask choosing between two values (rselect): the same bits as a branch, and vectorised on AVX2
 * as on AVX-512. */
static void dropout_backward(real *dx, const real *dy, const uint8_t *keep, long n, real p, int fresh) {
    const real s = 1 / (1 - p);
    if (fresh) {
#pragma omp parallel for schedule(static) if (n >= OMP_MIN_ELEMS)
        for (long i = 0; i < n; i++) dx[i] = rselect(keep[i], dy[i] * s, 0);
    } else {
#pragma omp parallel for schedule(static) if (n >= OMP_MIN_ELEMS)
        for (long i = 0; i < n; i++) dx[i] = rselect(keep[i], dx[i] + dy[i] * s, dx[i]);
    }
}

static Tensor *dropout(Tape *t, Tensor *x, real p, int batch) {
    OP_CHECK(x, "dropout", "NULL input");
    uint64_t stream = 0;
    const int64_t off = dropout_begin(t, x, p, batch, &stream);
    if (off < 0) return x;
    Tensor *y = tape_tensor(t, x->ndim, x->shape, "dropout");
    uint8_t *keep = arena_alloc(&t->arena, (size_t)x->n);
    dropout_forward(y->data, keep, x->data, x->n, p, t->seed, stream, off);
    Tensor *in[1] = {x};
    TapeNode *nd = tape_record(t, OP_DROPOUT, y, 1, in);
    if (nd) {
        nd->ctx = keep;
        nd->farg[0] = p;
        nd->iarg[0] = (long)stream; /* for tape dumps / debugging */
    }
    return y;
}

Tensor *op_dropout(Tape *t, Tensor *x, real p) { return dropout(t, x, p, 0); }
Tensor *op_dropout_batch(Tape *t, Tensor *x, real p) { return dropout(t, x, p, 1); }

void dropout_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0];
    int fresh;
    real *dx = tape_grad_put(t, x, &fresh);
    dropout_backward(dx, nd->out->grad, nd->ctx, x->n, (real)nd->farg[0], fresh);
}
