/* shardutil.h — synthetic tokenizers and shards for the data suites (test_shard, test_loader). */
#ifndef DEBERTA_TESTS_SHARDUTIL_H
#define DEBERTA_TESTS_SHARDUTIL_H
#include "tests/testutil.h"
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "data/shard.h"
#include "data/tokenizer.h"

/* A valid tokenizer file of exactly `vocab` ids, built by hand from the documented layout:
 * one character 'a' (index 0) and merges of all pairs (x, y) of earlier tokens in the order of
 * max(x, y), so that pieces stay short.  malloc'd; *len gets its size. */
static inline uint8_t *test_tokenizer(int vocab, size_t *len) {
    int nm = vocab - TOK_FIRST_CHAR - 1;
    size_t n = 8 + 20 + 2 + 8 * (size_t)nm + 8;
    uint8_t *b = xcalloc(n, 1), *p = b;
    memcpy(p, "DBTOKENZ", 8); p += 8;
    uint32_t hdr[5] = {1, (uint32_t)vocab, 5, 1, (uint32_t)nm};
    for (int i = 0; i < 5; i++) for (int k = 0; k < 4; k++) *p++ = (uint8_t)(hdr[i] >> (8 * k));
    *p++ = 1; *p++ = 'a';
    int r = 0;
    for (uint32_t m = 0; r < nm; m++) {
        for (uint32_t j = 0; j <= 2 * m && r < nm; j++, r++) {
            uint32_t x = j <= m ? j : m, y = j <= m ? m : j - m - 1; /* (0..m, m) then (m, 0..m-1) */
            uint32_t l = TOK_FIRST_CHAR + x, rr = TOK_FIRST_CHAR + y;
            for (int k = 0; k < 4; k++) *p++ = (uint8_t)(l >> (8 * k));
            for (int k = 0; k < 4; k++) *p++ = (uint8_t)(rr >> (8 * k));
        }
    }
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint8_t *q = b; q < p; q++) { h ^= *q; h *= 0x100000001b3ull; }
    for (int k = 0; k < 8; k++) *p++ = (uint8_t)(h >> (8 * k));
    *len = (size_t)(p - b);
    return b;
}

/* Writes the shard `index` of `split` holding n_docs documents (tokens tok, offsets off: n_docs + 1
 * entries), with test_tokenizer(vocab) embedded; a failure fails the test with shard_write's message. */
static inline void test_write_shard(const char *path, int vocab, const char *split, int index, const int32_t *tok, const int64_t *off,
                                    int n_docs) {
    size_t tl;
    uint8_t *tb = test_tokenizer(vocab, &tl);
    ShardInfo info = {vocab, tb, tl, split, index, NULL}; /* NULL: our special ids */
    char err[512];
    const int rc = shard_write(path, tok, off, n_docs, &info, err, sizeof err);
    free(tb);
    if (rc != 0) fail_msg("%s", err);
}
#endif
