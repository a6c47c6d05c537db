/* test_model_relpos.c — make_log_bucket_position against the spec's test vectors (§1.3) and, for the
 * full (256, 512) and (64, 128) tables, against two recomputations written differently here: the
 * official table recipe (arange over [−MP, MP), placeholder, where, gather at clamp(r) + MP) in
 * float32, and a float64 formula (spec §1.3/§9: identical for these pairs).  Then c(i, j). */
#include "tests/testutil.h"
#include <stdlib.h>
#include <math.h>
#include "model/config.h"
#include "model/relpos.h"

static void spec_vectors_256_512(void **state) {
    static const int v[][2] = {{0, 0},     {1, 1},     {64, 64},   {127, 127}, {128, 128}, {129, 129}, {130, 130},
                               {131, 131}, {132, 131}, {133, 132}, {140, 137}, {150, 143}, {175, 157}, {200, 169},
                               {225, 180}, {250, 190}, {255, 192}, {256, 192}, {300, 207}, {350, 221}, {400, 233},
                               {450, 244}, {500, 254}, {510, 255}, {511, 255}, {512, 255}, {600, 255}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        int d = v[i][0], want = v[i][1];
        if (relpos_log_bucket(d, 256, 512) != want) fail_msg("bucket(%d) = %d, want %d", d, relpos_log_bucket(d, 256, 512), want);
        if (relpos_log_bucket(-d, 256, 512) != -want)
            fail_msg("bucket(%d) = %d, want %d", -d, relpos_log_bucket(-d, 256, 512), -want);
    }
    assert_int_equal(relpos_log_bucket(-600, 256, 512), -255);
    assert_int_equal(relpos_log_bucket(100000, 256, 512), 255);
    /* no buckets: identity */
    assert_int_equal(relpos_log_bucket(700, 0, 512), 700);
    assert_int_equal(relpos_log_bucket(-3, -1, 512), -3);
}

/* The official lookup table, element-wise in float32: entry k is bucket(k − MP). */
static int *official_table_f32(int bs, int mp) {
    int *tab = malloc(sizeof(int) * 2 * mp);
    const int mid = bs / 2;
    const float den = (float)log((mp - 1) / (double)mid); /* python float, used as float32 scalar */
    for (int k = 0; k < 2 * mp; k++) {
        const int rel = k - mp;
        const int sign = (rel > 0) - (rel < 0);
        const int abs_pos = (rel < mid && rel > -mid) ? mid - 1 : abs(rel);  /* placeholder avoids log(0) */
        const float quot = (float)abs_pos / (float)mid;
        float log_pos = logf(quot) / den;
        log_pos = log_pos * (float)(mid - 1);
        log_pos = ceilf(log_pos) + (float)mid;
        tab[k] = abs_pos <= mid ? rel : (int)(log_pos * (float)sign);
    }
    return tab;
}

static int bucket_f64(int r, int bs, int mp) {
    const int mid = bs / 2;
    if (r > mp - 1) r = mp - 1;
    if (r < 1 - mp) r = 1 - mp;
    if (abs(r) <= mid) return r;
    double lp = ceil(log(abs(r) / (double)mid) / log((mp - 1) / (double)mid) * (mid - 1)) + mid;
    return r < 0 ? -(int)lp : (int)lp;
}

static void full_table(int bs, int mp) {
    int *tab = official_table_f32(bs, mp);
    for (int r = -mp - 40; r <= mp + 40; r++) {
        int rc = r < 1 - mp ? 1 - mp : r > mp - 1 ? mp - 1 : r; /* official clamp, then gather at rc + MP */
        int want = tab[rc + mp], got = relpos_log_bucket(r, bs, mp);
        if (got != want) fail_msg("(%d, %d): bucket(%d) = %d, official float32 table says %d", bs, mp, r, got, want);
        if (got != bucket_f64(r, bs, mp)) fail_msg("(%d, %d): bucket(%d) = %d, float64 says %d", bs, mp, r, got, bucket_f64(r, bs, mp));
    }
    /* range: |bucket| <= bs − 1 */
    assert_int_equal(relpos_log_bucket(mp - 1, bs, mp), bs - 1);
    free(tab);
}

static void full_table_256_512(void **state) { full_table(256, 512); }
static void full_table_64_128(void **state) { full_table(64, 128); }

/* Hugging Face's modeling_deberta_v2: no distance clamp, the log bucket in float32 torch ops
 * (log of the float32 ratio over log of the float32 (MP−1)/mid), then only the row clamp. */
static int hf_row(int r, int pb, int mp, int S) {
    int b = r;
    if (pb > 0 && mp > 0) {
        const int mid = pb / 2, a = (r < mid && r > -mid) ? mid - 1 : abs(r);
        const float lp = ceilf(logf((float)a / (float)mid) / logf((float)((double)(mp - 1) / mid)) * (float)(mid - 1)) + (float)mid;
        b = a <= mid ? r : (r < 0 ? -(int)lp : (int)lp);
    }
    b += S;
    return b < 0 ? 0 : b > 2 * S - 1 ? 2 * S - 1 : b;
}
/* Rows of c(i, j) that differ from Hugging Face's for i, j < T. */
static long hf_mismatches(int T, int pb, int mp, int S) {
    int32_t *c = malloc(sizeof(int32_t) * (size_t)T * (size_t)T);
    relpos_index(c, T, T, pb, mp, S, NULL, NULL);
    long bad = 0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) bad += c[(long)i * T + j] != hf_row(i - j, pb, mp, S);
    free(c);
    return bad;
}
/* The tiny and xsmall presets are Hugging Face-exact at every T <= max_position_embeddings; the
 * clamp makes the difference when max_relative_positions is smaller (the old tiny preset's 128, and
 * the test preset, which keeps its clamp on purpose so that parity tests exercise it). */
static void presets_are_hf_exact(void **state) {
    const char *names[2] = {"tiny", "xsmall"};
    for (int k = 0; k < 2; k++) {
        ModelConfig c;
        char err[256];
        assert_int_equal(config_preset(&c, names[k]), 0);
        assert_int_equal(config_validate(&c, err, sizeof err), 0);
        assert_true(c.max_relative_positions >= c.max_position_embeddings);
        long bad = hf_mismatches(c.max_position_embeddings, c.position_buckets, c.max_relative_positions, config_att_span(&c));
        if (bad) fail_msg("preset %s: %ld entries of c(i, j) differ from Hugging Face at T = %d", names[k], bad, c.max_position_embeddings);
    }
    assert_int_equal(hf_mismatches(128, 64, 128, 64), 0);   /* the old tiny preset: equal up to 128 ... */
    assert_true(hf_mismatches(129, 64, 128, 64) > 0);       /* ... and not beyond */
}

static void index_table(void **state) {
    /* (PB 8, MRP 16, S = PB = 8): T = 12 reaches |i − j| = 11 -> bucket ±7 -> rows [1, 15] */
    enum { T = 12, S = 8 };
    int32_t c[T * T];
    int lo, hi;
    relpos_index(c, T, T, 8, 16, S, &lo, &hi);
    for (int i = 0; i < T; i++)
        for (int j = 0; j < T; j++) {
            int want = relpos_log_bucket(i - j, 8, 16) + S;
            want = want < 0 ? 0 : want > 2 * S - 1 ? 2 * S - 1 : want;
            assert_int_equal(c[i * T + j], want);
        }
    assert_int_equal(c[0], S);          /* i == j -> row S */
    assert_int_equal(c[1 * T + 0], S + 1); /* i − j = 1 */
    assert_int_equal(lo, 1);
    assert_int_equal(hi, 2 * S - 1);
    /* a span smaller than the bucket range clamps to [0, 2S − 1] */
    relpos_index(c, T, T, 8, 16, 4, &lo, &hi);
    assert_int_equal(lo, 0);
    assert_int_equal(hi, 7);
    /* short sequence: only rows S−(T−1) .. S+(T−1) are reachable */
    int32_t c3[9];
    relpos_index(c3, 3, 3, 8, 16, S, &lo, &hi); /* |r| <= 2 is in the identity zone */
    assert_int_equal(lo, S - 2);
    assert_int_equal(hi, S + 2);
    /* spec: for L <= 512 with (256, 512) the indices lie in [1, 511] */
    int32_t *big = malloc(sizeof(int32_t) * 512 * 512);
    relpos_index(big, 512, 512, 256, 512, 256, &lo, &hi);
    assert_int_equal(lo, 1);
    assert_int_equal(hi, 511);
    free(big);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(spec_vectors_256_512),
        cmocka_unit_test(full_table_256_512),
        cmocka_unit_test(full_table_64_128),
        cmocka_unit_test(index_table),
        cmocka_unit_test(presets_are_hf_exact),
    };
    return cmocka_run_group_tests_name("model_relpos", tests, NULL, NULL);
}
