/* fuzz_tokenizer.c — libFuzzer target: tokenizer_from_bytes, then an encode/decode round trip of
 * the input's first bytes with whatever parses. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "data/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char err[1024];
    Tokenizer *tk = tokenizer_from_bytes(data, n, "fuzz", err, sizeof err);
    if (!tk) return 0;
    TokEncoder *e = tok_encoder_new(tk);
    size_t k;
    tok_encode(e, (const char *)data, n < 256 ? n : 256, &k);
    tok_encoder_free(e);
    tokenizer_free(tk);
    return 0;
}
