/* cmd_export.c — `deberta export SRC OUTDIR`: a checkpoint (or a parity weights file) as two Hugging
 * Face DebertaV2 folders, OUTDIR/generator and OUTDIR/discriminator, each with config.json (the keys
 * and types of spec §7.2), model.safetensors (F32, little-endian) and, when the checkpoint carries
 * the tokenizer, tokenizer.json (ours) or spm.model (a SentencePiece model, as the published DeBERTa-V3
 * folders hold it).  Layout and names: docs/FORMATS.md "Export".
 *
 * Names: our parameters are the HF ones with a "generator." / "discriminator." prefix; the prefix
 * is dropped.  The generator's MLM head is written as the transformers class will look for it:
 * cls.predictions.{transform.dense, transform.LayerNorm, bias} (default, config legacy=true: what
 * DebertaV2ForMaskedLM of every transformers version reads), lm_predictions.lm_head.* (--mlm-head
 * official, legacy=false: the official layout, read by transformers releases that know `legacy`), or
 * both (--mlm-head both); the decoder weight is tied to the word embeddings and omitted.  The RTD head
 * (mask_predictions.*, which no transformers class has) is written only with --rtd-head, so that
 * DebertaV2Model reports no unused weights by default.  The discriminator's word and
 * position tables are written as plain `.weight`: E_G + E_Δ and P_G + P_Δ under GDES (spec §5.1; the
 * deltas themselves are not written), the generator's tables under ES, its own under NES.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "autograd/util.h"
#include "data/tokenizer.h"
#include "data/tokfile.h"
#include "model/electra.h"
#include "model/safetensors.h"
#include "data/task.h"
#include "train/checkpoint.h"
#include "train/finetune.h"
#include "train/cli/cli.h"
#include "train/cli/h5io.h"
#include "train/cli/model_source.h"

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

/* config.json of spec §7.2 for one of the pair (n_layers: its depth). */
static int write_config_json(const char *path, const ModelConfig *c, int n_layers, const char *arch, const char *extra, int legacy,
                             char *err, size_t errlen) {
    AtomicFile af;
    if (atomic_open(&af, path) != 0) {
        snprintf(err, errlen, "export: cannot create %.900s.tmp (%s)", path, strerror(errno));
        return -1;
    }
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
    if (atomic_commit(&af) != 0) {
        snprintf(err, errlen, "export: cannot write %.900s (%s)", path, strerror(errno));
        return -1;
    }
    return 0;
}

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
    e->name = xstrdup(name);
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
    for (int i = 0; i < es->n; i++) free((char *)es->e[i].name);
    for (int i = 0; i < es->n_owned; i++) free(es->owned[i]);
    free(es->e);
    free(es->owned);
    memset(es, 0, sizeof *es);
}

/* ---- a fine-tuned model (deberta finetune): one folder OUTDIR with the head's HF class ---- */

typedef struct { char head[16]; char labels[TASK_MAX_LABELS * (TASK_LABEL_LEN + 1)]; } FtKeys;
static int ft_key(const char *key, const char *v, void *ctx) {
    FtKeys *k = ctx;
    if (!strcmp(key, "ft_head") && v) snprintf(k->head, sizeof k->head, "%s", v);
    if (!strcmp(key, "ft_labels") && v) snprintf(k->labels, sizeof k->labels, "%s", v);
    return 0;
}

static void json_str(char *buf, size_t cap, size_t *k, const char *s) {
    *k += (size_t)snprintf(buf + *k, cap - *k, "\"");
    for (; *s && *k + 8 < cap; s++) {
        if (*s == '"' || *s == '\\') *k += (size_t)snprintf(buf + *k, cap - *k, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) *k += (size_t)snprintf(buf + *k, cap - *k, "\\u%04x", *s);
        else buf[(*k)++] = *s;
    }
    *k += (size_t)snprintf(buf + *k, cap - *k, "\"");
}

static int export_finetuned(const char *src, const char *outdir, CheckpointState *st, ModelConfig *cfg) {
    char err[1024], path[4200];
    FtKeys keys = {"", ""};
    config_text_each(st->config, ft_key, &keys);
    HeadKind kind;
    if (!strcmp(keys.head, "token")) kind = HEAD_TOKEN;
    else if (!strcmp(keys.head, "sequence")) kind = HEAD_SEQUENCE;
    else if (!strcmp(keys.head, "regression")) kind = HEAD_REGRESSION;
    else fatal("checkpoint %s: ft_head is '%s', expected token, sequence or regression", src, keys.head);
    char names[TASK_MAX_LABELS][TASK_LABEL_LEN];
    int L = 0;
    char *save = NULL;
    for (char *t = strtok_r(keys.labels, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (L == TASK_MAX_LABELS) fatal("checkpoint %s: more than %d labels", src, TASK_MAX_LABELS);
        snprintf(names[L++], TASK_LABEL_LEN, "%s", t);
    }
    if (kind == HEAD_REGRESSION ? L != 1 : L < 2)
        fatal("checkpoint %s: ft_labels names %d labels (%s expected)", src, L, kind == HEAD_REGRESSION ? "one, the regression target's name" : "at least 2");
    FtModel m;
    ft_model_build(&m, cfg, kind, L, 0, 0);
    CheckpointState st2;
    memset(&st2, 0, sizeof st2);
    if (checkpoint_load(src, &m.ps, NULL, &st2, err, sizeof err)) fatal("%s", err);
    if (mkdir_p(outdir)) fatal("export: cannot create %s (%s)", outdir, strerror(errno));
    Entries es = {0};
    for (int i = 0; i < m.ps.n; i++) add_entry(&es, m.ps.params[i]->name, m.ps.params[i], NULL);
    snprintf(path, sizeof path, "%s/model.safetensors", outdir);
    if (safetensors_write(path, es.e, es.n, err, sizeof err)) fatal("export: %s", err);
    size_t cap = 256 + (size_t)L * 2 * (2 * TASK_LABEL_LEN + 16), k = 0;
    char *extra = xmalloc(cap);
    /* regression: HF's num_labels 1 (MSE loss) */
    if (kind == HEAD_REGRESSION) k += (size_t)snprintf(extra + k, cap - k, "  \"problem_type\": \"regression\",\n");
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
    const char *arch = kind == HEAD_TOKEN ? "DebertaV2ForTokenClassification" : "DebertaV2ForSequenceClassification";
    snprintf(path, sizeof path, "%s/config.json", outdir);
    if (write_config_json(path, cfg, cfg->num_hidden_layers, arch, extra, 1, err, sizeof err)) fatal("%s", err);
    free(extra);
    const char *tok_note = write_tokenizer(st2.tokenizer, st2.n_tokenizer, src, cfg->vocab_size, &outdir, 1);
    printf("export: %s (fine-tuned, %s, %d labels) -> %s: %d tensors; %s\n", src, arch, L, outdir, es.n, tok_note);
    entries_free(&es);
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

    char gdir[4096], ddir[4096], path[4200];
    snprintf(gdir, sizeof gdir, "%s/generator", outdir);
    snprintf(ddir, sizeof ddir, "%s/discriminator", outdir);
    if (mkdir_p(gdir) || mkdir_p(ddir)) fatal("export: cannot create %s and %s (%s)", gdir, ddir, strerror(errno));

    /* generator: backbone + the MLM head under the chosen name(s) */
    Entries ge = {0}, de = {0};
    const size_t gp = strlen("generator."), dp = strlen("discriminator.");
    for (int i = 0; i < m.n_gen_params; i++) {
        const char *n = m.ps.params[i]->name + gp;
        if (!head_official && !strncmp(n, "lm_predictions.", 15)) continue;
        add_entry(&ge, n, m.ps.params[i], NULL);
    }
    if (head_cls) {
        add_entry(&ge, "cls.predictions.transform.dense.weight", m.lm.dense_w, NULL);
        add_entry(&ge, "cls.predictions.transform.dense.bias", m.lm.dense_b, NULL);
        add_entry(&ge, "cls.predictions.transform.LayerNorm.weight", m.lm.ln_g, NULL);
        add_entry(&ge, "cls.predictions.transform.LayerNorm.bias", m.lm.ln_b, NULL);
        add_entry(&ge, "cls.predictions.bias", m.lm.bias, NULL);
    }

    /* discriminator: plain word/position tables first, then everything but the GDES deltas */
    if (cfg.embedding_sharing == SHARE_GDES) {
        add_entry(&de, "deberta.embeddings.word_embeddings.weight", m.gen.word, sum_of(&de, m.gen.word, m.word_delta));
        add_entry(&de, "deberta.embeddings.position_embeddings.weight", m.gen.position, sum_of(&de, m.gen.position, m.pos_delta));
    } else if (cfg.embedding_sharing == SHARE_ES) {
        add_entry(&de, "deberta.embeddings.word_embeddings.weight", m.gen.word, NULL);
        add_entry(&de, "deberta.embeddings.position_embeddings.weight", m.gen.position, NULL);
    }
    for (int i = m.n_gen_params; i < m.ps.n; i++) {
        const Tensor *t = m.ps.params[i];
        if (t == m.word_delta || t == m.pos_delta) continue;
        if (!rtd_head && !strncmp(t->name + dp, "mask_predictions.", 17)) continue;
        add_entry(&de, t->name + dp, t, NULL);
    }

    snprintf(path, sizeof path, "%s/model.safetensors", gdir);
    if (safetensors_write(path, ge.e, ge.n, err, sizeof err)) fatal("export: %s", err);
    snprintf(path, sizeof path, "%s/model.safetensors", ddir);
    if (safetensors_write(path, de.e, de.n, err, sizeof err)) fatal("export: %s", err);
    snprintf(path, sizeof path, "%s/config.json", gdir);
    if (write_config_json(path, &cfg, m.gen.n_layers, "DebertaV2ForMaskedLM", NULL, head_cls, err, sizeof err)) fatal("%s", err);
    snprintf(path, sizeof path, "%s/config.json", ddir);
    if (write_config_json(path, &cfg, m.disc.n_layers, "DebertaV2Model", NULL, head_cls, err, sizeof err)) fatal("%s", err);

    const char *tok_note = "no tokenizer in the source: tokenizer.json not written";
    if (ckpt && st->n_tokenizer > 0) {
        const char *dirs[2] = {gdir, ddir};
        tok_note = write_tokenizer(st->tokenizer, st->n_tokenizer, src, cfg.vocab_size, dirs, 2);
    }
    printf("export: %s (%s, %s, emd=%d) -> %s: %d tensors, %s: %d tensors; %s\n", src, config_sharing_str(cfg.embedding_sharing),
           ckpt ? "checkpoint" : "weights file", cfg.use_emd, gdir, ge.n, ddir, de.n, tok_note);

    entries_free(&ge);
    entries_free(&de);
    model_source_free(&ms);
    electra_free(&m);
    return 0;
}
