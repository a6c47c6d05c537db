/* fuzz_shard.c — libFuzzer target: shard_open (every validation at open, ids scanned) and reads of
 * the tokens, offsets and tokenizer of whatever opens.  The real read path: the seal (data/h5util.c)
 * is checked first, so a mutated shard is refused before libhdf5 parses it. */
#include <stdint.h>
#include <stdlib.h>
#include "data/shard.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char err[1024];
    Shard *s = shard_open(fuzz_write_file(data, n), 1, err, sizeof err);
    if (!s) return 0;
    int32_t t[64];
    int64_t o[64];
    const int64_t nt = shard_n_tokens(s), nd = shard_n_docs(s);
    shard_read_tokens(s, 0, nt < 64 ? nt : 64, t, err, sizeof err);
    shard_read_offsets(s, 0, nd + 1 < 64 ? nd + 1 : 64, o, err, sizeof err);
    size_t len;
    free(shard_read_tokenizer(s, &len, err, sizeof err));
    shard_close(s);
    return 0;
}
