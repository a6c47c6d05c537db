/* tokenizer.c — byte-fallback BPE: training, encoding, decoding, file I/O.  See tokenizer.h. */
#include "data/tokenizer.h"
#include "data/hashmap.h"
#include "autograd/base/util.h"
#include <errno.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOK_MAGIC "DBTOKENZ"
#define TOK_VERSION 1u
#define CACHE_MAX_WORD 64            /* words up to this many bytes are cached by the encoder */
#define DEFAULT_LONG_WORD 48         /* words of at least this many bytes use the heap merge loop */

static const char *const SPECIAL_NAMES[TOK_N_SPECIAL] = {"[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"};

struct Tokenizer {
    int vocab_size, n_chars, n_merges;
    uint8_t *char_utf8;      /* [n_chars][4] */
    uint8_t *char_len;       /* [n_chars] */
    int32_t *merge_l, *merge_r;
    /* derived */
    uint8_t *pieces;         /* bytes of every token, concatenated */
    size_t *piece_off;       /* [vocab_size + 1] */
    int32_t ascii_char[128]; /* character token of an ASCII byte, or -1 */
    U64Map char_ids;         /* packed character -> id */
    U64Map merge_rank;       /* (left << 32 | right) -> rank */
    uint8_t *blob;           /* the file bytes */
    size_t blob_len;
    uint64_t hash;
};

static uint64_t fnv1a64(const uint8_t *p, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) { h ^= p[i]; h *= 0x100000001b3ull; }
    return h;
}

/* ---------------------------------------------------------------- bytes, classes, UTF-8 */

enum { CL_L = 0, CL_D = 1, CL_W = 2, CL_P = 3 };

static inline int byte_class(uint8_t c) {
    if (c >= 0x80 || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return CL_L;
    if (c >= '0' && c <= '9') return CL_D;
    if (c == ' ' || (c >= 0x09 && c <= 0x0d)) return CL_W;
    return CL_P;
}

int utf8_valid_len(const uint8_t *p, size_t n) {
    uint8_t c = p[0];
    if (c < 0x80) return 1;
    if (c < 0xC2) return 0;
    if (c < 0xE0) return (n >= 2 && (p[1] & 0xC0) == 0x80) ? 2 : 0;
    if (c < 0xF0) {
        if (n < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && p[1] < 0xA0) return 0;   /* overlong */
        if (c == 0xED && p[1] >= 0xA0) return 0;  /* surrogate */
        return 3;
    }
    if (c < 0xF5) {
        if (n < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
        if (c == 0xF0 && p[1] < 0x90) return 0;   /* overlong */
        if (c == 0xF4 && p[1] >= 0x90) return 0;  /* > U+10FFFF */
        return 4;
    }
    return 0;
}

static inline uint64_t pack_char(const uint8_t *p, int len) {
    uint64_t k = (uint64_t)len << 32;
    for (int i = 0; i < len; i++) k |= (uint64_t)p[i] << (8 * i);
    return k;
}

static inline int is_marker_char(const uint8_t *p, int len) { /* U+2581 */
    return len == 3 && p[0] == 0xE2 && p[1] == 0x96 && p[2] == 0x81;
}

size_t tok_split_words(const uint8_t *t, size_t n, size_t *ends) {
    size_t i = 0, nw = 0;
    while (i < n) {
        int c = byte_class(t[i]);
        size_t j;
        if (t[i] == ' ' && i + 1 < n && byte_class(t[i + 1]) != CL_W) {
            int c2 = byte_class(t[i + 1]);
            j = i + 2;
            while (j < n && byte_class(t[j]) == c2) j++;
        } else if (c == CL_W) {
            j = i + 1;
            while (j < n && byte_class(t[j]) == CL_W && !(t[j] == ' ' && j + 1 < n && byte_class(t[j + 1]) != CL_W)) j++;
        } else {
            j = i + 1;
            while (j < n && byte_class(t[j]) == c) j++;
        }
        ends[nw++] = j;
        i = j;
    }
    return nw;
}

static inline int mergeable(int32_t id) { return id >= TOK_FIRST_CHAR; }

/* Initial symbols of a word: character tokens, byte tokens for everything else.  out has room for n. */
static size_t word_units(const Tokenizer *tk, const uint8_t *w, size_t n, int32_t *out) {
    size_t k = 0, i = 0;
    while (i < n) {
        uint8_t c = w[i];
        if (c < 0x80) {
            int32_t id = tk->ascii_char[c];
            out[k++] = id >= 0 ? id : TOK_BYTE0 + c;
            i++;
            continue;
        }
        int L = utf8_valid_len(w + i, n - i);
        if (L == 0) { out[k++] = TOK_BYTE0 + c; i++; continue; }
        int64_t id = tk->char_ids.cap ? u64map_get(&tk->char_ids, pack_char(w + i, L), -1) : -1;
        if (id >= 0) out[k++] = (int32_t)id;
        else for (int b = 0; b < L; b++) out[k++] = TOK_BYTE0 + w[i + b];
        i += (size_t)L;
    }
    return k;
}

/* ---------------------------------------------------------------- building from the file bytes */

static void put_u32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put_u64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get_u32(const uint8_t *p) { uint32_t v = 0; for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i); return v; }
static uint64_t get_u64(const uint8_t *p) { uint64_t v = 0; for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i); return v; }

/* Serialises an alphabet and merge list (layout in docs/FORMATS.md). */
static uint8_t *serialize(int n_chars, const uint8_t *char_utf8, const uint8_t *char_len, int n_merges,
                          const int32_t *ml, const int32_t *mr, size_t *len_out) {
    size_t len = 8 + 5 * 4 + 8 * (size_t)n_merges + 8;
    for (int i = 0; i < n_chars; i++) len += 1 + char_len[i];
    uint8_t *b = xmalloc(len), *p = b;
    memcpy(p, TOK_MAGIC, 8); p += 8;
    put_u32(p, TOK_VERSION); p += 4;
    put_u32(p, (uint32_t)(TOK_FIRST_CHAR + n_chars + n_merges)); p += 4;
    put_u32(p, TOK_N_SPECIAL); p += 4;
    put_u32(p, (uint32_t)n_chars); p += 4;
    put_u32(p, (uint32_t)n_merges); p += 4;
    for (int i = 0; i < n_chars; i++) {
        *p++ = char_len[i];
        memcpy(p, char_utf8 + 4 * i, char_len[i]); p += char_len[i];
    }
    for (int i = 0; i < n_merges; i++) { put_u32(p, (uint32_t)ml[i]); put_u32(p + 4, (uint32_t)mr[i]); p += 8; }
    put_u64(p, fnv1a64(b, (size_t)(p - b))); p += 8;
    *len_out = (size_t)(p - b);
    return b;
}

Tokenizer *tokenizer_from_bytes(const uint8_t *buf, size_t len, const char *what, char *err, size_t errlen) {
    if (!what) what = "tokenizer";
    if (len == 0) return errf(err, errlen, "%s: " FILE_EMPTY, what), NULL;
    if (len < 8 + 20 + 8 || memcmp(buf, TOK_MAGIC, 8) != 0)
        return errf(err, errlen, "%s: not a deberta.c tokenizer file (bad magic or too short)", what), NULL;
    uint32_t version = get_u32(buf + 8), vocab = get_u32(buf + 12), nspec = get_u32(buf + 16);
    uint32_t nch = get_u32(buf + 20), nm = get_u32(buf + 24);
    if (version != TOK_VERSION) return errf(err, errlen, "%s: tokenizer format version %u, expected %u", what, version, TOK_VERSION), NULL;
    if (get_u64(buf + len - 8) != fnv1a64(buf, len - 8))
        return errf(err, errlen, "%s: checksum mismatch (file truncated or corrupt)", what), NULL;
    if (nspec != TOK_N_SPECIAL || nch > (1u << 22) || nm > (1u << 26) ||
        (uint64_t)vocab != (uint64_t)TOK_FIRST_CHAR + nch + nm) {
        errf(err, errlen, "%s: inconsistent header (vocab %u, %u specials, %u chars, %u merges)", what,
                vocab, nspec, nch, nm);
        return NULL;
    }
    Tokenizer *tk = xcalloc(1, sizeof *tk);
    tk->vocab_size = (int)vocab; tk->n_chars = (int)nch; tk->n_merges = (int)nm;
    tk->char_utf8 = xcalloc(nch ? nch : 1, 4);
    tk->char_len = xcalloc(nch ? nch : 1, 1);
    tk->merge_l = xmalloc((nm ? nm : 1) * sizeof(int32_t));
    tk->merge_r = xmalloc((nm ? nm : 1) * sizeof(int32_t));
    for (int c = 0; c < 128; c++) tk->ascii_char[c] = -1;
    u64map_init(&tk->char_ids, nch);
    u64map_init(&tk->merge_rank, nm);
    const uint8_t *p = buf + 28, *end = buf + len - 8;
    for (uint32_t i = 0; i < nch; i++) {
        if (p >= end) goto truncated;
        int L = *p++;
        if (L < 1 || L > 4 || p + L > end || utf8_valid_len(p, (size_t)L) != L || is_marker_char(p, L)) {
            errf(err, errlen, "%s: character token %u is not one valid UTF-8 character", what, i);
            goto fail;
        }
        int64_t *slot = u64map_slot(&tk->char_ids, pack_char(p, L), -1);
        if (*slot >= 0) { errf(err, errlen, "%s: character token %u is a duplicate", what, i); goto fail; }
        *slot = TOK_FIRST_CHAR + (int64_t)i;
        memcpy(tk->char_utf8 + 4 * i, p, (size_t)L);
        tk->char_len[i] = (uint8_t)L;
        if (L == 1) tk->ascii_char[p[0]] = TOK_FIRST_CHAR + (int32_t)i;
        p += L;
    }
    if ((size_t)(end - p) != 8 * (size_t)nm) goto truncated;
    for (uint32_t r = 0; r < nm; r++, p += 8) {
        uint32_t l = get_u32(p), rr = get_u32(p + 4), limit = TOK_FIRST_CHAR + nch + r;
        if (l < TOK_FIRST_CHAR || rr < TOK_FIRST_CHAR || l >= limit || rr >= limit) {
            errf(err, errlen, "%s: merge %u refers to token ids (%u, %u) outside [%d, %u)", what, r, l, rr,
                    TOK_FIRST_CHAR, limit);
            goto fail;
        }
        int64_t *slot = u64map_slot(&tk->merge_rank, ((uint64_t)l << 32) | rr, -1);
        if (*slot >= 0) { errf(err, errlen, "%s: merge %u duplicates merge %lld", what, r, (long long)*slot); goto fail; }
        *slot = r;
        tk->merge_l[r] = (int32_t)l; tk->merge_r[r] = (int32_t)rr;
    }
    /* pieces */
    tk->piece_off = xmalloc(((size_t)vocab + 1) * sizeof(size_t));
    size_t total = 0;
    size_t *plen = xmalloc((size_t)vocab * sizeof(size_t));
    for (int id = 0; id < (int)vocab; id++) {
        size_t l;
        if (id < TOK_N_SPECIAL) l = strlen(SPECIAL_NAMES[id]);
        else if (id < TOK_FIRST_CHAR) l = 1;
        else if (id < TOK_FIRST_CHAR + (int)nch) l = tk->char_len[id - TOK_FIRST_CHAR];
        else { int r = id - TOK_FIRST_CHAR - (int)nch; l = plen[tk->merge_l[r]] + plen[tk->merge_r[r]]; }
        plen[id] = l;
        tk->piece_off[id] = total;
        total += l;
        if (total > ((size_t)1 << 30)) { /* only a crafted merge chain gets here */
            free(plen);
            errf(err, errlen, "%s: token pieces exceed 1 GiB in total (merge chain too deep)", what);
            goto fail;
        }
    }
    tk->piece_off[vocab] = total;
    tk->pieces = xmalloc(total ? total : 1);
    for (int id = 0; id < (int)vocab; id++) {
        uint8_t *d = tk->pieces + tk->piece_off[id];
        if (id < TOK_N_SPECIAL) memcpy(d, SPECIAL_NAMES[id], plen[id]);
        else if (id < TOK_FIRST_CHAR) d[0] = (uint8_t)(id - TOK_BYTE0);
        else if (id < TOK_FIRST_CHAR + (int)nch) memcpy(d, tk->char_utf8 + 4 * (id - TOK_FIRST_CHAR), plen[id]);
        else {
            int r = id - TOK_FIRST_CHAR - (int)nch, a = tk->merge_l[r], b = tk->merge_r[r];
            memcpy(d, tk->pieces + tk->piece_off[a], plen[a]);
            memcpy(d + plen[a], tk->pieces + tk->piece_off[b], plen[b]);
        }
    }
    free(plen);
    tk->blob = xmalloc(len);
    memcpy(tk->blob, buf, len);
    tk->blob_len = len;
    tk->hash = fnv1a64(buf, len);
    return tk;
truncated:
    errf(err, errlen, "%s: truncated (sections shorter than the header says)", what);
fail:
    tokenizer_free(tk);
    return NULL;
}

void tokenizer_free(Tokenizer *tk) {
    if (!tk) return;
    free(tk->char_utf8); free(tk->char_len); free(tk->merge_l); free(tk->merge_r);
    free(tk->pieces); free(tk->piece_off); free(tk->blob);
    if (tk->char_ids.cap) u64map_free(&tk->char_ids);
    if (tk->merge_rank.cap) u64map_free(&tk->merge_rank);
    free(tk);
}

Tokenizer *tokenizer_load(const char *path, char *err, size_t errlen) {
    size_t len;
    uint8_t *buf = (uint8_t *)read_file(path, &len);
    if (!buf) { errf(err, errlen, "tokenizer %s: cannot open (%s)", path, strerror(errno)); return NULL; }
    char what[1100];
    snprintf(what, sizeof what, "tokenizer %s", path);
    Tokenizer *tk = tokenizer_from_bytes(buf, len, what, err, errlen);
    free(buf);
    return tk;
}

int tokenizer_save(const Tokenizer *tk, const char *path, char *err, size_t errlen) {
    if (write_file_atomic(path, tk->blob, tk->blob_len) != 0) return errf(err, errlen, "%s: write failed (%s)", path, strerror(errno));
    return 0;
}

const uint8_t *tokenizer_bytes(const Tokenizer *tk, size_t *len) { *len = tk->blob_len; return tk->blob; }
uint64_t tokenizer_hash(const Tokenizer *tk) { return tk->hash; }
void tokenizer_hash_bytes(const uint8_t *bytes, size_t n, char out[17]) {
    snprintf(out, 17, "%016llx", (unsigned long long)fnv1a64(bytes, n));
}
void tokenizer_hash_hex(const Tokenizer *tk, char out[17]) { snprintf(out, 17, "%016llx", (unsigned long long)tk->hash); }
int tokenizer_vocab_size(const Tokenizer *tk) { return tk->vocab_size; }
int tokenizer_n_chars(const Tokenizer *tk) { return tk->n_chars; }
int tokenizer_n_merges(const Tokenizer *tk) { return tk->n_merges; }
void tokenizer_merge(const Tokenizer *tk, int rank, int32_t *left, int32_t *right) {
    *left = tk->merge_l[rank]; *right = tk->merge_r[rank];
}
const char *tokenizer_piece(const Tokenizer *tk, int32_t id, size_t *len) {
    if (id < 0 || id >= tk->vocab_size) return NULL;
    *len = tk->piece_off[id + 1] - tk->piece_off[id];
    return (const char *)tk->pieces + tk->piece_off[id];
}

/* ---------------------------------------------------------------- encoding */

static inline int64_t pair_rank(const Tokenizer *tk, int32_t a, int32_t b) {
    if (!mergeable(a) || !mergeable(b)) return -1;
    return u64map_get(&tk->merge_rank, ((uint64_t)(uint32_t)a << 32) | (uint32_t)b, -1);
}

/* Short words: repeatedly find the lowest-rank pair and merge all its occurrences left to right.
 * (A merge's product only forms pairs of higher rank, so this equals one-at-a-time BPE.) */
static size_t bpe_scan(const Tokenizer *tk, int32_t *s, size_t n) {
    const int32_t first_merge = TOK_FIRST_CHAR + tk->n_chars;
    for (;;) {
        int64_t best = INT64_MAX;
        for (size_t i = 0; i + 1 < n; i++) {
            int64_t r = pair_rank(tk, s[i], s[i + 1]);
            if (r >= 0 && r < best) best = r;
        }
        if (best == INT64_MAX) return n;
        int32_t a = tk->merge_l[best], b = tk->merge_r[best], z = first_merge + (int32_t)best;
        size_t o = 0;
        for (size_t i = 0; i < n;) {
            if (i + 1 < n && s[i] == a && s[i + 1] == b) { s[o++] = z; i += 2; }
            else s[o++] = s[i++];
        }
        n = o;
    }
}

/* A binary min-heap of (k, v), smaller k first, then smaller v; grown as needed.  The encoder's holds
 * (merge rank, position), training's (-count, pair key): most frequent first. */
typedef struct { int64_t k; uint64_t v; } HeapEnt;
typedef struct { HeapEnt *h; size_t n, cap; } Heap;

static inline int hent_less(HeapEnt x, HeapEnt y) { return x.k < y.k || (x.k == y.k && x.v < y.v); }
static void hpush(Heap *q, HeapEnt e) {
    if (q->n == q->cap) { q->cap = q->cap ? 2 * q->cap : 1024; q->h = xrealloc(q->h, q->cap * sizeof(HeapEnt)); }
    HeapEnt *h = q->h;
    size_t i = q->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!hent_less(e, h[p])) break;
        h[i] = h[p]; i = p;
    }
    h[i] = e;
}
static HeapEnt hpop(Heap *q) {
    HeapEnt *h = q->h, top = h[0], last = h[--q->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->n) break;
        if (c + 1 < q->n && hent_less(h[c + 1], h[c])) c++;
        if (!hent_less(h[c], last)) break;
        h[i] = h[c]; i = c;
    }
    if (q->n) h[i] = last;
    return top;
}

struct TokEncoder {
    const Tokenizer *tk;
    StrMap cache;                 /* word bytes -> (offset << 20 | count) into cache_ids */
    int32_t *cache_ids; size_t cache_len, cache_cap;
    int32_t *out; size_t out_len, out_cap;
    size_t *ends; size_t ends_cap;
    int32_t *sym; int32_t *prev, *next; size_t sym_cap;
    Heap heap;
    size_t long_word;
};

/* Long words: a min-heap of (rank, position) over a linked list of symbols, O(n log n). */
static size_t bpe_heap(TokEncoder *e, int32_t *s, size_t n) {
    const Tokenizer *tk = e->tk;
    const int32_t first_merge = TOK_FIRST_CHAR + tk->n_chars;
    int32_t *prev = e->prev, *next = e->next;
    Heap *h = &e->heap;
    h->n = 0;
    for (size_t i = 0; i < n; i++) { prev[i] = (int32_t)i - 1; next[i] = i + 1 < n ? (int32_t)i + 1 : -1; }
    for (size_t i = 0; i + 1 < n; i++) {
        int64_t r = pair_rank(tk, s[i], s[i + 1]);
        if (r >= 0) hpush(h, (HeapEnt){r, i});
    }
    while (h->n) {
        HeapEnt t = hpop(h);
        int32_t p = (int32_t)t.v;
        if (s[p] < 0) continue;
        int32_t q = next[p];
        if (q < 0 || pair_rank(tk, s[p], s[q]) != t.k) continue; /* stale entry */
        s[p] = first_merge + (int32_t)t.k;
        s[q] = -1;
        next[p] = next[q];
        if (next[q] >= 0) prev[next[q]] = p;
        if (prev[p] >= 0) {
            int64_t r = pair_rank(tk, s[prev[p]], s[p]);
            if (r >= 0) hpush(h, (HeapEnt){r, (uint64_t)prev[p]});
        }
        if (next[p] >= 0) {
            int64_t r = pair_rank(tk, s[p], s[next[p]]);
            if (r >= 0) hpush(h, (HeapEnt){r, (uint64_t)p});
        }
    }
    size_t o = 0;
    for (int32_t i = 0; i >= 0; i = next[i]) s[o++] = s[i];
    return o;
}

TokEncoder *tok_encoder_new(const Tokenizer *tk) {
    TokEncoder *e = xcalloc(1, sizeof *e);
    e->tk = tk;
    strmap_init(&e->cache, 1 << 12);
    e->cache_cap = 1 << 14;
    e->cache_ids = xmalloc(e->cache_cap * sizeof(int32_t));
    e->long_word = DEFAULT_LONG_WORD;
    return e;
}

void tok_encoder_free(TokEncoder *e) {
    if (!e) return;
    strmap_free(&e->cache);
    free(e->cache_ids); free(e->out); free(e->ends);
    free(e->sym); free(e->prev); free(e->next); free(e->heap.h);
    free(e);
}

void tok_encoder_set_long_word(TokEncoder *e, size_t nbytes) { e->long_word = nbytes ? nbytes : 1; }

static void out_reserve(TokEncoder *e, size_t extra) {
    if (e->out_len + extra <= e->out_cap) return;
    size_t c = e->out_cap ? e->out_cap : 256;
    while (c < e->out_len + extra) c *= 2;
    e->out = xrealloc(e->out, c * sizeof(int32_t));
    e->out_cap = c;
}

/* Encodes one word and appends its ids to e->out. */
static void encode_word(TokEncoder *e, const uint8_t *w, size_t n) {
    int64_t *hit = n <= CACHE_MAX_WORD ? strmap_find(&e->cache, w, n) : NULL;
    if (hit) {
        size_t off = (size_t)(*hit >> 20), cnt = (size_t)(*hit & 0xfffff);
        out_reserve(e, cnt);
        memcpy(e->out + e->out_len, e->cache_ids + off, cnt * sizeof(int32_t));
        e->out_len += cnt;
        return;
    }
    if (n > e->sym_cap) {
        e->sym_cap = n * 2;
        e->sym = xrealloc(e->sym, e->sym_cap * sizeof(int32_t));
        e->prev = xrealloc(e->prev, e->sym_cap * sizeof(int32_t));
        e->next = xrealloc(e->next, e->sym_cap * sizeof(int32_t));
    }
    size_t k = word_units(e->tk, w, n, e->sym);
    k = n >= e->long_word ? bpe_heap(e, e->sym, k) : bpe_scan(e->tk, e->sym, k);
    out_reserve(e, k);
    memcpy(e->out + e->out_len, e->sym, k * sizeof(int32_t));
    e->out_len += k;
    if (n <= CACHE_MAX_WORD) {
        if (e->cache.len >= (1u << 20) || e->cache_len + k > (1u << 26)) { strmap_clear(&e->cache); e->cache_len = 0; }
        if (e->cache_len + k > e->cache_cap) {
            while (e->cache_len + k > e->cache_cap) e->cache_cap *= 2;
            e->cache_ids = xrealloc(e->cache_ids, e->cache_cap * sizeof(int32_t));
        }
        memcpy(e->cache_ids + e->cache_len, e->sym, k * sizeof(int32_t));
        *strmap_slot(&e->cache, w, n, 0, NULL) = (int64_t)((e->cache_len << 20) | k);
        e->cache_len += k;
    }
}

const int32_t *tok_encode(TokEncoder *e, const char *text, size_t len, size_t *n_ids) {
    const uint8_t *t = (const uint8_t *)text;
    if (len > e->ends_cap) {
        e->ends_cap = len + 64;
        e->ends = xrealloc(e->ends, e->ends_cap * sizeof(size_t));
    }
    size_t nw = tok_split_words(t, len, e->ends), start = 0;
    e->out_len = 0;
    for (size_t i = 0; i < nw; i++) {
        encode_word(e, t + start, e->ends[i] - start);
        start = e->ends[i];
    }
    *n_ids = e->out_len;
    return e->out;
}

int32_t *tokenizer_encode(const Tokenizer *tk, const char *text, size_t len, size_t *n_ids) {
    TokEncoder *e = tok_encoder_new(tk);
    const int32_t *ids = tok_encode(e, text, len, n_ids);
    int32_t *r = xmalloc((*n_ids ? *n_ids : 1) * sizeof(int32_t));
    if (*n_ids) memcpy(r, ids, *n_ids * sizeof(int32_t));
    tok_encoder_free(e);
    return r;
}

void tokenizer_encode_batch(const Tokenizer *tk, const char *const *texts, const size_t *lens, size_t n,
                            int32_t **ids, size_t *n_ids) {
#pragma omp parallel
    {
        TokEncoder *e = tok_encoder_new(tk);
#pragma omp for schedule(dynamic, 16)
        for (size_t i = 0; i < n; i++) {
            size_t k;
            const int32_t *r = tok_encode(e, texts[i], lens[i], &k);
            ids[i] = xmalloc((k ? k : 1) * sizeof(int32_t));
            if (k) memcpy(ids[i], r, k * sizeof(int32_t));
            n_ids[i] = k;
        }
        tok_encoder_free(e);
    }
}

char *tokenizer_decode(const Tokenizer *tk, const int32_t *ids, size_t n, size_t *len) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] >= 0 && ids[i] < tk->vocab_size) total += tk->piece_off[ids[i] + 1] - tk->piece_off[ids[i]];
    char *out = xmalloc(total + 1), *p = out;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= tk->vocab_size) continue;
        size_t l = tk->piece_off[ids[i] + 1] - tk->piece_off[ids[i]];
        memcpy(p, tk->pieces + tk->piece_off[ids[i]], l);
        p += l;
    }
    *p = 0;
    if (len) *len = total;
    return out;
}

/* ---------------------------------------------------------------- training */

void tok_train_config_default(TokTrainConfig *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->vocab_size = 8192;
    cfg->char_coverage = 0.9995;
    cfg->max_chars = 0;
    cfg->min_pair_count = 2;
}

typedef struct { int32_t *v; int32_t n, cap; } IVec;
static inline void ivec_push(IVec *a, int32_t x) {
    if (a->n == a->cap) { a->cap = a->cap ? 2 * a->cap : 4; a->v = xrealloc(a->v, (size_t)a->cap * sizeof(int32_t)); }
    a->v[a->n++] = x;
}

typedef struct {
    U64Map index;       /* pair key -> pair number */
    uint64_t *key;
    int64_t *count;
    IVec *words;        /* words that contain (or once contained) the pair; may repeat */
    int32_t *stamp;     /* last merge number at which the pair was queued for a heap push */
    size_t n, cap;
    int32_t *touched; size_t n_touched, cap_touched;
} PairStats;

static size_t pair_id(PairStats *ps, uint64_t key) {
    int64_t *slot = u64map_slot(&ps->index, key, -1);
    if (*slot >= 0) return (size_t)*slot;
    if (ps->n == ps->cap) {
        ps->cap = ps->cap ? 2 * ps->cap : 1 << 14;
        ps->key = xrealloc(ps->key, ps->cap * sizeof(uint64_t));
        ps->count = xrealloc(ps->count, ps->cap * sizeof(int64_t));
        ps->words = xrealloc(ps->words, ps->cap * sizeof(IVec));
        ps->stamp = xrealloc(ps->stamp, ps->cap * sizeof(int32_t));
    }
    size_t i = ps->n++;
    ps->key[i] = key; ps->count[i] = 0; ps->words[i] = (IVec){0}; ps->stamp[i] = -1;
    *slot = (int64_t)i;
    return i;
}

static inline uint64_t pkey(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

static void pair_add(PairStats *ps, int32_t a, int32_t b, int64_t delta, int32_t word, int32_t merge_no) {
    size_t i = pair_id(ps, pkey(a, b));
    ps->count[i] += delta;
    if (delta > 0) {
        IVec *wv = &ps->words[i];
        if (wv->n == 0 || wv->v[wv->n - 1] != word) ivec_push(wv, word);
        if (ps->stamp[i] != merge_no) {
            ps->stamp[i] = merge_no;
            if (ps->n_touched == ps->cap_touched) {
                ps->cap_touched = ps->cap_touched ? 2 * ps->cap_touched : 256;
                ps->touched = xrealloc(ps->touched, ps->cap_touched * sizeof(int32_t));
            }
            ps->touched[ps->n_touched++] = (int32_t)i;
        }
    }
}

typedef struct { uint64_t key; int64_t count; } CharCount;
static int cmp_charcount(const void *x, const void *y) {
    const CharCount *a = x, *b = y;
    if (a->count != b->count) return a->count > b->count ? -1 : 1;
    return a->key < b->key ? -1 : a->key > b->key;
}

static void progress(const TokTrainConfig *cfg, const char *stage, double f) {
    if (cfg->progress) cfg->progress(stage, f, cfg->progress_ctx);
}

/* The unique words of the documents with their counts: per-thread maps, summed into maps[0] (the
 * others are freed; the caller frees maps[0] and the array). */
static StrMap *count_words(const char *const *docs, const size_t *lens, size_t n_docs) {
    int nt = omp_get_max_threads();
    StrMap *maps = xcalloc((size_t)nt, sizeof(StrMap));
#pragma omp parallel num_threads(nt)
    {
        StrMap *m = &maps[omp_get_thread_num()];
        strmap_init(m, 1 << 14);
        size_t *ends = NULL, ecap = 0;
#pragma omp for schedule(dynamic, 64)
        for (size_t d = 0; d < n_docs; d++) {
            if (lens[d] > ecap) { ecap = lens[d] + 64; ends = xrealloc(ends, ecap * sizeof(size_t)); }
            const uint8_t *t = (const uint8_t *)docs[d];
            size_t nw = tok_split_words(t, lens[d], ends), s = 0;
            for (size_t i = 0; i < nw; i++) {
                (*strmap_slot(m, t + s, ends[i] - s, 0, NULL))++;
                s = ends[i];
            }
        }
        free(ends);
    }
    StrMap *W = &maps[0];
    for (int t = 1; t < nt; t++) {
        for (size_t i = 0; i < maps[t].cap; i++)
            if (maps[t].hashes[i])
                *strmap_slot(W, strmap_key(&maps[t], i), maps[t].lens[i], 0, NULL) += maps[t].vals[i];
        strmap_free(&maps[t]);
    }
    return maps;
}

/* The alphabet: characters by frequency (count desc, packed bytes asc), up to the coverage and
 * the budget.  *char_utf8 gets 4 bytes per character, *char_len their lengths; returns the count. */
static int choose_alphabet(const StrMap *W, const size_t *wslot, size_t nwords, const TokTrainConfig *cfg, uint8_t **char_utf8_out,
                           uint8_t **char_len_out) {
    U64Map cc;
    u64map_init(&cc, 1024);
    int64_t total_chars = 0;
    for (size_t w = 0; w < nwords; w++) {
        const uint8_t *p = strmap_key(W, wslot[w]);
        size_t n = W->lens[wslot[w]];
        int64_t c = W->vals[wslot[w]];
        for (size_t i = 0; i < n;) {
            int L = utf8_valid_len(p + i, n - i);
            if (L == 0) { i++; continue; }
            if (!is_marker_char(p + i, L)) { *u64map_slot(&cc, pack_char(p + i, L), 0) += c; total_chars += c; }
            i += (size_t)L;
        }
    }
    CharCount *chars = xmalloc((cc.len ? cc.len : 1) * sizeof(CharCount));
    size_t nc = 0;
    for (size_t i = 0; i < cc.cap; i++) if (cc.keys[i] != U64MAP_EMPTY) chars[nc++] = (CharCount){cc.keys[i], cc.vals[i]};
    u64map_free(&cc);
    qsort(chars, nc, sizeof(CharCount), cmp_charcount);
    int budget = cfg->vocab_size - TOK_FIRST_CHAR;
    int max_chars = cfg->max_chars > 0 ? cfg->max_chars : budget / 2;
    if (max_chars > budget) max_chars = budget;
    if (max_chars < 1) max_chars = budget;
    int n_chars = 0;
    int64_t cum = 0;
    while ((size_t)n_chars < nc && n_chars < max_chars && (double)cum < cfg->char_coverage * (double)total_chars) {
        cum += chars[n_chars].count;
        n_chars++;
    }
    uint8_t *char_utf8 = xcalloc((size_t)(n_chars ? n_chars : 1), 4), *char_len = xcalloc((size_t)(n_chars ? n_chars : 1), 1);
    for (int i = 0; i < n_chars; i++) {
        uint64_t k = chars[i].key;
        char_len[i] = (uint8_t)(k >> 32);
        for (int b = 0; b < char_len[i]; b++) char_utf8[4 * i + b] = (uint8_t)(k >> (8 * b));
    }
    free(chars);
    *char_utf8_out = char_utf8;
    *char_len_out = char_len;
    return n_chars;
}

/* Replaces every (a, b) in the symbols s[0..n) of word w (count c) by z, moving the counts of the
 * neighbouring pairs and of (a, b) itself (entry pi; pair_add may grow the arrays, so by index).
 * Returns the new length. */
static int32_t merge_word(PairStats *ps, int32_t *s, int32_t n, int64_t c, int32_t w, int32_t a, int32_t b, int32_t z, int32_t merge_no,
                          size_t pi) {
    int32_t o = 0;
    for (int32_t i = 0; i < n;) {
        if (i + 1 < n && s[i] == a && s[i + 1] == b) {
            if (o > 0 && mergeable(s[o - 1])) {
                pair_add(ps, s[o - 1], a, -c, w, merge_no);
                pair_add(ps, s[o - 1], z, c, w, merge_no);
            }
            if (i + 2 < n && mergeable(s[i + 2])) {
                pair_add(ps, b, s[i + 2], -c, w, merge_no);
                pair_add(ps, z, s[i + 2], c, w, merge_no);
            }
            ps->count[pi] -= c;
            s[o++] = z;
            i += 2;
        } else {
            s[o++] = s[i++];
        }
    }
    return o;
}

Tokenizer *tokenizer_train(const char *const *docs, const size_t *lens, size_t n_docs,
                           const TokTrainConfig *cfg, char *err, size_t errlen) {
    if (cfg->vocab_size < TOK_FIRST_CHAR + 1 || cfg->vocab_size > (1 << 24))
        return errf(err, errlen, "vocab size %d out of range [%d, %d]", cfg->vocab_size, TOK_FIRST_CHAR + 1, 1 << 24), NULL;
    /* 1. unique words with counts */
    StrMap *maps = count_words(docs, lens, n_docs);
    StrMap *W = &maps[0];
    progress(cfg, "counting words", 1.0);

    /* unique words as (offset, length, count) */
    size_t nwords = W->len, total_units = 0;
    size_t *wslot = xmalloc((nwords ? nwords : 1) * sizeof(size_t));
    {
        size_t k = 0;
        for (size_t i = 0; i < W->cap; i++) if (W->hashes[i]) { wslot[k++] = i; total_units += W->lens[i]; }
    }

    /* 2. alphabet */
    uint8_t *char_utf8, *char_len;
    const int n_chars = choose_alphabet(W, wslot, nwords, cfg, &char_utf8, &char_len);

    /* a merge-less tokenizer over this alphabet gives the initial symbols */
    size_t blen;
    uint8_t *blob = serialize(n_chars, char_utf8, char_len, 0, NULL, NULL, &blen);
    Tokenizer *base = tokenizer_from_bytes(blob, blen, "tokenizer (training)", err, errlen);
    free(blob);
    if (!base) fatal("internal: %s", err ? err : "alphabet");

    /* 3. symbols of every unique word */
    int32_t *sym = xmalloc((total_units ? total_units : 1) * sizeof(int32_t));
    size_t *woff = xmalloc((nwords ? nwords : 1) * sizeof(size_t));
    int32_t *wlen = xmalloc((nwords ? nwords : 1) * sizeof(int32_t));
    int64_t *wcnt = xmalloc((nwords ? nwords : 1) * sizeof(int64_t));
    int32_t *wstamp = xmalloc((nwords ? nwords : 1) * sizeof(int32_t));
    {
        size_t off = 0;
        for (size_t w = 0; w < nwords; w++) {
            woff[w] = off;
            wlen[w] = (int32_t)word_units(base, strmap_key(W, wslot[w]), W->lens[wslot[w]], sym + off);
            wcnt[w] = W->vals[wslot[w]];
            wstamp[w] = -1;
            off += W->lens[wslot[w]];
        }
    }
    free(wslot);
    strmap_free(W);
    free(maps);
    tokenizer_free(base);

    /* 4. pair statistics and the heap */
    PairStats ps = {0};
    u64map_init(&ps.index, 1 << 16);
    for (size_t w = 0; w < nwords; w++) {
        int32_t *s = sym + woff[w];
        for (int32_t i = 0; i + 1 < wlen[w]; i++)
            if (mergeable(s[i]) && mergeable(s[i + 1])) pair_add(&ps, s[i], s[i + 1], wcnt[w], (int32_t)w, -2);
    }
    Heap q = {0}; /* (-count, pair key): the most frequent pair first, then the smaller key (left id, then right id) */
    for (size_t i = 0; i < ps.n; i++) if (ps.count[i] > 0) hpush(&q, (HeapEnt){-ps.count[i], ps.key[i]});
    ps.n_touched = 0;

    /* 5. merges */
    int target = cfg->vocab_size - TOK_FIRST_CHAR - n_chars;
    int32_t *ml = xmalloc((size_t)(target > 0 ? target : 1) * sizeof(int32_t));
    int32_t *mr = xmalloc((size_t)(target > 0 ? target : 1) * sizeof(int32_t));
    int n_merges = 0;
    const int32_t first_merge = TOK_FIRST_CHAR + n_chars;
    int min_count = cfg->min_pair_count > 0 ? cfg->min_pair_count : 1;
    int report_every = target / 100 > 0 ? target / 100 : 1;
    while (n_merges < target && q.n) {
        HeapEnt top = hpop(&q);
        size_t pi = (size_t)u64map_get(&ps.index, top.v, -1);
        int64_t cur = ps.count[pi];
        if (cur != -top.k) { if (cur > 0) hpush(&q, (HeapEnt){-cur, top.v}); continue; }
        if (cur < min_count) break;
        int32_t a = (int32_t)(top.v >> 32), b = (int32_t)(top.v & 0xffffffffu), z = first_merge + n_merges;
        ml[n_merges] = a; mr[n_merges] = b;
        IVec list = ps.words[pi];
        ps.words[pi] = (IVec){0};
        for (int32_t k = 0; k < list.n; k++) {
            int32_t w = list.v[k];
            if (wstamp[w] == n_merges) continue;
            wstamp[w] = n_merges;
            wlen[w] = merge_word(&ps, sym + woff[w], wlen[w], wcnt[w], w, a, b, z, n_merges, pi);
        }
        free(list.v);
        for (size_t t = 0; t < ps.n_touched; t++) {
            int32_t j = ps.touched[t];
            if (ps.count[j] > 0) hpush(&q, (HeapEnt){-ps.count[j], ps.key[j]});
        }
        ps.n_touched = 0;
        n_merges++;
        if (n_merges % report_every == 0) progress(cfg, "merging", (double)n_merges / target);
    }
    progress(cfg, "merging", 1.0);

    for (size_t i = 0; i < ps.n; i++) free(ps.words[i].v);
    free(ps.words); free(ps.key); free(ps.count); free(ps.stamp); free(ps.touched);
    u64map_free(&ps.index);
    free(q.h);
    free(sym); free(woff); free(wlen); free(wcnt); free(wstamp);

    blob = serialize(n_chars, char_utf8, char_len, n_merges, ml, mr, &blen);
    free(char_utf8); free(char_len); free(ml); free(mr);
    Tokenizer *tk = tokenizer_from_bytes(blob, blen, "tokenizer (trained)", err, errlen);
    free(blob);
    return tk;
}

/* ---------------------------------------------------------------- Hugging Face tokenizer.json */

/* JSON string body of token id's name: specials by name, byte tokens <0xNN>, others their text with
 * ' ' shown as U+2581. */
static void json_token_name(FILE *f, const Tokenizer *tk, int32_t id) {
    if (id < TOK_N_SPECIAL) { fputs(SPECIAL_NAMES[id], f); return; }
    if (id < TOK_FIRST_CHAR) { fprintf(f, "<0x%02X>", id - TOK_BYTE0); return; }
    size_t n = 0;
    const uint8_t *p = (const uint8_t *)tokenizer_piece(tk, id, &n);
    for (size_t i = 0; i < n; i++) {
        uint8_t c = p[i];
        if (c == ' ') fputs("\xE2\x96\x81", f);
        else if (c == '"') fputs("\\\"", f);
        else if (c == '\\') fputs("\\\\", f);
        else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        uint8_t c = (uint8_t)*s;
        if (c == '"') fputs("\\\"", f);
        else if (c == '\\') fputs("\\\\", f);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

int tokenizer_write_hf_json(const Tokenizer *tk, const char *path, char *err, size_t errlen) {
    AtomicFile af;
    if (atomic_open(&af, path) != 0) return errf(err, errlen, "%s.tmp: cannot create (%s)", path, strerror(errno));
    FILE *f = af.f;
    /* The pre-tokenizer regex reproduces tok_split_words on text whose spaces are already U+2581. */
    const char *regex =
        "\xE2\x96\x81?[A-Za-z\\x{80}-\\x{2580}\\x{2582}-\\x{10FFFF}]+"
        "|\xE2\x96\x81?[0-9]+"
        "|\xE2\x96\x81?[\\x{0}-\\x{8}\\x{E}-\\x{1F}!-/:-@\\[-`{-~\\x{7F}]+"
        "|(?:[\\t-\\r]|\xE2\x96\x81(?![^\\t-\\r\xE2\x96\x81]))+";
    fputs("{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [\n", f);
    for (int i = 0; i < TOK_N_SPECIAL; i++)
        fprintf(f, "    {\"id\": %d, \"content\": \"%s\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
                   "\"normalized\": false, \"special\": true}%s\n", i, SPECIAL_NAMES[i], i + 1 < TOK_N_SPECIAL ? "," : "");
    fputs("  ],\n", f);
    fputs("  \"normalizer\": {\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\xE2\x96\x81\"},\n", f);
    fputs("  \"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": ", f);
    json_str(f, regex);
    fputs("}, \"behavior\": \"Isolated\", \"invert\": false},\n", f);
    fputs("  \"post_processor\": {\"type\": \"TemplateProcessing\",\n"
          "    \"single\": [{\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, "
          "{\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 0}}],\n"
          "    \"pair\": [{\"SpecialToken\": {\"id\": \"[CLS]\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, "
          "{\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 0}}, {\"Sequence\": {\"id\": \"B\", \"type_id\": 1}}, "
          "{\"SpecialToken\": {\"id\": \"[SEP]\", \"type_id\": 1}}],\n"
          "    \"special_tokens\": {\"[CLS]\": {\"id\": \"[CLS]\", \"ids\": [1], \"tokens\": [\"[CLS]\"]}, "
          "\"[SEP]\": {\"id\": \"[SEP]\", \"ids\": [2], \"tokens\": [\"[SEP]\"]}}},\n", f);
    fputs("  \"decoder\": {\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", \"pattern\": {\"String\": \"\xE2\x96\x81\"}, "
          "\"content\": \" \"}, {\"type\": \"ByteFallback\"}, {\"type\": \"Fuse\"}]},\n", f);
    fputs("  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": \"[UNK]\", \"continuing_subword_prefix\": null, "
          "\"end_of_word_suffix\": null, \"fuse_unk\": false, \"byte_fallback\": true, \"ignore_merges\": false,\n    \"vocab\": {", f);
    for (int32_t id = 0; id < tk->vocab_size; id++) {
        fputs(id ? ",\n      \"" : "\n      \"", f);
        json_token_name(f, tk, id);
        fprintf(f, "\": %d", id);
    }
    fputs("\n    },\n    \"merges\": [", f);
    for (int r = 0; r < tk->n_merges; r++) {
        fputs(r ? ",\n      \"" : "\n      \"", f);
        json_token_name(f, tk, tk->merge_l[r]);
        fputc(' ', f);
        json_token_name(f, tk, tk->merge_r[r]);
        fputc('"', f);
    }
    fputs("\n    ]\n  }\n}\n", f);
    if (atomic_commit(&af) != 0) return errf(err, errlen, "%s: write failed (%s)", path, strerror(errno));
    return 0;
}
