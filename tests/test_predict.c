/* test_predict.c — train/infer/predict.h called directly on a tiny fine-tuned model and tokenizer made here
 * (a sequence head of three labels, ',' and '#' in one of them): the checkpoint alone is the task (no
 * task files); one row per record in file order, each record's ids [CLS] text [SEP] with the
 * checkpoint's tokenizer, each row's label and probability equal to the model's own forward over that
 * example alone (in file order, batch 1), the gold labels, the JSON lines predict_write prints; a
 * text pair the task does not take and a checkpoint from before ft_pair without its task files refused
 * with one line. */
#include "tests/testutil.h"
#include "tests/bpeutil.h"
#include <jansson.h>
#include <string.h>
#include "autograd/base/util.h"
#include "data/tokfile.h"
#include "autograd/base/rng.h"
#include "train/checkpoint.h"
#include "train/finetune.h"
#include "train/infer/predict.h"

static char g_dir[128];
static TokFile *TK;
static FtModel M;
static char LABELS[3][TASK_LABEL_LEN] = {"neg", "pos", "a,b#c"};
static const char *RECORDS[][2] = {
    {"the cat sees a dog.", "pos"}, {"a bird finds the old cat and the red letter.", "neg"}, {"the dog.", "a,b#c"},
    {"a red bird sees the cat.", "pos"}, {"the old dog keeps a letter.", "neg"},
};
#define N_REC 5

/* dir/checkpoint.h5: M, the tokenizer and a config of the task (without ft_pair when old) */
static void write_checkpoint(const char *dir, int old) {
    char *c = config_to_text(&M.cfg), labels[TASK_LABELS_TEXT], err[1024];
    task_labels_encode(LABELS, 3, labels, sizeof labels);
    const size_t cap = strlen(c) + sizeof labels + 512;
    char *text = xmalloc(cap);
    snprintf(text, cap, "%sft_task = cls\nft_data = %s/missing\nft_head = sequence\n%sft_labels = %s\n", c, g_dir, old ? "" : "ft_pair = 0\n", labels);
    CheckpointState st;
    memset(&st, 0, sizeof st);
    st.step = 4;
    st.seed = 1;
    st.config = text;
    size_t n;
    st.tokenizer = (unsigned char *)tokfile_bytes(TK, &n);
    st.n_tokenizer = n;
    if (mkdir_p(dir)) fail_msg("cannot create %s", dir);
    if (checkpoint_save(dir, &M.ps, NULL, &st, 0, err, sizeof err)) fail_msg("%s", err);
    free(text);
    free(c);
}

static int setup(void **state) {
    static const char text[] = "the cat sees a dog. the dog sees a bird. a bird finds the cat. the old cat keeps a red letter.";
    char err[512], path[256];
    if (test_tmpdir(g_dir, sizeof g_dir, "predict")) return -1;
    TK = tokfile_from_bpe(test_bpe(text, 300));
    ModelConfig c;
    config_preset(&c, "test");
    c.vocab_size = TK->vocab_size;
    c.max_seq_len = c.max_position_embeddings = 32;
    if (config_validate(&c, err, sizeof err)) fail_msg("%s", err);
    ft_model_build(&M, &c, HEAD_SEQUENCE, 3, 0, 7);
    for (int i = 0; i < M.ps.n; i++) /* away from the init, so that the labels differ */
        for (long j = 0; j < M.ps.params[i]->n; j++) M.ps.params[i]->data[j] += (real)(0.5 * rng_normal(8, (uint64_t)i, (uint64_t)j));
    snprintf(path, sizeof path, "%s/run", g_dir);
    write_checkpoint(path, 0);
    snprintf(path, sizeof path, "%s/old", g_dir);
    write_checkpoint(path, 1);
    snprintf(path, sizeof path, "%s/in.jsonl", g_dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    for (int i = 0; i < N_REC; i++) fprintf(f, "{\"text\": \"%s\", \"label\": \"%s\"}\n", RECORDS[i][0], RECORDS[i][1]);
    return fclose(f);
}

static int teardown(void **state) {
    ft_model_free(&M);
    tokfile_free(TK);
    return test_rmtree(g_dir);
}

static void options(PredictOptions *o) {
    predict_options_default(o);
    snprintf(o->input, sizeof o->input, "%s/in.jsonl", g_dir);
    snprintf(o->format, sizeof o->format, "jsonl");
    snprintf(o->text_field, sizeof o->text_field, "text");
    snprintf(o->label_field, sizeof o->label_field, "label");
    o->batch = 2;
}

static void rows_labels_and_order(void **state) {
    char ckpt[256], err[2048];
    snprintf(ckpt, sizeof ckpt, "%s/run/checkpoint.h5", g_dir);
    PredictOptions o;
    options(&o);
    Predictions pr;
    assert_int_equal(predict_run(ckpt, &o, &pr, err, sizeof err), 0);
    const TaskSet *ts = &pr.ts;
    assert_int_equal(ts->kind, TASK_CLASSIFICATION);
    assert_int_equal(ts->n_labels, 3);
    for (int l = 0; l < 3; l++) assert_string_equal(ts->label_names[l], LABELS[l]);
    assert_int_equal(pr.ex.n, N_REC);
    assert_int_equal(ts->N, N_REC);
    assert_int_equal(pr.p.n, N_REC);
    /* the model's own forward over each example alone, in file order */
    Tape t;
    tape_init(&t, (size_t)32 << 20);
    TaskPreds ref;
    task_eval_run_ordered(&M.enc, &M.head, &t, ts, 1, 0, &ref);
    int differ = 0;
    for (long r = 0; r < N_REC; r++) {
        const int64_t e = pr.p.ex[r];
        assert_int_equal(ts->example[e], r); /* row r is record r */
        /* [CLS] text [SEP] with the checkpoint's tokenizer */
        size_t n;
        int32_t *ids = tokenizer_encode(TK->bpe, RECORDS[r][0], strlen(RECORDS[r][0]), &n);
        assert_true(n + 2 <= (size_t)ts->T);
        assert_int_equal(ts->ids[e * ts->T], TK->sp.cls);
        assert_memory_equal(ts->ids + e * ts->T + 1, ids, n * sizeof(int32_t));
        assert_int_equal(ts->ids[e * ts->T + 1 + n], TK->sp.sep);
        free(ids);
        assert_string_equal(ts->label_names[pr.p.gold[r]], RECORDS[r][1]);
        assert_int_equal(pr.p.pred[r], ref.pred[e]);
        assert_near(pr.p.prob[r], ref.prob[e], REAL_TOL(1e-5, 1e-6));
        differ |= pr.p.pred[r] != pr.p.pred[0];
    }
    assert_true(differ); /* not one label for every record */
    task_preds_free(&ref);
    tape_free(&t);
    /* the JSON lines: one per record, in order, its line, label, probability and gold */
    char out[256];
    snprintf(out, sizeof out, "%s/out.jsonl", g_dir);
    assert_int_equal(predict_write(&pr, out, err, sizeof err), 0);
    FILE *f = fopen(out, "r");
    assert_non_null(f);
    char line[1024];
    long r = 0;
    for (; fgets(line, sizeof line, f); r++) {
        assert_true(r < N_REC);
        json_t *j = json_loads(line, 0, NULL);
        assert_non_null(j);
        assert_int_equal(json_integer_value(json_object_get(j, "line")), r + 1);
        assert_string_equal(json_string_value(json_object_get(j, "label")), LABELS[pr.p.pred[r]]);
        assert_string_equal(json_string_value(json_object_get(j, "gold")), RECORDS[r][1]);
        assert_near(json_real_value(json_object_get(j, "prob")), pr.p.prob[r], 1e-8);
        json_decref(j);
    }
    fclose(f);
    assert_int_equal(r, N_REC);
    predictions_free(&pr);
}

static void refuses_with_one_line(void **state) {
    char ckpt[256], err[2048];
    PredictOptions o;
    Predictions pr;
    options(&o);
    snprintf(o.text_pair_field, sizeof o.text_pair_field, "label");
    snprintf(ckpt, sizeof ckpt, "%s/run/checkpoint.h5", g_dir);
    assert_int_equal(predict_run(ckpt, &o, &pr, err, sizeof err), PREDICT_USAGE);
    assert_non_null(strstr(err, "the task does not take text pairs"));
    options(&o);
    snprintf(ckpt, sizeof ckpt, "%s/old/checkpoint.h5", g_dir);
    assert_int_equal(predict_run(ckpt, &o, &pr, err, sizeof err), PREDICT_ERROR);
    assert_non_null(strstr(err, "does not say whether its task takes text pairs (no ft_pair"));
    assert_null(strchr(err, '\n'));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rows_labels_and_order),
        cmocka_unit_test(refuses_with_one_line),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
