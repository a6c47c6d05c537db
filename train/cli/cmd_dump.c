/* cmd_dump.c — `deberta dump`: for one explicit batch, every intermediate, both losses and every
 * parameter gradient of the generator/discriminator pair into a plain HDF5 file (names and
 * gradient semantics in docs/FORMATS.md "Parity and dump files").  The tool for
 * gradient-correctness experiments against any other implementation (scripts/reference/).
 *
 * Config: defaults < the weights file's root attributes (or a checkpoint's config text) < --config FILE
 * < --key value flags.
 * Dropout is always 0 (forced, with a note when the config says otherwise).
 * Gradients: decoupled — generator.* from the MLM loss only (one backward), discriminator.* from
 * λ·RTD only (a second backward on its own tape; any RTD gradient it adds to generator tensors, as
 * under ES, is discarded); joint — both backwards accumulate: the gradient of MLM + λ·RTD.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/tape.h"
#include "autograd/base/util.h"
#include "model/electra.h"
#include "train/checkpoint.h"
#include "train/step.h"
#include "train/cli/cli.h"
#include "train/outpath.h"
#include "data/h5util.h"
#include "train/cli/h5io.h"
#include "train/cli/model_source.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: deberta dump --weights W.h5 --batch B.h5 --out D.h5 [--config C] [--key value ...]\n"
            "\n"
            "Runs the generator and the discriminator on one explicit batch (dropout 0) and writes every\n"
            "intermediate, both losses and every parameter gradient to D.h5 (plain HDF5; layout in\n"
            "docs/FORMATS.md, \"Parity and dump files\").\n"
            "\n"
            "  --weights W.h5   parameters (one root dataset per full name: generator.*, discriminator.*)\n"
            "                   and the config as root attributes, or a training checkpoint\n"
            "                   (RUNDIR/checkpoint.h5: /params and the /config text) (required)\n"
            "  --batch B.h5     input_ids, attention_mask, labels, replaced_ids [B,T] int32 (required)\n"
            "  --out D.h5       output file, written atomically (required)\n"
            "  --config C       config file (key = value lines); overrides the weights' attributes\n"
            "  --KEY VALUE      any config key (e.g. --training_mode joint); overrides both\n"
            "  --help           this text\n"
            "\n"
            "Outputs: generator/{embedding_output, hidden_states/layer_N, emd/pass_1, emd/pass_2,\n"
            "mlm_logits, loss}, discriminator/{embedding_output, hidden_states/layer_N, rtd_logits, loss},\n"
            "grad/<parameter name>.  decoupled: generator grads of the MLM loss, discriminator grads of\n"
            "rtd_lambda * RTD; joint: all grads of their sum.\n");
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
static void write_dump(const char *out, const ModelConfig *c, const Electra *m, const GenOut *g, const DiscOut *d) {
    char err[1024];
    H5Out w;
    if (h5out_create(&w, "output", out, 0, err, sizeof err)) fatal("%s", err);
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
    if (h5out_close(&w, err, sizeof err)) fatal("%s", err);
}

int cmd_dump(int argc, char **argv) {
    const char *weights = NULL, *batch_path = NULL, *out = NULL, *config_path = NULL;
    char err[1024];
    /* pass 1: files and help; config flags are applied in pass 2, after the attributes */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        const char **dst = !strcmp(a, "--weights") ? &weights
                           : !strcmp(a, "--batch") ? &batch_path
                           : !strcmp(a, "--out")   ? &out
                           : !strcmp(a, "--config") ? &config_path
                                                    : NULL;
        if (dst) {
            if (i + 1 >= argc) return cli_usage_error("dump", "flag needs a value: %s", a);
            *dst = argv[++i];
            continue;
        }
        if (strncmp(a, "--", 2) || i + 1 >= argc) return cli_usage_error("dump", "unknown argument %s", a);
        i++; /* a --key value pair, checked in pass 2 */
    }
    if (!weights) return cli_usage_error("dump", "--weights is required");
    if (!batch_path) return cli_usage_error("dump", "--batch is required");
    if (!out) return cli_usage_error("dump", "--out is required");
    const char *ins[3] = {weights, batch_path, config_path};
    if (out_path_check("--out", out, OUT_FILE, ins, 3, err, sizeof err)) fatal("dump: %s", err);

    ModelConfig cfg;
    ModelSource src;
    model_source_config(&src, weights, 1, &cfg);
    if (!src.is_checkpoint && src.n_full < 5)
        warn("dump: weights %s lacks some full-model attributes (gen_num_hidden_layers, embedding_sharing, rtd_lambda, use_emd, "
             "training_mode); the defaults or --config/flags fill them",
             weights);
    if (config_path && config_load(&cfg, config_path, err, sizeof err)) fatal("%s", err);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--weights") || !strcmp(a, "--batch") || !strcmp(a, "--out") || !strcmp(a, "--config")) {
            i++;
            continue;
        }
        int r = config_parse_flag(&cfg, argc, argv, &i, err, sizeof err);
        if (r < 0) fatal("dump: %s", err);
        if (r == 0) return cli_usage_error("dump", "unknown flag %s", a);
    }
    if (cfg.hidden_dropout_prob != 0 || cfg.attention_probs_dropout_prob != 0)
        fprintf(stderr, "dump: note: dropout forced to 0 (config has hidden %g, attention %g)\n", cfg.hidden_dropout_prob,
                cfg.attention_probs_dropout_prob);
    cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = 0;
    if (config_validate(&cfg, err, sizeof err)) fatal("dump: %s", err);

    /* ES under decoupled training: the official trainer's semantics (the shared table gets MLM
     * gradients only); electra_build insists on joint for training, so build as joint */
    const int decoupled = cfg.training_mode == TRAIN_DECOUPLED;
    ModelConfig build_cfg = cfg;
    if (cfg.embedding_sharing == SHARE_ES && decoupled) {
        warn("dump: ES under decoupled training: the shared embedding gets MLM gradients only (official behaviour, spec 5.2); "
             "use --training_mode joint for a true ES baseline");
        build_cfg.training_mode = TRAIN_JOINT;
    }
    Electra m;
    model_source_load(&src, &m, &build_cfg, 0);
    model_source_free(&src);
    m.gen_all_layers = 1; /* the dump holds every generator layer's output, the unused last one too */

    Batch b;
    int32_t *replaced, *position_ids;
    if (h5io_read_batch(batch_path, cfg.vocab_size, cfg.max_position_embeddings, &b, &replaced, &position_ids, err, sizeof err))
        fatal("%s", err);
    if (position_ids) {
        for (long i = 0; i < (long)b.B * b.T; i++)
            if (position_ids[i] != (int32_t)(i % b.T))
                fatal("batch %s: position_ids[%ld, %ld] = %d: only the default 0..T-1 positions are supported by the C generator", batch_path,
                      i / b.T, i % b.T, position_ids[i]);
    }
    if (cfg.use_emd && b.T > cfg.max_position_embeddings)
        fatal("batch %s: T = %d exceeds max_position_embeddings %d (the EMD reads absolute position rows)", batch_path, b.T,
              cfg.max_position_embeddings);

    Tape tg, td;
    tape_init(&tg, 1 << 24);
    tape_init(&td, 1 << 24);
    tg.training = td.training = 0;
    params_zero_grad(&m.ps);

    GenOut g;
    DiscOut d;
    const ElectraInput in = electra_input(&b);
    Tensor *lg = generator_forward(&tg, &m, &in, &g);
    tape_backward(&tg, lg, 1);
    /* decoupled: keep the generator's MLM gradients, whatever the discriminator's backward adds */
    const int ng = m.n_gen_params;
    long gtotal = 0;
    for (int i = 0; i < ng; i++) gtotal += m.ps.params[i]->n;
    real *gsave = NULL;
    if (decoupled) {
        gsave = xmalloc((size_t)gtotal * sizeof(real));
        for (int i = 0, k = 0; i < ng; k += (int)m.ps.params[i]->n, i++)
            memcpy(gsave + k, m.ps.grad + m.ps.offset[i], (size_t)m.ps.params[i]->n * sizeof(real));
    }
    Tensor *ld = discriminator_forward(&td, &m, &in, replaced, &d);
    tape_backward(&td, ld, 1);
    if (decoupled)
        for (long i = 0, k = 0; i < ng; k += m.ps.params[i]->n, i++)
            memcpy(m.ps.grad + m.ps.offset[i], gsave + k, (size_t)m.ps.params[i]->n * sizeof(real));

    write_dump(out, &cfg, &m, &g, &d);

    printf("dump: %s/%s emd=%d  mlm_loss=%.9g  rtd_loss=%.9g  masked=%d  (%d tensors, dropout 0) -> %s\n",
           config_sharing_str(cfg.embedding_sharing), config_mode_str(cfg.training_mode), cfg.use_emd, (double)g.loss->data[0],
           (double)d.loss->data[0], g.n_masked, m.ps.n, out);

    free(gsave);
    free(replaced);
    free(position_ids);
    batch_free(&b);
    tape_free(&tg);
    tape_free(&td);
    electra_free(&m);
    return 0;
}
