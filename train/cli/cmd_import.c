/* cmd_import.c — `deberta import HF_DIR --out RUN [--generator GEN_DIR]`: flags -> ImportOptions ->
 * import_run() (train/interop/import_run.h: Hugging Face DebertaV2 folders as a run directory), then its
 * summary lines.  Layout: docs/FORMATS.md "Import"; the tensor map: train/interop/hf_import.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "train/cli/cli.h"
#include "train/interop/import_run.h"

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

int cmd_import(int argc, char **argv) {
    ImportOptions o;
    import_options_default(&o);
    char err[1600];
    /* the config flags are applied after config.json: collected here, in order */
    o.keys = xcalloc((size_t)argc, sizeof(char *));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            free(o.keys);
            return 0;
        }
        int c = 0;
        if (!strncmp(a, "--", 2) && i + 1 < argc && (c = import_options_set_flag(&o, a + 2, argv[i + 1], err, sizeof err)) == 0) {
            o.keys[o.n_keys++] = argv[i], o.keys[o.n_keys++] = argv[i + 1];
            c = 1;
        }
        if (c > 0) i++;
        else if (c == 0 && a[0] != '-' && !o.hf[0] && strlen(a) < sizeof o.hf) snprintf(o.hf, sizeof o.hf, "%s", a);
        else {
            free(o.keys);
            return c < 0 ? cli_usage_error("import", "%s", err) : cli_usage_error("import", "unexpected argument '%s'", a);
        }
    }
    if (!o.hf[0] || !o.out[0]) {
        free(o.keys);
        return cli_usage_error("import", "HF_DIR and --out RUN are required");
    }
    ImportResult r;
    import_run(&o, &r);
    import_report(&o, &r, stdout);
    free(o.keys);
    return 0;
}
