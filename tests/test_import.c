/* test_import.c — train/interop/import_run.h called directly: a pair with every value perturbed is
 * written as two Hugging Face folders by the export tensor map (hf_export_electra, NES: each model's
 * own tables), import_run reads them back as a run directory, and the checkpoint it wrote holds every
 * parameter bit for bit (as float32, the folders' type), step 0 and the config (with a config key
 * given as a flag applied after config.json); a discriminator alone imports with the generator
 * initialised, as the result says. */
#include "tests/testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include "model/electra.h"
#include "train/checkpoint.h"
#include "train/interop/hf_export.h"
#include "train/interop/import_run.h"

static char dir[256];
static int setup(void **s) { return test_tmpdir(dir, sizeof dir, "import"); }
static int teardown(void **s) { return test_rmtree(dir); }

static void small_pair(Electra *m) {
    ModelConfig c;
    char err[256];
    config_defaults(&c);
    c.hidden_size = 8, c.num_hidden_layers = 2, c.gen_num_hidden_layers = 1, c.num_attention_heads = 2, c.attention_head_size = 4;
    c.intermediate_size = 16, c.vocab_size = 40, c.max_position_embeddings = 16, c.position_buckets = 4, c.max_relative_positions = 8;
    c.max_seq_len = 16, c.embedding_sharing = SHARE_NES, c.training_mode = TRAIN_DECOUPLED;
    if (config_validate(&c, err, sizeof err)) fail_msg("%s", err);
    electra_build(m, &c, 7);
    for (int i = 0; i < m->ps.n; i++)
        for (long j = 0; j < m->ps.params[i]->n; j++) m->ps.params[i]->data[j] += (real)(0.1 * rng_normal(99, (uint64_t)i, (uint64_t)j));
}

/* the pair as dir/hf/{generator,discriminator} (official MLM names, the RTD head: everything import reads) */
static void write_folders(const Electra *m, char *gdir, char *ddir, size_t n) {
    char err[512];
    int ng, nd;
    snprintf(gdir, n, "%s/hf/generator", dir);
    snprintf(ddir, n, "%s/hf/discriminator", dir);
    assert_int_equal(mkdir_p(gdir) | mkdir_p(ddir), 0);
    const HfExportHeads heads = {.mlm_official = 1, .rtd = 1};
    if (hf_export_electra(m, heads, gdir, ddir, &ng, &nd, err, sizeof err)) fail_msg("%s", err);
}

static void import_pair(void **s) {
    Electra m;
    small_pair(&m);
    char gdir[400], ddir[400], err[512];
    write_folders(&m, gdir, ddir, sizeof gdir);
    ImportOptions o;
    import_options_default(&o);
    snprintf(o.hf, sizeof o.hf, "%s", ddir);
    snprintf(o.out, sizeof o.out, "%s/run", dir);
    assert_int_equal(import_options_set_flag(&o, "generator", gdir, err, sizeof err), 1);
    assert_int_equal(import_options_set_flag(&o, "seed", "x", err, sizeof err), -1);
    assert_int_equal(import_options_set_flag(&o, "rtd_lambda", "20", err, sizeof err), 0); /* a config key: not the table's */
    char *keys[] = {"--rtd_lambda", "20"};
    o.keys = keys, o.n_keys = 2;
    ImportResult r;
    assert_int_equal(import_run(&o, &r), 0);
    assert_int_equal(r.imp.n_init, 0);
    assert_int_equal(r.cfg.gen_num_hidden_layers, 1);
    assert_true(r.cfg.rtd_lambda == 20);
    assert_string_equal(r.tokenizer, "");

    char path[600];
    snprintf(path, sizeof path, "%s/run/checkpoint.h5", dir);
    CheckpointState st;
    memset(&st, 0, sizeof st);
    Electra back;
    electra_build(&back, &r.cfg, 1);
    if (checkpoint_load(path, &back.ps, NULL, &st, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(st.step, 0);
    assert_non_null(strstr(st.config, "rtd_lambda = 20"));
    assert_int_equal(back.ps.n, m.ps.n);
    for (int i = 0; i < m.ps.n; i++) {
        const Tensor *a = m.ps.params[i], *b = back.ps.params[i];
        assert_string_equal(a->name, b->name);
        assert_int_equal(a->n, b->n);
        for (long j = 0; j < a->n; j++) /* the folders hold float32: the double build gets its values rounded once */
            if (!(b->data[j] == (real)(float)a->data[j])) fail_msg("'%s'[%ld] differs after export + import", a->name, j);
    }
    checkpoint_state_free(&st);
    snprintf(path, sizeof path, "%s/run/config.txt", dir);
    size_t n;
    char *txt = read_file(path, &n);
    assert_non_null(txt);
    assert_non_null(strstr(txt, "gen_num_hidden_layers = 1"));
    free(txt);
    electra_free(&back);

    /* the discriminator alone: the generator (default depth: half) is initialised and said so */
    import_options_default(&o);
    snprintf(o.hf, sizeof o.hf, "%s", ddir);
    snprintf(o.out, sizeof o.out, "%s/run-disc", dir);
    assert_int_equal(import_run(&o, &r), 0);
    assert_true(r.imp.n_init > 0);
    assert_int_equal(r.cfg.gen_num_hidden_layers, 1);
    electra_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(import_pair),
    };
    return test_exit(cmocka_run_group_tests(tests, setup, teardown));
}
