/* dump.c — the dump of the pair on one batch; see dump.h. */
#include "train/parity/dump.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/tape.h"
#include "autograd/base/keytable.h"
#include "autograd/base/util.h"
#include "data/h5util.h"
#include "train/step.h"

void dump_options_default(DumpOptions *o) { memset(o, 0, sizeof *o); }

#define STR(fl) {NULL, #fl, NULL, KEY_STR, KEY_FIELD(DumpOptions, fl), 0, 0, "", 0, NULL}
static const KeyRow KEYS[] = {STR(weights), STR(batch), STR(out), STR(config)};
#undef STR

int dump_options_set_flag(DumpOptions *o, const char *flag, const char *value, char *err, size_t errlen) {
    return key_set_flag(KEYS, (int)(sizeof KEYS / sizeof KEYS[0]), o, flag, value, err, errlen);
}

static void write_enc(H5Out *w, const char *who, const EncoderOut *e, int n_layers) {
    char name[128];
    snprintf(name, sizeof name, "%s/embedding_output", who);
    h5out_real(w, name, e->emb->ndim, e->emb->shape, e->emb->data);
    for (int n = 0; n < n_layers; n++) {
        snprintf(name, sizeof name, "%s/hidden_states/layer_%d", who, n);
        h5out_real(w, name, e->layers[n]->ndim, e->layers[n]->shape, e->layers[n]->data);
    }
}

/* The dump file: every activation, logit and loss of both models, every parameter gradient, and
 * the attributes that say how they were computed. */
static int write_dump(const char *out, const ModelConfig *c, const Electra *m, const GenOut *g, const DiscOut *d, char *err, size_t errlen) {
    H5Out w;
    if (h5out_create(&w, "output", out, 0, err, errlen)) return -1;
    write_enc(&w, "generator", &g->enc, m->gen.n_layers);
    if (c->use_emd) {
        h5out_real(&w, "generator/emd/pass_1", g->emd[0]->ndim, g->emd[0]->shape, g->emd[0]->data);
        h5out_real(&w, "generator/emd/pass_2", g->emd[1]->ndim, g->emd[1]->shape, g->emd[1]->data);
    }
    h5out_real(&w, "generator/mlm_logits", g->logits->ndim, g->logits->shape, g->logits->data);
    h5out_real(&w, "generator/loss", 0, NULL, g->loss->data);
    write_enc(&w, "discriminator", &d->enc, m->disc.n_layers);
    h5out_real(&w, "discriminator/rtd_logits", d->logits->ndim, d->logits->shape, d->logits->data);
    h5out_real(&w, "discriminator/loss", 0, NULL, d->loss->data);
    char name[600];
    for (int i = 0; i < m->ps.n; i++) {
        const Tensor *p = m->ps.params[i];
        snprintf(name, sizeof name, "grad/%s", p->name);
        h5out_real(&w, name, p->ndim, p->shape, m->ps.grad + m->ps.offset[i]);
    }
    h5out_attr_bytes(&w, "producer", "deberta dump");
    h5out_attr_bytes(&w, "dtype", REAL_IS_DOUBLE ? "float64" : "float32");
    h5out_attr_bytes(&w, "embedding_sharing", config_sharing_str(c->embedding_sharing));
    h5out_attr_bytes(&w, "training_mode", config_mode_str(c->training_mode));
    h5out_attr_i64(&w, "use_emd", c->use_emd);
    return h5out_close(&w, err, errlen);
}

int dump_pair(Electra *m, const ModelConfig *cfg, const Batch *b, const int32_t *replaced, const char *out, DumpResult *r, char *err,
              size_t errlen) {
    const int decoupled = cfg->training_mode == TRAIN_DECOUPLED;
    m->gen_all_layers = 1; /* the dump holds every generator layer's output, the unused last one too */
    Tape tg, td;
    tape_init(&tg, 1 << 24);
    tape_init(&td, 1 << 24);
    tg.training = td.training = 0;
    params_zero_grad(&m->ps);

    GenOut g;
    DiscOut d;
    const ElectraInput in = electra_input(b);
    Tensor *lg = generator_forward(&tg, m, &in, &g);
    tape_backward(&tg, lg, 1);
    /* decoupled: keep the generator's MLM gradients, whatever the discriminator's backward adds */
    const int ng = m->n_gen_params;
    long gtotal = 0;
    for (int i = 0; i < ng; i++) gtotal += m->ps.params[i]->n;
    real *gsave = NULL;
    if (decoupled) {
        gsave = xmalloc((size_t)gtotal * sizeof(real));
        for (int i = 0, k = 0; i < ng; k += (int)m->ps.params[i]->n, i++)
            memcpy(gsave + k, m->ps.grad + m->ps.offset[i], (size_t)m->ps.params[i]->n * sizeof(real));
    }
    Tensor *ld = discriminator_forward(&td, m, &in, replaced, &d);
    tape_backward(&td, ld, 1);
    if (decoupled)
        for (long i = 0, k = 0; i < ng; k += m->ps.params[i]->n, i++)
            memcpy(m->ps.grad + m->ps.offset[i], gsave + k, (size_t)m->ps.params[i]->n * sizeof(real));

    const int rc = write_dump(out, cfg, m, &g, &d, err, errlen);
    *r = (DumpResult){(double)g.loss->data[0], (double)d.loss->data[0], g.n_masked};
    free(gsave);
    tape_free(&tg);
    tape_free(&td);
    return rc;
}
