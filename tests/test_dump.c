/* test_dump.c — train/parity/dump.h called directly on a tiny pair and a batch built here: the file holds
 * the losses and, per training mode, the gradients that separate forward/backward passes computed
 * here give (decoupled: the generator's of the MLM loss alone, bit for bit, also for the table ES
 * shares, and the discriminator's of its loss; joint: the generator's of both). */
#include "tests/testutil.h"
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/tape.h"
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include "model/electra.h"
#include "train/parity/dump.h"
#include "train/step.h"

enum { B = 2, T = 8 };

/* sharing ES is built as joint (the command does so too); the dump's mode is the caller's */
static void make_pair(Electra *m, int mode, int sharing) {
    ModelConfig c;
    char err[256];
    config_preset(&c, "test");
    c.vocab_size = 50;
    c.max_seq_len = T;
    c.hidden_dropout_prob = c.attention_probs_dropout_prob = 0;
    c.training_mode = sharing == SHARE_ES ? TRAIN_JOINT : mode;
    c.embedding_sharing = sharing;
    if (config_validate(&c, err, sizeof err)) fail_msg("%s", err);
    electra_build(m, &c, 5);
    for (int i = 0; i < m->ps.n; i++) /* non-zero biases and deltas: every gradient path in use */
        for (long j = 0; j < m->ps.params[i]->n; j++) m->ps.params[i]->data[j] += (real)(0.05 * rng_normal(8, (uint64_t)i, (uint64_t)j));
}

static void make_batch(Batch *b, int32_t *replaced, int mask_id) {
    batch_alloc(b, B, T);
    for (int i = 0; i < B * T; i++) {
        b->input_ids[i] = 5 + (int32_t)((i * 7) % 40);
        b->attention_mask[i] = i != B * T - 1; /* one padding position */
    }
    const int masked[3] = {2, 5, T + 3};
    for (int k = 0; k < 3; k++) {
        b->labels[masked[k]] = b->input_ids[masked[k]];
        b->input_ids[masked[k]] = mask_id;
    }
    memcpy(replaced, b->input_ids, sizeof(int32_t) * B * T);
    for (int k = 0; k < 3; k++) replaced[masked[k]] = k == 0 ? b->labels[masked[k]] : 6 + k; /* one sampled right, two wrong */
    b->n_masked = 3;
    b->n_tokens = B * T - 1;
}

static double read_scalar(hid_t f, const char *name) {
    double v = NAN;
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    assert_true(d >= 0);
    assert_true(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &v) >= 0);
    H5Dclose(d);
    return v;
}

/* grad/<name> of the file against want [n]: bitwise (tol 0) or within tol of the largest |want| */
static void check_grad(hid_t f, const Tensor *p, const real *want, double tol) {
    char name[600];
    snprintf(name, sizeof name, "grad/%s", p->name);
    double *got = xmalloc((size_t)p->n * sizeof(double)), mx = 0;
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    assert_true(d >= 0);
    assert_true(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) >= 0);
    H5Dclose(d);
    for (long j = 0; j < p->n; j++) mx = fmax(mx, fabs((double)want[j]));
    for (long j = 0; j < p->n; j++)
        if (!(fabs(got[j] - (double)want[j]) <= tol * mx)) fail_msg("%s[%ld]: %.9g in the dump, %.9g here", name, j, got[j], (double)want[j]);
    free(got);
}

static void dump_case(int mode, int sharing) {
    Electra m;
    make_pair(&m, mode, sharing);
    ModelConfig cfg = m.cfg;
    cfg.training_mode = mode;
    Batch b;
    int32_t replaced[B * T];
    make_batch(&b, replaced, m.cfg.mask_id);
    char path[] = "/tmp/deberta-test-dump-XXXXXX", err[512];
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    DumpResult r;
    if (dump_pair(&m, &cfg, &b, replaced, path, &r, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(r.n_masked, 3);
    /* here: the generator's backward alone, then the discriminator's alone */
    const long N = m.ps.total;
    real *gg = xmalloc((size_t)N * sizeof(real)), *gd = xmalloc((size_t)N * sizeof(real));
    Tape t;
    tape_init(&t, 1 << 24);
    t.training = 0;
    const ElectraInput in = electra_input(&b);
    GenOut g;
    DiscOut dd;
    params_zero_grad(&m.ps);
    tape_backward(&t, generator_forward(&t, &m, &in, &g), 1);
    memcpy(gg, m.ps.grad, (size_t)N * sizeof(real));
    const double mlm = (double)g.loss->data[0];
    tape_reset(&t);
    params_zero_grad(&m.ps);
    tape_backward(&t, discriminator_forward(&t, &m, &in, replaced, &dd), 1);
    memcpy(gd, m.ps.grad, (size_t)N * sizeof(real));
    const double rtd = (double)dd.loss->data[0];
    assert_true(r.mlm_loss == mlm && r.rtd_loss == rtd);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_true(read_scalar(f, "generator/loss") == mlm);
    assert_true(read_scalar(f, "discriminator/loss") == rtd);
    for (int i = 0; i < m.ps.n; i++) {
        const Tensor *p = m.ps.params[i];
        const long o = m.ps.offset[i];
        if (i < m.n_gen_params && mode == TRAIN_DECOUPLED) check_grad(f, p, gg + o, 0); /* the MLM loss's only */
        else if (i >= m.n_gen_params) check_grad(f, p, gd + o, 0);                    /* the discriminator's */
        else {                                                                         /* joint: both */
            real *sum = xmalloc((size_t)p->n * sizeof(real));
            for (long j = 0; j < p->n; j++) sum[j] = gg[o + j] + gd[o + j];
            check_grad(f, p, sum, REAL_TOL(1e-5, 1e-12));
            free(sum);
        }
    }
    H5Fclose(f);
    unlink(path);
    tape_free(&t);
    free(gg);
    free(gd);
    batch_free(&b);
    electra_free(&m);
}

static void decoupled_gradients(void **state) { dump_case(TRAIN_DECOUPLED, SHARE_GDES); }
static void joint_gradients(void **state) { dump_case(TRAIN_JOINT, SHARE_GDES); }
/* the discriminator's backward reaches the shared table: decoupled keeps the MLM gradient there */
static void es_decoupled_gradients(void **state) { dump_case(TRAIN_DECOUPLED, SHARE_ES); }

/* the option table of `deberta dump`: the four files; a config key is not its flag (the command keeps
 * those for the config); a file flag without its value is refused with one line */
static void dump_options(void **state) {
    DumpOptions o;
    char err[256];
    dump_options_default(&o);
    assert_int_equal(dump_options_set_flag(&o, "weights", "w.h5", err, sizeof err), 1);
    assert_int_equal(dump_options_set_flag(&o, "batch", "b.h5", err, sizeof err), 1);
    assert_int_equal(dump_options_set_flag(&o, "out", "d.h5", err, sizeof err), 1);
    assert_int_equal(dump_options_set_flag(&o, "config", "c.txt", err, sizeof err), 1);
    assert_string_equal(o.weights, "w.h5");
    assert_string_equal(o.batch, "b.h5");
    assert_string_equal(o.out, "d.h5");
    assert_string_equal(o.config, "c.txt");
    assert_int_equal(dump_options_set_flag(&o, "training_mode", "joint", err, sizeof err), 0);
    assert_int_equal(dump_options_set_flag(&o, "out", NULL, err, sizeof err), -1);
    assert_string_equal(err, "--out needs a value");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decoupled_gradients),
        cmocka_unit_test(joint_gradients),
        cmocka_unit_test(es_decoupled_gradients),
        cmocka_unit_test(dump_options),
    };
    return test_exit(cmocka_run_group_tests_name("dump", tests, NULL, NULL));
}
