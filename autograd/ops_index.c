/* ops_index.c — embedding lookup, gather along the last dim (the c2p/p2c building block) and row
 * selection, each with its scatter-add backward.  Indices are validated (serially, before any
 * parallel region) and copied into the arena, so callers may reuse their buffers.  Scatter-adds
 * never race: destination rows are owned by one thread each (scatter_add_rows in rmath.h) or, for
 * gather_last, every source row scatters only into its own destination row. */
#include <string.h>
#include "autograd/ops.h"
#include "autograd/rmath.h"

static int32_t *copy_ids(Tape *t, const int32_t *ids, long n) {
    int32_t *c = arena_alloc(&t->arena, (size_t)n * sizeof(int32_t));
    memcpy(c, ids, (size_t)n * sizeof(int32_t));
    return c;
}

/* out[k, :] = src[ids[k], :]  (src [V, C], out [n, C]); used by embedding and index_select */
static void rows_forward(real *out, const real *src, const int32_t *ids, long n, int C) {
#pragma omp parallel for schedule(static) if (n * (long)C >= OMP_MIN_ELEMS)
    for (long k = 0; k < n; k++) memcpy(out + k * C, src + (long)ids[k] * C, (size_t)C * sizeof(real));
}

/* ---------------- embedding ---------------- */

/* out[n, C] = table[ids[n], :]                               (rows_forward)
 * dtable[ids[n], :] += dout[n, :]  except ids[n] == padding  (scatter_add_rows, fixed order) */
Tensor *op_embedding(Tape *t, Tensor *table, const int32_t *ids, int n_ids, int padding_idx) {
    char st[64];
    OP_CHECK(table, "embedding", "NULL table");
    OP_CHECK(table->ndim == 2, "embedding", "table %s must be 2-D [V, C]", shape_str(table, st, 64));
    OP_CHECK(n_ids >= 0, "embedding", "n_ids = %d is negative", n_ids);
    OP_CHECK(ids || n_ids == 0, "embedding", "NULL ids with n_ids = %d", n_ids);
    const int V = table->shape[0], C = table->shape[1];
    OP_CHECK(padding_idx < V, "embedding", "padding_idx %d out of range for table %s", padding_idx, shape_str(table, st, 64));
    for (int k = 0; k < n_ids; k++)
        OP_CHECK(ids[k] >= 0 && ids[k] < V, "embedding", "ids[%d] = %d out of range [0, %d) for table %s", k, ids[k], V,
                 shape_str(table, st, 64));
    const int shape[2] = {n_ids, C};
    Tensor *out = tape_tensor(t, 2, shape, "embedding");
    rows_forward(out->data, table->data, ids, n_ids, C);
    Tensor *in[1] = {table};
    TapeNode *nd = tape_record(t, OP_EMBEDDING, out, 1, in);
    if (nd) {
        nd->ctx = copy_ids(t, ids, n_ids);
        nd->iarg[0] = n_ids;
        nd->iarg[1] = padding_idx;
    }
    return out;
}

void embedding_backward_node(Tape *t, TapeNode *nd) {
    Tensor *table = nd->in[0];
    long pad = nd->iarg[1] >= 0 ? nd->iarg[1] : -1;
    scatter_add_rows(tape_grad(t, table), nd->out->grad, nd->ctx, nd->iarg[0], table->shape[1], pad);
}

/* ---------------- gather_last ---------------- */

/* out[r, j] = x[r, idx[r % idx_rows, j]]   x [R, W], idx [idx_rows, J], out [R, J] */
static void gather_last_forward(real *out, const real *x, const int32_t *idx, long R, int W, int J, int idx_rows) {
#pragma omp parallel for schedule(static) if (R * (long)J >= OMP_MIN_ELEMS)
    for (long r = 0; r < R; r++) {
        const int32_t *ir = idx + (r % idx_rows) * (long)J;
        const real *xr = x + r * W;
        real *o = out + r * J;
        for (int j = 0; j < J; j++) o[j] = xr[ir[j]];
    }
}
/* dx[r, idx[r % idx_rows, j]] += dout[r, j]: row r of dx is written only by iteration r, and
 * repeated indices accumulate in increasing j — race-free and fixed order. */
static void gather_last_backward(real *dx, const real *dout, const int32_t *idx, long R, int W, int J, int idx_rows) {
#pragma omp parallel for schedule(static) if (R * (long)J >= OMP_MIN_ELEMS)
    for (long r = 0; r < R; r++) {
        const int32_t *ir = idx + (r % idx_rows) * (long)J;
        real *dxr = dx + r * W;
        const real *g = dout + r * J;
        for (int j = 0; j < J; j++) dxr[ir[j]] += g[j];
    }
}

Tensor *op_gather_last(Tape *t, Tensor *x, const int32_t *idx, int idx_rows, int out_last_dim) {
    char sx[64];
    OP_CHECK(x, "gather_last", "NULL input");
    OP_CHECK(idx, "gather_last", "NULL index matrix");
    OP_CHECK(x->ndim >= 1 && x->shape[x->ndim - 1] > 0, "gather_last", "x %s has an empty last dim", shape_str(x, sx, 64));
    const int W = x->shape[x->ndim - 1], J = out_last_dim;
    const long R = trows(x);
    OP_CHECK(J > 0, "gather_last", "out_last_dim = %d (must be > 0) for x %s", J, shape_str(x, sx, 64));
    OP_CHECK(idx_rows > 0 && R % idx_rows == 0, "gather_last",
             "idx_rows = %d must divide the %ld rows of x %s (the index matrix is reused cyclically)", idx_rows, R,
             shape_str(x, sx, 64));
    for (long k = 0; k < (long)idx_rows * J; k++)
        OP_CHECK(idx[k] >= 0 && idx[k] < W, "gather_last", "idx[%ld, %ld] = %d out of range [0, %d) for x %s", k / J, k % J,
                 idx[k], W, shape_str(x, sx, 64));
    int shape[TENSOR_MAX_DIMS];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->ndim - 1] = J;
    Tensor *out = tape_tensor(t, x->ndim, shape, "gather_last");
    gather_last_forward(out->data, x->data, idx, R, W, J, idx_rows);
    Tensor *in[1] = {x};
    TapeNode *nd = tape_record(t, OP_GATHER_LAST, out, 1, in);
    if (nd) {
        nd->ctx = copy_ids(t, idx, (long)idx_rows * J);
        nd->iarg[0] = idx_rows;
        nd->iarg[1] = J;
    }
    return out;
}

void gather_last_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0];
    gather_last_backward(tape_grad(t, x), nd->out->grad, nd->ctx, trows(x), x->shape[x->ndim - 1], (int)nd->iarg[1],
                         (int)nd->iarg[0]);
}

/* ---------------- index_select ---------------- */

/* out[k, :] = x[rows[k], :]   x seen as [R, C], out [n_rows, C]       (rows_forward)
 * dx[rows[k], :] += dout[k, :]                                         (scatter_add_rows) */
Tensor *op_index_select(Tape *t, Tensor *x, const int32_t *rows, int n_rows) {
    char sx[64];
    OP_CHECK(x, "index_select", "NULL input");
    OP_CHECK(x->ndim >= 1, "index_select", "x %s is a scalar", shape_str(x, sx, 64));
    OP_CHECK(n_rows >= 0, "index_select", "n_rows = %d is negative", n_rows);
    OP_CHECK(rows || n_rows == 0, "index_select", "NULL rows with n_rows = %d", n_rows);
    const long R = trows(x);
    const int C = x->shape[x->ndim - 1];
    for (int k = 0; k < n_rows; k++)
        OP_CHECK(rows[k] >= 0 && rows[k] < R, "index_select", "rows[%d] = %d out of range [0, %ld) for x %s", k, rows[k], R,
                 shape_str(x, sx, 64));
    const int shape[2] = {n_rows, C};
    Tensor *out = tape_tensor(t, 2, shape, "index_select");
    rows_forward(out->data, x->data, rows, n_rows, C);
    Tensor *in[1] = {x};
    TapeNode *nd = tape_record(t, OP_INDEX_SELECT, out, 1, in);
    if (nd) {
        nd->ctx = copy_ids(t, rows, n_rows);
        nd->iarg[0] = n_rows;
    }
    return out;
}

void index_select_backward_node(Tape *t, TapeNode *nd) {
    Tensor *x = nd->in[0];
    scatter_add_rows(tape_grad(t, x), nd->out->grad, nd->ctx, nd->iarg[0], x->shape[x->ndim - 1], -1);
}
