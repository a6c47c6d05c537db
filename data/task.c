/* task.c — Brown task examples, task files, baselines.  See task.h and docs/FORMATS.md. */
#include "data/task.h"
#include "data/h5util.h"
#include "data/tokenizer.h"
#include "data/tokfile.h"
#include "autograd/base/util.h"
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const KIND_NAMES[3] = {"tagging", "classification", "regression"};
const char *task_kind_name(TaskKind k) { return (unsigned)k < 3 ? KIND_NAMES[k] : "?"; }
/* 0, or -1 for an unknown name */
static int task_kind_parse(const char *s, TaskKind *k) {
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, KIND_NAMES[i])) { *k = (TaskKind)i; return 0; }
    return -1;
}

void task_free(TaskSet *ts) {
    free(ts->ids); free(ts->labels); free(ts->targets); free(ts->word_ids); free(ts->example); free(ts->line);
    free(ts->doc_names); free(ts->doc_fingerprints); free(ts->tokenizer);
    memset(ts, 0, sizeof *ts);
}

/* ---------------------------------------------------------------- building */

typedef struct { int32_t *v; size_t n, cap; } IVec;
static void iv_push(IVec *a, int32_t x) {
    if (a->n == a->cap) { a->cap = a->cap ? 2 * a->cap : 4096; a->v = xrealloc(a->v, a->cap * sizeof(int32_t)); }
    a->v[a->n++] = x;
}

typedef struct {
    TaskSet *ts;
    int64_t cap;
} Builder;

/* Appends one example: [CLS] ids[0..n) [SEP], labels lab[0..n) and word ids wid[0..n) (pos) or the
 * label `seq` (genre). */
static void add_example(Builder *b, const int32_t *ids, const int32_t *lab, const int32_t *wid, size_t n, int32_t seq, int doc) {
    TaskSet *ts = b->ts;
    int T = ts->T;
    const int pos = ts->kind == TASK_TAGGING;
    if (ts->N == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        ts->ids = xrealloc(ts->ids, (size_t)b->cap * T * sizeof(int32_t));
        ts->labels = xrealloc(ts->labels, (size_t)b->cap * (pos ? T : 1) * sizeof(int32_t));
        if (pos) ts->word_ids = xrealloc(ts->word_ids, (size_t)b->cap * T * sizeof(int32_t));
        ts->example = xrealloc(ts->example, (size_t)b->cap * sizeof(int32_t));
        ts->line = xrealloc(ts->line, (size_t)b->cap * sizeof(int64_t));
    }
    int32_t *row = ts->ids + (size_t)ts->N * T;
    row[0] = TOK_CLS;
    memcpy(row + 1, ids, n * sizeof(int32_t));
    row[n + 1] = TOK_SEP;
    for (int i = (int)n + 2; i < T; i++) row[i] = TOK_PAD;
    if (pos) {
        int32_t *lr = ts->labels + (size_t)ts->N * T, *wr = ts->word_ids + (size_t)ts->N * T;
        for (int i = 0; i < T; i++) lr[i] = TASK_IGNORE, wr[i] = -1;
        memcpy(lr + 1, lab, n * sizeof(int32_t));
        memcpy(wr + 1, wid, n * sizeof(int32_t));
    } else {
        ts->labels[ts->N] = seq;
    }
    ts->example[ts->N] = doc;
    ts->line[ts->N] = 0;
    ts->N++;
}

int task_build(TaskKind kind, const BrownText *texts, size_t n_texts, int split, const Tokenizer *tk, int T,
               TaskSet *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (T < 3) { errf(err, errlen, "task: sequence length %d is too short (at least 3: [CLS] token [SEP])", T); return -1; }
    if (split < 0 || split > 2) { errf(err, errlen, "task: bad split %d", split); return -1; }
    if (kind != TASK_TAGGING && kind != TASK_CLASSIFICATION) { errf(err, errlen, "task: the Brown tasks are tagging (pos) or classification (genre)"); return -1; }
    const int pos = kind == TASK_TAGGING;
    out->kind = kind;
    snprintf(out->name, sizeof out->name, "%s", pos ? "pos" : "genre");
    snprintf(out->split, sizeof out->split, "%s", brown_split_names[split]);
    out->T = T;
    out->n_labels = pos ? UPOS_COUNT : BROWN_N_GENRES;
    for (int l = 0; l < out->n_labels; l++)
        snprintf(out->label_names[l], TASK_LABEL_LEN, "%s", pos ? brown_upos_names[l] : brown_genre_names[l]);
    out->pad_id = TOK_PAD; out->cls_id = TOK_CLS; out->sep_id = TOK_SEP;
    snprintf(out->tokenizer_kind, sizeof out->tokenizer_kind, "bpe");
    snprintf(out->input_format, sizeof out->input_format, "brown");
    out->split_seed = -1;
    size_t tlen;
    const uint8_t *tb = tokenizer_bytes(tk, &tlen);
    out->tokenizer = xmalloc(tlen);
    memcpy(out->tokenizer, tb, tlen);
    out->tokenizer_len = tlen;
    tokenizer_hash_hex(tk, out->tokenizer_hash);
    out->vocab_size = tokenizer_vocab_size(tk);
    out->doc_names = xmalloc((n_texts ? n_texts : 1) * sizeof *out->doc_names);
    out->doc_fingerprints = xmalloc((n_texts ? n_texts : 1) * sizeof(uint64_t));

    Builder b = {out, 0};
    TokEncoder *enc = tok_encoder_new(tk);
    IVec ids = {0}, lab = {0}, wid = {0}, wstart = {0};
    size_t W = (size_t)T - 2;
    char *wbuf = NULL;
    size_t wcap = 0;
    for (size_t d = 0; d < n_texts; d++) {
        const BrownText *t = &texts[d];
        if (t->split != split) continue;
        int di = out->n_docs++;
        snprintf(out->doc_names[di], sizeof out->doc_names[di], "%s", t->name);
        out->doc_fingerprints[di] = brown_fingerprint(t);
        /* the text's tokens, the label of each, and where each word starts */
        ids.n = lab.n = wid.n = wstart.n = 0;
        for (size_t i = 0; i < t->n_words; i++) {
            size_t wl = strlen(t->word[i]);
            if (wl + 2 > wcap) { wcap = 2 * (wl + 2); wbuf = xrealloc(wbuf, wcap); }
            size_t k = 0;
            if (t->space_before[i]) wbuf[k++] = ' ';
            memcpy(wbuf + k, t->word[i], wl);
            size_t nid;
            const int32_t *r = tok_encode(enc, wbuf, k + wl, &nid);
            iv_push(&wstart, (int32_t)ids.n);
            for (size_t j = 0; j < nid; j++) {
                iv_push(&ids, r[j]);
                iv_push(&lab, j == 0 ? t->tag[i] : TASK_IGNORE);
                iv_push(&wid, (int32_t)i);
            }
        }
        iv_push(&wstart, (int32_t)ids.n);
        if (!pos) {
            size_t nw = ids.n / W;
            if (nw == 0) add_example(&b, ids.v, NULL, NULL, ids.n, t->genre, di);
            for (size_t w = 0; w < nw; w++) add_example(&b, ids.v + w * W, NULL, NULL, W, t->genre, di);
            continue;
        }
        /* pos: pack whole sentences; a sentence longer than W is cut at word boundaries (a single
         * word longer than W keeps its first W sub-tokens) */
        size_t cur = 0, cur_n = 0; /* current example = tokens [cur, cur + cur_n) */
        for (size_t s = 0; s < t->n_sents; s++) {
            size_t a = (size_t)wstart.v[t->sent_start[s]], e = (size_t)wstart.v[t->sent_start[s + 1]];
            if (e - a <= W) {
                if (cur_n && cur_n + (e - a) > W) { add_example(&b, ids.v + cur, lab.v + cur, wid.v + cur, cur_n, 0, di); cur_n = 0; }
                if (!cur_n) cur = a;
                cur_n += e - a;
                continue;
            }
            if (cur_n) { add_example(&b, ids.v + cur, lab.v + cur, wid.v + cur, cur_n, 0, di); cur_n = 0; }
            for (size_t w = t->sent_start[s]; w < t->sent_start[s + 1];) {
                size_t p0 = (size_t)wstart.v[w], w2 = w + 1;
                while (w2 < t->sent_start[s + 1] && (size_t)wstart.v[w2 + 1] - p0 <= W) w2++;
                size_t p1 = (size_t)wstart.v[w2];
                add_example(&b, ids.v + p0, lab.v + p0, wid.v + p0, MIN(p1 - p0, W), 0, di);
                w = w2;
            }
        }
        if (cur_n) add_example(&b, ids.v + cur, lab.v + cur, wid.v + cur, cur_n, 0, di);
    }
    free(ids.v); free(lab.v); free(wid.v); free(wstart.v); free(wbuf);
    tok_encoder_free(enc);
    if (out->N == 0) {
        errf(err, errlen, "task %s: the %s split has no texts", out->name, out->split);
        task_free(out);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- writing */

/* A dataset of rank 1 or 2; from 4,096 values on chunked (rows of 256, or 65,536 values), shuffled
 * and deflated. */
static int write_nd(H5Out *o, const char *name, hid_t ftype, hid_t mtype, const void *data, int rank, const hsize_t *dims) {
    hsize_t total = 1;
    for (int i = 0; i < rank; i++) total *= dims[i];
    H5Store st = {.chunk = {dims[0] < 256 ? dims[0] : 256, rank > 1 ? dims[1] : 1}, .shuffle = 1, .deflate = 4};
    if (rank == 1) st.chunk[0] = dims[0] < 65536 ? dims[0] : 65536;
    return h5out_dataset(o, H5OUT_ROOT, name, ftype, mtype, rank, dims, data, total >= 4096 ? &st : NULL);
}

int task_write(const char *path, const TaskSet *ts, char *err, size_t errlen) {
    H5Out o;
    if (h5out_create(&o, "task", path, 1, err, errlen) != 0) return -1;
    char *labels = xcalloc((size_t)ts->n_labels, TASK_LABEL_LEN + 1), *docs = NULL;
    for (int l = 0; l < ts->n_labels; l++) { if (l) strcat(labels, "\n"); strcat(labels, ts->label_names[l]); }
    const int tag = ts->kind == TASK_TAGGING;
    h5out_attr_str(&o, "format", TASK_FORMAT);
    h5out_attr_i64(&o, "version", TASK_VERSION);
    h5out_attr_str(&o, "kind", task_kind_name(ts->kind));
    h5out_attr_str(&o, "task", ts->name);
    h5out_attr_str(&o, "split", ts->split);
    h5out_attr_i64(&o, "seq_len", ts->T);
    h5out_attr_i64(&o, "n_examples", ts->N);
    h5out_attr_i64(&o, "n_labels", ts->n_labels);
    h5out_attr_str(&o, "label_names", labels);
    h5out_attr_i64(&o, "pair", ts->pair);
    h5out_attr_i64(&o, "pad_id", ts->pad_id);
    h5out_attr_i64(&o, "cls_id", ts->cls_id);
    h5out_attr_i64(&o, "sep_id", ts->sep_id);
    h5out_attr_i64(&o, "vocab_size", ts->vocab_size);
    h5out_attr_str(&o, "tokenizer_kind", ts->tokenizer_kind);
    h5out_attr_str(&o, "tokenizer_hash", ts->tokenizer_hash);
    h5out_attr_str(&o, "source", ts->source);
    h5out_attr_str(&o, "input_format", ts->input_format);
    h5out_attr_i64(&o, "split_seed", ts->split_seed);
    h5out_attr_f64(&o, "split_dev_fraction", ts->split_dev_fraction);
    h5out_attr_f64(&o, "split_test_fraction", ts->split_test_fraction);
    h5out_attr_i64(&o, "n_truncated", ts->n_truncated);
    h5out_attr_i64(&o, "n_windows", ts->n_windows);
    hsize_t d2[2] = {(hsize_t)ts->N, (hsize_t)ts->T}, d1[1] = {(hsize_t)ts->N};
    write_nd(&o, "input_ids", H5T_STD_I32LE, H5T_NATIVE_INT32, ts->ids, 2, d2);
    if (ts->kind == TASK_REGRESSION) write_nd(&o, "labels", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, ts->targets, 1, d1);
    else write_nd(&o, "labels", H5T_STD_I32LE, H5T_NATIVE_INT32, ts->labels, tag ? 2 : 1, tag ? d2 : d1);
    if (tag) write_nd(&o, "word_ids", H5T_STD_I32LE, H5T_NATIVE_INT32, ts->word_ids, 2, d2);
    write_nd(&o, "example", H5T_STD_I32LE, H5T_NATIVE_INT32, ts->example, 1, d1);
    write_nd(&o, "line", H5T_STD_I64LE, H5T_NATIVE_INT64, ts->line, 1, d1);
    if (ts->n_docs) {
        docs = xcalloc((size_t)ts->n_docs + 1, 9);
        for (int d = 0; d < ts->n_docs; d++) { if (d) strcat(docs, " "); strcat(docs, ts->doc_names[d]); }
        h5out_attr_i64(&o, "n_docs", ts->n_docs);
        h5out_attr_str(&o, "doc_names", docs);
        hsize_t dd[1] = {(hsize_t)ts->n_docs};
        write_nd(&o, "doc_fingerprints", H5T_STD_U64LE, H5T_NATIVE_UINT64, ts->doc_fingerprints, 1, dd);
    }
    hsize_t dt[1] = {(hsize_t)ts->tokenizer_len};
    write_nd(&o, "tokenizer", H5T_STD_U8LE, H5T_NATIVE_UINT8, ts->tokenizer, 1, dt);
    free(labels);
    free(docs);
    return h5out_close(&o, err, errlen);
}

/* ---------------------------------------------------------------- reading */

#define FAIL(...) do { errf(err, errlen, __VA_ARGS__); goto out; } while (0)

/* Attributes through the checked readers of data/h5util (class, size, precision and element count
 * before H5Aread; strings whole whatever their padding). */
static int read_attr_i64(hid_t f, const char *name, int64_t *v) { return h5_read_int_attr(f, name, H5T_NATIVE_INT64, v) ? -1 : 0; }
/* A string attribute into buf (cap bytes); -1 when missing or too long. */
static int read_attr_buf(hid_t f, const char *name, char *buf, size_t cap) {
    char *s = h5_read_str_attr(f, name);
    int rc = s && strlen(s) < cap ? 0 : -1;
    if (!rc) snprintf(buf, cap, "%s", s);
    free(s);
    return rc;
}

/* A whole dataset (data/h5util h5_read_dataset), its message prefixed with the file. */
static void *read_dataset(hid_t f, const char *path, const char *name, H5T_class_t cls, int rank, hid_t mtype, size_t esize,
                          hsize_t *dims, char *err, size_t errlen) {
    char msg[512];
    void *buf = h5_read_dataset(f, name, cls, rank, mtype, esize, dims, msg, sizeof msg);
    if (!buf) errf(err, errlen, "task %s: %s (re-run deberta prep-task)", path, msg);
    return buf;
}

/* A dataset of shape [N] or [N, T]. */
static void *read_shaped(hid_t f, const char *path, const char *name, H5T_class_t cls, int rank, hid_t mtype, size_t esize, int64_t N,
                         int64_t T, char *err, size_t errlen) {
    hsize_t dims[2];
    void *buf = read_dataset(f, path, name, cls, rank, mtype, esize, dims, err, errlen);
    if (buf && ((int64_t)dims[0] != N || (rank == 2 && (int64_t)dims[1] != T))) {
        if (rank == 2)
            errf(err, errlen, "task %s: dataset '%s' has shape [%llu, %llu], expected [%lld, %lld]", path, name, (unsigned long long)dims[0],
                 (unsigned long long)dims[1], (long long)N, (long long)T);
        else
            errf(err, errlen, "task %s: dataset '%s' has %llu entries, expected %lld", path, name, (unsigned long long)dims[0], (long long)N);
        free(buf);
        return NULL;
    }
    return buf;
}

int task_read(const char *path, TaskSet *ts, char *err, size_t errlen) {
    memset(ts, 0, sizeof *ts);
    if (access(path, R_OK) != 0) { errf(err, errlen, "task %s: cannot open (%s)", path, strerror(errno)); return -1; }
    H5Quiet q;
    h5_quiet(&q);
    int rc = -1;
    char *s = NULL;
    hid_t f = -1;
    if (h5_seal_require("task", path, "re-run deberta prep-task", err, errlen) != 0) goto out;
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) FAIL("task %s: not an HDF5 file, or truncated (re-run deberta prep-task)", path);
    s = h5_read_str_attr(f, "format");
    if (!s || strcmp(s, TASK_FORMAT))
        FAIL("task %s: format is '%s', expected '%s' (is it a task file of deberta prep-task?)", path, s ? s : "(none)", TASK_FORMAT);
    free(s); s = NULL;
    int64_t v, T, N, nl, nd = 0, vocab, pair, sid[3];
    if (read_attr_i64(f, "version", &v) || v != TASK_VERSION)
        FAIL("task %s: version is not %d (a task file of an older deberta.c: re-run deberta prep-task)", path, TASK_VERSION);
    s = h5_read_str_attr(f, "kind");
    if (!s || task_kind_parse(s, &ts->kind))
        FAIL("task %s: attribute 'kind' is '%s', expected 'classification', 'regression' or 'tagging'", path, s ? s : "(none)");
    free(s); s = NULL;
    if (read_attr_buf(f, "task", ts->name, sizeof ts->name) || !ts->name[0]) FAIL("task %s: attribute 'task' is missing", path);
    if (read_attr_buf(f, "split", ts->split, sizeof ts->split)) FAIL("task %s: attribute 'split' is missing", path);
    if (read_attr_i64(f, "seq_len", &T) || T < 3 || T > 1 << 20) FAIL("task %s: attribute 'seq_len' is missing or < 3", path);
    if (read_attr_i64(f, "n_examples", &N) || N < 1 || N > INT32_MAX) FAIL("task %s: attribute 'n_examples' is missing or < 1", path);
    const int reg = ts->kind == TASK_REGRESSION, tag = ts->kind == TASK_TAGGING;
    if (reg) {
        if (read_attr_i64(f, "n_labels", &nl) || nl != 1) FAIL("task %s: attribute 'n_labels' is missing or not 1 (regression)", path);
    } else if (read_attr_i64(f, "n_labels", &nl) || nl < 2 || nl > TASK_MAX_LABELS)
        FAIL("task %s: attribute 'n_labels' is missing or outside [2, %d]", path, TASK_MAX_LABELS);
    if (read_attr_i64(f, "vocab_size", &vocab) || vocab <= TOK_N_SPECIAL || vocab > INT32_MAX) FAIL("task %s: attribute 'vocab_size' is missing or too small", path);
    if (read_attr_i64(f, "pair", &pair) || (pair != 0 && pair != 1) || (pair && tag)) FAIL("task %s: attribute 'pair' is missing or not 0/1 (0 for tagging)", path);
    static const char *const SID[3] = {"pad_id", "cls_id", "sep_id"};
    for (int k = 0; k < 3; k++)
        if (read_attr_i64(f, SID[k], &sid[k]) || sid[k] < 0 || sid[k] >= vocab) FAIL("task %s: attribute '%s' is missing or outside the vocabulary", path, SID[k]);
    ts->T = (int)T; ts->N = N; ts->n_labels = (int)nl; ts->vocab_size = vocab; ts->pair = (int)pair;
    ts->pad_id = (int32_t)sid[0]; ts->cls_id = (int32_t)sid[1]; ts->sep_id = (int32_t)sid[2];
    s = h5_read_str_attr(f, "label_names");
    {
        int k = 0;
        char *save = NULL;
        for (char *tok = s ? strtok_r(s, "\n", &save) : NULL; tok; tok = strtok_r(NULL, "\n", &save)) {
            if (k < TASK_MAX_LABELS) snprintf(ts->label_names[k], TASK_LABEL_LEN, "%s", tok);
            k++;
        }
        if (k != nl) FAIL("task %s: attribute 'label_names' has %d names for %lld labels", path, k, (long long)nl);
    }
    free(s); s = NULL;
    if (read_attr_buf(f, "tokenizer_kind", ts->tokenizer_kind, sizeof ts->tokenizer_kind) ||
        (strcmp(ts->tokenizer_kind, "bpe") && strcmp(ts->tokenizer_kind, "spm")))
        FAIL("task %s: attribute 'tokenizer_kind' is missing or not 'bpe'/'spm'", path);
    if (read_attr_buf(f, "tokenizer_hash", ts->tokenizer_hash, sizeof ts->tokenizer_hash) || strlen(ts->tokenizer_hash) != 16)
        FAIL("task %s: attribute 'tokenizer_hash' is missing", path);
    if (read_attr_buf(f, "source", ts->source, sizeof ts->source) || read_attr_buf(f, "input_format", ts->input_format, sizeof ts->input_format) ||
        read_attr_i64(f, "split_seed", &ts->split_seed) || h5_read_f64_attr(f, "split_dev_fraction", &ts->split_dev_fraction) ||
        h5_read_f64_attr(f, "split_test_fraction", &ts->split_test_fraction) || read_attr_i64(f, "n_truncated", &ts->n_truncated) ||
        read_attr_i64(f, "n_windows", &ts->n_windows))
        FAIL("task %s: one of the attributes source, input_format, split_seed, split_dev_fraction, split_test_fraction, "
             "n_truncated, n_windows is missing or of the wrong type", path);
    if (H5Aexists(f, "n_docs") > 0) {
        if (read_attr_i64(f, "n_docs", &nd) || nd < 1 || nd > INT32_MAX) FAIL("task %s: attribute 'n_docs' is < 1", path);
        ts->n_docs = (int)nd;
        s = h5_read_str_attr(f, "doc_names");
        ts->doc_names = xcalloc((size_t)nd, sizeof *ts->doc_names);
        int k = 0;
        char *save = NULL;
        for (char *tok = s ? strtok_r(s, " ", &save) : NULL; tok; tok = strtok_r(NULL, " ", &save)) {
            if (k < nd) snprintf(ts->doc_names[k], sizeof ts->doc_names[k], "%s", tok);
            k++;
        }
        if (k != nd) FAIL("task %s: attribute 'doc_names' has %d names for %lld texts", path, k, (long long)nd);
        free(s); s = NULL;
        hsize_t dd[1];
        ts->doc_fingerprints = read_dataset(f, path, "doc_fingerprints", H5T_INTEGER, 1, H5T_NATIVE_UINT64, 8, dd, err, errlen);
        if (!ts->doc_fingerprints) goto out;
        if ((int64_t)dd[0] != nd) FAIL("task %s: dataset 'doc_fingerprints' has %llu entries, expected %lld", path, (unsigned long long)dd[0], (long long)nd);
    }

    if (!(ts->ids = read_shaped(f, path, "input_ids", H5T_INTEGER, 2, H5T_NATIVE_INT32, 4, N, T, err, errlen))) goto out;
    if (reg) {
        if (!(ts->targets = read_shaped(f, path, "labels", H5T_FLOAT, 1, H5T_NATIVE_FLOAT, 4, N, T, err, errlen))) goto out;
    } else if (!(ts->labels = read_shaped(f, path, "labels", H5T_INTEGER, tag ? 2 : 1, H5T_NATIVE_INT32, 4, N, T, err, errlen))) goto out;
    if (tag && !(ts->word_ids = read_shaped(f, path, "word_ids", H5T_INTEGER, 2, H5T_NATIVE_INT32, 4, N, T, err, errlen))) goto out;
    if (!(ts->example = read_shaped(f, path, "example", H5T_INTEGER, 1, H5T_NATIVE_INT32, 4, N, T, err, errlen))) goto out;
    if (!(ts->line = read_shaped(f, path, "line", H5T_INTEGER, 1, H5T_NATIVE_INT64, 8, N, T, err, errlen))) goto out;
    hsize_t dims[2];
    ts->tokenizer = read_dataset(f, path, "tokenizer", H5T_INTEGER, 1, H5T_NATIVE_UINT8, 1, dims, err, errlen);
    if (!ts->tokenizer) goto out;
    ts->tokenizer_len = dims[0];
    char hash[17];
    tokenizer_hash_bytes(ts->tokenizer, ts->tokenizer_len, hash);
    if (strcmp(hash, ts->tokenizer_hash))
        FAIL("task %s: the embedded tokenizer hashes to %s, the file says %s (corrupt file?)", path, hash, ts->tokenizer_hash);
    {
        char e2[512];
        TokFile *tk = tokfile_from_bytes(ts->tokenizer, ts->tokenizer_len, path, e2, sizeof e2);
        if (!tk) FAIL("task %s: embedded tokenizer: %s", path, e2);
        const int tv = tk->vocab_size, spm = tk->kind == TOKFILE_SPM;
        const SpecialIds sp = tk->sp;
        tokfile_free(tk);
        if (spm != !strcmp(ts->tokenizer_kind, "spm")) FAIL("task %s: tokenizer_kind is '%s' but the embedded tokenizer is %s", path, ts->tokenizer_kind, spm ? "a SentencePiece model" : "ours (bpe)");
        if (tv != vocab) FAIL("task %s: vocab_size is %lld but the embedded tokenizer has %d ids", path, (long long)vocab, tv);
        if (sp.pad != ts->pad_id || sp.cls != ts->cls_id || sp.sep != ts->sep_id)
            FAIL("task %s: pad/cls/sep ids %d/%d/%d, the embedded tokenizer's are %d/%d/%d", path, ts->pad_id, ts->cls_id, ts->sep_id, sp.pad, sp.cls, sp.sep);
    }
    for (int64_t n = 0; n < N; n++) {
        const int32_t *row = ts->ids + n * T;
        if (row[0] != ts->cls_id) FAIL("task %s: input_ids[%lld, 0] = %d, every example must start with [CLS] = %d", path, (long long)n, row[0], ts->cls_id);
        for (int64_t i = 0; i < T; i++)
            if (row[i] < 0 || row[i] >= vocab)
                FAIL("task %s: input_ids[%lld, %lld] = %d is outside the vocabulary [0, %lld)", path, (long long)n, (long long)i, row[i], (long long)vocab);
        if (ts->example[n] < 0 || (nd && ts->example[n] >= nd)) FAIL("task %s: example[%lld] = %d is outside the texts [0, %lld)", path, (long long)n, ts->example[n], (long long)(nd ? nd : INT32_MAX));
        if (ts->line[n] < 0) FAIL("task %s: line[%lld] = %lld is negative", path, (long long)n, (long long)ts->line[n]);
        if (tag) {
            for (int64_t i = 0; i < T; i++) {
                int32_t l = ts->labels[n * T + i], w = ts->word_ids[n * T + i];
                if (w < -1) FAIL("task %s: word_ids[%lld, %lld] = %d is below -1", path, (long long)n, (long long)i, w);
                if (l == TASK_IGNORE) continue;
                if (l < 0 || l >= nl)
                    FAIL("task %s: labels[%lld, %lld] = %d is outside [0, %lld) and not the ignore value %d", path, (long long)n, (long long)i, l, (long long)nl, TASK_IGNORE);
                if (w < 0) FAIL("task %s: labels[%lld, %lld] = %d sits on a position without a word (word_ids -1)", path, (long long)n, (long long)i, l);
            }
        } else if (reg) {
            if (!isfinite(ts->targets[n])) FAIL("task %s: labels[%lld] is not a finite number", path, (long long)n);
        } else if (ts->labels[n] < 0 || ts->labels[n] >= nl)
            FAIL("task %s: labels[%lld] = %d is outside [0, %lld)", path, (long long)n, ts->labels[n], (long long)nl);
    }
    rc = 0;
out:
    free(s);
    if (f >= 0) H5Fclose(f);
    h5_loud(&q);
    if (rc) task_free(ts);
    return rc;
}

int task_check_same(const TaskSet *a, const char *pa, const TaskSet *b, const char *pb, char *err, size_t errlen) {
    if (a->kind != b->kind) return errf(err, errlen, "task %s is %s but %s is %s", pb, task_kind_name(b->kind), pa, task_kind_name(a->kind));
    if (strcmp(a->name, b->name)) return errf(err, errlen, "task %s is the task '%s' but %s is '%s'", pb, b->name, pa, a->name);
    if (a->T != b->T) return errf(err, errlen, "task %s has seq_len %d but %s has %d", pb, b->T, pa, a->T);
    if (a->pair != b->pair) return errf(err, errlen, "task %s has %s but %s %s", pb, b->pair ? "text pairs" : "single texts", pa, a->pair ? "text pairs" : "single texts");
    if (strcmp(a->tokenizer_hash, b->tokenizer_hash))
        return errf(err, errlen, "task %s was made with tokenizer %s but %s with %s (re-run deberta prep-task)", pb, b->tokenizer_hash, pa, a->tokenizer_hash);
    if (a->n_labels != b->n_labels) return errf(err, errlen, "task %s has %d labels but %s has %d", pb, b->n_labels, pa, a->n_labels);
    for (int l = 0; l < a->n_labels; l++)
        if (strcmp(a->label_names[l], b->label_names[l]))
            return errf(err, errlen, "task %s: label %d is '%s' but '%s' in %s", pb, l, b->label_names[l], a->label_names[l], pa);
    return 0;
}

/* ---------------------------------------------------------------- baselines */

int64_t task_n_labelled(const TaskSet *ts) {
    if (ts->kind != TASK_TAGGING) return ts->kind == TASK_CLASSIFICATION ? ts->N : 0;
    int64_t k = 0;
    for (int64_t i = 0; i < ts->N * ts->T; i++) k += ts->labels[i] != TASK_IGNORE;
    return k;
}

int task_example_len(const TaskSet *ts, int64_t n) {
    const int32_t *row = ts->ids + n * ts->T;
    int len = ts->T;
    while (len > 1 && row[len - 1] == ts->pad_id) len--;
    return len;
}

int task_majority_label(const TaskSet *train) {
    int64_t cnt[TASK_MAX_LABELS] = {0};
    if (train->kind == TASK_REGRESSION) return 0;
    int64_t n = train->kind == TASK_TAGGING ? train->N * train->T : train->N;
    for (int64_t i = 0; i < n; i++)
        if (train->labels[i] != TASK_IGNORE) cnt[train->labels[i]]++;
    int best = 0;
    for (int l = 1; l < train->n_labels; l++) if (cnt[l] > cnt[best]) best = l;
    return best;
}

double task_constant_accuracy(const TaskSet *eval, int label) {
    if (eval->kind == TASK_REGRESSION) return NAN;
    int64_t n = eval->kind == TASK_TAGGING ? eval->N * eval->T : eval->N, ok = 0, tot = 0;
    for (int64_t i = 0; i < n; i++)
        if (eval->labels[i] != TASK_IGNORE) { tot++; ok += eval->labels[i] == label; }
    return tot ? (double)ok / (double)tot : 0.0;
}

/* A word of a tagging example: its sub-tokens are the positions with its word id.  Its key is an FNV-1a 64 hash of those ids. */
static uint64_t word_key(const TaskSet *ts, int64_t n, int i) {
    const int32_t *row = ts->ids + n * ts->T;
    const int32_t *wid = ts->word_ids + n * ts->T;
    uint64_t h = 0xcbf29ce484222325ull;
    for (int j = i; j < ts->T; j++) {
        if (j > i && wid[j] != wid[i]) break;
        h ^= (uint64_t)(uint32_t)row[j];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    return h;
}

typedef struct { uint64_t key; int32_t label; } KeyLabel;
static int cmp_kl(const void *a, const void *b) {
    const KeyLabel *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->label > y->label) - (x->label < y->label);
}

int64_t task_word_tag_predict(const TaskSet *train, const TaskSet *eval, int32_t *pred_out) {
    if (train->kind != TASK_TAGGING || eval->kind != TASK_TAGGING) return 0;
    int64_t n = task_n_labelled(train), k = 0;
    KeyLabel *kl = xmalloc((size_t)(n ? n : 1) * sizeof(KeyLabel));
    for (int64_t e = 0; e < train->N; e++)
        for (int i = 0; i < train->T; i++)
            if (train->labels[e * train->T + i] != TASK_IGNORE) kl[k++] = (KeyLabel){word_key(train, e, i), train->labels[e * train->T + i]};
    qsort(kl, (size_t)k, sizeof(KeyLabel), cmp_kl);
    /* one entry per key: its most frequent label (ties: the smaller label) */
    KeyLabel *best = xmalloc((size_t)(k ? k : 1) * sizeof(KeyLabel));
    int64_t nb = 0;
    for (int64_t i = 0; i < k;) {
        int64_t j = i, bc = 0;
        int32_t bl = kl[i].label;
        while (j < k && kl[j].key == kl[i].key) {
            int64_t r = j;
            while (r < k && kl[r].key == kl[i].key && kl[r].label == kl[j].label) r++;
            if (r - j > bc) { bc = r - j; bl = kl[j].label; }
            j = r;
        }
        best[nb++] = (KeyLabel){kl[i].key, bl};
        i = j;
    }
    free(kl);
    int fallback = task_majority_label(train);
    int64_t tot = 0;
    for (int64_t e = 0; e < eval->N; e++)
        for (int i = 0; i < eval->T; i++) {
            int32_t l = eval->labels[e * eval->T + i];
            if (l == TASK_IGNORE) continue;
            uint64_t key = word_key(eval, e, i);
            int64_t lo = 0, hi = nb;
            while (lo < hi) { int64_t mid = (lo + hi) / 2; if (best[mid].key < key) lo = mid + 1; else hi = mid; }
            pred_out[tot++] = lo < nb && best[lo].key == key ? best[lo].label : fallback;
        }
    free(best);
    return tot;
}

double task_word_tag_accuracy(const TaskSet *train, const TaskSet *eval) {
    if (train->kind != TASK_TAGGING || eval->kind != TASK_TAGGING) return 0.0;
    const int64_t n = task_n_labelled(eval);
    int32_t *pred = xmalloc((size_t)(n ? n : 1) * sizeof(int32_t));
    const int64_t tot = task_word_tag_predict(train, eval, pred);
    int64_t ok = 0, k = 0;
    for (int64_t e = 0; e < eval->N; e++)
        for (int i = 0; i < eval->T; i++)
            if (eval->labels[e * eval->T + i] != TASK_IGNORE) ok += pred[k++] == eval->labels[e * eval->T + i];
    free(pred);
    return tot ? (double)ok / (double)tot : 0.0;
}

/* ---------------------------------------------------------------- the label names as one config value */

static int label_byte_escaped(char c) { return c == ',' || c == '#' || c == '%' || c == ' ' || c == '\t'; }

void task_labels_encode(char names[][TASK_LABEL_LEN], int L, char *buf, size_t cap) {
    size_t k = 0;
    if (cap) buf[0] = 0;
    for (int l = 0; l < L; l++) {
        if (l && k + 1 < cap) buf[k++] = ',';
        for (const char *s = names[l]; *s && k + 4 < cap; s++) {
            if (label_byte_escaped(*s)) k += (size_t)snprintf(buf + k, cap - k, "%%%02X", (unsigned char)*s);
            else buf[k++] = *s;
        }
    }
    if (cap) buf[k < cap ? k : cap - 1] = 0;
}

static int hexval(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

int task_labels_decode(const char *text, char names[][TASK_LABEL_LEN]) {
    int L = 0;
    for (const char *p = text;;) {
        if (L == TASK_MAX_LABELS) return -1;
        size_t n = 0;
        for (; *p && *p != ','; p++) {
            char c = *p;
            if (c == '%' && hexval(p[1]) >= 0 && hexval(p[2]) >= 0) c = (char)(hexval(p[1]) * 16 + hexval(p[2])), p += 2;
            if (n + 1 >= TASK_LABEL_LEN) return -1;
            names[L][n++] = c;
        }
        if (!n) return -1;
        names[L++][n] = 0;
        if (!*p) return L;
        p++;
    }
}
