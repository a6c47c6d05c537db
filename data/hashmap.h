/* hashmap.h — two small open-addressing hash maps used by the tokenizer (data/ only).
 *
 *   U64Map: uint64 key -> int64 value.  The key UINT64_MAX is reserved (marks an empty slot).
 *   StrMap: byte string -> int64 value.  Keys are copied into an internal pool.
 *
 * Linear probing, power-of-two capacity, grown at 50% load.  No deletion (clear instead).
 * Iteration order depends on insertion history, so callers that need determinism sort.
 */
#ifndef DEBERTA_HASHMAP_H
#define DEBERTA_HASHMAP_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"

#define U64MAP_EMPTY UINT64_MAX

static inline uint64_t hm_mix64(uint64_t x) { /* splitmix64 finaliser */
    x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27; x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static inline uint64_t hm_bytes_hash(const uint8_t *p, size_t n) { /* FNV-1a 64, then mixed */
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 0x100000001b3ull; }
    return hm_mix64(h ^ n);
}

typedef struct {
    uint64_t *keys;
    int64_t *vals;
    size_t cap, len; /* cap is a power of two */
} U64Map;

static inline void u64map_init(U64Map *m, size_t cap_hint) {
    size_t cap = 16;
    while (cap < 2 * cap_hint) cap <<= 1;
    m->cap = cap; m->len = 0;
    m->keys = (uint64_t *)xmalloc(cap * sizeof(uint64_t));
    memset(m->keys, 0xff, cap * sizeof(uint64_t));
    m->vals = (int64_t *)xmalloc(cap * sizeof(int64_t));
}
static inline void u64map_free(U64Map *m) { free(m->keys); free(m->vals); memset(m, 0, sizeof *m); }

/* Pointer to the value slot of key (inserted with value `init` when absent). */
static inline int64_t *u64map_slot(U64Map *m, uint64_t key, int64_t init);
static inline void u64map_grow(U64Map *m) {
    U64Map n;
    u64map_init(&n, m->cap);
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i] != U64MAP_EMPTY) *u64map_slot(&n, m->keys[i], 0) = m->vals[i];
    u64map_free(m);
    *m = n;
}
static inline int64_t *u64map_slot(U64Map *m, uint64_t key, int64_t init) {
    if (2 * (m->len + 1) > m->cap) u64map_grow(m);
    size_t mask = m->cap - 1, i = hm_mix64(key) & mask;
    while (m->keys[i] != U64MAP_EMPTY) {
        if (m->keys[i] == key) return &m->vals[i];
        i = (i + 1) & mask;
    }
    m->keys[i] = key; m->vals[i] = init; m->len++;
    return &m->vals[i];
}
/* Value of key, or `missing` when absent. */
static inline int64_t u64map_get(const U64Map *m, uint64_t key, int64_t missing) {
    size_t mask = m->cap - 1, i = hm_mix64(key) & mask;
    while (m->keys[i] != U64MAP_EMPTY) {
        if (m->keys[i] == key) return m->vals[i];
        i = (i + 1) & mask;
    }
    return missing;
}

typedef struct {
    uint64_t *hashes;   /* 0 = empty slot (real hashes are forced non-zero) */
    uint64_t *offs;     /* key offset in pool */
    uint32_t *lens;
    int64_t *vals;
    size_t cap, len;
    uint8_t *pool;
    size_t pool_len, pool_cap;
} StrMap;

static inline void strmap_init(StrMap *m, size_t cap_hint) {
    size_t cap = 16;
    while (cap < 2 * cap_hint) cap <<= 1;
    m->cap = cap; m->len = 0;
    m->hashes = (uint64_t *)xcalloc(cap, sizeof(uint64_t));
    m->offs = (uint64_t *)xmalloc(cap * sizeof(uint64_t));
    m->lens = (uint32_t *)xmalloc(cap * sizeof(uint32_t));
    m->vals = (int64_t *)xmalloc(cap * sizeof(int64_t));
    m->pool_cap = 1024; m->pool_len = 0;
    m->pool = (uint8_t *)xmalloc(m->pool_cap);
}
static inline void strmap_free(StrMap *m) {
    free(m->hashes); free(m->offs); free(m->lens); free(m->vals); free(m->pool);
    memset(m, 0, sizeof *m);
}
static inline void strmap_clear(StrMap *m) {
    memset(m->hashes, 0, m->cap * sizeof(uint64_t));
    m->len = 0; m->pool_len = 0;
}
static inline const uint8_t *strmap_key(const StrMap *m, size_t slot) { return m->pool + m->offs[slot]; }

static inline size_t strmap_find_slot(const StrMap *m, const uint8_t *k, size_t n, uint64_t h) {
    size_t mask = m->cap - 1, i = h & mask;
    while (m->hashes[i]) {
        if (m->hashes[i] == h && m->lens[i] == n && memcmp(m->pool + m->offs[i], k, n) == 0) return i;
        i = (i + 1) & mask;
    }
    return i;
}
static inline void strmap_grow(StrMap *m) {
    size_t ocap = m->cap;
    uint64_t *oh = m->hashes, *oo = m->offs; uint32_t *ol = m->lens; int64_t *ov = m->vals;
    m->cap = ocap * 2;
    m->hashes = (uint64_t *)xcalloc(m->cap, sizeof(uint64_t));
    m->offs = (uint64_t *)xmalloc(m->cap * sizeof(uint64_t));
    m->lens = (uint32_t *)xmalloc(m->cap * sizeof(uint32_t));
    m->vals = (int64_t *)xmalloc(m->cap * sizeof(int64_t));
    for (size_t i = 0; i < ocap; i++) {
        if (!oh[i]) continue;
        size_t j = oh[i] & (m->cap - 1);
        while (m->hashes[j]) j = (j + 1) & (m->cap - 1);
        m->hashes[j] = oh[i]; m->offs[j] = oo[i]; m->lens[j] = ol[i]; m->vals[j] = ov[i];
    }
    free(oh); free(oo); free(ol); free(ov);
}
/* Pointer to the value of key k[0..n) (inserted with `init` when absent); *inserted set if given. */
static inline int64_t *strmap_slot(StrMap *m, const void *key, size_t n, int64_t init, int *inserted) {
    const uint8_t *k = (const uint8_t *)key;
    uint64_t h = hm_bytes_hash(k, n) | 1;
    size_t i = strmap_find_slot(m, k, n, h);
    if (m->hashes[i]) { if (inserted) *inserted = 0; return &m->vals[i]; }
    if (2 * (m->len + 1) > m->cap) { strmap_grow(m); i = strmap_find_slot(m, k, n, h); }
    if (m->pool_len + n > m->pool_cap) {
        while (m->pool_len + n > m->pool_cap) m->pool_cap *= 2;
        m->pool = (uint8_t *)xrealloc(m->pool, m->pool_cap);
    }
    memcpy(m->pool + m->pool_len, k, n);
    m->hashes[i] = h; m->offs[i] = m->pool_len; m->lens[i] = (uint32_t)n; m->vals[i] = init;
    m->pool_len += n; m->len++;
    if (inserted) *inserted = 1;
    return &m->vals[i];
}
/* Pointer to the value of key, or NULL. */
static inline int64_t *strmap_find(const StrMap *m, const void *key, size_t n) {
    const uint8_t *k = (const uint8_t *)key;
    size_t i = strmap_find_slot(m, k, n, hm_bytes_hash(k, n) | 1);
    return m->hashes[i] ? &m->vals[i] : NULL;
}
#endif
