/* test_ops_misuse.c — misuse of every op (shape mismatch, NULL, out-of-range index or argument)
 * ends the process with exit status 1 and one "error: op <name>: ..." line on stderr naming the
 * op and the shapes — never a segfault.  Each case runs in a fork()ed child whose stderr goes to
 * a pipe.  The parent runs no op itself, so no OpenMP pool exists when it forks. */
#include "tests/testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "autograd/gradcheck/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/ops_attention.h"

static Tape T; /* the child's: globals stay reachable at exit (no leak reports under ASan) */
static Tensor *mk(int ndim, const int *shape) { return gradcheck_leaf(ndim, shape, 1, "x"); }
#define SH(...) (const int[]){__VA_ARGS__}

typedef struct {
    const char *name;  /* what is misused */
    const char *want;  /* substring of stderr, starts with "error: op <name>: " */
    void (*fn)(void);
} Misuse;

static void add_shapes(void) { op_add(&T, mk(2, SH(2, 3)), mk(2, SH(3, 2))); }
static void add_null(void) { op_add(&T, mk(2, SH(2, 3)), NULL); }
static void bias_add_shapes(void) { op_bias_add(&T, mk(2, SH(2, 3)), mk(1, SH(2))); }
static void scale_null(void) { op_scale(&T, NULL, 2); }
static void mul_shapes(void) { op_mul(&T, mk(1, SH(4)), mk(1, SH(5))); }
static void gelu_null(void) { op_gelu(&T, NULL); }
static void bias_gelu_shapes(void) { op_bias_gelu(&T, mk(3, SH(2, 3, 4)), mk(2, SH(1, 4))); }
static void layernorm_gain(void) { op_layernorm(&T, mk(2, SH(2, 8)), mk(1, SH(7)), NULL, (real)1e-5); }
static void layernorm_null(void) { op_layernorm(&T, NULL, NULL, NULL, (real)1e-5); }
static void softmax_1d(void) { op_softmax_masked(&T, mk(1, SH(5)), NULL, NULL); }
static void embedding_range(void) {
    const int32_t ids[3] = {0, 9, 2};
    op_embedding(&T, mk(2, SH(5, 4)), ids, 3, -1);
}
static void embedding_negative(void) {
    const int32_t ids[2] = {0, -1};
    op_embedding(&T, mk(2, SH(5, 4)), ids, 2, 0);
}
static void embedding_null(void) { op_embedding(&T, NULL, NULL, 3, 0); }
static void embedding_3d(void) {
    const int32_t ids[1] = {0};
    op_embedding(&T, mk(3, SH(5, 4, 2)), ids, 1, -1);
}
static void gather_range(void) {
    const int32_t idx[4] = {0, 1, 2, 3};
    op_gather_last(&T, mk(2, SH(4, 3)), idx, 1, 4);
}
static void gather_rows(void) {
    const int32_t idx[6] = {0, 1, 2, 0, 1, 2};
    op_gather_last(&T, mk(2, SH(4, 3)), idx, 3, 2);
}
static void gather_null(void) { op_gather_last(&T, mk(2, SH(4, 3)), NULL, 1, 2); }
static void index_select_range(void) {
    const int32_t rows[2] = {1, 4};
    op_index_select(&T, mk(3, SH(2, 2, 3)), rows, 2);
}
static void dropout_p(void) {
    T.training = 1;
    op_dropout(&T, mk(2, SH(2, 2)), 1);
}
static void dropout_null(void) { op_dropout(&T, NULL, (real)0.1); }
static void ce_target(void) {
    const int32_t tg[2] = {0, 5};
    op_cross_entropy(&T, mk(2, SH(2, 5)), tg);
}
static void ce_3d(void) {
    const int32_t tg[2] = {0, 1};
    op_cross_entropy(&T, mk(3, SH(1, 2, 5)), tg);
}
static void bce_target(void) {
    const int32_t tg[3] = {0, 2, 1}, valid[3] = {1, 1, 1};
    op_bce_logits(&T, mk(1, SH(3)), tg, valid);
}
static void bce_null(void) { op_bce_logits(&T, mk(1, SH(3)), NULL, NULL); }
static void sum_null(void) { op_sum(&T, NULL); }
static void mean_null(void) { op_mean(&T, NULL); }
static void reshape_count(void) { op_reshape(&T, mk(2, SH(2, 3)), 2, SH(4, 2)); }
static void reshape_infer(void) { op_reshape(&T, mk(2, SH(2, 3)), 2, SH(-1, 4)); }
static void transpose_1d(void) { op_transpose(&T, mk(1, SH(3))); }
static void split_heads_divide(void) { op_split_heads(&T, mk(3, SH(2, 3, 10)), 3); }
static void merge_heads_3d(void) { op_merge_heads(&T, mk(3, SH(2, 3, 10))); }
static void matmul_inner(void) { op_matmul(&T, mk(2, SH(2, 3)), mk(2, SH(4, 5)), 0, 0); }
static void linear_shapes(void) { op_linear(&T, mk(2, SH(2, 3)), mk(2, SH(4, 5)), NULL); }
static void daln_shapes(void) { op_dropout_add_layernorm(&T, mk(2, SH(2, 3)), (real)0.1, mk(2, SH(3, 2)), NULL, NULL, (real)1e-5); }
static void daln_same(void) {
    Tensor *x = mk(2, SH(2, 3));
    op_dropout_add_layernorm(&T, x, (real)0.1, x, NULL, NULL, (real)1e-5);
}
static void daln_over_recording(void) { /* outside a no-grad scope */
    op_dropout_add_layernorm_over(&T, mk(2, SH(2, 3)), (real)0.1, mk(2, SH(2, 3)), NULL, NULL, (real)1e-5);
}
static void context_shapes(void) { op_attention_context(&T, mk(4, SH(2, 2, 3, 4)), mk(3, SH(2, 5, 6))); }
static void attention_bth_heads(void) {
    op_disentangled_attention_dropout_bth(&T, mk(3, SH(2, 4, 6)), mk(3, SH(2, 4, 6)), 4, NULL, NULL, NULL, ATT_C2C, 1, NULL, NULL, 0);
}
static void attention_context_v(void) {
    op_disentangled_attention_context(&T, mk(3, SH(2, 4, 6)), mk(3, SH(2, 4, 6)), mk(3, SH(2, 5, 6)), 2, NULL, NULL, NULL, ATT_C2C, 1,
                                      NULL, NULL, 0);
}
static void attention_context_v_is_k(void) {
    Tensor *q = mk(3, SH(2, 4, 6)), *k = mk(3, SH(2, 4, 6));
    op_disentangled_attention_context(&T, q, k, k, 2, NULL, NULL, NULL, ATT_C2C, 1, NULL, NULL, 0);
}

static const Misuse cases[] = {
    {"add shape mismatch", "error: op add: shapes differ: a [2, 3], b [3, 2]", add_shapes},
    {"add NULL", "error: op add: NULL input", add_null},
    {"bias_add shape mismatch", "error: op bias_add: bias [2] does not match the last dim of x [2, 3]", bias_add_shapes},
    {"scale NULL", "error: op scale: NULL input", scale_null},
    {"mul shape mismatch", "error: op mul: shapes differ: a [4], b [5]", mul_shapes},
    {"gelu NULL", "error: op gelu: NULL input", gelu_null},
    {"bias_gelu 2-D bias", "error: op bias_gelu: bias [1, 4] does not match the last dim of x [2, 3, 4]", bias_gelu_shapes},
    {"layernorm gain shape", "error: op layernorm: gain [7] does not match x [2, 8]", layernorm_gain},
    {"layernorm NULL", "error: op layernorm: NULL input", layernorm_null},
    {"softmax 1-D", "error: op softmax_masked: x [5] must be", softmax_1d},
    {"embedding id out of range", "error: op embedding: ids[1] = 9 out of range [0, 5) for table [5, 4]", embedding_range},
    {"embedding negative id", "error: op embedding: ids[1] = -1 out of range", embedding_negative},
    {"embedding NULL table", "error: op embedding: NULL table", embedding_null},
    {"embedding 3-D table", "error: op embedding: table [5, 4, 2] must be 2-D", embedding_3d},
    {"gather index out of range", "error: op gather_last: idx[0, 3] = 3 out of range [0, 3) for x [4, 3]", gather_range},
    {"gather idx_rows not dividing", "error: op gather_last: idx_rows = 3 must divide the 4 rows of x [4, 3]", gather_rows},
    {"gather NULL index", "error: op gather_last: NULL index", gather_null},
    {"index_select out of range", "error: op index_select: rows[1] = 4 out of range [0, 4) for x [2, 2, 3]", index_select_range},
    {"dropout p = 1", "error: op dropout: p = 1 outside [0, 1) for x [2, 2]", dropout_p},
    {"dropout NULL", "error: op dropout: NULL input", dropout_null},
    {"cross_entropy target", "error: op cross_entropy: targets[1] = 5 out of range [0, 5) for logits [2, 5]", ce_target},
    {"cross_entropy 3-D logits", "error: op cross_entropy: logits [1, 2, 5] must be 2-D", ce_3d},
    {"bce target 2", "error: op bce_logits: targets[1] = 2 is not 0 or 1 (logits [3])", bce_target},
    {"bce NULL targets", "error: op bce_logits: NULL targets for logits [3]", bce_null},
    {"sum NULL", "error: op sum: NULL input", sum_null},
    {"mean NULL", "error: op mean: NULL input", mean_null},
    {"reshape element count", "error: op reshape: x [2, 3] has 6 elements, the new shape has 8", reshape_count},
    {"reshape -1 not inferable", "error: op reshape: cannot infer dimension 0: x [2, 3]", reshape_infer},
    {"transpose 1-D", "error: op transpose: x [3] must have at least 2 dims", transpose_1d},
    {"split_heads not dividing", "error: op split_heads: heads = 3 does not divide the last dim of x [2, 3, 10]", split_heads_divide},
    {"merge_heads 3-D", "error: op merge_heads: x [2, 3, 10] must be [B, H, T, D]", merge_heads_3d},
    {"matmul inner dims", "error: op matmul: inner dimensions differ: A [2, 3], B [4, 5]", matmul_inner},
    {"linear shapes", "error: op linear: x [2, 3] does not match weight [4, 5]", linear_shapes},
    {"dropout_add_layernorm shapes", "error: op dropout_add_layernorm: y [2, 3] and res [3, 2] differ in shape", daln_shapes},
    {"dropout_add_layernorm y = res", "error: op dropout_add_layernorm: y and res are the same tensor", daln_same},
    {"dropout_add_layernorm_over recording", "error: op dropout_add_layernorm_over: outside a no-grad scope", daln_over_recording},
    {"attention_context v", "error: op attention_context: p [2, 2, 3, 4] and v [2, 5, 6]: need v [B, Tk, A·D]", context_shapes},
    {"attention [B,T,A*D] heads", "error: op disentangled_attention: q [2, 4, 6] and k [2, 4, 6] must be [B, T, A·D] with A = 4",
     attention_bth_heads},
    {"attention context v shape", "error: op disentangled_attention_context: v [2, 5, 6] must be [B, Tk, A·D] like k [2, 4, 6]",
     attention_context_v},
    {"attention context v = k", "error: op disentangled_attention_context: v must be a tensor of its own, not q or k",
     attention_context_v_is_k},
};

/* Runs fn in a child; returns its exit status (or 128 + signal) and its stderr in buf. */
static int run_child(void (*fn)(void), char *buf, size_t len) {
    int fd[2];
    if (pipe(fd) != 0) fail_msg("pipe failed");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) fail_msg("fork failed");
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        close(fd[1]);
        tape_init(&T, 1 << 16);
        fn();
        _exit(99); /* the op returned: misuse was not detected */
    }
    close(fd[1]);
    size_t k = 0;
    ssize_t r;
    while (k + 1 < len && (r = read(fd[0], buf + k, len - 1 - k)) > 0) k += (size_t)r;
    buf[k] = 0;
    char sink[256];
    while (read(fd[0], sink, sizeof sink) > 0) {
    }
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void every_misuse_exits_1_with_one_clear_line(void **state) {
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[4096];
        int rc = run_child(cases[i].fn, err, sizeof err);
        const char *nl = strchr(err, '\n');
        int one_line = nl && nl[1] == 0;
        if (rc != 1 || !strstr(err, cases[i].want) || strncmp(err, "error: op ", 10) != 0 || !one_line) {
            fprintf(stderr, "misuse '%s': exit %d, stderr:\n%s\n(wanted exit 1 and one line containing \"%s\")\n", cases[i].name, rc,
                    err, cases[i].want);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_misuse_exits_1_with_one_clear_line),
    };
    return cmocka_run_group_tests_name("ops_misuse", tests, NULL, NULL);
}
