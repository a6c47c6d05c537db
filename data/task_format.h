/* task_format.h — the reader interface of the task-input formats, and their registry.
 *
 * One module per format defines a `const TaskFormat task_format_<name>` (data/task_jsonl.c;
 * data/task_csv.c: csv and tsv, one table reader with two ways of cutting fields; data/task_conll.c);
 * data/task_formats.c lists them and is the only place that knows the names.  The commands
 * (`prep-task --format`, `predict --format`), the reader core (data/task_input.c) and the builder
 * (data/task_build.c) look a format up by name and ask it what it holds; none of them branches on a
 * format.  The format modules read through data/task_reader.h.  How to add a format:
 * docs/ARCHITECTURE.md, "How to add an input format".
 */
#ifndef DEBERTA_TASK_FORMAT_H
#define DEBERTA_TASK_FORMAT_H
#include <stddef.h>
#include <stdio.h>

typedef struct TaskReader TaskReader;   /* a reading in progress (data/task_reader.h) */

enum { TASK_HOLDS_SEQUENCES = 1, TASK_HOLDS_TOKENS = 2, TASK_HOLDS_ANY = 3 };

typedef struct TaskFormat {
    const char *name;     /* `--format NAME` and the task files' input_format: 1 to 7 bytes (data/task.h) */
    const char *about;    /* one line for --help */
    int holds;            /* TASK_HOLDS_SEQUENCES (text [+ pair] + label) | TASK_HOLDS_TOKENS (words + tags); a format
                           * of both kinds reads token examples when no text field is given */
    int word_per_line;    /* token examples: word w of an example is on line (its line + w), in messages */
    /* Every example of buf[0..len) (a byte-order mark already skipped) into r; 0, or -1 with one line
     * "NAME:LINE: ..." in r->err.  r->spec says what to read: spec->tagging only when holds has
     * TASK_HOLDS_TOKENS, else only when it has TASK_HOLDS_SEQUENCES (task_input.c checks). */
    int (*read)(TaskReader *r, const char *buf, size_t len);
} TaskFormat;

/* The format called name; NULL when none is. */
const TaskFormat *task_format_find(const char *name);
/* The names of the formats whose holds meets `holds`, in the registry's order, joined by sep and the
 * last two by last: ("jsonl, csv, tsv or conll"; with sep = last = "|": "jsonl|csv|tsv|conll").  buf. */
const char *task_format_names(char *buf, size_t n, int holds, const char *sep, const char *last);
/* One line per format, "INDENTname   about", for --help. */
void task_format_help(FILE *f, const char *indent);
#endif
