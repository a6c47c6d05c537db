/* evaluate.c — held-out evaluation and the RTD AUC; see evaluate.h. */
#include "train/evaluate.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/util.h"
#include "train/step.h"

typedef struct {
    float logit;
    int y;
} Scored;

static int cmp_scored(const void *a, const void *b) {
    float x = ((const Scored *)a)->logit, y = ((const Scored *)b)->logit;
    return x < y ? -1 : x > y;
}

/* ROC AUC by the rank-sum (Mann-Whitney) statistic with tied scores given their average rank. */
static double auc(Scored *s, long n) {
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
    long *freq = xcalloc((size_t)c->vocab_size, sizeof(long));
    double mlm_sum = 0, bce_sum = 0;
    long mlm_ok = 0, rtd_ok = 0, n_orig = 0, ns = 0, flagged_ok = 0;
    const int saved_training = t->training;
    t->training = 0;
    loader_rewind(val);
    for (long k = 0; k < max_batches && loader_next(val, &b); k++) {
        GenOut g;
        DiscOut d;
        const ElectraInput in = electra_input(&b);
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
        rtd_ok += rtd_correct(&d, &b);
        r.n_tokens += valid;
        r.n_batches++;
    }
    tape_reset(t);
    t->training = saved_training;
    if (r.n_masked > 0) {
        long best = 0;
        for (int v = 0; v < c->vocab_size; v++) best = freq[v] > best ? freq[v] : best;
        r.mlm_loss = mlm_sum / r.n_masked;
        r.mlm_acc = (double)mlm_ok / r.n_masked;
        r.baseline_mlm_acc = (double)best / r.n_masked;
    }
    if (r.n_tokens > 0) {
        r.rtd_loss = bce_sum / r.n_tokens;
        r.rtd_acc = (double)rtd_ok / r.n_tokens;
        r.baseline_rtd_acc = (double)n_orig / r.n_tokens;
        r.rtd_auc = auc(sc, ns);
        r.rtd_precision = r.rtd_flagged ? (double)flagged_ok / r.rtd_flagged : NAN;
    }
    free(freq);
    free(sc);
    free(replaced);
    batch_free(&b);
    return r;
}
