/* cmd_pretrain.c — `deberta pretrain`: flags -> ModelConfig (model/config.c's key table) +
 * TrainOptions (train/options.c's key table) -> pretrain_run(). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
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

/* 1 if argv[*i] is a model flag (--config FILE, --preset, a config key; its value checked here, where
 * it stands, and *i moved to the value), 0 if not, -1 with a message on a bad value, -2 for --config
 * without its file. */
static int model_flag(int argc, char **argv, int *i, char *err, size_t errlen) {
    if (!strcmp(argv[*i], "--config")) return *i + 1 < argc ? (++*i, 1) : -2;
    ModelConfig scratch;
    config_defaults(&scratch);
    return config_parse_flag(&scratch, argc, argv, i, err, errlen); /* -1, 0 or 1 */
}

int cmd_pretrain(int argc, char **argv) {
    TrainOptions o;
    train_options_default(&o);
    const char *omp_threads = getenv("OMP_NUM_THREADS");
    if (omp_threads) o.threads = atoi(omp_threads);
    char err[1024], **model = xcalloc((size_t)argc, sizeof(char *)); /* the model flags, in order */
    int n_model = 0, have_out = 0, resume_extra = 0, preset = 0, rc = 0;
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); free(model); return 0; }
        const int first = i;
        int c = model_flag(argc, argv, &i, err, sizeof err);
        if (c < 0) { rc = c == -2 ? cli_usage_error("pretrain", "%s needs a value", a) : (fprintf(stderr, "error: pretrain: %s\n", err), 2); break; }
        if (c > 0) {
            model[n_model++] = argv[first], model[n_model++] = argv[i];
            preset |= !strcmp(a, "--preset");
            continue;
        }
        if (strncmp(a, "--", 2) || i + 1 >= argc) {
            rc = strncmp(a, "--", 2) ? cli_usage_error("pretrain", "unexpected argument '%s'", a) : cli_usage_error("pretrain", "%s needs a value", a);
            break;
        }
        const char *v = argv[++i];
        int resume_ok = 0;
        if (!strcmp(a, "--resume")) {
            snprintf(o.out, sizeof o.out, "%s", v);
            o.resume = resume_ok = 1;
        } else if ((c = train_options_set_flag(&o, a + 2, v, &resume_ok, err, sizeof err)) <= 0) {
            rc = c < 0 ? cli_usage_error("pretrain", "%s", err) : cli_usage_error("pretrain", "unknown option '%s'", a);
        }
        have_out |= !strcmp(a, "--out");
        resume_extra |= !resume_ok;
    }
    if (!rc && preset && o.init_from[0])
        rc = cli_usage_error("pretrain", "--preset replaces the model of --init-from; give single model keys instead");
    if (!rc && !o.data[0]) rc = cli_usage_error("pretrain", "--data DIR is required");
    if (!rc && o.resume && (have_out || n_model || resume_extra))
        rc = cli_usage_error("pretrain", "--resume continues a run with its saved settings; only --data, --threads and --stop-after may be given");
    if (!rc && !o.resume && !have_out) rc = cli_usage_error("pretrain", "--out RUNDIR is required (or --resume RUNDIR)");
    ModelConfig cfg;
    config_defaults(&cfg);
    PretrainInit init;
    memset(&init, 0, sizeof init);
    if (!rc && !o.resume && (rc = pretrain_model_config(o.init_from, model, n_model, &cfg, &init, err, sizeof err))) fprintf(stderr, "error: %s\n", err);
    free(model);
    if (rc) return pretrain_init_close(&init), rc;
    const char *ins[2] = {o.data, o.init_from[0] ? o.init_from : NULL};
    if (!o.resume && out_path_check("--out", o.out, OUT_RUN, ins, 2, err, sizeof err)) fatal("%s", err);
    dist_init(&argc, &argv); /* under mpirun: one rank of a data-parallel run (train/dist.h) */
    char wait[160];
    const RunEnv env = {o.threads, omp_wait_describe(wait, sizeof wait)};
    rc = pretrain_run(&cfg, &o, &env, o.init_from[0] ? &init : NULL, argc, argv);
    pretrain_init_close(&init);
    dist_finalize();
    return rc;
}
