/* fill_mask.c — the generator fills every [MASK] of a query; see fill_mask.h. */
#include "train/infer/fill_mask.h"
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"

static int32_t *encode_piece(const TokFile *tk, const char *s, size_t len, size_t *n) {
    *n = 0;
    if (!len) return NULL;
    return tk->kind == TOKFILE_SPM ? spm_encode(tk->spm, s, len, n) : tokenizer_encode(tk->bpe, s, len, n);
}

int fill_mask_encode(const TokFile *tk, FillMaskQuery *q, int max_len, char *err, size_t errlen) {
    int cap = 16, n = 0;
    int32_t *ids = xmalloc((size_t)cap * sizeof(int32_t));
    ids[n++] = tk->sp.cls;
    const char *s = q->text;
    q->n_masks = 0;
    for (;;) {
        const char *m = strstr(s, FILL_MASK_TEXT);
        size_t len = m ? (size_t)(m - s) : strlen(s);
        if (m) while (len && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
        size_t k;
        int32_t *p = encode_piece(tk, s, len, &k);
        if (n + (int)k + 2 > cap) { cap = 2 * (n + (int)k + 2); ids = xrealloc(ids, (size_t)cap * sizeof(int32_t)); }
        if (k) memcpy(ids + n, p, k * sizeof(int32_t));
        n += (int)k;
        free(p);
        if (!m) break;
        ids[n++] = tk->sp.mask;
        q->n_masks++;
        s = m + strlen(FILL_MASK_TEXT);
    }
    ids[n++] = tk->sp.sep;
    q->ids = ids;
    q->n = n;
    if (!q->n_masks) return errf(err, errlen, "has no %s to fill", FILL_MASK_TEXT);
    if (n > max_len) return errf(err, errlen, "is %d tokens long with [CLS] and [SEP]; the model takes at most %d", n, max_len);
    return 0;
}

char *fill_mask_token_text(const TokFile *tk, int32_t id) {
    size_t len = 0;
    const char *p = tk->kind == TOKFILE_SPM ? spm_piece(tk->spm, id, &len) : NULL;
    if (tk->kind == TOKFILE_SPM) {
        if (!p) return strdup(id == tk->sp.mask ? FILL_MASK_TEXT : "?");
        char *out = xmalloc(len + 1), *o = out; /* "▁" (U+2581) is a space */
        for (size_t i = 0; i < len; i++) {
            if (i + 2 < len && (unsigned char)p[i] == 0xE2 && (unsigned char)p[i + 1] == 0x96 && (unsigned char)p[i + 2] == 0x81) { *o++ = ' '; i += 2; }
            else *o++ = p[i];
        }
        *o = 0;
        return out;
    }
    char *s = tokenizer_decode(tk->bpe, &id, 1, &len);
    return s ? s : strdup("?");
}

static int cmp_top(const void *a, const void *b) {
    const FillMaskTop *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return x->id - y->id;
}

void fill_mask_top(Electra *m, Tape *t, const TokFile *tk, const FillMaskQuery *q, int k, FillMaskTop *top) {
    const int T = q->n, V = m->cfg.vocab_size;
    int32_t *mask = xmalloc((size_t)T * sizeof(int32_t)), *labels = xcalloc((size_t)T, sizeof(int32_t));
    for (int i = 0; i < T; i++) {
        mask[i] = 1;
        if (q->ids[i] == tk->sp.mask) labels[i] = tk->sp.mask; /* marks the row; the loss is not used */
    }
    ElectraInput in = {.B = 1, .T = T, .input_ids = q->ids, .attention_mask = mask, .labels = labels};
    t->training = 0;
    tape_reset(t);
    tape_nograd_begin(t);
    GenOut g;
    generator_forward(t, m, &in, &g);
    tape_nograd_end(t);
    FillMaskTop *c = xmalloc((size_t)V * sizeof *c);
    for (int r = 0; r < g.n_masked; r++) {
        const real *row = g.logits->data + (size_t)r * V;
        double mx = -INFINITY, sum = 0;
        for (int v = 0; v < V; v++) mx = fmax(mx, (double)row[v]);
        for (int v = 0; v < V; v++) sum += exp((double)row[v] - mx);
        for (int v = 0; v < V; v++) c[v] = (FillMaskTop){exp((double)row[v] - mx) / sum, v};
        qsort(c, (size_t)V, sizeof *c, cmp_top);
        memcpy(top + (size_t)r * k, c, (size_t)k * sizeof *c);
    }
    free(c);
    free(mask);
    free(labels);
}

FillMaskQuery *fill_mask_read_queries(const char *text, const char *input, const TokFile *tk, int max_len, long *n) {
    FillMaskQuery *qs = NULL;
    long nq = 0, capq = 0;
    if (text) {
        qs = xcalloc(1, sizeof *qs);
        qs[0].text = strdup(text);
        nq = 1;
    } else {
        FILE *f = fopen(input, "r");
        if (!f) fatal("fill-mask: cannot open --input %s (%s)", input, strerror(errno));
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        long ln = 0;
        while ((len = getline(&line, &cap, f)) >= 0) {
            ln++;
            while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
            if (!len) continue;
            if (nq == capq) { capq = capq ? 2 * capq : 16; qs = xrealloc(qs, (size_t)capq * sizeof *qs); }
            memset(&qs[nq], 0, sizeof qs[nq]);
            qs[nq].text = strdup(line);
            qs[nq++].line = ln;
        }
        free(line);
        fclose(f);
        if (!nq) fatal("fill-mask: --input %s holds no query", input);
    }
    char err[1024];
    for (long i = 0; i < nq; i++) {
        json_t *js = json_string(qs[i].text);
        json_decref(js);
        if (!js) {
            if (qs[i].line) fatal("fill-mask: %s:%ld: the query is not valid UTF-8", input, qs[i].line);
            fatal("fill-mask: the query is not valid UTF-8");
        }
        if (fill_mask_encode(tk, &qs[i], max_len, err, sizeof err)) {
            if (qs[i].line) fatal("fill-mask: %s:%ld: the query %s", input, qs[i].line, err);
            fatal("fill-mask: the query \"%.200s\" %s", qs[i].text, err);
        }
    }
    *n = nq;
    return qs;
}

void fill_mask_queries_free(FillMaskQuery *qs, long n) {
    for (long i = 0; i < n; i++) {
        free(qs[i].text);
        free(qs[i].ids);
    }
    free(qs);
}

/* One query as a JSON line. */
static void write_json(FILE *out, const TokFile *tk, const FillMaskQuery *q, const FillMaskTop *top, int K) {
    json_t *jq = json_object(), *jmasks = json_array(), *jids = json_array();
    for (int r = 0; r < q->n_masks; r++) {
        json_t *jl = json_array();
        for (int k = 0; k < K; k++) {
            const FillMaskTop *c = &top[(size_t)r * K + k];
            char *s = fill_mask_token_text(tk, c->id);
            json_t *o = json_object(), *js = json_string(s); /* a lone byte token is not UTF-8 text */
            json_object_set_new(o, "token", json_integer(c->id));
            json_object_set_new(o, "token_str", js ? js : json_string("\xef\xbf\xbd"));
            json_object_set_new(o, "score", json_real(c->p));
            json_array_append_new(jl, o);
            free(s);
        }
        json_array_append_new(jmasks, jl);
    }
    for (int i = 0; i < q->n; i++) json_array_append_new(jids, json_integer(q->ids[i]));
    json_object_set_new(jq, "query", json_string(q->text));
    json_object_set_new(jq, "input_ids", jids);
    json_object_set_new(jq, "masks", jmasks);
    char *line = json_dumps(jq, JSON_COMPACT | JSON_REAL_PRECISION(17));
    fprintf(out, "%s\n", line);
    free(line);
    json_decref(jq);
}

int fill_mask_write(FILE *out, Electra *m, const TokFile *tk, const FillMaskQuery *qs, long n, int top_k, int json) {
    const int V = m->cfg.vocab_size, K = top_k < V ? top_k : V;
    Tape t;
    tape_init(&t, (size_t)64 << 20);
    for (long qi = 0; qi < n; qi++) {
        const FillMaskQuery *q = &qs[qi];
        FillMaskTop *top = xmalloc((size_t)q->n_masks * K * sizeof *top);
        fill_mask_top(m, &t, tk, q, K, top);
        if (json) {
            write_json(out, tk, q, top, K);
        } else {
            fprintf(out, "query %ld: %s\n", qi + 1, q->text);
            for (int r = 0; r < q->n_masks; r++) {
                fprintf(out, "  [MASK] %d:", r + 1);
                for (int k = 0; k < K; k++) {
                    char *s = fill_mask_token_text(tk, top[(size_t)r * K + k].id);
                    fprintf(out, "%s '%s' %.4f", k ? " |" : "", s, top[(size_t)r * K + k].p);
                    free(s);
                }
                fputc('\n', out);
            }
        }
        free(top);
    }
    tape_free(&t);
    return fflush(out) ? -1 : 0;
}
