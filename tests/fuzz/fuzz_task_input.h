/* fuzz_task_input.h — shared body of the task-input fuzz targets (fuzz_task_jsonl.c, _csv.c,
 * _conll.c): the reader on arbitrary bytes with each spec the target lists, the invariants of a
 * successful read checked (abort on a violation), then the label set and the examples built with a
 * small tokenizer trained once, as prep-task does. */
#ifndef DEBERTA_FUZZ_TASK_INPUT_H
#define DEBERTA_FUZZ_TASK_INPUT_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "data/task_build.h"
#include "data/task_format.h"
#include "data/task_input.h"
#include "data/tokenizer.h"
#include "data/tokfile.h"

static TokFile *fuzz_tokfile(void) {
    static TokFile *tf;
    if (!tf) {
        static const char *const docs[] = {"the cat sat on the mat, and a dog ran in the park. B-PER O I-LOC 0 1 2",
                                           "caf\xc3\xa9 na\xc3\xafve \xe2\x82\xac 3.5 \"quoted\" text, with commas"};
        size_t lens[2] = {strlen(docs[0]), strlen(docs[1])};
        TokTrainConfig c;
        tok_train_config_default(&c);
        c.vocab_size = 300;
        char err[256];
        Tokenizer *tk = tokenizer_train(docs, lens, 2, &c, err, sizeof err);
        if (!tk) abort();
        tf = tokfile_from_bpe(tk);
    }
    return tf;
}

static void fuzz_check_text(const char *s, int may_be_empty) {
    if (!s) abort();
    size_t n = strlen(s), bad;
    if (!may_be_empty && n == 0) abort();
    if (!utf8_valid(s, n, &bad)) abort();
}

static void fuzz_task_input(const uint8_t *data, size_t n, const TaskInputSpec *specs, int n_specs) {
    char err[2048];
    for (int k = 0; k < n_specs; k++) {
        const TaskInputSpec *sp = &specs[k];
        TaskExamples ex;
        if (task_input_read_mem((const char *)data, n, "fuzz", sp, &ex, err, sizeof err)) {
            if (!err[0] || ex.n || ex.ex) abort(); /* an error has a message and leaves nothing */
            continue;
        }
        if (ex.n == 0) abort();
        for (size_t i = 0; i < ex.n; i++) {
            const TaskExample *e = &ex.ex[i];
            if (e->line < 1) abort();
            if (sp->tagging) {
                if (e->n_words < 1 || !e->words) abort();
                for (int w = 0; w < e->n_words; w++) {
                    fuzz_check_text(e->words[w], 0);
                    if (e->tags) fuzz_check_text(e->tags[w], 0);
                }
            } else {
                fuzz_check_text(e->text, 0);
                if (sp->text_pair_field) fuzz_check_text(e->text_pair, 0);
                if (e->label) fuzz_check_text(e->label, 0);
            }
        }
        if (ex.has_labels) {
            TaskBuildSpec bs = {.kind = sp->tagging ? TASK_TAGGING : TASK_CLASSIFICATION, .T = 8, .pair = sp->text_pair_field != NULL};
            TaskSet ls, ts;
            memset(&ls, 0, sizeof ls);
            if (task_label_set(&ex, "fuzz", &bs, &ls, err, sizeof err) == 0 &&
                task_build_examples(&ex, NULL, 0, "fuzz", &bs, &ls, fuzz_tokfile(), "train", &ts, err, sizeof err) == 0) {
                for (int64_t r = 0; r < ts.N; r++)
                    if (ts.ids[r * ts.T] != ts.cls_id) abort();
                task_free(&ts);
            }
        }
        task_examples_free(&ex);
    }
}
#endif
