/* fuzz_spm.c — libFuzzer target: the SentencePiece model reader (spm_from_bytes: the protobuf, the
 * pieces, the trainer and normalizer specs, the precompiled character map) and, for whatever parses,
 * encoding (normalization included) of a fixed text of hard strings and of the input's first bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "data/spm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char err[1024];
    SpmModel *m = spm_from_bytes(data, n, "fuzz", err, sizeof err);
    if (!m) return 0;
    static const char text[] = "  Hello,\tworld!  caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80 e\xcc\x81 \x01\x7f 3.14 ";
    size_t k;
    free(spm_encode(m, text, sizeof text - 1, &k));
    free(spm_encode(m, (const char *)data, n < 256 ? n : 256, &k));
    for (int id = -1; id <= spm_vocab_size(m); id++) spm_piece(m, id, &k);
    spm_free(m);
    return 0;
}
