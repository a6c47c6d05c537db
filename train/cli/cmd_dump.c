/* cmd_dump.c — `deberta dump`: flags, the config, the model and the batch, then train/parity/dump.h (every
 * intermediate, both losses and every parameter gradient of the pair on the batch into an HDF5 file).
 *
 * Config: defaults < the weights file's root attributes (or a checkpoint's config text) < --config FILE
 * < --key value flags.
 * Dropout is always 0 (forced, with a note when the config says otherwise).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "model/electra.h"
#include "train/checkpoint.h"
#include "train/cli/cli.h"
#include "train/outpath.h"
#include "train/h5io.h"
#include "train/model_source.h"
#include "train/parity/dump.h"

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

typedef struct DumpArgs {
    DumpOptions o;
    char **keys;           /* the --KEY VALUE config flags, in order (pairs), applied after the weights' config */
    int n_keys;
    double dropout_was[2]; /* the config's hidden and attention dropout, before they are forced to 0 */
} DumpArgs;

/* The flags: the files through dump_options_set_flag, the config flags kept for dump_config.  0; -1:
 * help printed; else a usage error's status. */
static int parse(int argc, char **argv, DumpArgs *a) {
    dump_options_default(&a->o);
    a->keys = xcalloc((size_t)argc, sizeof(char *));
    a->n_keys = 0;
    char err[1024];
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) return usage(stdout), -1;
        const int c = strncmp(f, "--", 2) ? 0 : dump_options_set_flag(&a->o, f + 2, i + 1 < argc ? argv[i + 1] : NULL, err, sizeof err);
        if (c < 0) return cli_usage_error("dump", "%s", err);
        if (c == 0 && (strncmp(f, "--", 2) || i + 1 >= argc)) return cli_usage_error("dump", "unknown argument %s", f);
        if (c == 0) a->keys[a->n_keys++] = argv[i], a->keys[a->n_keys++] = argv[i + 1]; /* checked in dump_config */
        i++;
    }
    if (!a->o.weights[0]) return cli_usage_error("dump", "--weights is required");
    if (!a->o.batch[0]) return cli_usage_error("dump", "--batch is required");
    if (!a->o.out[0]) return cli_usage_error("dump", "--out is required");
    return 0;
}

/* The config of the weights, --config, the --KEY VALUE flags; dropout forced to 0.  0, or a usage
 * error's status. */
static int dump_config(DumpArgs *a, ModelSource *src, ModelConfig *cfg) {
    char err[1024];
    model_source_config(src, a->o.weights, 1, cfg);
    if (!src->is_checkpoint && src->n_full < 5)
        warn("dump: weights %s lacks some full-model attributes (gen_num_hidden_layers, embedding_sharing, rtd_lambda, use_emd, "
             "training_mode); the defaults or --config/flags fill them",
             a->o.weights);
    if (a->o.config[0] && config_load(cfg, a->o.config, err, sizeof err)) fatal("%s", err);
    for (int i = 0; i < a->n_keys; i++) {
        const char *f = a->keys[i];
        int r = config_parse_flag(cfg, a->n_keys, a->keys, &i, err, sizeof err);
        if (r < 0) fatal("dump: %s", err);
        if (r == 0) return cli_usage_error("dump", "unknown flag %s", f);
    }
    /* the note comes after the batch is read (cmd_dump): bad input is one error line and nothing else */
    a->dropout_was[0] = cfg->hidden_dropout_prob;
    a->dropout_was[1] = cfg->attention_probs_dropout_prob;
    cfg->hidden_dropout_prob = cfg->attention_probs_dropout_prob = 0;
    if (config_validate(cfg, err, sizeof err)) fatal("dump: %s", err);
    return 0;
}

/* The batch file, checked against the config (default positions only; EMD within the positions). */
static void read_batch(const char *path, const ModelConfig *cfg, Batch *b, int32_t **replaced) {
    char err[1024];
    int32_t *position_ids;
    if (h5io_read_batch(path, cfg->vocab_size, cfg->max_position_embeddings, b, replaced, &position_ids, err, sizeof err)) fatal("%s", err);
    if (position_ids) {
        for (long i = 0; i < (long)b->B * b->T; i++)
            if (position_ids[i] != (int32_t)(i % b->T))
                fatal("batch %s: position_ids[%ld, %ld] = %d: only the default 0..T-1 positions are supported by the C generator", path,
                      i / b->T, i % b->T, position_ids[i]);
    }
    free(position_ids);
    if (cfg->use_emd && b->T > cfg->max_position_embeddings)
        fatal("batch %s: T = %d exceeds max_position_embeddings %d (the EMD reads absolute position rows)", path, b->T,
              cfg->max_position_embeddings);
}

int cmd_dump(int argc, char **argv) {
    DumpArgs a;
    int rc = parse(argc, argv, &a);
    if (rc) return free(a.keys), rc < 0 ? 0 : rc;
    ModelConfig cfg;
    ModelSource src;
    char err[1024];
    const char *ins[3] = {a.o.weights, a.o.batch, a.o.config[0] ? a.o.config : NULL};
    if (out_path_check("--out", a.o.out, OUT_FILE, ins, 3, err, sizeof err)) fatal("dump: %s", err);
    rc = dump_config(&a, &src, &cfg);
    free(a.keys);
    if (rc) return rc;
    /* ES under decoupled training: the official trainer's semantics (the shared table gets MLM
     * gradients only); electra_build insists on joint for training, so build as joint */
    ModelConfig build_cfg = cfg;
    if (cfg.embedding_sharing == SHARE_ES && cfg.training_mode == TRAIN_DECOUPLED) {
        warn("dump: ES under decoupled training: the shared embedding gets MLM gradients only (official behaviour, spec 5.2); "
             "use --training_mode joint for a true ES baseline");
        build_cfg.training_mode = TRAIN_JOINT;
    }
    Electra m;
    model_source_load(&src, &m, &build_cfg, 0);
    model_source_free(&src);
    Batch b;
    int32_t *replaced;
    read_batch(a.o.batch, &cfg, &b, &replaced);
    if (a.dropout_was[0] != 0 || a.dropout_was[1] != 0)
        fprintf(stderr, "dump: note: dropout forced to 0 (config has hidden %g, attention %g)\n", a.dropout_was[0], a.dropout_was[1]);
    DumpResult r;
    if (dump_pair(&m, &cfg, &b, replaced, a.o.out, &r, err, sizeof err)) fatal("%s", err);
    printf("dump: %s/%s emd=%d  mlm_loss=%.9g  rtd_loss=%.9g  masked=%d  (%d tensors, dropout 0) -> %s\n",
           config_sharing_str(cfg.embedding_sharing), config_mode_str(cfg.training_mode), cfg.use_emd, r.mlm_loss, r.rtd_loss, r.n_masked,
           m.ps.n, a.o.out);
    free(replaced);
    batch_free(&b);
    electra_free(&m);
    return 0;
}
