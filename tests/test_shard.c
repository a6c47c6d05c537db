/* test_shard.c — HDF5 shard writer/reader: round trip, dtypes, byte-identical output, atomic write,
 * and one test per bad input (each must give NULL and a message naming the file and the problem). */
#include "tests/shardutil.h"
#include "tests/h5flip.h"
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[64];

/* Writes a valid shard of n_docs docs with lengths 1..; token i = 5 + (i * 7919) % (vocab - 5). */
static void make_shard(const char *path, int vocab, int n_docs, int32_t **tok_out, int64_t **off_out) {
    int64_t *off = xmalloc((size_t)(n_docs + 1) * sizeof(int64_t));
    off[0] = 0;
    for (int d = 0; d < n_docs; d++) off[d + 1] = off[d] + 1 + (d * 37) % 200;
    int32_t *tok = xmalloc((size_t)off[n_docs] * sizeof(int32_t));
    for (int64_t i = 0; i < off[n_docs]; i++) tok[i] = 5 + (int32_t)((i * 7919) % (vocab - 5));
    test_write_shard(path, vocab, "train", 0, tok, off, n_docs);
    if (tok_out) *tok_out = tok; else free(tok);
    if (off_out) *off_out = off; else free(off);
}

static char *tmp_path(const char *name) {
    static char buf[8][256];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 256, "%s/%s", g_dir, name);
    return p;
}

static void expect_error(const char *path, const char *needle) {
    char err[1024] = "";
    Shard *s = shard_open(path, 1, err, sizeof err);
    if (s) { shard_close(s); fail_msg("shard_open(%s) accepted a bad file (expected '%s')", path, needle); }
    if (!strstr(err, path)) fail_msg("message does not name the file: %s", err);
    if (!strstr(err, needle)) fail_msg("message '%s' does not mention '%s'", err, needle);
}

static size_t file_bytes(const char *path, uint8_t **out) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = xmalloc((size_t)n);
    assert_int_equal(fread(*out, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return (size_t)n;
}

/* ---------------------------------------------------------------- good files */

static void test_roundtrip(void **state) {
    (void)state;
    const char *p = tmp_path("rt.h5");
    int32_t *tok; int64_t *off;
    make_shard(p, 1000, 300, &tok, &off);
    char err[512];
    Shard *s = shard_open(p, 1, err, sizeof err);
    if (!s) fail_msg("%s", err);
    assert_int_equal(shard_n_docs(s), 300);
    assert_int_equal(shard_n_tokens(s), off[300]);
    assert_int_equal(shard_vocab_size(s), 1000);
    int64_t n = off[300];
    int32_t *r = xmalloc((size_t)n * sizeof(int32_t));
    assert_int_equal(shard_read_tokens(s, 0, n, r, err, sizeof err), 0);
    assert_memory_equal(r, tok, (size_t)n * sizeof(int32_t));
    assert_int_equal(shard_read_tokens(s, 1234, 77, r, err, sizeof err), 0); /* a hyperslab */
    assert_memory_equal(r, tok + 1234, 77 * sizeof(int32_t));
    int64_t o[301];
    assert_int_equal(shard_read_offsets(s, 0, 301, o, err, sizeof err), 0);
    assert_memory_equal(o, off, sizeof o);
    assert_int_not_equal(shard_read_tokens(s, n - 1, 2, r, err, sizeof err), 0); /* past the end */
    size_t tl, el;
    uint8_t *tb = shard_read_tokenizer(s, &tl, err, sizeof err), *expect = test_tokenizer(1000, &el);
    assert_int_equal(tl, el);
    assert_memory_equal(tb, expect, el);
    free(tb); free(expect); free(r);
    /* dtype: uint16 for vocab <= 65536 */
    hid_t f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT), d = H5Dopen2(f, "tokens", H5P_DEFAULT), t = H5Dget_type(d);
    assert_int_equal(H5Tget_size(t), 2);
    assert_int_equal(H5Tget_sign(t), H5T_SGN_NONE);
    hid_t pl = H5Dget_create_plist(d);
    assert_int_equal(H5Pget_layout(pl), H5D_CHUNKED);
    assert_true(H5Pget_nfilters(pl) >= 1);
    H5Pclose(pl); H5Tclose(t); H5Dclose(d); H5Fclose(f);
    shard_close(s);
    free(tok); free(off);
}

static void test_int32_for_large_vocab(void **state) {
    (void)state;
    const char *p = tmp_path("big.h5");
    int32_t *tok;
    make_shard(p, 70000, 50, &tok, NULL);
    hid_t f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT), d = H5Dopen2(f, "tokens", H5P_DEFAULT), t = H5Dget_type(d);
    assert_int_equal(H5Tget_size(t), 4);
    assert_int_equal(H5Tget_sign(t), H5T_SGN_2);
    H5Tclose(t); H5Dclose(d); H5Fclose(f);
    char err[512];
    Shard *s = shard_open(p, 1, err, sizeof err);
    if (!s) fail_msg("%s", err);
    int32_t r[100];
    assert_int_equal(shard_read_tokens(s, 0, 100, r, err, sizeof err), 0);
    assert_memory_equal(r, tok, sizeof r);
    int any_big = 0;
    for (int i = 0; i < 100; i++) any_big |= r[i] > 65535;
    assert_true(any_big);
    shard_close(s);
    free(tok);
}

static void test_byte_identical_and_atomic(void **state) {
    (void)state;
    const char *a = tmp_path("same_a.h5"), *b = tmp_path("same_b.h5");
    make_shard(a, 3000, 400, NULL, NULL);
    make_shard(b, 3000, 400, NULL, NULL);
    uint8_t *x, *y;
    size_t nx = file_bytes(a, &x), ny = file_bytes(b, &y);
    assert_int_equal(nx, ny);
    assert_memory_equal(x, y, nx);
    free(x); free(y);
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", a);
    assert_int_not_equal(access(tmp, F_OK), 0); /* no temporary left behind */
    /* an empty shard is refused and leaves nothing */
    int64_t off[2] = {0, 0};
    size_t tl;
    uint8_t *tb = test_tokenizer(300, &tl);
    ShardInfo info = {300, tb, tl, "train", 0, NULL};
    char err[512];
    const char *e = tmp_path("empty.h5");
    assert_int_not_equal(shard_write(e, NULL, off, 1, &info, err, sizeof err), 0);
    assert_int_not_equal(access(e, F_OK), 0);
    free(tb);
}

/* A writer killed mid-write leaves the previous file under the final name, intact. */
static void test_crash_mid_write(void **state) {
    (void)state;
    const char *p = tmp_path("crash.h5");
    make_shard(p, 1000, 30, NULL, NULL);
    uint8_t *before, *after;
    size_t nb = file_bytes(p, &before);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("DEBERTA_SHARD_CRASH", "1", 1);
        make_shard(p, 2000, 60, NULL, NULL); /* killed inside shard_write */
        _exit(0);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    assert_int_equal(access(tmp, F_OK), 0); /* the half-written file exists, under its temporary name */
    size_t na = file_bytes(p, &after);
    assert_int_equal(na, nb);
    assert_memory_equal(after, before, nb);
    char err[512];
    Shard *s = shard_open(p, 1, err, sizeof err);
    if (!s) fail_msg("%s", err);
    assert_int_equal(shard_vocab_size(s), 1000);
    shard_close(s);
    free(before); free(after);
}

/* ---------------------------------------------------------------- bad files */

static void test_bad_unreadable_path(void **state) {
    (void)state;
    expect_error("/nonexistent/dir/x.h5", "cannot open");
}

static void test_bad_not_hdf5(void **state) {
    (void)state;
    const char *p = tmp_path("text.h5");
    FILE *f = fopen(p, "w");
    fputs("this is not HDF5\n", f);
    fclose(f);
    expect_error(p, "has no seal");
}

static void test_bad_truncated(void **state) {
    (void)state;
    const char *p = tmp_path("trunc.h5");
    make_shard(p, 1000, 2000, NULL, NULL);
    struct stat st;
    stat(p, &st);
    assert_int_equal(truncate(p, st.st_size / 2), 0);
    expect_error(p, "truncated");
}

static void test_bad_missing_dataset(void **state) {
    (void)state;
    const char *p = tmp_path("missing.h5");
    make_shard(p, 1000, 10, NULL, NULL);
    hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(f, "tokens", H5P_DEFAULT);
    H5Fclose(f);
    test_reseal(p);
    expect_error(p, "missing dataset 'tokens'");
}

static void replace_tokens(const char *p, hid_t ftype, int64_t n, const void *data, hid_t mtype) {
    hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(f, "tokens", H5P_DEFAULT);
    hsize_t dims[1] = {(hsize_t)n};
    hid_t sp = H5Screate_simple(1, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE); /* chunked with a checksum, as the writer does */
    hsize_t chunk[1] = {n < SHARD_CHUNK ? (hsize_t)n : SHARD_CHUNK};
    H5Pset_chunk(dcpl, 1, chunk);
    H5Pset_fletcher32(dcpl);
    hid_t d = H5Dcreate2(f, "tokens", ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    H5Dclose(d); H5Pclose(dcpl); H5Sclose(sp); H5Fclose(f);
    test_reseal(p);
}

static void test_bad_dtype(void **state) {
    (void)state;
    const char *p = tmp_path("dtype.h5");
    int64_t *off;
    make_shard(p, 1000, 10, NULL, &off);
    double *v = xcalloc((size_t)off[10], sizeof(double));
    replace_tokens(p, H5T_IEEE_F64LE, off[10], v, H5T_NATIVE_DOUBLE);
    expect_error(p, "dtype float64, expected uint16 or int32");
    free(v); free(off);
}

static void test_bad_out_of_range_id(void **state) {
    (void)state;
    const char *p = tmp_path("range.h5");
    int32_t *tok; int64_t *off;
    make_shard(p, 1000, 400, &tok, &off);
    tok[off[400] - 3] = 1000; /* == vocab_size */
    replace_tokens(p, H5T_STD_U16LE, off[400], tok, H5T_NATIVE_INT32);
    expect_error(p, "outside the vocabulary");
    /* without the full check the file opens, and reading that chunk fails */
    char err[512];
    Shard *s = shard_open(p, 0, err, sizeof err);
    assert_non_null(s);
    int32_t r[8];
    assert_int_not_equal(shard_read_tokens(s, off[400] - 8, 8, r, err, sizeof err), 0);
    assert_non_null(strstr(err, "outside the vocabulary"));
    shard_close(s);
    free(tok); free(off);
}

static void set_attr(const char *p, const char *name, int64_t v);

/* Bytes flipped inside the stored tokens or doc_offsets: the seal refuses the file; sealed again,
 * the dataset's checksum names it. */
static void test_bad_checksum(void **state) {
    (void)state;
    const char *p = tmp_path("flip-tokens.h5");
    make_shard(p, 1000, 400, NULL, NULL);
    flip_dataset_bytes(p, "tokens", 5);
    expect_error(p, "does not match its seal");
    test_reseal(p);
    expect_error(p, "cannot read dataset 'tokens'");
    expect_error(p, "checksum mismatch");
    const char *q = tmp_path("flip-offsets.h5");
    make_shard(q, 1000, 400, NULL, NULL);
    flip_dataset_bytes(q, "doc_offsets", 5);
    test_reseal(q);
    char err[512];
    assert_null(shard_open(q, 0, err, sizeof err)); /* doc_offsets are always read at open */
    assert_non_null(strstr(err, "cannot read 'doc_offsets': checksum mismatch"));
    /* tokens rewritten without the checksum filter */
    const char *r = tmp_path("no-checksum.h5");
    int64_t *off;
    make_shard(r, 1000, 10, NULL, &off);
    hid_t f = H5Fopen(r, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(f, "tokens", H5P_DEFAULT);
    hsize_t dims[1] = {(hsize_t)off[10]};
    hid_t sp = H5Screate_simple(1, dims, NULL);
    uint16_t *z = xcalloc((size_t)off[10], sizeof(uint16_t));
    hid_t d = H5Dcreate2(f, "tokens", H5T_STD_U16LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_UINT16, H5S_ALL, H5S_ALL, H5P_DEFAULT, z);
    H5Dclose(d); H5Sclose(sp); H5Fclose(f);
    test_reseal(r);
    free(z); free(off);
    expect_error(r, "dataset 'tokens' has no checksum");
}

/* max_token_id: outside the vocabulary -> refused at open (no scan needed); below a real id -> the
 * scan at open, or the read that reaches it, refuses the file. */
static void test_bad_max_token_id(void **state) {
    (void)state;
    const char *p = tmp_path("maxid.h5");
    make_shard(p, 1000, 10, NULL, NULL);
    set_attr(p, "max_token_id", 1000);
    char err[512];
    assert_null(shard_open(p, 0, err, sizeof err));
    assert_non_null(strstr(err, "attribute 'max_token_id' is missing or outside the vocabulary [0, 1000)"));
    make_shard(p, 1000, 10, NULL, NULL);
    set_attr(p, "max_token_id", 5);
    expect_error(p, "above the shard's max_token_id 5");
    Shard *s = shard_open(p, 0, err, sizeof err);
    assert_non_null(s);
    int32_t t[8];
    assert_int_not_equal(shard_read_tokens(s, 0, 8, t, err, sizeof err), 0);
    assert_non_null(strstr(err, "above the shard's max_token_id 5"));
    shard_close(s);
}

/* Attributes of the wrong class, rank or padding: one clear error, or (strings padded as h5py
 * writes numpy bytes: NULLPAD, no terminating NUL) read whole and accepted. */
static void replace_attr(const char *p, const char *name, hid_t type, int n, const void *val) {
    hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Adelete(f, name);
    hsize_t d[1] = {(hsize_t)n};
    hid_t s = n ? H5Screate_simple(1, d, NULL) : H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, name, type, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, type, val);
    H5Aclose(a); H5Sclose(s); H5Fclose(f);
    test_reseal(p);
}

static void test_attribute_types(void **state) {
    (void)state;
    const char *p = tmp_path("attrs.h5");
    make_shard(p, 1000, 10, NULL, NULL);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(SHARD_FORMAT));
    H5Tset_strpad(t, H5T_STR_NULLPAD);
    replace_attr(p, "format", t, 0, SHARD_FORMAT);
    H5Tclose(t);
    char err[512];
    Shard *s = shard_open(p, 1, err, sizeof err);
    if (!s) fail_msg("a NULLPAD 'format' attribute without its NUL was refused: %s", err);
    shard_close(s);
    t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    const char *vs = SHARD_FORMAT;
    replace_attr(p, "format", t, 0, &vs);
    H5Tclose(t);
    s = shard_open(p, 1, err, sizeof err);
    if (!s) fail_msg("a variable-length 'format' attribute was refused: %s", err);
    shard_close(s);

    make_shard(p, 1000, 10, NULL, NULL);
    const int64_t two[2] = {2, 2};
    replace_attr(p, "version", H5T_NATIVE_INT64, 2, two);
    expect_error(p, "format version");
    make_shard(p, 1000, 10, NULL, NULL);
    const double fv = 1000;
    replace_attr(p, "vocab_size", H5T_NATIVE_DOUBLE, 0, &fv);
    expect_error(p, "attribute 'vocab_size' missing or out of range");
    make_shard(p, 1000, 10, NULL, NULL);
    t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 3);
    replace_attr(p, "n_tokens", t, 0, "abc");
    H5Tclose(t);
    expect_error(p, "attribute 'n_tokens' missing or < 1");
}

static void test_bad_shape(void **state) {
    (void)state;
    const char *p = tmp_path("shape.h5");
    int32_t *tok; int64_t *off;
    make_shard(p, 1000, 10, &tok, &off);
    replace_tokens(p, H5T_STD_U16LE, off[10] - 1, tok, H5T_NATIVE_INT32);
    expect_error(p, "expected");
    free(tok); free(off);
}

static void test_bad_offsets(void **state) {
    (void)state;
    const char *p = tmp_path("offsets.h5");
    int64_t *off;
    make_shard(p, 1000, 10, NULL, &off);
    int64_t t = off[4]; off[4] = off[5]; off[5] = t; /* not monotonic */
    hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT), d = H5Dopen2(f, "doc_offsets", H5P_DEFAULT);
    H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, off);
    H5Dclose(d); H5Fclose(f);
    test_reseal(p);
    expect_error(p, "not monotonic");
    free(off);
}

static void set_attr(const char *p, const char *name, int64_t v) {
    hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT), a = H5Aopen(f, name, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_INT64, &v);
    H5Aclose(a); H5Fclose(f);
    test_reseal(p);
}

static void test_bad_version_and_format(void **state) {
    (void)state;
    const char *p = tmp_path("version.h5");
    make_shard(p, 1000, 10, NULL, NULL);
    set_attr(p, "version", 1);
    expect_error(p, "version 1");
    const char *q = tmp_path("format.h5");
    make_shard(q, 1000, 10, NULL, NULL);
    hid_t f = H5Fopen(q, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Adelete(f, "format");
    H5Fclose(f);
    test_reseal(q);
    expect_error(q, "format");
}

static void test_bad_vocab_mismatch(void **state) {
    (void)state;
    const char *p = tmp_path("vocab.h5");
    make_shard(p, 1000, 10, NULL, NULL);
    set_attr(p, "vocab_size", 999);
    expect_error(p, "embedded tokenizer has 1000");
}

static int setup(void **state) {
    (void)state;
    return test_tmpdir(g_dir, sizeof g_dir, "shard");
}
static int teardown(void **state) {
    (void)state;
    return test_rmtree(g_dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip),
        cmocka_unit_test(test_int32_for_large_vocab),
        cmocka_unit_test(test_byte_identical_and_atomic),
        cmocka_unit_test(test_crash_mid_write),
        cmocka_unit_test(test_bad_unreadable_path),
        cmocka_unit_test(test_bad_not_hdf5),
        cmocka_unit_test(test_bad_truncated),
        cmocka_unit_test(test_bad_missing_dataset),
        cmocka_unit_test(test_bad_dtype),
        cmocka_unit_test(test_bad_out_of_range_id),
        cmocka_unit_test(test_bad_checksum),
        cmocka_unit_test(test_bad_max_token_id),
        cmocka_unit_test(test_attribute_types),
        cmocka_unit_test(test_bad_shape),
        cmocka_unit_test(test_bad_offsets),
        cmocka_unit_test(test_bad_version_and_format),
        cmocka_unit_test(test_bad_vocab_mismatch),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
