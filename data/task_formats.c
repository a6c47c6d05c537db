/* task_formats.c — the registry of the task-input formats: the only place that knows their names.
 * Adding a format: its module (data/task_<name>.c, defining task_format_<name>) and its entry here;
 * see task_format.h and docs/ARCHITECTURE.md, "How to add an input format". */
#include "data/task_format.h"
#include <string.h>

extern const TaskFormat task_format_jsonl, task_format_csv, task_format_tsv, task_format_conll;
static const TaskFormat *const FORMATS[] = {&task_format_jsonl, &task_format_csv, &task_format_tsv, &task_format_conll, NULL};

const TaskFormat *task_format_find(const char *name) {
    for (int i = 0; FORMATS[i]; i++)
        if (!strcmp(FORMATS[i]->name, name)) return FORMATS[i];
    return NULL;
}

const char *task_format_names(char *buf, size_t n, int holds, const char *sep, const char *last) {
    const TaskFormat *f[sizeof FORMATS / sizeof FORMATS[0]];
    int m = 0;
    for (int i = 0; FORMATS[i]; i++)
        if (FORMATS[i]->holds & holds) f[m++] = FORMATS[i];
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < m && k < n; i++) k += (size_t)snprintf(buf + k, n - k, "%s%s", !i ? "" : i == m - 1 ? last : sep, f[i]->name);
    return buf;
}

void task_format_help(FILE *f, const char *indent) {
    for (int i = 0; FORMATS[i]; i++) fprintf(f, "%s%-6s %s\n", indent, FORMATS[i]->name, FORMATS[i]->about);
}
