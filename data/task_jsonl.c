/* task_jsonl.c — the task-input format jsonl: one JSON object per non-blank line (libjansson,
 * duplicate keys refused).  Sequence examples: the string at key text_field (and text_pair_field);
 * the label at label_field, a string, an integer or a real (kept as its text: integers in decimal,
 * reals as %.17g).  Token examples (no text field given): a list of strings at tokens_field (default
 * "tokens") and a list of labels (strings or integers) of the same length at tags_field (default
 * "tags").  See task_format.h and docs/FORMATS.md, "Task inputs". */
#include "data/task_reader.h"
#include "autograd/base/util.h"
#include <jansson.h>
#include <stdio.h>
#include <string.h>

/* The label value v as text (string, integer, real), or -1 with a message. */
static const char *json_label(TaskReader *r, long line, json_t *v, const char *key) {
    char buf[64];
    if (json_is_string(v)) {
        const char *s = tr_field(r, line, json_string_value(v), json_string_length(v), "the label");
        return s && !tr_label(r, line, s, key) ? s : NULL;
    }
    if (json_is_integer(v)) { snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v)); return tr_str(r, buf, strlen(buf)); }
    if (json_is_real(v)) { snprintf(buf, sizeof buf, "%.17g", json_real_value(v)); return tr_str(r, buf, strlen(buf)); }
    errf(r->err, r->errlen, "%s:%ld: the label at key '%s' is not a string or a number", r->name, line, key);
    return NULL;
}

static const char *json_text(TaskReader *r, long line, json_t *obj, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (!v) { errf(r->err, r->errlen, "%s:%ld: no key '%s'", r->name, line, key); return NULL; }
    if (!json_is_string(v)) { errf(r->err, r->errlen, "%s:%ld: the value at key '%s' is not a string", r->name, line, key); return NULL; }
    char what[128];
    snprintf(what, sizeof what, "key '%.100s'", key);
    const char *s = tr_field(r, line, json_string_value(v), json_string_length(v), what);
    if (s && !s[0]) { errf(r->err, r->errlen, "%s:%ld: empty text at key '%s'", r->name, line, key); return NULL; }
    return s;
}

static int jsonl_record(TaskReader *r, const TaskLine *l, json_t *obj) {
    const TaskInputSpec *sp = r->spec;
    TaskExample *e = tr_push(r, l->no);
    if (!sp->tagging) {
        if (!(e->text = json_text(r, l->no, obj, sp->text_field))) return -1;
        if (sp->text_pair_field && !(e->text_pair = json_text(r, l->no, obj, sp->text_pair_field))) return -1;
        if (!sp->label_field) return 0;
        json_t *v = json_object_get(obj, sp->label_field);
        if (!v || json_is_null(v)) {
            if (sp->need_labels) return errf(r->err, r->errlen, "%s:%ld: no label at key '%s'", r->name, l->no, sp->label_field);
            return 0;
        }
        return (e->label = json_label(r, l->no, v, sp->label_field)) ? 0 : -1;
    }
    const char *tk = sp->tokens_field ? sp->tokens_field : "tokens", *tg = sp->tags_field ? sp->tags_field : "tags";
    json_t *toks = json_object_get(obj, tk), *tags = json_object_get(obj, tg);
    if (!toks) return errf(r->err, r->errlen, "%s:%ld: no key '%s'", r->name, l->no, tk);
    if (!json_is_array(toks)) return errf(r->err, r->errlen, "%s:%ld: the value at key '%s' is not a list", r->name, l->no, tk);
    size_t n = json_array_size(toks);
    if (n == 0) return errf(r->err, r->errlen, "%s:%ld: empty list at key '%s'", r->name, l->no, tk);
    if (n > 1000000) return errf(r->err, r->errlen, "%s:%ld: %zu tokens at key '%s' (at most 1000000)", r->name, l->no, n, tk);
    if (tags && json_is_null(tags)) tags = NULL;
    if (!tags && sp->need_labels) return errf(r->err, r->errlen, "%s:%ld: no key '%s'", r->name, l->no, tg);
    if (tags && !json_is_array(tags)) return errf(r->err, r->errlen, "%s:%ld: the value at key '%s' is not a list", r->name, l->no, tg);
    if (tags && json_array_size(tags) != n)
        return errf(r->err, r->errlen, "%s:%ld: %zu tokens at key '%s' but %zu tags at key '%s'", r->name, l->no, n, tk, json_array_size(tags), tg);
    const char **w = tr_alloc(r, n * sizeof(char *));
    const char **t = tags ? tr_alloc(r, n * sizeof(char *)) : NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(toks, i);
        char what[64];
        snprintf(what, sizeof what, "token %zu", i + 1);
        if (!json_is_string(v)) return errf(r->err, r->errlen, "%s:%ld: %s at key '%s' is not a string", r->name, l->no, what, tk);
        if (!(w[i] = tr_field(r, l->no, json_string_value(v), json_string_length(v), what))) return -1;
        if (!w[i][0]) return errf(r->err, r->errlen, "%s:%ld: %s at key '%s' is empty", r->name, l->no, what, tk);
        if (t) {
            snprintf(what, sizeof what, "tag %zu at key '%s'", i + 1, tg);
            v = json_array_get(tags, i);
            if (!json_is_string(v) && !json_is_integer(v)) return errf(r->err, r->errlen, "%s:%ld: %s is not a string or an integer", r->name, l->no, what);
            if (!(t[i] = json_label(r, l->no, v, tg))) return -1;
        }
    }
    e->n_words = (int)n;
    e->words = w;
    e->tags = t;
    return 0;
}

/* One line: a JSON object, one example. */
static int jsonl_line(TaskReader *r, const TaskLine *l) {
    json_error_t je;
    json_t *obj = json_loadb(l->p, l->n, JSON_REJECT_DUPLICATES, &je);
    if (!obj) return errf(r->err, r->errlen, "%s:%ld: not JSON: %s (column %d)", r->name, l->no, je.text, je.column);
    int rc = json_is_object(obj) ? jsonl_record(r, l, obj) : errf(r->err, r->errlen, "%s:%ld: not a JSON object", r->name, l->no);
    json_decref(obj);
    return rc ? -1 : 0;
}

static int read_jsonl(TaskReader *r, const char *buf, size_t len) { return tr_each_line(r, buf, len, jsonl_line); }

const TaskFormat task_format_jsonl = {"jsonl", "a JSON object per line: a text [+ pair] and its label, or lists of words and tags",
                                      TASK_HOLDS_SEQUENCES | TASK_HOLDS_TOKENS, 0, read_jsonl};
