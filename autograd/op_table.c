/* op_table.c — see op_table.h */
#include "autograd/op_table.h"
#include <stddef.h>

const OpInfo op_table[OP_COUNT] = {
    [OP_NONE] = {"none", NULL},
#define X(E, n) [OP_##E] = {#n, n##_backward_node},
    OP_LIST(X)
#undef X
};
