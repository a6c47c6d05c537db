/* safetensors.c — see safetensors.h */
#include "train/interop/safetensors.h"
#include "autograd/base/util.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    char *s;
    size_t len, cap;
} Buf;

static void buf_put(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void buf_put(Buf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t)k < b->cap - b->len) {
            b->len += (size_t)k;
            return;
        }
        b->cap = b->cap * 2 + (size_t)(k > 0 ? k : 64) + 64;
        b->s = xrealloc(b->s, b->cap);
    }
}

static long numel(const StEntry *e) {
    long n = 1;
    for (int i = 0; i < e->ndim; i++) n *= e->shape[i];
    return n;
}

/* The CRC-32 of the tensor's float32 little-endian bytes, as written. */
static uint32_t entry_crc32(const StEntry *e) {
    float chunk[1024];
    uint32_t crc = 0;
    const long m = numel(e);
    for (long j = 0; j < m; j += 1024) {
        const long k = m - j < 1024 ? m - j : 1024;
        for (long q = 0; q < k; q++) chunk[q] = (float)e->data[j + q];
        crc = crc32_update(crc, chunk, (size_t)k * 4); /* x86-64 is little-endian */
    }
    return crc;
}

int safetensors_write(const char *path, const StEntry *entries, int n, char *err, size_t errlen) {
    for (int i = 0; i < n; i++)
        for (const char *c = entries[i].name; *c; c++)
            if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20)
                return errf(err, errlen, "tensor name '%s' has a character that needs JSON escaping", entries[i].name);
    Buf h = {xmalloc(256), 0, 256};
    h.s[0] = 0;
    /* metadata: the format, then "crc32.<name>": 8 hex digits per tensor */
    buf_put(&h, "{\"__metadata__\":{\"format\":\"pt\"");
    for (int i = 0; i < n; i++) buf_put(&h, ",\"crc32.%s\":\"%08x\"", entries[i].name, (unsigned)entry_crc32(&entries[i]));
    buf_put(&h, "}");
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        const StEntry *e = &entries[i];
        uint64_t bytes = (uint64_t)numel(e) * 4;
        buf_put(&h, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[", e->name);
        for (int d = 0; d < e->ndim; d++) buf_put(&h, d ? ",%d" : "%d", e->shape[d]);
        buf_put(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)(off + bytes));
        off += bytes;
    }
    buf_put(&h, "}");
    while (h.len % 8) buf_put(&h, " ");

    AtomicFile af;
    if (atomic_open(&af, path) != 0) {
        snprintf(err, errlen, "cannot create %s.tmp: %s", path, strerror(errno));
        free(h.s);
        return -1;
    }
    unsigned char len8[8]; /* the header's length, u64 little-endian */
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
    FILE *f = af.f;
    int ok = fwrite(len8, 1, 8, f) == 8 && fwrite(h.s, 1, h.len, f) == h.len;
    float chunk[1024];
    for (int i = 0; ok && i < n; i++) {
        long m = numel(&entries[i]);
        for (long j = 0; ok && j < m; j += 1024) {
            long k = m - j < 1024 ? m - j : 1024;
            for (long q = 0; q < k; q++) chunk[q] = (float)entries[i].data[j + q];
            ok = fwrite(chunk, 4, (size_t)k, f) == (size_t)k; /* x86-64 is little-endian */
        }
    }
    free(h.s);
    if (!ok) atomic_abort(&af);
    if (!ok || atomic_commit(&af) != 0) return errf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Reader.                                                                                         */

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

typedef struct {
    const char *p, *end;
    const char *path;
    char *err;
    size_t errlen;
    int failed;
} Js;

static void js_fail(Js *j, const char *what) {
    if (j->failed) return;
    j->failed = 1;
    snprintf(j->err, j->errlen, "safetensors %.900s: header JSON: %s", j->path, what);
}
static void js_ws(Js *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}
static int js_lit(Js *j, char c) {
    js_ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return 1;
    }
    return 0;
}
static int hexv(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}
/* A JSON string (decoded, malloc'd), or NULL after js_fail. */
static char *js_string(Js *j) {
    js_ws(j);
    if (j->p >= j->end || *j->p != '"') {
        js_fail(j, "expected a string");
        return NULL;
    }
    j->p++;
    Buf b = {xmalloc(64), 0, 64};
    b.s[0] = 0;
    while (j->p < j->end && *j->p != '"') {
        unsigned char c = (unsigned char)*j->p++;
        if (c < 0x20) {
            js_fail(j, "control character inside a string");
            break;
        }
        if (c != '\\') {
            if (b.len + 2 > b.cap) b.s = xrealloc(b.s, b.cap *= 2);
            b.s[b.len++] = (char)c;
            b.s[b.len] = 0;
            continue;
        }
        if (j->p >= j->end) break;
        char e = *j->p++;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (simple && e) {
            static const char out[] = "\"\\/\b\f\n\r\t";
            char t[2] = {out[simple - "\"\\/bfnrt"], 0};
            buf_put(&b, "%s", t);
        } else if (e == 'u') {
            uint32_t cp = 0;
            for (int k = 0; k < 4 && !j->failed; k++) {
                int h = j->p < j->end ? hexv(*j->p++) : -1;
                if (h < 0) js_fail(j, "bad \\u escape");
                cp = cp << 4 | (uint32_t)h;
            }
            if (j->failed) break;
            if (cp >= 0xD800 && cp < 0xDC00 && j->end - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u') {
                uint32_t lo = 0;
                int ok = 1;
                for (int k = 0; k < 4; k++) {
                    int h = hexv(j->p[2 + k]);
                    if (h < 0) ok = 0;
                    lo = lo << 4 | (uint32_t)(h < 0 ? 0 : h);
                }
                if (ok && lo >= 0xDC00 && lo < 0xE000) {
                    j->p += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
            }
            if (cp == 0 || (cp >= 0xD800 && cp < 0xE000)) {
                js_fail(j, "a \\u escape of NUL or a lone surrogate");
                break;
            }
            char t[4];
            buf_put(&b, "%.*s", (int)utf8_put(t, cp), t);
        } else {
            js_fail(j, "bad escape in a string");
            break;
        }
    }
    if (j->failed || j->p >= j->end) {
        js_fail(j, "unterminated string"); /* unless an earlier failure said why */
        free(b.s);
        return NULL;
    }
    j->p++;
    return b.s;
}
/* An object's key and its ':' (decoded, malloc'd), or NULL after js_fail. */
static char *js_key(Js *j) {
    char *k = js_string(j);
    if (k && !js_lit(j, ':')) {
        js_fail(j, "expected ':'");
        free(k);
        k = NULL;
    }
    return k;
}
/* A non-negative JSON integer (no fraction, no exponent) that fits in 2^53. */
static int js_uint(Js *j, uint64_t *v, const char *what) {
    js_ws(j);
    const char *s = j->p;
    uint64_t r = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        r = r * 10 + (uint64_t)(*j->p++ - '0');
        if (r > (1ull << 53)) break;
    }
    if (j->p == s || r > (1ull << 53) || (j->p < j->end && strchr(".eE-", *j->p)) || (*s == '0' && j->p - s > 1)) {
        char m[160];
        snprintf(m, sizeof m, "%s must be non-negative integers below 2^53", what);
        js_fail(j, m);
        return -1;
    }
    *v = r;
    return 0;
}
/* Skips any JSON value (the __metadata__ object). */
static void js_skip(Js *j, int depth) {
    js_ws(j);
    if (depth > 32) {
        js_fail(j, "nested too deeply");
        return;
    }
    if (j->p >= j->end) {
        js_fail(j, "unexpected end");
        return;
    }
    char c = *j->p;
    if (c == '"') {
        free(js_string(j));
    } else if (c == '{' || c == '[') {
        j->p++;
        char close = c == '{' ? '}' : ']';
        if (js_lit(j, close)) return;
        do {
            if (c == '{') free(js_key(j));
            js_skip(j, depth + 1);
        } while (!j->failed && js_lit(j, ','));
        if (!js_lit(j, close)) js_fail(j, "expected ',' or the end of an object/array");
    } else {
        const char *s = j->p;
        while (j->p < j->end && strchr("+-.0123456789eEtruefalsn", *j->p)) j->p++;
        if (j->p == s) js_fail(j, "unexpected character");
    }
}

static int dtype_of(const char *s, int *bytes) {
    if (!strcmp(s, "F32")) return *bytes = 4, ST_F32;
    if (!strcmp(s, "F16")) return *bytes = 2, ST_F16;
    if (!strcmp(s, "BF16")) return *bytes = 2, ST_BF16;
    if (!strcmp(s, "F64")) return *bytes = 8, ST_F64;
    static const struct { const char *n; int b; } other[] = {{"I64", 8}, {"U64", 8}, {"I32", 4}, {"U32", 4}, {"I16", 2}, {"U16", 2},
                                                             {"I8", 1}, {"U8", 1}, {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
    for (size_t i = 0; i < sizeof other / sizeof *other; i++)
        if (!strcmp(s, other[i].n)) return *bytes = other[i].b, ST_OTHER;
    return -1;
}

void safetensors_close(StFile *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) free(f->t[i].name);
    free(f->t);
    for (int i = 0; i < f->n_crc; i++) free(f->crc_name[i]);
    free(f->crc_name);
    free(f->crc);
    if (f->map && f->size) munmap((void *)f->map, f->size);
    free(f->path);
    free(f);
}

static int cmp_range(const void *a, const void *b) {
    const StTensor *x = *(StTensor *const *)a, *y = *(StTensor *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* Closes f; says why in err ("safetensors <path>: <message>"); NULL. */
static StFile *st_fail(StFile *f, char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static StFile *st_fail(StFile *f, char *err, size_t errlen, const char *fmt, ...) {
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(err, errlen, "safetensors %.900s: %s", f->path, msg);
    safetensors_close(f);
    return NULL;
}

/* __metadata__: kept are the "crc32.<name>" string entries (8 hex digits); everything else is skipped. */
static void parse_metadata(Js *j, StFile *f) {
    js_ws(j);
    if (j->p >= j->end || *j->p != '{') {
        js_skip(j, 0);
        return;
    }
    j->p++;
    if (js_lit(j, '}')) return;
    do {
        char *k = js_key(j);
        if (!k) return;
        js_ws(j);
        if (strncmp(k, "crc32.", 6) || j->p >= j->end || *j->p != '"') {
            free(k);
            js_skip(j, 1);
            continue;
        }
        char *v = js_string(j);
        if (!v) {
            free(k);
            return;
        }
        char *e = NULL;
        const unsigned long c = strtoul(v, &e, 16);
        if (strlen(v) != 8 || *e) {
            char m[400];
            snprintf(m, sizeof m, "metadata entry '%.200s' is '%.20s', not 8 hex digits", k, v);
            js_fail(j, m);
        } else {
            f->crc_name = xrealloc(f->crc_name, (size_t)(f->n_crc + 1) * sizeof *f->crc_name);
            f->crc = xrealloc(f->crc, (size_t)(f->n_crc + 1) * sizeof *f->crc);
            f->crc_name[f->n_crc] = xstrdup(k + 6);
            f->crc[f->n_crc++] = (uint32_t)c;
        }
        free(k);
        free(v);
    } while (!j->failed && js_lit(j, ','));
    if (!j->failed && !js_lit(j, '}')) js_fail(j, "expected ',' or '}' in __metadata__");
}

/* One tensor entry: {"dtype":..., "shape":[...], "data_offsets":[b,e]} in any order.  The first
 * failure stops it (js_fail). */
static int parse_entry(Js *j, StTensor *t) {
    int have_d = 0, have_s = 0, have_o = 0;
    char m[1200];
    if (!js_lit(j, '{')) {
        snprintf(m, sizeof m, "tensor '%.200s' is not an object", t->name);
        js_fail(j, m);
        return -1;
    }
    int closed = js_lit(j, '}');
    if (!closed) do {
            char *k = js_key(j);
            if (!k) return -1;
            if (!strcmp(k, "dtype")) {
                char *d = js_string(j);
                int bytes;
                if (d) {
                    t->dtype = dtype_of(d, &bytes);
                    snprintf(t->dtype_name, sizeof t->dtype_name, "%s", d);
                    if (t->dtype < 0) {
                        snprintf(m, sizeof m, "tensor '%.200s' has an unknown dtype '%.40s'", t->name, d);
                        js_fail(j, m);
                    }
                    free(d);
                }
                have_d = 1;
            } else if (!strcmp(k, "shape")) {
                t->ndim = 0;
                if (!js_lit(j, '[')) {
                    js_fail(j, "shape must be an array");
                } else if (!js_lit(j, ']')) {
                    do {
                        uint64_t v;
                        if (t->ndim == 8) js_fail(j, "a shape has more than 8 dimensions");
                        else if (!js_uint(j, &v, "shape entries")) t->shape[t->ndim++] = (int64_t)v;
                    } while (!j->failed && js_lit(j, ','));
                    if (!j->failed && !js_lit(j, ']')) js_fail(j, "expected ',' or ']' in a shape");
                }
                have_s = 1;
            } else if (!strcmp(k, "data_offsets")) {
                uint64_t b, e;
                if (!js_lit(j, '[') || js_uint(j, &b, "data_offsets") || !js_lit(j, ',') || js_uint(j, &e, "data_offsets") ||
                    !js_lit(j, ']'))
                    js_fail(j, "data_offsets must be [begin, end]");
                else
                    t->begin = b, t->end = e;
                have_o = 1;
            } else {
                snprintf(m, sizeof m, "tensor '%.200s' has an unknown key '%.100s'", t->name, k);
                js_fail(j, m);
            }
            free(k);
        } while (!j->failed && js_lit(j, ','));
    if (!closed && !j->failed && !js_lit(j, '}')) js_fail(j, "expected ',' or '}' in a tensor entry");
    if (j->failed) return -1;
    if (!have_d || !have_s || !have_o) {
        snprintf(m, sizeof m, "tensor '%.200s' lacks %s", t->name, !have_d ? "dtype" : !have_s ? "shape" : "data_offsets");
        js_fail(j, m);
        return -1;
    }
    return 0;
}

StFile *safetensors_open(const char *path, char *err, size_t errlen) {
    StFile *f = xcalloc(1, sizeof *f);
    f->path = xstrdup(path);
    int fd = open(path, O_RDONLY);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        const int e = errno;
        if (fd >= 0) close(fd);
        return st_fail(f, err, errlen, "cannot open (%s)", strerror(e));
    }
    f->size = (size_t)sb.st_size;
    void *p = f->size >= 8 ? mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (f->size == 0) return st_fail(f, err, errlen, FILE_EMPTY);
    if (f->size < 8) return st_fail(f, err, errlen, "%zu bytes, shorter than the 8-byte header length (truncated?)", f->size);
    if (p == MAP_FAILED) {
        f->size = 0;
        return st_fail(f, err, errlen, "cannot map (%s)", strerror(errno));
    }
    f->map = p;
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++) hl |= (uint64_t)f->map[i] << (8 * i);
    if (hl > f->size - 8 || hl > (100u << 20))
        return st_fail(f, err, errlen, "the header claims %llu bytes but the file has %zu after the length field%s", (unsigned long long)hl,
                       f->size - 8, hl > (100u << 20) ? " (over the 100 MB limit)" : " (truncated?)");
    f->data_start = 8 + (size_t)hl;
    Js j = {(const char *)f->map + 8, (const char *)f->map + 8 + hl, path, err, errlen, 0};
    int cap = 0, closed = 0;
    if (!js_lit(&j, '{')) js_fail(&j, "the header is not a JSON object");
    else if (!(closed = js_lit(&j, '}'))) do {
            char *name = js_key(&j);
            if (!name) break;
            if (!strcmp(name, "__metadata__")) {
                free(name);
                parse_metadata(&j, f);
                continue;
            }
            if (f->n == cap) f->t = xrealloc(f->t, (size_t)(cap = cap ? 2 * cap : 64) * sizeof(StTensor));
            StTensor *t = &f->t[f->n++];
            memset(t, 0, sizeof *t);
            t->name = name;
            if (parse_entry(&j, t)) break;
        } while (!j.failed && js_lit(&j, ','));
    if (!j.failed && !closed && !js_lit(&j, '}')) js_fail(&j, "expected ',' or '}' after a tensor entry");
    js_ws(&j);
    if (!j.failed && j.p != j.end) js_fail(&j, "text after the closing '}'");
    if (j.failed) { /* err says why */
        safetensors_close(f);
        return NULL;
    }

    /* sizes, ranges, names */
    const uint64_t data_len = f->size - f->data_start;
    for (int i = 0; i < f->n; i++) {
        StTensor *t = &f->t[i];
        int bytes = 0;
        dtype_of(t->dtype_name, &bytes);
        uint64_t n = 1;
        for (int d = 0; d < t->ndim; d++) {
            if (t->shape[d] > 0 && n > (1ull << 40) / (uint64_t)t->shape[d])
                return st_fail(f, err, errlen, "tensor '%.200s' has an absurd shape", t->name);
            n *= (uint64_t)t->shape[d];
        }
        t->numel = (int64_t)n;
        if (t->end < t->begin || t->end - t->begin != n * (uint64_t)bytes)
            return st_fail(f, err, errlen, "tensor '%.200s': data_offsets [%llu, %llu] hold %lld bytes but %s x %lld elements need %llu "
                           "(the header lies about sizes)", t->name, (unsigned long long)t->begin, (unsigned long long)t->end,
                           (long long)(t->end >= t->begin ? (long long)(t->end - t->begin) : -1), t->dtype_name, (long long)n,
                           (unsigned long long)(n * (uint64_t)bytes));
        if (t->end > data_len)
            return st_fail(f, err, errlen, "tensor '%.200s' ends at data byte %llu but the file has %llu data bytes (truncated?)", t->name,
                           (unsigned long long)t->end, (unsigned long long)data_len);
    }
    StTensor **order = xmalloc((size_t)(f->n ? f->n : 1) * sizeof *order);
    for (int i = 0; i < f->n; i++) order[i] = &f->t[i];
    qsort(order, (size_t)f->n, sizeof *order, cmp_range);
    uint64_t at = 0; /* the tensors in data order must tile the data: the first that does not */
    int tiled = 0;
    while (tiled < f->n && order[tiled]->begin == at) at = order[tiled++]->end;
    const StTensor *prev = tiled ? order[tiled - 1] : NULL, *next = tiled < f->n ? order[tiled] : NULL;
    free(order);
    if (next && next->begin < at)
        return st_fail(f, err, errlen, "tensors '%.200s' and '%.200s' overlap (data bytes %llu..%llu)", prev->name, next->name,
                       (unsigned long long)next->begin, (unsigned long long)at);
    if (next)
        return st_fail(f, err, errlen, "data bytes %llu..%llu belong to no tensor (before '%.200s')", (unsigned long long)at,
                       (unsigned long long)next->begin, next->name);
    if (at != data_len) return st_fail(f, err, errlen, "%llu data bytes after the last tensor", (unsigned long long)(data_len - at));
    for (int i = 0; i < f->n; i++)
        for (int k = 0; k < i; k++)
            if (!strcmp(f->t[i].name, f->t[k].name)) return st_fail(f, err, errlen, "tensor '%.200s' appears twice", f->t[i].name);
    for (int i = 0; i < f->n_crc; i++) {
        const StTensor *t = safetensors_find(f, f->crc_name[i]);
        if (!t) continue; /* a checksum of nothing: nothing to check */
        const uint32_t c = crc32_update(0, f->map + f->data_start + t->begin, (size_t)(t->end - t->begin));
        if (c != f->crc[i])
            return st_fail(f, err, errlen, "tensor '%.200s' does not match its crc32 metadata entry (CRC-32 %08x, stored %08x): the file is "
                           "corrupt", t->name, (unsigned)c, (unsigned)f->crc[i]);
    }
    return f;
}

const StTensor *safetensors_find(const StFile *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->t[i].name, name)) return &f->t[i];
    return NULL;
}

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1F, m = h & 0x3FF, u;
    if (e == 0x1F) u = sign | 0x7F800000u | (m << 13); /* inf / NaN (payload kept) */
    else if (e) u = sign | ((e + 112) << 23) | (m << 13);
    else if (!m) u = sign;
    else { /* subnormal: normalise */
        int s = 0;
        while (!(m & 0x400)) m <<= 1, s++;
        u = sign | ((uint32_t)(113 - s) << 23) | ((m & 0x3FF) << 13);
    }
    float x;
    memcpy(&x, &u, 4);
    return x;
}

void safetensors_read(const StFile *f, const StTensor *t, real *out) {
    const uint8_t *p = f->map + f->data_start + t->begin;
    for (int64_t i = 0; i < t->numel; i++) {
        float x;
        if (t->dtype == ST_F64) {
            uint64_t u = 0;
            for (int k = 0; k < 8; k++) u |= (uint64_t)p[8 * i + k] << (8 * k);
            double dv;
            memcpy(&dv, &u, 8);
            out[i] = (real)dv;
            continue;
        }
        if (t->dtype == ST_F32) {
            uint32_t u = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 | (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
            memcpy(&x, &u, 4);
        } else if (t->dtype == ST_F16) {
            x = half_to_float((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
        } else {
            uint32_t u = (uint32_t)(p[2 * i] | p[2 * i + 1] << 8) << 16;
            memcpy(&x, &u, 4);
        }
        out[i] = (real)x;
    }
}
