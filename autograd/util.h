/* util.h — error reporting, aligned allocation, timing.  Shared by every room. */
#ifndef DEBERTA_UTIL_H
#define DEBERTA_UTIL_H
#include <stddef.h>
#include <stdint.h>

/* Print "error: <formatted message>" on one line to stderr and exit(1). */
void fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* Print "warning: ..." on one line to stderr. */
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* 64-byte aligned, zeroed allocation; exits with a clear message when memory runs out. */
void *xcalloc_aligned(size_t bytes);
/* 64-byte aligned, UNinitialised (pages stay untouched until used: the arena's slack costs no RSS). */
void *xmalloc_aligned(size_t bytes);
void *xmalloc(size_t bytes);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t bytes);
char *xstrdup(const char *s);

/* Wall-clock seconds (monotonic). */
double now_seconds(void);

/* Counts of heap allocations done through the x* helpers (for the no-malloc-in-step test). */
extern uint64_t g_alloc_count;

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif
