/* test_task_metrics.c — train/eval/task_metrics.h on cases worked out by hand (macro-F1 over present
 * labels, MCC and positive F1, Pearson/Spearman with ties, conlleval entities with an I- that starts
 * an entity).  `test_task_metrics --dump FILE` instead writes seeded random cases with the C results
 * as JSON lines, which scripts/check_metrics.py recomputes with its own formulas
 * (tests/e2e-task-metrics.sh). */
#include "train/eval/task_metrics.h"
#include "autograd/base/util.h"
#include "tests/testutil.h"
#include <string.h>

#define NEAR(a, b) do { if (!(fabs((double)(a) - (double)(b)) <= 1e-12)) fail_msg("%s = %.17g, expected %.17g", #a, (double)(a), (double)(b)); } while (0)

static void test_macro_f1(void **state) {
    (void)state;
    /* 3 labels; label 2 never gold nor predicted (left out of the average) */
    long cm[9] = {3, 1, 0,   /* gold 0: 3 right, 1 as 1 */
                  2, 4, 0,   /* gold 1 */
                  0, 0, 0};
    double f0 = 2.0 * 3 / (4 + 5), f1 = 2.0 * 4 / (6 + 5);
    NEAR(tm_macro_f1(cm, 3), (f0 + f1) / 2);
    /* a label predicted but never gold counts with F1 = 0 */
    cm[2] = 1; cm[0] = 2;
    f0 = 2.0 * 2 / (4 + 4);
    NEAR(tm_macro_f1(cm, 3), (f0 + f1 + 0) / 3);
    long zero[4] = {0, 0, 0, 0};
    assert_true(tm_macro_f1(zero, 2) == 0.0);
}

static void test_binary(void **state) {
    (void)state;
    /* tp 3, tn 2, fp 1, fn 2 */
    const int32_t gold[8] = {1, 1, 1, 1, 1, 0, 0, 0}, pred[8] = {1, 1, 1, 0, 0, 0, 0, 1};
    TaskMetrics m;
    tm_classification(gold, pred, 8, 2, &m);
    assert_true(m.binary);
    NEAR(m.acc, 5.0 / 8);
    NEAR(m.mcc, (3.0 * 2 - 1.0 * 2) / sqrt(4.0 * 5 * 3 * 4));
    NEAR(m.pos_f1, 6.0 / 9);
    /* one class predicted everywhere: MCC 0 (an empty margin), F1(pos) 0 */
    const int32_t zeros[8] = {0};
    tm_classification(gold, zeros, 8, 2, &m);
    assert_true(m.mcc == 0.0 && m.pos_f1 == 0.0);
    tm_classification(gold, pred, 8, 3, &m);
    assert_false(m.binary);
}

static void test_regression(void **state) {
    (void)state;
    const double x[5] = {1, 2, 2, 3, 5}, y[5] = {2, 1, 4, 4, 10};
    TaskMetrics m;
    tm_regression(x, y, 5, &m);
    /* ranks with ties averaged: x 1 2.5 2.5 4 5; y 2 1 3.5 3.5 5 */
    NEAR(m.spearman, 7.25 / 9.5); /* rank deviations -2 -.5 -.5 1 2 and -1 -2 .5 .5 2 */
    /* by hand: mean x 2.6, mean y 4.2 */
    double sxy = 0, sxx = 0, syy = 0;
    for (int i = 0; i < 5; i++) { sxy += (x[i] - 2.6) * (y[i] - 4.2); sxx += (x[i] - 2.6) * (x[i] - 2.6); syy += (y[i] - 4.2) * (y[i] - 4.2); }
    NEAR(m.pearson, sxy / sqrt(sxx * syy));
    NEAR(m.mse, (1 + 1 + 4 + 1 + 25) / 5.0);
}

static const char NAMES[5][TASK_LABEL_LEN] = {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"};
enum { O, BP, IP, BL, IL };

static void test_entities(void **state) {
    (void)state;
    assert_true(tm_is_bio(NAMES, 5));
    const char pos[3][TASK_LABEL_LEN] = {"NOUN", "VERB", "O"};
    assert_false(tm_is_bio(pos, 3));
    /* sequence 0: gold  B-PER I-PER O B-LOC        -> PER[0,2) LOC[3,4)
     *             pred  B-PER I-PER O I-LOC        -> PER[0,2) LOC[3,4) (I- starts an entity): 2 right
     * sequence 1: gold  I-PER I-LOC B-LOC I-LOC    -> PER[0,1) LOC[1,2) LOC[2,4)
     *             pred  B-PER B-PER B-LOC O        -> PER[0,1) PER[1,2) LOC[2,3): 1 right */
    const int32_t gold[8] = {BP, IP, O, BL, IP, IL, BL, IL}, pred[8] = {BP, IP, O, IL, BP, BP, BL, O};
    const long starts[3] = {0, 4, 8};
    TaskMetrics m;
    memset(&m, 0, sizeof m);
    tm_entities(gold, pred, starts, 2, NAMES, 5, &m);
    assert_true(m.entities);
    assert_int_equal(m.ent_gold, 5);
    assert_int_equal(m.ent_pred, 5);
    assert_int_equal(m.ent_correct, 3);
    NEAR(m.ent_f1, 0.6);
    /* sequences are scored apart: a boundary ends an entity */
    const int32_t g2[4] = {BL, IL, IL, O}, p2[4] = {BL, IL, IL, O};
    const long s_apart[3] = {0, 2, 4}, s_one[2] = {0, 4};
    tm_entities(g2, p2, s_apart, 2, NAMES, 5, &m);
    assert_int_equal(m.ent_gold, 2);   /* LOC[0,2) and LOC[2,3) */
    tm_entities(g2, p2, s_one, 1, NAMES, 5, &m);
    assert_int_equal(m.ent_gold, 1);   /* LOC[0,3) */
}

/* ---- random cases for scripts/check_metrics.py ---- */

static void put_ints(FILE *f, const char *key, const int32_t *v, long n) {
    fprintf(f, ",\"%s\":[", key);
    for (long i = 0; i < n; i++) fprintf(f, "%s%d", i ? "," : "", v[i]);
    fputc(']', f);
}
static void put_reals(FILE *f, const char *key, const double *v, long n) {
    fprintf(f, ",\"%s\":[", key);
    for (long i = 0; i < n; i++) fprintf(f, "%s%.17g", i ? "," : "", v[i]);
    fputc(']', f);
}
static void put_num(FILE *f, const char *key, double v) {
    if (isfinite(v)) fprintf(f, ",\"%s\":%.17g", key, v);
    else fprintf(f, ",\"%s\":null", key);
}

static uint64_t g_state = 20261203;
static double u01(void) { /* xorshift64* */
    g_state ^= g_state >> 12; g_state ^= g_state << 25; g_state ^= g_state >> 27;
    return (double)((g_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

static int dump(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); return 1; }
    int32_t gold[400], pred[400];
    double x[400], y[400];
    TaskMetrics m;
    for (int c = 0; c < 40; c++) { /* classification: L 2..5, n 1..400; some predictions constant */
        const int L = 2 + c % 4;
        const long n = 1 + (long)(u01() * 399);
        const int constant = c % 7 == 3;
        for (long i = 0; i < n; i++) {
            gold[i] = (int32_t)(u01() * L);
            pred[i] = constant ? 0 : u01() < 0.6 ? gold[i] : (int32_t)(u01() * L);
        }
        tm_classification(gold, pred, n, L, &m);
        fprintf(f, "{\"case\":\"classification\",\"L\":%d", L);
        put_ints(f, "gold", gold, n);
        put_ints(f, "pred", pred, n);
        put_num(f, "acc", m.acc);
        put_num(f, "macro_f1", m.macro_f1);
        if (m.binary) { put_num(f, "mcc", m.mcc); put_num(f, "pos_f1", m.pos_f1); }
        fprintf(f, "}\n");
    }
    for (int c = 0; c < 30; c++) { /* regression: values on a grid of 0.5 (many ties) or continuous */
        const long n = 2 + (long)(u01() * 398);
        const int grid = c % 2 == 0;
        for (long i = 0; i < n; i++) {
            x[i] = u01() * 5;
            y[i] = x[i] + (u01() - 0.5) * 4;
            if (grid) { x[i] = floor(x[i] * 2) / 2; y[i] = floor(y[i] * 2) / 2; }
        }
        tm_regression(x, y, n, &m);
        fprintf(f, "{\"case\":\"regression\"");
        put_reals(f, "gold", x, n);
        put_reals(f, "pred", y, n);
        put_num(f, "mse", m.mse);
        put_num(f, "pearson", m.pearson);
        put_num(f, "spearman", m.spearman);
        fprintf(f, "}\n");
    }
    for (int c = 0; c < 30; c++) { /* entities: several sequences, tags drawn with stray I-s */
        long starts[41];
        int ns = 1 + (int)(u01() * 40);
        long n = 0;
        starts[0] = 0;
        for (int s = 0; s < ns; s++) {
            const long len = (long)(u01() * 10);
            for (long i = 0; i < len; i++, n++) {
                gold[n] = (int32_t)(u01() * 5);
                pred[n] = u01() < 0.7 ? gold[n] : (int32_t)(u01() * 5);
            }
            starts[s + 1] = n;
        }
        memset(&m, 0, sizeof m);
        tm_entities(gold, pred, starts, ns, NAMES, 5, &m);
        fprintf(f, "{\"case\":\"entities\",\"names\":[\"O\",\"B-PER\",\"I-PER\",\"B-LOC\",\"I-LOC\"]");
        put_ints(f, "gold", gold, n);
        put_ints(f, "pred", pred, n);
        fprintf(f, ",\"starts\":[");
        for (int s = 0; s <= ns; s++) fprintf(f, "%s%ld", s ? "," : "", starts[s]);
        fprintf(f, "],\"entity_gold\":%ld,\"entity_pred\":%ld,\"entity_correct\":%ld", m.ent_gold, m.ent_pred, m.ent_correct);
        put_num(f, "entity_p", m.ent_p);
        put_num(f, "entity_r", m.ent_r);
        put_num(f, "entity_f1", m.ent_f1);
        fprintf(f, "}\n");
    }
    return fclose(f) ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--dump")) return dump(argv[2]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_macro_f1),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_regression),
        cmocka_unit_test(test_entities),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
