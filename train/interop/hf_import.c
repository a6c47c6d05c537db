/* hf_import.c — see hf_import.h. */
#include "train/interop/hf_import.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/base/util.h"
#include "train/interop/hf_config.h"

int hf_folder_open(HfFolder *f, const char *dir, ModelConfig *c, char *err, size_t errlen) {
    char path[4200], msg[1600];
    memset(f, 0, sizeof *f);
    f->dir = dir;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (c && hf_config_read(path, c, msg, sizeof msg)) return errf(err, errlen, "import: %s", msg);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    f->st = safetensors_open(path, msg, sizeof msg);
    if (!f->st) {
        snprintf(path, sizeof path, "%s/pytorch_model.bin", dir);
        if (access(path, F_OK) == 0)
            return errf(err, errlen, "import: %s has pytorch_model.bin but no model.safetensors: convert it with "
                        "/usr/bin/python3 scripts/convert-to-safetensors.py %s", dir, dir);
        return errf(err, errlen, "import: %s", msg);
    }
    f->used = xcalloc((size_t)f->st->n + 1, 1);
    /* DebertaV2Model.save_pretrained: the encoder without its "deberta." prefix */
    f->bare = !safetensors_find(f->st, "deberta.embeddings.word_embeddings.weight") &&
              safetensors_find(f->st, "embeddings.word_embeddings.weight");
    return 0;
}

void hf_folder_close(HfFolder *f) {
    if (f->st) safetensors_close(f->st);
    free(f->used);
    memset(f, 0, sizeof *f);
}

/* The tensor of our name ("deberta." for the encoder) in f, or NULL. */
static const StTensor *find(const HfFolder *f, const char *name) {
    return safetensors_find(f->st, f->bare && !strncmp(name, "deberta.", 8) ? name + 8 : name);
}

static void shape_text(const StTensor *e, char *buf, size_t cap) {
    buf[0] = 0;
    for (int d = 0; d < e->ndim; d++) snprintf(buf + strlen(buf), cap - strlen(buf), d ? ", %lld" : "%lld", (long long)e->shape[d]);
}

/* e is [rows, cols]; else -1 with "KEYS: config.json says VALUES, tensor 'NAME' has shape [...]". */
static int want_2d(const HfFolder *f, const StTensor *e, long long rows, long long cols, const char *keys, const char *values, char *err,
                   size_t errlen) {
    if (e->ndim == 2 && e->shape[0] == rows && e->shape[1] == cols) return 0;
    char a[128];
    shape_text(e, a, sizeof a);
    return errf(err, errlen, "import: %s/config.json has %s %s, but tensor '%s' of %s/model.safetensors has shape [%s] (config and weights "
                "disagree)", f->dir, keys, values, e->name, f->dir, a);
}

int hf_folder_check(const HfFolder *f, const ModelConfig *c, int n_layers, char *err, size_t errlen) {
    const int H = c->hidden_size;
    char v[160];
    const StTensor *e = find(f, "deberta.embeddings.word_embeddings.weight");
    if (!e) return errf(err, errlen, "import: %s/model.safetensors has no tensor 'deberta.embeddings.word_embeddings.weight' (is it a DebertaV2 model?)", f->dir);
    snprintf(v, sizeof v, "%d and %d", c->vocab_size, H);
    if (want_2d(f, e, c->vocab_size, H, "vocab_size and hidden_size", v, err, errlen)) return -1;
    /* the layers the file holds: encoder.layer.N.* for N in [0, held) */
    const char *lp = f->bare ? "encoder.layer." : "deberta.encoder.layer.";
    const size_t lpn = strlen(lp);
    long held = 0;
    for (int i = 0; i < f->st->n; i++)
        if (!strncmp(f->st->t[i].name, lp, lpn)) {
            char *end;
            const long l = strtol(f->st->t[i].name + lpn, &end, 10);
            if (end != f->st->t[i].name + lpn && *end == '.' && l >= 0 && l < 1000000 && l + 1 > held) held = l + 1;
        }
    if (n_layers > held)
        return errf(err, errlen, "import: %s/config.json has num_hidden_layers %d, but %s/model.safetensors holds %ld layer%s (%s0 to %s%ld; config and "
                    "weights disagree)", f->dir, n_layers, f->dir, held, held == 1 ? "" : "s", lp, lp, held - 1);
    if ((e = find(f, "deberta.encoder.layer.0.attention.self.query_proj.weight"))) {
        snprintf(v, sizeof v, "%d x %d and %d", c->num_attention_heads, c->attention_head_size, H);
        if (want_2d(f, e, (long long)c->num_attention_heads * c->attention_head_size, H, "num_attention_heads x attention_head_size and hidden_size", v,
                    err, errlen))
            return -1;
    }
    if ((e = find(f, "deberta.encoder.layer.0.intermediate.dense.weight"))) {
        snprintf(v, sizeof v, "%d and %d", c->intermediate_size, H);
        if (want_2d(f, e, c->intermediate_size, H, "intermediate_size and hidden_size", v, err, errlen)) return -1;
    }
    if ((e = find(f, "deberta.embeddings.position_embeddings.weight"))) {
        snprintf(v, sizeof v, "%d and %d", c->max_position_embeddings, H);
        if (want_2d(f, e, c->max_position_embeddings, H, "max_position_embeddings and hidden_size", v, err, errlen)) return -1;
    }
    if ((e = find(f, "deberta.encoder.rel_embeddings.weight"))) {
        snprintf(v, sizeof v, "%d (%d rows) and %d", c->position_buckets > 0 ? c->position_buckets : c->max_relative_positions, config_rel_rows(c), H);
        if (want_2d(f, e, config_rel_rows(c), H, c->position_buckets > 0 ? "position_buckets and hidden_size" : "max_relative_positions and hidden_size",
                    v, err, errlen))
            return -1;
    }
    return 0;
}

/* Copies tensor `name` (our name, "deberta." for the encoder) of f into t: 1 read, 0 absent, -1 on
 * an error (err). */
static int take(HfFolder *f, const char *name, Tensor *t, char *err, size_t errlen) {
    const char *stored = f->bare && !strncmp(name, "deberta.", 8) ? name + 8 : name;
    const StTensor *e = safetensors_find(f->st, stored);
    if (!e) return 0;
    if (e->dtype == ST_OTHER)
        return errf(err, errlen, "import: %s/model.safetensors: tensor '%s' has dtype %s, expected a float (F32, F16, BF16 or F64)",
                    f->dir, stored, e->dtype_name);
    int ok = e->ndim == t->ndim;
    for (int d = 0; ok && d < t->ndim; d++) ok = e->shape[d] == t->shape[d];
    if (!ok) {
        char a[128] = "", b[128] = "";
        for (int d = 0; d < e->ndim; d++) snprintf(a + strlen(a), sizeof a - strlen(a), d ? ", %lld" : "%lld", (long long)e->shape[d]);
        for (int d = 0; d < t->ndim; d++) snprintf(b + strlen(b), sizeof b - strlen(b), d ? ", %d" : "%d", t->shape[d]);
        return errf(err, errlen, "import: %s/model.safetensors: tensor '%s' has shape [%s] but %s/config.json implies [%s] (config and "
                    "weights disagree)", f->dir, stored, a, f->dir, b);
    }
    safetensors_read(f->st, e, t->data);
    for (long i = 0; i < t->n; i++)
        if (!(t->data[i] - t->data[i] == 0)) return errf(err, errlen, "import: %s/model.safetensors: tensor '%s' holds NaN or Inf", f->dir, stored);
    f->used[e - f->st->t] = 1;
    return 1;
}

/* The MLM head (suffix after "lm_predictions.lm_head.") under the official name or the
 * cls.predictions one; both present (older exports of this project write both): they must agree. */
static int take_head(HfFolder *f, const char *suffix, Tensor *t, char *err, size_t errlen) {
    static const char *from[5] = {"dense.weight", "dense.bias", "LayerNorm.weight", "LayerNorm.bias", "bias"};
    static const char *to[5] = {"cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
                                "cls.predictions.transform.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias",
                                "cls.predictions.bias"};
    char n[256];
    snprintf(n, sizeof n, "lm_predictions.lm_head.%s", suffix);
    const int a = take(f, n, t, err, errlen);
    if (a < 0) return -1;
    for (int k = 0; k < 5; k++) {
        if (strcmp(suffix, from[k])) continue;
        if (!a) return take(f, to[k], t, err, errlen);
        const StTensor *e = safetensors_find(f->st, to[k]);
        if (e) {
            real *tmp = xmalloc((size_t)t->n * sizeof(real));
            if (e->numel == t->n) safetensors_read(f->st, e, tmp);
            const int same = e->numel == t->n && !memcmp(tmp, t->data, (size_t)t->n * sizeof(real));
            free(tmp);
            if (!same) return errf(err, errlen, "import: %s: '%s' and '%s' are both present and differ", f->dir, n, to[k]);
            f->used[e - f->st->t] = 1;
        }
        return 1;
    }
    return a;
}

void hf_folder_warn_unused(const HfFolder *f) {
    int n = 0;
    char list[600] = "";
    for (int i = 0; i < f->st->n; i++) {
        if (f->used[i]) continue;
        const char *nm = f->st->t[i].name;
        if (!strcmp(nm, "cls.predictions.decoder.weight") || !strcmp(nm, "lm_predictions.lm_head.decoder.weight")) continue; /* tied */
        if (n++ < 4) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", n > 1 ? ", " : "", nm);
    }
    if (n) warn("import: %s: %d tensor(s) not used (%s%s)", f->dir, n, list, n > 4 ? ", ..." : "");
}

static void note_init(HfImported *r, const char *name) {
    if (r->n_init++ < 3)
        snprintf(r->init_list + strlen(r->init_list), sizeof r->init_list - strlen(r->init_list), "%s%s", r->n_init > 1 ? ", " : "", name);
}

#define TRY(x) do { if ((x) < 0) goto out; } while (0)

int hf_import_electra(Electra *m, HfFolder *d, HfFolder *g, HfImported *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    const int gdes = m->cfg.embedding_sharing == SHARE_GDES;
    const size_t gp = strlen("generator."), dp = strlen("discriminator.");
    real *dw_buf = NULL, *dp_buf = NULL;
    int got, rc = -1;
    /* discriminator */
    int rtd_found = 0, rtd_n = 0;
    for (int i = m->n_gen_params; i < m->ps.n; i++) {
        Tensor *t = m->ps.params[i];
        if (t == m->word_delta || t == m->pos_delta) continue;
        const char *name = t->name + dp;
        TRY(got = take(d, name, t, err, errlen));
        if (!strncmp(name, "mask_predictions.", 17)) {
            rtd_n++;
            rtd_found += got;
        } else if (!got) {
            if (strcmp(name, "deberta.embeddings.position_embeddings.weight"))
                return errf(err, errlen, "import: %s/model.safetensors has no tensor '%s' (is it a DebertaV2 model of this config?)", d->dir, name);
            note_init(r, t->name);
        }
    }
    if (rtd_found && rtd_found != rtd_n)
        return errf(err, errlen, "import: %s/model.safetensors has only %d of the %d mask_predictions.* tensors", d->dir, rtd_found, rtd_n);
    if (!rtd_found) note_init(r, "discriminator.mask_predictions.*");
    /* the discriminator's tables, as NES would hold them (under GDES they live in the generator + deltas) */
    const Tensor *dword = params_find(&m->ps, "discriminator.deberta.embeddings.word_embeddings.weight");
    const Tensor *dpos = params_find(&m->ps, "discriminator.deberta.embeddings.position_embeddings.weight");
    if (gdes) {
        Tensor tw = *m->gen.word, tp = *m->gen.position;
        tw.data = dw_buf = xmalloc((size_t)tw.n * sizeof(real));
        tp.data = dp_buf = xmalloc((size_t)tp.n * sizeof(real));
        TRY(got = take(d, "deberta.embeddings.word_embeddings.weight", &tw, err, errlen));
        if (!got) {
            errf(err, errlen, "import: %s/model.safetensors has no tensor 'deberta.embeddings.word_embeddings.weight'", d->dir);
            goto out;
        }
        TRY(got = take(d, "deberta.embeddings.position_embeddings.weight", &tp, err, errlen));
        if (!got) memcpy(dp_buf, m->gen.position->data, (size_t)tp.n * sizeof(real));
    }
    /* generator */
    for (int i = 0; i < m->n_gen_params; i++) {
        Tensor *t = m->ps.params[i];
        const char *name = t->name + gp;
        const int is_head = !strncmp(name, "lm_predictions.lm_head.", 23);
        const int is_word = !strcmp(name, "deberta.embeddings.word_embeddings.weight");
        const int is_pos = !strcmp(name, "deberta.embeddings.position_embeddings.weight");
        got = 0;
        if (g) {
            TRY(got = is_head ? take_head(g, name + 23, t, err, errlen) : take(g, name, t, err, errlen));
            if (!got && !is_pos && !is_head) {
                errf(err, errlen, "import: %s/model.safetensors has no tensor '%s' (is it a DebertaV2 model of this config?)", g->dir, name);
                goto out;
            }
        } else if (is_head) {
            TRY(got = take_head(d, name + 23, t, err, errlen));
        } else if (is_word || is_pos) {
            const real *src = gdes ? (is_word ? dw_buf : dp_buf) : (is_word ? dword : dpos)->data;
            memcpy(t->data, src, (size_t)t->n * sizeof(real));
            got = 1;
        }
        if (!got && (g || is_head)) note_init(r, t->name);
    }
    if (gdes) { /* E_Δ = E_D − E_G */
        for (long k = 0; k < m->word_delta->n; k++) m->word_delta->data[k] = dw_buf[k] - m->gen.word->data[k];
        for (long k = 0; k < m->pos_delta->n; k++) m->pos_delta->data[k] = dp_buf[k] - m->gen.position->data[k];
    }
    rc = 0;
out:
    free(dw_buf);
    free(dp_buf);
    return rc;
}
