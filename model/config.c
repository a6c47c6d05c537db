/* config.c — see config.h.  One table of keys drives parsing, flags and the writer. */
#include "model/config.h"
#include "autograd/base/keytable.h"
#include "autograd/base/util.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The codecs of the keys whose values are names. */
static int terms_parse(void *base, void *p, const char *v) {
    const int m = config_parse_terms(v);
    if (m < 0) return -1;
    *(int *)p = m;
    return 0;
}
static const char *terms_name(const void *base, const void *p) { return config_terms_str(*(const int *)p); }
static int norm_parse(void *base, void *p, const char *v) {
    if (strcmp(v, "layer_norm") && strcmp(v, "none")) return -1;
    *(int *)p = !strcmp(v, "layer_norm");
    return 0;
}
static const char *norm_name(const void *base, const void *p) { return *(const int *)p ? "layer_norm" : "none"; }
static int sharing_parse(void *base, void *p, const char *v) {
    if (!strcmp(v, "gdes")) *(int *)p = SHARE_GDES;
    else if (!strcmp(v, "es")) *(int *)p = SHARE_ES;
    else if (!strcmp(v, "nes") || !strcmp(v, "none")) *(int *)p = SHARE_NES;
    else return -1;
    return 0;
}
static const char *sharing_name(const void *base, const void *p) { return config_sharing_str(*(const int *)p); }
static int mode_parse(void *base, void *p, const char *v) {
    if (!strcmp(v, "decoupled")) *(int *)p = TRAIN_DECOUPLED;
    else if (!strcmp(v, "joint")) *(int *)p = TRAIN_JOINT;
    else return -1;
    return 0;
}
static const char *mode_name(const void *base, const void *p) { return config_mode_str(*(const int *)p); }
static const KeyCodec TERMS = {terms_parse, terms_name}, NORM = {norm_parse, norm_name}, SHARING = {sharing_parse, sharing_name},
                      MODE = {mode_parse, mode_name};

/* One row per key: the key is also its flag (`--hidden_size` or `--hidden-size`); `want` ends the
 * message of a bad value ("hidden_size: 'x' is not an integer"). */
#define INT(k) {#k, #k, NULL, KEY_INT, KEY_FIELD(ModelConfig, k), 0, 0, "is not an integer", 0, NULL}
#define DBL(k) {#k, #k, NULL, KEY_DOUBLE, KEY_FIELD(ModelConfig, k), 0, 0, "is not a number", 0, NULL}
#define BOOL(k, fl) {#k, #k, NULL, KEY_BOOL, KEY_FIELD(ModelConfig, k), 0, 0, "is not a boolean (true/false/1/0)", fl, NULL}
#define NAMED(k, codec, want) {#k, #k, NULL, KEY_CUSTOM, KEY_FIELD(ModelConfig, k), 0, 0, want, 0, &codec}
static const KeyRow KEYS[] = {
    INT(hidden_size), INT(num_hidden_layers), INT(num_attention_heads), INT(attention_head_size), INT(intermediate_size),
    INT(vocab_size), INT(max_position_embeddings), INT(position_buckets), INT(max_relative_positions),
    {"pos_att_type", "pos_att_type", NULL, KEY_CUSTOM, KEY_FIELD(ModelConfig, att_terms), 0, 0,
     "must be a non-empty '|'-list of c2c, c2p, p2c", 0, &TERMS},
    BOOL(share_att_key, 0), NAMED(norm_rel_ebd, NORM, "(layer_norm or none)"),
    DBL(layer_norm_eps), DBL(hidden_dropout_prob), DBL(attention_probs_dropout_prob), DBL(initializer_range),
    INT(gen_num_hidden_layers), BOOL(use_emd, 0), NAMED(embedding_sharing, SHARING, "(gdes, es or nes)"), DBL(rtd_lambda),
    NAMED(training_mode, MODE, "(decoupled or joint)"),
    BOOL(disc_position_biased_input, KEY_SKIP_ZERO), /* added later: written only when on */
    INT(pad_id), INT(cls_id), INT(sep_id), INT(unk_id), INT(mask_id), INT(max_seq_len),
};
#undef INT
#undef DBL
#undef BOOL
#undef NAMED
#define N_KEYS ((int)(sizeof(KEYS) / sizeof(KEYS[0])))

void config_defaults(ModelConfig *c) {
    memset(c, 0, sizeof *c);
    c->hidden_size = 256;
    c->num_hidden_layers = 4;
    c->num_attention_heads = 4;
    c->attention_head_size = 64;
    c->intermediate_size = 1024;
    c->vocab_size = 8192;
    c->max_position_embeddings = 512;
    c->position_buckets = 64;
    c->max_relative_positions = -1; /* -> max_position_embeddings: no distance clamp below it, as Hugging Face */
    c->att_terms = ATT_ALL;
    c->share_att_key = 1;
    c->norm_rel_ebd = 1;
    c->layer_norm_eps = 1e-7;
    c->hidden_dropout_prob = 0.1;
    c->attention_probs_dropout_prob = 0.1;
    c->initializer_range = 0.02;
    c->gen_num_hidden_layers = 0;
    c->use_emd = 1;
    c->embedding_sharing = SHARE_GDES;
    c->rtd_lambda = 10.0;
    c->training_mode = TRAIN_DECOUPLED;
    c->pad_id = 0;
    c->cls_id = 1;
    c->sep_id = 2;
    c->unk_id = 3;
    c->mask_id = 4;
    c->max_seq_len = 128;
}

int config_preset(ModelConfig *c, const char *name) {
    if (!strcmp(name, "tiny")) {
        /* No dropout in pretraining (docs/RECIPE.md, "The new default"): at this size and budget it
         * gave the higher MLM accuracy and fixed-corruption AUC; fine-tuning sets its own dropout. */
        config_defaults(c);
        c->hidden_dropout_prob = 0;
        c->attention_probs_dropout_prob = 0;
        return 0;
    }
    if (!strcmp(name, "xsmall")) { /* spec §6.1; vocab 8192 for our tokenizer */
        config_defaults(c);
        c->hidden_size = 384;
        c->num_hidden_layers = 12;
        c->num_attention_heads = 6;
        c->attention_head_size = 64;
        c->intermediate_size = 1536;
        c->position_buckets = 256;
        c->max_relative_positions = -1; /* -> 512 */
        c->max_seq_len = 512;
        return 0;
    }
    if (!strcmp(name, "test")) { /* S = PB = 8, R = 16 rows; matches the reference's `test` preset */
        config_defaults(c);
        c->hidden_size = 16;
        c->num_hidden_layers = 2;
        c->num_attention_heads = 2;
        c->attention_head_size = 8;
        c->intermediate_size = 32;
        c->vocab_size = 40;
        c->max_position_embeddings = 32;
        c->position_buckets = 8;
        c->max_relative_positions = 16;
        c->gen_num_hidden_layers = 2;
        c->max_seq_len = 32;
        return 0;
    }
    return -1;
}

/* ---------------- terms, enums ---------------- */

int config_parse_terms(const char *s) {
    int m = 0;
    const char *p = s;
    while (*p) {
        while (*p == '|' || *p == ',' || *p == '+' || isspace((unsigned char)*p)) p++;
        if (!*p) break;
        size_t n = strcspn(p, "|,+ \t");
        if (n == 3 && !strncmp(p, "c2c", 3)) m |= ATT_C2C;
        else if (n == 3 && !strncmp(p, "c2p", 3)) m |= ATT_C2P;
        else if (n == 3 && !strncmp(p, "p2c", 3)) m |= ATT_P2C;
        else return -1;
        p += n;
    }
    return m ? m : -1;
}

const char *config_terms_str(int terms) {
    static const char *names[8] = {"", "c2c", "c2p", "c2c|c2p", "p2c", "c2c|p2c", "c2p|p2c", "c2c|c2p|p2c"};
    return names[terms & 7];
}

const char *config_sharing_str(int s) { return s == SHARE_GDES ? "gdes" : s == SHARE_ES ? "es" : "nes"; }
const char *config_mode_str(int m) { return m == TRAIN_JOINT ? "joint" : "decoupled"; }

/* ---------------- setting keys ---------------- */

/* "hidden-size" or "hidden_size" */
static const KeyRow *find_key(const char *key) { return key_find(KEYS, N_KEYS, key, 1); }

int config_set(ModelConfig *c, const char *key, const char *value, char *err, size_t errlen) {
    if (!strcmp(key, "preset")) {
        if (config_preset(c, value)) return errf(err, errlen, "unknown preset '%s' (tiny, xsmall, test)", value);
        return 0;
    }
    const KeyRow *k = find_key(key);
    if (!k) return errf(err, errlen, "unknown config key '%s'", key);
    if (key_set(k, c, value, 0)) return errf(err, errlen, "%s: '%s' %s", k->key, value, k->want);
    return 0;
}

int config_text_each(const char *text, int (*fn)(const char *key, const char *value, void *ctx), void *ctx) {
    return key_text_each(text, fn, ctx);
}

typedef struct {
    ModelConfig *c;
    const char *what;
    char *err;
    size_t errlen;
} FromText;

static int from_text_line(const char *k, const char *v, void *vctx) {
    FromText *x = vctx;
    char msg[512];
    if (!v || !*k || !strcmp(k, "preset")) return 0;
    if (config_set(x->c, k, v, msg, sizeof msg) && strncmp(msg, "unknown config key", 18)) {
        errf(x->err, x->errlen, "%s: config: %s", x->what, msg);
        return 1;
    }
    return 0;
}

int config_from_text(ModelConfig *c, const char *text, const char *what, char *err, size_t errlen) {
    FromText x = {c, what, err, errlen};
    const int rc = config_text_each(text, from_text_line, &x);
    if (rc < 0) return errf(err, errlen, "%s: out of memory", what);
    return rc ? -1 : 0;
}

int config_load(ModelConfig *c, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) return errf(err, errlen, "config %s: cannot open (%s)", path, strerror(errno));
    if (file_is_empty(path)) return fclose(f), errf(err, errlen, "config %s: " FILE_EMPTY, path);
    char line[1024], msg[512];
    int ln = 0;
    while (fgets(line, sizeof line, f)) {
        ln++;
        if (!strchr(line, '\n') && !feof(f)) {
            fclose(f);
            return errf(err, errlen, "config %s:%d: line longer than %zu bytes", path, ln, sizeof line - 2);
        }
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char *s = key_trim(line);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            fclose(f);
            return errf(err, errlen, "config %s:%d: expected 'key = value', got '%s'", path, ln, s);
        }
        *eq = 0;
        char *key = key_trim(s), *val = key_trim(eq + 1);
        if (config_set(c, key, val, msg, sizeof msg)) {
            fclose(f);
            return errf(err, errlen, "config %s:%d: %s", path, ln, msg);
        }
    }
    fclose(f);
    return 0;
}

int config_parse_flag(ModelConfig *c, int argc, char **argv, int *i, char *err, size_t errlen) {
    const char *a = argv[*i];
    if (strncmp(a, "--", 2)) return 0;
    const char *key = a + 2;
    if (strcmp(key, "preset") && !find_key(key)) return 0;
    if (*i + 1 >= argc) return errf(err, errlen, "flag %s needs a value", a);
    char msg[512];
    if (config_set(c, key, argv[*i + 1], msg, sizeof msg)) return errf(err, errlen, "flag %s: %s", a, msg);
    *i += 1;
    return 1;
}

/* ---------------- validation ---------------- */

int config_att_span(const ModelConfig *c) { return c->position_buckets > 0 ? c->position_buckets : c->max_relative_positions; }
int config_rel_rows(const ModelConfig *c) { return 2 * config_att_span(c); }
int config_num_terms(const ModelConfig *c) {
    return !!(c->att_terms & ATT_C2C) + !!(c->att_terms & ATT_C2P) + !!(c->att_terms & ATT_P2C);
}

int config_validate(ModelConfig *c, char *err, size_t errlen) {
#define POS(field)                                                                                   \
    if (c->field < 1) return errf(err, errlen, "config: " #field " must be >= 1 (got %d)", c->field)
    POS(hidden_size);
    POS(num_hidden_layers);
    POS(num_attention_heads);
    POS(intermediate_size);
    POS(vocab_size);
    POS(max_position_embeddings);
    POS(max_seq_len);
#undef POS
    if (c->attention_head_size < 0) return errf(err, errlen, "config: attention_head_size must be >= 0 (0 = hidden/heads)");
    if (c->attention_head_size == 0) {
        if (c->hidden_size % c->num_attention_heads)
            return errf(err, errlen, "config: hidden_size %d is not divisible by num_attention_heads %d", c->hidden_size,
                        c->num_attention_heads);
        c->attention_head_size = c->hidden_size / c->num_attention_heads;
    }
    if (c->max_relative_positions < 1) c->max_relative_positions = c->max_position_embeddings;
    if (c->position_buckets > 0) {
        /* make_log_bucket_position needs ln((MRP-1)/mid) > 0, i.e. MRP - 1 > mid = PB/2 */
        if (c->position_buckets < 2)
            return errf(err, errlen, "config: position_buckets %d is too small (>= 2, or <= 0 for none)", c->position_buckets);
        if (c->max_relative_positions - 1 <= c->position_buckets / 2)
            return errf(err, errlen,
                        "config: position_buckets %d is larger than allowed for max_relative_positions %d "
                        "(need max_relative_positions - 1 > position_buckets / 2)",
                        c->position_buckets, c->max_relative_positions);
    } else {
        c->position_buckets = -1;
    }
    if (c->att_terms <= 0 || c->att_terms > ATT_ALL)
        return errf(err, errlen, "config: pos_att_type selects no attention term (need a non-empty subset of c2c|c2p|p2c)");
    if (c->share_att_key != 1)
        return errf(err, errlen, "config: share_att_key = false is not supported (DeBERTa-V3 shares the attention key)");
    if (!(c->layer_norm_eps > 0)) return errf(err, errlen, "config: layer_norm_eps must be > 0 (got %g)", c->layer_norm_eps);
    if (c->hidden_dropout_prob < 0 || c->hidden_dropout_prob >= 1)
        return errf(err, errlen, "config: hidden_dropout_prob must be in [0, 1) (got %g)", c->hidden_dropout_prob);
    if (c->attention_probs_dropout_prob < 0 || c->attention_probs_dropout_prob >= 1)
        return errf(err, errlen, "config: attention_probs_dropout_prob must be in [0, 1) (got %g)", c->attention_probs_dropout_prob);
    if (!(c->initializer_range > 0)) return errf(err, errlen, "config: initializer_range must be > 0 (got %g)", c->initializer_range);
    if (c->gen_num_hidden_layers < 0) return errf(err, errlen, "config: gen_num_hidden_layers must be >= 0 (0 = half)");
    if (c->gen_num_hidden_layers == 0) c->gen_num_hidden_layers = c->num_hidden_layers / 2 > 0 ? c->num_hidden_layers / 2 : 1;
    if (c->rtd_lambda < 0) return errf(err, errlen, "config: rtd_lambda must be >= 0 (got %g)", c->rtd_lambda);
    const int ids[5] = {c->pad_id, c->cls_id, c->sep_id, c->unk_id, c->mask_id};
    const char *names[5] = {"pad_id", "cls_id", "sep_id", "unk_id", "mask_id"};
    for (int i = 0; i < 5; i++) {
        if (ids[i] < 0 || ids[i] >= c->vocab_size)
            return errf(err, errlen, "config: %s %d is outside the vocabulary [0, %d)", names[i], ids[i], c->vocab_size);
        for (int j = 0; j < i; j++)
            if (ids[i] == ids[j]) return errf(err, errlen, "config: %s and %s are both %d", names[j], names[i], ids[i]);
    }
    if (c->max_seq_len < 2 || c->max_seq_len > c->max_position_embeddings)
        return errf(err, errlen, "config: max_seq_len %d must be in [2, max_position_embeddings = %d]", c->max_seq_len,
                    c->max_position_embeddings);
    return 0;
}

/* ---------------- writer ---------------- */

void config_write(const ModelConfig *c, FILE *f) {
    for (int i = 0; i < N_KEYS; i++) {
        if ((KEYS[i].flags & KEY_SKIP_ZERO) && key_is_zero(&KEYS[i], c)) continue;
        fprintf(f, "%s = ", KEYS[i].key);
        key_write_value(&KEYS[i], c, f);
        fputc('\n', f);
    }
}

char *config_to_text(const ModelConfig *c) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) fatal("out of memory");
    config_write(c, f);
    fclose(f);
    return buf;
}

int config_save(const ModelConfig *c, const char *path, char *err, size_t errlen) {
    AtomicFile af;
    if (atomic_open(&af, path) != 0) return errf(err, errlen, "config %s.tmp: cannot write (%s)", path, strerror(errno));
    fprintf(af.f, "# deberta.c model config (resolved)\n");
    config_write(c, af.f);
    if (atomic_commit(&af) != 0) return errf(err, errlen, "config %s: write failed (%s)", path, strerror(errno));
    return 0;
}
