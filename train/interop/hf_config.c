/* hf_config.c — see hf_config.h. */
#include "train/interop/hf_config.h"
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"

static int cfg_fail(char *err, size_t errlen, const char *path, const char *fmt, const char *key, double v) {
    char what[512];
    snprintf(what, sizeof what, fmt, key, v);
    return errf(err, errlen, "config %.900s: %s", path, what);
}

/* A string, or a list of strings joined with '|', into a malloc'd string; NULL for anything else. */
static char *joined_strings(const json_t *v) {
    if (json_is_string(v)) return xstrdup(json_string_value(v));
    if (!json_is_array(v)) return NULL;
    size_t len = 1, i;
    json_t *e;
    json_array_foreach(v, i, e) {
        if (!json_is_string(e)) return NULL;
        len += json_string_length(e) + 1;
    }
    char *out = xcalloc(len, 1);
    json_array_foreach(v, i, e) {
        if (i) strcat(out, "|");
        strcat(out, json_string_value(e));
    }
    return out;
}

/* The integer keys and the largest value each may take here: far above every published DeBERTa
 * (V3-large: vocabulary 128,100, width 1,024, 24 layers, feed-forward 4,096, 512 positions), low enough
 * that a config.json cannot ask for terabytes before its tensors are looked at (hf_folder_check then
 * holds the sizes to the tensors' shapes). */
static const struct { const char *k; size_t off; int max; } INTS[] = {
    {"vocab_size", offsetof(ModelConfig, vocab_size), HF_MAX_VOCAB}, {"hidden_size", offsetof(ModelConfig, hidden_size), HF_MAX_WIDTH},
    {"num_hidden_layers", offsetof(ModelConfig, num_hidden_layers), HF_MAX_LAYERS},
    {"num_attention_heads", offsetof(ModelConfig, num_attention_heads), HF_MAX_WIDTH},
    {"intermediate_size", offsetof(ModelConfig, intermediate_size), 4 * HF_MAX_WIDTH},
    {"max_position_embeddings", offsetof(ModelConfig, max_position_embeddings), HF_MAX_POSITIONS},
    {"attention_head_size", offsetof(ModelConfig, attention_head_size), HF_MAX_WIDTH},
    {"position_buckets", offsetof(ModelConfig, position_buckets), HF_MAX_POSITIONS},
    {"max_relative_positions", offsetof(ModelConfig, max_relative_positions), HF_MAX_POSITIONS},
    {"pad_token_id", offsetof(ModelConfig, pad_id), HF_MAX_VOCAB}};
static const struct { const char *k; size_t off; } DBLS[] = {
    {"layer_norm_eps", offsetof(ModelConfig, layer_norm_eps)}, {"hidden_dropout_prob", offsetof(ModelConfig, hidden_dropout_prob)},
    {"attention_probs_dropout_prob", offsetof(ModelConfig, attention_probs_dropout_prob)},
    {"initializer_range", offsetof(ModelConfig, initializer_range)}};
static const char *const REQUIRED[] = {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                                       "max_position_embeddings"};

/* One key of config.json applied to c; 0, or -1 with the message. */
static int apply_key(const char *path, const char *key, const json_t *v, ModelConfig *c, char *err, size_t errlen) {
    const char *s = json_is_string(v) ? json_string_value(v) : "";
    for (size_t i = 0; i < sizeof INTS / sizeof *INTS; i++)
        if (!strcmp(key, INTS[i].k)) {
            if (json_is_null(v)) return 0;
            const double x = json_number_value(v);
            if (!json_is_number(v) || x != floor(x)) return cfg_fail(err, errlen, path, "%s must be an integer", key, 0);
            if (x > INTS[i].max)
                return errf(err, errlen, "config %.900s: %s %.0f is above the bound %d of this implementation (is it this model's config.json?)",
                            path, key, x, INTS[i].max);
            if (x < -INTS[i].max) return errf(err, errlen, "config %.900s: %s %.0f is below the bound -%d", path, key, x, INTS[i].max);
            *(int *)((char *)c + INTS[i].off) = (int)x;
            return 0;
        }
    for (size_t i = 0; i < sizeof DBLS / sizeof *DBLS; i++)
        if (!strcmp(key, DBLS[i].k)) {
            if (!json_is_number(v)) return cfg_fail(err, errlen, path, "%s must be a number", key, 0);
            *(double *)((char *)c + DBLS[i].off) = json_number_value(v);
            return 0;
        }
    if (!strcmp(key, "model_type") && (!json_is_string(v) || (strcmp(s, "deberta-v2") && strcmp(s, "deberta_v2"))))
        return cfg_fail(err, errlen, path, "model_type is '%s', expected \"deberta-v2\"", s, 0);
    if ((!strcmp(key, "relative_attention") && !json_is_true(v)) || (!strcmp(key, "share_att_key") && !json_is_true(v)) ||
        (!strcmp(key, "position_biased_input") && !json_is_false(v)))
        return cfg_fail(err, errlen, path, "%s has a value this implementation does not support (DeBERTa-V3 has relative_attention "
                        "true, share_att_key true, position_biased_input false)", key, 0);
    if (!strcmp(key, "hidden_act") && !(json_is_string(v) && !strcmp(s, "gelu")))
        return cfg_fail(err, errlen, path, "hidden_act '%s' is not supported (only exact \"gelu\")", s, 0);
    if ((!strcmp(key, "type_vocab_size") || !strcmp(key, "conv_kernel_size")) && json_is_number(v) && json_number_value(v) != 0)
        return cfg_fail(err, errlen, path, "%s = %g is not supported (must be 0)", key, json_number_value(v));
    if (!strcmp(key, "norm_rel_ebd") && json_is_string(v)) {
        c->norm_rel_ebd = strstr(s, "layer_norm") != NULL;
        if (!c->norm_rel_ebd && strcmp(s, "none") && s[0])
            return cfg_fail(err, errlen, path, "norm_rel_ebd '%s' is not supported (\"layer_norm\" or \"none\")", s, 0);
    }
    if (!strcmp(key, "pos_att_type")) {
        char *terms = joined_strings(v);
        if (!terms) return cfg_fail(err, errlen, path, "pos_att_type must be a list of \"c2p\"/\"p2c\" or a '|' string", key, 0);
        const int t = terms[0] ? config_parse_terms(terms) : 0;
        if (t < 0) cfg_fail(err, errlen, path, "pos_att_type '%s' has an unknown term", terms, 0);
        free(terms);
        if (t < 0) return -1;
        c->att_terms = ATT_C2C | t;
    }
    return 0;
}

int hf_config_read(const char *path, ModelConfig *c, char *err, size_t errlen) {
    if (file_is_empty(path)) return errf(err, errlen, "config %.900s: " FILE_EMPTY, path);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        if (je.line < 0) return errf(err, errlen, "config %.900s: cannot read (%s)", path, je.text);
        return errf(err, errlen, "config %.900s: malformed JSON at line %d, column %d: %s", path, je.line, je.column, je.text);
    }
    int rc = 0;
    if (!json_is_object(root)) rc = errf(err, errlen, "config %.900s: not a JSON object", path);
    for (size_t k = 0; !rc && k < sizeof REQUIRED / sizeof *REQUIRED; k++)
        if (!json_object_get(root, REQUIRED[k])) rc = errf(err, errlen, "config %.900s: the key \"%s\" is missing", path, REQUIRED[k]);
    if (!rc && !json_object_get(root, "relative_attention"))
        rc = errf(err, errlen, "config %.900s: relative_attention is not set (Hugging Face's default is false: no relative "
                  "attention, which this implementation does not support)", path);
    if (!rc) { /* Hugging Face's defaults for what config.json may leave out (pos_att_type: c2c only) */
        c->att_terms = ATT_C2C;
        c->attention_head_size = 0; /* hidden_size / heads */
        c->norm_rel_ebd = 0;        /* "none" */
        c->layer_norm_eps = 1e-7;
        c->hidden_dropout_prob = c->attention_probs_dropout_prob = 0.1;
        c->initializer_range = 0.02;
        c->pad_id = 0;
    }
    const char *key;
    json_t *v;
    json_object_foreach(rc ? NULL : root, key, v) {
        if ((rc = apply_key(path, key, v, c, err, errlen))) break;
    }
    if (!rc) {
        const json_t *pb = json_object_get(root, "position_buckets"), *mrp = json_object_get(root, "max_relative_positions");
        if (!json_is_number(pb) || c->position_buckets < 0) c->position_buckets = 0;
        if (!json_is_number(mrp) || c->max_relative_positions < 1) c->max_relative_positions = -1;
    }
    json_decref(root);
    return rc;
}

/* Shortest decimal that round-trips, always with a '.' or exponent (a JSON float, not an int). */
static void json_double(FILE *f, double v) {
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    if (!strpbrk(buf, ".eEn")) strcat(buf, ".0");
    fputs(buf, f);
}

int hf_config_write(const char *path, const ModelConfig *c, int n_layers, const char *arch, const char *extra, int legacy, char *err,
                    size_t errlen) {
    AtomicFile af;
    if (atomic_open(&af, path) != 0) return errf(err, errlen, "export: cannot create %.900s.tmp (%s)", path, strerror(errno));
    FILE *f = af.f;
    fprintf(f, "{\n  \"model_type\": \"deberta-v2\",\n  \"architectures\": [\"%s\"],\n", arch);
    fprintf(f, "  \"vocab_size\": %d,\n  \"hidden_size\": %d,\n  \"num_hidden_layers\": %d,\n", c->vocab_size, c->hidden_size, n_layers);
    fprintf(f, "  \"num_attention_heads\": %d,\n  \"intermediate_size\": %d,\n", c->num_attention_heads, c->intermediate_size);
    if (c->attention_head_size * c->num_attention_heads != c->hidden_size)
        fprintf(f, "  \"attention_head_size\": %d,\n", c->attention_head_size); /* HF reads it when present */
    fprintf(f, "  \"hidden_act\": \"gelu\",\n  \"hidden_dropout_prob\": ");
    json_double(f, c->hidden_dropout_prob);
    fprintf(f, ",\n  \"attention_probs_dropout_prob\": ");
    json_double(f, c->attention_probs_dropout_prob);
    fprintf(f, ",\n  \"max_position_embeddings\": %d,\n  \"type_vocab_size\": 0,\n  \"initializer_range\": ", c->max_position_embeddings);
    json_double(f, c->initializer_range);
    fprintf(f, ",\n  \"layer_norm_eps\": ");
    json_double(f, c->layer_norm_eps);
    fprintf(f, ",\n  \"relative_attention\": true,\n  \"max_relative_positions\": %d,\n  \"position_buckets\": %d,\n",
            c->max_relative_positions, c->position_buckets > 0 ? c->position_buckets : -1);
    fprintf(f, "  \"norm_rel_ebd\": \"%s\",\n  \"share_att_key\": true,\n  \"pos_att_type\": [", c->norm_rel_ebd ? "layer_norm" : "none");
    int k = 0;
    if (c->att_terms & ATT_P2C) fprintf(f, "%s\"p2c\"", k++ ? ", " : "");
    if (c->att_terms & ATT_C2P) fprintf(f, "%s\"c2p\"", k++ ? ", " : "");
    fprintf(f, "],\n  \"position_biased_input\": false,\n  \"pad_token_id\": %d,\n", c->pad_id);
    fprintf(f, "  \"pooler_hidden_size\": %d,\n  \"pooler_dropout\": 0,\n  \"pooler_hidden_act\": \"gelu\",\n%s  \"legacy\": %s\n}\n",
            c->hidden_size, extra ? extra : "", legacy ? "true" : "false");
    if (atomic_commit(&af) != 0) return errf(err, errlen, "export: cannot write %.900s (%s)", path, strerror(errno));
    return 0;
}

/* s as a JSON string: '"' and '\' escaped, control bytes as \u00XX, the rest (UTF-8) as it is. */
static void json_str(char *buf, size_t cap, size_t *k, const char *s) {
    *k += (size_t)snprintf(buf + *k, cap - *k, "\"");
    for (; *s && *k + 8 < cap; s++) {
        if (*s == '"' || *s == '\\') *k += (size_t)snprintf(buf + *k, cap - *k, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) *k += (size_t)snprintf(buf + *k, cap - *k, "\\u%04x", *s);
        else buf[(*k)++] = *s;
    }
    *k += (size_t)snprintf(buf + *k, cap - *k, "\"");
}

char *hf_config_labels(const char *const *names, int L, int regression) {
    size_t cap = 256, k = 0;
    for (int l = 0; l < L; l++) cap += 2 * (6 * strlen(names[l]) + 32);
    char *extra = xmalloc(cap);
    if (regression) k += (size_t)snprintf(extra + k, cap - k, "  \"problem_type\": \"regression\",\n");
    k += (size_t)snprintf(extra + k, cap - k, "  \"num_labels\": %d,\n  \"id2label\": {", L);
    for (int l = 0; l < L; l++) {
        k += (size_t)snprintf(extra + k, cap - k, "%s\"%d\": ", l ? ", " : "", l);
        json_str(extra, cap, &k, names[l]);
    }
    k += (size_t)snprintf(extra + k, cap - k, "},\n  \"label2id\": {");
    for (int l = 0; l < L; l++) {
        if (l) k += (size_t)snprintf(extra + k, cap - k, ", ");
        json_str(extra, cap, &k, names[l]);
        k += (size_t)snprintf(extra + k, cap - k, ": %d", l);
    }
    snprintf(extra + k, cap - k, "},\n");
    return extra;
}
