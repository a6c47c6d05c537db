/* cmd_prep.c — `deberta prep`: text files -> tokenizer + HDF5 token shards.  Flags -> PrepOptions ->
 * prep_corpus() (data/prep_options.h: the pipeline data/prep.c, the Brown hold-out), the progress
 * line, then prep_report()'s summary.
 */
#include "train/cli/cli.h"
#include "train/outpath.h"
#include "data/prep_options.h"
#include "autograd/gemm.h"
#include "autograd/base/util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
            "  --shard-tokens N     start a new shard after this many tokens (default %ld)\n"
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
            PREP_DEFAULT_VOCAB, PREP_DEFAULT_VAL_FRACTION, PREP_DEFAULT_SHARD_TOKENS, PREP_DEFAULT_SEED);
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
    /* the inputs, then --tokenizer and --holdout-brown: the paths --out must not overwrite */
    const char **inputs = xmalloc((size_t)(argc + 2) * sizeof(char *));
    int n_inputs = 0, rc = 0;
    PrepOptions o;
    prep_options_default(&o);
    char err[2048];
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); free(inputs); return 0; }
        if (!strcmp(a, "--input")) {
            int k = 0;
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) { inputs[n_inputs++] = argv[++i]; k++; }
            if (!k) rc = cli_usage_error("prep", "%s needs at least one path", a);
            continue;
        }
        if (strncmp(a, "--", 2) != 0) rc = cli_usage_error("prep", "unexpected argument '%s'", a);
        else if (i + 1 >= argc) rc = cli_usage_error("prep", "%s needs a value", a);
        else {
            const int c = prep_options_set_flag(&o, a + 2, argv[++i], err, sizeof err);
            if (c <= 0) rc = c < 0 ? cli_usage_error("prep", "%s", err) : cli_usage_error("prep", "unknown flag '%s'", a);
        }
    }
    if (!rc && !n_inputs) rc = cli_usage_error("prep", "--input is required");
    if (!rc && !o.out[0]) rc = cli_usage_error("prep", "--out is required");
    if (rc) { free(inputs); return rc; }
    inputs[n_inputs] = o.tokenizer[0] ? o.tokenizer : NULL, inputs[n_inputs + 1] = o.holdout_brown[0] ? o.holdout_brown : NULL;
    if (out_path_check("--out", o.out, OUT_DIR, inputs, n_inputs + 2, err, sizeof err)) fatal("prep: %s", err);
    threads_set(o.threads);
    g_tty = isatty(2);
    const double t_start = now_seconds();
    PrepResult r;
    size_t n_holdout;
    prep_corpus(&o, inputs, n_inputs, progress_line, &r, &n_holdout);
    free(inputs);
    prep_report(&o, &r, n_holdout, now_seconds() - t_start, stdout);
    return 0;
}
