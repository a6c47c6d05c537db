/* test_metrics.c — metrics.jsonl text (exact), JSON validity (parsed back by a small checker here
 * and by /usr/bin/python3's json module when present), resume truncation, progress line in TTY and
 * plain mode, durations, run directory files and command-line quoting. */
#include "tests/testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "train/metrics.h"
#include "train/version.h"

static char dir[64];

static int setup(void **s) {
    return test_tmpdir(dir, sizeof dir, "metrics");
}

static int teardown(void **s) {
    return test_rmtree(dir);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = calloc((size_t)n + 1, 1);
    if (fread(b, 1, (size_t)n, f) != (size_t)n) b[0] = 0;
    fclose(f);
    return b;
}

/* ---- a tiny strict JSON checker: one object of string keys and number/string/null/int values ---- */
static const char *ws(const char *p) {
    while (*p == ' ' || *p == '\t') p++;
    return p;
}
static const char *jstring(const char *p) {
    if (*p++ != '"') return NULL;
    for (; *p && *p != '"'; p++) {
        if ((unsigned char)*p < 0x20) return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i]) return NULL;
                p += 4;
            } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
                return NULL;
            }
        }
    }
    return *p == '"' ? p + 1 : NULL;
}
static const char *jnumber(const char *p) { /* JSON grammar: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)? */
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
    else return NULL;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9')) return NULL;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return NULL;
        while (*p >= '0' && *p <= '9') p++;
    }
    return p;
}
static int json_object_ok(const char *p) {
    p = ws(p);
    if (*p++ != '{') return 0;
    p = ws(p);
    if (*p == '}') return *ws(p + 1) == 0;
    for (;;) {
        p = jstring(ws(p));
        if (!p) return 0;
        p = ws(p);
        if (*p++ != ':') return 0;
        p = ws(p);
        if (*p == '"') p = jstring(p);
        else if (!strncmp(p, "null", 4)) p += 4;
        else p = jnumber(p);
        if (!p) return 0;
        p = ws(p);
        if (*p == ',') { p++; continue; }
        if (*p == '}') return *ws(p + 1) == 0 || *ws(p + 1) == '\n';
        return 0;
    }
}

static void record_text_is_exact_json(void **state) {
    MetricsRecord r;
    mrec_begin(&r, M_KIND_TRAIN, 12);
    mrec_num(&r, M_G_LOSS, 6.5);
    mrec_num(&r, M_D_LOSS, 0.1f);          /* a float prints with 9 digits: round-trips */
    mrec_num(&r, M_RTD_ACC, NAN);
    mrec_num(&r, "inf", -INFINITY);
    mrec_num(&r, "big", 1.5e300);
    mrec_num(&r, "tiny", -2.5e-12);
    mrec_int(&r, M_SKIPPED, 0);
    mrec_int(&r, "tokens", 123456789012LL);
    mrec_str(&r, "note", "a \"q\"\\ b\n\t\x01 é");
    const char *want = "{\"kind\":\"train\",\"step\":12,\"g_loss\":6.5,\"d_loss\":0.100000001,\"rtd_acc\":null,\"inf\":null,"
                       "\"big\":1.5e+300,\"tiny\":-2.5e-12,\"skipped\":0,\"tokens\":123456789012,"
                       "\"note\":\"a \\\"q\\\"\\\\ b\\n\\t\\u0001 é\"}";
    assert_string_equal(mrec_text(&r), want);
    assert_true(json_object_ok(mrec_text(&r)));
    assert_true(strtof("0.100000001", NULL) == 0.1f);
    /* the checker rejects what JSON rejects */
    assert_false(json_object_ok("{\"a\":nan}"));
    assert_false(json_object_ok("{\"a\":inf}"));
    assert_false(json_object_ok("{\"a\":1.}"));
    assert_false(json_object_ok("{\"a\":\"x\ny\"}"));
    assert_false(json_object_ok("{\"a\":01}"));
}

static void overflowing_record_is_an_error(void **state) {
    MetricsLog m;
    char err[256];
    assert_int_equal(metrics_open(&m, dir, -1, err, sizeof err), 0);
    MetricsRecord r;
    mrec_begin(&r, M_KIND_TRAIN, 1);
    for (int i = 0; i < 1000; i++) mrec_num(&r, "some_long_key_name", i);
    assert_int_equal(metrics_write(&m, &r, err, sizeof err), -1);
    assert_non_null(strstr(err, "longer than"));
    metrics_close(&m);
}

static void write_steps(MetricsLog *m, long from, long to) {
    char err[256];
    MetricsRecord r;
    for (long s = from; s <= to; s++) {
        mrec_begin(&r, M_KIND_TRAIN, s);
        mrec_num(&r, M_G_LOSS, 10.0 / (double)s);
        mrec_num(&r, M_D_LOSS, s == 3 ? NAN : 0.5);
        mrec_num(&r, M_RTD_ACC, 0.9);
        mrec_int(&r, M_SKIPPED, s == 3);
        assert_int_equal(metrics_write(m, &r, err, sizeof err), 0);
        if (s % 5 == 0) {
            mrec_begin(&r, M_KIND_EVAL, s);
            mrec_num(&r, M_G_LOSS, 9.0 / (double)s);
            mrec_num(&r, M_MLM_ACC, 0.01 * (double)s);
            mrec_num(&r, M_D_LOSS, 0.4);
            mrec_num(&r, M_RTD_ACC, 0.91);
            mrec_num(&r, M_RTD_AUC, 0.7);
            assert_int_equal(metrics_write(m, &r, err, sizeof err), 0);
        }
    }
}

static int count_lines_ok(const char *text, int *bad) {
    int n = 0;
    *bad = 0;
    for (const char *p = text; *p;) {
        const char *e = strchr(p, '\n');
        if (!e) {
            (*bad)++;
            break;
        }
        char line[4096];
        snprintf(line, sizeof line, "%.*s", (int)(e - p), p);
        if (!json_object_ok(line)) (*bad)++;
        n++;
        p = e + 1;
    }
    return n;
}

static void jsonl_file_parses_and_resume_truncates(void **state) {
    MetricsLog m;
    char err[256], path[256];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    assert_int_equal(metrics_open(&m, dir, -1, err, sizeof err), 0);
    write_steps(&m, 1, 12);
    /* flushed per line: readable before close */
    char *t = slurp(path);
    int bad;
    assert_int_equal(count_lines_ok(t, &bad), 14);
    assert_int_equal(bad, 0);
    free(t);
    metrics_close(&m);

    /* python's json module agrees (and sees null for the NaN) */
    const int have_python = access("/usr/bin/python3", X_OK) == 0;
    if (have_python) {
        char cmd[512];
        snprintf(cmd, sizeof cmd,
                 "/usr/bin/python3 -c 'import json,sys; L=[json.loads(l) for l in open(sys.argv[1])]; "
                 "assert len(L)==14 and L[2][\"d_loss\"] is None and L[2][\"skipped\"]==1 and L[5][\"kind\"]==\"eval\", L' %s",
                 path);
        assert_int_equal(system(cmd), 0);
    }

    /* a killed run: logged up to 12 plus a torn line, last checkpoint at step 7 */
    FILE *f = fopen(path, "a");
    fputs("{\"kind\":\"train\",\"step\":13,\"g_lo", f);
    fclose(f);
    assert_int_equal(metrics_open(&m, dir, 7, err, sizeof err), 0);
    write_steps(&m, 8, 12);
    metrics_close(&m);
    char *resumed = slurp(path);

    /* identical to an uninterrupted run */
    assert_int_equal(metrics_open(&m, dir, -1, err, sizeof err), 0);
    write_steps(&m, 1, 12);
    metrics_close(&m);
    char *straight = slurp(path);
    assert_string_equal(resumed, straight);
    free(resumed);
    free(straight);

    /* resume_step 5 keeps the eval line of step 5 */
    assert_int_equal(metrics_open(&m, dir, 5, err, sizeof err), 0);
    metrics_close(&m);
    t = slurp(path);
    assert_int_equal(count_lines_ok(t, &bad), 6);
    assert_non_null(strstr(t, "{\"kind\":\"eval\",\"step\":5,"));
    free(t);
    if (!have_python) test_skip("the json module cross-check: /usr/bin/python3 missing");
}

static void progress_plain_and_tty(void **state) {
    char buf[256], d[32];
    assert_string_equal(format_duration(0.4, d, sizeof d), "0s");
    assert_string_equal(format_duration(45, d, sizeof d), "45s");
    assert_string_equal(format_duration(192, d, sizeof d), "3m12s");
    assert_string_equal(format_duration(3725, d, sizeof d), "1h02m");
    assert_string_equal(format_duration(2 * 86400 + 3 * 3600 + 5, d, sizeof d), "2d03h");
    assert_string_equal(format_duration(NAN, d, sizeof d), "?");

    Progress p;
    char *mem = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&mem, &n);
    progress_init_stream(&p, out, 0, 0, 1000);
    assert_string_equal(progress_text(&p, 120, 5.1234, 0.41234, 0.8712, 12345, 192, buf, sizeof buf),
                        "step 120/1000 | G 5.1234 | D 0.4123 | RTD acc 0.871 | 12.3k tok/s | ETA 3m12s");
    assert_string_equal(progress_text(&p, 1, NAN, INFINITY, 0.5, 0, NAN, buf, sizeof buf),
                        "step 1/1000 | G nan | D inf | RTD acc 0.500 | ? tok/s | ETA ?");
    /* plain mode: the first step, then nothing until the interval passed, then the last step */
    progress_update(&p, 1, 9.0, 0.7, 0.5, 512);
    for (long s = 2; s < 1000; s++) progress_update(&p, s, 8.0, 0.6, 0.6, 512);
    progress_note(&p, "step %d skipped: gradient norm is NaN", 37);
    progress_update(&p, 1000, 7.0, 0.5, 0.7, 512);
    progress_done(&p);
    fclose(out);
    fprintf(stderr, "plain output:\n%s", mem);
    assert_null(strchr(mem, '\r'));
    assert_true(!strncmp(mem, "step 1/1000 | G 9.0000 | D 0.7000 | RTD acc 0.500 | ", 50));
    assert_non_null(strstr(mem, "\nstep 37 skipped: gradient norm is NaN\nstep 1000/1000 | G 7.0000"));
    assert_non_null(strstr(mem, "ETA 0s\n"));
    int lines = 0;
    for (char *q = mem; *q; q++) lines += *q == '\n';
    assert_int_equal(lines, 3);
    free(mem);

    /* TTY mode: rewritten in place, note clears the line, done ends it */
    out = open_memstream(&mem, &n);
    progress_init_stream(&p, out, 1, 10, 20);
    progress_update(&p, 11, 3.0, 0.3, 0.9, 100);
    progress_note(&p, "evaluating");
    progress_update(&p, 12, 3.0, 0.3, 0.9, 100);
    progress_update(&p, 20, 2.0, 0.2, 0.95, 100);
    progress_done(&p);
    fclose(out);
    assert_true(!strncmp(mem, "\rstep 11/20 | G 3.0000 | D 0.3000 | RTD acc 0.900 | ", 50));
    assert_non_null(strstr(mem, "\033[K\r\033[Kevaluating\n\rstep 12/20"));
    assert_non_null(strstr(mem, "\rstep 20/20 | G 2.0000"));
    assert_true(mem[strlen(mem) - 1] == '\n');
    free(mem);
}

/* The speed line's clock: the first step apart, the mean over the others. */
static void step_clock_keeps_the_first_step_apart(void **state) {
    StepClock c = {0};
    long n = -1;
    stepclock_add(&c, 1.25);
    assert_true(stepclock_ms(&c, &n) == 1250.0);
    assert_int_equal(n, 1);
    stepclock_add(&c, 0.25);
    stepclock_add(&c, 0.5);
    assert_true(fabs(stepclock_ms(&c, &n) - 375.0) < 1e-9);
    assert_int_equal(n, 2);
    assert_int_equal(c.n, 3);
    assert_true(c.first_s == 1.25);
}

static void run_directory_files(void **state) {
    char rundir[256], err[256], p[300];
    snprintf(rundir, sizeof rundir, "%s/a/b/run1", dir);
    assert_int_equal(run_mkdir(rundir, err, sizeof err), 0);
    assert_int_equal(run_mkdir(rundir, err, sizeof err), 0); /* exists: fine */
    snprintf(p, sizeof p, "%s/file", dir);
    FILE *f = fopen(p, "w");
    fclose(f);
    assert_int_equal(run_mkdir(p, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a directory"));

    assert_int_equal(run_check_fresh(rundir, err, sizeof err), 0);
    snprintf(p, sizeof p, "%s/nonexistent", dir);
    assert_int_equal(run_check_fresh(p, err, sizeof err), 0);
    assert_int_equal(run_write_text(rundir, "config.txt", "hidden_size = 128\n", err, sizeof err), 0);
    assert_int_equal(run_check_fresh(rundir, err, sizeof err), 0); /* a config alone is not a run */
    MetricsLog m;
    assert_int_equal(metrics_open(&m, rundir, -1, err, sizeof err), 0);
    metrics_close(&m);
    /* a log without a checkpoint (the run stopped before its first one) is not a run either */
    assert_int_equal(run_check_fresh(rundir, err, sizeof err), 0);
    snprintf(p, sizeof p, "%s/checkpoint.h5", rundir);
    f = fopen(p, "w");
    fclose(f);
    assert_int_equal(run_check_fresh(rundir, err, sizeof err), -1);
    fprintf(stderr, "  got: error: %s\n", err);
    assert_non_null(strstr(err, "already holds a run (checkpoint.h5); continue it with --resume"));
    snprintf(p, sizeof p, "%s/config.txt", rundir);
    char *t = slurp(p);
    assert_string_equal(t, "hidden_size = 128\n");
    free(t);

    char *argv1[] = {"deberta", "pretrain", "--out", "my run", "--note", "it's", "--lr=1e-4", ""};
    char *argv2[] = {"deberta", "pretrain", "--resume", "runs/x"};
    assert_int_equal(run_append_cmdline(rundir, 8, argv1, err, sizeof err), 0);
    assert_int_equal(run_append_cmdline(rundir, 4, argv2, err, sizeof err), 0);
    snprintf(p, sizeof p, "%s/cmdline.txt", rundir);
    t = slurp(p);
    char want[1024]; /* each command line after a comment line naming the build */
    snprintf(want, sizeof want, "# %s\ndeberta pretrain --out 'my run' --note 'it'\\''s' --lr=1e-4 ''\n# %s\ndeberta pretrain --resume runs/x\n",
             deberta_version(), deberta_version());
    assert_string_equal(t, want);
    free(t);
    /* the quoted line means the same words to sh */
    if (access("/bin/sh", X_OK) == 0) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "set -- $(printf '') ; eval \"set -- $(sed -n 2p %s/cmdline.txt)\"; [ \"$4\" = 'my run' ] && [ \"$6\" = \"it's\" ] && [ $# -eq 8 ]", rundir);
        assert_int_equal(system(cmd), 0);
    } else {
        test_skip("the cmdline.txt words read back by sh: /bin/sh missing");
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(record_text_is_exact_json),
        cmocka_unit_test(overflowing_record_is_an_error),
        cmocka_unit_test(jsonl_file_parses_and_resume_truncates),
        cmocka_unit_test(progress_plain_and_tty),
        cmocka_unit_test(step_clock_keeps_the_first_step_apart),
        cmocka_unit_test(run_directory_files),
    };
    return test_exit(cmocka_run_group_tests_name("metrics", tests, setup, teardown));
}
