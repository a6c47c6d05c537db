/* probe.h — a linear probe of the frozen discriminator: universal POS tags read off its hidden states.
 *
 * Data: the POS task files beside the shards, DIR/probe-pos/train.h5 and dev.h5 (deberta prep-task
 * --task pos --shards DIR --seq-len T; scripts/demo-prep.sh makes them).  PROBE_FIT examples taken
 * evenly through train (example k·N/PROBE_FIT) fit the probe, PROBE_DEV taken evenly through dev score it.
 * Features: the discriminator's embedding output (layer 0) and each layer's output (1..L) at every
 * labelled position (a word's first sub-token), dropout off, no gradients.  Classifier, per layer: ridge
 * regression onto the one-hot tags with a bias, solved exactly (normal equations in double, Cholesky),
 * predicted tag = argmax; the ridge weight is PROBE_RIDGE times the mean diagonal of the features' Gram
 * matrix.  A pure function of the checkpoint (every sum in a fixed order, whatever the thread count). */
#ifndef DEBERTA_TRAIN_PROBE_H
#define DEBERTA_TRAIN_PROBE_H
#include "autograd/tape.h"
#include "data/task.h"
#include "model/electra.h"

#define PROBE_DIR "probe-pos"
#define PROBE_FIT 48
#define PROBE_DEV 40
#define PROBE_RIDGE 1e-3
#define PROBE_MAX_LAYERS 33

typedef struct Probe {
    TaskSet train, dev;
    int n_fit, n_dev;             /* examples used of each */
} Probe;

typedef struct ProbeResult {
    int n_layers;                 /* layers probed: 0 = embeddings, 1..L = the layers' outputs */
    double acc[PROBE_MAX_LAYERS]; /* dev accuracy per layer */
    int best;                     /* the layer with the best dev accuracy (the first of ties) */
    double majority;              /* dev accuracy of the train split's most frequent tag */
    long n_fit_words, n_dev_words;
} ProbeResult;

/* DIR/probe-pos/{train,dev}.h5 when both exist: 1 = read and checked (POS, tokenizer hash when
 * given, vocabulary), 0 = absent, 2 = not for this model (seq_len above its max_seq_len; a note in
 * err), -1 = error in err. */
int probe_open_dir(const char *dir, const ModelConfig *cfg, const char *tokenizer_hash, Probe *p, char *err, size_t errlen);
void probe_free(Probe *p);
/* Fits and scores the probe on every layer, B sequences per forward. */
ProbeResult probe_eval(const Electra *m, Tape *t, const Probe *p, int B);
#endif
