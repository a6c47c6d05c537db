/* cmd_eval.c — `deberta eval CHECKPOINT --data DIR`: flags -> EvalOptions -> eval_checkpoint()
 * (train/eval_checkpoint.h: held-out MLM and RTD metrics of a checkpoint, the yardsticks). */
#include <stdio.h>
#include <string.h>
#include "autograd/gemm.h"
#include "train/cli/cli.h"
#include "train/eval_checkpoint.h"

static void usage(void) {
    printf("usage: deberta eval CHECKPOINT --data DIR [--batches N] [--batch B] [--threads N]\n"
           "  Generator MLM loss/accuracy and discriminator RTD loss/accuracy/AUC on the val split of DIR\n"
           "  (the first N batches, default 64, of B sequences, default 16), next to the baselines:\n"
           "  the most frequent masked token (MLM) and \"every token is original\" (RTD).  With DIR/rtd-fixed.h5\n"
           "  (scripts/rtd_fixed.py) also the discriminator on that fixed corruption, beside the count detector; with\n"
           "  DIR/probe-pos/ (deberta prep-task --task pos) a linear POS probe of its frozen features (train/eval/probe.h).\n");
}

int cmd_eval(int argc, char **argv) {
    EvalOptions o;
    eval_options_default(&o);
    char err[1024];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage();
            return 0;
        }
        if (a[0] != '-' && !o.ckpt[0] && strlen(a) < sizeof o.ckpt) {
            snprintf(o.ckpt, sizeof o.ckpt, "%s", a);
            continue;
        }
        const int c = strncmp(a, "--", 2) || i + 1 >= argc ? 0 : eval_options_set_flag(&o, a + 2, argv[i + 1], err, sizeof err);
        if (c < 0) return cli_usage_error("eval", "%s", err);
        if (c == 0) return cli_usage_error("eval", "unexpected argument '%s'", a);
        i++;
    }
    if (!o.ckpt[0] || !o.data[0]) return cli_usage_error("eval", "a CHECKPOINT and --data DIR are required");
    threads_set(o.threads);
    return eval_checkpoint(&o, stdout);
}
