/* util.c — see util.h */
#include "autograd/util.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t g_alloc_count = 0;

void fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fputs("error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

void warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("warning: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void *xcalloc_aligned(size_t bytes) {
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded == 0) rounded = 64;
    void *p = aligned_alloc(64, rounded);
    if (!p) fatal("out of memory allocating %zu bytes", bytes);
    memset(p, 0, rounded);
    __atomic_add_fetch(&g_alloc_count, 1, __ATOMIC_RELAXED);
    return p;
}

void *xmalloc_aligned(size_t bytes) {
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded == 0) rounded = 64;
    void *p = aligned_alloc(64, rounded);
    if (!p) fatal("out of memory allocating %zu bytes", bytes);
    __atomic_add_fetch(&g_alloc_count, 1, __ATOMIC_RELAXED);
    return p;
}

void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) fatal("out of memory allocating %zu bytes", bytes);
    __atomic_add_fetch(&g_alloc_count, 1, __ATOMIC_RELAXED);
    return p;
}

void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) fatal("out of memory allocating %zu x %zu bytes", n, size);
    __atomic_add_fetch(&g_alloc_count, 1, __ATOMIC_RELAXED);
    return p;
}

void *xrealloc(void *p, size_t bytes) {
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) fatal("out of memory reallocating %zu bytes", bytes);
    __atomic_add_fetch(&g_alloc_count, 1, __ATOMIC_RELAXED);
    return q;
}

char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
