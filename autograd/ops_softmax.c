/* ops_softmax.c — softmax over the last dim with a pairwise (query, key) mask.
 *
 * Entry (b, h, i, j) is kept iff qmask[b·Tq + i] && kmask[b·Tk + j].  The row max is taken over
 * kept entries only, masked scores never enter exp() (so a masked −inf or NaN score is harmless),
 * masked entries are 0 and a fully masked row is all zeros — never NaN (a row whose kept scores
 * are all −inf is treated as fully masked).  The backward works on the
 * saved output y alone: dx = y ⊙ (dy − Σ_j y·dy), which is 0 wherever y is 0 (masked entries and
 * fully masked rows), so the masks need not be saved. */
#include <string.h>
#include "autograd/ops.h"
#include "autograd/rmath.h"

/* y[B, H, Tq, Tk] = masked softmax of x over the last dim (see above).  Rows in parallel. */
static void softmax_masked_forward(real *y, const real *x, const int32_t *qmask, const int32_t *kmask, int B, int H, int Tq,
                                   int Tk) {
    const long rows = (long)B * H * Tq;
#pragma omp parallel for schedule(static) if (rows * Tk >= OMP_MIN_ELEMS / 4)
    for (long r = 0; r < rows; r++) {
        const int b = (int)(r / ((long)H * Tq)), i = (int)(r % Tq);
        const real *xr = x + r * Tk;
        real *yr = y + r * Tk;
        const int32_t *km = kmask ? kmask + (long)b * Tk : NULL;
        if (qmask && !qmask[(long)b * Tq + i]) { /* masked query: the whole row is masked */
            memset(yr, 0, (size_t)Tk * sizeof(real));
            continue;
        }
        softmax_row(yr, xr, Tk, km);
    }
}

/* dx[r, j] += y[r, j] · (dy[r, j] − Σ_k y[r, k]·dy[r, k])   (y = softmax(x), saved output) */
static void softmax_masked_backward(real *dx, const real *dy, const real *y, long rows, int Tk) {
#pragma omp parallel for schedule(static) if (rows * Tk >= OMP_MIN_ELEMS / 4)
    for (long r = 0; r < rows; r++) {
        const real *yr = y + r * Tk, *dyr = dy + r * Tk;
        real *dxr = dx + r * Tk;
        real dot = 0;
        for (int j = 0; j < Tk; j++) dot += yr[j] * dyr[j];
        for (int j = 0; j < Tk; j++) dxr[j] += yr[j] * (dyr[j] - dot);
    }
}

Tensor *op_softmax_masked(Tape *t, Tensor *x, const int32_t *qmask, const int32_t *kmask) {
    char sx[64];
    OP_CHECK(x, "softmax_masked", "NULL input");
    OP_CHECK(x->ndim >= 2 && x->ndim <= 4, "softmax_masked", "x %s must be [B, H, Tq, Tk], [B, Tq, Tk] or [Tq, Tk]",
             shape_str(x, sx, 64));
    int B = 1, H = 1;
    const int Tq = x->shape[x->ndim - 2], Tk = x->shape[x->ndim - 1];
    if (x->ndim >= 3) B = x->shape[0];
    if (x->ndim == 4) H = x->shape[1];
    Tensor *y = tape_tensor(t, x->ndim, x->shape, "softmax_masked");
    softmax_masked_forward(y->data, x->data, qmask, kmask, B, H, Tq, Tk);
    Tensor *in[1] = {x};
    tape_record(t, OP_SOFTMAX_MASKED, y, 1, in);
    return y;
}

void softmax_masked_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0], *y = nd->out;
    softmax_masked_backward(tape_grad(t, x), y->grad, y->data, trows(x), x->shape[x->ndim - 1]);
}
