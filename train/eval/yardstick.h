/* yardstick.h — the evaluations that rank recipes, run beside train/eval/evaluate.c's live figures by every
 * in-run evaluation of `deberta pretrain` and by `deberta eval`: the discriminator on the fixed
 * corruption (train/eval/rtd_fixed.h) and the linear POS probe of its frozen features (train/eval/probe.h).
 * Each runs when its files are beside the shards (scripts/demo-prep.sh makes both). */
#ifndef DEBERTA_TRAIN_YARDSTICK_H
#define DEBERTA_TRAIN_YARDSTICK_H
#include <stdio.h>
#include "train/metrics.h"
#include "train/eval/probe.h"
#include "train/eval/rtd_fixed.h"

typedef struct Yardsticks {
    int have_fx, have_probe;
    RtdFixed fx;
    Probe probe;
} Yardsticks;

typedef struct YardstickResult {
    int have_fx, have_probe;
    RtdFixedResult fx;
    ProbeResult probe;
    double fx_s, probe_s;     /* wall seconds of each */
} YardstickResult;

/* Reads DIR/rtd-fixed.h5 and DIR/probe-pos/ when present, checked against the model and (when not
 * NULL) the shards' tokenizer hash.  0, or -1 with one line in err. */
int yardsticks_open(Yardsticks *y, const char *dir, const ModelConfig *cfg, const char *tokenizer_hash, char *err, size_t errlen);
void yardsticks_free(Yardsticks *y);
YardstickResult yardsticks_eval(const Yardsticks *y, const Electra *m, Tape *t, int B);
/* Keys fx_* and probe_* (docs/FORMATS.md, "Metrics log"). */
void yardsticks_mrec(const YardstickResult *r, const Yardsticks *y, MetricsRecord *rec);
/* `deberta eval`'s lines. */
void yardsticks_print(FILE *out, const YardstickResult *r, const Yardsticks *y);
/* The in-run progress note's tail ("" when neither ran). */
void yardsticks_note(const YardstickResult *r, char *buf, size_t len);
#endif
