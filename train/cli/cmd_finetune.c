/* cmd_finetune.c — `deberta finetune`: flags -> FinetuneOptions -> finetune_run() (train/finetune.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "train/cli/cli.h"
#include "train/outpath.h"
#include "train/finetune.h"
#include "train/optim.h"

static void usage(FILE *f) {
    FinetuneOptions o;
    finetune_options_default(&o);
    fprintf(f,
            "usage: deberta finetune --init RUN/checkpoint.h5|scratch --task NAME --data TASKDIR --out RUNDIR [options]\n"
            "       deberta finetune --resume RUNDIR [--threads N]\n"
            "\n"
            "An encoder + task head fine-tuned on the task files of `deberta prep-task`; dev evaluation every N\n"
            "steps, the best dev model kept (RUNDIR/best.h5) and evaluated on test at the end, beside the\n"
            "baselines fitted on the train split (majority class or train mean; tagging: the most frequent tag per\n"
            "word; classification: naive Bayes over the tokens).  Scores: accuracy, macro-F1, MCC and F1 of label\n"
            "1 for two labels, entity P/R/F1 for BIO tags, Pearson/Spearman/MSE for regression (MSE loss).\n"
            "\n"
            "  --init PATH|scratch    a pretraining checkpoint, or scratch (random init of --preset)  (required)\n"
            "  --init-model M         discriminator | generator: which encoder of the checkpoint   [%s]\n"
            "  --preset P             model preset with --init scratch (tiny, xsmall, test)           [%s]\n"
            "  --task NAME            the task's name in the files: pos, genre, or prep-task --name  (required)\n"
            "  --data TASKDIR         train.h5, dev.h5, test.h5                                      (required)\n"
            "  --out RUNDIR           run directory; must not hold a run already                     (required)\n"
            "  --resume RUNDIR        continue the run in RUNDIR exactly where it stopped\n"
            "  --steps N              training steps                                                [%ld]\n"
            "  --batch B              examples per step (padded to the batch's longest example)   [%d]\n"
            "  --length-groups G      draw G batches at a time, grouped by length (0: off)          [%d]\n"
            "  --seed S               seed of the head init, the order and dropout                   [%llu]\n"
            "  --lr X                 peak learning rate (linear warm-up and decay)                  [%g]\n"
            "  --warmup N             warm-up steps                                        [10%% of steps]\n"
            "  --weight-decay X --max-grad-norm X                                            [%g %g]\n"
            "  --optimizer NAME       the update rule (train/optim.h; deberta pretrain --help lists them) [%s]\n"
            "  --dropout P            hidden dropout of encoder and head (not the checkpoint's)     [%g]\n"
            "  --attention-dropout P  attention dropout of the encoder (not the checkpoint's)       [%g]\n"
            "  --pooler cls|mean      what a sequence head reads: [CLS] (Hugging Face's ContextPooler;\n"
            "                         export needs it) or the mean of the non-pad tokens             [%s]\n"
            "  --reinit-layers N      the checkpoint's top N encoder layers start from a fresh init [0]\n"
            "  --layer-decay D        layer-wise rate decay: layer l of L at lr*D^(L-l)             [1]\n"
            "  --eval-every N         dev evaluation every N steps (and at the end)                 [%ld]\n"
            "  --save-every N         checkpoint every N steps (and at the end)                     [%ld]\n"
            "  --log-every N          metrics.jsonl line every N steps                              [%ld]\n"
            "  --threads N            OpenMP/BLAS threads\n"
            "  --stop-after N         stop (with a checkpoint) after N steps of this invocation\n",
            o.init_model, o.preset, o.steps, o.batch, o.length_groups, (unsigned long long)o.seed, o.lr, o.weight_decay, o.max_grad_norm,
            OPTIMIZERS[o.optimizer]->name, o.dropout, o.attention_dropout, task_head_pooler_name((HeadPooler)o.pooler), o.eval_every,
            o.save_every, o.log_every);
}

int cmd_finetune(int argc, char **argv) {
    FinetuneOptions o;
    finetune_options_default(&o);
    int have_init = 0, have_out = 0, only_resume_flags = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (i + 1 >= argc) return cli_usage_error("finetune", "%s needs a value", a);
        const char *v = argv[++i];
        int resume_ok = 0;
        if (!strcmp(a, "--resume")) {
            if (strlen(v) >= sizeof o.out) return cli_usage_error("finetune", "%s: value too long", a);
            o.resume = 1;
            snprintf(o.out, sizeof o.out, "%s", v);
            resume_ok = 1;
        } else {
            char err[1024];
            const int c = strncmp(a, "--", 2) ? 0 : finetune_options_set_flag(&o, a + 2, v, &resume_ok, err, sizeof err);
            if (c < 0) return cli_usage_error("finetune", "%s", err);
            if (c == 0) return cli_usage_error("finetune", "unknown flag '%s'", a);
        }
        if (!strcmp(a, "--init")) have_init = 1;
        if (!strcmp(a, "--out")) have_out = 1;
        if (!resume_ok) only_resume_flags = 0;
    }
    char wait[160];
    const RunEnv env = {o.threads, omp_wait_describe(wait, sizeof wait)};
    if (o.resume) {
        if (!only_resume_flags || have_out)
            return cli_usage_error("finetune", "%s", "--resume takes the run's own settings; only --data, --threads and --stop-after may be given with it");
        return finetune_run(&o, &env, argc, argv);
    }
    if (!have_init) return cli_usage_error("finetune", "%s", "--init RUN/checkpoint.h5 or --init scratch is required");
    if (!o.task[0]) return cli_usage_error("finetune", "%s", "--task NAME is required (pos, genre, or the prep-task --name of the files)");
    if (!o.data[0]) return cli_usage_error("finetune", "%s", "--data TASKDIR is required");
    if (!have_out) return cli_usage_error("finetune", "%s", "--out RUNDIR is required");
    char err[1024];
    const char *ins[2] = {o.data, strcmp(o.init, "scratch") ? o.init : NULL};
    if (out_path_check("--out", o.out, OUT_RUN, ins, 2, err, sizeof err)) fatal("%s", err);
    return finetune_run(&o, &env, argc, argv);
}
