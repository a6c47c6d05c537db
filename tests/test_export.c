/* test_export.c — export_run (train/interop/export_run.h, `deberta export`) from a checkpoint written by checkpoint_save (an Electra's
 * ParamSet + config text + tokenizer bytes), for GDES, ES and NES: the safetensors files are read
 * back by a separate minimal reader written here (not the writer's code): header length, JSON
 * entries, F32 dtype, shapes, contiguous in-range offsets, byte-exact values (the discriminator's
 * tables = E_G + E_Δ under GDES, E_G under ES, its own under NES); config.json keys; tokenizer.json.
 *
 * With EXPORT_KEEP=DIR in the environment the GDES checkpoint and its export are left in DIR
 * (tests/e2e-parity-dump.sh reads them with Python as a second, independent reader). */
#include "tests/testutil.h"
#include "tests/bpeutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include "data/tokenizer.h"
#include "model/electra.h"
#include "train/checkpoint.h"
#include "train/interop/export_run.h"

static char dir[256];
static int keep;

static int setup(void **s) {
    const char *k = getenv("EXPORT_KEEP");
    if (k && *k) {
        snprintf(dir, sizeof dir, "%s", k);
        keep = 1;
        mkdir(dir, 0777);
        return 0;
    }
    return test_tmpdir(dir, sizeof dir, "export");
}

static int teardown(void **s) {
    if (keep) return 0;
    return test_rmtree(dir);
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    b[len] = 0;
    fclose(f);
    *n = (size_t)len;
    return b;
}

/* ---- minimal safetensors reader (independent of train/interop/safetensors.c) ---- */

typedef struct {
    char name[160];
    int ndim;
    long shape[4];
    unsigned long long begin, end;
} Entry;

typedef struct {
    char *raw;
    size_t size;
    unsigned long long hlen;
    Entry e[128];
    int n;
    char *hdr; /* the JSON header */
} St;

/* The first tensor whose "crc32.<name>" metadata entry is missing or is not the CRC-32 of its bytes. */
static const char *st_bad_crc(const St *s) {
    for (int i = 0; i < s->n; i++) {
        char key[300];
        snprintf(key, sizeof key, "\"crc32.%s\":\"", s->e[i].name);
        const char *m = strstr(s->hdr, key);
        unsigned want = 0;
        if (!m || sscanf(m + strlen(key), "%8x", &want) != 1) return s->e[i].name;
        if (crc32_update(0, s->raw + 8 + s->hlen + s->e[i].begin, s->e[i].end - s->e[i].begin) != want) return s->e[i].name;
    }
    return NULL;
}

static void st_read(St *s, const char *path) {
    memset(s, 0, sizeof *s);
    s->raw = slurp(path, &s->size);
    assert_true(s->size >= 8);
    for (int i = 7; i >= 0; i--) s->hlen = (s->hlen << 8) | (unsigned char)s->raw[i];
    assert_true(s->hlen <= s->size - 8);
    assert_int_equal(s->hlen % 8, 0);
    char *h = strndup(s->raw + 8, s->hlen);
    assert_int_equal(h[0], '{');
    assert_non_null(strstr(h, "\"__metadata__\":{\"format\":\"pt\","));
    /* entries: "name":{"dtype":"F32","shape":[...],"data_offsets":[b,e]} */
    for (char *p = strstr(h, "\"dtype\""); p; p = strstr(p + 1, "\"dtype\"")) {
        Entry *e = &s->e[s->n++];
        char *q = p - 2; /* the '{' before "dtype" is at p-1, the ':' at p-2, the closing quote at p-3 */
        assert_int_equal(p[-1], '{');
        assert_int_equal(q[0], ':');
        char *end = q - 1, *start = end - 1;
        while (*start != '"') start--;
        snprintf(e->name, sizeof e->name, "%.*s", (int)(end - start - 1), start + 1);
        assert_int_equal(strncmp(p, "\"dtype\":\"F32\"", 13), 0);
        char *sh = strstr(p, "\"shape\":[");
        assert_non_null(sh);
        sh += 9;
        while (*sh != ']') {
            e->shape[e->ndim++] = strtol(sh, &sh, 10);
            if (*sh == ',') sh++;
        }
        char *off = strstr(p, "\"data_offsets\":[");
        assert_non_null(off);
        assert_int_equal(sscanf(off, "\"data_offsets\":[%llu,%llu]", &e->begin, &e->end), 2);
    }
    for (int i = 0; i < s->n; i++) assert_true(s->e[i].end <= s->size - 8 - s->hlen);
    s->hdr = h;
    const char *bad = st_bad_crc(s);
    if (bad) fail_msg("tensor '%s' does not match its CRC-32 metadata entry", bad);
    /* offsets: sorted by begin they tile [0, data size) exactly */
    unsigned long long pos = 0;
    for (int k = 0; k < s->n; k++) {
        int found = -1;
        for (int i = 0; i < s->n; i++)
            if (s->e[i].begin == pos && (found < 0 || s->e[i].end > pos)) found = i;
        if (found < 0) fail_msg("no tensor starts at data offset %llu", pos);
        long numel = 1;
        for (int d = 0; d < s->e[found].ndim; d++) numel *= s->e[found].shape[d];
        assert_int_equal(s->e[found].end - s->e[found].begin, (unsigned long long)numel * 4);
        pos = s->e[found].end;
    }
    assert_int_equal(pos, s->size - 8 - s->hlen);
}

static const Entry *st_find(const St *s, const char *name) {
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->e[i].name, name)) return &s->e[i];
    return NULL;
}

/* The tensor `name` holds exactly (float)(a + b) (b may be NULL) with a's shape. */
static void expect(const St *s, const char *name, const Tensor *a, const Tensor *b) {
    const Entry *e = st_find(s, name);
    if (!e) fail_msg("exported file lacks '%s'", name);
    assert_int_equal(e->ndim, a->ndim);
    for (int d = 0; d < a->ndim; d++) assert_int_equal(e->shape[d], a->shape[d]);
    const unsigned char *data = (const unsigned char *)s->raw + 8 + s->hlen + e->begin;
    for (long i = 0; i < a->n; i++) {
        float want = (float)(b ? a->data[i] + b->data[i] : a->data[i]), got;
        memcpy(&got, data + 4 * i, 4); /* little-endian host */
        if (memcmp(&want, &got, 4)) fail_msg("'%s'[%ld]: exported %.9g, expected %.9g", name, i, got, want);
    }
}

static void small_config(ModelConfig *c, int sharing, int vocab) {
    char err[256];
    config_defaults(c);
    c->hidden_size = 8;
    c->num_hidden_layers = 2;
    c->gen_num_hidden_layers = 1;
    c->num_attention_heads = 2;
    c->attention_head_size = 4;
    c->intermediate_size = 16;
    c->vocab_size = vocab;
    c->max_position_embeddings = 16;
    c->position_buckets = 4;
    c->max_relative_positions = 8;
    c->max_seq_len = 16;
    c->embedding_sharing = sharing;
    c->training_mode = sharing == SHARE_ES ? TRAIN_JOINT : TRAIN_DECOUPLED;
    if (config_validate(c, err, sizeof err)) fail_msg("%s", err);
}

/* export_run as `deberta export CKPT OUT [--mlm-head HEAD] [--rtd-head]` sets it up: through the option table */
static void run_export(const char *ckpt, const char *out, const char *head, int rtd) {
    ExportOptions o;
    ExportResult r;
    char err[256];
    export_options_default(&o);
    snprintf(o.src, sizeof o.src, "%s", ckpt);
    snprintf(o.outdir, sizeof o.outdir, "%s", out);
    if (head) assert_int_equal(export_options_set_flag(&o, "mlm-head", head, err, sizeof err), 1);
    if (rtd) assert_int_equal(export_options_set_flag(&o, "rtd-head", NULL, err, sizeof err), 2);
    assert_int_equal(export_run(&o, &r), 0);
    assert_int_equal(r.finetuned, 0);
    assert_int_equal(r.checkpoint, 1);
}

static void export_one(int sharing) {
    char text[] = "the quick brown fox jumps over the lazy dog. the dog sleeps; the fox runs far away again and again.";
    char err[512];
    Tokenizer *tk = test_bpe(text, 300);
    size_t ntok;
    const uint8_t *tokb = tokenizer_bytes(tk, &ntok);

    ModelConfig cfg;
    small_config(&cfg, sharing, tokenizer_vocab_size(tk));
    Electra m;
    electra_build(&m, &cfg, 7);
    /* every value distinct from its init: random deltas, biases and LN affine */
    for (int i = 0; i < m.ps.n; i++) {
        Tensor *t = m.ps.params[i];
        for (long j = 0; j < t->n; j++) t->data[j] += (real)(0.1 * rng_normal(99, (uint64_t)i, (uint64_t)j));
    }
    char *ctext = NULL;
    size_t clen = 0;
    FILE *mf = open_memstream(&ctext, &clen);
    config_write(&cfg, mf);
    fprintf(mf, "learning_rate = 0.0005\n"); /* a training key the exporter must skip */
    fclose(mf);
    CheckpointState st;
    memset(&st, 0, sizeof st);
    st.step = 42;
    st.seed = 5;
    st.config = ctext;
    st.tokenizer = (unsigned char *)tokb;
    st.n_tokenizer = ntok;
    checkpoint_set_group_step(&st, "generator", 42);
    char rundir[400], ckpt[500], out[500], path[600];
    snprintf(rundir, sizeof rundir, "%s/run-%s", dir, config_sharing_str(sharing));
    mkdir(rundir, 0777);
    if (checkpoint_save(rundir, &m.ps, NULL, &st, 0, err, sizeof err)) fail_msg("%s", err);
    snprintf(ckpt, sizeof ckpt, "%s/checkpoint.h5", rundir);
    snprintf(out, sizeof out, "%s/export-%s", dir, config_sharing_str(sharing));
    run_export(ckpt, out, "both", 1);

    St g, d;
    snprintf(path, sizeof path, "%s/generator/model.safetensors", out);
    st_read(&g, path);
    snprintf(path, sizeof path, "%s/discriminator/model.safetensors", out);
    st_read(&d, path);
    char name[300];
    for (int i = 0; i < m.n_gen_params; i++) expect(&g, m.ps.params[i]->name + strlen("generator."), m.ps.params[i], NULL);
    expect(&g, "cls.predictions.transform.dense.weight", m.lm.dense_w, NULL);
    expect(&g, "cls.predictions.transform.dense.bias", m.lm.dense_b, NULL);
    expect(&g, "cls.predictions.transform.LayerNorm.weight", m.lm.ln_g, NULL);
    expect(&g, "cls.predictions.transform.LayerNorm.bias", m.lm.ln_b, NULL);
    expect(&g, "cls.predictions.bias", m.lm.bias, NULL);
    assert_int_equal(g.n, m.n_gen_params + 5);
    int nd = 0;
    for (int i = m.n_gen_params; i < m.ps.n; i++) {
        const Tensor *t = m.ps.params[i];
        if (t == m.word_delta || t == m.pos_delta) continue;
        expect(&d, t->name + strlen("discriminator."), t, NULL);
        nd++;
    }
    const char *we = "deberta.embeddings.word_embeddings.weight", *pe = "deberta.embeddings.position_embeddings.weight";
    if (sharing == SHARE_GDES) {
        expect(&d, we, m.gen.word, m.word_delta);
        expect(&d, pe, m.gen.position, m.pos_delta);
        nd += 2;
    } else if (sharing == SHARE_ES) {
        expect(&d, we, m.gen.word, NULL);
        expect(&d, pe, m.gen.position, NULL);
        nd += 2;
    } else {
        expect(&d, we, m.disc.word, NULL);
    }
    assert_int_equal(d.n, nd);
    for (int i = 0; i < d.n; i++) assert_null(strstr(d.e[i].name, "._weight"));

    /* config.json: a few keys and types; tokenizer.json present in both folders */
    size_t n;
    snprintf(path, sizeof path, "%s/generator/config.json", out);
    char *cj = slurp(path, &n);
    assert_non_null(strstr(cj, "\"model_type\": \"deberta-v2\""));
    assert_non_null(strstr(cj, "\"num_hidden_layers\": 1,"));
    snprintf(name, sizeof name, "\"vocab_size\": %d,", cfg.vocab_size);
    assert_non_null(strstr(cj, name));
    assert_non_null(strstr(cj, "\"relative_attention\": true"));
    assert_non_null(strstr(cj, "\"position_biased_input\": false"));
    assert_non_null(strstr(cj, "\"pos_att_type\": [\"p2c\", \"c2p\"]"));
    assert_non_null(strstr(cj, "\"layer_norm_eps\": 1e-07"));
    free(cj);
    snprintf(path, sizeof path, "%s/discriminator/config.json", out);
    cj = slurp(path, &n);
    assert_non_null(strstr(cj, "\"num_hidden_layers\": 2,"));
    free(cj);
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s/tokenizer.json", out, k ? "discriminator" : "generator");
        cj = slurp(path, &n);
        assert_non_null(strstr(cj, "[MASK]"));
        free(cj);
    }
    /* a flipped byte inside one tensor's data: its checksum names it */
    const Entry *victim = &d.e[d.n / 2];
    d.raw[8 + d.hlen + (victim->begin + victim->end) / 2] ^= 0x10;
    const char *bad = st_bad_crc(&d);
    assert_non_null(bad);
    assert_string_equal(bad, victim->name);
    free(g.raw);
    free(d.raw);
    free(g.hdr);
    free(d.hdr);

    /* the layouts a transformers class expects: default = cls.predictions (legacy true), no RTD head;
     * --mlm-head official = lm_predictions.lm_head.* (legacy false) */
    for (int k = 0; k < 2; k++) {
        char out2[520];
        snprintf(out2, sizeof out2, "%s-%s", out, k ? "official" : "default");
        run_export(ckpt, out2, k ? "official" : NULL, 0);
        snprintf(path, sizeof path, "%s/generator/model.safetensors", out2);
        st_read(&g, path);
        snprintf(path, sizeof path, "%s/discriminator/model.safetensors", out2);
        st_read(&d, path);
        int n_cls = 0, n_lm = 0;
        for (int i = 0; i < g.n; i++) {
            n_cls += !strncmp(g.e[i].name, "cls.", 4);
            n_lm += !strncmp(g.e[i].name, "lm_predictions.", 15);
        }
        assert_int_equal(n_cls, k ? 0 : 5);
        assert_int_equal(n_lm, k ? 5 : 0);
        assert_int_equal(g.n, m.n_gen_params);
        assert_int_equal(d.n, nd - 6);
        for (int i = 0; i < d.n; i++) assert_null(strstr(d.e[i].name, "mask_predictions"));
        if (!k) expect(&g, "cls.predictions.bias", m.lm.bias, NULL);
        else expect(&g, "lm_predictions.lm_head.bias", m.lm.bias, NULL);
        snprintf(path, sizeof path, "%s/generator/config.json", out2);
        char *cj2 = slurp(path, &n);
        assert_non_null(strstr(cj2, k ? "\"legacy\": false" : "\"legacy\": true"));
        free(cj2);
        free(g.raw);
        free(d.raw);
        free(g.hdr);
        free(d.hdr);
    }
    free(ctext);
    tokenizer_free(tk);
    electra_free(&m);
}

/* the option table: --mlm-head's three values, a bad one refused with its message; the switches */
static void export_options(void **s) {
    ExportOptions o;
    char err[256];
    export_options_default(&o);
    assert_true(o.heads.mlm_cls && !o.heads.mlm_official && !o.heads.rtd && !o.allow_no_c2c);
    assert_int_equal(export_options_set_flag(&o, "mlm-head", "official", err, sizeof err), 1);
    assert_true(!o.heads.mlm_cls && o.heads.mlm_official);
    assert_int_equal(export_options_set_flag(&o, "mlm-head", "both", err, sizeof err), 1);
    assert_true(o.heads.mlm_cls && o.heads.mlm_official);
    assert_int_equal(export_options_set_flag(&o, "mlm-head", "lm", err, sizeof err), -1);
    assert_string_equal(err, "--mlm-head 'lm' must be cls, official or both");
    assert_int_equal(export_options_set_flag(&o, "allow-no-c2c", "x", err, sizeof err), 2);
    assert_true(o.allow_no_c2c);
    assert_int_equal(export_options_set_flag(&o, "bogus", "x", err, sizeof err), 0);
}

static void export_gdes(void **s) { export_one(SHARE_GDES); }
static void export_es(void **s) { export_one(SHARE_ES); }
static void export_nes(void **s) { export_one(SHARE_NES); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(export_options),
        cmocka_unit_test(export_gdes),
        cmocka_unit_test(export_es),
        cmocka_unit_test(export_nes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
