/* gradcheck_ops.h — the registry of per-op gradient-check cases (run by `deberta gradcheck` and
 * tests/test_ops.c).  Every op in op_table must have at least one case: a test enforces it. */
#ifndef DEBERTA_GRADCHECK_OPS_H
#define DEBERTA_GRADCHECK_OPS_H
#include "autograd/gradcheck/gradcheck.h"

typedef struct GCCase {
    const char *op;      /* op_table name this case covers */
    const char *shapes;  /* human-readable shapes/edge case tried */
    GCResult (*run)(Tape *t);
} GCCase;

extern const GCCase gradcheck_op_cases[];
extern const int gradcheck_n_op_cases;
#endif
