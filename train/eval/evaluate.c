/* evaluate.c — held-out evaluation and the RTD AUC; see evaluate.h. */
#include "train/eval/evaluate.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "train/dist.h"
#include "model/electra.h"

static int cmp_scored(const void *a, const void *b) {
    float x = ((const Scored *)a)->logit, y = ((const Scored *)b)->logit;
    return x < y ? -1 : x > y;
}

double eval_auc(Scored *s, long n) {
    qsort(s, (size_t)n, sizeof *s, cmp_scored);
    double rank_sum = 0;
    long pos = 0;
    for (long i = 0; i < n;) {
        long j = i;
        while (j < n && s[j].logit == s[i].logit) j++;
        double avg = (i + 1 + j) / 2.0; /* ranks i+1 .. j */
        for (long k = i; k < j; k++)
            if (s[k].y) {
                rank_sum += avg;
                pos++;
            }
        i = j;
    }
    long neg = n - pos;
    if (pos == 0 || neg == 0) return NAN;
    return (rank_sum - pos * (pos + 1) / 2.0) / ((double)pos * neg);
}

EvalResult evaluate(Electra *m, Loader *val, Tape *t, int B, int T, long max_batches, uint64_t seed) {
    EvalResult r;
    memset(&r, 0, sizeof r);
    const ModelConfig *c = &m->cfg;
    Batch b;
    batch_alloc(&b, B, T);
    int32_t *replaced = xmalloc((size_t)B * T * sizeof(int32_t));
    Scored *sc = xmalloc((size_t)max_batches * B * T * sizeof(Scored));
    int64_t *freq = xcalloc((size_t)c->vocab_size, sizeof(int64_t)); /* masked targets per id (int64_t: summed over ranks in place) */
    double mlm_sum = 0, bce_sum = 0;
    long mlm_ok = 0, rtd_ok = 0, n_orig = 0, ns = 0, flagged_ok = 0;
    const int saved_training = t->training;
    t->training = 0;
    const int R = dist_rank(), W = dist_world();
    int64_t *counts = xmalloc((size_t)W * sizeof(int64_t));
    loader_rewind(val);
    for (long k = 0; k < max_batches && loader_next(val, &b); k++) {
        GenOut g;
        DiscOut d;
        ElectraInput in = {b.B, b.T, b.input_ids, b.attention_mask, b.labels, 0, 0}; /* the model's view of the batch */
        const int64_t mine = b.n_masked;
        dist_allgather_i64(&mine, 1, counts);
        in.row0 = (int64_t)R * B;
        for (int q = 0; q < R; q++) in.masked0 += counts[q];
        r.n_batches++;
        if (!b.n_masked) continue; /* the end of the split: this rank's slice is padding */
        tape_reset(t);
        tape_nograd_begin(t);
        generator_forward(t, m, &in, &g);
        /* a fixed sampling stream per eval batch: every evaluation sees the same draws for the same model */
        electra_sample(&g, &in, seed, ((uint64_t)1 << 35) + (uint64_t)k, replaced);
        r.disc_att.next = 0;
        g_attention_stats = &r.disc_att;
        discriminator_forward(t, m, &in, replaced, &d);
        g_attention_stats = NULL;
        r.disc_layers = r.disc_att.next;
        tape_nograd_end(t);
        mlm_sum += g.loss->data[0] * g.n_masked;
        mlm_ok += mlm_correct(&g);
        r.n_masked += g.n_masked;
        for (int q = 0; q < g.n_masked; q++) freq[g.targets[q]]++;
        long valid = 0;
        for (long i = 0; i < (long)B * T; i++)
            if (b.attention_mask[i]) {
                valid++;
                sc[ns].logit = (float)d.logits->data[i];
                sc[ns++].y = d.y[i];
                n_orig += d.y[i] == 0;
                if (d.logits->data[i] > 0) {
                    r.rtd_flagged++;
                    flagged_ok += d.y[i] != 0;
                }
            }
        bce_sum += d.bce->data[0] * valid;
        rtd_ok += rtd_correct(&d, b.attention_mask, (long)b.B * b.T);
        r.n_tokens += valid;
    }
    tape_reset(t);
    t->training = saved_training;
    free(counts);
    if (W > 1) {
        double v[9] = {mlm_sum, bce_sum, mlm_ok, rtd_ok, n_orig, flagged_ok, r.rtd_flagged, r.n_masked, r.n_tokens};
        dist_allreduce_double(v, 9);
        mlm_sum = v[0], bce_sum = v[1], mlm_ok = (long)v[2], rtd_ok = (long)v[3], n_orig = (long)v[4], flagged_ok = (long)v[5];
        r.rtd_flagged = (long)v[6], r.n_masked = (long)v[7], r.n_tokens = (long)v[8];
        dist_allreduce_i64(freq, c->vocab_size);
        double *att[6] = {r.disc_att.entropy, r.disc_att.norm_entropy, r.disc_att.self, r.disc_att.near, r.disc_att.local, r.disc_att.rows};
        for (int q = 0; q < 6; q++) dist_allreduce_double(att[q], ATTN_STATS_MAX_LAYERS);
        r.disc_layers = 0; /* a rank without a batch saw no layer: count the layers any rank saw */
        while (r.disc_layers < ATTN_STATS_MAX_LAYERS && r.disc_att.rows[r.disc_layers] > 0) r.disc_layers++;
        size_t bytes = 0;
        Scored *all = dist_gather_bytes(sc, (size_t)ns * sizeof(Scored), &bytes); /* rank 0 computes the AUC */
        free(sc);
        sc = all;
        ns = R == 0 ? (long)(bytes / sizeof(Scored)) : 0;
    }
    if (r.n_masked > 0) {
        int64_t best = 0;
        for (int v = 0; v < c->vocab_size; v++) best = freq[v] > best ? freq[v] : best;
        r.mlm_loss = mlm_sum / r.n_masked;
        r.mlm_acc = (double)mlm_ok / r.n_masked;
        r.baseline_mlm_acc = (double)best / r.n_masked;
    }
    if (r.n_tokens > 0) {
        r.rtd_loss = bce_sum / r.n_tokens;
        r.rtd_acc = (double)rtd_ok / r.n_tokens;
        r.baseline_rtd_acc = (double)n_orig / r.n_tokens;
        r.rtd_auc = R == 0 ? eval_auc(sc, ns) : 0;
        dist_bcast(&r.rtd_auc, sizeof r.rtd_auc, 0);
        r.rtd_precision = r.rtd_flagged ? (double)flagged_ok / r.rtd_flagged : NAN;
    }
    free(freq);
    free(sc);
    free(replaced);
    batch_free(&b);
    return r;
}
