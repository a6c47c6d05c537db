/* fuzz_task_conll.c — libFuzzer target: the CoNLL reader (data/task_conll.c) with the default columns,
 * explicit ones, and labels optional; see fuzz_task_input.h. */
#include "tests/fuzz/fuzz_task_input.h"

extern const TaskFormat task_format_conll;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const TaskInputSpec specs[] = {
        {.format = &task_format_conll, .tagging = 1, .need_labels = 1},
        {.format = &task_format_conll, .tagging = 1, .need_labels = 1, .token_column = 1, .tag_column = 4},
        {.format = &task_format_conll, .tagging = 1, .need_labels = 0},
    };
    fuzz_task_input(data, n, specs, 3);
    return 0;
}
