/* cmd_fill_mask.c — `deberta fill-mask RUN/checkpoint.h5 "text with [MASK]"` (or --input FILE, one
 * query per line): flags, the generator and its tokenizer from the checkpoint, then train/infer/fill_mask.h
 * (the queries read and checked before any output, then each filled and printed).
 */
#include <errno.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "data/tokfile.h"
#include "model/electra.h"
#include "train/cli/cli.h"
#include "train/model_source.h"
#include "train/infer/fill_mask.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: deberta fill-mask RUN/checkpoint.h5 \"text with [MASK]\" [--top-k K] [--json] [--threads N]\n"
            "       deberta fill-mask RUN/checkpoint.h5 --input FILE [--top-k K] [--json]\n"
            "\n"
            "The generator of a pretraining checkpoint (or an imported model) fills every [MASK] of each\n"
            "query: its K most probable tokens with their probabilities, as Hugging Face's fill-mask\n"
            "pipeline shows them.\n"
            "\n"
            "  --input FILE   one query per line (blank lines skipped) instead of the text argument\n"
            "  --top-k K      tokens listed per [MASK]                                      [5]\n"
            "  --json         one JSON object per query: query, input_ids, masks [[{token, token_str, score}]]\n"
            "  --threads N    OpenMP/BLAS threads\n");
}

typedef struct FillMaskArgs {
    const char *ckpt, *text, *input;
    int top_k, json, threads;
} FillMaskArgs;

/* 0; -1: --help printed; else the status of a usage error */
static int parse(int argc, char **argv, FillMaskArgs *a) {
    *a = (FillMaskArgs){.top_k = 5};
    for (int i = 1; i < argc; i++) {
        const char *f = argv[i];
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) return usage(stdout), -1;
        if (!strcmp(f, "--json")) { a->json = 1; continue; }
        if (!strcmp(f, "--input") || !strcmp(f, "--top-k") || !strcmp(f, "--threads")) {
            if (i + 1 >= argc) return cli_usage_error("fill-mask", "%s needs a value", f);
            const char *v = argv[++i];
            char *end;
            long x = strtol(v, &end, 10);
            if (!strcmp(f, "--input")) a->input = v;
            else if (*end || end == v || x < 1 || x > 100000) return cli_usage_error("fill-mask", "%s '%s' must be a positive integer", f, v);
            else if (!strcmp(f, "--top-k")) a->top_k = (int)x;
            else a->threads = (int)x;
            continue;
        }
        if (f[0] == '-' && f[1] == '-') return cli_usage_error("fill-mask", "unknown flag '%s'", f);
        if (!a->ckpt) a->ckpt = f;
        else if (!a->text) a->text = f;
        else return cli_usage_error("fill-mask", "one text argument only (quote it), or --input FILE");
    }
    if (!a->ckpt) return cli_usage_error("fill-mask", "RUN/checkpoint.h5 is required");
    if (!a->text == !a->input) return cli_usage_error("fill-mask", "give either a \"text with [MASK]\" argument or --input FILE");
    return 0;
}

/* The checkpoint's tokenizer, and its config ready for a forward (dropout off, every position). */
static TokFile *open_model(const char *ckpt, ModelSource *src, ModelConfig *cfg) {
    char err[1024], what[4200];
    CheckpointState st;
    memset(&st, 0, sizeof st);
    if (checkpoint_read_state(ckpt, &st, err, sizeof err)) fatal("%s", err);
    if (st.config && strstr(st.config, "ft_task"))
        fatal("checkpoint %s is a fine-tuned model (no generator); fill-mask needs a pretraining or imported checkpoint", ckpt);
    if (!st.n_tokenizer) fatal("checkpoint %s has no tokenizer; cannot encode the queries", ckpt);
    snprintf(what, sizeof what, "checkpoint %.4000s", ckpt);
    TokFile *tk = tokfile_from_bytes(st.tokenizer, st.n_tokenizer, what, err, sizeof err);
    if (!tk) fatal("%s", err);
    checkpoint_state_free(&st);
    model_source_config(src, ckpt, 0, cfg);
    if (cfg->vocab_size != tk->vocab_size) fatal("checkpoint %s: its tokenizer has %d ids, the model %d", ckpt, tk->vocab_size, cfg->vocab_size);
    cfg->hidden_dropout_prob = cfg->attention_probs_dropout_prob = 0;
    cfg->max_seq_len = cfg->max_position_embeddings;
    if (config_validate(cfg, err, sizeof err)) fatal("checkpoint %s: %s", ckpt, err);
    return tk;
}

int cmd_fill_mask(int argc, char **argv) {
    FillMaskArgs a;
    const int rc = parse(argc, argv, &a);
    if (rc) return rc < 0 ? 0 : rc;
    if (a.threads > 0) { omp_set_num_threads(a.threads); openblas_set_num_threads(a.threads); }
    ModelSource src;
    ModelConfig cfg;
    TokFile *tk = open_model(a.ckpt, &src, &cfg);
    long nq;
    FillMaskQuery *qs = fill_mask_read_queries(a.text, a.input, tk, cfg.max_position_embeddings, &nq);
    Electra *m = xcalloc(1, sizeof *m);
    model_source_load(&src, m, &cfg, 0);
    model_source_free(&src);
    if (fill_mask_write(stdout, m, tk, qs, nq, a.top_k, a.json)) fatal("fill-mask: cannot write the output (%s)", io_reason(errno));
    electra_free(m);
    free(m);
    fill_mask_queries_free(qs, nq);
    tokfile_free(tk);
    return 0;
}
