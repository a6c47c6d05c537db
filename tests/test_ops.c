/* test_ops.c — the op table is fully covered by gradient checks, every case passes at the
 * precision's tolerance, and forward values match hand-computed results. */
#include "tests/testutil.h"
#include <string.h>
#include "autograd/gradcheck/gradcheck_ops.h"
#include "autograd/ops.h"

static Tape T;
static int setup(void **s) { tape_init(&T, 1 << 20); return 0; }
static int teardown(void **s) { tape_free(&T); return 0; }

static void every_op_has_a_gradcheck_case(void **state) {
    for (int op = 1; op < OP_COUNT; op++) {
        int found = 0;
        for (int i = 0; i < gradcheck_n_op_cases; i++)
            if (!strcmp(gradcheck_op_cases[i].op, op_table[op].name)) found = 1;
        if (!found) fail_msg("op '%s' is in the op table but has no gradient-check case in autograd/gradcheck/gradcheck_ops.c", op_table[op].name);
    }
    for (int i = 0; i < gradcheck_n_op_cases; i++) {
        int found = 0;
        for (int op = 1; op < OP_COUNT; op++) found |= !strcmp(gradcheck_op_cases[i].op, op_table[op].name);
        if (!found) fail_msg("gradcheck case names unknown op '%s'", gradcheck_op_cases[i].op);
    }
}

static void every_gradcheck_case_passes(void **state) {
    for (int i = 0; i < gradcheck_n_op_cases; i++) {
        GCResult r = gradcheck_op_cases[i].run(&T);
        if (!r.ok || r.n_checked == 0)
            fail_msg("%s %s: max_rel_err %.3e (tolerance %.1e, %ld checked)", gradcheck_op_cases[i].op, gradcheck_op_cases[i].shapes, r.max_err,
                     gradcheck_tolerance(), r.n_checked);
    }
}

__attribute__((noinline)) static Tensor *leaf_from(int ndim, const int *shape, const double *v) {
    Tensor *x = gradcheck_leaf(ndim, shape, 1, "x");
    for (long i = 0; i < x->n; i++) x->data[i] = (real)v[i];
    return x;
}

static void matmul_forward_values(void **state) {
    tape_reset(&T);
    const int sa[2] = {2, 3}, sb[2] = {3, 2};
    const double av[6] = {1, 2, 3, 4, 5, 6}, bv[6] = {7, 8, 9, 10, 11, 12};
    Tensor *a = leaf_from(2, sa, av), *b = leaf_from(2, sb, bv);
    Tensor *c = op_matmul(&T, a, b, 0, 0);
    /* [[1,2,3],[4,5,6]] · [[7,8],[9,10],[11,12]] = [[58,64],[139,154]] */
    const double want[4] = {58, 64, 139, 154};
    for (int i = 0; i < 4; i++) assert_near(c->data[i], want[i], 0);
    Tensor *ct = op_matmul(&T, a, a, 0, 1); /* A·A^T = [[14,32],[32,77]] */
    const double want2[4] = {14, 32, 32, 77};
    for (int i = 0; i < 4; i++) assert_near(ct->data[i], want2[i], 0);
    Tensor *tt = op_matmul(&T, a, a, 1, 0); /* A^T·A: [0][0] = 1+16 = 17, [1][2] = 2*3+5*6 = 36 */
    assert_near(tt->data[0], 17, 0);
    assert_near(tt->data[5], 36, 0);
    gradcheck_leaf_free(a);
    gradcheck_leaf_free(b);
}

static void linear_forward_values_and_backward(void **state) {
    tape_reset(&T);
    const int sx[2] = {1, 2}, sw[2] = {2, 2}, sb[1] = {2};
    const double xv[2] = {1, -1}, wv[4] = {1, 2, 3, 4}, bv[2] = {0.5, -0.5};
    Tensor *x = leaf_from(2, sx, xv), *w = leaf_from(2, sw, wv), *b = leaf_from(1, sb, bv);
    Tensor *y = op_linear(&T, x, w, b); /* [1·1 − 2 + 0.5, 3 − 4 − 0.5] = [−0.5, −1.5] */
    assert_near(y->data[0], -0.5, 0);
    assert_near(y->data[1], -1.5, 0);
    const real g[2] = {1, 2};
    tape_backward_from(&T, y, g);
    /* dx = g·W = [1+6, 2+8] = [7, 10]; dW = g^T x = [[1,-1],[2,-2]]; db = g */
    assert_near(x->grad[0], 7, 0);
    assert_near(x->grad[1], 10, 0);
    assert_near(w->grad[3], -2, 0);
    assert_near(b->grad[1], 2, 0);
    gradcheck_leaf_free(x);
    gradcheck_leaf_free(w);
    gradcheck_leaf_free(b);
}

static void backward_accumulates_for_reused_tensor(void **state) {
    tape_reset(&T);
    const int s[2] = {1, 1};
    const double v[1] = {3};
    Tensor *a = leaf_from(2, s, v);
    Tensor *c = op_matmul(&T, a, a, 0, 0); /* c = a², dc/da = 2a = 6 */
    const real g[1] = {1};
    tape_backward_from(&T, c, g);
    assert_near(a->grad[0], 6, 0);
    gradcheck_leaf_free(a);
}

static void nograd_and_detach_record_nothing(void **state) {
    tape_reset(&T);
    const int s[2] = {1, 1};
    const double v[1] = {3};
    Tensor *a = leaf_from(2, s, v);
    tape_nograd_begin(&T);
    Tensor *c = op_matmul(&T, a, a, 0, 0);
    tape_nograd_end(&T);
    assert_int_equal(T.n_nodes, 0);
    assert_false(c->requires_grad);
    Tensor *d = op_detach(&T, a);
    Tensor *e = op_matmul(&T, d, d, 0, 0);
    assert_int_equal(T.n_nodes, 0);
    assert_false(e->requires_grad);
    assert_ptr_equal(d->data, a->data);
    gradcheck_leaf_free(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_op_has_a_gradcheck_case),
        cmocka_unit_test(every_gradcheck_case_passes),
        cmocka_unit_test(matmul_forward_values),
        cmocka_unit_test(linear_forward_values_and_backward),
        cmocka_unit_test(backward_accumulates_for_reused_tensor),
        cmocka_unit_test(nograd_and_detach_record_nothing),
    };
    return cmocka_run_group_tests_name("ops", tests, setup, teardown);
}
