/* task_build.h — task examples (data/task.h TaskSet) from the examples of the readers
 * (data/task_input.h), with either tokenizer (data/tokfile.h): the label set, the seeded split, the
 * encoding, pair truncation and tagging windows.  The rules are in docs/FORMATS.md, "Task files"
 * (Building).  Used by `deberta prep-task` and, on unlabelled examples, by `deberta predict`.
 */
#ifndef DEBERTA_TASK_BUILD_H
#define DEBERTA_TASK_BUILD_H
#include <stddef.h>
#include <stdint.h>
#include "data/task.h"
#include "data/task_input.h"
#include "data/tokfile.h"

typedef struct TaskBuildSpec {
    TaskKind kind;
    const char *name;          /* the task's name (NULL: the kind's name) */
    int T;                     /* tokens per example, [CLS] and [SEP] included */
    int pair;                  /* sequence examples are text pairs */
    const char *label_order;   /* "A,B,C": the label ids in this order (NULL: sorted) */
    const char *labels_file;   /* a file of one label per line: the label ids in this order (NULL: none) */
    const char *unseen_hint;   /* what to do, said after a dev/test label that is not in the set (NULL: nothing) */
    const char *label_field;   /* regression: the name the label gets */
} TaskBuildSpec;

/* The label set of the train examples (read from path) into ls->label_names / n_labels: sorted
 * (numerically when every label is an integer, else by bytes), or the names of spec->label_order
 * ("A,B,C") or spec->labels_file (one per line, blank lines skipped, a trailing \r dropped; a label
 * may hold ','), which may hold labels train lacks.  Regression: one name, spec->label_field.  0, or
 * -1 with "PATH:LINE: ..." (too many labels, a label not in the given set, a number that is not an
 * integer (0.5: a --regression label) when no set is given, a bad line of the labels file). */
int task_label_set(const TaskExamples *train, const char *path, const TaskBuildSpec *spec, TaskSet *ls, char *err, size_t errlen);

/* Draws the missing splits from n records: a Fisher-Yates permutation of seed (docs/FORMATS.md);
 * the first round(n·dev_fraction) records are dev (when want_dev), the next round(n·test_fraction)
 * test (when want_test), the rest train; each list in ascending order.  sel[k] (malloc'd, k = 0 train,
 * 1 dev, 2 test) and n_sel[k]; the splits not drawn get NULL / 0. */
void task_split_draw(size_t n, uint64_t seed, double dev_fraction, double test_fraction, int want_dev, int want_test,
                     size_t *sel[3], size_t n_sel[3]);

/* The examples ex[sel[i]] (all of ex when sel is NULL) of the file path (input_format: the name of
 * ex->format) as the split `split` of a task, with the labels of ls (task_label_set of train) and
 * tokenizer tk.  An example without its label gets TASK_IGNORE labels (regression: NaN) — such a set is for predict,
 * not for task_write.  0, or -1 with "PATH:LINE: ..." (a label not in ls, a regression label that
 * is not a finite number, a word that encodes to no token). */
int task_build_examples(const TaskExamples *ex, const size_t *sel, size_t n_sel, const char *path, const TaskBuildSpec *spec,
                        const TaskSet *ls, const TokFile *tk, const char *split, TaskSet *out, char *err, size_t errlen);
#endif
