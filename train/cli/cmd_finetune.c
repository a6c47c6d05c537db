/* cmd_finetune.c — `deberta finetune`: flags -> FinetuneOptions -> finetune_run() (train/finetune.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/util.h"
#include "train/cli/cli.h"
#include "train/finetune.h"

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
            "  --batch B              examples per step                                             [%d]\n"
            "  --seed S               seed of the head init, the order and dropout                   [%llu]\n"
            "  --lr X                 peak learning rate (AdamW, linear warm-up and decay)           [%g]\n"
            "  --warmup N             warm-up steps                                        [10%% of steps]\n"
            "  --weight-decay X --max-grad-norm X                                            [%g %g]\n"
            "  --dropout P            hidden dropout of encoder and head         [the model config's, 0.1]\n"
            "  --eval-every N         dev evaluation every N steps (and at the end)                 [%ld]\n"
            "  --save-every N         checkpoint every N steps (and at the end)                     [%ld]\n"
            "  --log-every N          metrics.jsonl line every N steps                              [%ld]\n"
            "  --threads N            OpenMP/BLAS threads\n"
            "  --stop-after N         stop (with a checkpoint) after N steps of this invocation\n",
            o.init_model, o.preset, o.steps, o.batch, (unsigned long long)o.seed, o.lr, o.weight_decay, o.max_grad_norm,
            o.eval_every, o.save_every, o.log_every);
}

static int num(const char *v, double lo, double hi, double *x) {
    char *end;
    *x = strtod(v, &end);
    return end == v || *end || !(*x >= lo && *x <= hi);
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
        double x;
        int resume_ok = 0;
#define STR(flag, field) else if (!strcmp(a, flag)) { if (strlen(v) >= sizeof o.field) return cli_usage_error("finetune", "%s: value too long", a); snprintf(o.field, sizeof o.field, "%s", v); }
        if (!strcmp(a, "--resume")) { o.resume = 1; snprintf(o.out, sizeof o.out, "%s", v); resume_ok = 1; }
        STR("--init", init)
        STR("--init-model", init_model)
        STR("--preset", preset)
        STR("--task", task)
        STR("--out", out)
#undef STR
        else if (!strcmp(a, "--data")) { snprintf(o.data, sizeof o.data, "%s", v); resume_ok = 1; }
        else if (!strcmp(a, "--steps")) { if (num(v, 1, 1e12, &x)) return cli_usage_error("finetune", "--steps '%s' must be a positive integer", v); o.steps = (long)x; }
        else if (!strcmp(a, "--batch")) { if (num(v, 1, 1 << 20, &x)) return cli_usage_error("finetune", "--batch '%s' must be a positive integer", v); o.batch = (int)x; }
        else if (!strcmp(a, "--seed")) { if (num(v, 0, 1.8e19, &x)) return cli_usage_error("finetune", "--seed '%s' must be a non-negative integer", v); o.seed = strtoull(v, NULL, 10); }
        else if (!strcmp(a, "--threads")) { if (num(v, 1, 4096, &x)) return cli_usage_error("finetune", "--threads '%s' must be in [1, 4096]", v); o.threads = (int)x; resume_ok = 1; }
        else if (!strcmp(a, "--lr")) { if (num(v, 0, 10, &x)) return cli_usage_error("finetune", "--lr '%s' must be a number in [0, 10]", v); o.lr = x; }
        else if (!strcmp(a, "--warmup")) { if (num(v, 0, 1e12, &x)) return cli_usage_error("finetune", "--warmup '%s' must be a non-negative integer", v); o.warmup = (long)x; }
        else if (!strcmp(a, "--weight-decay")) { if (num(v, 0, 10, &x)) return cli_usage_error("finetune", "--weight-decay '%s' must be a number in [0, 10]", v); o.weight_decay = x; }
        else if (!strcmp(a, "--max-grad-norm")) { if (num(v, 0, 1e9, &x)) return cli_usage_error("finetune", "--max-grad-norm '%s' must be a non-negative number", v); o.max_grad_norm = x; }
        else if (!strcmp(a, "--dropout")) { if (num(v, 0, 0.99, &x)) return cli_usage_error("finetune", "--dropout '%s' must be a number in [0, 0.99]", v); o.dropout = x; }
        else if (!strcmp(a, "--eval-every")) { if (num(v, 0, 1e12, &x)) return cli_usage_error("finetune", "--eval-every '%s' must be a non-negative integer", v); o.eval_every = (long)x; }
        else if (!strcmp(a, "--save-every")) { if (num(v, 0, 1e12, &x)) return cli_usage_error("finetune", "--save-every '%s' must be a non-negative integer", v); o.save_every = (long)x; }
        else if (!strcmp(a, "--log-every")) { if (num(v, 1, 1e12, &x)) return cli_usage_error("finetune", "--log-every '%s' must be a positive integer", v); o.log_every = (long)x; }
        else if (!strcmp(a, "--stop-after")) { if (num(v, 1, 1e12, &x)) return cli_usage_error("finetune", "--stop-after '%s' must be a positive integer", v); o.stop_after = (long)x; resume_ok = 1; }
        else return cli_usage_error("finetune", "unknown flag '%s'", a);
        if (!strcmp(a, "--init")) have_init = 1;
        if (!strcmp(a, "--out")) have_out = 1;
        if (!resume_ok) only_resume_flags = 0;
    }
    if (o.resume) {
        if (!only_resume_flags || have_out)
            return cli_usage_error("finetune", "%s", "--resume takes the run's own settings; only --data, --threads and --stop-after may be given with it");
        return finetune_run(&o, argc, argv);
    }
    if (!have_init) return cli_usage_error("finetune", "%s", "--init RUN/checkpoint.h5 or --init scratch is required");
    if (!o.task[0]) return cli_usage_error("finetune", "%s", "--task NAME is required (pos, genre, or the prep-task --name of the files)");
    if (!o.data[0]) return cli_usage_error("finetune", "%s", "--data TASKDIR is required");
    if (!have_out) return cli_usage_error("finetune", "%s", "--out RUNDIR is required");
    return finetune_run(&o, argc, argv);
}
