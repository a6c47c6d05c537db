/* cmd_fill_mask.c — `deberta fill-mask RUN/checkpoint.h5 "text with [MASK]"` (or --input FILE, one
 * query per line): the generator's k most probable tokens, with their probabilities, for each [MASK]
 * of each query, as Hugging Face's fill-mask pipeline lists them.
 *
 * A query is cut at each literal "[MASK]"; the pieces are encoded with the checkpoint's own
 * tokenizer (BPE or SentencePiece, data/tokfile.h) — the piece before a [MASK] without its trailing
 * spaces, as Hugging Face's mask token strips them (lstrip) — and joined by the [MASK] id:
 * [CLS] piece [MASK] piece … [SEP].  One forward of the generator per query (dropout off); each
 * masked row's probabilities are softmax(logits) in double.
 *
 * Output: per query "query N: TEXT" then one line per [MASK] listing "token probability" pairs, or
 * with --json one JSON object per query (libjansson): {"query", "input_ids", "masks": [[{"token",
 * "token_str", "score"}, …], …]}.  A query without [MASK], or one longer than the model's positions,
 * is one error line naming it (and the file's line); nothing is printed for any query before the
 * inputs are all read and checked.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/tape.h"
#include "autograd/base/util.h"
#include "data/tokfile.h"
#include "model/electra.h"
#include "train/cli/cli.h"
#include "train/cli/model_source.h"

#define MASK_TEXT "[MASK]"

static void usage(FILE *f) {
    fprintf(f,
            "usage: deberta fill-mask RUN/checkpoint.h5 \"text with [MASK]\" [--top-k K] [--json] [--threads N]\n"
            "       deberta fill-mask RUN/checkpoint.h5 --input FILE [--top-k K] [--json]\n"
            "\n"
            "The generator of a pretraining checkpoint (or an imported model) fills every [MASK] of each\n"
            "query: its K most probable tokens with their probabilities, as Hugging Face's fill-mask\n"
            "pipeline shows them.\n"
            "\n"
            "  --input FILE   one query per line (blank lines skipped) instead of the text argument\n"
            "  --top-k K      tokens listed per [MASK]                                      [5]\n"
            "  --json         one JSON object per query: query, input_ids, masks [[{token, token_str, score}]]\n"
            "  --threads N    OpenMP/BLAS threads\n");
}

typedef struct {
    char *text;
    long line;            /* 0 for the command-line text */
    int32_t *ids;         /* [n] with [CLS] … [SEP] */
    int n, n_masks;
} Query;

static int32_t *encode_piece(const TokFile *tk, const char *s, size_t len, size_t *n) {
    *n = 0;
    if (!len) return NULL;
    return tk->kind == TOKFILE_SPM ? spm_encode(tk->spm, s, len, n) : tokenizer_encode(tk->bpe, s, len, n);
}

/* The query's ids; -1 with a message when it has no [MASK] or is too long. */
static int encode_query(const TokFile *tk, Query *q, int max_len, char *err, size_t errlen) {
    int cap = 16, n = 0;
    int32_t *ids = xmalloc((size_t)cap * sizeof(int32_t));
    ids[n++] = tk->sp.cls;
    const char *s = q->text;
    q->n_masks = 0;
    for (;;) {
        const char *m = strstr(s, MASK_TEXT);
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
        s = m + strlen(MASK_TEXT);
    }
    ids[n++] = tk->sp.sep;
    q->ids = ids;
    q->n = n;
    if (!q->n_masks) return errf(err, errlen, "has no %s to fill", MASK_TEXT);
    if (n > max_len) return errf(err, errlen, "is %d tokens long with [CLS] and [SEP]; the model takes at most %d", n, max_len);
    return 0;
}

static char *token_text(const TokFile *tk, int32_t id) {
    size_t len = 0;
    const char *p = tk->kind == TOKFILE_SPM ? spm_piece(tk->spm, id, &len) : NULL;
    if (tk->kind == TOKFILE_SPM) {
        if (!p) return strdup(id == tk->sp.mask ? MASK_TEXT : "?");
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

typedef struct { double p; int32_t id; } Cand;
static int cmp_cand(const void *a, const void *b) {
    const Cand *x = a, *y = b;
    if (x->p != y->p) return x->p > y->p ? -1 : 1;
    return x->id - y->id;
}

int cmd_fill_mask(int argc, char **argv) {
    const char *ckpt = NULL, *text = NULL, *input = NULL;
    int top_k = 5, json = 0, threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--input") || !strcmp(a, "--top-k") || !strcmp(a, "--threads")) {
            if (i + 1 >= argc) return cli_usage_error("fill-mask", "%s needs a value", a);
            const char *v = argv[++i];
            char *end;
            long x = strtol(v, &end, 10);
            if (!strcmp(a, "--input")) input = v;
            else if (*end || end == v || x < 1 || x > 100000) return cli_usage_error("fill-mask", "%s '%s' must be a positive integer", a, v);
            else if (!strcmp(a, "--top-k")) top_k = (int)x;
            else threads = (int)x;
            continue;
        }
        if (a[0] == '-' && a[1] == '-') return cli_usage_error("fill-mask", "unknown flag '%s'", a);
        if (!ckpt) ckpt = a;
        else if (!text) text = a;
        else return cli_usage_error("fill-mask", "one text argument only (quote it), or --input FILE");
    }
    if (!ckpt) return cli_usage_error("fill-mask", "RUN/checkpoint.h5 is required");
    if (!text == !input) return cli_usage_error("fill-mask", "give either a \"text with [MASK]\" argument or --input FILE");
    if (threads > 0) { omp_set_num_threads(threads); openblas_set_num_threads(threads); }

    /* the model and its tokenizer */
    char err[1024];
    CheckpointState st;
    memset(&st, 0, sizeof st);
    if (checkpoint_read_state(ckpt, &st, err, sizeof err)) fatal("%s", err);
    if (st.config && strstr(st.config, "ft_task"))
        fatal("checkpoint %s is a fine-tuned model (no generator); fill-mask needs a pretraining or imported checkpoint", ckpt);
    if (!st.n_tokenizer) fatal("checkpoint %s has no tokenizer; cannot encode the queries", ckpt);
    char what[4200];
    snprintf(what, sizeof what, "checkpoint %.4000s", ckpt);
    TokFile *tk = tokfile_from_bytes(st.tokenizer, st.n_tokenizer, what, err, sizeof err);
    if (!tk) fatal("%s", err);
    checkpoint_state_free(&st);
    ModelSource src;
    ModelConfig cfg;
    model_source_config(&src, ckpt, 0, &cfg);
    if (cfg.vocab_size != tk->vocab_size)
        fatal("checkpoint %s: its tokenizer has %d ids, the model %d", ckpt, tk->vocab_size, cfg.vocab_size);
    cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = 0;
    cfg.max_seq_len = cfg.max_position_embeddings;
    if (config_validate(&cfg, err, sizeof err)) fatal("checkpoint %s: %s", ckpt, err);

    /* every query read and checked before any output */
    Query *qs = NULL;
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
    for (long i = 0; i < nq; i++) {
        json_t *js = json_string(qs[i].text);
        json_decref(js);
        if (!js) {
            if (qs[i].line) fatal("fill-mask: %s:%ld: the query is not valid UTF-8", input, qs[i].line);
            fatal("fill-mask: the query is not valid UTF-8");
        }
        if (encode_query(tk, &qs[i], cfg.max_position_embeddings, err, sizeof err)) {
            if (qs[i].line) fatal("fill-mask: %s:%ld: the query %s", input, qs[i].line, err);
            fatal("fill-mask: the query \"%.200s\" %s", qs[i].text, err);
        }
    }

    Electra *m = xcalloc(1, sizeof *m);
    model_source_load(&src, m, &cfg, 0);
    model_source_free(&src);
    const int V = cfg.vocab_size, K = top_k < V ? top_k : V;
    Tape t;
    tape_init(&t, (size_t)64 << 20);
    t.training = 0;
    Cand *c = xmalloc((size_t)V * sizeof(Cand));
    for (long qi = 0; qi < nq; qi++) {
        Query *q = &qs[qi];
        const int T = q->n;
        int32_t *mask = xmalloc((size_t)T * sizeof(int32_t)), *labels = xcalloc((size_t)T, sizeof(int32_t));
        for (int i = 0; i < T; i++) {
            mask[i] = 1;
            if (q->ids[i] == tk->sp.mask) labels[i] = tk->sp.mask; /* marks the row; the loss is not used */
        }
        ElectraInput in = {.B = 1, .T = T, .input_ids = q->ids, .attention_mask = mask, .labels = labels};
        tape_reset(&t);
        tape_nograd_begin(&t);
        GenOut g;
        generator_forward(&t, m, &in, &g);
        tape_nograd_end(&t);
        json_t *jq = json ? json_object() : NULL, *jmasks = json ? json_array() : NULL;
        if (!json) printf("query %ld: %s\n", qi + 1, q->text);
        for (int r = 0; r < g.n_masked; r++) {
            const real *row = g.logits->data + (size_t)r * V;
            double mx = -INFINITY, sum = 0;
            for (int v = 0; v < V; v++) mx = fmax(mx, (double)row[v]);
            for (int v = 0; v < V; v++) sum += exp((double)row[v] - mx);
            for (int v = 0; v < V; v++) c[v] = (Cand){exp((double)row[v] - mx) / sum, v};
            qsort(c, (size_t)V, sizeof(Cand), cmp_cand);
            json_t *jl = json ? json_array() : NULL;
            if (!json) printf("  [MASK] %d:", r + 1);
            for (int k = 0; k < K; k++) {
                char *s = token_text(tk, c[k].id);
                if (json) {
                    json_t *o = json_object();
                    json_object_set_new(o, "token", json_integer(c[k].id));
                    json_t *js = json_string(s); /* a lone byte token is not UTF-8 text */
                    json_object_set_new(o, "token_str", js ? js : json_string("\xef\xbf\xbd"));
                    json_object_set_new(o, "score", json_real(c[k].p));
                    json_array_append_new(jl, o);
                } else {
                    printf("%s '%s' %.4f", k ? " |" : "", s, c[k].p);
                }
                free(s);
            }
            if (json) json_array_append_new(jmasks, jl);
            else putchar('\n');
        }
        if (json) {
            json_t *jids = json_array();
            for (int i = 0; i < T; i++) json_array_append_new(jids, json_integer(q->ids[i]));
            json_object_set_new(jq, "query", json_string(q->text));
            json_object_set_new(jq, "input_ids", jids);
            json_object_set_new(jq, "masks", jmasks);
            char *line = json_dumps(jq, JSON_COMPACT | JSON_REAL_PRECISION(17));
            puts(line);
            free(line);
            json_decref(jq);
        }
        free(mask);
        free(labels);
    }
    if (fflush(stdout)) fatal("fill-mask: cannot write the output (%s)", io_reason(errno));
    free(c);
    tape_free(&t);
    electra_free(m);
    free(m);
    for (long i = 0; i < nq; i++) { free(qs[i].text); free(qs[i].ids); }
    free(qs);
    tokfile_free(tk);
    return 0;
}
