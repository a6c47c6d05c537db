/* spm.c — see spm.h.  The semantics follow sentencepiece's normalizer.cc, unigram_model.cc
 * (EncodeOptimized), model_interface.cc and sentencepiece_processor.cc (Apache-2.0), read for
 * behaviour only; tests/e2e-spm.sh compares ids with python3-sentencepiece. */
#include "data/spm.h"
#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "data/hashmap.h"
#include "data/tokenizer.h"

/* ---- a byte trie (pieces; user-defined pieces) ---- */

typedef struct {
    U64Map edges;   /* (node << 8 | byte) -> child node */
    int32_t *value; /* per node: piece id, or -1 */
    int n, cap;
} Trie;

static void trie_init(Trie *t) {
    u64map_init(&t->edges, 1024);
    t->cap = 1024;
    t->value = xmalloc((size_t)t->cap * sizeof(int32_t));
    t->n = 1;
    t->value[0] = -1;
}
static void trie_free(Trie *t) {
    u64map_free(&t->edges);
    free(t->value);
}
static void trie_insert(Trie *t, const uint8_t *s, size_t len, int32_t id) {
    int64_t node = 0;
    for (size_t i = 0; i < len; i++) {
        int64_t *slot = u64map_slot(&t->edges, ((uint64_t)node << 8) | s[i], -1);
        if (*slot < 0) {
            if (t->n == t->cap) {
                t->cap *= 2;
                t->value = xrealloc(t->value, (size_t)t->cap * sizeof(int32_t));
            }
            t->value[t->n] = -1;
            *slot = t->n++;
        }
        node = *slot;
    }
    t->value[node] = id;
}
static inline int64_t trie_child(const Trie *t, int64_t node, uint8_t b) {
    return u64map_get(&t->edges, ((uint64_t)node << 8) | b, -1);
}

/* ---- the model ---- */

struct SpmModel {
    uint8_t *file;
    size_t file_len;
    int n;            /* pieces */
    char **piece;     /* NUL-terminated copies (pieces never contain NUL: checked) */
    uint32_t *plen;
    float *score;
    uint8_t *type;
    StrMap ids;       /* piece -> id */
    Trie trie;        /* NORMAL, USER_DEFINED, UNUSED pieces (sentencepiece's pieces_) */
    Trie user;        /* USER_DEFINED pieces only (the normaliser's prefix matcher) */
    int n_user;
    int32_t byte_id[256];
    float min_score, max_score;
    /* trainer spec */
    int model_type, byte_fallback, ws_suffix;
    int unk_id, bos_id, eos_id, pad_id;
    /* normalizer spec */
    char *norm_name;
    int add_dummy_prefix, remove_extra_ws, escape_ws;
    uint32_t *da;     /* double-array units (copied: aligned) */
    size_t n_da;
    const char *repl; /* replacement strings blob */
    size_t n_repl;
};

/* ---- protobuf wire format ---- */

typedef struct {
    const uint8_t *p, *end;
} Pb;
typedef struct {
    uint32_t field;
    int wire;
    uint64_t v;          /* varint / fixed value */
    const uint8_t *data; /* length-delimited payload */
    size_t len;
} PbField;

static int pb_varint(Pb *b, uint64_t *v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end) return -1;
        uint8_t c = *b->p++;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}
/* 1: a field was read; 0: end of message; -1: malformed (message in err). */
static int pb_next(Pb *b, PbField *f, const char *msg, char *err, size_t errlen) {
    if (b->p == b->end) return 0;
    uint64_t key;
    if (pb_varint(b, &key)) goto trunc;
    f->field = (uint32_t)(key >> 3);
    f->wire = (int)(key & 7);
    if (f->field == 0) return errf(err, errlen, "%s: field number 0 (not a SentencePiece model file?)", msg);
    switch (f->wire) {
    case 0:
        if (pb_varint(b, &f->v)) goto trunc;
        return 1;
    case 1: /* fixed64 */
    case 5: { /* fixed32 */
        const int w = f->wire == 1 ? 8 : 4;
        if (b->end - b->p < w) goto trunc;
        f->v = 0;
        for (int i = 0; i < w; i++) f->v |= (uint64_t)b->p[i] << (8 * i);
        b->p += w;
        return 1;
    }
    case 2: {
        uint64_t n;
        if (pb_varint(b, &n)) goto trunc;
        if (n > (uint64_t)(b->end - b->p)) goto trunc;
        f->data = b->p;
        f->len = (size_t)n;
        b->p += n;
        return 1;
    }
    default:
        snprintf(err, errlen, "%s: field %u has wire type %d, which this reader does not know (not a SentencePiece model file?)",
                 msg, f->field, f->wire);
        return -1;
    }
trunc:
    snprintf(err, errlen, "%s: the protobuf data ends inside a field (truncated file?)", msg);
    return -1;
}
static int expect_wire(const PbField *f, int wire, const char *msg, const char *name, char *err, size_t errlen) {
    if (f->wire == wire) return 0;
    snprintf(err, errlen, "%s: field %s (%u) has wire type %d, expected %d", msg, name, f->field, f->wire, wire);
    return -1;
}
static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static int32_t as_i32(uint64_t v) { return (int32_t)(uint32_t)v; } /* proto int32: sign-extended varint */
static float as_f32(uint64_t v) {
    uint32_t u = (uint32_t)v;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

static int parse_piece(SpmModel *m, const uint8_t *d, size_t n, int idx, const char *what, char *err, size_t errlen) {
    Pb b = {d, d + n};
    PbField f;
    int r;
    char msg[1200];
    snprintf(msg, sizeof msg, "sentencepiece model %.1000s: piece %d", what, idx);
    const uint8_t *s = NULL;
    size_t slen = 0;
    int have = 0;
    float score = 0;
    int type = SPM_NORMAL;
    while ((r = pb_next(&b, &f, msg, err, errlen)) == 1) {
        if (f.field == 1) {
            if (expect_wire(&f, 2, msg, "piece", err, errlen)) return -1;
            s = f.data, slen = f.len, have = 1;
        } else if (f.field == 2) {
            if (expect_wire(&f, 5, msg, "score", err, errlen)) return -1;
            score = as_f32(f.v);
        } else if (f.field == 3) {
            if (expect_wire(&f, 0, msg, "type", err, errlen)) return -1;
            type = (int)f.v;
            if (type < 1 || type > 6) return errf(err, errlen, "%s: unknown piece type %d", msg, type);
        }
    }
    if (r < 0) return -1;
    if (!have || slen == 0) return errf(err, errlen, "%s: empty piece", msg);
    if (memchr(s, 0, slen)) return errf(err, errlen, "%s: the piece contains a NUL byte", msg);
    m->piece[idx] = xmalloc(slen + 1);
    memcpy(m->piece[idx], s, slen);
    m->piece[idx][slen] = 0;
    m->plen[idx] = (uint32_t)slen;
    m->score[idx] = score;
    m->type[idx] = (uint8_t)type;
    return 0;
}

static int parse_trainer(SpmModel *m, const uint8_t *d, size_t n, const char *msg, char *err, size_t errlen) {
    Pb b = {d, d + n};
    PbField f;
    int r;
    while ((r = pb_next(&b, &f, msg, err, errlen)) == 1) {
        int *dst = NULL;
        const char *name = NULL;
        switch (f.field) {
        case 3: dst = &m->model_type, name = "model_type"; break;
        case 24: dst = &m->ws_suffix, name = "treat_whitespace_as_suffix"; break;
        case 35: dst = &m->byte_fallback, name = "byte_fallback"; break;
        case 40: dst = &m->unk_id, name = "unk_id"; break;
        case 41: dst = &m->bos_id, name = "bos_id"; break;
        case 42: dst = &m->eos_id, name = "eos_id"; break;
        case 43: dst = &m->pad_id, name = "pad_id"; break;
        default: continue;
        }
        if (expect_wire(&f, 0, msg, name, err, errlen)) return -1;
        *dst = as_i32(f.v);
    }
    return r < 0 ? -1 : 0;
}

static int parse_normalizer(SpmModel *m, const uint8_t *d, size_t n, const char *msg, char *err, size_t errlen,
                            const uint8_t **charsmap, size_t *charsmap_len) {
    Pb b = {d, d + n};
    PbField f;
    int r;
    while ((r = pb_next(&b, &f, msg, err, errlen)) == 1) {
        if (f.field == 1 || f.field == 2) {
            if (expect_wire(&f, 2, msg, f.field == 1 ? "name" : "precompiled_charsmap", err, errlen)) return -1;
            if (f.field == 1) {
                free(m->norm_name);
                m->norm_name = xmalloc(f.len + 1);
                memcpy(m->norm_name, f.data, f.len);
                m->norm_name[f.len] = 0;
            } else {
                *charsmap = f.data;
                *charsmap_len = f.len;
            }
        } else if (f.field >= 3 && f.field <= 5) {
            if (expect_wire(&f, 0, msg, "a flag", err, errlen)) return -1;
            int v = f.v != 0;
            if (f.field == 3) m->add_dummy_prefix = v;
            else if (f.field == 4) m->remove_extra_ws = v;
            else m->escape_ws = v;
        }
    }
    return r < 0 ? -1 : 0;
}

/* The charsmap: uint32 little-endian size S of the trie, S bytes of double-array units, then the
 * replacement strings.  Returns 0 or -1 with a message. */
static int load_charsmap(SpmModel *m, const uint8_t *c, size_t n, const char *msg, char *err, size_t errlen) {
    if (n <= 4) return errf(err, errlen, "%s: precompiled_charsmap has %zu bytes, too short", msg, n);
    uint32_t s = le32(c);
    if ((size_t)s >= n - 4 + 1 || s % 4 != 0 || s == 0)
        return errf(err, errlen, "%s: precompiled_charsmap declares a trie of %u bytes in a blob of %zu", msg, s, n);
    m->n_da = s / 4;
    m->da = xmalloc(s);
    for (size_t i = 0; i < m->n_da; i++) m->da[i] = le32(c + 4 + 4 * i);
    m->repl = (const char *)(c + 4 + s); /* points into m->file */
    m->n_repl = n - 4 - s;
    return 0;
}

void spm_free(SpmModel *m) {
    if (!m) return;
    for (int i = 0; i < m->n; i++) free(m->piece ? m->piece[i] : NULL);
    free(m->piece);
    free(m->plen);
    free(m->score);
    free(m->type);
    if (m->ids.hashes) strmap_free(&m->ids);
    if (m->trie.value) trie_free(&m->trie);
    if (m->user.value) trie_free(&m->user);
    free(m->norm_name);
    free(m->da);
    free(m->file);
    free(m);
}

static SpmModel *fail(SpmModel *m) {
    spm_free(m);
    return NULL;
}

/* The value of a hex digit (either case), or -1. */
static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

SpmModel *spm_from_bytes(const uint8_t *buf, size_t len, const char *what, char *err, size_t errlen) {
    SpmModel *m = xcalloc(1, sizeof *m);
    m->file = xmalloc(len ? len : 1);
    memcpy(m->file, buf, len);
    m->file_len = len;
    /* proto2 defaults */
    m->model_type = 1;
    m->unk_id = 0, m->bos_id = 1, m->eos_id = 2, m->pad_id = -1;
    m->add_dummy_prefix = m->remove_extra_ws = m->escape_ws = 1;
    char msg[1100], tmsg[1200], nmsg[1200]; /* the model; its trainer_spec; its normalizer_spec */
    snprintf(msg, sizeof msg, "sentencepiece model %.1000s", what);
    snprintf(tmsg, sizeof tmsg, "%s: trainer_spec", msg);
    snprintf(nmsg, sizeof nmsg, "%s: normalizer_spec", msg);
    if (len == 0) return errf(err, errlen, "%s: " FILE_EMPTY, msg), fail(m);

    /* pass 1: count pieces; pass 2: read them and the specs */
    Pb b = {m->file, m->file + len};
    PbField f;
    int r, n = 0;
    while ((r = pb_next(&b, &f, msg, err, errlen)) == 1)
        if (f.field == 1) {
            if (expect_wire(&f, 2, msg, "pieces", err, errlen)) return fail(m);
            n++;
        }
    if (r < 0) return fail(m);
    if (n == 0) return errf(err, errlen, "%s: no pieces (not a SentencePiece model file?)", msg), fail(m);
    m->piece = xcalloc((size_t)n, sizeof(char *));
    m->plen = xcalloc((size_t)n, sizeof(uint32_t));
    m->score = xcalloc((size_t)n, sizeof(float));
    m->type = xcalloc((size_t)n, 1);
    m->n = n;
    const uint8_t *charsmap = NULL;
    size_t charsmap_len = 0;
    b = (Pb){m->file, m->file + len};
    int idx = 0;
    while ((r = pb_next(&b, &f, msg, err, errlen)) == 1) {
        if (f.field == 1) {
            if (parse_piece(m, f.data, f.len, idx++, what, err, errlen)) return fail(m);
        } else if (f.field == 2) {
            if (expect_wire(&f, 2, msg, "trainer_spec", err, errlen)) return fail(m);
            if (parse_trainer(m, f.data, f.len, tmsg, err, errlen)) return fail(m);
        } else if (f.field == 3) {
            if (expect_wire(&f, 2, msg, "normalizer_spec", err, errlen)) return fail(m);
            if (parse_normalizer(m, f.data, f.len, nmsg, err, errlen, &charsmap, &charsmap_len)) return fail(m);
        }
    }
    if (r < 0) return fail(m);
    if (m->model_type != 1) {
        static const char *names[] = {"?", "UNIGRAM", "BPE", "WORD", "CHAR"};
        snprintf(err, errlen, "%s: model_type is %s; only unigram models are supported", msg,
                 m->model_type >= 1 && m->model_type <= 4 ? names[m->model_type] : "unknown");
        return fail(m);
    }
    if (charsmap_len > 0 && load_charsmap(m, charsmap, charsmap_len, nmsg, err, errlen)) return fail(m);

    /* vocabulary */
    strmap_init(&m->ids, (size_t)n);
    trie_init(&m->trie);
    trie_init(&m->user);
    m->min_score = FLT_MAX;
    m->max_score = FLT_MIN; /* sentencepiece's start value: the smallest positive float, not -FLT_MAX */
    int n_unk = 0;
    for (int i = 0; i < 256; i++) m->byte_id[i] = -1;
    for (int i = 0; i < n; i++) {
        int ins = 0;
        strmap_slot(&m->ids, m->piece[i], m->plen[i], i, &ins);
        if (!ins) return errf(err, errlen, "%s: piece %d '%s' is defined twice", msg, i, m->piece[i]), fail(m);
        int t = m->type[i];
        if (t == SPM_NORMAL) {
            if (m->score[i] < m->min_score) m->min_score = m->score[i];
            if (m->score[i] > m->max_score) m->max_score = m->score[i];
        }
        if (t == SPM_NORMAL || t == SPM_USER_DEFINED || t == SPM_UNUSED)
            trie_insert(&m->trie, (const uint8_t *)m->piece[i], m->plen[i], i);
        if (t == SPM_USER_DEFINED) {
            trie_insert(&m->user, (const uint8_t *)m->piece[i], m->plen[i], i);
            m->n_user++;
        }
        if (t == SPM_UNKNOWN) {
            n_unk++;
            if (i != m->unk_id)
                return errf(err, errlen, "%s: the unknown piece is id %d but trainer_spec.unk_id is %d", msg, i, m->unk_id), fail(m);
        }
        if (t == SPM_BYTE) {
            if (!m->byte_fallback)
                return errf(err, errlen, "%s: piece %d '%s' is a byte piece but byte_fallback is off", msg, i, m->piece[i]), fail(m);
            /* exactly "<0x" two hex digits ">" (sscanf's %X took a sign or spaces: "<0x-6>" made v huge) */
            const char *pc = m->piece[i];
            const int hi = m->plen[i] == 6 ? hex_digit(pc[3]) : -1, lo = m->plen[i] == 6 ? hex_digit(pc[4]) : -1;
            if (hi < 0 || lo < 0 || memcmp(pc, "<0x", 3) || pc[5] != '>')
                return errf(err, errlen, "%s: byte piece %d '%s' is not of the form <0xNN>", msg, i, m->piece[i]), fail(m);
            m->byte_id[hi * 16 + lo] = i;
        }
    }
    if (n_unk != 1 || m->unk_id < 0 || m->unk_id >= n)
        return errf(err, errlen, "%s: %s unknown piece (unk_id %d)", msg, n_unk ? "more than one" : "no", m->unk_id), fail(m);
    const int *sp[3] = {&m->bos_id, &m->eos_id, &m->pad_id};
    for (int k = 0; k < 3; k++)
        if (*sp[k] >= n) return errf(err, errlen, "%s: a special id (%d) is outside the %d pieces", msg, *sp[k], n), fail(m);
    if (m->byte_fallback)
        for (int v = 0; v < 256; v++)
            if (m->byte_id[v] < 0)
                return errf(err, errlen, "%s: byte_fallback is on but the byte piece <0x%02X> is missing", msg, v), fail(m);
    return m;
}

SpmModel *spm_load(const char *path, char *err, size_t errlen) {
    size_t len;
    uint8_t *buf = (uint8_t *)read_file(path, &len);
    if (!buf) { /* read_file: errno EIO when the file opened but could not be read */
        if (errno == EIO) snprintf(err, errlen, "sentencepiece model %.1000s: read error", path);
        else snprintf(err, errlen, "sentencepiece model %.1000s: cannot open (%s)", path, strerror(errno));
        return NULL;
    }
    SpmModel *m = spm_from_bytes(buf, len, path, err, errlen);
    free(buf);
    return m;
}

int spm_vocab_size(const SpmModel *m) { return m->n; }
const char *spm_piece(const SpmModel *m, int id, size_t *len) {
    if (id < 0 || id >= m->n) return NULL;
    if (len) *len = m->plen[id];
    return m->piece[id];
}
int spm_type(const SpmModel *m, int id) { return id >= 0 && id < m->n ? m->type[id] : 0; }
int spm_piece_to_id(const SpmModel *m, const char *piece, size_t len) {
    int64_t *v = strmap_find(&m->ids, piece, len);
    return v ? (int)*v : -1;
}
int spm_unk_id(const SpmModel *m) { return m->unk_id; }
const uint8_t *spm_bytes(const SpmModel *m, size_t *len) {
    *len = m->file_len;
    return m->file;
}

/* ---- normalisation ---- */

typedef struct {
    char *s;
    size_t len, cap;
} Str;
static inline void str_put(Str *o, const char *p, size_t n) {
    if (o->len + n + 1 > o->cap) {
        while (o->len + n + 1 > o->cap) o->cap = o->cap ? 2 * o->cap : 256;
        o->s = xrealloc(o->s, o->cap);
    }
    memcpy(o->s + o->len, p, n);
    o->len += n;
}

/* Length of a UTF-8 character by its lead byte only (sentencepiece's OneCharLen). */
static inline int one_char_len(uint8_t c) { return "\1\1\1\1\1\1\1\1\1\1\1\1\2\2\3\4"[c >> 4]; }

/* Longest charsmap rule that is a prefix of p[0..n): its length (0: none) and replacement.
 * Darts-clone unit: bit 8 has_leaf, bits 0-7 + bit 31 label, value = low 31 bits,
 * offset = (unit >> 10) << ((unit & (1 << 9)) >> 6). */
static size_t charsmap_match(const SpmModel *m, const uint8_t *p, size_t n, const char **repl, size_t *repl_len) {
    if (!m->da) return 0;
    const uint32_t *a = m->da;
    size_t best = 0;
    uint32_t best_value = 0;
    size_t pos = 0;
    uint32_t u = a[0];
    pos ^= (size_t)((u >> 10) << ((u & (1u << 9)) >> 6));
    for (size_t i = 0; i < n; i++) {
        pos ^= p[i];
        if (pos >= m->n_da) break;
        u = a[pos];
        if ((u & ((1u << 31) | 0xFF)) != p[i]) break;
        pos ^= (size_t)((u >> 10) << ((u & (1u << 9)) >> 6));
        if (pos >= m->n_da) break;
        if (u & (1u << 8)) {
            best = i + 1;
            best_value = a[pos] & 0x7FFFFFFFu;
        }
    }
    if (best) {
        if (best_value >= m->n_repl) return 0; /* a broken map: treat as no rule */
        *repl = m->repl + best_value;
        *repl_len = strnlen(*repl, m->n_repl - best_value);
    }
    return best;
}

/* Longest user-defined piece that is a prefix of p[0..n) (0: none). */
static size_t user_match(const SpmModel *m, const uint8_t *p, size_t n) {
    if (!m->n_user) return 0;
    int64_t node = 0;
    size_t best = 0;
    for (size_t i = 0; i < n; i++) {
        node = trie_child(&m->user, node, p[i]);
        if (node < 0) break;
        if (m->user.value[node] >= 0) best = i + 1;
    }
    return best;
}

/* One step of the normaliser: the replacement of the next unit of input and the bytes it consumes. */
static size_t normalize_prefix(const SpmModel *m, const uint8_t *p, size_t n, const char **out, size_t *out_len) {
    size_t k = user_match(m, p, n);
    if (k) {
        *out = (const char *)p, *out_len = k;
        return k;
    }
    k = charsmap_match(m, p, n, out, out_len);
    if (k) return k;
    k = (size_t)utf8_valid_len(p, n); /* U+FFFD itself is valid */
    if (k == 0) {
        *out = "\xEF\xBF\xBD", *out_len = 3;
        return 1;
    }
    *out = (const char *)p, *out_len = k;
    return k;
}

static void normalize_into(const SpmModel *m, const char *text, size_t len, Str *o) {
    o->len = 0;
    const uint8_t *p = (const uint8_t *)text;
    size_t n = len;
    static const char WS[] = "\xe2\x96\x81";
    const char *out;
    size_t out_len;
    if (m->remove_extra_ws)
        while (n) {
            size_t k = normalize_prefix(m, p, n, &out, &out_len);
            if (!(out_len == 1 && out[0] == ' ')) break;
            p += k, n -= k;
        }
    if (!n) return;
    if (!m->ws_suffix && m->add_dummy_prefix) str_put(o, m->escape_ws ? WS : " ", m->escape_ws ? 3 : 1);
    int prev_space = m->remove_extra_ws;
    while (n) {
        size_t k = normalize_prefix(m, p, n, &out, &out_len);
        if (prev_space)
            while (out_len && out[0] == ' ') out++, out_len--;
        if (out_len) {
            for (size_t i = 0; i < out_len; i++) {
                if (m->escape_ws && out[i] == ' ') str_put(o, WS, 3);
                else str_put(o, &out[i], 1);
            }
            prev_space = out[out_len - 1] == ' ';
        }
        p += k, n -= k;
        if (!m->remove_extra_ws) prev_space = 0;
    }
    if (m->remove_extra_ws) {
        const char *sp = m->escape_ws ? WS : " ";
        size_t sl = m->escape_ws ? 3 : 1;
        while (o->len >= sl && memcmp(o->s + o->len - sl, sp, sl) == 0) o->len -= sl;
    }
    if (m->ws_suffix && m->add_dummy_prefix) str_put(o, m->escape_ws ? WS : " ", m->escape_ws ? 3 : 1);
}

/* ---- Viterbi ---- */

typedef struct {
    int32_t id;
    int32_t start; /* -1: not reached */
    float score;
} Best;

int32_t *spm_encode(const SpmModel *m, const char *text, size_t len, size_t *n_ids) {
    *n_ids = 0;
    Str norm = {0};
    normalize_into(m, text, len, &norm);
    const size_t size = norm.len;
    if (size == 0) {
        free(norm.s);
        return NULL;
    }
    const uint8_t *s = (const uint8_t *)norm.s;
    Best *best = xmalloc((size + 1) * sizeof(Best));
    for (size_t i = 0; i <= size; i++) best[i].start = -1, best[i].id = -1, best[i].score = 0;
    best[0].score = 0;
    const float unk_score = m->min_score - 10.0f;
    size_t at = 0;
    while (at < size) {
        const float here = best[at].score;
        size_t mblen = (size_t)one_char_len(s[at]);
        if (mblen > size - at) mblen = size - at;
        int single = 0;
        int64_t node = 0;
        for (size_t kp = at; kp < size; kp++) {
            node = trie_child(&m->trie, node, s[kp]);
            if (node < 0) break;
            int32_t id = m->trie.value[node];
            if (id < 0 || m->type[id] == SPM_UNUSED) continue;
            size_t length = kp + 1 - at;
            /* sentencepiece: `IsUserDefined ? length * max_score - 0.1 : score`, a double (0.1 is a
             * double literal), added to the float path score in double, compared in double with
             * the stored float, stored as float. */
            double sc = m->type[id] == SPM_USER_DEFINED ? (double)((float)length * m->max_score) - 0.1 : (double)m->score[id];
            double cand = sc + (double)here;
            Best *t = &best[kp + 1];
            if (t->start < 0 || cand > (double)t->score) {
                t->score = (float)cand;
                t->start = (int32_t)at;
                t->id = id;
            }
            if (length == mblen) single = 1;
        }
        if (!single) {
            Best *t = &best[at + mblen];
            float cand = unk_score + here;
            if (t->start < 0 || cand > t->score) {
                t->score = cand;
                t->start = (int32_t)at;
                t->id = m->unk_id;
            }
        }
        at += mblen;
    }
    /* backtrack into (start, id) pairs, reversed */
    size_t cnt = 0;
    for (size_t e = size; e > 0; e = (size_t)best[e].start) cnt++;
    int32_t *pid = xmalloc(cnt * sizeof(int32_t));
    size_t *pst = xmalloc((cnt + 1) * sizeof(size_t));
    size_t k = cnt;
    for (size_t e = size; e > 0; e = (size_t)best[e].start) {
        k--;
        pid[k] = best[e].id;
        pst[k] = (size_t)best[e].start;
    }
    pst[cnt] = size;
    /* unknown pieces: bytes with byte_fallback, else runs merged */
    size_t cap = cnt + 16, n = 0;
    int32_t *ids = xmalloc(cap * sizeof(int32_t));
    int prev_unk = 0;
    for (size_t i = 0; i < cnt; i++) {
        const int unk = pid[i] == m->unk_id;
        if (unk && m->byte_fallback) {
            size_t nb = pst[i + 1] - pst[i];
            if (n + nb > cap) {
                cap = 2 * (n + nb);
                ids = xrealloc(ids, cap * sizeof(int32_t));
            }
            for (size_t j = pst[i]; j < pst[i + 1]; j++) ids[n++] = m->byte_id[s[j]];
            continue;
        }
        if (!(unk && prev_unk)) {
            if (n == cap) ids = xrealloc(ids, (cap *= 2) * sizeof(int32_t));
            ids[n++] = pid[i];
        }
        prev_unk = unk;
    }
    free(pid);
    free(pst);
    free(best);
    free(norm.s);
    *n_ids = n;
    return ids;
}
