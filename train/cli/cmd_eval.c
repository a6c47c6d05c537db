/* cmd_eval.c — `deberta eval CHECKPOINT --data DIR`: held-out MLM and RTD metrics of a checkpoint. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/gemm.h"
#include "autograd/base/util.h"
#include "train/cli/cli.h"
#include "train/model_source.h"
#include "data/tokenizer.h"
#include "train/evaluate.h"
#include "train/pretrain.h"
#include "train/yardstick.h"

int cmd_eval(int argc, char **argv) {
    const char *ckpt = NULL, *data = NULL;
    long batches = 64;
    int batch = 16, threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: deberta eval CHECKPOINT --data DIR [--batches N] [--batch B] [--threads N]\n"
                   "  Generator MLM loss/accuracy and discriminator RTD loss/accuracy/AUC on the val split of DIR\n"
                   "  (the first N batches, default 64, of B sequences, default 16), next to the baselines:\n"
                   "  the most frequent masked token (MLM) and \"every token is original\" (RTD).  With DIR/rtd-fixed.h5\n"
                   "  (scripts/rtd_fixed.py) also the discriminator on that fixed corruption, beside the count detector; with\n"
                   "  DIR/probe-pos/ (deberta prep-task --task pos) a linear POS probe of its frozen features (train/probe.h).\n");
            return 0;
        } else if (!strcmp(argv[i], "--data") && i + 1 < argc) {
            data = argv[++i];
        } else if (!strcmp(argv[i], "--batches") && i + 1 < argc) {
            batches = atol(argv[++i]);
            if (batches < 1) fatal("eval: --batches wants a positive integer");
        } else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
            batch = atoi(argv[++i]);
            if (batch < 1) fatal("eval: --batch wants a positive integer");
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (argv[i][0] != '-' && !ckpt) {
            ckpt = argv[i];
        } else {
            return cli_usage_error("eval", "unexpected argument '%s'", argv[i]);
        }
    }
    if (!ckpt || !data) {
        return cli_usage_error("eval", "a CHECKPOINT and --data DIR are required");
    }
    threads_set(threads);
    char err[1024];
    ModelSource src;
    ModelConfig cfg;
    model_source_config(&src, ckpt, 0, &cfg);
    if (config_validate(&cfg, err, sizeof err)) fatal("checkpoint %s: %s", ckpt, err);
    const uint64_t seed = src.st.seed;
    Electra m;
    model_source_load(&src, &m, &cfg, seed);
    LoaderConfig lc;
    loader_config_default(&lc);
    lc.T = cfg.max_seq_len;
    lc.B = batch;
    lc.seed = seed;
    Loader *val = loader_open_err(data, "val", &lc, err, sizeof err);
    if (!val) fatal("%s", err);
    if (src.st.n_tokenizer) { /* the checkpoint's tokenizer identity against the shards' */
        char h[17];
        tokenizer_hash_bytes(src.st.tokenizer, src.st.n_tokenizer, h);
        if (strcmp(h, loader_tokenizer_hash(val)))
            fatal("data %s: the shards were made with tokenizer %s, but checkpoint %s was trained with tokenizer %s (evaluate on shards "
                  "prepared with the checkpoint's tokenizer)", data, loader_tokenizer_hash(val), ckpt, h);
    }
    if (config_check_data(&cfg, val, err, sizeof err)) fatal("data %s: %s (checkpoint %s: different tokenizer?)", data, err, ckpt);

    Tape t;
    tape_init(&t, (size_t)64 << 20);
    double t0 = now_seconds();
    EvalResult e = evaluate(&m, val, &t, batch, cfg.max_seq_len, batches, seed);
    const double eval_s = now_seconds() - t0;
    printf("checkpoint %s (step %lld), %ld val batches, %ld masked tokens, %ld tokens (%.1f s)\n", ckpt, (long long)src.st.step, e.n_batches,
           e.n_masked, e.n_tokens, eval_s);
    printf("generator      MLM loss %.4f  accuracy %.4f   (most-frequent-token baseline %.4f)\n", e.mlm_loss, e.mlm_acc,
           e.baseline_mlm_acc);
    printf("discriminator  RTD loss %.4f  accuracy %.4f   (all-original baseline %.4f)  AUC %.4f\n", e.rtd_loss, e.rtd_acc,
           e.baseline_rtd_acc, e.rtd_auc);
    printf("               %ld tokens flagged \"replaced\" (logit > 0), precision %.4f\n", e.rtd_flagged, e.rtd_precision);
    printf("discriminator attention per layer (means over heads and real query tokens; uniform: entropy 1, near %.4f):\n",
           cfg.max_seq_len > 1 ? 2.0 / cfg.max_seq_len : 0.0);
    for (int l = 0; l < e.disc_layers; l++) {
        const double n = e.disc_att.rows[l];
        printf("  layer %d  entropy/log(n) %.4f  self %.4f  near (|i-j| = 1) %.4f  local (1 <= |i-j| <= 3) %.4f\n", l,
               e.disc_att.norm_entropy[l] / n, e.disc_att.self[l] / n, e.disc_att.near[l] / n, e.disc_att.local[l] / n);
    }
    Yardsticks ys;
    if (yardsticks_open(&ys, data, &cfg, loader_tokenizer_hash(val), err, sizeof err)) fatal("%s", err);
    YardstickResult yr = yardsticks_eval(&ys, &m, &t, batch);
    yardsticks_print(stdout, &yr, &ys);
    yardsticks_free(&ys);
    model_source_free(&src);
    tape_free(&t);
    loader_close(val);
    electra_free(&m);
    return 0;
}
