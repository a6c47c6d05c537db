/* test_spm.c — the SentencePiece model reader (data/spm.c) on damaged models: byte pieces whose text
 * is not exactly "<0xNN>".  Regression of the spm fuzz target's finding: "<0x-6>" (same length as
 * "<0x06>") passed sscanf("<0x%2X%c") with a huge value and was written far outside byte_id[256].
 * The models are the fuzz seed unigram.model (byte fallback on), made for the run by
 * tests/fuzz/seeds/make-seeds.py (python3-sentencepiece), with one piece's bytes changed in place
 * (the protobuf lengths stay valid). */
#include "tests/testutil.h"
#include <string.h>
#include "autograd/base/util.h"
#include "data/spm.h"

static char SEED[256]; /* DIR/spm/unigram.model, made by main */

/* The seed with the first occurrence of `from` replaced by `to` (same length). */
static uint8_t *patched(const char *from, const char *to, size_t *len) {
    char *b = read_file(SEED, len);
    assert_non_null(b);
    assert_int_equal(strlen(from), strlen(to));
    char *at = memmem(b, *len, from, strlen(from));
    assert_non_null(at);
    memcpy(at, to, strlen(to));
    return (uint8_t *)b;
}

static void seed_loads(void **state) {
    char err[1400];
    SpmModel *m = spm_load(SEED, err, sizeof err);
    if (!m) fail_msg("%s", err);
    /* the seed holds byte pieces (<0x06>, patched below), which spm_load refuses unless byte_fallback is on */
    spm_free(m);
}

static void bad_byte_pieces_refused(void **state) {
    static const char *const bad[] = {"<0x-6>", "<0x+6>", "<0x 6>", "<0x6 >", "<0xG6>", "<0x06)", "[0x06>"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        size_t len;
        uint8_t *b = patched("<0x06>", bad[k], &len);
        char err[1400];
        SpmModel *m = spm_from_bytes(b, len, "patched", err, sizeof err);
        if (m) fail_msg("byte piece '%s' accepted", bad[k]);
        if (!strstr(err, "is not of the form <0xNN>")) fail_msg("byte piece '%s': %s", bad[k], err);
        free(b);
    }
    size_t len; /* a lower-case digit is a hex digit: the same byte */
    uint8_t *b = patched("<0x0A>", "<0x0a>", &len);
    char err[1400];
    SpmModel *m = spm_from_bytes(b, len, "patched", err, sizeof err);
    if (!m) fail_msg("%s", err);
    spm_free(m);
    free(b);
}

int main(void) {
    if (system("/usr/bin/python3 -c 'import sentencepiece' 2>/dev/null") != 0) {
        fprintf(stderr, "SKIPPED: test_spm needs /usr/bin/python3 with sentencepiece to make its seed model\n");
        return 77;
    }
    char dir[] = "/tmp/deberta-test-spm.XXXXXX", cmd[512];
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/fuzz/seeds/make-seeds.py %s", dir);
    if (system(cmd) != 0) { fprintf(stderr, "test_spm: %s failed\n", cmd); return 1; }
    snprintf(SEED, sizeof SEED, "%s/spm/unigram.model", dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seed_loads),
        cmocka_unit_test(bad_byte_pieces_refused),
    };
    const int failed = cmocka_run_group_tests_name("spm", tests, NULL, NULL);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "test_spm: could not remove %s\n", dir);
    return failed;
}
