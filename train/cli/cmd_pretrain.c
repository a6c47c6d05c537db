/* cmd_pretrain.c — `deberta pretrain`: flags -> ModelConfig + TrainOptions -> pretrain_run(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <math.h>
#include "autograd/util.h"
#include "train/cli/cli.h"
#include "train/pretrain.h"

static void usage(FILE *f) {
    TrainOptions o;
    train_options_default(&o);
    fprintf(f,
            "usage: deberta pretrain --data DIR --out RUNDIR [options]\n"
            "       deberta pretrain --resume RUNDIR --data DIR [--threads N]\n"
            "\n"
            "ELECTRA-style DeBERTa-V3 pretraining (generator MLM + discriminator RTD) from HDF5 shards\n"
            "written by `deberta prep`.  RUNDIR gets config.txt, cmdline.txt, metrics.jsonl, checkpoint.h5.\n"
            "\n"
            "run:\n"
            "  --data DIR             shards (train-*.h5, val-*.h5)                     (required)\n"
            "  --out RUNDIR           run directory; must not hold a run already          (required)\n"
            "  --resume RUNDIR        continue the run in RUNDIR exactly where it stopped\n"
            "  --steps N              training steps                                      [%ld]\n"
            "  --minutes M            instead of --steps: time a step, then fit the run into M minutes\n"
            "  --batch B              sequences per micro-batch                            [%d]\n"
            "  --accum K              micro-batches per step (gradient accumulation)      [%d]\n"
            "  --seed S               seed of every random stream                          [%llu]\n"
            "  --threads N            OpenMP/BLAS threads (default: OMP_NUM_THREADS or all cores)\n"
            "  --mask-mode M          official | random | bert (spec §4.2, §11)            [official]\n"
            "  --mask-prob P          masking rate                                         [%.2f]\n"
            "  --eval-every N         evaluate on the val split every N steps (and at the end) [%ld]\n"
            "  --eval-batches N       batches per evaluation                               [%ld]\n"
            "  --save-every N         checkpoint every N steps (and at the end)            [%ld]\n"
            "  --log-every N          metrics.jsonl line every N steps                     [%ld]\n"
            "  --max-bad-steps K      stop after K consecutive non-finite steps            [%d]\n"
            "  --stop-after N         stop (with a checkpoint) after N steps of this invocation\n"
            "optimizer:\n"
            "  --optimizer adamw|xadam   torch AdamW (linear warm-up/decay) or the official XAdam [adamw]\n"
            "  --lr X                 peak learning rate                                   [%g]\n"
            "  --d-lr X               discriminator peak learning rate (decoupled)          [= --lr]\n"
            "  --warmup N             warm-up steps                                [10%% of steps, <= 10000]\n"
            "  --beta1 X --beta2 X --eps X --weight-decay X --max-grad-norm X   [%g %g %g %g %g]\n"
            "model (any config key, also from --config FILE; '-' and '_' interchangeable):\n"
            "  --preset tiny|xsmall|test                                                   [tiny]\n"
            "  --config FILE          key = value lines (the format of RUNDIR/config.txt)\n"
            "  --hidden_size --num_hidden_layers --num_attention_heads --attention_head_size\n"
            "  --intermediate_size --max_position_embeddings --position_buckets --max_relative_positions\n"
            "  --pos_att_type c2c|c2p|p2c (any non-empty subset)  --layer_norm_eps  --hidden_dropout_prob\n"
            "  --attention_probs_dropout_prob  --initializer_range  --gen_num_hidden_layers (0 = half)\n"
            "  --use_emd 0|1  --embedding_sharing gdes|es|nes  --rtd_lambda X  --training_mode decoupled|joint\n"
            "  --max_seq_len T        sequence length (<= max_position_embeddings)\n",
            o.steps, o.batch, o.accum, (unsigned long long)o.seed, o.mask_prob, o.eval_every, o.eval_batches, o.save_every,
            o.log_every, o.max_bad_steps, o.opt.lr, o.opt.beta1, o.opt.beta2, o.opt.eps, o.opt.weight_decay, o.opt.max_grad_norm);
}

static int bad(const char *fmt, const char *a, const char *b) {
    fprintf(stderr, "error: pretrain: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, " (see deberta pretrain --help)\n");
    return 2;
}

static int parse_long(const char *s, long lo, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo) return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double lo, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !isfinite(v) || v < lo) return -1;
    *out = v;
    return 0;
}

int cmd_pretrain(int argc, char **argv) {
    ModelConfig cfg;
    TrainOptions o;
    config_defaults(&cfg);
    train_options_default(&o);
    char err[1024];
    int have_data = 0, have_out = 0, model_flags = 0, resume_extra = 0;
    const char *env = getenv("OMP_NUM_THREADS");
    if (env) o.threads = atoi(env);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--config")) {
            if (i + 1 >= argc) return bad("%s needs a value%s", a, "");
            if (config_load(&cfg, argv[++i], err, sizeof err)) {
                fprintf(stderr, "error: %s\n", err);
                return 2;
            }
            model_flags = 1;
            continue;
        }
        int c = config_parse_flag(&cfg, argc, argv, &i, err, sizeof err);
        if (c < 0) {
            fprintf(stderr, "error: pretrain: %s\n", err);
            return 2;
        }
        if (c > 0) {
            model_flags = 1;
            continue;
        }
        if (strncmp(a, "--", 2) || i + 1 >= argc) {
            if (!strncmp(a, "--", 2)) return bad("%s needs a value%s", a, "");
            return bad("unexpected argument '%s'%s", a, "");
        }
        const char *v = argv[++i];
        long l;
        const char *k = a + 2;
        int is_resume_ok = !strcmp(k, "data") || !strcmp(k, "threads") || !strcmp(k, "stop-after") || !strcmp(k, "resume");
        if (!is_resume_ok) resume_extra = 1;
        if (!strcmp(k, "data")) {
            snprintf(o.data, sizeof o.data, "%s", v);
            have_data = 1;
        } else if (!strcmp(k, "out")) {
            snprintf(o.out, sizeof o.out, "%s", v);
            have_out = 1;
        } else if (!strcmp(k, "resume")) {
            snprintf(o.out, sizeof o.out, "%s", v);
            o.resume = 1;
        } else if (!strcmp(k, "steps")) {
            if (parse_long(v, 1, &o.steps)) return bad("--steps wants a positive integer, got '%s'%s", v, "");
        } else if (!strcmp(k, "minutes")) {
            if (parse_double(v, 1e-3, &o.minutes)) return bad("--minutes wants a positive number, got '%s'%s", v, "");
        } else if (!strcmp(k, "batch")) {
            if (parse_long(v, 1, &l)) return bad("--batch wants a positive integer, got '%s'%s", v, "");
            o.batch = (int)l;
        } else if (!strcmp(k, "accum")) {
            if (parse_long(v, 1, &l) || l > 31) return bad("--accum wants an integer in 1..31, got '%s'%s", v, "");
            o.accum = (int)l;
        } else if (!strcmp(k, "seed")) {
            if (parse_long(v, 0, &l)) return bad("--seed wants a non-negative integer, got '%s'%s", v, "");
            o.seed = (uint64_t)l;
        } else if (!strcmp(k, "threads")) {
            if (parse_long(v, 1, &l)) return bad("--threads wants a positive integer, got '%s'%s", v, "");
            o.threads = (int)l;
        } else if (!strcmp(k, "mask-mode") || !strcmp(k, "mask_mode")) {
            if (mask_mode_parse(v, &o.mask_mode)) return bad("--mask-mode wants official, random or bert, got '%s'%s", v, "");
        } else if (!strcmp(k, "mask-prob") || !strcmp(k, "mask_prob")) {
            if (parse_double(v, 1e-6, &o.mask_prob) || o.mask_prob >= 1) return bad("--mask-prob wants a number in (0, 1), got '%s'%s", v, "");
        } else if (!strcmp(k, "eval-every")) {
            if (parse_long(v, 0, &o.eval_every)) return bad("--eval-every wants an integer >= 0, got '%s'%s", v, "");
        } else if (!strcmp(k, "eval-batches")) {
            if (parse_long(v, 1, &o.eval_batches)) return bad("--eval-batches wants a positive integer, got '%s'%s", v, "");
        } else if (!strcmp(k, "save-every")) {
            if (parse_long(v, 0, &o.save_every)) return bad("--save-every wants an integer >= 0, got '%s'%s", v, "");
        } else if (!strcmp(k, "log-every")) {
            if (parse_long(v, 1, &o.log_every)) return bad("--log-every wants a positive integer, got '%s'%s", v, "");
        } else if (!strcmp(k, "max-bad-steps")) {
            if (parse_long(v, 1, &l)) return bad("--max-bad-steps wants a positive integer, got '%s'%s", v, "");
            o.max_bad_steps = (int)l;
        } else if (!strcmp(k, "stop-after")) {
            if (parse_long(v, 1, &o.stop_after)) return bad("--stop-after wants a positive integer, got '%s'%s", v, "");
        } else if (!strcmp(k, "optimizer")) {
            double lr = o.opt.lr;
            if (!strcmp(v, "adamw")) optim_config_default(&o.opt, OPTIM_ADAMW);
            else if (!strcmp(v, "xadam")) optim_config_default(&o.opt, OPTIM_XADAM);
            else return bad("--optimizer wants adamw or xadam, got '%s'%s", v, "");
            o.opt.lr = lr;
        } else if (!strcmp(k, "lr")) {
            if (parse_double(v, 0, &o.opt.lr)) return bad("--lr wants a number >= 0, got '%s'%s", v, "");
        } else if (!strcmp(k, "d-lr")) {
            if (parse_double(v, 0, &o.d_lr)) return bad("--d-lr wants a number >= 0, got '%s'%s", v, "");
        } else if (!strcmp(k, "warmup")) {
            if (parse_long(v, 0, &o.warmup)) return bad("--warmup wants an integer >= 0, got '%s'%s", v, "");
        } else if (!strcmp(k, "beta1")) {
            if (parse_double(v, 0, &o.opt.beta1) || o.opt.beta1 >= 1) return bad("--beta1 wants a number in [0, 1), got '%s'%s", v, "");
        } else if (!strcmp(k, "beta2")) {
            if (parse_double(v, 0, &o.opt.beta2) || o.opt.beta2 >= 1) return bad("--beta2 wants a number in [0, 1), got '%s'%s", v, "");
        } else if (!strcmp(k, "eps")) {
            if (parse_double(v, 0, &o.opt.eps)) return bad("--eps wants a number >= 0, got '%s'%s", v, "");
        } else if (!strcmp(k, "weight-decay")) {
            if (parse_double(v, 0, &o.opt.weight_decay)) return bad("--weight-decay wants a number >= 0, got '%s'%s", v, "");
        } else if (!strcmp(k, "max-grad-norm")) {
            if (parse_double(v, 0, &o.opt.max_grad_norm)) return bad("--max-grad-norm wants a number >= 0, got '%s'%s", v, "");
        } else {
            return bad("unknown option '%s'%s", a, "");
        }
    }
    if (!have_data) return bad("--data DIR is required%s%s", "", "");
    if (o.resume) {
        if (have_out || model_flags || resume_extra)
            return bad("--resume continues a run with its saved settings; only --data, --threads and --stop-after may be given%s%s", "", "");
    } else {
        if (!have_out) return bad("--out RUNDIR is required (or --resume RUNDIR)%s%s", "", "");
        if (config_validate(&cfg, err, sizeof err)) {
            fprintf(stderr, "error: %s\n", err);
            return 2;
        }
    }
    return pretrain_run(&cfg, &o, argc, argv);
}
