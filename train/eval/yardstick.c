/* yardstick.c — see yardstick.h. */
#include "train/eval/yardstick.h"
#include <string.h>
#include "autograd/base/util.h"

int yardsticks_open(Yardsticks *y, const char *dir, const ModelConfig *cfg, const char *tokenizer_hash, char *err, size_t errlen) {
    memset(y, 0, sizeof *y);
    int rc = rtd_fixed_open_dir(dir, cfg, tokenizer_hash, &y->fx, err, errlen);
    if (rc < 0) return -1;
    if (rc == 2) fprintf(stderr, "note: %s\n", err);
    y->have_fx = rc == 1;
    rc = probe_open_dir(dir, cfg, tokenizer_hash, &y->probe, err, errlen);
    if (rc < 0) {
        yardsticks_free(y);
        return -1;
    }
    if (rc == 2) fprintf(stderr, "note: %s\n", err);
    y->have_probe = rc == 1;
    err[0] = 0;
    return 0;
}

void yardsticks_free(Yardsticks *y) {
    if (y->have_fx) rtd_fixed_free(&y->fx);
    if (y->have_probe) probe_free(&y->probe);
    memset(y, 0, sizeof *y);
}

YardstickResult yardsticks_eval(const Yardsticks *y, const Electra *m, Tape *t, int B) {
    YardstickResult r;
    memset(&r, 0, sizeof r);
    r.have_fx = y->have_fx, r.have_probe = y->have_probe;
    double t0 = now_seconds();
    if (y->have_fx) r.fx = rtd_fixed_eval(m, t, &y->fx, B);
    r.fx_s = now_seconds() - t0;
    t0 = now_seconds();
    if (y->have_probe) r.probe = probe_eval(m, t, &y->probe, B);
    r.probe_s = now_seconds() - t0;
    return r;
}

void yardsticks_mrec(const YardstickResult *r, const Yardsticks *y, MetricsRecord *rec) {
    if (r->have_fx) {
        mrec_num(rec, "fx_auc", r->fx.auc);
        mrec_num(rec, "fx_acc", r->fx.accuracy);
        mrec_int(rec, "fx_flagged", r->fx.flagged);
        mrec_num(rec, "fx_precision", r->fx.precision);
        mrec_num(rec, "fx_baseline_acc", r->fx.baseline);
        mrec_num(rec, "fx_counter_auc", y->fx.counter_auc);
        mrec_int(rec, "fx_counter_flagged", y->fx.counter_flagged);
        mrec_num(rec, "fx_counter_precision", y->fx.counter_precision);
    }
    if (r->have_probe) {
        const ProbeResult *p = &r->probe;
        mrec_num(rec, "probe_acc", p->acc[p->n_layers - 1]);
        mrec_num(rec, "probe_best_acc", p->acc[p->best]);
        mrec_int(rec, "probe_best_layer", p->best);
        for (int l = 0; l < p->n_layers; l++) {
            char key[32];
            snprintf(key, sizeof key, "probe_acc_l%d", l);
            mrec_num(rec, key, p->acc[l]);
        }
        mrec_num(rec, "probe_majority_acc", p->majority);
    }
}

void yardsticks_print(FILE *out, const YardstickResult *r, const Yardsticks *y) {
    if (r->have_fx) {
        fprintf(out, "fixed corruption (%s: %d sequences, %ld scored tokens, %ld replaced by a bigram stand-in; all-original %.4f; %.1f s):\n",
                RTD_FIXED_FILE, y->fx.N, r->fx.n_scored, r->fx.n_replaced, r->fx.baseline, r->fx_s);
        fprintf(out, "  discriminator  AUC %.4f  accuracy %.4f  flagged %ld  precision %.4f\n", r->fx.auc, r->fx.accuracy, r->fx.flagged,
                r->fx.precision);
        fprintf(out, "  count detector AUC %.4f  accuracy %.4f  flagged %lld  precision %.4f  (bigram counts, the same tokens)\n",
                y->fx.counter_auc, y->fx.counter_accuracy, (long long)y->fx.counter_flagged, y->fx.counter_precision);
    }
    if (r->have_probe) {
        const ProbeResult *p = &r->probe;
        fprintf(out, "POS probe (%s/: ridge on frozen features, fit on %ld words of %d train examples, dev %ld words of %d examples; %.1f s):\n",
                PROBE_DIR, p->n_fit_words, y->probe.n_fit, p->n_dev_words, y->probe.n_dev, r->probe_s);
        fprintf(out, "  last layer %.4f  best layer %d: %.4f  (majority tag %.4f)  per layer:", p->acc[p->n_layers - 1], p->best,
                p->acc[p->best], p->majority);
        for (int l = 0; l < p->n_layers; l++) fprintf(out, " %.4f", p->acc[l]);
        fprintf(out, "\n");
    }
}

void yardsticks_note(const YardstickResult *r, char *buf, size_t len) {
    int n = 0;
    buf[0] = 0;
    if (r->have_fx) n = snprintf(buf, len, " | fixed AUC %.4f, %ld flagged", r->fx.auc, r->fx.flagged);
    if (r->have_probe && n >= 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " | probe %.4f (best L%d %.4f)", r->probe.acc[r->probe.n_layers - 1], r->probe.best,
                 r->probe.acc[r->probe.best]);
}
