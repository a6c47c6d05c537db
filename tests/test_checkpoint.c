/* test_checkpoint.c — HDF5 checkpoints: bit-exact round trip, identical bytes for identical states,
 * latest + numbered files, and one clear error for a missing, truncated or foreign file, a missing
 * or extra tensor, a wrong shape or dtype, NaN/Inf, a wrong format or version; a writer killed with
 * SIGKILL half-way leaves the previous checkpoint loadable. */
#include "tests/testutil.h"
#include <hdf5.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "autograd/base/rng.h"
#include "train/checkpoint.h"
#include "tests/moments.h"
#include "tests/h5flip.h"
#include "train/optim.h"

static char dir[64];

static int setup(void **s) {
    return test_tmpdir(dir, sizeof dir, "ckpt");
}

static int teardown(void **s) {
    return test_rmtree(dir);
}

static const char *NAMES[] = {
    "generator.deberta.embeddings.word_embeddings.weight",
    "generator.deberta.encoder.layer.0.attention.self.query_proj.bias",
    "discriminator.deberta.embeddings.LayerNorm.weight",
    "discriminator.deberta.encoder.layer.0.output.dense.weight",
};
static const int NDIM[] = {2, 1, 1, 2};
static const int SHAPES[][2] = {{7, 4}, {4, 0}, {4, 0}, {3, 5}};

/* The four parameters (optionally with one shape changed, one left out, or one extra). */
static void make_set(ParamSet *ps, int changed, int left_out, int extra) {
    params_init(ps);
    for (int i = 0; i < 4; i++) {
        if (i == left_out) continue;
        int s[2] = {SHAPES[i][0], SHAPES[i][1]};
        if (i == changed) s[NDIM[i] - 1] *= 2;
        params_add(ps, NAMES[i], NDIM[i], s);
    }
    if (extra) {
        const int s[1] = {3};
        params_add(ps, "discriminator.mask_predictions.dense.bias", 1, s);
    }
    params_finalize(ps);
}

static void fill(ParamSet *ps, uint64_t seed) {
    for (long i = 0; i < ps->total; i++) {
        ps->data[i] = (real)rng_normal(seed, 1, (uint64_t)i);
        MO(ps)->buf[0][i] = (real)(1e-3 * rng_normal(seed, 2, (uint64_t)i));
        MO(ps)->buf[1][i] = (real)(1e-6 * rng_uniform(seed, 3, (uint64_t)i));
    }
}

static int64_t LOADER[5] = {3, -1, 1234567890123LL, 0, 42};
static unsigned char TOK[6] = {'t', 'o', 0, 'k', 0xff, '\n'};

static void make_state(CheckpointState *st, int64_t step) {
    memset(st, 0, sizeof *st);
    st->step = step;
    st->seed = 0xdeadbeefcafef00dULL;
    checkpoint_set_group_step(st, "generator", step - 3);
    checkpoint_set_group_step(st, "discriminator", step - 4);
    st->loader_state = LOADER;
    st->n_loader_state = 5;
    st->config = "preset = tiny\nhidden_size = 4\n";
    st->tokenizer = TOK;
    st->n_tokenizer = sizeof TOK;
}

static void path_of(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

static void assert_same_tensors(const ParamSet *a, const ParamSet *b) {
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        const size_t bytes = (size_t)a->params[i]->n * sizeof(real);
        assert_memory_equal(a->data + a->offset[i], b->data + b->offset[i], bytes);
        assert_memory_equal(MO(a)->buf[0] + a->offset[i], MO(b)->buf[0] + b->offset[i], bytes);
        assert_memory_equal(MO(a)->buf[1] + a->offset[i], MO(b)->buf[1] + b->offset[i], bytes);
    }
}

static char *slurp(const char *path, long *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)*n + 1);
    if (fread(b, 1, (size_t)*n, f) != (size_t)*n) *n = -1;
    fclose(f);
    return b;
}

static void round_trip_bit_exact(void **state) {
    char path[256], path2[256], err[512];
    path_of(path, sizeof path, "rt.h5");
    path_of(path2, sizeof path2, "rt2.h5");
    ParamSet a, b;
    make_set(&a, -1, -1, 0);
    fill(&a, 7);
    CheckpointState st, got;
    make_state(&st, 123);
    assert_int_equal(checkpoint_write(path, &a, MO(&a), &st, err, sizeof err), 0);
    assert_int_equal(checkpoint_write(path2, &a, MO(&a), &st, err, sizeof err), 0);
    make_set(&b, -1, -1, 0);
    if (checkpoint_load(path, &b, MO(&b), &got, err, sizeof err)) fail_msg("%s", err);
    assert_same_tensors(&a, &b);
    assert_int_equal(got.step, 123);
    assert_true(got.seed == 0xdeadbeefcafef00dULL);
    assert_int_equal(got.n_groups, 2);
    assert_int_equal(checkpoint_group_step(&got, "generator"), 120);
    assert_int_equal(checkpoint_group_step(&got, "discriminator"), 119);
    assert_int_equal(checkpoint_group_step(&got, "nope"), -1);
    assert_int_equal(got.n_loader_state, 5);
    assert_memory_equal(got.loader_state, LOADER, sizeof LOADER);
    assert_string_equal(got.config, st.config);
    assert_int_equal(got.n_tokenizer, sizeof TOK);
    assert_memory_equal(got.tokenizer, TOK, sizeof TOK);
    checkpoint_state_free(&got);
    /* the state alone */
    assert_int_equal(checkpoint_read_state(path, &got, err, sizeof err), 0);
    assert_int_equal(got.step, 123);
    assert_string_equal(got.config, st.config);
    checkpoint_state_free(&got);
    /* identical states give identical files (no timestamps inside) */
    long n1 = 0, n2 = 0;
    char *f1 = slurp(path, &n1), *f2 = slurp(path2, &n2);
    assert_true(n1 > 0 && n1 == n2);
    assert_memory_equal(f1, f2, (size_t)n1);
    free(f1);
    free(f2);
    /* no temp file left behind */
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_int_not_equal(access(tmp, F_OK), 0);
    free_set(&a);
    free_set(&b);
}

static void empty_state_round_trip(void **state) {
    char path[256], err[512];
    path_of(path, sizeof path, "empty.h5");
    ParamSet a, b;
    make_set(&a, -1, -1, 0);
    fill(&a, 8);
    CheckpointState st, got;
    memset(&st, 0, sizeof st);
    assert_int_equal(checkpoint_write(path, &a, MO(&a), &st, err, sizeof err), 0);
    make_set(&b, -1, -1, 0);
    if (checkpoint_load(path, &b, MO(&b), &got, err, sizeof err)) fail_msg("%s", err);
    assert_same_tensors(&a, &b);
    assert_int_equal(got.n_groups, 0);
    assert_int_equal(got.n_loader_state, 0);
    assert_null(got.loader_state);
    assert_int_equal(got.n_tokenizer, 0);
    assert_string_equal(got.config, "");
    checkpoint_state_free(&got);
    free_set(&a);
    free_set(&b);
}

static void save_latest_and_numbered(void **state) {
    char rundir[256], p[300], err[512];
    path_of(rundir, sizeof rundir, "run");
    mkdir(rundir, 0755);
    ParamSet a, b;
    make_set(&a, -1, -1, 0);
    CheckpointState st, got;
    for (int k = 1; k <= 2; k++) {
        fill(&a, 100 + (uint64_t)k);
        make_state(&st, 10 * k);
        assert_int_equal(checkpoint_save(rundir, &a, MO(&a), &st, 1, err, sizeof err), 0);
    }
    make_set(&b, -1, -1, 0);
    snprintf(p, sizeof p, "%s/checkpoint.h5", rundir);
    assert_int_equal(checkpoint_load(p, &b, MO(&b), &got, err, sizeof err), 0);
    assert_int_equal(got.step, 20);
    assert_same_tensors(&a, &b);
    checkpoint_state_free(&got);
    snprintf(p, sizeof p, "%s/checkpoint-0000010.h5", rundir);
    assert_int_equal(checkpoint_load(p, &b, MO(&b), &got, err, sizeof err), 0);
    assert_int_equal(got.step, 10); /* the older numbered file is untouched by the later save */
    checkpoint_state_free(&got);
    snprintf(p, sizeof p, "%s/checkpoint-0000020.h5", rundir);
    assert_int_equal(checkpoint_read_state(p, &got, err, sizeof err), 0);
    assert_int_equal(got.step, 20);
    checkpoint_state_free(&got);
    free_set(&a);
    free_set(&b);
}

/* Loads path into a fresh set (shape change / left out / extra) and expects an error containing want. */
static void expect_load_error(const char *path, int changed, int left_out, int extra, const char *want) {
    char err[512];
    ParamSet b;
    CheckpointState got;
    make_set(&b, changed, left_out, extra);
    int rc = checkpoint_load(path, &b, MO(&b), &got, err, sizeof err);
    free_set(&b);
    if (rc == 0) fail_msg("loading %s succeeded, expected an error with '%s'", path, want);
    fprintf(stderr, "  got: error: %s\n", err);
    if (!strstr(err, want)) fail_msg("error '%s' does not contain '%s'", err, want);
    char pre[300];
    snprintf(pre, sizeof pre, "checkpoint %s: ", path);
    if (strncmp(err, pre, strlen(pre))) fail_msg("error '%s' does not start with '%s'", err, pre);
    if (strchr(err, '\n')) fail_msg("error '%s' is not one line", err);
}

static void write_good(const char *path, uint64_t seed) {
    char err[512];
    ParamSet a;
    make_set(&a, -1, -1, 0);
    fill(&a, seed);
    CheckpointState st;
    make_state(&st, 5);
    if (checkpoint_write(path, &a, MO(&a), &st, err, sizeof err)) fail_msg("%s", err);
    free_set(&a);
}

static void missing_truncated_and_foreign_files(void **state) {
    char path[256], trunc[256], text[256];
    path_of(path, sizeof path, "good.h5");
    path_of(trunc, sizeof trunc, "trunc.h5");
    path_of(text, sizeof text, "text.h5");
    write_good(path, 9);
    long n = 0;
    char *buf = slurp(path, &n);
    FILE *f = fopen(trunc, "wb");
    fwrite(buf, 1, (size_t)n / 2, f);
    fclose(f);
    free(buf);
    f = fopen(text, "w");
    fputs("this is not an HDF5 file\n", f);
    fclose(f);
    char none[256];
    path_of(none, sizeof none, "does-not-exist.h5");
    expect_load_error(none, -1, -1, 0, "cannot open: No such file or directory");
    expect_load_error(trunc, -1, -1, 0, "truncated after it was written");
    expect_load_error(text, -1, -1, 0, "has no seal");
    expect_load_error(dir, -1, -1, 0, "not a regular file");
}

static void missing_extra_and_reshaped_tensors(void **state) {
    char path[256], want[512];
    path_of(path, sizeof path, "shapes.h5");
    write_good(path, 10);
    expect_load_error(path, -1, -1, 1, "parameter 'discriminator.mask_predictions.dense.bias' is missing from /params (was it written with another config?)");
    expect_load_error(path, -1, 2, 0, "has parameter 'discriminator.deberta.embeddings.LayerNorm.weight' in /params that the model does not have");
    snprintf(want, sizeof want,
             "checkpoint %s: parameter 'generator.deberta.embeddings.word_embeddings.weight' has shape [7, 4], the model expects [7, 8] "
             "(was it written with another config?)",
             path);
    expect_load_error(path, 0, -1, 0, want);
}

static void nonfinite_values_rejected(void **state) {
    char path[256], err[512];
    path_of(path, sizeof path, "nan.h5");
    ParamSet a;
    make_set(&a, -1, -1, 0);
    fill(&a, 11);
    CheckpointState st;
    make_state(&st, 5);
    a.params[3]->data[6] = (real)NAN;
    assert_int_equal(checkpoint_write(path, &a, MO(&a), &st, err, sizeof err), 0);
    expect_load_error(path, -1, -1, 0, "parameter 'discriminator.deberta.encoder.layer.0.output.dense.weight' contains NaN at element 6");
    a.params[3]->data[6] = 0;
    MO(&a)->buf[1][a.offset[1] + 2] = (real)INFINITY;
    assert_int_equal(checkpoint_write(path, &a, MO(&a), &st, err, sizeof err), 0);
    expect_load_error(path, -1, -1, 0, "moment v of 'generator.deberta.encoder.layer.0.attention.self.query_proj.bias' contains Inf at element 2");
    free_set(&a);
}

/* Edits a good checkpoint with the HDF5 API: wrong format, version, dtype, missing group. */
static void foreign_format_version_dtype(void **state) {
    char path[256];
    path_of(path, sizeof path, "edit.h5");
    const char *pname = "discriminator.deberta.embeddings.LayerNorm.weight";

    write_good(path, 12);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Adelete(f, "format");
    H5Fclose(f);
    test_reseal(path);
    expect_load_error(path, -1, -1, 0, "no 'format' attribute: not a deberta.c checkpoint");

    write_good(path, 12);
    f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t a = H5Aopen(f, "version", H5P_DEFAULT);
    const int32_t v = 99;
    H5Awrite(a, H5T_NATIVE_INT32, &v);
    H5Aclose(a);
    H5Fclose(f);
    test_reseal(path);
    expect_load_error(path, -1, -1, 0, "format version 99, this build reads versions 1 to 2");

    write_good(path, 12);
    f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t g = H5Gopen2(f, "params", H5P_DEFAULT);
    H5Ldelete(g, pname, H5P_DEFAULT);
    hsize_t d[1] = {4};
    hid_t s = H5Screate_simple(1, d, NULL);
    hid_t ds = H5Dcreate2(g, pname, H5T_STD_I32LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const int32_t z[4] = {1, 1, 1, 1};
    H5Dwrite(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, z);
    H5Dclose(ds);
    H5Sclose(s);
    H5Gclose(g);
    H5Fclose(f);
    test_reseal(path);
    expect_load_error(path, -1, -1, 0, "parameter 'discriminator.deberta.embeddings.LayerNorm.weight' has dtype int32, expected float32 or float64");

    write_good(path, 12);
    f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(f, "optim/v", H5P_DEFAULT);
    H5Fclose(f);
    test_reseal(path);
    expect_load_error(path, -1, -1, 0, "group '/optim/v' is missing");
}

/* Bytes flipped inside one tensor's data: the seal refuses the file.  Behind it (the file sealed
 * again), version 2: every parameter and moment carries a Fletcher-32 checksum, and the flipped
 * bytes are one error naming the tensor; a version-2 tensor without a checksum is refused; a
 * version-1 file (no checksums) is still read. */
static void checksums_name_the_corrupt_tensor(void **state) {
    char path[256];
    path_of(path, sizeof path, "flip.h5");
    write_good(path, 13);
    flip_dataset_bytes(path, "optim/m/discriminator.deberta.encoder.layer.0.output.dense.weight", 16);
    expect_load_error(path, -1, -1, 0, "does not match its seal");
    test_reseal(path);
    expect_load_error(path, -1, -1, 0, "moment m of 'discriminator.deberta.encoder.layer.0.output.dense.weight': checksum mismatch");
    write_good(path, 13);
    flip_dataset_bytes(path, "params/generator.deberta.embeddings.word_embeddings.weight", 1);
    test_reseal(path);
    expect_load_error(path, -1, -1, 0, "parameter 'generator.deberta.embeddings.word_embeddings.weight': checksum mismatch");

    /* a tensor rewritten without the filter */
    write_good(path, 13);
    const char *pname = "discriminator.deberta.embeddings.LayerNorm.weight";
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t g = H5Gopen2(f, "params", H5P_DEFAULT);
    H5Ldelete(g, pname, H5P_DEFAULT);
    hsize_t d[1] = {4};
    hid_t s = H5Screate_simple(1, d, NULL);
    hid_t ds = H5Dcreate2(g, pname, H5T_IEEE_F32LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const float z[4] = {1, 1, 1, 1};
    H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, z);
    H5Dclose(ds);
    H5Sclose(s);
    H5Gclose(g);
    H5Fclose(f);
    test_reseal(path);
    expect_load_error(path, -1, -1, 0, "parameter 'discriminator.deberta.embeddings.LayerNorm.weight' has no checksum, which version 2 requires");

    /* the same file marked version 1 loads (version 1 had no checksums) */
    f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t a = H5Aopen(f, "version", H5P_DEFAULT);
    const int32_t v1 = 1;
    H5Awrite(a, H5T_NATIVE_INT32, &v1);
    H5Aclose(a);
    H5Fclose(f);
    test_reseal(path);
    char err[512];
    ParamSet b;
    CheckpointState got;
    make_set(&b, -1, -1, 0);
    int rc = checkpoint_load(path, &b, MO(&b), &got, err, sizeof err);
    if (rc) fail_msg("a version-1 checkpoint was refused: %s", err);
    assert_int_equal(got.version, 1);
    checkpoint_state_free(&got);
    free_set(&b);
}

/* A child writes a new checkpoint and SIGKILLs itself after half the parameters: the previous
 * checkpoint.h5 still loads, bit-exact; the next save works and replaces the stale temp file. */
static void sigkill_mid_write_keeps_previous(void **state) {
    char rundir[256], p[300], tmp[310], err[512];
    path_of(rundir, sizeof rundir, "crash");
    mkdir(rundir, 0755);
    snprintf(p, sizeof p, "%s/checkpoint.h5", rundir);
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    ParamSet a, b;
    make_set(&a, -1, -1, 0);
    fill(&a, 13);
    CheckpointState st, got;
    make_state(&st, 100);
    assert_int_equal(checkpoint_save(rundir, &a, MO(&a), &st, 0, err, sizeof err), 0);

    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ParamSet c;
        make_set(&c, -1, -1, 0);
        fill(&c, 14);
        CheckpointState s2;
        make_state(&s2, 200);
        setenv(CHECKPOINT_CRASH_ENV, "2", 1);
        checkpoint_save(rundir, &c, MO(&c), &s2, 0, err, sizeof err);
        _exit(3); /* not reached when the hook fires */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGKILL);
    assert_int_equal(access(tmp, F_OK), 0); /* the half-written temp file is there ... */
    make_set(&b, -1, -1, 0);
    if (checkpoint_load(p, &b, MO(&b), &got, err, sizeof err)) fail_msg("%s", err); /* ... and the last good one intact */
    assert_int_equal(got.step, 100);
    assert_same_tensors(&a, &b);
    checkpoint_state_free(&got);

    /* the half-written temp file itself is rejected cleanly */
    char err2[512];
    CheckpointState g2;
    assert_int_equal(checkpoint_load(tmp, &b, MO(&b), &g2, err2, sizeof err2), -1);
    fprintf(stderr, "  half-written temp file: error: %s\n", err2);

    fill(&a, 15);
    make_state(&st, 300);
    assert_int_equal(checkpoint_save(rundir, &a, MO(&a), &st, 0, err, sizeof err), 0);
    assert_int_not_equal(access(tmp, F_OK), 0);
    assert_int_equal(checkpoint_load(p, &b, MO(&b), &got, err, sizeof err), 0);
    assert_int_equal(got.step, 300);
    assert_same_tensors(&a, &b);
    checkpoint_state_free(&got);
    free_set(&a);
    free_set(&b);
}

static void unwritable_directory_is_a_clear_error(void **state) {
    char path[256], err[512];
    path_of(path, sizeof path, "no-such-dir/checkpoint.h5");
    ParamSet a;
    make_set(&a, -1, -1, 0);
    CheckpointState st;
    make_state(&st, 1);
    assert_int_equal(checkpoint_write(path, &a, MO(&a), &st, err, sizeof err), -1);
    fprintf(stderr, "  got: error: %s\n", err);
    assert_non_null(strstr(err, "No such file or directory"));
    free_set(&a);
}

static void config_diff_names_first_difference(void **state) {
    char msg[256];
    const char *a = "# deberta.c model config (resolved)\nhidden_size = 256\nnum_hidden_layers = 2\ntotal_steps = 100\n";
    assert_int_equal(checkpoint_config_diff(a, "hidden_size=256\n\n  num_hidden_layers =  2 # two\ntotal_steps = 100", NULL, msg, sizeof msg), 0);
    assert_string_equal(msg, "");
    assert_int_equal(checkpoint_config_diff(a, "hidden_size = 128\nnum_hidden_layers = 2\ntotal_steps = 100\n", NULL, msg, sizeof msg), 1);
    assert_string_equal(msg, "'hidden_size' is 256 in the checkpoint but 128 now");
    const char *ign[] = {"total_steps", NULL};
    assert_int_equal(checkpoint_config_diff(a, "hidden_size = 256\nnum_hidden_layers = 2\ntotal_steps = 200\n", ign, msg, sizeof msg), 0);
    assert_int_equal(checkpoint_config_diff(a, "hidden_size = 256\ntotal_steps = 100\n", NULL, msg, sizeof msg), 1);
    assert_string_equal(msg, "'num_hidden_layers' is 2 in the checkpoint but not set now");
    assert_int_equal(checkpoint_config_diff(a, "hidden_size = 256\nnum_hidden_layers = 2\ntotal_steps = 100\nseed = 3\n", NULL, msg, sizeof msg), 1);
    assert_string_equal(msg, "'seed' is 3 now but not set in the checkpoint");
    /* a key set twice (an edited config.txt: which value holds?) is a difference */
    assert_int_equal(checkpoint_config_diff(a, "hidden_size = 256\nnum_hidden_layers = 2\ntotal_steps = 100\nhidden_size = 8\n", NULL, msg, sizeof msg), 1);
    assert_string_equal(msg, "'hidden_size' is set twice now (the second time to 8)");
    assert_int_equal(checkpoint_config_diff("seed = 1\nseed = 1\n", "seed = 1\n", NULL, msg, sizeof msg), 1);
    assert_string_equal(msg, "'seed' is set twice in the checkpoint");
}

/* ---- exact resume of the optimizer state through a checkpoint (toy problem, two groups) ---- */

static void toy_set(ParamSet *ps) {
    params_init(ps);
    const int s1[1] = {50}, s2[1] = {7}, s3[2] = {8, 5}, s4[1] = {5};
    params_add(ps, "generator.x.dense.weight", 1, s1);
    params_add(ps, "generator.x.dense.bias", 1, s2);
    params_add(ps, "discriminator.x.dense.weight", 2, s3);
    params_add(ps, "discriminator.x.LayerNorm.weight", 1, s4);
    params_finalize(ps);
    for (long i = 0; i < ps->total; i++) ps->data[i] = (real)rng_normal(5, 9, (uint64_t)i);
}

/* Gradient of 0.5·c·(p − t)² plus step-dependent noise: depends on parameters and step only. */
static void toy_grads(ParamSet *ps, long step, const char *prefix) {
    for (int i = 0; i < ps->n; i++) {
        if (strncmp(ps->params[i]->name, prefix, strlen(prefix))) continue;
        Tensor *t = ps->params[i];
        for (long j = 0; j < t->n; j++)
            t->grad[j] = (real)(3.0 * (t->data[j] - 0.1 * (double)j) + 0.5 * rng_normal(5, (uint64_t)step, (uint64_t)(i * 1000 + j)));
    }
}

static void toy_steps(ParamSet *ps, OptimGroup *g, OptimGroup *d, long from, long to) {
    for (long s = from; s < to; s++) {
        optim_zero_grad(g);
        toy_grads(ps, s, "generator.");
        optim_step(g);
        optim_zero_grad(d);
        toy_grads(ps, s, "discriminator.");
        optim_step(d);
    }
}

/* the generator's group with optimizer og, the discriminator's with od */
static void toy_groups(ParamSet *ps, OptimGroup *g, OptimGroup *d, const Optimizer *og, const Optimizer *od) {
    OptimConfig cg, cd;
    optim_config_default(&cg, og);
    cg.lr = 0.05;
    cg.total_steps = 20;
    cg.warmup_steps = 3;
    optim_config_default(&cd, od);
    cd.lr = 0.05;
    cd.total_steps = 20;
    cd.warmup_steps = 3;
    optim_group_init(g, "generator", &cg, ps, MO(ps), "generator.");
    optim_group_init(d, "discriminator", &cd, ps, MO(ps), "discriminator.");
}

static void resume_case(const Optimizer *og, const Optimizer *od) {
    char rundir[256], p[300], err[512], name[64];
    snprintf(name, sizeof name, "resume-%s-%s", og->name, od->name);
    path_of(rundir, sizeof rundir, name);
    mkdir(rundir, 0755);
    snprintf(p, sizeof p, "%s/checkpoint.h5", rundir);
    /* uninterrupted: 20 steps */
    ParamSet a;
    OptimGroup ag, ad;
    toy_set(&a);
    toy_groups(&a, &ag, &ad, og, od);
    toy_steps(&a, &ag, &ad, 0, 20);
    /* interrupted: 10 steps, checkpoint, everything freed, rebuilt, loaded, 10 more */
    ParamSet b;
    OptimGroup bg, bd;
    toy_set(&b);
    toy_groups(&b, &bg, &bd, og, od);
    toy_steps(&b, &bg, &bd, 0, 10);
    CheckpointState st;
    memset(&st, 0, sizeof st);
    st.step = 10;
    checkpoint_set_group_step(&st, bg.name, bg.step);
    checkpoint_set_group_step(&st, bd.name, bd.step);
    assert_int_equal(checkpoint_save(rundir, &b, MO(&b), &st, 0, err, sizeof err), 0);
    optim_group_free(&bg);
    optim_group_free(&bd);
    free_set(&b);

    ParamSet c;
    OptimGroup cg, cd;
    toy_set(&c);
    for (long i = 0; i < c.total; i++) c.data[i] = 0; /* everything comes from the checkpoint */
    toy_groups(&c, &cg, &cd, og, od);
    CheckpointState got;
    if (checkpoint_load(p, &c, MO(&c), &got, err, sizeof err)) fail_msg("%s", err);
    cg.step = checkpoint_group_step(&got, "generator");
    cd.step = checkpoint_group_step(&got, "discriminator");
    assert_int_equal(cg.step, 10);
    toy_steps(&c, &cg, &cd, got.step, 20);
    checkpoint_state_free(&got);
    assert_same_tensors(&a, &c);
    assert_int_equal(cg.step, ag.step);
    optim_group_free(&ag);
    optim_group_free(&ad);
    optim_group_free(&cg);
    optim_group_free(&cd);
    free_set(&a);
    free_set(&c);
}

/* adamw and xadam (one group each), then lamb in both groups */
static void resume_through_checkpoint_is_bit_exact(void **state) {
    resume_case(OPTIM_ADAMW, OPTIM_XADAM);
    assert_non_null(optim_find("lamb"));
    resume_case(optim_find("lamb"), optim_find("lamb"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_bit_exact),
        cmocka_unit_test(empty_state_round_trip),
        cmocka_unit_test(save_latest_and_numbered),
        cmocka_unit_test(missing_truncated_and_foreign_files),
        cmocka_unit_test(missing_extra_and_reshaped_tensors),
        cmocka_unit_test(nonfinite_values_rejected),
        cmocka_unit_test(foreign_format_version_dtype),
        cmocka_unit_test(checksums_name_the_corrupt_tensor),
        cmocka_unit_test(sigkill_mid_write_keeps_previous),
        cmocka_unit_test(unwritable_directory_is_a_clear_error),
        cmocka_unit_test(config_diff_names_first_difference),
        cmocka_unit_test(resume_through_checkpoint_is_bit_exact),
    };
    return cmocka_run_group_tests_name("checkpoint", tests, setup, teardown);
}
