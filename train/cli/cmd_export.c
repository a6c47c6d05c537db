/* cmd_export.c — `deberta export SRC OUTDIR`: a checkpoint (or a parity weights file) as two Hugging
 * Face DebertaV2 folders, OUTDIR/generator and OUTDIR/discriminator, each with config.json (the keys
 * and types of spec §7.2), model.safetensors (F32, little-endian) and, when the checkpoint carries
 * the tokenizer, tokenizer.json (ours) or spm.model (a SentencePiece model, as the published DeBERTa-V3
 * folders hold it); a fine-tuned model as one folder.  Layout and names: docs/FORMATS.md "Export";
 * the tensor map: train/interop/hf_export.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "autograd/base/util.h"
#include "data/tokenizer.h"
#include "data/tokfile.h"
#include "model/electra.h"
#include "data/task.h"
#include "train/checkpoint.h"
#include "train/finetune.h"
#include "train/cli/cli.h"
#include "train/outpath.h"
#include "train/cli/h5io.h"
#include "train/cli/model_source.h"
#include "train/interop/hf_export.h"

/* The checkpoint's tokenizer into each of dirs[0..n): ours as tokenizer.json, a SentencePiece model
 * as a copy of its spm.model.  Returns the note for the summary line. */
static const char *write_tokenizer(const uint8_t *bytes, size_t len, const char *src, int vocab_size, const char *const *dirs, int n) {
    if (!len) return "no tokenizer in the checkpoint: tokenizer.json not written";
    char err[1400], path[4200];
    TokFile *tf = tokfile_from_bytes(bytes, len, src, err, sizeof err);
    if (!tf) fatal("checkpoint %s: tokenizer: %s", src, err);
    if (tf->vocab_size > vocab_size)
        warn("export: the tokenizer has %d ids but the model's vocab_size is %d", tf->vocab_size, vocab_size);
    const int spm = tf->kind == TOKFILE_SPM;
    for (int k = 0; k < n; k++) {
        snprintf(path, sizeof path, "%s/%s", dirs[k], spm ? "spm.model" : "tokenizer.json");
        if (spm ? write_file_atomic(path, bytes, len) != 0 : tokenizer_write_hf_json(tf->bpe, path, err, sizeof err) != 0)
            fatal("export: %s", spm ? strerror(errno) : err);
    }
    tokfile_free(tf);
    return spm ? "spm.model written" : "tokenizer.json written";
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: deberta export CHECKPOINT OUTDIR [--mlm-head cls|official|both] [--rtd-head] [--allow-no-c2c]\n"
            "\n"
            "A fine-tuned model (deberta finetune's RUNDIR/best.h5 or checkpoint.h5) is written as one folder,\n"
            "OUTDIR, of DebertaV2ForTokenClassification or DebertaV2ForSequenceClassification, with\n"
            "id2label/label2id in config.json.  A pretraining checkpoint:\n"
            "Writes OUTDIR/generator and OUTDIR/discriminator as Hugging Face DebertaV2 folders:\n"
            "config.json, model.safetensors (F32) and tokenizer.json or spm.model (when the checkpoint has\n"
            "the tokenizer: ours, or the SentencePiece model it was trained with).  CHECKPOINT is a training\n"
            "checkpoint (RUNDIR/checkpoint.h5) or a parity weights file (root attributes + one dataset per\n"
            "parameter, docs/FORMATS.md).\n"
            "\n"
            "  --mlm-head cls   the generator's MLM head as cls.predictions.* with \"legacy\": true (default; what\n"
            "                   DebertaV2ForMaskedLM reads in every transformers version)\n"
            "  --mlm-head official  as lm_predictions.lm_head.* with \"legacy\": false (the official layout;\n"
            "                   transformers versions with the `legacy` switch)\n"
            "  --mlm-head both  both names (older exports of this project; one of them is reported unused)\n"
            "  --rtd-head       also write the discriminator's mask_predictions.* (no transformers class reads\n"
            "                   them: DebertaV2Model then reports 6 unused weights; needed to import it back whole)\n"
            "  --allow-no-c2c   export a model trained without the c2c term anyway (Hugging Face\n"
            "                   DeBERTa always computes c2c, so it will NOT reproduce this model)\n"
            "  --help           this text\n");
}

/* ---- a fine-tuned model (deberta finetune): one folder OUTDIR with the head's HF class ---- */

typedef struct { char head[16]; char labels[TASK_LABELS_TEXT]; } FtKeys;
static int ft_key(const char *key, const char *v, void *ctx) {
    FtKeys *k = ctx;
    if (!strcmp(key, "ft_head") && v) snprintf(k->head, sizeof k->head, "%s", v);
    if (!strcmp(key, "ft_labels") && v) snprintf(k->labels, sizeof k->labels, "%s", v);
    return 0;
}

static int export_finetuned(const char *src, const char *outdir, CheckpointState *st, ModelConfig *cfg) {
    char err[1024];
    FtKeys keys = {"", ""};
    config_text_each(st->config, ft_key, &keys);
    HeadKind kind;
    if (!strcmp(keys.head, "token")) kind = HEAD_TOKEN;
    else if (!strcmp(keys.head, "sequence")) kind = HEAD_SEQUENCE;
    else if (!strcmp(keys.head, "regression")) kind = HEAD_REGRESSION;
    else fatal("checkpoint %s: ft_head is '%s', expected token, sequence or regression", src, keys.head);
    const int pooler = ft_config_pooler(st->config);
    if (pooler < 0) fatal("checkpoint %s: ft_pooler is not cls or mean (a damaged or foreign checkpoint)", src);
    /* Hugging Face's ContextPooler reads [CLS] only: a mean-pooled head would load by name into
     * DebertaV2ForSequenceClassification and silently compute another model */
    if (kind != HEAD_TOKEN && pooler == POOL_MEAN)
        fatal("export: checkpoint %s has a mean-pooling head (ft_pooler = mean), which no Hugging Face DebertaV2 class computes "
              "(their ContextPooler reads [CLS]); fine-tune with --pooler cls to export it, or use deberta predict", src);
    char names[TASK_MAX_LABELS][TASK_LABEL_LEN];
    const int L = task_labels_decode(keys.labels, names);
    if (L < 0) fatal("checkpoint %s: ft_labels '%.200s' is not a list of label names (an empty or a too long name, or more than %d)", src, keys.labels, TASK_MAX_LABELS);
    if (kind == HEAD_REGRESSION ? L != 1 : L < 2)
        fatal("checkpoint %s: ft_labels names %d labels (%s expected)", src, L, kind == HEAD_REGRESSION ? "one, the regression target's name" : "at least 2");
    FtModel m;
    ft_model_register(&m, cfg, kind, L, 0); /* every parameter from the checkpoint */
    CheckpointState st2;
    memset(&st2, 0, sizeof st2);
    if (checkpoint_load(src, &m.ps, NULL, &st2, err, sizeof err)) fatal("%s", err);
    if (mkdir_p(outdir)) fatal("export: cannot create %s (%s)", outdir, strerror(errno));
    const char *labels[TASK_MAX_LABELS];
    for (int l = 0; l < L; l++) labels[l] = names[l];
    int n_tensors = 0;
    if (hf_export_classifier(&m.ps, cfg, kind, labels, L, outdir, &n_tensors, err, sizeof err)) fatal("%s", err);
    const char *arch = kind == HEAD_TOKEN ? "DebertaV2ForTokenClassification" : "DebertaV2ForSequenceClassification";
    const char *tok_note = write_tokenizer(st2.tokenizer, st2.n_tokenizer, src, cfg->vocab_size, &outdir, 1);
    printf("export: %s (fine-tuned, %s, %d labels) -> %s: %d tensors; %s\n", src, arch, L, outdir, n_tensors, tok_note);
    checkpoint_state_free(&st2);
    ft_model_free(&m);
    return 0;
}

int cmd_export(int argc, char **argv) {
    const char *src = NULL, *outdir = NULL;
    int allow_no_c2c = 0, rtd_head = 0, head_cls = 1, head_official = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--allow-no-c2c")) allow_no_c2c = 1;
        else if (!strcmp(argv[i], "--rtd-head")) rtd_head = 1;
        else if (!strcmp(argv[i], "--mlm-head") && i + 1 < argc) {
            const char *v = argv[++i];
            if (!strcmp(v, "cls")) head_cls = 1, head_official = 0;
            else if (!strcmp(v, "official")) head_cls = 0, head_official = 1;
            else if (!strcmp(v, "both")) head_cls = 1, head_official = 1;
            else {
                fprintf(stderr, "error: export: --mlm-head takes cls, official or both, not '%s'\n", v);
                return 2;
            }
        }
        else if (!strncmp(argv[i], "--", 2)) {
            return cli_usage_error("export", "unknown flag %s", argv[i]);
        } else if (!src) src = argv[i];
        else if (!outdir) outdir = argv[i];
        else {
            return cli_usage_error("export", "unexpected argument %s", argv[i]);
        }
    }
    if (!src || !outdir) {
        return cli_usage_error("export", "needs CHECKPOINT and OUTDIR");
    }

    char err[1024];
    const char *ins[1] = {src};
    if (out_path_check("OUTDIR", outdir, OUT_DIR, ins, 1, err, sizeof err)) fatal("export: %s", err);
    ModelConfig cfg;
    ModelSource ms;
    model_source_config(&ms, src, 1, &cfg);
    const int ckpt = ms.is_checkpoint;
    if (ckpt) { /* a fine-tuned model (deberta finetune) is one folder of its own */
        CheckpointState fst;
        memset(&fst, 0, sizeof fst);
        if (checkpoint_read_state(src, &fst, err, sizeof err)) fatal("%s", err);
        if (fst.config && strstr(fst.config, "ft_task")) {
            if (config_validate(&cfg, err, sizeof err)) fatal("export %s: %s", src, err);
            if (!(cfg.att_terms & ATT_C2C) && !allow_no_c2c)
                fatal("export: the model was trained without the c2c attention term; Hugging Face DeBERTa-V2 always computes c2c "
                      "(pass --allow-no-c2c to export anyway)");
            const int rc = export_finetuned(src, outdir, &fst, &cfg);
            checkpoint_state_free(&fst);
            model_source_free(&ms);
            return rc;
        }
        checkpoint_state_free(&fst);
    }
    if (config_validate(&cfg, err, sizeof err)) fatal("export %s: %s", src, err);
    if (cfg.disc_position_biased_input)
        fatal("export %s: the discriminator adds absolute positions at its input (disc_position_biased_input = true, an "
              "ablation control); Hugging Face's DebertaV2 has no such per-model switch, so this model is not exported", src);
    if (!(cfg.att_terms & ATT_C2C)) {
        if (!allow_no_c2c)
            fatal("export: the model was trained without the c2c attention term (pos_att_type %s); Hugging Face DeBERTa-V2 always "
                  "computes c2c and has no flag for it, so the export would not reproduce the model (pass --allow-no-c2c to "
                  "export anyway)",
                  config_terms_str(cfg.att_terms));
        warn("export: c2c is off in this model (pos_att_type %s) but Hugging Face always adds it: the exported folders do NOT "
             "reproduce this model",
             config_terms_str(cfg.att_terms));
    }
    ModelConfig build_cfg = cfg;
    if (build_cfg.embedding_sharing == SHARE_ES) build_cfg.training_mode = TRAIN_JOINT; /* only the parameter layout matters */
    Electra m;
    model_source_load(&ms, &m, &build_cfg, 0);
    const CheckpointState *st = &ms.st;
    if (cfg.position_buckets > 0 && cfg.max_relative_positions < cfg.max_position_embeddings)
        warn("export: max_relative_positions %d < max_position_embeddings %d: this model clamps relative distances at %d, Hugging Face "
             "DeBERTa-V2 does not (it clamps only the table row), so the export computes differently once a sequence is longer "
             "than %d tokens (set max_relative_positions = max_position_embeddings, as the published models do, for an exact "
             "export at every length)",
             cfg.max_relative_positions, cfg.max_position_embeddings, cfg.max_relative_positions - 1, cfg.max_relative_positions);

    char gdir[4096], ddir[4096];
    snprintf(gdir, sizeof gdir, "%s/generator", outdir);
    snprintf(ddir, sizeof ddir, "%s/discriminator", outdir);
    if (mkdir_p(gdir) || mkdir_p(ddir)) fatal("export: cannot create %s and %s (%s)", gdir, ddir, strerror(errno));
    int n_gen = 0, n_disc = 0;
    const HfExportHeads heads = {.mlm_cls = head_cls, .mlm_official = head_official, .rtd = rtd_head};
    if (hf_export_electra(&m, heads, gdir, ddir, &n_gen, &n_disc, err, sizeof err)) fatal("%s", err);

    const char *tok_note = "no tokenizer in the source: tokenizer.json not written";
    if (ckpt && st->n_tokenizer > 0) {
        const char *dirs[2] = {gdir, ddir};
        tok_note = write_tokenizer(st->tokenizer, st->n_tokenizer, src, cfg.vocab_size, dirs, 2);
    }
    printf("export: %s (%s, %s, emd=%d) -> %s: %d tensors, %s: %d tensors; %s\n", src, config_sharing_str(cfg.embedding_sharing),
           ckpt ? "checkpoint" : "weights file", cfg.use_emd, gdir, n_gen, ddir, n_disc, tok_note);
    model_source_free(&ms);
    electra_free(&m);
    return 0;
}
