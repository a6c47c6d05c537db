/* predict.c — a fine-tuned model on new text; see predict.h. */
#include "train/infer/predict.h"
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/base/keytable.h"
#include "autograd/base/util.h"
#include "data/task_build.h"
#include "data/task_format.h"
#include "data/tokfile.h"
#include "train/checkpoint.h"
#include "train/finetune.h"
#include "train/memory.h"
#include "train/outpath.h"

/* ---------------------------------------------------------------- the option table */

void predict_options_default(PredictOptions *o) {
    memset(o, 0, sizeof *o);
    o->batch = 32;
}

#define F(m) KEY_FIELD(PredictOptions, m)
#define STR(fl, m) {NULL, fl, NULL, KEY_STR, F(m), 0, 0, "", 0, NULL}
#define NUM(fl, m, lo) {NULL, fl, NULL, KEY_INT, F(m), lo, 1000000, "a positive integer", 0, NULL}
static const KeyRow KEYS[] = {
    STR("input", input), STR("format", format), STR("data", data), STR("output", output),
    STR("text-field", text_field), STR("text-pair-field", text_pair_field), STR("label-field", label_field),
    STR("tokens-field", tokens_field), STR("tags-field", tags_field),
    NUM("token-column", token_column, 1), NUM("tag-column", tag_column, 0), NUM("batch", batch, 1), NUM("threads", threads, 1),
};
#undef NUM
#undef STR
#undef F
#define N_KEYS ((int)(sizeof(KEYS) / sizeof(KEYS[0])))

int predict_options_set_flag(PredictOptions *o, const char *flag, const char *value, char *err, size_t errlen) {
    const KeyRow *k = key_find(KEYS, N_KEYS, flag, 1);
    if (!k) return 0;
    if (key_set(k, o, value, 1))
        return k->type == KEY_STR ? errf(err, errlen, "--%s: value too long", k->flag) : errf(err, errlen, "--%s '%s' must be %s", k->flag, value, k->want);
    return 1;
}

/* ---------------------------------------------------------------- the task */

/* The checkpoint's ft_* lines (pair: -1 when it has no ft_pair, a checkpoint from before it). */
typedef struct { char task[64], head[16], data[4096], labels[TASK_LABELS_TEXT]; int pair; } FtInfo;
static int ft_info(const char *key, const char *v, void *ctx) {
    FtInfo *k = ctx;
    if (!v) return 0;
    if (!strcmp(key, "ft_task")) snprintf(k->task, sizeof k->task, "%s", v);
    else if (!strcmp(key, "ft_head")) snprintf(k->head, sizeof k->head, "%s", v);
    else if (!strcmp(key, "ft_data")) snprintf(k->data, sizeof k->data, "%s", v);
    else if (!strcmp(key, "ft_labels")) snprintf(k->labels, sizeof k->labels, "%s", v);
    else if (!strcmp(key, "ft_pair")) k->pair = !strcmp(v, "1");
    return 0;
}

static const char *kind_head(TaskKind k) { return k == TASK_TAGGING ? "token" : k == TASK_REGRESSION ? "regression" : "sequence"; }

/* The task of the checkpoint (its ft_* lines and T) into ls: kind, name, T, pair, labels. */
static int task_from_checkpoint(const char *ckpt, const FtInfo *fi, int T, TaskSet *ls, char *err, size_t errlen) {
    memset(ls, 0, sizeof *ls);
    if (!strcmp(fi->head, "token")) ls->kind = TASK_TAGGING;
    else if (!strcmp(fi->head, "regression")) ls->kind = TASK_REGRESSION;
    else if (!strcmp(fi->head, "sequence")) ls->kind = TASK_CLASSIFICATION;
    else return errf(err, errlen, "checkpoint %s: ft_head is '%s', expected token, sequence or regression", ckpt, fi->head);
    snprintf(ls->name, sizeof ls->name, "%.31s", fi->task);
    ls->T = T;
    ls->pair = fi->pair;
    ls->n_labels = task_labels_decode(fi->labels, ls->label_names);
    if (ls->n_labels < (ls->kind == TASK_REGRESSION ? 1 : 2) || (ls->kind == TASK_REGRESSION && ls->n_labels != 1))
        return errf(err, errlen, "checkpoint %s: ft_labels '%.200s' is not the label set of a %s head", ckpt, fi->labels, fi->head);
    return 0;
}

/* The task files' train.h5 into ls, checked against the checkpoint (its ft_* lines, T and tokenizer). */
static int task_from_files(const char *ckpt, const FtInfo *fi, int T, const char *ck_hash, const char *data, int given, TaskSet *ls,
                           char *err, size_t errlen) {
    char tpath[4200];
    snprintf(tpath, sizeof tpath, "%.4000s/train.h5", data);
    if (access(tpath, R_OK)) {
        if (given || fi->pair >= 0) return errf(err, errlen, "predict: no task files %s (give --data TASKDIR, the task files the model was fine-tuned on)", tpath);
        return errf(err, errlen, "predict: checkpoint %s does not say whether its task takes text pairs (no ft_pair: fine-tuned by an older deberta) "
                    "and its task files %s are not there (give --data TASKDIR, the task files it was fine-tuned on)", ckpt, tpath);
    }
    if (task_read(tpath, ls, err, errlen)) return -1;
    char ls_text[TASK_LABELS_TEXT];
    task_labels_encode(ls->label_names, ls->n_labels, ls_text, sizeof ls_text);
    int rc = 0;
    if (strcmp(ls->tokenizer_hash, ck_hash))
        rc = errf(err, errlen, "predict: checkpoint %s uses tokenizer %s, the task files %s tokenizer %s (another tokenizer)", ckpt, ck_hash, tpath, ls->tokenizer_hash);
    else if (strcmp(ls->name, fi->task) || strcmp(kind_head(ls->kind), fi->head) || strcmp(ls_text, fi->labels) || (fi->pair >= 0 && fi->pair != ls->pair))
        rc = errf(err, errlen, "predict: checkpoint %s is a model of task '%s' (%s head, labels %.200s%s), the task files %s hold task '%s' (%s, labels %.200s%s)",
                  ckpt, fi->task, fi->head, fi->labels, fi->pair > 0 ? ", pairs" : "", tpath, ls->name, task_kind_name(ls->kind), ls_text, ls->pair ? ", pairs" : "");
    else if (T != ls->T) rc = errf(err, errlen, "checkpoint %s: sequence length %d, the task files %d", ckpt, T, ls->T);
    if (rc) task_free(ls);
    return rc;
}

/* The model: encoder + head of the task ls, every parameter read from the checkpoint (no random
 * initialisation first).  The one place the head is built from the checkpoint's description. */
static int model_load(const char *ckpt, const ModelConfig *cfg, const char *config_text, const TaskSet *ls, FtModel *m, char *err,
                      size_t errlen) {
    const HeadKind head = ls->kind == TASK_TAGGING ? HEAD_TOKEN : ls->kind == TASK_REGRESSION ? HEAD_REGRESSION : HEAD_SEQUENCE;
    const int pooler = ft_config_pooler(config_text);
    if (pooler < 0) return errf(err, errlen, "checkpoint %s: ft_pooler is not cls or mean (a damaged or foreign checkpoint)", ckpt);
    ft_model_register(m, cfg, head, ls->n_labels, 0);
    m->head.pooler = (HeadPooler)pooler;
    CheckpointState st;
    memset(&st, 0, sizeof st);
    const int rc = checkpoint_load(ckpt, &m->ps, NULL, &st, err, errlen);
    checkpoint_state_free(&st);
    if (rc) ft_model_free(m);
    return rc;
}

static const char *or_null(const char *s) { return s[0] ? s : NULL; }

/* ---------------------------------------------------------------- the run */

int predict_run(const char *ckpt, const PredictOptions *o, Predictions *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    TaskInputSpec spec = {.text_field = or_null(o->text_field), .text_pair_field = or_null(o->text_pair_field),
                          .label_field = or_null(o->label_field), .tokens_field = or_null(o->tokens_field),
                          .tags_field = or_null(o->tags_field), .token_column = o->token_column, .tag_column = o->tag_column};
    if (!(spec.format = task_format_find(o->format))) {
        char names[128];
        errf(err, errlen, "--format %s is required", task_format_names(names, sizeof names, TASK_HOLDS_ANY, "|", "|"));
        return PREDICT_USAGE;
    }
    /* the output: not an input nor a sealed file (the task files), writable; checked before anything is read */
    char e[1024];
    const char *ins[3] = {ckpt, o->input, or_null(o->data)};
    if (o->output[0] && out_path_check("--output", o->output, OUT_FILE, ins, 3, e, sizeof e)) return errf(err, errlen, "predict: %s", e);

    /* the checkpoint: a fine-tuned model, its task and tokenizer */
    CheckpointState st;
    memset(&st, 0, sizeof st);
    if (checkpoint_read_state(ckpt, &st, err, errlen)) return PREDICT_ERROR;
    FtInfo *fi = xcalloc(1, sizeof *fi);
    fi->pair = -1;
    TaskSet *ls = xcalloc(1, sizeof *ls);
    TokFile *tk = NULL;
    int rc = PREDICT_ERROR;
    if (st.config) config_text_each(st.config, ft_info, fi);
    ModelConfig cfg;
    config_defaults(&cfg);
    char ck_hash[17];
    if (!fi->task[0]) { errf(err, errlen, "checkpoint %s is not a fine-tuned model (no ft_task); predict takes a deberta finetune run's best.h5", ckpt); goto done; }
    if (!st.n_tokenizer) { errf(err, errlen, "checkpoint %s has no tokenizer", ckpt); goto done; }
    tokenizer_hash_bytes(st.tokenizer, st.n_tokenizer, ck_hash);
    if (config_from_text(&cfg, st.config, ckpt, e, sizeof e) || config_validate(&cfg, e, sizeof e)) { errf(err, errlen, "checkpoint %s: %s", ckpt, e); goto done; }

    /* the task: the checkpoint's; the task files when given (a check) or when the checkpoint is older than ft_pair */
    if (o->data[0] || fi->pair < 0 ? task_from_files(ckpt, fi, cfg.max_seq_len, ck_hash, o->data[0] ? o->data : fi->data, o->data[0] != 0, ls, err, errlen)
                                   : task_from_checkpoint(ckpt, fi, cfg.max_seq_len, ls, err, errlen)) goto done;
    rc = PREDICT_USAGE;
    spec.tagging = ls->kind == TASK_TAGGING;
    if (!spec.tagging && !spec.text_field) { errf(err, errlen, "%s", "--text-field NAME is required (a sequence task)"); goto done; }
    if (!spec.tagging && !!spec.text_pair_field != !!ls->pair) {
        errf(err, errlen, "the task %s text pairs: %s --text-pair-field", ls->pair ? "takes" : "does not take", ls->pair ? "give" : "leave out");
        goto done;
    }
    if (spec.tagging && (spec.text_field || spec.text_pair_field)) { errf(err, errlen, "%s", "a tagging task reads --tokens-field/--tags-field (jsonl) or CoNLL columns"); goto done; }
    rc = PREDICT_ERROR;

    /* the examples */
    if (task_input_read(o->input, &spec, &out->ex, err, errlen)) goto done;
    if (!(tk = tokfile_from_bytes(st.tokenizer, st.n_tokenizer, ckpt, err, errlen))) goto done;
    TaskBuildSpec bs = {.kind = ls->kind, .name = ls->name, .T = ls->T, .pair = ls->pair, .label_field = ls->label_names[0],
                        .unseen_hint = "the model knows only these; leave the labels out to predict without scores"};
    if (task_build_examples(&out->ex, NULL, 0, o->input, &bs, ls, tk, "test", &out->ts, err, errlen)) goto done;
    if (!out->ts.N) { errf(err, errlen, "predict: %s holds no example", o->input); goto done; }

    /* the model, its forward over every example */
    FtModel m;
    if (model_load(ckpt, &cfg, st.config, ls, &m, err, errlen)) goto done;
    /* the arena reserved at an upper bound of the forward's peak (pages are touched only as used), so that
     * the first batch does not overflow it and the second map it again */
    Tape t;
    tape_init(&t, (size_t)memory_forward_arena_bytes(&cfg, out->ts.T, o->batch));
    const double t0 = now_seconds();
    task_eval_run(&m.enc, &m.head, &t, &out->ts, o->batch, &out->p);
    out->seconds = now_seconds() - t0;
    out->batch = o->batch;
    for (long i = 0; i < (long)out->ts.N * out->ts.T; i++) out->tokens += out->ts.ids[i] != out->ts.pad_id;
    tape_free(&t);
    ft_model_free(&m);
    rc = 0;
done:
    if (rc) predictions_free(out);
    tokfile_free(tk);
    task_free(ls);
    free(ls);
    free(fi);
    checkpoint_state_free(&st);
    return rc;
}

/* ---------------------------------------------------------------- the output */

static json_t *record_json(const Predictions *pr, long *r) {
    const TaskSet *ts = &pr->ts;
    const TaskPreds *p = &pr->p;
    const int32_t rec = ts->example[p->ex[*r]];
    const TaskExample *x = &pr->ex.ex[rec];
    json_t *o = json_object();
    json_object_set_new(o, "line", json_integer(x->line));
    if (ts->kind == TASK_REGRESSION) {
        json_object_set_new(o, "value", json_real(p->pred_v[*r]));
        if (isfinite(p->gold_v[*r])) json_object_set_new(o, "gold", json_real(p->gold_v[*r]));
        ++*r;
    } else if (ts->kind == TASK_CLASSIFICATION) {
        json_object_set_new(o, "label", json_string(ts->label_names[p->pred[*r]]));
        json_object_set_new(o, "prob", json_real(p->prob[*r]));
        if (p->gold[*r] != TASK_IGNORE) json_object_set_new(o, "gold", json_string(ts->label_names[p->gold[*r]]));
        ++*r;
    } else { /* tagging: the rows of the record's words */
        json_t *w = json_array(), *tg = json_array(), *pb = json_array(), *gd = json_array();
        int has_gold = 1;
        for (; *r < p->n && ts->example[p->ex[*r]] == rec; ++*r) {
            const int32_t wi = ts->word_ids[p->ex[*r] * ts->T + p->pos[*r]];
            json_array_append_new(w, json_string(wi >= 0 && wi < x->n_words ? x->words[wi] : "?"));
            json_array_append_new(tg, json_string(ts->label_names[p->pred[*r]]));
            json_array_append_new(pb, json_real(p->prob[*r]));
            if (p->gold[*r] == TASK_IGNORE) has_gold = 0;
            else json_array_append_new(gd, json_string(ts->label_names[p->gold[*r]]));
        }
        json_object_set_new(o, "words", w);
        json_object_set_new(o, "tags", tg);
        json_object_set_new(o, "probs", pb);
        if (has_gold) json_object_set_new(o, "gold", gd);
        else json_decref(gd);
    }
    return o;
}

int predict_write(const Predictions *pr, const char *output, char *err, size_t errlen) {
    char tmp[4300];
    FILE *f = stdout;
    if (output && output[0]) {
        snprintf(tmp, sizeof tmp, "%.4000s.tmp-%d", output, (int)getpid());
        if (!(f = fopen(tmp, "w"))) return errf(err, errlen, "predict: cannot write %s (%s)", tmp, strerror(errno));
    }
    for (long r = 0; r < pr->p.n;) {
        json_t *o = record_json(pr, &r);
        char *line = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
        fputs(line, f);
        fputc('\n', f);
        free(line);
        json_decref(o);
    }
    if (f == stdout) return fflush(stdout) ? errf(err, errlen, "predict: cannot write the output (%s)", io_reason(errno)) : 0;
    if (fflush(f) || fsync(fileno(f)) || fclose(f)) { const int e = errno; unlink(tmp); return errf(err, errlen, "predict: cannot write %s (%s)", tmp, io_reason(e)); }
    if (rename(tmp, output)) { const int e = errno; unlink(tmp); return errf(err, errlen, "predict: cannot rename %s to %s (%s)", tmp, output, strerror(e)); }
    return 0;
}

void predict_report(const Predictions *pr, const char *input, const char *wait, FILE *f) {
    const TaskPreds *p = &pr->p;
    const double dt = pr->seconds;
    const long long N = pr->ts.N;
    /* positions: what the model computed (each batch padded to its longest example); tokens: the text */
    fprintf(f, "predict: %lld examples (%zu records) of %d tokens in %.2f s: %.1f examples/s, %.0f tokens/s (%.0f without "
            "padding; batch %d, %d threads; OpenMP wait policy: %s)\n", N, pr->ex.n, pr->ts.T, dt, N / dt,
            (double)p->computed_positions / dt, pr->tokens / dt, pr->batch, omp_get_max_threads(), wait);
    /* the batches after the first (which maps the tape's memory): a warm forward, as a benchmark's timed
     * passes after its warm-up */
    const long later = (long)N - MIN((long)pr->batch, (long)N);
    if (later > 0 && dt > p->first_batch_seconds)
        fprintf(f, "predict: the first batch %.3f s; the %ld examples after it %.0f tokens/s\n", p->first_batch_seconds, later,
                (double)(p->computed_positions - p->first_batch_positions) / (dt - p->first_batch_seconds));
    if (p->n_labelled) {
        TaskMetrics tm;
        task_preds_metrics(&pr->ts, p, &tm);
        char line[512];
        tm_format(&tm, line, sizeof line);
        fprintf(f, "predict: %s: loss %.4f  %s  (n %ld)\n", input, tm.loss, line, tm.n);
    }
}

void predictions_free(Predictions *pr) {
    task_preds_free(&pr->p);
    task_free(&pr->ts);
    task_examples_free(&pr->ex);
    memset(pr, 0, sizeof *pr);
}
