/* fuzz_checkpoint.c — libFuzzer target: checkpoint_read_state, then (when its config is a small
 * valid model) checkpoint_load of every tensor into that model.  The real read path: the seal is
 * checked first, so a mutated checkpoint is refused before libhdf5 parses it. */
#include <stdint.h>
#include <string.h>
#include "model/config.h"
#include "model/electra.h"
#include "train/checkpoint.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char err[1024];
    const char *path = fuzz_write_file(data, n);
    CheckpointState st;
    if (checkpoint_read_state(path, &st, err, sizeof err)) return 0;
    ModelConfig c;
    config_defaults(&c);
    const int ok = !config_from_text(&c, st.config, path, err, sizeof err) && !config_validate(&c, err, sizeof err) &&
                   electra_param_slots(&c) < 1e6 && !(c.embedding_sharing == SHARE_ES && c.training_mode != TRAIN_JOINT);
    checkpoint_state_free(&st);
    if (!ok) return 0;
    Electra m;
    electra_build(&m, &c, 1);
    if (!checkpoint_load(path, &m.ps, NULL, &st, err, sizeof err)) checkpoint_state_free(&st);
    electra_free(&m);
    return 0;
}
