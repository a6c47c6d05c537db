/* test_corpus.c — prep's input reading: the JSON "text" field parser, .txt document splitting,
 * .jsonl errors, and file discovery. */
#include "tests/testutil.h"
#include "data/corpus.h"
#include "autograd/base/util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_dir[64];

static void expect_text(const char *json, const char *want, size_t want_len) {
    char *out = NULL, err[256];
    size_t n = 0;
    int rc = json_string_field(json, strlen(json), "text", &out, &n, err, sizeof err);
    if (rc != 0) fail_msg("'%s': rc %d (%s)", json, rc, rc < 0 ? err : "no field");
    assert_int_equal(n, want_len);
    assert_memory_equal(out, want, n);
    free(out);
}

static void expect_json_error(const char *json, const char *needle) {
    char *out = NULL, err[256] = "";
    size_t n = 0;
    int rc = json_string_field(json, strlen(json), "text", &out, &n, err, sizeof err);
    if (rc != -1) fail_msg("'%s' accepted (rc %d)", json, rc);
    if (!strstr(err, needle)) fail_msg("'%s': message '%s' lacks '%s'", json, err, needle);
    assert_null(out);
}

static void test_json_field(void **state) {
    (void)state;
    expect_text("{\"text\": \"hello\"}", "hello", 5);
    expect_text("  {\"id\": 3, \"meta\": {\"a\": [1, 2.5e-3, true, null, {\"text\": \"inner\"}]}, \"text\":\"x\"}  ", "x", 1);
    expect_text("{\"text\": \"q\\\"b\\\\s\\/n\\nt\\tr\\rb\\bf\\f\"}", "q\"b\\s/n\nt\tr\rb\bf\f", 16);
    expect_text("{\"text\": \"caf\\u00e9 \\u4e2d\"}", "caf\xC3\xA9 \xE4\xB8\xAD", 9);
    expect_text("{\"text\": \"\\ud83d\\ude00!\"}", "\xF0\x9F\x98\x80!", 5);    /* surrogate pair -> U+1F600 */
    expect_text("{\"text\": \"a\\u0000b\"}", "a\0b", 3);
    expect_text("{\"text\": \"raw \xF0\x9F\x98\x80 \xFF\"}", "raw \xF0\x9F\x98\x80 \xFF", 10); /* raw bytes pass through */
    expect_text("{\"text\": \"\"}", "", 0);
    char *out = NULL, err[256];
    size_t n;
    assert_int_equal(json_string_field("{\"body\": \"x\"}", 13, "text", &out, &n, err, sizeof err), 1);
    expect_json_error("{\"text\": 5}", "not a string");
    expect_json_error("{\"text\": \"\\ud83d\"}", "surrogate");
    expect_json_error("{\"text\": \"\\ude00\"}", "surrogate");
    expect_json_error("{\"text\": \"abc}", "unterminated");
    expect_json_error("{\"text\": \"a\\q\"}", "unknown escape");
    expect_json_error("{\"text\": \"x\"} extra", "trailing");
    expect_json_error("[\"text\"]", "object");
    expect_json_error("{\"a\": [1, 2}", "expected");
    expect_json_error("{\"a\": 01, \"text\": \"x\"}", "expected");
    expect_json_error("{\"text\": \"tab\there\"}", "control");
}

static const char *write_file(const char *name, const char *content, size_t n) {
    static char path[8][256];
    static int k;
    char *p = path[k++ % 8];
    snprintf(p, 256, "%s/%s", g_dir, name);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fwrite(content, 1, n, f);
    fclose(f);
    return p;
}

static void test_txt_documents(void **state) {
    (void)state;
    const char txt[] = "\n\nfirst doc\nline two\n\n \t\nsecond\r\n\r\n\n third  \nend";
    const char *p = write_file("a.txt", txt, sizeof txt - 1);
    DocSet ds = {0};
    char err[256];
    assert_int_equal(corpus_read_file(p, &ds, err, sizeof err), 0);
    assert_int_equal(ds.n, 3);
    const char *want[3] = {"first doc\nline two", "second\r", " third  \nend"};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(ds.len[i], strlen(want[i]));
        assert_memory_equal(ds.buf + ds.off[i], want[i], ds.len[i]);
    }
    docset_free(&ds);
}

static void test_jsonl_documents_and_errors(void **state) {
    (void)state;
    const char ok[] = "{\"text\": \"one\"}\n\n{\"text\": \"two\\nlines\", \"n\": 2}\r\n{\"text\": \"\"}\n";
    const char *p = write_file("b.jsonl", ok, sizeof ok - 1);
    DocSet ds = {0};
    char err[512];
    assert_int_equal(corpus_read_file(p, &ds, err, sizeof err), 0);
    assert_int_equal(ds.n, 2); /* the empty text is dropped */
    assert_memory_equal(ds.buf + ds.off[1], "two\nlines", 9);
    const char bad[] = "{\"text\": \"one\"}\n{\"text\": \"two\"\n";
    p = write_file("c.jsonl", bad, sizeof bad - 1);
    assert_int_equal(corpus_read_file(p, &ds, err, sizeof err), -1);
    assert_non_null(strstr(err, p));
    assert_non_null(strstr(err, ":2:"));
    const char none[] = "{\"title\": \"no text\"}\n";
    p = write_file("d.jsonl", none, sizeof none - 1);
    assert_int_equal(corpus_read_file(p, &ds, err, sizeof err), -1);
    assert_non_null(strstr(err, "no string field \"text\""));
    docset_free(&ds);
}

static void test_list_files(void **state) {
    (void)state;
    char sub[128], deep[160];
    snprintf(sub, sizeof sub, "%s/tree", g_dir);
    snprintf(deep, sizeof deep, "%s/tree/z/y", g_dir);
    mkdir(sub, 0777);
    snprintf(deep, sizeof deep, "%s/tree/z", g_dir);
    mkdir(deep, 0777);
    write_file("tree/b.txt", "x", 1);
    write_file("tree/a.jsonl", "{}", 2);
    write_file("tree/z/c.txt", "y", 1);
    write_file("tree/ignored.csv", "z", 1);
    write_file("tree/.hidden.txt", "h", 1);
    const char *paths[2] = {sub, NULL};
    char **files, err[512];
    size_t n;
    assert_int_equal(corpus_list_files(paths, 1, &files, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    assert_non_null(strstr(files[0], "tree/a.jsonl"));
    assert_non_null(strstr(files[1], "tree/b.txt"));
    assert_non_null(strstr(files[2], "tree/z/c.txt"));
    for (size_t i = 0; i < n; i++) free(files[i]);
    free(files);
    paths[0] = "/nonexistent/input.txt";
    assert_int_equal(corpus_list_files(paths, 1, &files, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "/nonexistent/input.txt"));
    char csv[200];
    snprintf(csv, sizeof csv, "%s/tree/ignored.csv", g_dir);
    paths[0] = csv;
    assert_int_equal(corpus_list_files(paths, 1, &files, &n, err, sizeof err), -1);
    assert_non_null(strstr(err, "unsupported file type"));
}

static int setup(void **state) {
    (void)state;
    return test_tmpdir(g_dir, sizeof g_dir, "corpus");
}
static int teardown(void **state) {
    (void)state;
    return test_rmtree(g_dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_field),
        cmocka_unit_test(test_txt_documents),
        cmocka_unit_test(test_jsonl_documents_and_errors),
        cmocka_unit_test(test_list_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
