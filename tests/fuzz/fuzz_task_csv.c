/* fuzz_task_csv.c — libFuzzer target: the CSV (libcsv) and TSV readers (data/task_csv.c), single
 * texts and pairs, labels required and optional; see fuzz_task_input.h. */
#include "tests/fuzz/fuzz_task_input.h"

extern const TaskFormat task_format_csv, task_format_tsv;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    const TaskInputSpec specs[] = {
        {.format = &task_format_csv, .need_labels = 1, .text_field = "text", .label_field = "label"},
        {.format = &task_format_csv, .need_labels = 0, .text_field = "text", .text_pair_field = "pair", .label_field = "label"},
        {.format = &task_format_tsv, .need_labels = 1, .text_field = "text", .label_field = "label"},
        {.format = &task_format_tsv, .need_labels = 0, .text_field = "text", .text_pair_field = "pair", .label_field = "label"},
    };
    fuzz_task_input(data, n, specs, 4);
    return 0;
}
