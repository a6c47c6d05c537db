/* cmd_export.c — `deberta export SRC OUTDIR`: flags -> ExportOptions -> export_run()
 * (train/interop/export_run.h: a checkpoint or a parity weights file as Hugging Face DebertaV2
 * folders), then its summary line.  Layout and names: docs/FORMATS.md "Export".
 */
#include <stdio.h>
#include <string.h>
#include "train/cli/cli.h"
#include "train/interop/export_run.h"

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

int cmd_export(int argc, char **argv) {
    ExportOptions o;
    export_options_default(&o);
    char err[1024];
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strncmp(a, "--", 2)) {
            const int c = export_options_set_flag(&o, a + 2, i + 1 < argc ? argv[i + 1] : NULL, err, sizeof err);
            if (c < 0) return cli_usage_error("export", "%s", err);
            if (c == 0) return cli_usage_error("export", "unknown flag %s", a);
            i += c == 1;
            continue;
        }
        char *dst = n_pos == 0 ? o.src : n_pos == 1 ? o.outdir : NULL;
        if (!dst || strlen(a) >= sizeof o.src) return cli_usage_error("export", "unexpected argument %s", a);
        snprintf(dst, sizeof o.src, "%s", a);
        n_pos++;
    }
    if (n_pos < 2) return cli_usage_error("export", "needs CHECKPOINT and OUTDIR");
    ExportResult r;
    export_run(&o, &r);
    export_report(&o, &r, stdout);
    return 0;
}
