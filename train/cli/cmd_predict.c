/* cmd_predict.c — `deberta predict RUN/best.h5 --input FILE`: a fine-tuned model on new text read
 * with prep-task's readers (data/task_input.h; labels optional), one JSON line per input record:
 *
 *   classification  {"line": N, "label": "pos", "prob": 0.93[, "gold": "neg"]}
 *   regression      {"line": N, "value": 3.71[, "gold": 4.0]}
 *   tagging         {"line": N, "words": [...], "tags": [...], "probs": [...][, "gold": [...]]}
 *
 * (libjansson) to --output FILE (written to FILE.tmp-PID, renamed at the end) or stdout.  With labels,
 * the scores of train/task_metrics.h on stderr; always examples/s and tokens/s of the model's forward.
 *
 * The task: the checkpoint's (ft_task, ft_head, ft_labels) and the task files it was trained on
 * (--data TASKDIR, default the checkpoint's ft_data): their train.h5 gives the label set, the
 * sequence length and pairing; a TASKDIR of another tokenizer or another task is refused, as is a
 * checkpoint that is not a fine-tuned model.
 */
#include <jansson.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/base/util.h"
#include "data/task_build.h"
#include "data/task_input.h"
#include "data/tokfile.h"
#include "train/checkpoint.h"
#include "train/finetune.h"
#include "train/memory.h"
#include "train/metrics.h"
#include "train/step.h"
#include "train/task_eval.h"
#include "train/cli/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: deberta predict RUN/best.h5 --input FILE --format jsonl|csv|tsv|conll [fields] [options]\n"
            "\n"
            "The fine-tuned model on new text, read as prep-task reads it (labels optional): one JSON line per\n"
            "record (label and its probability; tagging: per word), the scores when labels are present.\n"
            "\n"
            "  --input FILE           the examples                                              (required)\n"
            "  --format F             jsonl, csv, tsv, conll                                     (required)\n"
            "  --text-field NAME --text-pair-field NAME --label-field NAME   as prep-task (label optional)\n"
            "  --tokens-field K --tags-field K --token-column N --tag-column N   tagging, as prep-task\n"
            "  --data TASKDIR         the task files the model was fine-tuned on   [the checkpoint's ft_data]\n"
            "  --output FILE.jsonl    the predictions                                               [stdout]\n"
            "  --batch B              examples per forward                                             [32]\n"
            "  --threads N            OpenMP/BLAS threads\n");
}

typedef struct { char task[64], head[16], data[4096], labels[TASK_MAX_LABELS * (TASK_LABEL_LEN + 1)]; } FtInfo;
static int ft_info(const char *key, const char *v, void *ctx) {
    FtInfo *k = ctx;
    if (!v) return 0;
    if (!strcmp(key, "ft_task")) snprintf(k->task, sizeof k->task, "%s", v);
    else if (!strcmp(key, "ft_head")) snprintf(k->head, sizeof k->head, "%s", v);
    else if (!strcmp(key, "ft_data")) snprintf(k->data, sizeof k->data, "%s", v);
    else if (!strcmp(key, "ft_labels")) snprintf(k->labels, sizeof k->labels, "%s", v);
    return 0;
}

static const char *kind_head(TaskKind k) { return k == TASK_TAGGING ? "token" : k == TASK_REGRESSION ? "regression" : "sequence"; }

int cmd_predict(int argc, char **argv) {
    const char *ckpt = NULL, *input = NULL, *format = NULL, *data = NULL, *output = NULL;
    TaskInputSpec spec;
    memset(&spec, 0, sizeof spec);
    int B = 32, threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (a[0] != '-') {
            if (ckpt) return cli_usage_error("predict", "one checkpoint only (got '%s' too)", a);
            ckpt = a;
            continue;
        }
        if (i + 1 >= argc) return cli_usage_error("predict", "%s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--input")) input = v;
        else if (!strcmp(a, "--format")) format = v;
        else if (!strcmp(a, "--data")) data = v;
        else if (!strcmp(a, "--output")) output = v;
        else if (!strcmp(a, "--text-field")) spec.text_field = v;
        else if (!strcmp(a, "--text-pair-field")) spec.text_pair_field = v;
        else if (!strcmp(a, "--label-field")) spec.label_field = v;
        else if (!strcmp(a, "--tokens-field")) spec.tokens_field = v;
        else if (!strcmp(a, "--tags-field")) spec.tags_field = v;
        else if (!strcmp(a, "--token-column") || !strcmp(a, "--tag-column") || !strcmp(a, "--batch") || !strcmp(a, "--threads")) {
            char *end;
            const long x = strtol(v, &end, 10);
            if (end == v || *end || x < (strcmp(a, "--tag-column") ? 1 : 0) || x > 1000000) return cli_usage_error("predict", "%s '%s' must be a positive integer", a, v);
            if (!strcmp(a, "--token-column")) spec.token_column = (int)x;
            else if (!strcmp(a, "--tag-column")) spec.tag_column = (int)x;
            else if (!strcmp(a, "--batch")) B = (int)x;
            else threads = (int)x;
        } else return cli_usage_error("predict", "unknown flag '%s'", a);
    }
    if (!ckpt) return cli_usage_error("predict", "%s", "RUN/best.h5 is required");
    if (!input) return cli_usage_error("predict", "%s", "--input FILE is required");
    if (!format || task_input_format_parse(format, &spec.format)) return cli_usage_error("predict", "%s", "--format jsonl|csv|tsv|conll is required");
    if (threads > 0) { omp_set_num_threads(threads); openblas_set_num_threads(threads); }

    /* the checkpoint: a fine-tuned model, its task and tokenizer */
    char err[1024];
    CheckpointState st;
    memset(&st, 0, sizeof st);
    if (checkpoint_read_state(ckpt, &st, err, sizeof err)) fatal("%s", err);
    FtInfo fi;
    memset(&fi, 0, sizeof fi);
    if (st.config) config_text_each(st.config, ft_info, &fi);
    if (!fi.task[0]) fatal("checkpoint %s is not a fine-tuned model (no ft_task); predict takes a deberta finetune run's best.h5", ckpt);
    if (!st.n_tokenizer) fatal("checkpoint %s has no tokenizer", ckpt);
    const int pooler = ft_config_pooler(st.config);
    if (pooler < 0) fatal("checkpoint %s: ft_pooler is not cls or mean (a damaged or foreign checkpoint)", ckpt);
    char ck_hash[17];
    tokenizer_hash_bytes(st.tokenizer, st.n_tokenizer, ck_hash);
    ModelConfig cfg;
    config_defaults(&cfg);
    if (config_from_text(&cfg, st.config, ckpt, err, sizeof err) || config_validate(&cfg, err, sizeof err)) fatal("checkpoint %s: %s", ckpt, err);

    /* the task it was trained on */
    if (!data) data = fi.data;
    char tpath[4200];
    snprintf(tpath, sizeof tpath, "%.4000s/train.h5", data);
    if (access(tpath, R_OK)) fatal("predict: no task files %s (give --data TASKDIR, the task files the model was fine-tuned on)", tpath);
    TaskSet train;
    if (task_read(tpath, &train, err, sizeof err)) fatal("%s", err);
    if (strcmp(train.tokenizer_hash, ck_hash))
        fatal("predict: checkpoint %s uses tokenizer %s, the task files %s tokenizer %s (another tokenizer)", ckpt, ck_hash, tpath, train.tokenizer_hash);
    char ls_text[sizeof fi.labels];
    int k = 0;
    ls_text[0] = 0;
    for (int l = 0; l < train.n_labels && k < (int)sizeof ls_text; l++) k += snprintf(ls_text + k, sizeof ls_text - (size_t)k, "%s%s", l ? "," : "", train.label_names[l]);
    if (strcmp(train.name, fi.task) || strcmp(kind_head(train.kind), fi.head) || strcmp(ls_text, fi.labels))
        fatal("predict: checkpoint %s is a model of task '%s' (%s head, labels %.200s), the task files %s hold task '%s' (%s, labels %.200s)",
              ckpt, fi.task, fi.head, fi.labels, tpath, train.name, task_kind_name(train.kind), ls_text);
    if (cfg.max_seq_len != train.T) fatal("checkpoint %s: sequence length %d, the task files %d", ckpt, cfg.max_seq_len, train.T);
    spec.tagging = train.kind == TASK_TAGGING;
    spec.need_labels = 0;
    if (!spec.tagging && !spec.text_field) return cli_usage_error("predict", "%s", "--text-field NAME is required (a sequence task)");
    if (!spec.tagging && !!spec.text_pair_field != !!train.pair)
        return cli_usage_error("predict", "the task %s text pairs: %s --text-pair-field", train.pair ? "takes" : "does not take", train.pair ? "give" : "leave out");
    if (spec.tagging && (spec.text_field || spec.text_pair_field)) return cli_usage_error("predict", "%s", "a tagging task reads --tokens-field/--tags-field (jsonl) or CoNLL columns");

    /* the examples */
    TaskExamples ex;
    if (task_input_read(input, &spec, &ex, err, sizeof err)) fatal("%s", err);
    TokFile *tk = tokfile_from_bytes(st.tokenizer, st.n_tokenizer, ckpt, err, sizeof err);
    if (!tk) fatal("%s", err);
    TaskBuildSpec bs = {.kind = train.kind, .name = train.name, .T = train.T, .pair = train.pair, .label_field = train.label_names[0]};
    TaskSet ts;
    if (task_build_examples(&ex, NULL, 0, input, format, &bs, &train, tk, "test", &ts, err, sizeof err)) fatal("%s", err);
    tokfile_free(tk);
    if (!ts.N) fatal("predict: %s holds no example", input);

    /* the model */
    FtModel m;
    ft_model_register(&m, &cfg, train.kind == TASK_TAGGING ? HEAD_TOKEN : train.kind == TASK_REGRESSION ? HEAD_REGRESSION : HEAD_SEQUENCE,
                      train.n_labels, 0); /* every parameter from the checkpoint: no random initialisation first */
    m.head.pooler = (HeadPooler)pooler;
    checkpoint_state_free(&st);
    if (checkpoint_load(ckpt, &m.ps, NULL, &st, err, sizeof err)) fatal("%s", err);
    checkpoint_state_free(&st);
    /* the arena reserved at an upper bound of the forward's peak (pages are touched only as used), so that
     * the first batch does not overflow it and the second map it again */
    Tape t;
    tape_init(&t, (size_t)memory_forward_arena_bytes(&cfg, ts.T, B));
    const double t0 = now_seconds();
    TaskPreds p;
    task_eval_run(&m.enc, &m.head, &t, &ts, B, &p);
    const double dt = now_seconds() - t0;
    long long tokens = 0;
    for (long i = 0; i < (long)ts.N * ts.T; i++) tokens += ts.ids[i] != ts.pad_id;

    /* the output: one line per record */
    char tmp[4300];
    FILE *f = stdout;
    if (output) {
        snprintf(tmp, sizeof tmp, "%.4000s.tmp-%d", output, (int)getpid());
        if (!(f = fopen(tmp, "w"))) fatal("predict: cannot write %s", tmp);
    }
    const int tag = ts.kind == TASK_TAGGING, reg = ts.kind == TASK_REGRESSION;
    for (long r = 0; r < p.n;) {
        const int32_t rec = ts.example[p.ex[r]];
        const TaskExample *x = &ex.ex[rec];
        json_t *o = json_object();
        json_object_set_new(o, "line", json_integer(x->line));
        if (!tag) {
            if (reg) {
                json_object_set_new(o, "value", json_real(p.pred_v[r]));
                if (isfinite(p.gold_v[r])) json_object_set_new(o, "gold", json_real(p.gold_v[r]));
            } else {
                json_object_set_new(o, "label", json_string(ts.label_names[p.pred[r]]));
                json_object_set_new(o, "prob", json_real(p.prob[r]));
                if (p.gold[r] != TASK_IGNORE) json_object_set_new(o, "gold", json_string(ts.label_names[p.gold[r]]));
            }
            r++;
        } else {
            json_t *w = json_array(), *tg = json_array(), *pr = json_array(), *gd = json_array();
            int has_gold = 1;
            for (; r < p.n && ts.example[p.ex[r]] == rec; r++) {
                const int32_t wi = ts.word_ids[p.ex[r] * ts.T + p.pos[r]];
                json_array_append_new(w, json_string(wi >= 0 && wi < x->n_words ? x->words[wi] : "?"));
                json_array_append_new(tg, json_string(ts.label_names[p.pred[r]]));
                json_array_append_new(pr, json_real(p.prob[r]));
                if (p.gold[r] == TASK_IGNORE) has_gold = 0;
                else json_array_append_new(gd, json_string(ts.label_names[p.gold[r]]));
            }
            json_object_set_new(o, "words", w);
            json_object_set_new(o, "tags", tg);
            json_object_set_new(o, "probs", pr);
            if (has_gold) json_object_set_new(o, "gold", gd);
            else json_decref(gd);
        }
        char *line = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
        fputs(line, f);
        fputc('\n', f);
        free(line);
        json_decref(o);
    }
    if (output) {
        if (fflush(f) || fsync(fileno(f)) || fclose(f)) { unlink(tmp); fatal("predict: cannot write %s (disk full?)", tmp); }
        if (rename(tmp, output)) { unlink(tmp); fatal("predict: cannot rename %s to %s", tmp, output); }
    } else if (fflush(stdout)) {
        fatal("predict: cannot write the output");
    }
    char wait[160];
    omp_wait_describe(wait, sizeof wait);
    fprintf(stderr, "predict: %lld examples (%zu records) of %d tokens in %.2f s: %.1f examples/s, %.0f tokens/s (%.0f without "
            "padding; batch %d, %d threads; OpenMP wait policy: %s)\n", (long long)ts.N, ex.n, ts.T, dt, ts.N / dt,
            (double)ts.N * ts.T / dt, tokens / dt, B, omp_get_max_threads(), wait);
    /* the batches after the first (which maps the tape's memory): a warm forward, as a benchmark's timed
     * passes after its warm-up */
    const long later = (long)ts.N - MIN((long)B, (long)ts.N);
    if (later > 0 && dt > p.first_batch_seconds)
        fprintf(stderr, "predict: the first batch %.3f s; the %ld examples after it %.0f tokens/s\n", p.first_batch_seconds, later,
                (double)later * ts.T / (dt - p.first_batch_seconds));
    if (p.n_labelled) {
        TaskMetrics tm;
        task_preds_metrics(&ts, &p, &tm);
        char line[512];
        tm_format(&tm, line, sizeof line);
        fprintf(stderr, "predict: %s: loss %.4f  %s  (n %ld)\n", input, tm.loss, line, tm.n);
    }
    task_preds_free(&p);
    tape_free(&t);
    ft_model_free(&m);
    task_free(&ts);
    task_free(&train);
    task_examples_free(&ex);
    return 0;
}
