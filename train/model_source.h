/* model_source.h — where `deberta dump`, `export` and `eval` get their model from: a training
 * checkpoint (train/checkpoint.h: the config text inside) or a parity weights file
 * (train/h5io.h: the config as root attributes).  First the config (the command may then
 * change it), then the pair built from it with the parameters loaded.  Errors are fatal, one line
 * naming the file. */
#ifndef DEBERTA_TRAIN_MODEL_SOURCE_H
#define DEBERTA_TRAIN_MODEL_SOURCE_H
#include "model/electra.h"
#include "train/checkpoint.h"

typedef struct ModelSource {
    const char *path;
    int is_checkpoint;
    int n_full;            /* weights file: how many of the full-model attributes it carries */
    CheckpointState st;    /* checkpoint: step, seed, tokenizer bytes (after model_source_load) */
} ModelSource;

/* Reads the config of path into cfg (defaults first).  allow_weights = 0: path must be a
 * checkpoint.  A weights file without max_seq_len gets it clamped to max_position_embeddings. */
void model_source_config(ModelSource *s, const char *path, int allow_weights, ModelConfig *cfg);
/* Builds the pair from build_cfg (validated) with seed and loads the parameters of s->path. */
void model_source_load(ModelSource *s, Electra *m, const ModelConfig *build_cfg, uint64_t seed);
void model_source_free(ModelSource *s);
#endif
