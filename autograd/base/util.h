/* util.h — the base every room may use (the bottom of the dependency order: includes nothing of
 * the project): error reporting, the error-buffer formatter, aligned allocation, timing, and the
 * file helpers (mkdir -p, read a whole file, durable atomic writes). */
#ifndef DEBERTA_UTIL_H
#define DEBERTA_UTIL_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Print "error: <formatted message>" on one line to stderr and exit(1). */
void fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* Print "warning: ..." on one line to stderr. */
void warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Printed after "error: " / "warning: " (e.g. "rank 1: " in a data-parallel run); "" by default. */
extern char g_msg_prefix[32];

/* The one error-buffer formatter: formats into err (when err && errlen) and returns -1, so that a
 * function reports a failure with `return errf(err, errlen, "...", ...)`. */
int errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* 64-byte aligned, zeroed allocation; exits with a clear message when memory runs out. */
void *xcalloc_aligned(size_t bytes);
/* 64-byte aligned, UNinitialised (pages stay untouched until used: the arena's slack costs no RSS). */
void *xmalloc_aligned(size_t bytes);
/* Zeroed, page-aligned memory mapped from the kernel: a page costs no RSS until it is written, and
 * ranges of it can be given back with madvise (ZeRO-1's moments).  Release with xfree_pages. */
void *xcalloc_pages(size_t bytes);
/* The same, 2 MiB-aligned and advised for transparent huge pages (MADV_HUGEPAGE; where the kernel does not
 * give them, ordinary pages): one fault maps 2 MiB instead of 4 KiB.  The tape's arena: a no-grad forward's
 * first batch faults its memory in (predict, 32 × 128, tiny: 13,946 faults → 599, docs/PERFORMANCE.md). */
void *xcalloc_pages_huge(size_t bytes);
void xfree_pages(void *p, size_t bytes);
void *xmalloc(size_t bytes);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t bytes);
char *xstrdup(const char *s);

/* CRC-32 (IEEE 802.3, the one of zlib and PNG): crc32_update(0, p, n) is the CRC of p[0..n);
 * chunks chain as crc32_update(crc32_update(0, a, na), b, nb). */
uint32_t crc32_update(uint32_t crc, const void *p, size_t n);

/* Wall-clock seconds (monotonic). */
double now_seconds(void);

/* ---- files ----
 * Every file the project writes is durable and atomic: written under "<path>.tmp" in the same
 * directory, flushed, fsync'd, renamed over <path>, and the directory fsync'd (some file systems
 * refuse fsync on a directory; that is ignored).  At every instant <path> is either the previous
 * complete file or the new complete one.  Failures return -1 with errno set and remove the temp
 * file. */

/* mkdir -p (mode 0777, the umask applies).  0, or -1 with errno. */
int mkdir_p(const char *path);
/* The whole file in a malloc'd buffer with a NUL after its *len bytes; NULL on failure, errno the
 * open's error (EISDIR for a directory), or EIO when the file opened but a read failed (callers say
 * "read error" then). */
char *read_file(const char *path, size_t *len);
/* The UTF-8 bytes of code point cp (at most U+10FFFF; the caller has checked it) into o[0..3]; their count. */
size_t utf8_put(char *o, uint32_t cp);
/* Every reader names a 0-byte file (an interrupted copy or download, a disk that was full) as
 * such: "<what> <path>: " FILE_EMPTY ", then the reader's hint.  file_is_empty: 1 when path is a
 * regular file of 0 bytes, else 0 (also when it cannot be stat'ed: the reader then says why). */
#define FILE_EMPTY "the file is empty (0 bytes)"
int file_is_empty(const char *path);
/* The reason of a failed write for an error line: strerror(e) (ENOSPC: "No space left on device; disk
 * full"), or, when a library left errno 0, "no reason given; disk full?". */
const char *io_reason(int e);
/* fsync of the directory that holds path (best effort). */
void fsync_dir_of(const char *path);
/* fsync(tmp), rename(tmp, path), fsync of the directory: for files written by another library
 * (HDF5) under a temporary name.  0, or -1 with errno (tmp is then removed). */
int durable_rename(const char *tmp, const char *path);

typedef struct {
    FILE *f;         /* write into this */
    char tmp[4200];  /* "<path>.tmp" */
    char path[4096];
} AtomicFile;
/* Opens "<path>.tmp" for writing.  0, or -1 with errno. */
int atomic_open(AtomicFile *a, const char *path);
/* fflush, fsync, fclose, rename over the path, fsync of the directory.  0, or -1 with errno (any
 * earlier write error of the stream counts; the temp file is removed). */
int atomic_commit(AtomicFile *a);
/* Closes and removes the temp file (a write abandoned half-way). */
void atomic_abort(AtomicFile *a);
/* atomic_open + fwrite + atomic_commit of n bytes. */
int write_file_atomic(const char *path, const void *data, size_t n);

/* Counts of heap allocations done through the x* helpers (for the no-malloc-in-step test). */
extern uint64_t g_alloc_count;

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif
