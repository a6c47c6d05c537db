/* fuzz_hf_config.c — libFuzzer target: a Hugging Face config.json as deberta import reads it
 * (hf_config_read, train/interop/hf_config.c), then validation of whatever it accepts. */
#include <stdint.h>
#include "model/config.h"
#include "train/interop/hf_config.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char err[1024];
    ModelConfig c;
    config_defaults(&c);
    if (hf_config_read(fuzz_write_file(data, n), &c, err, sizeof err) == 0) config_validate(&c, err, sizeof err);
    return 0;
}
