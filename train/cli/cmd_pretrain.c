/* cmd_pretrain.c — `deberta pretrain`: flags -> ModelConfig (model/config.c's key table) +
 * TrainOptions (train/options.c's key table) -> pretrain_run(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "train/checkpoint.h"
#include "train/cli/cli.h"
#include "train/outpath.h"
#include "train/dist.h"
#include "train/pretrain.h"

static void usage(FILE *f) {
    TrainOptions o;
    train_options_default(&o);
    fprintf(f,
            "usage: deberta pretrain --data DIR --out RUNDIR [options]\n"
            "       deberta pretrain --resume RUNDIR --data DIR [--threads N]\n"
            "       deberta pretrain --init-from CHECKPOINT --data DIR --out RUNDIR [options]\n"
            "\n"
            "ELECTRA-style DeBERTa-V3 pretraining (generator MLM + discriminator RTD) from HDF5 shards\n"
            "written by `deberta prep`.  RUNDIR gets config.txt, cmdline.txt, metrics.jsonl, checkpoint.h5.\n"
            "\n"
            "run:\n"
            "  --data DIR             shards (train-*.h5, val-*.h5)                     (required)\n"
            "  --out RUNDIR           run directory; must not hold a run already          (required)\n"
            "  --resume RUNDIR        continue the run in RUNDIR exactly where it stopped\n"
            "  --init-from CKPT       a new run from the parameters of CKPT (deberta import's RUN/checkpoint.h5 or a\n"
            "                         run's): its model config, then the model flags (not --preset); the shards must\n"
            "                         be of its tokenizer (deberta prep --tokenizer spm.model for an import)\n"
            "  --steps N              training steps                                      [%ld]\n"
            "  --minutes M            instead of --steps: time steps and an evaluation (~1 %% of the budget), fit the run into M minutes\n"
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
            "  --keep-every N         also keep RUNDIR/checkpoint-STEP.h5 every N steps (0 = only the latest) [0]\n"
            "  --stop-after N         stop (with a checkpoint) after N steps of this invocation\n"
            "  --short-seq-len T1     sequence-length curriculum: the first --short-frac of the steps read\n"
            "                         T1-token sequences, batch x T / T1 per micro-batch (0 = none)\n"
            "                         [32 when max_seq_len >= 128, else 0; docs/HISTORY.md part 8]\n"
            "  --short-frac F         share of the steps in the short phase                        [0.5]\n"
            "  --zero 0|1             under mpirun: ZeRO-1, each rank keeps the optimizer state of 1/N of the model [0]\n"
            "optimizer:\n"
            "  --optimizer NAME       the update rule (train/optim.h)                      [%s]\n",
            o.steps, o.batch, o.accum, (unsigned long long)o.seed, o.mask_prob, o.eval_every, o.eval_batches, o.save_every,
            o.log_every, o.max_bad_steps, OPTIMIZERS[0]->name);
    optim_help(f, "                         ");
    fprintf(f,
            "  --lr X                 peak learning rate (the generator's; joint: the model's) [%g; joint %g]\n"
            "  --d-lr X               discriminator peak learning rate (decoupled; 0 = --lr)  [%g x --lr]\n"
            "  --warmup N             warm-up steps                                [10%% of steps, <= 10000]\n"
            "  --decay-frac F         warm-up, then the peak, then linear decay to 0 over the last F of the steps\n"
            "                         (warm-up-stable-decay; 0 = the optimizer's schedule)                [0]\n"
            "  --beta1 X --beta2 X --eps X --weight-decay X --max-grad-norm X   [%g %g %g %g %g]\n"
            "model (any config key, also from --config FILE; '-' and '_' interchangeable):\n"
            "  --preset tiny|xsmall|test                                                   [tiny]\n"
            "  --config FILE          key = value lines (the format of RUNDIR/config.txt)\n"
            "  --hidden_size --num_hidden_layers --num_attention_heads --attention_head_size\n"
            "  --intermediate_size --max_position_embeddings --position_buckets --max_relative_positions\n"
            "  --pos_att_type c2c|c2p|p2c (any non-empty subset)  --layer_norm_eps  --hidden_dropout_prob\n"
            "  --attention_probs_dropout_prob  --initializer_range  --gen_num_hidden_layers (0 = half)\n"
            "  --use_emd 0|1  --embedding_sharing gdes|es|nes  --rtd_lambda X  --training_mode decoupled|joint\n"
            "  --disc_position_biased_input 0|1 (absolute positions at the discriminator's input; a control)\n"
            "  --max_seq_len T        sequence length (<= max_position_embeddings)\n",
            TRAIN_GENERATOR_LR, TRAIN_JOINT_LR, TRAIN_D_LR_FACTOR, o.opt.beta1, o.opt.beta2, o.opt.eps, o.opt.weight_decay, o.opt.max_grad_norm);
}

int cmd_pretrain(int argc, char **argv) {
    ModelConfig cfg;
    TrainOptions o;
    config_defaults(&cfg);
    train_options_default(&o);
    char err[1024];
    int have_data = 0, have_out = 0, model_flags = 0, resume_extra = 0;
    const char *omp_threads = getenv("OMP_NUM_THREADS");
    if (omp_threads) o.threads = atoi(omp_threads);
    /* --init-from: the checkpoint's model config comes first, the model flags then change it; the run
     * reads the same open checkpoint on (its tokenizer, its parameters) */
    PretrainInit init;
    memset(&init, 0, sizeof init);
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--init-from")) continue;
        snprintf(o.init_from, sizeof o.init_from, "%s", argv[i + 1]);
        checkpoint_close(init.ck);
        checkpoint_state_free(&init.st);
        if (!(init.ck = checkpoint_open(o.init_from, &init.st, err, sizeof err))) fatal("--init-from: %s", err);
        if (config_from_text(&cfg, init.st.config, o.init_from, err, sizeof err)) fatal("--init-from: %s", err);
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--preset") && o.init_from[0])
            return cli_usage_error("pretrain", "--preset replaces the model of --init-from; give single model keys instead");
        if (!strcmp(a, "--config")) {
            if (i + 1 >= argc) return cli_usage_error("pretrain", "%s needs a value", a);
            if (config_load(&cfg, argv[++i], err, sizeof err)) { /* a file that cannot be read: bad input, exit 1 */
                fprintf(stderr, "error: %s\n", err);
                return 1;
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
            if (!strncmp(a, "--", 2)) return cli_usage_error("pretrain", "%s needs a value", a);
            return cli_usage_error("pretrain", "unexpected argument '%s'", a);
        }
        const char *v = argv[++i];
        const char *k = a + 2;
        int resume_ok = 0;
        if (!strcmp(k, "data")) {
            snprintf(o.data, sizeof o.data, "%s", v);
            have_data = 1;
            continue;
        }
        if (!strcmp(k, "init-from")) {
            resume_extra = 1;
            continue;
        }
        if (!strcmp(k, "resume")) {
            snprintf(o.out, sizeof o.out, "%s", v);
            o.resume = 1;
            continue;
        }
        if (!strcmp(k, "out")) {
            snprintf(o.out, sizeof o.out, "%s", v);
            have_out = 1;
            resume_extra = 1;
            continue;
        }
        c = train_options_set_flag(&o, k, v, &resume_ok, err, sizeof err);
        if (c < 0) return cli_usage_error("pretrain", "%s", err);
        if (c == 0) return cli_usage_error("pretrain", "unknown option '%s'", a);
        if (!resume_ok) resume_extra = 1;
    }
    if (!have_data) return cli_usage_error("pretrain", "--data DIR is required");
    if (o.resume) {
        if (have_out || model_flags || resume_extra)
            return cli_usage_error("pretrain", "--resume continues a run with its saved settings; only --data, --threads and --stop-after may be given");
    } else {
        if (!have_out) return cli_usage_error("pretrain", "--out RUNDIR is required (or --resume RUNDIR)");
        if (config_validate(&cfg, err, sizeof err)) {
            fprintf(stderr, "error: %s\n", err);
            return 2;
        }
        const char *ins[2] = {o.data, o.init_from[0] ? o.init_from : NULL};
        if (out_path_check("--out", o.out, OUT_RUN, ins, 2, err, sizeof err)) fatal("%s", err);
    }
    dist_init(&argc, &argv); /* under mpirun: one rank of a data-parallel run (train/dist.h) */
    char wait[160];
    const RunEnv env = {o.threads, omp_wait_describe(wait, sizeof wait)};
    const int rc = pretrain_run(&cfg, &o, &env, o.init_from[0] ? &init : NULL, argc, argv);
    checkpoint_close(init.ck);
    checkpoint_state_free(&init.st);
    dist_finalize();
    return rc;
}
