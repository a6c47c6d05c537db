/* test_model_config.c — presets, key=value files, --key value flags, validation messages and the
 * writer (save -> load gives the same resolved config). */
#include "tests/testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model/config.h"

static char err[512];

static void presets(void **state) {
    ModelConfig c;
    assert_int_equal(config_preset(&c, "tiny"), 0);
    assert_int_equal(config_validate(&c, err, sizeof err), 0);
    assert_int_equal(c.hidden_size, 256);
    assert_int_equal(c.num_hidden_layers, 4);
    assert_int_equal(c.num_attention_heads, 4);
    assert_int_equal(c.attention_head_size, 64);
    assert_int_equal(c.intermediate_size, 1024);
    assert_int_equal(c.position_buckets, 64);
    assert_int_equal(c.max_relative_positions, 512); /* = max_position_embeddings: Hugging Face-exact */
    assert_int_equal(c.max_seq_len, 128);
    assert_int_equal(c.vocab_size, 8192);
    assert_int_equal(c.gen_num_hidden_layers, 2); /* half */
    assert_int_equal(c.att_terms, ATT_C2C | ATT_C2P | ATT_P2C);
    assert_int_equal(config_rel_rows(&c), 128);
    assert_int_equal(config_num_terms(&c), 3);
    assert_true(c.hidden_dropout_prob == 0 && c.attention_probs_dropout_prob == 0); /* tiny pretrains without dropout */
    assert_int_equal(config_preset(&c, "xsmall"), 0);
    assert_int_equal(config_validate(&c, err, sizeof err), 0);
    assert_int_equal(c.hidden_size, 384);
    assert_int_equal(c.num_hidden_layers, 12);
    assert_int_equal(c.num_attention_heads, 6);
    assert_int_equal(c.intermediate_size, 1536);
    assert_int_equal(c.position_buckets, 256);
    assert_int_equal(c.max_relative_positions, 512); /* -1 -> max_position_embeddings */
    assert_int_equal(config_rel_rows(&c), 512);
    assert_int_equal(c.gen_num_hidden_layers, 6);
    assert_true(c.layer_norm_eps == 1e-7);
    assert_true(c.hidden_dropout_prob == 0.1 && c.attention_probs_dropout_prob == 0.1); /* the spec's */
    assert_int_equal(c.pad_id, 0);
    assert_int_equal(c.mask_id, 4);
    assert_int_equal(config_preset(&c, "huge"), -1);
}

/* set key=value on the tiny preset, then validate: expect an error containing `want` */
static void expect_invalid(const char *key, const char *value, const char *want) {
    ModelConfig c;
    config_preset(&c, "tiny");
    if (config_set(&c, key, value, err, sizeof err) == 0) {
        if (config_validate(&c, err, sizeof err) == 0) fail_msg("%s=%s: accepted, expected error '%s'", key, value, want);
    }
    if (!strstr(err, want)) fail_msg("%s=%s: error '%s' does not mention '%s'", key, value, err, want);
}

static void validation_errors(void **state) {
    ModelConfig c;
    config_preset(&c, "tiny");
    c.attention_head_size = 0;
    c.num_attention_heads = 3;
    assert_int_equal(config_validate(&c, err, sizeof err), -1);
    assert_non_null(strstr(err, "not divisible by num_attention_heads"));
    expect_invalid("position_buckets", "1100", "position_buckets 1100 is larger than allowed");
    expect_invalid("pos_att_type", "", "non-empty");
    expect_invalid("pos_att_type", "c2c|p2p", "non-empty");
    expect_invalid("share_att_key", "false", "share_att_key = false is not supported");
    expect_invalid("hidden_size", "0", "hidden_size must be >= 1");
    expect_invalid("hidden_size", "12x", "not an integer");
    expect_invalid("layer_norm_eps", "0", "layer_norm_eps must be > 0");
    expect_invalid("hidden_dropout_prob", "1", "hidden_dropout_prob must be in [0, 1)");
    expect_invalid("embedding_sharing", "both", "gdes, es or nes");
    expect_invalid("training_mode", "mixed", "decoupled or joint");
    expect_invalid("mask_id", "1", "cls_id and mask_id are both 1");
    expect_invalid("mask_id", "9000", "outside the vocabulary");
    expect_invalid("max_seq_len", "513", "max_seq_len 513");
    expect_invalid("no_such_key", "1", "unknown config key 'no_such_key'");
    expect_invalid("preset", "huge", "unknown preset");
    /* every non-empty subset of terms is valid */
    for (int m = 1; m <= 7; m++) {
        config_preset(&c, "tiny");
        assert_int_equal(config_set(&c, "pos_att_type", config_terms_str(m), err, sizeof err), 0);
        assert_int_equal(config_validate(&c, err, sizeof err), 0);
        assert_int_equal(c.att_terms, m);
    }
    assert_int_equal(config_parse_terms("p2c, c2p"), ATT_C2P | ATT_P2C);
    /* no buckets: S = max_relative_positions */
    config_preset(&c, "tiny");
    c.position_buckets = 0;
    c.max_relative_positions = 128;
    assert_int_equal(config_validate(&c, err, sizeof err), 0);
    assert_int_equal(config_att_span(&c), 128);
}

static void file_flags_and_writer(void **state) {
    char path[] = "/tmp/deberta_cfg_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "# a comment\npreset = xsmall\n\nnum_hidden_layers = 2   # trailing comment\npos_att_type = c2c|p2c\n"
               "hidden_dropout_prob=0\nembedding_sharing = es\ntraining_mode = joint\n");
    fclose(f);
    ModelConfig c;
    config_defaults(&c);
    assert_int_equal(config_load(&c, path, err, sizeof err), 0);
    char *argv[] = {"x", "--hidden-size", "192", "--num_attention_heads", "3", "--other", "--vocab_size", "100", "--rtd_lambda", "oops"};
    int argc = 10, i = 1;
    assert_int_equal(config_parse_flag(&c, argc, argv, &i, err, sizeof err), 1);
    assert_int_equal(i, 2);
    i = 3;
    assert_int_equal(config_parse_flag(&c, argc, argv, &i, err, sizeof err), 1);
    i = 5;
    assert_int_equal(config_parse_flag(&c, argc, argv, &i, err, sizeof err), 0); /* not a config flag */
    i = 6;
    assert_int_equal(config_parse_flag(&c, argc, argv, &i, err, sizeof err), 1);
    i = 8;
    assert_int_equal(config_parse_flag(&c, argc, argv, &i, err, sizeof err), -1);
    assert_non_null(strstr(err, "--rtd_lambda"));
    assert_int_equal(config_validate(&c, err, sizeof err), 0);
    assert_int_equal(c.hidden_size, 192);
    assert_int_equal(c.num_hidden_layers, 2);
    assert_int_equal(c.gen_num_hidden_layers, 1);
    assert_int_equal(c.att_terms, ATT_C2C | ATT_P2C);
    assert_int_equal(c.embedding_sharing, SHARE_ES);
    assert_int_equal(c.training_mode, TRAIN_JOINT);
    assert_true(c.hidden_dropout_prob == 0);
    /* save and reload: identical */
    assert_int_equal(config_save(&c, path, err, sizeof err), 0);
    ModelConfig d;
    config_preset(&d, "test");
    assert_int_equal(config_load(&d, path, err, sizeof err), 0);
    assert_int_equal(config_validate(&d, err, sizeof err), 0);
    assert_memory_equal(&c, &d, sizeof c);
    /* a bad line names the file and the line */
    f = fopen(path, "w");
    fprintf(f, "hidden_size = 64\nthis line has no equals sign\n");
    fclose(f);
    assert_int_equal(config_load(&d, path, err, sizeof err), -1);
    assert_non_null(strstr(err, ":2: expected 'key = value'"));
    unlink(path);
    assert_int_equal(config_load(&d, "/nonexistent/cfg", err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(presets),
        cmocka_unit_test(validation_errors),
        cmocka_unit_test(file_flags_and_writer),
    };
    return cmocka_run_group_tests_name("model_config", tests, NULL, NULL);
}
