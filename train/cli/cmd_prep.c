/* cmd_prep.c — `deberta prep`: text files -> tokenizer + HDF5 token shards.  Flags, progress line
 * and summary; the pipeline itself is data/prep.c (prep_run).
 */
#include "train/cli/cli.h"
#include "train/outpath.h"
#include "data/prep.h"
#include "data/brown.h"
#include "data/tokenizer.h"
#include "autograd/gemm.h"
#include "autograd/base/util.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_VOCAB 8192
#define DEFAULT_VAL_FRACTION 0.01
#define DEFAULT_SHARD_TOKENS 16777216LL
#define DEFAULT_SEED 1234

static void usage(FILE *f) {
    fprintf(f,
            "usage: deberta prep --input PATH... --out DIR [options]\n"
            "\n"
            "Text files -> tokenizer + HDF5 token shards (formats in docs/FORMATS.md).\n"
            "Inputs: .txt (documents separated by blank lines) and .jsonl (field \"text\"), or folders of\n"
            "them (searched recursively, sorted).\n"
            "\n"
            "  --input PATH...      input files or folders (repeatable; required)\n"
            "  --out DIR            output folder, created if missing (required)\n"
            "  --vocab-size N       tokenizer vocabulary size (default %d)\n"
            "  --val-fraction F     fraction of documents held out for validation, 0 <= F < 1 (default %g)\n"
            "  --shard-tokens N     start a new shard after this many tokens (default %lld)\n"
            "  --tokenizer FILE     reuse this tokenizer.bin instead of training one, or encode with this\n"
            "                       SentencePiece unigram model (.model, e.g. a published DeBERTa-V3 spm.model;\n"
            "                       special ids from its pieces [PAD] [CLS] [SEP] [UNK] [MASK])\n"
            "  --seed S             seed of the train/val split (default %d)\n"
            "  --holdout-brown DIR  the tagged Brown texts (fetch-corpus.sh's DIR/brown-tagged): the texts that\n"
            "                       deberta prep-task uses for dev and test go to val, never to train;\n"
            "                       --out's holdout-brown.txt records it (a prep without the flag removes it)\n"
            "  --threads N          OpenMP threads (default: all cores)\n"
            "  --help               this text\n"
            "\n"
            "Writes DIR/train-00000.h5..., DIR/val-00000.h5..., and DIR/tokenizer.bin (ours) and\n"
            "DIR/tokenizer.json (Hugging Face), or DIR/spm.model (a copy of the SentencePiece model).\n",
            DEFAULT_VOCAB, DEFAULT_VAL_FRACTION, DEFAULT_SHARD_TOKENS, DEFAULT_SEED);
}

static int parse_ll(const char *s, long long *v) {
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end) return -1;
    *v = x;
    return 0;
}

static int g_tty;
static void progress_line(const char *stage, double frac, void *ctx) {
    (void)ctx;
    if (!g_tty) return;
    fprintf(stderr, "\rprep: %-24s %5.1f%%", stage, 100.0 * frac);
    if (frac >= 1.0) fputc('\n', stderr);
    fflush(stderr);
}

int cmd_prep(int argc, char **argv) {
    const char **inputs = xmalloc((size_t)argc * sizeof(char *));
    int n_inputs = 0;
    const char *out = NULL, *tok_path = NULL, *holdout_dir = NULL;
    long long vocab = DEFAULT_VOCAB, shard_tokens = DEFAULT_SHARD_TOKENS, seed = DEFAULT_SEED, threads = 0;
    double val_fraction = DEFAULT_VAL_FRACTION;
    int vocab_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); free(inputs); return 0; }
        if (!strcmp(a, "--input")) {
            int k = 0;
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) { inputs[n_inputs++] = argv[++i]; k++; }
            if (!k) { free(inputs); return cli_usage_error("prep", "%s needs at least one path", a); }
            continue;
        }
        if (strncmp(a, "--", 2) != 0) { free(inputs); return cli_usage_error("prep", "unexpected argument '%s'", a); }
        if (i + 1 >= argc) { free(inputs); return cli_usage_error("prep", "%s needs a value", a); }
        const char *v = argv[++i];
        long long x;
        if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--tokenizer")) tok_path = v;
        else if (!strcmp(a, "--holdout-brown")) holdout_dir = v;
        else if (!strcmp(a, "--vocab-size")) {
            if (parse_ll(v, &x) || x < TOK_FIRST_CHAR + 1 || x > (1 << 24)) {
                free(inputs);
                return cli_usage_error("prep", "--vocab-size '%s' must be an integer in [262, 16777216]", v);
            }
            vocab = x; vocab_given = 1;
        } else if (!strcmp(a, "--shard-tokens")) {
            if (parse_ll(v, &x) || x < 1) { free(inputs); return cli_usage_error("prep", "--shard-tokens '%s' must be a positive integer", v); }
            shard_tokens = x;
        } else if (!strcmp(a, "--seed")) {
            if (parse_ll(v, &x) || x < 0) { free(inputs); return cli_usage_error("prep", "--seed '%s' must be a non-negative integer", v); }
            seed = x;
        } else if (!strcmp(a, "--threads")) {
            if (parse_ll(v, &x) || x < 1 || x > 4096) { free(inputs); return cli_usage_error("prep", "--threads '%s' must be an integer in [1, 4096]", v); }
            threads = x;
        } else if (!strcmp(a, "--val-fraction")) {
            char *end;
            double f = strtod(v, &end);
            if (end == v || *end || !(f >= 0 && f < 1)) { free(inputs); return cli_usage_error("prep", "--val-fraction '%s' must be a number in [0, 1)", v); }
            val_fraction = f;
        } else {
            free(inputs);
            return cli_usage_error("prep", "unknown flag '%s'", a);
        }
    }
    if (!n_inputs) { free(inputs); return cli_usage_error("prep", "--input is required"); }
    if (!out) { free(inputs); return cli_usage_error("prep", "--out is required"); }
    char err[2048];
    {
        const char **ins = xmalloc((size_t)(n_inputs + 2) * sizeof(char *));
        memcpy(ins, inputs, (size_t)n_inputs * sizeof(char *));
        ins[n_inputs] = tok_path, ins[n_inputs + 1] = holdout_dir;
        const int bad = out_path_check("--out", out, OUT_DIR, ins, n_inputs + 2, err, sizeof err);
        free(ins);
        if (bad) { free(inputs); fatal("prep: %s", err); }
    }
    threads_set((int)threads);
    g_tty = isatty(2);
    double t_start = now_seconds();
    PrepConfig pc = {.inputs = inputs, .n_inputs = n_inputs, .out = out, .tokenizer = tok_path, .vocab_size = vocab,
                     .val_fraction = val_fraction, .shard_tokens = shard_tokens, .seed = (uint64_t)seed,
                     .progress = progress_line, .progress_ctx = NULL};
    uint64_t *holdout = NULL;
    if (holdout_dir) { /* the Brown texts of the fine-tuning tasks' dev and test splits */
        BrownText *bt;
        size_t nb;
        if (brown_read_dir(holdout_dir, &bt, &nb, err, sizeof err)) fatal("--holdout-brown: %s", err);
        holdout = xmalloc(nb * sizeof(uint64_t));
        for (size_t i = 0; i < nb; i++)
            if (bt[i].split != BROWN_TRAIN) holdout[pc.n_holdout++] = brown_fingerprint(&bt[i]);
        brown_free(bt, nb);
        free(bt);
        pc.holdout = holdout;
    }
    /* OUT/holdout-brown.txt says the shards were made with the hold-out: removed before prep writes
     * anything, written again only after a successful prep with --holdout-brown */
    char marker[4200];
    if (snprintf(marker, sizeof marker, "%s/holdout-brown.txt", out) >= (int)sizeof marker) fatal("--out %s: path too long", out);
    if (unlink(marker) != 0 && errno != ENOENT && errno != ENOTDIR) fatal("output %s: cannot remove %s (%s)", out, marker, strerror(errno));
    PrepResult r;
    const int rc = prep_run(&pc, &r, err, sizeof err);
    free(inputs);
    free(holdout);
    if (rc != 0) fatal("%s", err);
    if (holdout_dir) {
        printf("prep: %zu documents are dev/test texts of the Brown tasks (%s): %zu of them were in the inputs, now in val\n",
               pc.n_holdout, holdout_dir, r.n_held_out);
        AtomicFile a;
        if (atomic_open(&a, marker) != 0) fatal("output %s: cannot write %s (%s)", out, marker, strerror(errno));
        fprintf(a.f, "# deberta prep --holdout-brown: the dev/test texts of the Brown tasks are in val, not in train\n"
                     "holdout_brown = %s\nholdout_texts = %zu\nholdout_in_inputs = %zu\ntokenizer_hash = %s\n",
                holdout_dir, pc.n_holdout, r.n_held_out, r.tokenizer_hash);
        if (atomic_commit(&a) != 0) fatal("output %s: cannot write %s (%s)", out, marker, strerror(errno));
    }
    if (tok_path && vocab_given && vocab != r.vocab_size)
        warn("prep: --vocab-size %lld ignored; %s has %d tokens", vocab, tok_path, r.vocab_size);
    if (!tok_path && r.vocab_size < vocab)
        warn("prep: the corpus supports only %d tokens (asked %lld): no pair occurs twice more", r.vocab_size, vocab);
    if (r.kind == TOKFILE_SPM)
        printf("prep: SentencePiece model %s: [PAD] %d [CLS] %d [SEP] %d [UNK] %d [MASK] %d%s\n", tok_path, r.special.pad, r.special.cls,
               r.special.sep, r.special.unk, r.special.mask,
               r.mask_appended ? " (the model has no [MASK] piece: the id after its last piece, as DeBERTa-V3 tokenizers add it)" : "");
    printf("prep: %zu files, %zu docs (%zu train, %zu val), %.1f MB text -> %lld tokens (%lld train in %d shards, "
           "%lld val in %d shards), vocab %d, tokenizer %s (%s %.2f s), encode+write %.2f s, total %.2f s -> %s\n",
           r.n_files, r.n_docs, r.n_train, r.n_val, (double)r.text_bytes / 1e6, r.tokens_train + r.tokens_val, r.tokens_train,
           r.shards_train, r.tokens_val, r.shards_val, r.vocab_size, r.tokenizer_hash, tok_path ? "loaded" : "trained",
           r.seconds_tokenizer, r.seconds_encode, now_seconds() - t_start, out);
    return 0;
}
