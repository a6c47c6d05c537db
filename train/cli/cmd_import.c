/* cmd_import.c — `deberta import HF_DIR --out RUN [--generator GEN_DIR]`: a Hugging Face DebertaV2
 * checkpoint (config.json + model.safetensors, F32/F16/BF16) as a run directory (checkpoint.h5 at step
 * 0 + config.txt) that eval, dump, export and pretrain --init-from read.  Layout: docs/FORMATS.md
 * "Import".
 *
 * HF_DIR is the discriminator (the published V3 folders are): deberta.* and, when present,
 * mask_predictions.* (the RTD head; initialised when absent).  The generator comes from GEN_DIR
 * (deberta.* + lm_predictions.lm_head.* or cls.predictions.*); without it, a generator of
 * gen_num_hidden_layers (default: half the discriminator's depth, at least 1) is initialised from the
 * config with its word and position tables copied from the discriminator and its MLM head taken from
 * HF_DIR when HF_DIR has one.  Sharing: nes (default; each model keeps its tables, the export gives
 * them back bit for bit) or gdes (E_Δ = E_D − E_G; zero when the generator was initialised here).
 *
 * The tokenizer (--tokenizer FILE, by default HF_DIR/spm.model when there is one) gives the special
 * ids of the run's config ([PAD] [CLS] [SEP] [UNK] [MASK], data/tokfile.h) and travels in the
 * checkpoint, so that `pretrain --init-from` and `eval` accept exactly the shards prep made with it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/util.h"
#include "data/tokfile.h"
#include "model/electra.h"
#include "model/safetensors.h"
#include "train/checkpoint.h"
#include "train/cli/cli.h"
#include "train/cli/hf_config.h"
#include "train/metrics.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: deberta import HF_DIR --out RUN [--generator GEN_DIR] [--tokenizer FILE] [--sharing nes|gdes] [--seed N]\n"
            "                      [--KEY VALUE ...]\n"
            "\n"
            "Reads a Hugging Face DebertaV2 model (HF_DIR/config.json + HF_DIR/model.safetensors; float32,\n"
            "float16 or bfloat16) as the discriminator and writes RUN/checkpoint.h5 (step 0) and RUN/config.txt.\n"
            "PyTorch pickles (pytorch_model.bin): convert first with scripts/convert-to-safetensors.py.\n"
            "\n"
            "  --generator GEN_DIR  the generator's folder (deberta.* + lm_predictions.lm_head.* or cls.predictions.*);\n"
            "                       without it a generator of gen_num_hidden_layers (default half the depth) is\n"
            "                       initialised, with the discriminator's word/position tables\n"
            "  --tokenizer FILE     the model's tokenizer (default HF_DIR/spm.model when present): its special ids\n"
            "                       ([PAD] [CLS] [SEP] [UNK] [MASK]) go into the config, its bytes into the\n"
            "                       checkpoint; prep the text with the same file to continue pretraining\n"
            "  --sharing nes|gdes   embedding sharing of the run (default nes)\n"
            "  --seed N             seed of the initialisation of what the files do not hold (default 0)\n"
            "  --KEY VALUE          any config key not in config.json (rtd_lambda, use_emd, max_seq_len, ...)\n");
}

typedef struct Src {
    const char *dir;
    StFile *st;
    unsigned char *used;
} Src;

static void open_src(Src *s, const char *dir, ModelConfig *c) {
    char path[4200], err[1600];
    s->dir = dir;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (c && hf_config_read(path, c, err, sizeof err)) fatal("import: %s", err);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    s->st = safetensors_open(path, err, sizeof err);
    if (!s->st) {
        snprintf(path, sizeof path, "%s/pytorch_model.bin", dir);
        FILE *f = fopen(path, "rb");
        if (f) {
            fclose(f);
            fatal("import: %s has pytorch_model.bin but no model.safetensors: convert it with "
                  "/usr/bin/python3 scripts/convert-to-safetensors.py %s",
                  dir, dir);
        }
        fatal("import: %s", err);
    }
    s->used = xcalloc((size_t)s->st->n + 1, 1);
}

/* Copies tensor name of s into t (shape checked); 1 if found, 0 if absent. */
static int take(Src *s, const char *name, Tensor *t) {
    const StTensor *e = safetensors_find(s->st, name);
    if (!e) return 0;
    if (e->dtype == ST_OTHER)
        fatal("import: %s/model.safetensors: tensor '%s' has dtype %s, expected a float (F32, F16, BF16 or F64)", s->dir, name, e->dtype_name);
    int ok = e->ndim == t->ndim;
    for (int d = 0; ok && d < t->ndim; d++) ok = e->shape[d] == t->shape[d];
    if (!ok) {
        char a[128] = "", b[128] = "";
        for (int d = 0; d < e->ndim; d++) snprintf(a + strlen(a), sizeof a - strlen(a), d ? ", %lld" : "%lld", (long long)e->shape[d]);
        for (int d = 0; d < t->ndim; d++) snprintf(b + strlen(b), sizeof b - strlen(b), d ? ", %d" : "%d", t->shape[d]);
        fatal("import: %s/model.safetensors: tensor '%s' has shape [%s] but %s/config.json implies [%s] (config and weights disagree)",
              s->dir, name, a, s->dir, b);
    }
    safetensors_read(s->st, e, t->data);
    for (long i = 0; i < t->n; i++)
        if (!(t->data[i] - t->data[i] == 0)) fatal("import: %s/model.safetensors: tensor '%s' holds NaN or Inf", s->dir, name);
    s->used[e - s->st->t] = 1;
    return 1;
}

/* The MLM head under the official name or the cls.predictions one. */
static int take_head(Src *s, const char *suffix, Tensor *t) {
    char n[256];
    snprintf(n, sizeof n, "lm_predictions.lm_head.%s", suffix);
    int a = take(s, n, t);
    static const char *from[5] = {"dense.weight", "dense.bias", "LayerNorm.weight", "LayerNorm.bias", "bias"};
    static const char *to[5] = {"cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
                                "cls.predictions.transform.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias",
                                "cls.predictions.bias"};
    for (int k = 0; k < 5; k++)
        if (!strcmp(suffix, from[k])) {
            if (a) { /* both present (older exports of this project write both): they must agree */
                const StTensor *e = safetensors_find(s->st, to[k]);
                if (e) {
                    real *tmp = xmalloc((size_t)t->n * sizeof(real));
                    safetensors_read(s->st, e, tmp);
                    if (e->numel != t->n || memcmp(tmp, t->data, (size_t)t->n * sizeof(real)))
                        fatal("import: %s: '%s' and '%s' are both present and differ", s->dir, n, to[k]);
                    free(tmp);
                    s->used[e - s->st->t] = 1;
                }
                return 1;
            }
            return take(s, to[k], t);
        }
    return a;
}

static void report_unused(const Src *s) {
    int n = 0;
    char list[600] = "";
    for (int i = 0; i < s->st->n; i++) {
        if (s->used[i]) continue;
        const char *nm = s->st->t[i].name;
        if (!strcmp(nm, "cls.predictions.decoder.weight") || !strcmp(nm, "lm_predictions.lm_head.decoder.weight")) continue; /* tied */
        if (n++ < 4) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", n > 1 ? ", " : "", nm);
    }
    if (n) warn("import: %s: %d tensor(s) not used (%s%s)", s->dir, n, list, n > 4 ? ", ..." : "");
}

/* The tokenizer of the model: *path, or HF_DIR/spm.model (written into def, *path then points to it)
 * when *path is NULL and the file exists (else NULL: no tokenizer).  Its special ids go into c, whose
 * vocabulary must hold its ids; config.json's pad_token_id must be its [PAD]. */
static TokFile *open_tokenizer(const char *hf, const char **pathp, char *def, size_t deflen, ModelConfig *c) {
    char err[1600];
    if (!*pathp) {
        snprintf(def, deflen, "%s/spm.model", hf);
        if (access(def, F_OK) != 0) return NULL;
        *pathp = def;
    }
    const char *path = *pathp;
    TokFile *t = tokfile_load(path, err, sizeof err);
    if (!t) fatal("import: %s", err);
    if (t->vocab_size > c->vocab_size)
        fatal("import: tokenizer %s has %d ids but %s/config.json has vocab_size %d (is it this model's tokenizer?)", path, t->vocab_size,
              hf, c->vocab_size);
    if (c->pad_id != t->sp.pad)
        fatal("import: %s/config.json has pad_token_id %d but [PAD] of tokenizer %s is %d (is it this model's tokenizer?)", hf, c->pad_id,
              path, t->sp.pad);
    c->pad_id = t->sp.pad, c->cls_id = t->sp.cls, c->sep_id = t->sp.sep, c->unk_id = t->sp.unk, c->mask_id = t->sp.mask;
    return t;
}

int cmd_import(int argc, char **argv) {
    const char *hf = NULL, *gen_dir = NULL, *out = NULL, *sharing = "nes", *tok_path = NULL;
    uint64_t seed = 0;
    ModelConfig cfg;
    config_defaults(&cfg);
    cfg.gen_num_hidden_layers = 0;
    char err[1600];
    /* the config flags are applied after config.json: collect them first */
    int *is_flag = xcalloc((size_t)argc, sizeof(int));
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            free(is_flag);
            return 0;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--generator") && i + 1 < argc) gen_dir = argv[++i];
        else if (!strcmp(argv[i], "--sharing") && i + 1 < argc) sharing = argv[++i];
        else if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc) tok_path = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 10);
        else if (!strncmp(argv[i], "--", 2) && i + 1 < argc) is_flag[i++] = 1;
        else if (argv[i][0] != '-' && !hf) hf = argv[i];
        else {
            fprintf(stderr, "error: import: unexpected argument '%s' (see deberta import --help)\n", argv[i]);
            free(is_flag);
            return 2;
        }
    }
    if (!hf || !out) {
        fprintf(stderr, "error: import: HF_DIR and --out RUN are required (see deberta import --help)\n");
        free(is_flag);
        return 2;
    }
    if (strcmp(sharing, "nes") && strcmp(sharing, "gdes")) fatal("import: --sharing must be nes or gdes, not '%s'", sharing);

    Src d = {0}, g = {0};
    open_src(&d, hf, &cfg);
    if (gen_dir) {
        ModelConfig gc;
        config_defaults(&gc);
        open_src(&g, gen_dir, &gc);
        if (gc.hidden_size != cfg.hidden_size || gc.vocab_size != cfg.vocab_size || gc.num_attention_heads != cfg.num_attention_heads ||
            gc.intermediate_size != cfg.intermediate_size || gc.max_position_embeddings != cfg.max_position_embeddings ||
            gc.position_buckets != cfg.position_buckets || gc.max_relative_positions != cfg.max_relative_positions ||
            gc.att_terms != cfg.att_terms || gc.attention_head_size != cfg.attention_head_size)
            fatal("import: %s/config.json and %s/config.json differ in more than the depth (this implementation needs the generator "
                  "and the discriminator of one width, vocabulary and attention setup)",
                  gen_dir, hf);
        cfg.gen_num_hidden_layers = gc.num_hidden_layers;
    }
    cfg.embedding_sharing = !strcmp(sharing, "gdes") ? SHARE_GDES : SHARE_NES;
    if (cfg.max_seq_len > cfg.max_position_embeddings) cfg.max_seq_len = cfg.max_position_embeddings;
    char tok_def[4200];
    TokFile *tok = open_tokenizer(hf, &tok_path, tok_def, sizeof tok_def, &cfg);
    for (int i = 1; i < argc; i++) {
        if (!is_flag[i]) continue;
        int k = i, r = config_parse_flag(&cfg, argc, argv, &k, err, sizeof err);
        if (r < 0) fatal("import: %s", err);
        if (r == 0) fatal("import: unknown flag %s (see deberta import --help)", argv[i]);
    }
    free(is_flag);
    if (config_validate(&cfg, err, sizeof err)) fatal("import: %s/config.json: %s", hf, err);

    Electra m;
    electra_build(&m, &cfg, seed);
    const size_t gp = strlen("generator."), dp = strlen("discriminator.");
    int n_init = 0;
    char init_list[400] = "";
#define NOTE_INIT(nm)                                                                                                 \
    do {                                                                                                              \
        if (n_init++ < 3) snprintf(init_list + strlen(init_list), sizeof init_list - strlen(init_list), "%s%s", n_init > 1 ? ", " : "", nm); \
    } while (0)
    /* discriminator */
    int rtd_found = 0, rtd_n = 0;
    for (int i = m.n_gen_params; i < m.ps.n; i++) {
        Tensor *t = m.ps.params[i];
        if (t == m.word_delta || t == m.pos_delta) continue;
        const char *name = t->name + dp;
        if (!strncmp(name, "mask_predictions.", 17)) {
            rtd_n++;
            rtd_found += take(&d, name, t);
            continue;
        }
        if (!take(&d, name, t)) {
            if (!strcmp(name, "deberta.embeddings.position_embeddings.weight")) NOTE_INIT(t->name);
            else fatal("import: %s/model.safetensors has no tensor '%s' (is it a DebertaV2 model of this config?)", hf, name);
        }
    }
    if (rtd_found && rtd_found != rtd_n) fatal("import: %s/model.safetensors has only %d of the %d mask_predictions.* tensors", hf, rtd_found, rtd_n);
    if (!rtd_found) NOTE_INIT("discriminator.mask_predictions.*");
    /* the discriminator's tables, as NES would hold them (under GDES they live in the generator + deltas) */
    Tensor *dword = NULL, *dpos = NULL;
    const StTensor *ew = safetensors_find(d.st, "deberta.embeddings.word_embeddings.weight");
    const StTensor *ep = safetensors_find(d.st, "deberta.embeddings.position_embeddings.weight");
    real *dw_buf = NULL, *dp_buf = NULL;
    if (cfg.embedding_sharing == SHARE_GDES) {
        Tensor tmp = *m.gen.word;
        dw_buf = xmalloc((size_t)tmp.n * sizeof(real));
        tmp.data = dw_buf;
        if (!take(&d, "deberta.embeddings.word_embeddings.weight", &tmp))
            fatal("import: %s/model.safetensors has no tensor 'deberta.embeddings.word_embeddings.weight'", hf);
        Tensor tp = *m.gen.position;
        dp_buf = xmalloc((size_t)tp.n * sizeof(real));
        tp.data = dp_buf;
        if (!take(&d, "deberta.embeddings.position_embeddings.weight", &tp)) memcpy(dp_buf, m.gen.position->data, (size_t)tp.n * sizeof(real));
    } else {
        for (int i = m.n_gen_params; i < m.ps.n; i++) {
            if (!strcmp(m.ps.params[i]->name, "discriminator.deberta.embeddings.word_embeddings.weight")) dword = m.ps.params[i];
            if (!strcmp(m.ps.params[i]->name, "discriminator.deberta.embeddings.position_embeddings.weight")) dpos = m.ps.params[i];
        }
    }
    (void)ew, (void)ep;
    /* generator */
    for (int i = 0; i < m.n_gen_params; i++) {
        Tensor *t = m.ps.params[i];
        const char *name = t->name + gp;
        const int is_head = !strncmp(name, "lm_predictions.lm_head.", 23);
        const int is_word = !strcmp(name, "deberta.embeddings.word_embeddings.weight");
        const int is_pos = !strcmp(name, "deberta.embeddings.position_embeddings.weight");
        int got = 0;
        if (gen_dir) {
            got = is_head ? take_head(&g, name + 23, t) : take(&g, name, t);
            if (!got && !is_pos && !is_head)
                fatal("import: %s/model.safetensors has no tensor '%s' (is it a DebertaV2 model of this config?)", gen_dir, name);
        } else if (is_head) {
            got = take_head(&d, name + 23, t);
        } else if (is_word || is_pos) {
            const real *src = cfg.embedding_sharing == SHARE_GDES ? (is_word ? dw_buf : dp_buf) : (is_word ? dword : dpos)->data;
            memcpy(t->data, src, (size_t)t->n * sizeof(real));
            got = 1;
        }
        if (!got && (gen_dir || is_head)) NOTE_INIT(t->name);
    }
    if (cfg.embedding_sharing == SHARE_GDES) { /* E_Δ = E_D − E_G */
        for (long k = 0; k < m.word_delta->n; k++) m.word_delta->data[k] = dw_buf[k] - m.gen.word->data[k];
        for (long k = 0; k < m.pos_delta->n; k++) m.pos_delta->data[k] = dp_buf[k] - m.gen.position->data[k];
        if (gen_dir) warn("import: gdes with a separate generator stores E_D - E_G; E_G + (E_D - E_G) may differ from E_D in the last bit");
    }
    free(dw_buf);
    free(dp_buf);
    report_unused(&d);
    if (gen_dir) report_unused(&g);

    /* the run directory */
    if (run_check_fresh(out, err, sizeof err) || run_mkdir(out, err, sizeof err)) fatal("%s", err);
    char *text = NULL;
    size_t tlen = 0;
    FILE *mf = open_memstream(&text, &tlen);
    if (!mf) fatal("import: out of memory");
    config_write(&cfg, mf);
    fclose(mf);
    CheckpointState st;
    memset(&st, 0, sizeof st);
    st.step = 0;
    st.seed = seed;
    if (cfg.training_mode == TRAIN_DECOUPLED) {
        checkpoint_set_group_step(&st, "generator", 0);
        checkpoint_set_group_step(&st, "discriminator", 0);
    } else {
        checkpoint_set_group_step(&st, "all", 0);
    }
    st.config = text;
    if (tok) st.tokenizer = (unsigned char *)tokfile_bytes(tok, &st.n_tokenizer);
    if (checkpoint_save(out, &m.ps, NULL, &st, 0, err, sizeof err)) fatal("%s", err);
    if (run_write_text(out, "config.txt", text, err, sizeof err)) fatal("%s", err);
    printf("import: %s%s%s -> %s/checkpoint.h5: hidden %d, discriminator %d layers, generator %d layers%s, vocab %d, %s; "
           "%d tensors initialised%s%s%s\n",
           hf, gen_dir ? " + " : "", gen_dir ? gen_dir : "", out, cfg.hidden_size, cfg.num_hidden_layers, cfg.gen_num_hidden_layers,
           gen_dir ? "" : " (initialised)", cfg.vocab_size, config_sharing_str(cfg.embedding_sharing), n_init, n_init ? " (" : "",
           init_list, n_init > 3 ? ", ...)" : n_init ? ")" : "");
    if (tok)
        printf("import: tokenizer %s (%d ids, tokenizer %s): [PAD] %d [CLS] %d [SEP] %d [UNK] %d [MASK] %d\n", tok_path, tok->vocab_size,
               tok->hash, cfg.pad_id, cfg.cls_id, cfg.sep_id, cfg.unk_id, cfg.mask_id);
    else
        printf("import: no tokenizer (no %s/spm.model, no --tokenizer): the special ids stay [PAD] %d [CLS] %d [SEP] %d [UNK] %d [MASK] %d\n",
               hf, cfg.pad_id, cfg.cls_id, cfg.sep_id, cfg.unk_id, cfg.mask_id);
    tokfile_free(tok);
    free(text);
    electra_free(&m);
    safetensors_close(d.st);
    free(d.used);
    if (g.st) safetensors_close(g.st);
    free(g.used);
    return 0;
}
