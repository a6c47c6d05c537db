/* test_dump_encoder.c — train/parity/dump_encoder.h called directly on a test-preset encoder and inputs built
 * here: the written loss, activations and every gradient against a forward and backward run in the
 * test (loss Σ last ⊙ loss_weight summed here in long double; with a token head, the head's loss and
 * logits). */
#include "tests/testutil.h"
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/tape.h"
#include "autograd/base/util.h"
#include "data/h5util.h"
#include "model/init.h"
#include "train/parity/dump_encoder.h"

enum { B = 2, T = 7, L = 3 };

/* dataset name of f equals want [n] bit for bit */
static void same_as(hid_t f, const char *name, const real *want, long n) {
    real *got = xmalloc((size_t)(n ? n : 1) * sizeof(real));
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) fail_msg("dataset %s missing", name);
    assert_true(H5Dread(d, H5T_REAL_NATIVE, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) >= 0);
    H5Dclose(d);
    for (long i = 0; i < n; i++)
        if (!(got[i] == want[i])) fail_msg("%s[%ld]: %.9g in the file, %.9g here", name, i, (double)got[i], (double)want[i]);
    free(got);
}

static void pass_case(int with_head) {
    ModelConfig c;
    char err[512];
    config_preset(&c, "test");
    c.hidden_dropout_prob = c.attention_probs_dropout_prob = 0;
    if (config_validate(&c, err, sizeof err)) fail_msg("%s", err);
    ParamSet ps;
    params_init(&ps);
    Encoder e;
    TaskHead head;
    encoder_register(&e, &ps, &c, c.num_hidden_layers, "deberta.", 0);
    if (with_head) task_head_register(&head, &ps, HEAD_TOKEN, c.hidden_size, L, 0, 0, "");
    params_finalize(&ps);
    model_init_params(&ps, c.initializer_range, 3);
    model_perturb_params(&ps, 4);
    int32_t ids[B * T], mask[B * T], labels[B * T];
    real *lw = xmalloc((size_t)B * T * c.hidden_size * sizeof(real));
    for (int i = 0; i < B * T; i++) {
        ids[i] = 3 + (i * 5) % (c.vocab_size - 3);
        mask[i] = i < B * T - 2; /* two padding positions */
        labels[i] = mask[i] && i % 3 ? i % L : -100;
    }
    for (long i = 0; i < (long)B * T * c.hidden_size; i++) lw[i] = (real)sin(0.1 * i);
    DumpEncoderInput in = {.B = B, .T = T, .ids = ids, .mask = mask, .loss_weight = with_head ? NULL : lw, .labels = with_head ? labels : NULL};
    char path[] = "/tmp/deberta-test-dump-encoder-XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    long double loss;
    if (dump_encoder_pass(&e, &ps, with_head ? &head : NULL, &in, path, &loss, err, sizeof err)) fail_msg("%s", err);
    real *grads = xmalloc((size_t)ps.total * sizeof(real));
    memcpy(grads, ps.grad, (size_t)ps.total * sizeof(real));
    /* here */
    Tape t;
    tape_init(&t, 1 << 24);
    t.training = 0;
    EncoderOut out;
    Tensor *last = encoder_forward(&t, &e, NULL, ids, mask, B, T, &out);
    params_zero_grad(&ps);
    long double want = 0;
    TaskHeadOut ho;
    if (with_head) {
        Tensor *l = task_head_forward(&t, &head, last, B, T, mask, labels, &ho);
        want = l->data[0];
        tape_backward(&t, l, 1);
    } else {
        for (long i = 0; i < last->n; i++) want += (long double)last->data[i] * lw[i];
        tape_backward_from(&t, last, lw);
    }
    if (!(loss == want)) fail_msg("loss %.17Lg, here %.17Lg", loss, want);
    assert_memory_equal(grads, ps.grad, (size_t)ps.total * sizeof(real));
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    const real lv = (real)want;
    same_as(f, "loss", &lv, 1);
    same_as(f, "embedding_output", out.emb->data, out.emb->n);
    char name[600];
    snprintf(name, sizeof name, "hidden_states/layer_%d", e.n_layers - 1);
    same_as(f, name, out.layers[e.n_layers - 1]->data, out.layers[e.n_layers - 1]->n);
    if (with_head) same_as(f, "logits", ho.logits->data, ho.logits->n);
    assert_int_equal(H5Lexists(f, "logits", H5P_DEFAULT) > 0, with_head);
    for (int i = 0; i < ps.n; i++) {
        snprintf(name, sizeof name, "grad/%s", ps.params[i]->name);
        same_as(f, name, ps.grad + ps.offset[i], ps.params[i]->n);
    }
    H5Fclose(f);
    unlink(path);
    tape_free(&t);
    free(grads);
    free(lw);
    encoder_free(&e);
    params_free(&ps);
}

static void loss_weight_pass(void **state) { pass_case(0); }
static void token_head_pass(void **state) { pass_case(1); }

/* the option table of `deberta dump-encoder`: the switches take no value, the files and the head one,
 * --num-labels and --seed are checked; the seed defaults to 1 */
static void dump_encoder_options(void **state) {
    DumpEncoderOptions o;
    char err[256];
    dump_encoder_options_default(&o);
    assert_true(o.seed == 1 && !o.init && !o.perturb && !o.head[0]);
    assert_int_equal(dump_encoder_options_set_flag(&o, "init", "--out", err, sizeof err), 2);
    assert_int_equal(dump_encoder_options_set_flag(&o, "perturb", NULL, err, sizeof err), 2);
    assert_true(o.init && o.perturb);
    assert_int_equal(dump_encoder_options_set_flag(&o, "head", "sequence", err, sizeof err), 1);
    assert_int_equal(dump_encoder_options_set_flag(&o, "num-labels", "3", err, sizeof err), 1);
    assert_int_equal(dump_encoder_options_set_flag(&o, "seed", "42", err, sizeof err), 1);
    assert_int_equal(dump_encoder_options_set_flag(&o, "out", "w.h5", err, sizeof err), 1);
    assert_string_equal(o.head, "sequence");
    assert_int_equal(o.num_labels, 3);
    assert_true(o.seed == 42);
    assert_string_equal(o.out, "w.h5");
    assert_int_equal(dump_encoder_options_set_flag(&o, "num-labels", "0", err, sizeof err), -1);
    assert_string_equal(err, "--num-labels '0' must be a positive integer");
    assert_int_equal(dump_encoder_options_set_flag(&o, "seed", "x", err, sizeof err), -1);
    assert_int_equal(dump_encoder_options_set_flag(&o, "hidden_size", "8", err, sizeof err), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loss_weight_pass),
        cmocka_unit_test(token_head_pass),
        cmocka_unit_test(dump_encoder_options),
    };
    return test_exit(cmocka_run_group_tests_name("dump_encoder", tests, NULL, NULL));
}
