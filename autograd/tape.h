/* tape.h — the Tape: records of executed ops in execution order, and reverse-mode backward.
 *
 * Because records are appended in execution order they are already topologically sorted;
 * tape_backward() walks them in reverse.  No DFS, no reference counts.
 * Every backward ACCUMULATES (+=) into input gradients, so a tensor used twice is correct.
 */
#ifndef DEBERTA_TAPE_H
#define DEBERTA_TAPE_H
#include <stdio.h>
#include "autograd/tensor.h"
#include "autograd/op_table.h"

#define TAPE_MAX_INPUTS 6

typedef struct TapeNode {
    int op;                         /* OpKind */
    int nin;
    Tensor *out;
    Tensor *in[TAPE_MAX_INPUTS];
    void *ctx;                      /* op-specific saved context, arena memory */
    long iarg[6];                   /* small integer arguments (transposes, sizes, ...) */
    double farg[4];                 /* small real arguments (eps, scale, p, ...) */
} TapeNode;

/* Optional per-op-kind timing (deberta bench): attach with t->prof = &p (zeroed), detach with NULL.
 * Forward time of an op = wall time since the previous mark (the previous op's record or
 * tape_reset), taken when the op records itself, so it includes the glue code before the op;
 * backward time = the op's backward call.  Off (NULL), it costs one pointer test per op. */
typedef struct TapeProfile {
    double fwd[OP_COUNT], bwd[OP_COUNT];  /* seconds */
    long nfwd[OP_COUNT], nbwd[OP_COUNT];  /* calls */
    double mbfwd[OP_COUNT], mbbwd[OP_COUNT]; /* arena bytes taken (outputs, saved context, grads, scratch) */
    double mark;
    size_t mark_bytes;
} TapeProfile;

/* Recycled gradient and scratch buffers: one LIFO free list per buffer size (64-byte rounded). */
#define TAPE_GRAD_CLASSES 64
typedef struct GradPool {
    size_t bytes[TAPE_GRAD_CLASSES];
    void *head[TAPE_GRAD_CLASSES]; /* each free buffer holds the next one's address in its first bytes */
    int n;
} GradPool;

typedef struct Tape {
    Arena arena;
    GradPool pool;       /* gradients of outputs whose backward has run, for reuse (see tape_backward) */
    int keep_grads;      /* 1: never recycle, every activation gradient stays readable after backward */
    TapeNode *nodes;
    int n_nodes, cap_nodes;
    int nograd;          /* > 0: inside a no-grad scope, nothing is recorded */
    size_t kept_moved;   /* bytes tape_keep_only has copied down to a mark (a count for tests) */
    int training;        /* dropout active */
    uint64_t seed;       /* RNG seed of the run */
    uint64_t step;       /* training step: part of every dropout stream id */
    uint32_t n_random;   /* random ops executed since the last reset: the stream's sub-index */
    int64_t row0;        /* global index of the batch's first row (a data-parallel slice; op_dropout_batch) */
    int rows;            /* rows of the batch (0: not set, op_dropout_batch is op_dropout) */
    TapeProfile *prof;   /* NULL: no timing */
} Tape;

void tape_init(Tape *t, size_t arena_bytes);
void tape_free(Tape *t);
/* Forget all records and activations (end of a step).  Parameter grads are untouched. */
void tape_reset(Tape *t);

/* A fresh activation tensor in the arena: data uninitialised, grad NULL. */
Tensor *tape_tensor(Tape *t, int ndim, const int *shape, const char *name);
/* A tensor header that shares `data` (a view), e.g. for reshape/detach. */
Tensor *tape_view(Tape *t, const Tensor *src, int ndim, const int *shape);

/* Would tape_record keep a node for these inputs (any requires grad, no no-grad scope open)?  An op asks
 * before its forward when the answer changes what it computes or keeps. */
int tape_records(const Tape *t, int nin, Tensor *const *in);
/* Records a node if any input requires grad and no no-grad scope is active; sets
 * out->requires_grad accordingly.  Returns the node (to fill ctx/args) or NULL if nothing recorded. */
TapeNode *tape_record(Tape *t, int op, Tensor *out, int nin, Tensor *const *in);


/* The gradient buffer of x, zeroed on first use: a recycled buffer of the same size if the pool
 * has one, else fresh arena memory. */
real *tape_grad(Tape *t, Tensor *x);
/* The same buffer for a backward that writes every element of x's gradient in one pass: when no
 * gradient reached x yet, *fresh = 1 and the buffer is NOT zeroed (the caller assigns dx = g);
 * otherwise *fresh = 0 and the caller adds (dx += g).  Saves the zero fill and a read of the
 * buffer; the values are those of tape_grad's 0 + g (up to the sign of a zero). */
real *tape_grad_put(Tape *t, Tensor *x, int *fresh);

/* Working memory of one op call (e.g. a backward's per-thread buffers): `bytes` from the pool's
 * free list of that size, else fresh arena memory; zeroed if asked.  Give it back with
 * tape_scratch_release(t, p, bytes) before the call returns, so the next call of the same shape
 * (the next layer) reuses it instead of taking new arena memory. */
void *tape_scratch(Tape *t, size_t bytes, int zeroed);
void tape_scratch_release(Tape *t, void *p, size_t bytes);

/* A forward that records nothing can give its intermediate tensors back as it goes: mark = tape_mark(t)
 * before a block of ops, then x = tape_keep_only(t, mark, x) after it returns the arena's memory taken since
 * the mark except x's, which moves to the mark (data and header; the returned tensor replaces x; free
 * scratch blocks above the mark leave the pool).  Only in a no-grad scope (fatal otherwise), and the caller
 * holds no other pointer into that memory.  When x already lies below the mark (an op wrote it over a tensor
 * there: op_dropout_add_layernorm_over) or at it, nothing is copied: x keeps its place.  When the arena
 * overflowed since the mark (or before it: mark SIZE_MAX), nothing is given back and x is returned as it is. */
size_t tape_mark(const Tape *t);
Tensor *tape_keep_only(Tape *t, size_t mark, Tensor *x);

/* Backward from a scalar: d(loss)/d(loss) = seed_grad (usually 1).
 * Memory: once a node's backward has run, nothing reads its output's gradient again (the tape is
 * in execution order, so every consumer of that output ran its backward earlier), and the buffer
 * goes to the pool for the next tape_grad of the same size: the backward then holds only the
 * gradients that are still live, not one per activation.  Only buffers that tape_grad handed out
 * are recycled, never the root's, and none when t->keep_grads is set (to read an intermediate
 * activation's gradient after backward). */
void tape_backward(Tape *t, Tensor *loss, real seed_grad);
/* Backward from any tensor with a given output gradient (out->n values): used by gradient checks. */
void tape_backward_from(Tape *t, Tensor *out, const real *out_grad);

/* No-grad scope: for (tape_nograd_begin(t); ...; tape_nograd_end(t)). */
static inline void tape_nograd_begin(Tape *t) { t->nograd++; }
static inline void tape_nograd_end(Tape *t) { t->nograd--; }

/* Stop-gradient: a view of x whose gradient is dropped (GDES needs exactly this). */
Tensor *op_detach(Tape *t, Tensor *x);

/* Misuse of an op: one clear line naming the op and what is wrong, then exit(1). */
#define OP_CHECK(cond, opname, ...)                                   \
    do {                                                               \
        if (!(cond)) op_fail(opname, __VA_ARGS__);                     \
    } while (0)
void op_fail(const char *opname, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
#endif
