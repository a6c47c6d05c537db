/* import_run.c — Hugging Face folders -> run directory; see import_run.h. */
#include "train/interop/import_run.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/base/keytable.h"
#include "autograd/base/util.h"
#include "model/electra.h"
#include "train/checkpoint.h"
#include "train/metrics.h"
#include "train/outpath.h"
#include "train/interop/hf_config.h"

/* ---------------------------------------------------------------- the option table */

void import_options_default(ImportOptions *o) {
    memset(o, 0, sizeof *o);
    snprintf(o->sharing, sizeof o->sharing, "nes");
}

#define F(m) KEY_FIELD(ImportOptions, m)
#define STR(fl, m) {NULL, fl, NULL, KEY_STR, F(m), 0, 0, "", 0, NULL}
static const KeyRow KEYS[] = {
    STR("out", out), STR("generator", generator), STR("tokenizer", tokenizer), STR("sharing", sharing),
    {NULL, "seed", NULL, KEY_U64, F(seed), 0, 0, "a non-negative integer", 0, NULL},
};
#undef STR
#undef F
#define N_KEYS ((int)(sizeof(KEYS) / sizeof(KEYS[0])))

int import_options_set_flag(ImportOptions *o, const char *flag, const char *value, char *err, size_t errlen) {
    return key_set_flag(KEYS, N_KEYS, o, flag, value, err, errlen);
}

/* ---------------------------------------------------------------- the import */

/* The tokenizer of the model: path, or HF_DIR/spm.model (into r->tokenizer) when path is "" and the
 * file exists (else NULL: no tokenizer).  Its special ids go into c, whose vocabulary must hold its
 * ids; config.json's pad_token_id must be its [PAD]. */
static TokFile *open_tokenizer(const char *hf, const char *path, ImportResult *r, ModelConfig *c) {
    char err[1600];
    if (path[0]) snprintf(r->tokenizer, sizeof r->tokenizer, "%s", path);
    else {
        snprintf(r->tokenizer, sizeof r->tokenizer, "%s/spm.model", hf);
        if (access(r->tokenizer, F_OK) != 0) return r->tokenizer[0] = 0, NULL;
    }
    path = r->tokenizer;
    TokFile *t = tokfile_load(path, err, sizeof err);
    if (!t) fatal("import: %s", err);
    if (t->vocab_size > c->vocab_size)
        fatal("import: tokenizer %s has %d ids but %s/config.json has vocab_size %d (is it this model's tokenizer?)", path, t->vocab_size,
              hf, c->vocab_size);
    if (c->pad_id != t->sp.pad)
        fatal("import: %s/config.json has pad_token_id %d but [PAD] of tokenizer %s is %d (is it this model's tokenizer?)", hf, c->pad_id,
              path, t->sp.pad);
    c->pad_id = t->sp.pad, c->cls_id = t->sp.cls, c->sep_id = t->sp.sep, c->unk_id = t->sp.unk, c->mask_id = t->sp.mask;
    r->tok_vocab = t->vocab_size;
    snprintf(r->tok_hash, sizeof r->tok_hash, "%s", t->hash);
    return t;
}

/* The generator's folder gives the generator's depth; everything else must be the discriminator's. */
static void open_generator(const char *gen_dir, const char *hf, HfFolder *g, ModelConfig *cfg) {
    char err[1600];
    ModelConfig gc;
    config_defaults(&gc);
    if (hf_folder_open(g, gen_dir, &gc, err, sizeof err)) fatal("%s", err);
    if (gc.hidden_size != cfg->hidden_size || gc.vocab_size != cfg->vocab_size || gc.num_attention_heads != cfg->num_attention_heads ||
        gc.intermediate_size != cfg->intermediate_size || gc.max_position_embeddings != cfg->max_position_embeddings ||
        gc.position_buckets != cfg->position_buckets || gc.max_relative_positions != cfg->max_relative_positions ||
        gc.att_terms != cfg->att_terms || gc.attention_head_size != cfg->attention_head_size)
        fatal("import: %s/config.json and %s/config.json differ in more than the depth (this implementation needs the generator "
              "and the discriminator of one width, vocabulary and attention setup)",
              gen_dir, hf);
    cfg->gen_num_hidden_layers = gc.num_hidden_layers;
}

/* RUN/checkpoint.h5 (step 0, the config text, the tokenizer's bytes) and RUN/config.txt. */
static void write_run(const char *out, const Electra *m, const ModelConfig *cfg, uint64_t seed, const TokFile *tok) {
    char err[1600];
    if (run_check_fresh(out, err, sizeof err) || run_mkdir(out, err, sizeof err)) fatal("%s", err);
    char *text = config_to_text(cfg);
    CheckpointState st;
    memset(&st, 0, sizeof st);
    st.step = 0;
    st.seed = seed;
    if (cfg->training_mode == TRAIN_DECOUPLED) {
        checkpoint_set_group_step(&st, "generator", 0);
        checkpoint_set_group_step(&st, "discriminator", 0);
    } else {
        checkpoint_set_group_step(&st, "all", 0);
    }
    st.config = text;
    if (tok) st.tokenizer = (unsigned char *)tokfile_bytes(tok, &st.n_tokenizer);
    if (checkpoint_save(out, &m->ps, NULL, &st, 0, err, sizeof err)) fatal("%s", err);
    if (run_write_text(out, "config.txt", text, err, sizeof err)) fatal("%s", err);
    free(text);
}

int import_run(const ImportOptions *o, ImportResult *r) {
    memset(r, 0, sizeof *r);
    ModelConfig *cfg = &r->cfg;
    config_defaults(cfg);
    cfg->gen_num_hidden_layers = 0;
    const char *hf = o->hf, *gen_dir = o->generator[0] ? o->generator : NULL;
    char err[1600];
    if (strcmp(o->sharing, "nes") && strcmp(o->sharing, "gdes")) fatal("import: --sharing must be nes or gdes, not '%s'", o->sharing);
    const char *ins[3] = {hf, gen_dir, o->tokenizer[0] ? o->tokenizer : NULL};
    if (run_check_fresh(o->out, err, sizeof err) || out_path_check("--out", o->out, OUT_RUN, ins, 3, err, sizeof err)) fatal("import: %s", err);

    HfFolder d, g;
    if (hf_folder_open(&d, hf, cfg, err, sizeof err)) fatal("%s", err);
    if (gen_dir) open_generator(gen_dir, hf, &g, cfg);
    cfg->embedding_sharing = !strcmp(o->sharing, "gdes") ? SHARE_GDES : SHARE_NES;
    if (cfg->max_seq_len > cfg->max_position_embeddings) cfg->max_seq_len = cfg->max_position_embeddings;
    TokFile *tok = open_tokenizer(hf, o->tokenizer, r, cfg);
    for (int i = 0; i < o->n_keys; i++) {
        int k = i, c = config_parse_flag(cfg, o->n_keys, o->keys, &k, err, sizeof err);
        if (c < 0) fatal("import: %s", err);
        if (c == 0) fatal("import: unknown flag %s (see deberta import --help)", o->keys[i]);
        i = k;
    }
    if (config_validate(cfg, err, sizeof err)) fatal("import: %s/config.json: %s", hf, err);
    /* the sizes against the tensors, before anything is allocated */
    if (hf_folder_check(&d, cfg, cfg->num_hidden_layers, err, sizeof err)) fatal("%s", err);
    if (gen_dir && hf_folder_check(&g, cfg, cfg->gen_num_hidden_layers, err, sizeof err)) fatal("%s", err);
    if (!gen_dir && cfg->gen_num_hidden_layers > HF_MAX_LAYERS)
        fatal("import: gen_num_hidden_layers %d is above the bound %d of this implementation", cfg->gen_num_hidden_layers, HF_MAX_LAYERS);

    Electra m;
    electra_build(&m, cfg, o->seed);
    if (hf_import_electra(&m, &d, gen_dir ? &g : NULL, &r->imp, err, sizeof err)) fatal("%s", err);
    if (gen_dir && cfg->embedding_sharing == SHARE_GDES)
        warn("import: gdes with a separate generator stores E_D - E_G; E_G + (E_D - E_G) may differ from E_D in the last bit");
    hf_folder_warn_unused(&d);
    if (gen_dir) hf_folder_warn_unused(&g);
    write_run(o->out, &m, cfg, o->seed, tok);
    tokfile_free(tok);
    electra_free(&m);
    hf_folder_close(&d);
    if (gen_dir) hf_folder_close(&g);
    return 0;
}

void import_report(const ImportOptions *o, const ImportResult *r, FILE *f) {
    const ModelConfig *c = &r->cfg;
    const char *gen_dir = o->generator;
    const HfImported *imp = &r->imp;
    fprintf(f, "import: %s%s%s -> %s/checkpoint.h5: hidden %d, discriminator %d layers, generator %d layers%s, vocab %d, %s; "
               "%d tensors initialised%s%s%s\n",
            o->hf, gen_dir[0] ? " + " : "", gen_dir, o->out, c->hidden_size, c->num_hidden_layers, c->gen_num_hidden_layers,
            gen_dir[0] ? "" : " (initialised)", c->vocab_size, config_sharing_str(c->embedding_sharing), imp->n_init,
            imp->n_init ? " (" : "", imp->init_list, imp->n_init > 3 ? ", ...)" : imp->n_init ? ")" : "");
    if (r->tokenizer[0])
        fprintf(f, "import: tokenizer %s (%d ids, tokenizer %s): [PAD] %d [CLS] %d [SEP] %d [UNK] %d [MASK] %d\n", r->tokenizer, r->tok_vocab,
                r->tok_hash, c->pad_id, c->cls_id, c->sep_id, c->unk_id, c->mask_id);
    else
        fprintf(f, "import: no tokenizer (no %s/spm.model, no --tokenizer): the special ids stay [PAD] %d [CLS] %d [SEP] %d [UNK] %d [MASK] %d\n",
                o->hf, c->pad_id, c->cls_id, c->sep_id, c->unk_id, c->mask_id);
}
