/* cmd_import.c — `deberta import HF_DIR --out RUN [--generator GEN_DIR]`: a Hugging Face DebertaV2
 * checkpoint (config.json + model.safetensors, F32/F16/BF16) as a run directory (checkpoint.h5 at step
 * 0 + config.txt) that eval, dump, export and pretrain --init-from read.  Layout: docs/FORMATS.md
 * "Import"; the tensor map: train/interop/hf_import.h.  Sharing: nes (default; each model keeps its
 * tables, the export gives them back bit for bit) or gdes.
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
#include "autograd/base/util.h"
#include "data/tokfile.h"
#include "model/electra.h"
#include "train/checkpoint.h"
#include "train/cli/cli.h"
#include "train/outpath.h"
#include "train/interop/hf_config.h"
#include "train/interop/hf_import.h"
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
    const char *ins[3] = {hf, gen_dir, tok_path};
    if (run_check_fresh(out, err, sizeof err) || out_path_check("--out", out, OUT_RUN, ins, 3, err, sizeof err)) fatal("import: %s", err);

    HfFolder d, g;
    if (hf_folder_open(&d, hf, &cfg, err, sizeof err)) fatal("%s", err);
    if (gen_dir) {
        ModelConfig gc;
        config_defaults(&gc);
        if (hf_folder_open(&g, gen_dir, &gc, err, sizeof err)) fatal("%s", err);
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
    /* the sizes against the tensors, before anything is allocated */
    if (hf_folder_check(&d, &cfg, cfg.num_hidden_layers, err, sizeof err)) fatal("%s", err);
    if (gen_dir && hf_folder_check(&g, &cfg, cfg.gen_num_hidden_layers, err, sizeof err)) fatal("%s", err);
    if (!gen_dir && cfg.gen_num_hidden_layers > HF_MAX_LAYERS)
        fatal("import: gen_num_hidden_layers %d is above the bound %d of this implementation", cfg.gen_num_hidden_layers, HF_MAX_LAYERS);

    Electra m;
    electra_build(&m, &cfg, seed);
    HfImported imp;
    if (hf_import_electra(&m, &d, gen_dir ? &g : NULL, &imp, err, sizeof err)) fatal("%s", err);
    if (gen_dir && cfg.embedding_sharing == SHARE_GDES)
        warn("import: gdes with a separate generator stores E_D - E_G; E_G + (E_D - E_G) may differ from E_D in the last bit");
    hf_folder_warn_unused(&d);
    if (gen_dir) hf_folder_warn_unused(&g);

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
           gen_dir ? "" : " (initialised)", cfg.vocab_size, config_sharing_str(cfg.embedding_sharing), imp.n_init,
           imp.n_init ? " (" : "", imp.init_list, imp.n_init > 3 ? ", ...)" : imp.n_init ? ")" : "");
    if (tok)
        printf("import: tokenizer %s (%d ids, tokenizer %s): [PAD] %d [CLS] %d [SEP] %d [UNK] %d [MASK] %d\n", tok_path, tok->vocab_size,
               tok->hash, cfg.pad_id, cfg.cls_id, cfg.sep_id, cfg.unk_id, cfg.mask_id);
    else
        printf("import: no tokenizer (no %s/spm.model, no --tokenizer): the special ids stay [PAD] %d [CLS] %d [SEP] %d [UNK] %d [MASK] %d\n",
               hf, cfg.pad_id, cfg.cls_id, cfg.sep_id, cfg.unk_id, cfg.mask_id);
    tokfile_free(tok);
    free(text);
    electra_free(&m);
    hf_folder_close(&d);
    if (gen_dir) hf_folder_close(&g);
    return 0;
}
