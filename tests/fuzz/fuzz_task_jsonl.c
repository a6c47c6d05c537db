/* fuzz_task_jsonl.c — libFuzzer target: the JSONL reader (data/task_input.c), sequence, pair and token
 * examples, labels required and optional; see fuzz_task_input.h. */
#include "tests/fuzz/fuzz_task_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const TaskInputSpec specs[] = {
        {.format = TI_JSONL, .need_labels = 1, .text_field = "text", .label_field = "label"},
        {.format = TI_JSONL, .need_labels = 0, .text_field = "text", .text_pair_field = "pair", .label_field = "label"},
        {.format = TI_JSONL, .tagging = 1, .need_labels = 1},
        {.format = TI_JSONL, .tagging = 1, .need_labels = 0},
    };
    fuzz_task_input(data, n, specs, 4);
    return 0;
}
