/* test_safetensors.c — the safetensors reader (train/interop/safetensors.c): values of F32/F16/BF16 files
 * written byte by byte here (subnormals, infinities, NaN, negative zero), a round trip through the
 * writer (and a changed byte caught by its crc32 metadata), and one test per bad file (each must be
 * refused with its own message). */
#include "tests/testutil.h"
#include <string.h>
#include <unistd.h>
#include "train/interop/safetensors.h"

static char g_dir[256];

static int setup(void **state) {
    (void)state;
    return test_tmpdir(g_dir, sizeof g_dir, "safetensors");
}
static int teardown(void **state) {
    (void)state;
    return test_rmtree(g_dir);
}

/* Writes a file: header text (padded to 8 with spaces unless raw_len >= 0, which is then written as
 * the length field instead of the true one) followed by n data bytes. */
static const char *write_st(const char *name, const char *header, long long raw_len, const uint8_t *data, size_t n) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    size_t hl = strlen(header);
    uint64_t len = raw_len >= 0 ? (uint64_t)raw_len : hl;
    uint8_t l8[8];
    for (int i = 0; i < 8; i++) l8[i] = (uint8_t)(len >> (8 * i));
    assert_int_equal(fwrite(l8, 1, 8, f), 8);
    assert_int_equal(fwrite(header, 1, hl, f), hl);
    if (n) assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
    return path;
}

static void expect_refused(const char *path, const char *needle) {
    char err[1500] = "";
    StFile *f = safetensors_open(path, err, sizeof err);
    if (f) safetensors_close(f);
    assert_null(f);
    if (!strstr(err, needle)) fail_msg("message '%s' lacks '%s'", err, needle);
    assert_non_null(strstr(err, path));
    assert_null(strchr(err, '\n'));
}

static void reads_f32_f16_bf16(void **state) {
    (void)state;
    /* a: F32 [2] = 1.5, -0.0;  h: F16 [2,3];  b: BF16 [3] */
    uint8_t d[8 + 12 + 6];
    float a[2] = {1.5f, -0.0f};
    memcpy(d, a, 8);
    const uint16_t h[6] = {0x3C00, 0xC000, 0x0001, 0x03FF, 0x7C00, 0x7E00}; /* 1, -2, 2^-24, largest subnormal, inf, NaN */
    for (int i = 0; i < 6; i++) d[8 + 2 * i] = (uint8_t)h[i], d[9 + 2 * i] = (uint8_t)(h[i] >> 8);
    const uint16_t b[3] = {0x3F80, 0xC2F7, 0x0001}; /* 1, -123.5, smallest bf16 subnormal */
    for (int i = 0; i < 3; i++) d[20 + 2 * i] = (uint8_t)b[i], d[21 + 2 * i] = (uint8_t)(b[i] >> 8);
    const char *hdr = "{\"__metadata__\":{\"format\":\"pt\",\"x\":\"a\\\"b\"},"
                      "\"b\":{\"shape\":[3],\"dtype\":\"BF16\",\"data_offsets\":[20,26]},"
                      "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      " \"h\" : {\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[8,20]}}";
    char err[1500];
    StFile *f = safetensors_open(write_st("ok.safetensors", hdr, -1, d, sizeof d), err, sizeof err);
    if (!f) fail_msg("%s", err);
    assert_int_equal(f->n, 3);
    const StTensor *ta = safetensors_find(f, "a"), *th = safetensors_find(f, "h"), *tb = safetensors_find(f, "b");
    assert_non_null(ta);
    assert_non_null(th);
    assert_non_null(tb);
    assert_null(safetensors_find(f, "c"));
    assert_int_equal(th->ndim, 2);
    assert_int_equal(th->shape[1], 3);
    real o[6];
    safetensors_read(f, ta, o);
    assert_true(o[0] == (real)1.5 && o[1] == 0 && signbit(o[1]));
    safetensors_read(f, th, o);
    assert_true(o[0] == 1 && o[1] == -2);
    assert_true(o[2] == (real)ldexp(1, -24));
    assert_true(o[3] == (real)(1023 * ldexp(1, -24)));
    assert_true(isinf(o[4]) && o[4] > 0);
    assert_true(isnan(o[5]));
    safetensors_read(f, tb, o);
    assert_true(o[0] == 1 && o[1] == (real)-123.5);
    assert_true(o[2] == (real)ldexp(1, -133));
    safetensors_close(f);
}

static void round_trip_with_writer(void **state) {
    (void)state;
    real x[12], y[12], z[3] = {7, 8, 9};
    for (int i = 0; i < 12; i++) x[i] = (real)(0.1f * (float)i - 0.37f);
    StEntry e[2] = {{"deberta.x", 2, {3, 4}, x}, {"deberta.z", 1, {3}, z}};
    char path[512], err[1500];
    snprintf(path, sizeof path, "%s/rt.safetensors", g_dir);
    assert_int_equal(safetensors_write(path, e, 2, err, sizeof err), 0);
    StFile *f = safetensors_open(path, err, sizeof err);
    if (!f) fail_msg("%s", err);
    const StTensor *t = safetensors_find(f, "deberta.x");
    assert_non_null(t);
    assert_int_equal(t->dtype, ST_F32);
    safetensors_read(f, t, y);
    for (int i = 0; i < 12; i++) assert_true(y[i] == (real)(float)x[i]);
    assert_int_equal(f->n_crc, 2); /* the writer's crc32.<name> entries, verified at open */
    const size_t at = f->data_start + t->begin + 5;
    safetensors_close(f);
    /* one byte of deberta.x changed: refused, naming the tensor */
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    fseek(fp, (long)at, SEEK_SET);
    const int c = fgetc(fp);
    fseek(fp, (long)at, SEEK_SET);
    fputc(c ^ 0x01, fp);
    fclose(fp);
    expect_refused(path, "tensor 'deberta.x' does not match its crc32 metadata entry");
}

static const uint8_t Z[64];

static void f64_and_non_float(void **state) {
    (void)state;
    uint8_t d[24] = {0};
    double q = 2.5;
    memcpy(d + 16, &q, 8);
    d[0] = 7; /* p = [7, 0] as int64 */
    char err[1500];
    StFile *f = safetensors_open(write_st("mixed", "{\"p\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[0,16]},"
                                                   "\"q\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[16,24]}}", -1, d, 24),
                                 err, sizeof err);
    if (!f) fail_msg("%s", err);
    assert_int_equal(safetensors_find(f, "p")->dtype, ST_OTHER);
    const StTensor *t = safetensors_find(f, "q");
    assert_int_equal(t->dtype, ST_F64);
    assert_int_equal(t->ndim, 0);
    real o[1];
    safetensors_read(f, t, o);
    assert_true(o[0] == (real)2.5);
    safetensors_close(f);
}

static void bad_files(void **state) {
    (void)state;
    expect_refused(write_st("crc.safetensors", "{\"__metadata__\":{\"crc32.a\":\"xyz\"},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", -1, Z, 4),
                   "metadata entry 'crc32.a' is 'xyz', not 8 hex digits");
    expect_refused(write_st("crc2.safetensors", "{\"__metadata__\":{\"crc32.a\":\"00000001\"},\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", -1, Z, 4),
                   "tensor 'a' does not match its crc32 metadata entry (CRC-32 2144df1c, stored 00000001)");
    const char *ok = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    char p[512];
    snprintf(p, sizeof p, "%s/short", g_dir);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fputs("abc", f);
    fclose(f);
    expect_refused(p, "shorter than the 8-byte header length");
    f = fopen(p, "wb"); /* 0 bytes: named as empty */
    assert_non_null(f);
    fclose(f);
    expect_refused(p, "the file is empty (0 bytes)");
    expect_refused(write_st("empty-header", "", 0, NULL, 0), "not a JSON object");
    snprintf(p, sizeof p, "%s/none", g_dir);
    expect_refused(p, "cannot open");
    expect_refused(write_st("len", ok, 4000, Z, 8), "the header claims 4000 bytes");
    expect_refused(write_st("trunc", ok, -1, Z, 4), "truncated");
    expect_refused(write_st("lie", "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", -1, Z, 8), "lies about sizes");
    expect_refused(write_st("rev", "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[8,0]}}", -1, Z, 8), "lies about sizes");
    expect_refused(write_st("dtype", "{\"a\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, Z, 8), "unknown dtype 'Q4'");
    expect_refused(write_st("i64", "{\"a\":{\"dtype\":\"I64\",\"shape\":[3],\"data_offsets\":[0,8]}}", -1, Z, 8), "I64 x 3 elements need 24");
    expect_refused(write_st("overlap",
                            "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                            "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                            -1, Z, 12),
                   "overlap");
    expect_refused(write_st("gap",
                            "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                            "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}",
                            -1, Z, 12),
                   "belong to no tensor");
    expect_refused(write_st("outside", "{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,32]}}", -1, Z, 16), "the file has 16 data bytes");
    expect_refused(write_st("tail", ok, -1, Z, 12), "4 data bytes after the last tensor");
    expect_refused(write_st("dup",
                            "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                            "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                            -1, Z, 8),
                   "appears twice");
    expect_refused(write_st("json", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", -1, Z, 8), "header JSON");
    expect_refused(write_st("neg", "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", -1, Z, 8), "non-negative integers");
    expect_refused(write_st("key", "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"offsets\":[0,8]}}", -1, Z, 8), "unknown key 'offsets'");
    expect_refused(write_st("lacks", "{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", -1, Z, 8), "lacks shape");
    expect_refused(write_st("junk", "{} x", -1, Z, 0), "text after");
    expect_refused(write_st("notobj", "[1]", -1, Z, 0), "not a JSON object");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_f32_f16_bf16),
        cmocka_unit_test(round_trip_with_writer),
        cmocka_unit_test(f64_and_non_float),
        cmocka_unit_test(bad_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
