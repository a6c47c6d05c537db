/* fuzz_task_csv.c — libFuzzer target: the CSV (libcsv) and TSV readers (data/task_input.c), single
 * texts and pairs, labels required and optional; see fuzz_task_input.h. */
#include "tests/fuzz/fuzz_task_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const TaskInputSpec specs[] = {
        {.format = TI_CSV, .need_labels = 1, .text_field = "text", .label_field = "label"},
        {.format = TI_CSV, .need_labels = 0, .text_field = "text", .text_pair_field = "pair", .label_field = "label"},
        {.format = TI_TSV, .need_labels = 1, .text_field = "text", .label_field = "label"},
        {.format = TI_TSV, .need_labels = 0, .text_field = "text", .text_pair_field = "pair", .label_field = "label"},
    };
    fuzz_task_input(data, n, specs, 4);
    return 0;
}
