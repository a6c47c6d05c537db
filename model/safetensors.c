/* safetensors.c — see safetensors.h */
#include "model/safetensors.h"
#include "autograd/util.h"
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

static void put_u64_le(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
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
    Buf h = {xmalloc(256), 0, 256};
    h.s[0] = 0;
    for (int i = 0; i < n; i++)
        for (const char *c = entries[i].name; *c; c++)
            if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) {
                snprintf(err, errlen, "tensor name '%s' has a character that needs JSON escaping", entries[i].name);
                free(h.s);
                return -1;
            }
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
    unsigned char len8[8];
    put_u64_le(len8, h.len);
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
    if (!ok || atomic_commit(&af) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}
