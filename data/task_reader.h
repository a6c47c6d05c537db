/* task_reader.h — what the format modules (task_format.h) read with: the reading in progress (the
 * examples so far, the arena that owns their strings, the error line), the checks every format makes
 * (a field is UTF-8 without NUL, a label is short and on one line) and the lines of the buffer.
 * Implemented in data/task_input.c, the reader core; used only by data/task_<format>.c.
 * Messages: "NAME:LINE: what is wrong" (task_input.h). */
#ifndef DEBERTA_TASK_READER_H
#define DEBERTA_TASK_READER_H
#include <stddef.h>
#include "data/task_format.h"
#include "data/task_input.h"

struct TaskReader {
    const char *name;            /* the file, in messages */
    const TaskInputSpec *spec;   /* what to read */
    struct TaskArenaBlock *arena;/* owns every string and array of the examples */
    TaskExample *ex;
    size_t n, cap;
    char *err;
    size_t errlen;
};

/* A new example starting on line `line`, zeroed, appended. */
TaskExample *tr_push(TaskReader *r, long line);
/* n bytes (16-aligned) that live as long as the examples. */
void *tr_alloc(TaskReader *r, size_t n);
/* s[0..n) as a NUL-terminated string of the arena. */
char *tr_str(TaskReader *r, const char *s, size_t n);
/* A field's bytes as an arena string: UTF-8 and no NUL byte, else NULL with
 * "NAME:LINE: invalid UTF-8 (byte 0x.. at offset K of WHAT)" or "...: a NUL byte at offset K of WHAT". */
const char *tr_field(TaskReader *r, long line, const char *s, size_t n, const char *what);
/* 0 when the label is 1 to 63 bytes without a line break, else -1 with "NAME:LINE: empty label WHAT" (...). */
int tr_label(TaskReader *r, long line, const char *lab, const char *what);

/* A line of the buffer without its \n or \r\n, and its 1-based number. */
typedef struct { const char *p; size_t n; long no; } TaskLine;
/* The next line of buf from *pos (*no counts them); 0 at the end. */
int tr_next_line(const char *buf, size_t len, size_t *pos, long *no, TaskLine *l);
/* 1 when the line holds only spaces and tabs. */
int tr_blank(const TaskLine *l);
/* 0 when the whole line is UTF-8, else -1 with "NAME:LINE: invalid UTF-8 (byte 0x.. at column C)". */
int tr_line_utf8(TaskReader *r, const TaskLine *l);
/* A format of one record per line: line(r, l) for every line that is not blank, each checked to be
 * UTF-8 first (tr_line_utf8); the first -1 stops.  0, or -1. */
int tr_each_line(TaskReader *r, const char *buf, size_t len, int (*line)(TaskReader *r, const TaskLine *l));
#endif
