/* op_table.h — the static table of op kinds: name and backward function.
 * To add an op: add one X(...) line here, write xxx_forward / xxx_backward kernels and op_xxx()
 * in an autograd/ops_*.c file, define `void xxx_backward_node(Tape *, TapeNode *)`, and add a
 * gradient check case in autograd/gradcheck/gradcheck_ops.c (a test fails if an op has none). */
#ifndef DEBERTA_OP_TABLE_H
#define DEBERTA_OP_TABLE_H

struct Tape;
struct TapeNode;

/* X(ENUM_SUFFIX, name) — name is also the prefix of <name>_backward_node. */
#define OP_LIST(X)           \
    X(MATMUL, matmul)        \
    X(LINEAR, linear)        \
    OP_LIST_MORE(X)

/* Further ops are appended here, one line each (keep OP_LIST itself short and stable). */
#define OP_LIST_MORE(X)                  \
    X(ADD, add)                          \
    X(BIAS_ADD, bias_add)                \
    X(SCALE, scale)                      \
    X(MUL, mul)                          \
    X(GELU, gelu)                        \
    X(BIAS_GELU, bias_gelu)              \
    X(LAYERNORM, layernorm)              \
    X(SOFTMAX_MASKED, softmax_masked)    \
    X(EMBEDDING, embedding)              \
    X(GATHER_LAST, gather_last)          \
    X(INDEX_SELECT, index_select)        \
    X(DROPOUT, dropout)                  \
    X(CROSS_ENTROPY, cross_entropy)      \
    X(BCE_LOGITS, bce_logits)            \
    X(SUM, sum)                          \
    X(MEAN, mean)                        \
    X(RESHAPE, reshape)                  \
    X(TRANSPOSE, transpose)              \
    X(SPLIT_HEADS, split_heads)          \
    X(MERGE_HEADS, merge_heads)          \
    X(DISENTANGLED_ATTENTION, disentangled_attention) \
    X(DROPOUT_ADD_LAYERNORM, dropout_add_layernorm) \
    X(ATTENTION_CONTEXT, attention_context) \
    X(DISENTANGLED_ATTENTION_CONTEXT, disentangled_attention_context)

enum OpKind {
    OP_NONE = 0,
#define X(E, n) OP_##E,
    OP_LIST(X)
#undef X
    OP_COUNT
};

typedef struct OpInfo {
    const char *name;
    void (*backward)(struct Tape *t, struct TapeNode *node);
} OpInfo;

#define X(E, n) void n##_backward_node(struct Tape *t, struct TapeNode *node);
OP_LIST(X)
#undef X

extern const OpInfo op_table[OP_COUNT];
#endif
