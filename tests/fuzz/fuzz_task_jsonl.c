/* fuzz_task_jsonl.c — libFuzzer target: the JSONL reader (data/task_jsonl.c), sequence, pair and token
 * examples, labels required and optional; see fuzz_task_input.h. */
#include "tests/fuzz/fuzz_task_input.h"

extern const TaskFormat task_format_jsonl;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const TaskInputSpec specs[] = {
        {.format = &task_format_jsonl, .need_labels = 1, .text_field = "text", .label_field = "label"},
        {.format = &task_format_jsonl, .need_labels = 0, .text_field = "text", .text_pair_field = "pair", .label_field = "label"},
        {.format = &task_format_jsonl, .tagging = 1, .need_labels = 1},
        {.format = &task_format_jsonl, .tagging = 1, .need_labels = 0},
    };
    fuzz_task_input(data, n, specs, 4);
    return 0;
}
