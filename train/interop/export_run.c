/* export_run.c — a checkpoint as Hugging Face folders; see export_run.h. */
#include "train/interop/export_run.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "autograd/base/keytable.h"
#include "autograd/base/util.h"
#include "data/task.h"
#include "data/tokenizer.h"
#include "data/tokfile.h"
#include "model/electra.h"
#include "train/checkpoint.h"
#include "train/finetune.h"
#include "train/model_source.h"
#include "train/outpath.h"

/* ---------------------------------------------------------------- the option table */

void export_options_default(ExportOptions *o) {
    memset(o, 0, sizeof *o);
    o->heads.mlm_cls = 1;
}

static int mlm_head_parse(void *base, void *p, const char *v) {
    HfExportHeads *h = p;
    if (!strcmp(v, "cls")) h->mlm_cls = 1, h->mlm_official = 0;
    else if (!strcmp(v, "official")) h->mlm_cls = 0, h->mlm_official = 1;
    else if (!strcmp(v, "both")) h->mlm_cls = 1, h->mlm_official = 1;
    else return -1;
    return 0;
}
static const char *mlm_head_name(const void *base, const void *p) {
    const HfExportHeads *h = p;
    return h->mlm_cls && h->mlm_official ? "both" : h->mlm_official ? "official" : "cls";
}
static const KeyCodec MLM_HEAD = {mlm_head_parse, mlm_head_name};

#define F(m) KEY_FIELD(ExportOptions, m)
static const KeyRow KEYS[] = {
    {NULL, "mlm-head", NULL, KEY_CUSTOM, F(heads), 0, 0, "cls, official or both", 0, &MLM_HEAD},
    {NULL, "rtd-head", NULL, KEY_BOOL, F(heads.rtd), 0, 0, "", 0, NULL},
    {NULL, "allow-no-c2c", NULL, KEY_BOOL, F(allow_no_c2c), 0, 0, "", 0, NULL},
};
#undef F
#define N_KEYS ((int)(sizeof(KEYS) / sizeof(KEYS[0])))

int export_options_set_flag(ExportOptions *o, const char *flag, const char *value, char *err, size_t errlen) {
    return key_set_flag(KEYS, N_KEYS, o, flag, value, err, errlen);
}

/* ---------------------------------------------------------------- the export */

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

typedef struct { char head[16]; char labels[TASK_LABELS_TEXT]; } FtKeys;
static int ft_key(const char *key, const char *v, void *ctx) {
    FtKeys *k = ctx;
    if (!strcmp(key, "ft_head") && v) snprintf(k->head, sizeof k->head, "%s", v);
    if (!strcmp(key, "ft_labels") && v) snprintf(k->labels, sizeof k->labels, "%s", v);
    return 0;
}

static int export_finetuned(const char *src, const char *outdir, CheckpointState *st, ModelConfig *cfg, ExportResult *r) {
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
    r->finetuned = 1;
    r->arch = kind == HEAD_TOKEN ? "DebertaV2ForTokenClassification" : "DebertaV2ForSequenceClassification";
    r->n_labels = L;
    r->n_disc = n_tensors;
    r->tok_note = write_tokenizer(st2.tokenizer, st2.n_tokenizer, src, cfg->vocab_size, &outdir, 1);
    checkpoint_state_free(&st2);
    ft_model_free(&m);
    return 0;
}

/* The checks a model must pass for an exact export (or, --allow-no-c2c, the warning that it is not). */
static void export_check(const char *src, ModelConfig *cfg, int allow_no_c2c) {
    char err[1024];
    if (config_validate(cfg, err, sizeof err)) fatal("export %s: %s", src, err);
    if (cfg->disc_position_biased_input)
        fatal("export %s: the discriminator adds absolute positions at its input (disc_position_biased_input = true, an "
              "ablation control); Hugging Face's DebertaV2 has no such per-model switch, so this model is not exported", src);
    if (!(cfg->att_terms & ATT_C2C)) {
        if (!allow_no_c2c)
            fatal("export: the model was trained without the c2c attention term (pos_att_type %s); Hugging Face DeBERTa-V2 always "
                  "computes c2c and has no flag for it, so the export would not reproduce the model (pass --allow-no-c2c to "
                  "export anyway)",
                  config_terms_str(cfg->att_terms));
        warn("export: c2c is off in this model (pos_att_type %s) but Hugging Face always adds it: the exported folders do NOT "
             "reproduce this model",
             config_terms_str(cfg->att_terms));
    }
}

/* The pretraining pair (a checkpoint's or a weights file's) as OUTDIR/generator and OUTDIR/discriminator. */
static int export_pair(const ExportOptions *o, ModelSource *ms, const ModelConfig *cfg, ExportResult *r) {
    char err[1024];
    ModelConfig build_cfg = *cfg;
    if (build_cfg.embedding_sharing == SHARE_ES) build_cfg.training_mode = TRAIN_JOINT; /* only the parameter layout matters */
    Electra m;
    model_source_load(ms, &m, &build_cfg, 0);
    const CheckpointState *st = &ms->st;
    if (cfg->position_buckets > 0 && cfg->max_relative_positions < cfg->max_position_embeddings)
        warn("export: max_relative_positions %d < max_position_embeddings %d: this model clamps relative distances at %d, Hugging Face "
             "DeBERTa-V2 does not (it clamps only the table row), so the export computes differently once a sequence is longer "
             "than %d tokens (set max_relative_positions = max_position_embeddings, as the published models do, for an exact "
             "export at every length)",
             cfg->max_relative_positions, cfg->max_position_embeddings, cfg->max_relative_positions - 1, cfg->max_relative_positions);
    snprintf(r->gdir, sizeof r->gdir, "%s/generator", o->outdir);
    snprintf(r->ddir, sizeof r->ddir, "%s/discriminator", o->outdir);
    if (mkdir_p(r->gdir) || mkdir_p(r->ddir)) fatal("export: cannot create %s and %s (%s)", r->gdir, r->ddir, strerror(errno));
    if (hf_export_electra(&m, o->heads, r->gdir, r->ddir, &r->n_gen, &r->n_disc, err, sizeof err)) fatal("%s", err);
    r->tok_note = "no tokenizer in the source: tokenizer.json not written";
    if (ms->is_checkpoint && st->n_tokenizer > 0) {
        const char *dirs[2] = {r->gdir, r->ddir};
        r->tok_note = write_tokenizer(st->tokenizer, st->n_tokenizer, o->src, cfg->vocab_size, dirs, 2);
    }
    r->checkpoint = ms->is_checkpoint;
    r->sharing = cfg->embedding_sharing;
    r->use_emd = cfg->use_emd;
    electra_free(&m);
    return 0;
}

int export_run(const ExportOptions *o, ExportResult *r) {
    memset(r, 0, sizeof *r);
    const char *src = o->src;
    char err[1024];
    const char *ins[1] = {src};
    if (out_path_check("OUTDIR", o->outdir, OUT_DIR, ins, 1, err, sizeof err)) fatal("export: %s", err);
    ModelConfig cfg;
    ModelSource ms;
    model_source_config(&ms, src, 1, &cfg);
    int rc;
    CheckpointState fst;
    memset(&fst, 0, sizeof fst);
    if (ms.is_checkpoint && checkpoint_read_state(src, &fst, err, sizeof err)) fatal("%s", err);
    if (ms.is_checkpoint && fst.config && strstr(fst.config, "ft_task")) { /* a fine-tuned model (deberta finetune): one folder */
        if (config_validate(&cfg, err, sizeof err)) fatal("export %s: %s", src, err);
        if (!(cfg.att_terms & ATT_C2C) && !o->allow_no_c2c)
            fatal("export: the model was trained without the c2c attention term; Hugging Face DeBERTa-V2 always computes c2c "
                  "(pass --allow-no-c2c to export anyway)");
        rc = export_finetuned(src, o->outdir, &fst, &cfg, r);
    } else {
        export_check(src, &cfg, o->allow_no_c2c);
        rc = export_pair(o, &ms, &cfg, r);
    }
    checkpoint_state_free(&fst);
    model_source_free(&ms);
    return rc;
}

void export_report(const ExportOptions *o, const ExportResult *r, FILE *f) {
    if (r->finetuned)
        fprintf(f, "export: %s (fine-tuned, %s, %d labels) -> %s: %d tensors; %s\n", o->src, r->arch, r->n_labels, o->outdir, r->n_disc,
                r->tok_note);
    else
        fprintf(f, "export: %s (%s, %s, emd=%d) -> %s: %d tensors, %s: %d tensors; %s\n", o->src, config_sharing_str(r->sharing),
                r->checkpoint ? "checkpoint" : "weights file", r->use_emd, r->gdir, r->n_gen, r->ddir, r->n_disc, r->tok_note);
}
