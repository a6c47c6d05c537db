/* model_source.c — checkpoint or weights file -> config -> model; see model_source.h. */
#include "train/model_source.h"
#include <stdio.h>
#include <string.h>
#include "autograd/base/util.h"
#include "train/h5io.h"

void model_source_config(ModelSource *s, const char *path, int allow_weights, ModelConfig *cfg) {
    memset(s, 0, sizeof *s);
    s->path = path;
    s->is_checkpoint = !allow_weights || h5io_is_checkpoint(path);
    config_defaults(cfg);
    char err[1024];
    if (s->is_checkpoint) {
        if (checkpoint_read_state(path, &s->st, err, sizeof err)) fatal("%s", err);
        if (!s->st.config || !s->st.config[0]) fatal("checkpoint %s: the config text (/config) is empty; cannot build the model", path);
        char what[1100];
        snprintf(what, sizeof what, "checkpoint %.1000s", path);
        if (config_from_text(cfg, s->st.config, what, err, sizeof err)) fatal("%s", err);
    } else {
        int has_msl = 0;
        if (h5io_read_config(path, cfg, &s->n_full, &has_msl, err, sizeof err)) fatal("%s", err);
        /* a weights file rarely carries max_seq_len: keep it within the position table */
        if (!has_msl && cfg->max_seq_len > cfg->max_position_embeddings) cfg->max_seq_len = cfg->max_position_embeddings;
    }
}

void model_source_load(ModelSource *s, Electra *m, const ModelConfig *build_cfg, uint64_t seed) {
    char err[1024];
    electra_build(m, build_cfg, seed);
    if (s->is_checkpoint) {
        checkpoint_state_free(&s->st); /* checkpoint_load fills it again */
        if (checkpoint_load(s->path, &m->ps, NULL, &s->st, err, sizeof err)) fatal("%s", err);
    } else if (h5io_read_params(s->path, &m->ps, err, sizeof err)) {
        fatal("%s", err);
    }
}

void model_source_free(ModelSource *s) {
    if (s->is_checkpoint) checkpoint_state_free(&s->st);
    memset(s, 0, sizeof *s);
}
