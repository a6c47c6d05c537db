/* hf_config.c — see hf_config.h.  A small JSON reader for one flat object: values are numbers,
 * strings, booleans, null, arrays of those, or nested objects (skipped). */
#include "train/cli/hf_config.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/util.h"

enum { JV_NONE, JV_NUM, JV_STR, JV_BOOL, JV_NULL, JV_LIST, JV_OBJ };
typedef struct {
    int kind;
    double num;
    char str[256];   /* strings; a list of strings joined with '|' */
    int list_ok;     /* a list holding only strings */
} JVal;

typedef struct {
    const char *p, *end;
    int bad;
} JR;

static void jr_ws(JR *r) {
    while (r->p < r->end && strchr(" \t\r\n", *r->p)) r->p++;
}
static int jr_str(JR *r, char *out, size_t cap) {
    jr_ws(r);
    if (r->p >= r->end || *r->p != '"') return r->bad = 1, -1;
    r->p++;
    size_t n = 0;
    while (r->p < r->end && *r->p != '"') {
        char c = *r->p++;
        if (c == '\\' && r->p < r->end) {
            c = *r->p++;
            if (c == 'u') { /* keys and values we read are ASCII; keep a marker */
                if (r->end - r->p < 4) return r->bad = 1, -1;
                r->p += 4;
                c = '?';
            } else if (c == 'n') c = '\n';
            else if (c == 't') c = '\t';
        }
        if (n + 1 < cap) out[n++] = c;
    }
    if (r->p >= r->end) return r->bad = 1, -1;
    r->p++;
    out[n] = 0;
    return 0;
}
static void jr_value(JR *r, JVal *v, int depth) {
    jr_ws(r);
    memset(v, 0, sizeof *v);
    if (r->p >= r->end || depth > 16) {
        r->bad = 1;
        return;
    }
    char c = *r->p;
    if (c == '"') {
        v->kind = JV_STR;
        jr_str(r, v->str, sizeof v->str);
    } else if (c == '{' || c == '[') {
        v->kind = c == '{' ? JV_OBJ : JV_LIST;
        v->list_ok = 1;
        r->p++;
        jr_ws(r);
        char close = c == '{' ? '}' : ']';
        if (r->p < r->end && *r->p == close) {
            r->p++;
            return;
        }
        for (;;) {
            if (c == '{') {
                char k[256];
                if (jr_str(r, k, sizeof k)) return;
                jr_ws(r);
                if (r->p >= r->end || *r->p != ':') {
                    r->bad = 1;
                    return;
                }
                r->p++;
            }
            JVal e;
            jr_value(r, &e, depth + 1);
            if (r->bad) return;
            if (c == '[') {
                if (e.kind != JV_STR) v->list_ok = 0;
                else if (strlen(v->str) + strlen(e.str) + 2 < sizeof v->str) {
                    if (v->str[0]) strcat(v->str, "|");
                    strcat(v->str, e.str);
                }
            }
            jr_ws(r);
            if (r->p < r->end && *r->p == ',') {
                r->p++;
                continue;
            }
            if (r->p < r->end && *r->p == close) {
                r->p++;
                return;
            }
            r->bad = 1;
            return;
        }
    } else if (!strncmp(r->p, "true", 4) || !strncmp(r->p, "false", 5)) {
        v->kind = JV_BOOL;
        v->num = *r->p == 't';
        r->p += *r->p == 't' ? 4 : 5;
    } else if (!strncmp(r->p, "null", 4)) {
        v->kind = JV_NULL;
        r->p += 4;
    } else {
        char *e;
        v->kind = JV_NUM;
        v->num = strtod(r->p, &e);
        if (e == r->p || e > r->end) r->bad = 1;
        r->p = e;
    }
}

static int set_err(char *err, size_t errlen, const char *path, const char *fmt, const char *key, double v) {
    char what[512];
    snprintf(what, sizeof what, fmt, key, v);
    snprintf(err, errlen, "config %.900s: %s", path, what);
    return -1;
}

int hf_config_read(const char *path, ModelConfig *c, char *err, size_t errlen) {
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
        snprintf(err, errlen, "config %.900s: cannot read (%s)", path, strerror(errno));
        return -1;
    }
    if (len == 0) {
        free(text);
        snprintf(err, errlen, "config %.900s: " FILE_EMPTY, path);
        return -1;
    }
    JR r = {text, text + len, 0};
    jr_ws(&r);
    if (r.p >= r.end || *r.p != '{') {
        free(text);
        snprintf(err, errlen, "config %.900s: not a JSON object", path);
        return -1;
    }
    r.p++;
    int seen_mrp = 0, seen_pb = 0, seen_rel = 0, rc = 0;
    /* Hugging Face's defaults for what config.json may leave out */
    c->att_terms = ATT_C2C;
    c->attention_head_size = 0; /* hidden_size / heads */
    c->norm_rel_ebd = 0;        /* "none" */
    c->layer_norm_eps = 1e-7;
    c->hidden_dropout_prob = c->attention_probs_dropout_prob = 0.1;
    c->initializer_range = 0.02;
    c->pad_id = 0;
    const char *required[] = {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                              "max_position_embeddings"};
    for (size_t k = 0; k < sizeof required / sizeof *required; k++) {
        char q[64];
        snprintf(q, sizeof q, "\"%s\"", required[k]);
        if (!strstr(text, q)) {
            snprintf(err, errlen, "config %.900s: the key \"%s\" is missing", path, required[k]);
            free(text);
            return -1;
        }
    }
    int terms_seen = 0;
    for (int first = 1;; first = 0) {
        jr_ws(&r);
        if (r.p < r.end && *r.p == '}') {
            r.p++;
            break;
        }
        if (!first) {
            if (r.p >= r.end || *r.p != ',') {
                r.bad = 1;
                break;
            }
            r.p++;
        }
        char key[256];
        JVal v;
        if (jr_str(&r, key, sizeof key)) break;
        jr_ws(&r);
        if (r.p >= r.end || *r.p != ':') {
            r.bad = 1;
            break;
        }
        r.p++;
        jr_value(&r, &v, 0);
        if (r.bad) break;
        static const struct { const char *k; size_t off; } ints[] = {
            {"vocab_size", offsetof(ModelConfig, vocab_size)}, {"hidden_size", offsetof(ModelConfig, hidden_size)},
            {"num_hidden_layers", offsetof(ModelConfig, num_hidden_layers)}, {"num_attention_heads", offsetof(ModelConfig, num_attention_heads)},
            {"intermediate_size", offsetof(ModelConfig, intermediate_size)}, {"max_position_embeddings", offsetof(ModelConfig, max_position_embeddings)},
            {"attention_head_size", offsetof(ModelConfig, attention_head_size)}, {"position_buckets", offsetof(ModelConfig, position_buckets)},
            {"max_relative_positions", offsetof(ModelConfig, max_relative_positions)}, {"pad_token_id", offsetof(ModelConfig, pad_id)}};
        static const struct { const char *k; size_t off; } dbls[] = {
            {"layer_norm_eps", offsetof(ModelConfig, layer_norm_eps)}, {"hidden_dropout_prob", offsetof(ModelConfig, hidden_dropout_prob)},
            {"attention_probs_dropout_prob", offsetof(ModelConfig, attention_probs_dropout_prob)},
            {"initializer_range", offsetof(ModelConfig, initializer_range)}};
        int done = 0;
        for (size_t i = 0; i < sizeof ints / sizeof *ints && !done; i++)
            if (!strcmp(key, ints[i].k)) {
                done = 1;
                if (v.kind == JV_NULL) continue;
                if (v.kind != JV_NUM || v.num != floor(v.num) || fabs(v.num) > 1e9) {
                    rc = set_err(err, errlen, path, "%s must be an integer", key, 0);
                    goto out;
                }
                *(int *)((char *)c + ints[i].off) = (int)v.num;
                seen_mrp |= !strcmp(key, "max_relative_positions");
                seen_pb |= !strcmp(key, "position_buckets");
            }
        for (size_t i = 0; i < sizeof dbls / sizeof *dbls && !done; i++)
            if (!strcmp(key, dbls[i].k)) {
                done = 1;
                if (v.kind != JV_NUM) {
                    rc = set_err(err, errlen, path, "%s must be a number", key, 0);
                    goto out;
                }
                *(double *)((char *)c + dbls[i].off) = v.num;
            }
        if (done) continue;
        seen_rel |= !strcmp(key, "relative_attention");
        if (!strcmp(key, "model_type") && (v.kind != JV_STR || (strcmp(v.str, "deberta-v2") && strcmp(v.str, "deberta_v2")))) {
            rc = set_err(err, errlen, path, "model_type is '%s', expected \"deberta-v2\"", v.str, 0);
            goto out;
        }
        if ((!strcmp(key, "relative_attention") && !(v.kind == JV_BOOL && v.num)) ||
            (!strcmp(key, "share_att_key") && !(v.kind == JV_BOOL && v.num)) ||
            (!strcmp(key, "position_biased_input") && !(v.kind == JV_BOOL && !v.num))) {
            rc = set_err(err, errlen, path, "%s has a value this implementation does not support (DeBERTa-V3 has relative_attention "
                         "true, share_att_key true, position_biased_input false)", key, 0);
            goto out;
        }
        if (!strcmp(key, "hidden_act") && !(v.kind == JV_STR && !strcmp(v.str, "gelu"))) {
            rc = set_err(err, errlen, path, "hidden_act '%s' is not supported (only exact \"gelu\")", v.str, 0);
            goto out;
        }
        if ((!strcmp(key, "type_vocab_size") || !strcmp(key, "conv_kernel_size")) && v.kind == JV_NUM && v.num != 0) {
            rc = set_err(err, errlen, path, "%s = %g is not supported (must be 0)", key, v.num);
            goto out;
        }
        if (!strcmp(key, "norm_rel_ebd")) {
            if (v.kind != JV_STR) continue;
            c->norm_rel_ebd = strstr(v.str, "layer_norm") != NULL;
            if (!c->norm_rel_ebd && strcmp(v.str, "none") && v.str[0]) {
                rc = set_err(err, errlen, path, "norm_rel_ebd '%s' is not supported (\"layer_norm\" or \"none\")", v.str, 0);
                goto out;
            }
        }
        if (!strcmp(key, "pos_att_type")) {
            terms_seen = 1;
            if ((v.kind != JV_STR && v.kind != JV_LIST) || (v.kind == JV_LIST && !v.list_ok)) {
                rc = set_err(err, errlen, path, "pos_att_type must be a list of \"c2p\"/\"p2c\" or a '|' string", key, 0);
                goto out;
            }
            int t = v.str[0] ? config_parse_terms(v.str) : 0;
            if (t < 0) {
                rc = set_err(err, errlen, path, "pos_att_type '%s' has an unknown term", v.str, 0);
                goto out;
            }
            c->att_terms = ATT_C2C | t;
        }
    }
    jr_ws(&r);
    if (r.bad || r.p != r.end) {
        snprintf(err, errlen, "config %.900s: malformed JSON near byte %ld", path, (long)(r.p - text));
        rc = -1;
        goto out;
    }
    if (!seen_rel) {
        snprintf(err, errlen, "config %.900s: relative_attention is not set (Hugging Face's default is false: no relative "
                 "attention, which this implementation does not support)", path);
        rc = -1;
        goto out;
    }
    (void)terms_seen; /* absent pos_att_type: Hugging Face's default, c2c only (att_terms as set above) */
    if (!seen_pb || c->position_buckets < 0) c->position_buckets = 0;
    if (!seen_mrp || c->max_relative_positions < 1) c->max_relative_positions = -1;
out:
    free(text);
    return rc;
}
