/* task_conll.c — the task-input format conll: token examples, one token per line, columns separated
 * by runs of spaces or tabs; token_column and tag_column are 1-based (tag_column 0 = the last column
 * of each line); a blank line ends a sentence; a line whose first column is -DOCSTART- is skipped (and
 * ends the sentence).  Word w of a sentence is on its line + w.  See task_format.h and
 * docs/FORMATS.md, "Task inputs". */
#include "data/task_reader.h"
#include "autograd/base/util.h"
#include <stdlib.h>
#include <string.h>

typedef struct { const char **v; size_t n, cap; } PVec;
static void pv_push(PVec *a, const char *s) {
    if (a->n == a->cap) { a->cap = a->cap ? 2 * a->cap : 64; a->v = xrealloc(a->v, a->cap * sizeof(char *)); }
    a->v[a->n++] = s;
}

static int conll_flush(TaskReader *r, PVec *w, PVec *t, long first_line) {
    if (!w->n) return 0;
    if (w->n > 1000000) return errf(r->err, r->errlen, "%s:%ld: a sentence of %zu tokens (at most 1000000)", r->name, first_line, w->n);
    TaskExample *e = tr_push(r, first_line);
    e->n_words = (int)w->n;
    const char **wa = tr_alloc(r, w->n * sizeof(char *));
    memcpy(wa, w->v, w->n * sizeof(char *));
    e->words = wa;
    if (t->n == w->n) {
        const char **ta = tr_alloc(r, t->n * sizeof(char *));
        memcpy(ta, t->v, t->n * sizeof(char *));
        e->tags = ta;
    }
    w->n = t->n = 0;
    return 0;
}

static int read_conll(TaskReader *r, const char *buf, size_t len) {
    const TaskInputSpec *sp = r->spec;
    const int tc = sp->token_column > 0 ? sp->token_column : 1, gc = sp->tag_column;
    PVec w = {0}, t = {0};
    size_t pos = 0;
    long no = 0, first = 0;
    TaskLine l;
    int rc = 0;
    enum { MAXC = 64 };
    while (!rc && tr_next_line(buf, len, &pos, &no, &l)) {
        if (tr_blank(&l)) { rc = conll_flush(r, &w, &t, first); continue; }
        if ((rc = tr_line_utf8(r, &l))) break;
        if (memchr(l.p, 0, l.n)) { rc = errf(r->err, r->errlen, "%s:%ld: a NUL byte", r->name, l.no); break; }
        const char *cs[MAXC];
        size_t cl[MAXC];
        int nc = 0;
        cl[0] = 0; /* a line that is not blank has a column: for the compiler, which cannot see it */
        for (size_t i = 0; i < l.n && nc < MAXC;) {
            while (i < l.n && (l.p[i] == ' ' || l.p[i] == '\t')) i++;
            if (i >= l.n) break;
            size_t e = i;
            while (e < l.n && l.p[e] != ' ' && l.p[e] != '\t') e++;
            cs[nc] = l.p + i; cl[nc] = e - i; nc++;
            i = e;
        }
        if (cl[0] == 10 && !memcmp(cs[0], "-DOCSTART-", 10)) { rc = conll_flush(r, &w, &t, first); continue; }
        if (nc < tc) { rc = errf(r->err, r->errlen, "%s:%ld: %d column%s, --token-column %d needs at least %d", r->name, l.no, nc, nc == 1 ? "" : "s", tc, tc); break; }
        const int g = gc > 0 ? gc : nc;
        const int want_tag = sp->need_labels || gc > 0;
        if (want_tag && gc == 0 && nc < 2) {
            rc = errf(r->err, r->errlen, "%s:%ld: 1 column, a token and its tag need at least 2", r->name, l.no);
            break;
        }
        if (want_tag && nc < g) { rc = errf(r->err, r->errlen, "%s:%ld: %d column%s, --tag-column %d needs at least %d", r->name, l.no, nc, nc == 1 ? "" : "s", g, g); break; }
        if (!w.n) first = l.no;
        pv_push(&w, tr_str(r, cs[tc - 1], cl[tc - 1]));
        if (want_tag || (nc >= 2 && gc == 0 && t.n == w.n - 1)) {
            const char *tag = tr_str(r, cs[g - 1], cl[g - 1]);
            if (tr_label(r, l.no, tag, "")) { rc = -1; break; }
            pv_push(&t, tag);
        }
    }
    if (!rc) rc = conll_flush(r, &w, &t, first);
    free(w.v); free(t.v);
    return rc;
}

const TaskFormat task_format_conll = {"conll", "a word per line, its tag in a column, a blank line between sentences",
                                      TASK_HOLDS_TOKENS, 1, read_conll};
