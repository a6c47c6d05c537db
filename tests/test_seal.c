/* test_seal.c — the seal of deberta.c's HDF5 files (data/h5util.c, docs/FORMATS.md "Sealed HDF5
 * files"): CRC-32 values and chaining, a sealed file that libhdf5 still reads, every flipped byte
 * refused before libhdf5 sees the file, truncated and extended files, files without a seal, and
 * `deberta seal` (h5_seal_file) in place and by prepending the block. */
#include "tests/testutil.h"
#include <hdf5.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "autograd/base/util.h"
#include "data/h5util.h"

static char g_dir[64];

static const char *path_of(const char *name) {
    static char buf[8][256];
    static int k;
    char *p = buf[k++ % 8];
    snprintf(p, 256, "%s/%s", g_dir, name);
    return p;
}

static size_t slurp(const char *path, unsigned char **out) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = xmalloc((size_t)n + 1);
    assert_int_equal(fread(*out, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    return (size_t)n;
}

static void spit(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* An HDF5 file with one int32 dataset "x" of n values i * 7 and a string attribute; sealed when
 * `sealed` (the writers' way: the user block at creation, h5_seal after the close). The dataset is
 * created as the writers create theirs (h5_dcpl: no object times), so two files written in different
 * seconds are the same bytes. */
static void write_h5(const char *path, int n, int sealed) {
    hid_t fcpl = sealed ? h5_sealed_fcpl() : H5Pcreate(H5P_FILE_CREATE);
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    H5Pclose(fcpl);
    assert_true(f >= 0);
    int32_t *v = xmalloc((size_t)n * sizeof(int32_t));
    for (int i = 0; i < n; i++) v[i] = i * 7;
    hsize_t d[1] = {(hsize_t)n};
    hid_t s = H5Screate_simple(1, d, NULL);
    hid_t dcpl = h5_dcpl(); /* no modification times: the same content gives the same bytes */
    hid_t ds = H5Dcreate2(f, "x", H5T_STD_I32LE, s, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    assert_true(H5Dwrite(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(ds);
    H5Sclose(s);
    assert_int_equal(h5_attr_str(f, "format", "test"), 0);
    assert_true(H5Fclose(f) >= 0);
    free(v);
    if (sealed) {
        char err[512];
        if (h5_seal(path, err, sizeof err)) fail_msg("%s", err);
    }
}

/* libhdf5 reads the file: "x" holds i * 7. */
static void expect_readable(const char *path, int n) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    hid_t ds = H5Dopen2(f, "x", H5P_DEFAULT);
    int32_t *v = xmalloc((size_t)n * sizeof(int32_t));
    assert_true(H5Dread(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    for (int i = 0; i < n; i++) assert_int_equal(v[i], i * 7);
    free(v);
    H5Dclose(ds);
    H5Fclose(f);
}

static void expect_seal(const char *path, int want, const char *needle) {
    char msg[512];
    const int rc = h5_seal_check(path, msg, sizeof msg);
    if (rc != want) fail_msg("h5_seal_check(%s) = %d, expected %d (%s)", path, rc, want, msg);
    if (needle && !strstr(msg, needle)) fail_msg("message '%s' does not mention '%s'", msg, needle);
}

static void test_crc32(void **state) {
    (void)state;
    assert_int_equal(crc32_update(0, "123456789", 9), 0xcbf43926u); /* the CRC-32 check value */
    assert_int_equal(crc32_update(0, "", 0), 0);
    unsigned char b[300];
    for (int i = 0; i < 300; i++) b[i] = (unsigned char)(i * 131 + 7);
    const uint32_t whole = crc32_update(0, b, sizeof b);
    uint32_t bytewise = 0;
    for (int i = 0; i < 300; i++) bytewise = crc32_update(bytewise, b + i, 1);
    assert_int_equal(bytewise, whole);
    for (size_t cut = 0; cut <= sizeof b; cut += 7) /* any split, any alignment */
        assert_int_equal(crc32_update(crc32_update(0, b, cut), b + cut, sizeof b - cut), whole);
    assert_int_equal(crc32_update(crc32_update(0, b + 1, 100), b + 101, 199), crc32_update(0, b + 1, 299));
}

static void test_sealed_file(void **state) {
    (void)state;
    const char *p = path_of("sealed.h5");
    write_h5(p, 5000, 1);
    expect_seal(p, H5_SEAL_OK, NULL);
    expect_readable(p, 5000);
    unsigned char *b;
    const size_t n = slurp(p, &b);
    assert_memory_equal(b, "DBH5SEAL", 8);
    assert_int_equal(b[8] | b[9] << 8, H5_SEAL_VERSION);
    assert_int_equal(b[12] | b[13] << 8, H5_SEAL_BLOCK);
    uint64_t size = 0;
    for (int k = 0; k < 8; k++) size |= (uint64_t)b[16 + k] << (8 * k);
    assert_int_equal(size, n);
    const uint32_t stored = (uint32_t)b[24] | (uint32_t)b[25] << 8 | (uint32_t)b[26] << 16 | (uint32_t)b[27] << 24;
    memset(b + 24, 0, 4);
    assert_int_equal(crc32_update(0, b, n), stored); /* the whole file, the CRC field as zero */
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    assert_memory_equal(b + H5_SEAL_BLOCK, sig, 8); /* the superblock right after the block */
    free(b);
    /* the same content gives the same bytes, also a second later (no time stamps in the file) */
    sleep(1);
    const char *q = path_of("sealed2.h5");
    write_h5(q, 5000, 1);
    unsigned char *c;
    const size_t m = slurp(q, &c);
    assert_int_equal(n, m);
    slurp(p, &b);
    assert_memory_equal(b, c, n);
    free(b);
    free(c);
}

/* One byte changed anywhere (header, superblock, metadata, data, the last byte): never accepted. */
static void test_every_flip_refused(void **state) {
    (void)state;
    const char *p = path_of("flip.h5"), *q = path_of("flipped.h5");
    write_h5(p, 3000, 1);
    unsigned char *b;
    const size_t n = slurp(p, &b);
    for (size_t at = 0; at < n; at += at < 600 ? 1 : 97) {
        for (int bit = 0; bit < 8; bit += 7) {
            b[at] ^= (unsigned char)(1u << bit);
            spit(q, b, n);
            b[at] ^= (unsigned char)(1u << bit);
            char msg[512];
            const int rc = h5_seal_check(q, msg, sizeof msg);
            if (rc == H5_SEAL_OK) fail_msg("byte %zu bit %d flipped: the seal accepted the file", at, bit);
            if (at < 8 ? rc != H5_SEAL_NONE : rc != H5_SEAL_BAD) fail_msg("byte %zu flipped: rc %d (%s)", at, rc, msg);
        }
    }
    b[n - 1] ^= 0x10;
    spit(q, b, n);
    expect_seal(q, H5_SEAL_BAD, "does not match its seal");
    free(b);
}

static void test_truncated_extended_short(void **state) {
    (void)state;
    const char *p = path_of("size.h5");
    write_h5(p, 1000, 1);
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(truncate(p, sb.st_size - 1), 0);
    expect_seal(p, H5_SEAL_BAD, "truncated after it was written");
    write_h5(p, 1000, 1);
    FILE *f = fopen(p, "ab");
    fputc(0, f);
    fclose(f);
    expect_seal(p, H5_SEAL_BAD, "extended after it was written");
    assert_int_equal(truncate(p, 100), 0); /* the magic, but not the whole block */
    expect_seal(p, H5_SEAL_BAD, "shorter than its seal block");
    assert_int_equal(truncate(p, 0), 0); /* empty: said so, not "has no seal" */
    expect_seal(p, H5_SEAL_BAD, "the file is empty (0 bytes)");
    /* a seal of an unknown version */
    write_h5(p, 1000, 1);
    f = fopen(p, "r+b");
    fseek(f, 8, SEEK_SET);
    fputc(2, f);
    fclose(f);
    expect_seal(p, H5_SEAL_BAD, "this build reads version 1");
    expect_seal(path_of("no-such-file.h5"), H5_SEAL_BAD, "cannot open");
    expect_seal(g_dir, H5_SEAL_BAD, "not a regular file");
}

/* The messages of the strict and of the lenient readers: one line naming the file and the way out. */
static void test_require_and_verify(void **state) {
    (void)state;
    const char *p = path_of("plain.h5"), *s = path_of("req.h5");
    write_h5(p, 100, 0);
    write_h5(s, 100, 1);
    char err[1024];
    assert_int_equal(h5_seal_require("shard", s, "re-run deberta prep", err, sizeof err), 0);
    assert_int_equal(h5_seal_require("shard", p, "re-run deberta prep", err, sizeof err), -1);
    assert_non_null(strstr(err, "has no seal"));
    assert_non_null(strstr(err, "re-run deberta prep, or if it is intact: deberta seal "));
    assert_true(!strncmp(err, "shard ", 6) && strstr(err, p) && !strchr(err, '\n'));
    assert_int_equal(h5_seal_verify_if_present(p, err, sizeof err), 0); /* no seal: accepted */
    assert_int_equal(h5_seal_verify_if_present(s, err, sizeof err), 0);
    FILE *f = fopen(s, "r+b");
    fseek(f, 700, SEEK_SET);
    fputc(0x55, f);
    fclose(f);
    assert_int_equal(h5_seal_verify_if_present(s, err, sizeof err), -1);
    assert_non_null(strstr(err, "does not match its seal"));
    assert_int_equal(h5_seal_require("checkpoint", s, "use an earlier checkpoint", err, sizeof err), -1);
    assert_non_null(strstr(err, "use an earlier checkpoint, or if it was changed on purpose: deberta seal "));
    /* an empty file: named as empty, with the hint but no "deberta seal" (nothing to seal) */
    assert_int_equal(truncate(s, 0), 0);
    assert_int_equal(h5_seal_require("shard", s, "re-run deberta prep", err, sizeof err), -1);
    assert_true(strstr(err, "shard ") == err && strstr(err, s) && strstr(err, ": the file is empty (0 bytes); re-run deberta prep") &&
                !strstr(err, "deberta seal"));
    assert_int_equal(h5_seal_verify_if_present(s, err, sizeof err), -1);
    assert_string_equal(err, "the file is empty (0 bytes)");
    assert_int_equal(h5_seal_file(s, err, sizeof err), -1);
    assert_true(strstr(err, s) == err && strstr(err, ": the file is empty (0 bytes)"));
}

/* deberta seal: a file without a block gets one in front (libhdf5 still reads it); a file changed
 * in place on purpose is sealed again; a sealed intact file keeps its bytes; other files refused. */
static void test_seal_file(void **state) {
    (void)state;
    const char *p = path_of("old.h5");
    write_h5(p, 2000, 0);
    unsigned char *before, *after;
    const size_t n0 = slurp(p, &before);
    expect_seal(p, H5_SEAL_NONE, "has no seal");
    char err[512];
    if (h5_seal_file(p, err, sizeof err)) fail_msg("%s", err);
    expect_seal(p, H5_SEAL_OK, NULL);
    expect_readable(p, 2000);
    const size_t n1 = slurp(p, &after);
    assert_int_equal(n1, n0 + H5_SEAL_BLOCK);
    assert_memory_equal(after + H5_SEAL_BLOCK, before, n0); /* the old bytes, untouched */
    free(before);
    free(after);
    assert_int_equal(access(path_of("old.h5.tmp"), F_OK), -1);
    /* changed in place (an attribute added with libhdf5): refused, then sealed again */
    hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_int_equal(h5_attr_i64(f, "added", 7), 0);
    H5Fclose(f);
    expect_seal(p, H5_SEAL_BAD, "after it was written");
    if (h5_seal_file(p, err, sizeof err)) fail_msg("%s", err);
    expect_seal(p, H5_SEAL_OK, NULL);
    expect_readable(p, 2000);
    slurp(p, &before);
    if (h5_seal_file(p, err, sizeof err)) fail_msg("%s", err);
    const size_t n2 = slurp(p, &after);
    assert_memory_equal(before, after, n2);
    free(before);
    free(after);
    /* not HDF5 */
    const char *t = path_of("text.h5");
    spit(t, (const unsigned char *)"not an HDF5 file\n", 17);
    assert_int_equal(h5_seal_file(t, err, sizeof err), -1);
    assert_non_null(strstr(err, "neither sealed nor an HDF5 file"));
    assert_int_equal(h5_seal_file(path_of("missing.h5"), err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot open"));
}

static int setup(void **state) {
    (void)state;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    return test_tmpdir(g_dir, sizeof g_dir, "seal");
}
static int teardown(void **state) {
    (void)state;
    return test_rmtree(g_dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32),
        cmocka_unit_test(test_sealed_file),
        cmocka_unit_test(test_every_flip_refused),
        cmocka_unit_test(test_truncated_extended_short),
        cmocka_unit_test(test_require_and_verify),
        cmocka_unit_test(test_seal_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
