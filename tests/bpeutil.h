/* bpeutil.h — a BPE tokenizer trained on one text, for suites that need a real tokenizer (test_export.c,
 * test_fill_mask.c).  Fails the test when training fails. */
#ifndef DEBERTA_TESTS_BPEUTIL_H
#define DEBERTA_TESTS_BPEUTIL_H
#include <string.h>
#include "data/tokenizer.h"

static inline Tokenizer *test_bpe(const char *text, int vocab_size) {
    TokTrainConfig tc;
    tok_train_config_default(&tc);
    tc.vocab_size = vocab_size;
    const char *docs[1] = {text};
    size_t lens[1] = {strlen(text)};
    char err[512];
    Tokenizer *tk = tokenizer_train(docs, lens, 1, &tc, err, sizeof err);
    if (!tk) fail_msg("%s", err);
    return tk;
}
#endif
