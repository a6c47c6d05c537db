/* tensor.h — the scalar type, Tensor, the per-step Arena and the flat parameter buffers.
 *
 * `real` is float by default and double in the PRECISION=double build (used for gradient checks).
 * Tensors are contiguous, row-major, up to 4-D.  Activations (data and grad) live in the Arena
 * of the Tape and die at tape_reset(); parameters live in the flat buffers of a ParamSet.
 */
#ifndef DEBERTA_TENSOR_H
#define DEBERTA_TENSOR_H
#include <stddef.h>
#include <stdint.h>
#include <cblas.h>

#ifdef DEBERTA_DOUBLE
typedef double real;
#define REAL_IS_DOUBLE 1
#define REAL_NAME "double"
#define cblas_gemm cblas_dgemm
#define cblas_axpy cblas_daxpy
#define cblas_dotr cblas_ddot
#else
typedef float real;
#define REAL_IS_DOUBLE 0
#define REAL_NAME "float"
#define cblas_gemm cblas_sgemm
#define cblas_axpy cblas_saxpy
#define cblas_dotr cblas_sdot
#endif

#define TENSOR_MAX_DIMS 4

typedef struct Tensor {
    int ndim;
    int shape[TENSOR_MAX_DIMS];
    long n;              /* number of elements */
    real *data;
    real *grad;          /* NULL until a backward reaches it (activations) or the ParamSet owns it */
    int requires_grad;
    int is_param;        /* data/grad belong to a ParamSet, never to the arena */
    int grad_pooled;     /* grad came from tape_grad: the backward may recycle it (tape.h) */
    const char *name;    /* for debugging and error messages; may be NULL */
} Tensor;

/* Elements of a shape. */
long shape_numel(int ndim, const int *shape);
/* "[2, 3, 4]" into buf (for error messages). Returns buf. */
char *shape_str(const Tensor *t, char *buf, size_t len);
/* Size of dimension d, negative d counts from the end. */
int tdim(const Tensor *t, int d);
/* Product of all dims but the last (the "rows" of a tensor seen as a matrix). */
long trows(const Tensor *t);

/* ---- Arena: bump allocator for one step's activations, grads and tape records. ----
 * Allocation never fails: when the main block is full an overflow block is malloc'd, and at the
 * next reset the main block is grown to the peak, so after the first step no malloc happens. */
typedef struct Arena {
    char *base;
    size_t cap, used, peak;
    char **overflow;       /* overflow blocks of this step */
    int n_overflow, cap_overflow;
    size_t overflow_used;  /* bytes handed out from overflow blocks this step */
} Arena;

void arena_init(Arena *a, size_t cap);
void *arena_alloc(Arena *a, size_t bytes);   /* 64-byte aligned, uninitialised */
void *arena_calloc(Arena *a, size_t bytes);  /* 64-byte aligned, zeroed */
void zero_fill(void *p, size_t bytes);        /* memset 0, on the OpenMP threads when large */
void arena_reset(Arena *a);
void arena_free(Arena *a);

/* ---- ParamSet: every parameter's data and grad in one flat aligned buffer each (the optimizer's
 * moments are laid out the same way, train/optim.h). ---- */
typedef struct ParamSet {
    Tensor **params;
    int n, cap;
    long total;            /* elements including alignment padding */
    long *offset;          /* offset of each parameter in the flat buffers */
    real *data, *grad;
    int finalized;
} ParamSet;

void params_init(ParamSet *ps);
/* Registers a parameter (name is copied).  Storage is assigned by params_finalize(). */
Tensor *params_add(ParamSet *ps, const char *name, int ndim, const int *shape);
/* Allocates the flat buffers (zeroed, page-aligned, mapped: no page is touched) and points every parameter into them. */
void params_finalize(ParamSet *ps);
Tensor *params_find(const ParamSet *ps, const char *name);   /* NULL if absent */
void params_zero_grad(ParamSet *ps);
long params_count(const ParamSet *ps);                         /* real elements, no padding */
void params_free(ParamSet *ps);
#endif
