/* task_input.c — the reader core: the checks of a spec against its format, a byte-order mark, the
 * arena and the example list, and the helpers every format module reads with (task_reader.h).  The
 * formats themselves are data/task_<format>.c, listed in data/task_formats.c.  See task_input.h and
 * docs/FORMATS.md, "Task inputs". */
#include "data/task_input.h"
#include "data/task_format.h"
#include "data/task_reader.h"
#include "data/tokenizer.h"
#include "autograd/base/util.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int utf8_valid(const char *s, size_t n, size_t *bad) {
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = (size_t)utf8_valid_len((const uint8_t *)s + i, n - i))) {
            if (bad) *bad = i;
            return 0;
        }
    return 1;
}

/* ---------------------------------------------------------------- the arena and the example list */

struct TaskArenaBlock { struct TaskArenaBlock *next; size_t used, cap; char data[]; };
typedef struct TaskArenaBlock Block;

void *tr_alloc(TaskReader *r, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!r->arena || r->arena->used + n > r->arena->cap) {
        size_t cap = n > (1 << 20) ? n : (1 << 20);
        Block *b = xmalloc(sizeof(Block) + cap);
        b->next = r->arena; b->used = 0; b->cap = cap;
        r->arena = b;
    }
    void *p = r->arena->data + r->arena->used;
    r->arena->used += n;
    return p;
}
char *tr_str(TaskReader *r, const char *s, size_t n) {
    char *p = tr_alloc(r, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}
static void arena_free(Block *b) {
    while (b) { Block *n = b->next; free(b); b = n; }
}

TaskExample *tr_push(TaskReader *r, long line) {
    if (r->n == r->cap) { r->cap = r->cap ? 2 * r->cap : 256; r->ex = xrealloc(r->ex, r->cap * sizeof(TaskExample)); }
    TaskExample *e = &r->ex[r->n++];
    memset(e, 0, sizeof *e);
    e->line = line;
    return e;
}

/* ---------------------------------------------------------------- the checks every format makes */

const char *tr_field(TaskReader *r, long line, const char *s, size_t n, const char *what) {
    size_t bad;
    if (!utf8_valid(s, n, &bad)) {
        errf(r->err, r->errlen, "%s:%ld: invalid UTF-8 (byte 0x%02x at offset %zu of %s)", r->name, line, (unsigned char)s[bad], bad, what);
        return NULL;
    }
    const char *z = memchr(s, 0, n);
    if (z) { errf(r->err, r->errlen, "%s:%ld: a NUL byte at offset %zu of %s", r->name, line, (size_t)(z - s), what); return NULL; }
    return tr_str(r, s, n);
}

int tr_label(TaskReader *r, long line, const char *lab, const char *what) {
    if (!lab[0]) return errf(r->err, r->errlen, "%s:%ld: empty label %s", r->name, line, what);
    for (const char *p = lab; *p; p++)
        if (*p == '\n' || *p == '\r') return errf(r->err, r->errlen, "%s:%ld: the label %s holds a line break", r->name, line, what);
    if (strlen(lab) > 63) return errf(r->err, r->errlen, "%s:%ld: the label %s is longer than 63 bytes", r->name, line, what);
    return 0;
}

/* ---------------------------------------------------------------- lines */

int tr_next_line(const char *buf, size_t len, size_t *pos, long *no, TaskLine *l) {
    if (*pos >= len) return 0;
    size_t a = *pos, e = a;
    while (e < len && buf[e] != '\n') e++;
    *pos = e < len ? e + 1 : e;
    l->p = buf + a;
    l->n = e - a;
    if (l->n && l->p[l->n - 1] == '\r') l->n--;
    l->no = ++*no;
    return 1;
}

int tr_blank(const TaskLine *l) {
    for (size_t i = 0; i < l->n; i++)
        if (l->p[i] != ' ' && l->p[i] != '\t') return 0;
    return 1;
}

int tr_line_utf8(TaskReader *r, const TaskLine *l) {
    size_t bad;
    if (utf8_valid(l->p, l->n, &bad)) return 0;
    return errf(r->err, r->errlen, "%s:%ld: invalid UTF-8 (byte 0x%02x at column %zu)", r->name, l->no, (unsigned char)l->p[bad], bad + 1);
}

int tr_each_line(TaskReader *r, const char *buf, size_t len, int (*line)(TaskReader *r, const TaskLine *l)) {
    size_t pos = 0;
    long no = 0;
    TaskLine l;
    while (tr_next_line(buf, len, &pos, &no, &l))
        if (!tr_blank(&l) && (tr_line_utf8(r, &l) || line(r, &l))) return -1;
    return 0;
}

/* ---------------------------------------------------------------- entry points */

int task_input_read_mem(const char *buf, size_t len, const char *name, const TaskInputSpec *spec, TaskExamples *out, char *err,
                        size_t errlen) {
    memset(out, 0, sizeof *out);
    const TaskFormat *f = spec->format;
    if (!f) return errf(err, errlen, "%s: unknown input format", name);
    if (!spec->tagging && !spec->text_field) return errf(err, errlen, "%s: no text field given", name);
    if (spec->tagging && !(f->holds & TASK_HOLDS_TOKENS)) {
        char names[256];
        return errf(err, errlen, "%s: token examples are read from %s, not %s", name,
                    task_format_names(names, sizeof names, TASK_HOLDS_TOKENS, ", ", " or "), f->name);
    }
    if (!spec->tagging && !(f->holds & TASK_HOLDS_SEQUENCES)) return errf(err, errlen, "%s: %s holds token examples (tags per word)", name, f->name);
    if (spec->need_labels && !spec->tagging && !spec->label_field) return errf(err, errlen, "%s: no label field given", name);
    TaskReader r = {.name = name, .spec = spec, .err = err, .errlen = errlen};
    if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) { buf += 3; len -= 3; }
    int rc = f->read(&r, buf, len);
    if (!rc && r.n == 0) rc = errf(err, errlen, "%s: no examples", name);
    if (rc) {
        free(r.ex);
        arena_free(r.arena);
        return -1;
    }
    out->ex = r.ex;
    out->n = r.n;
    out->format = f;
    out->has_labels = 1;
    for (size_t i = 0; i < r.n; i++)
        if (spec->tagging ? !r.ex[i].tags : !r.ex[i].label) out->has_labels = 0;
    out->arena_ = r.arena;
    return 0;
}

int task_input_read(const char *path, const TaskInputSpec *spec, TaskExamples *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    size_t len;
    char *buf = read_file(path, &len); /* errno EIO: opened but not readable */
    if (!buf && errno == EIO) return errf(err, errlen, "%s: read error", path);
    if (!buf) return errf(err, errlen, "%s: cannot open (%s)", path, strerror(errno));
    if (len == 0) { free(buf); return errf(err, errlen, "%s: empty file", path); }
    int rc = task_input_read_mem(buf, len, path, spec, out, err, errlen);
    free(buf);
    return rc;
}

void task_examples_free(TaskExamples *e) {
    arena_free(e->arena_);
    free(e->ex);
    memset(e, 0, sizeof *e);
}
