/* test_pretrain_config.c — the model config of a fresh pretraining run, as `deberta pretrain` builds it
 * (train/pretrain.h pretrain_model_config), called directly: the model flags apply in their order
 * (--preset, --config FILE, --KEY VALUE), --init-from's checkpoint config comes first and the flags
 * change it, a bad value / an unreadable file / an invalid config give their codes and one line; and
 * the run flags of the option table (train/options.h): --data may come with --resume, --out and
 * --init-from may not, none of them is written to the config text. */
#include "tests/testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "model/electra.h"
#include "train/checkpoint.h"
#include "train/options.h"
#include "train/pretrain.h"

static char dir[256];
static int setup(void **s) { return test_tmpdir(dir, sizeof dir, "pretrain-config"); }
static int teardown(void **s) { return test_rmtree(dir); }

static void flags_in_order(void **s) {
    ModelConfig c;
    PretrainInit init;
    char err[1024], path[400];
    char *a[] = {"--preset", "test", "--max_seq_len", "16"};
    assert_int_equal(pretrain_model_config("", a, 4, &c, &init, err, sizeof err), 0);
    assert_int_equal(c.hidden_size, 16);
    assert_int_equal(c.max_seq_len, 16);
    assert_null(init.ck);
    char *b[] = {"--max_seq_len", "16", "--preset", "test"}; /* the preset replaces what came before */
    assert_int_equal(pretrain_model_config("", b, 4, &c, &init, err, sizeof err), 0);
    assert_int_equal(c.max_seq_len, 32);
    snprintf(path, sizeof path, "%s/model.txt", dir);
    FILE *f = fopen(path, "w");
    fputs("hidden_size = 24\nnum_attention_heads = 3\nattention_head_size = 8\nrtd_lambda = 7\n", f);
    fclose(f);
    char *d[] = {"--preset", "test", "--config", path, "--rtd_lambda", "9"};
    assert_int_equal(pretrain_model_config("", d, 6, &c, &init, err, sizeof err), 0);
    assert_int_equal(c.hidden_size, 24);
    assert_true(c.rtd_lambda == 9);
    char *bad[] = {"--hidden_size", "x"};
    assert_int_equal(pretrain_model_config("", bad, 2, &c, &init, err, sizeof err), 2);
    assert_non_null(strstr(err, "pretrain: flag --hidden_size"));
    char *nofile[] = {"--config", "/nonexistent/model.txt"};
    assert_int_equal(pretrain_model_config("", nofile, 2, &c, &init, err, sizeof err), 1);
    assert_non_null(strstr(err, "/nonexistent/model.txt"));
    char *invalid[] = {"--preset", "test", "--max_seq_len", "64"}; /* above max_position_embeddings 32 */
    assert_int_equal(pretrain_model_config("", invalid, 4, &c, &init, err, sizeof err), 2);
    assert_null(strchr(err, '\n'));
}

/* --init-from: the checkpoint's config first, then the flags */
static void init_from_checkpoint(void **s) {
    ModelConfig c, want;
    PretrainInit init;
    char err[1024], rundir[400], path[500];
    config_preset(&want, "test");
    want.rtd_lambda = 13;
    want.training_mode = TRAIN_DECOUPLED;
    if (config_validate(&want, err, sizeof err)) fail_msg("%s", err);
    Electra m;
    electra_build(&m, &want, 3);
    CheckpointState st;
    memset(&st, 0, sizeof st);
    st.config = config_to_text(&want);
    checkpoint_set_group_step(&st, "generator", 0);
    checkpoint_set_group_step(&st, "discriminator", 0);
    snprintf(rundir, sizeof rundir, "%s/run", dir);
    assert_int_equal(mkdir_p(rundir), 0);
    if (checkpoint_save(rundir, &m.ps, NULL, &st, 0, err, sizeof err)) fail_msg("%s", err);
    free(st.config);
    electra_free(&m);
    snprintf(path, sizeof path, "%s/checkpoint.h5", rundir);
    char *a[] = {"--max_seq_len", "16"};
    assert_int_equal(pretrain_model_config(path, a, 2, &c, &init, err, sizeof err), 0);
    assert_non_null(init.ck);
    assert_true(c.rtd_lambda == 13);
    assert_int_equal(c.hidden_size, 16);
    assert_int_equal(c.max_seq_len, 16);
    pretrain_init_close(&init);
    assert_null(init.ck);
}

static void run_flags(void **s) {
    TrainOptions o;
    char err[256];
    int resume_ok = -1;
    train_options_default(&o);
    assert_int_equal(train_options_set_flag(&o, "data", "shards", &resume_ok, err, sizeof err), 1);
    assert_int_equal(resume_ok, 1);
    assert_string_equal(o.data, "shards");
    assert_int_equal(train_options_set_flag(&o, "out", "run", &resume_ok, err, sizeof err), 1);
    assert_int_equal(resume_ok, 0);
    assert_int_equal(train_options_set_flag(&o, "init-from", "ck.h5", &resume_ok, err, sizeof err), 1);
    assert_int_equal(resume_ok, 0);
    assert_string_equal(o.init_from, "ck.h5");
    char *t = train_options_to_text(&o);
    assert_null(strstr(t, "shards"));
    assert_null(strstr(t, "ck.h5"));
    free(t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(flags_in_order),
        cmocka_unit_test(init_from_checkpoint),
        cmocka_unit_test(run_flags),
    };
    return test_exit(cmocka_run_group_tests(tests, setup, teardown));
}
