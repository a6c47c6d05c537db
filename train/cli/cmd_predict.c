/* cmd_predict.c — `deberta predict RUN/best.h5 --input FILE`: flags -> PredictOptions -> predict_run()
 * (train/infer/predict.c); the JSON lines to --output or stdout, the speed and scores on stderr. */
#include <omp.h>
#include <stdio.h>
#include <string.h>
#include "autograd/base/util.h"
#include "data/task_format.h"
#include "train/infer/predict.h"
#include "train/cli/cli.h"

static void usage(FILE *f) {
    char all[128];
    task_format_names(all, sizeof all, TASK_HOLDS_ANY, "|", "|");
    fprintf(f,
            "usage: deberta predict RUN/best.h5 --input FILE --format %s [fields] [options]\n"
            "\n"
            "The fine-tuned model on new text, read as prep-task reads it (labels optional): one JSON line per\n"
            "record (label and its probability; tagging: per word), the scores when labels are present.\n"
            "The checkpoint holds the task (its kind, labels, pairing, length) and the tokenizer.\n"
            "\n"
            "  --input FILE           the examples                                              (required)\n"
            "  --format F             the file's format, one of                                  (required)\n", all);
    task_format_help(f, "                           ");
    fprintf(f,
            "  --text-field NAME --text-pair-field NAME --label-field NAME   as prep-task (label optional)\n"
            "  --tokens-field K --tags-field K --token-column N --tag-column N   tagging, as prep-task\n"
            "  --data TASKDIR         the task files the model was fine-tuned on, checked against it (needed\n"
            "                         only for a checkpoint without ft_pair)          [its ft_data if needed]\n"
            "  --output FILE.jsonl    the predictions                                               [stdout]\n"
            "  --batch B              examples per forward                                             [32]\n"
            "  --threads N            OpenMP/BLAS threads\n");
}

int cmd_predict(int argc, char **argv) {
    const char *ckpt = NULL;
    PredictOptions o;
    predict_options_default(&o);
    char err[8192];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (a[0] != '-') {
            if (ckpt) return cli_usage_error("predict", "one checkpoint only (got '%s' too)", a);
            ckpt = a;
            continue;
        }
        if (i + 1 >= argc) return cli_usage_error("predict", "%s needs a value", a);
        const int c = strncmp(a, "--", 2) ? 0 : predict_options_set_flag(&o, a + 2, argv[++i], err, sizeof err);
        if (c < 0) return cli_usage_error("predict", "%s", err);
        if (c == 0) return cli_usage_error("predict", "unknown flag '%s'", a);
    }
    if (!ckpt) return cli_usage_error("predict", "%s", "RUN/best.h5 is required");
    if (!o.input[0]) return cli_usage_error("predict", "%s", "--input FILE is required");
    if (o.threads > 0) { omp_set_num_threads(o.threads); openblas_set_num_threads(o.threads); }
    Predictions pr;
    const int rc = predict_run(ckpt, &o, &pr, err, sizeof err);
    if (rc == PREDICT_USAGE) return cli_usage_error("predict", "%s", err);
    if (rc || predict_write(&pr, o.output, err, sizeof err)) fatal("%s", err);
    char wait[160];
    predict_report(&pr, o.input, omp_wait_describe(wait, sizeof wait), stderr);
    predictions_free(&pr);
    return 0;
}
