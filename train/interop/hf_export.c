/* hf_export.c — see hf_export.h. */
#include "train/interop/hf_export.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "train/interop/hf_config.h"
#include "train/interop/safetensors.h"

typedef struct Entries {
    StEntry *e;
    int n, cap;
    real **owned; /* buffers to free (sums) */
    int n_owned;
} Entries;

static void add_entry(Entries *es, const char *name, const Tensor *t, const real *data) {
    if (es->n == es->cap) {
        es->cap = es->cap ? 2 * es->cap : 64;
        es->e = xrealloc(es->e, (size_t)es->cap * sizeof(StEntry));
    }
    StEntry *e = &es->e[es->n++];
    memset(e, 0, sizeof *e);
    e->name = name;
    e->ndim = t->ndim;
    memcpy(e->shape, t->shape, sizeof e->shape);
    e->data = data ? data : t->data;
}

static const real *sum_of(Entries *es, const Tensor *a, const Tensor *b) {
    real *s = xmalloc((size_t)a->n * sizeof(real));
    for (long i = 0; i < a->n; i++) s[i] = a->data[i] + b->data[i];
    es->owned = xrealloc(es->owned, (size_t)(es->n_owned + 1) * sizeof(real *));
    es->owned[es->n_owned++] = s;
    return s;
}

static void entries_free(Entries *es) {
    for (int i = 0; i < es->n_owned; i++) free(es->owned[i]);
    free(es->e);
    free(es->owned);
    memset(es, 0, sizeof *es);
}

/* dir/model.safetensors and dir/config.json. */
static int write_folder(const char *dir, const Entries *es, const ModelConfig *cfg, int n_layers, const char *arch, const char *extra,
                        int legacy, char *err, size_t errlen) {
    char path[4200], msg[1024];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (safetensors_write(path, es->e, es->n, msg, sizeof msg)) return errf(err, errlen, "export: %s", msg);
    snprintf(path, sizeof path, "%s/config.json", dir);
    return hf_config_write(path, cfg, n_layers, arch, extra, legacy, err, errlen);
}

int hf_export_electra(const Electra *m, HfExportHeads heads, const char *gdir, const char *ddir, int *n_gen, int *n_disc, char *err,
                      size_t errlen) {
    const ModelConfig *cfg = &m->cfg;
    Entries ge = {0}, de = {0};
    const size_t gp = strlen("generator."), dp = strlen("discriminator.");
    /* generator: backbone + the MLM head under the chosen name(s) */
    for (int i = 0; i < m->n_gen_params; i++) {
        const char *n = m->ps.params[i]->name + gp;
        if (!heads.mlm_official && !strncmp(n, "lm_predictions.", 15)) continue;
        add_entry(&ge, n, m->ps.params[i], NULL);
    }
    if (heads.mlm_cls) {
        add_entry(&ge, "cls.predictions.transform.dense.weight", m->lm.dense_w, NULL);
        add_entry(&ge, "cls.predictions.transform.dense.bias", m->lm.dense_b, NULL);
        add_entry(&ge, "cls.predictions.transform.LayerNorm.weight", m->lm.ln_g, NULL);
        add_entry(&ge, "cls.predictions.transform.LayerNorm.bias", m->lm.ln_b, NULL);
        add_entry(&ge, "cls.predictions.bias", m->lm.bias, NULL);
    }
    /* discriminator: plain word/position tables first, then everything but the GDES deltas */
    if (cfg->embedding_sharing == SHARE_GDES) {
        add_entry(&de, "deberta.embeddings.word_embeddings.weight", m->gen.word, sum_of(&de, m->gen.word, m->word_delta));
        add_entry(&de, "deberta.embeddings.position_embeddings.weight", m->gen.position, sum_of(&de, m->gen.position, m->pos_delta));
    } else if (cfg->embedding_sharing == SHARE_ES) {
        add_entry(&de, "deberta.embeddings.word_embeddings.weight", m->gen.word, NULL);
        add_entry(&de, "deberta.embeddings.position_embeddings.weight", m->gen.position, NULL);
    }
    for (int i = m->n_gen_params; i < m->ps.n; i++) {
        const Tensor *t = m->ps.params[i];
        if (t == m->word_delta || t == m->pos_delta) continue;
        if (!heads.rtd && !strncmp(t->name + dp, "mask_predictions.", 17)) continue;
        add_entry(&de, t->name + dp, t, NULL);
    }
    int rc = write_folder(gdir, &ge, cfg, m->gen.n_layers, "DebertaV2ForMaskedLM", NULL, heads.mlm_cls, err, errlen);
    if (!rc) rc = write_folder(ddir, &de, cfg, m->disc.n_layers, "DebertaV2Model", NULL, heads.mlm_cls, err, errlen);
    *n_gen = ge.n;
    *n_disc = de.n;
    entries_free(&ge);
    entries_free(&de);
    return rc;
}

int hf_export_classifier(const ParamSet *ps, const ModelConfig *cfg, HeadKind kind, const char *const *labels, int n_labels,
                         const char *dir, int *n, char *err, size_t errlen) {
    Entries es = {0};
    for (int i = 0; i < ps->n; i++) add_entry(&es, ps->params[i]->name, ps->params[i], NULL);
    char *extra = hf_config_labels(labels, n_labels, kind == HEAD_REGRESSION);
    const char *arch = kind == HEAD_TOKEN ? "DebertaV2ForTokenClassification" : "DebertaV2ForSequenceClassification";
    const int rc = write_folder(dir, &es, cfg, cfg->num_hidden_layers, arch, extra, 1, err, errlen);
    free(extra);
    *n = es.n;
    entries_free(&es);
    return rc;
}
