/* fuzz_config.c — libFuzzer target: the config text readers (model keys, training options, the
 * checkpoint config comparison) and validation on arbitrary text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "model/config.h"
#include "train/checkpoint.h"
#include "train/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char *text = malloc(n + 1), err[1024], msg[1024];
    memcpy(text, data, n);
    text[n] = 0;
    ModelConfig c;
    config_defaults(&c);
    if (!config_from_text(&c, text, "fuzz", err, sizeof err)) config_validate(&c, err, sizeof err);
    TrainOptions o;
    train_options_default(&o);
    train_options_from_text(&o, text, err, sizeof err);
    checkpoint_config_diff(text, "hidden_size = 16\n", NULL, msg, sizeof msg);
    free(text);
    return 0;
}
