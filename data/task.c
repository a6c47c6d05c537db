/* task.c — Brown task examples, task files, baselines.  See task.h and docs/FORMATS.md. */
#include "data/task.h"
#include "data/h5util.h"
#include "data/tokenizer.h"
#include "autograd/util.h"
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *task_kind_name(TaskKind k) { return k == TASK_POS ? "pos" : "genre"; }
int task_kind_parse(const char *s, TaskKind *k) {
    if (!strcmp(s, "pos")) { *k = TASK_POS; return 0; }
    if (!strcmp(s, "genre")) { *k = TASK_GENRE; return 0; }
    return -1;
}

void task_free(TaskSet *ts) {
    free(ts->ids); free(ts->labels); free(ts->doc); free(ts->doc_names); free(ts->doc_fingerprints); free(ts->tokenizer);
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

/* Appends one example: [CLS] ids[0..n) [SEP], labels lab[0..n) (pos) or the label `seq` (genre). */
static void add_example(Builder *b, const int32_t *ids, const int32_t *lab, size_t n, int32_t seq, int doc) {
    TaskSet *ts = b->ts;
    int T = ts->T;
    if (ts->N == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        ts->ids = xrealloc(ts->ids, (size_t)b->cap * T * sizeof(int32_t));
        ts->labels = xrealloc(ts->labels, (size_t)b->cap * (ts->kind == TASK_POS ? T : 1) * sizeof(int32_t));
        ts->doc = xrealloc(ts->doc, (size_t)b->cap * sizeof(int32_t));
    }
    int32_t *row = ts->ids + (size_t)ts->N * T;
    row[0] = TOK_CLS;
    memcpy(row + 1, ids, n * sizeof(int32_t));
    row[n + 1] = TOK_SEP;
    for (int i = (int)n + 2; i < T; i++) row[i] = TOK_PAD;
    if (ts->kind == TASK_POS) {
        int32_t *lr = ts->labels + (size_t)ts->N * T;
        for (int i = 0; i < T; i++) lr[i] = TASK_IGNORE;
        memcpy(lr + 1, lab, n * sizeof(int32_t));
    } else {
        ts->labels[ts->N] = seq;
    }
    ts->doc[ts->N] = doc;
    ts->N++;
}

int task_build(TaskKind kind, const BrownText *texts, size_t n_texts, int split, const Tokenizer *tk, int T,
               TaskSet *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (T < 3) { errf(err, errlen, "task: sequence length %d is too short (at least 3: [CLS] token [SEP])", T); return -1; }
    if (split < 0 || split > 2) { errf(err, errlen, "task: bad split %d", split); return -1; }
    out->kind = kind;
    snprintf(out->split, sizeof out->split, "%s", brown_split_names[split]);
    out->T = T;
    out->n_labels = kind == TASK_POS ? UPOS_COUNT : BROWN_N_GENRES;
    for (int l = 0; l < out->n_labels; l++)
        snprintf(out->label_names[l], TASK_LABEL_LEN, "%s", kind == TASK_POS ? brown_upos_names[l] : brown_genre_names[l]);
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
    IVec ids = {0}, lab = {0}, wstart = {0};
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
        ids.n = lab.n = wstart.n = 0;
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
            }
        }
        iv_push(&wstart, (int32_t)ids.n);
        if (kind == TASK_GENRE) {
            size_t nw = ids.n / W;
            if (nw == 0) add_example(&b, ids.v, NULL, ids.n, t->genre, di);
            for (size_t w = 0; w < nw; w++) add_example(&b, ids.v + w * W, NULL, W, t->genre, di);
            continue;
        }
        /* pos: pack whole sentences; a sentence longer than W is cut at word boundaries (a single
         * word longer than W keeps its first W sub-tokens) */
        size_t cur = 0, cur_n = 0; /* current example = tokens [cur, cur + cur_n) */
        for (size_t s = 0; s < t->n_sents; s++) {
            size_t a = (size_t)wstart.v[t->sent_start[s]], e = (size_t)wstart.v[t->sent_start[s + 1]];
            if (e - a <= W) {
                if (cur_n && cur_n + (e - a) > W) { add_example(&b, ids.v + cur, lab.v + cur, cur_n, 0, di); cur_n = 0; }
                if (!cur_n) cur = a;
                cur_n += e - a;
                continue;
            }
            if (cur_n) { add_example(&b, ids.v + cur, lab.v + cur, cur_n, 0, di); cur_n = 0; }
            for (size_t w = t->sent_start[s]; w < t->sent_start[s + 1];) {
                size_t p0 = (size_t)wstart.v[w], w2 = w + 1;
                while (w2 < t->sent_start[s + 1] && (size_t)wstart.v[w2 + 1] - p0 <= W) w2++;
                size_t p1 = (size_t)wstart.v[w2];
                add_example(&b, ids.v + p0, lab.v + p0, MIN(p1 - p0, W), 0, di);
                w = w2;
            }
        }
        if (cur_n) add_example(&b, ids.v + cur, lab.v + cur, cur_n, 0, di);
    }
    free(ids.v); free(lab.v); free(wstart.v); free(wbuf);
    tok_encoder_free(enc);
    if (out->N == 0) {
        errf(err, errlen, "task %s: the %s split has no texts", task_kind_name(kind), out->split);
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
    char *labels = xcalloc((size_t)ts->n_labels, TASK_LABEL_LEN + 1);
    for (int l = 0; l < ts->n_labels; l++) { if (l) strcat(labels, "\n"); strcat(labels, ts->label_names[l]); }
    char *docs = xcalloc((size_t)ts->n_docs + 1, 9);
    for (int d = 0; d < ts->n_docs; d++) { if (d) strcat(docs, " "); strcat(docs, ts->doc_names[d]); }
    h5out_attr_str(&o, "format", TASK_FORMAT);
    h5out_attr_i64(&o, "version", TASK_VERSION);
    h5out_attr_str(&o, "task", task_kind_name(ts->kind));
    h5out_attr_str(&o, "split", ts->split);
    h5out_attr_i64(&o, "seq_len", ts->T);
    h5out_attr_i64(&o, "n_examples", ts->N);
    h5out_attr_i64(&o, "n_labels", ts->n_labels);
    h5out_attr_str(&o, "label_names", labels);
    h5out_attr_i64(&o, "n_docs", ts->n_docs);
    h5out_attr_str(&o, "doc_names", docs);
    h5out_attr_i64(&o, "vocab_size", ts->vocab_size);
    h5out_attr_str(&o, "tokenizer_hash", ts->tokenizer_hash);
    hsize_t d2[2] = {(hsize_t)ts->N, (hsize_t)ts->T}, d1[1] = {(hsize_t)ts->N};
    write_nd(&o, "input_ids", H5T_STD_I32LE, H5T_NATIVE_INT32, ts->ids, 2, d2);
    write_nd(&o, "labels", H5T_STD_I32LE, H5T_NATIVE_INT32, ts->labels, ts->kind == TASK_POS ? 2 : 1, ts->kind == TASK_POS ? d2 : d1);
    write_nd(&o, "doc", H5T_STD_I32LE, H5T_NATIVE_INT32, ts->doc, 1, d1);
    hsize_t dd[1] = {(hsize_t)ts->n_docs};
    write_nd(&o, "doc_fingerprints", H5T_STD_U64LE, H5T_NATIVE_UINT64, ts->doc_fingerprints, 1, dd);
    hsize_t dt[1] = {(hsize_t)ts->tokenizer_len};
    write_nd(&o, "tokenizer", H5T_STD_U8LE, H5T_NATIVE_UINT8, ts->tokenizer, 1, dt);
    free(labels);
    free(docs);
    return h5out_close(&o, err, errlen);
}

/* ---------------------------------------------------------------- reading */

/* Attributes through the checked readers of data/h5util (class, size, precision and element count
 * before H5Aread; strings whole whatever their padding). */
static int read_attr_i64(hid_t f, const char *name, int64_t *v) { return h5_read_int_attr(f, name, H5T_NATIVE_INT64, v) ? -1 : 0; }

/* Opens an integer dataset of the given rank and reads it (converted to mtype) into a new buffer.
 * dims[] receives its shape. */
static void *read_int_dataset(hid_t f, const char *path, const char *name, int rank, hid_t mtype, size_t esize,
                              hsize_t *dims, char *err, size_t errlen) {
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0) { errf(err, errlen, "task %s: dataset '%s' is missing (re-run deberta prep-task)", path, name); return NULL; }
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) { errf(err, errlen, "task %s: dataset '%s' cannot be opened (corrupt file?)", path, name); return NULL; }
    hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
    void *buf = NULL;
    int r = H5Sget_simple_extent_ndims(sp);
    if (H5Tget_class(t) != H5T_INTEGER) {
        errf(err, errlen, "task %s: dataset '%s' is not an integer dataset (re-run deberta prep-task)", path, name);
    } else if (r != rank) {
        errf(err, errlen, "task %s: dataset '%s' has %d dimensions, expected %d", path, name, r, rank);
    } else {
        H5Sget_simple_extent_dims(sp, dims, NULL);
        size_t n = 1;
        for (int i = 0; i < rank; i++) n *= dims[i];
        buf = xmalloc((n ? n : 1) * esize);
        if (n && H5Dread(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) {
            errf(err, errlen, "task %s: dataset '%s' cannot be read (truncated or corrupt file?)", path, name);
            free(buf);
            buf = NULL;
        }
    }
    H5Tclose(t);
    H5Sclose(sp);
    H5Dclose(d);
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
    if (f < 0) { errf(err, errlen, "task %s: not an HDF5 file, or truncated (re-run deberta prep-task)", path); goto out; }
    s = h5_read_str_attr(f, "format");
    if (!s || strcmp(s, TASK_FORMAT)) {
        errf(err, errlen, "task %s: format is '%s', expected '%s' (is it a task file of deberta prep-task?)", path, s ? s : "(none)", TASK_FORMAT);
        goto out;
    }
    free(s); s = NULL;
    int64_t v, T, N, nl, nd, vocab;
    if (read_attr_i64(f, "version", &v) || v != TASK_VERSION) {
        errf(err, errlen, "task %s: version is not %d (re-run deberta prep-task)", path, TASK_VERSION);
        goto out;
    }
    s = h5_read_str_attr(f, "task");
    if (!s || task_kind_parse(s, &ts->kind)) { errf(err, errlen, "task %s: attribute 'task' is '%s', expected 'pos' or 'genre'", path, s ? s : "(none)"); goto out; }
    free(s);
    s = h5_read_str_attr(f, "split");
    if (!s || strlen(s) >= sizeof ts->split) { errf(err, errlen, "task %s: attribute 'split' is missing", path); goto out; }
    snprintf(ts->split, sizeof ts->split, "%s", s);
    free(s); s = NULL;
    if (read_attr_i64(f, "seq_len", &T) || T < 3 || T > 1 << 20) { errf(err, errlen, "task %s: attribute 'seq_len' is missing or < 3", path); goto out; }
    if (read_attr_i64(f, "n_examples", &N) || N < 1) { errf(err, errlen, "task %s: attribute 'n_examples' is missing or < 1", path); goto out; }
    if (read_attr_i64(f, "n_labels", &nl) || nl < 2 || nl > TASK_MAX_LABELS) {
        errf(err, errlen, "task %s: attribute 'n_labels' is missing or outside [2, %d]", path, TASK_MAX_LABELS);
        goto out;
    }
    if (read_attr_i64(f, "n_docs", &nd) || nd < 1) { errf(err, errlen, "task %s: attribute 'n_docs' is missing or < 1", path); goto out; }
    if (read_attr_i64(f, "vocab_size", &vocab) || vocab <= TOK_N_SPECIAL) { errf(err, errlen, "task %s: attribute 'vocab_size' is missing or too small", path); goto out; }
    ts->T = (int)T; ts->N = N; ts->n_labels = (int)nl; ts->n_docs = (int)nd; ts->vocab_size = vocab;
    s = h5_read_str_attr(f, "label_names");
    {
        int k = 0;
        char *save = NULL;
        for (char *tok = s ? strtok_r(s, "\n", &save) : NULL; tok; tok = strtok_r(NULL, "\n", &save)) {
            if (k < TASK_MAX_LABELS) snprintf(ts->label_names[k], TASK_LABEL_LEN, "%s", tok);
            k++;
        }
        if (k != nl) { errf(err, errlen, "task %s: attribute 'label_names' has %d names for %lld labels", path, k, (long long)nl); goto out; }
    }
    free(s);
    s = h5_read_str_attr(f, "doc_names");
    ts->doc_names = xcalloc((size_t)nd, sizeof *ts->doc_names);
    {
        int k = 0;
        char *save = NULL;
        for (char *tok = s ? strtok_r(s, " ", &save) : NULL; tok; tok = strtok_r(NULL, " ", &save)) {
            if (k < nd) snprintf(ts->doc_names[k], sizeof ts->doc_names[k], "%s", tok);
            k++;
        }
        if (k != nd) { errf(err, errlen, "task %s: attribute 'doc_names' has %d names for %lld texts", path, k, (long long)nd); goto out; }
    }
    free(s);
    s = h5_read_str_attr(f, "tokenizer_hash");
    if (!s || strlen(s) != 16) { errf(err, errlen, "task %s: attribute 'tokenizer_hash' is missing", path); goto out; }
    snprintf(ts->tokenizer_hash, sizeof ts->tokenizer_hash, "%s", s);
    free(s); s = NULL;

    hsize_t dims[2];
    ts->ids = read_int_dataset(f, path, "input_ids", 2, H5T_NATIVE_INT32, 4, dims, err, errlen);
    if (!ts->ids) goto out;
    if ((int64_t)dims[0] != N || (int64_t)dims[1] != T) {
        errf(err, errlen, "task %s: dataset 'input_ids' has shape [%llu, %llu], expected [%lld, %lld]", path,
                (unsigned long long)dims[0], (unsigned long long)dims[1], (long long)N, (long long)T);
        goto out;
    }
    int pos = ts->kind == TASK_POS;
    ts->labels = read_int_dataset(f, path, "labels", pos ? 2 : 1, H5T_NATIVE_INT32, 4, dims, err, errlen);
    if (!ts->labels) goto out;
    if ((int64_t)dims[0] != N || (pos && (int64_t)dims[1] != T)) {
        errf(err, errlen, "task %s: dataset 'labels' has the wrong shape (expected [%lld%s])", path, (long long)N, pos ? ", seq_len" : "");
        goto out;
    }
    ts->doc = read_int_dataset(f, path, "doc", 1, H5T_NATIVE_INT32, 4, dims, err, errlen);
    if (!ts->doc) goto out;
    if ((int64_t)dims[0] != N) { errf(err, errlen, "task %s: dataset 'doc' has %llu entries, expected %lld", path, (unsigned long long)dims[0], (long long)N); goto out; }
    ts->doc_fingerprints = read_int_dataset(f, path, "doc_fingerprints", 1, H5T_NATIVE_UINT64, 8, dims, err, errlen);
    if (!ts->doc_fingerprints) goto out;
    if ((int64_t)dims[0] != nd) { errf(err, errlen, "task %s: dataset 'doc_fingerprints' has %llu entries, expected %lld", path, (unsigned long long)dims[0], (long long)nd); goto out; }
    ts->tokenizer = read_int_dataset(f, path, "tokenizer", 1, H5T_NATIVE_UINT8, 1, dims, err, errlen);
    if (!ts->tokenizer) goto out;
    ts->tokenizer_len = dims[0];
    char hash[17];
    tokenizer_hash_bytes(ts->tokenizer, ts->tokenizer_len, hash);
    if (strcmp(hash, ts->tokenizer_hash)) {
        errf(err, errlen, "task %s: the embedded tokenizer hashes to %s, the file says %s (corrupt file?)", path, hash, ts->tokenizer_hash);
        goto out;
    }
    {
        char e2[512];
        Tokenizer *tk = tokenizer_from_bytes(ts->tokenizer, ts->tokenizer_len, path, e2, sizeof e2);
        if (!tk) { errf(err, errlen, "task %s: embedded tokenizer: %s", path, e2); goto out; }
        int tv = tokenizer_vocab_size(tk);
        tokenizer_free(tk);
        if (tv != vocab) { errf(err, errlen, "task %s: vocab_size is %lld but the embedded tokenizer has %d ids", path, (long long)vocab, tv); goto out; }
    }
    for (int64_t n = 0; n < N; n++) {
        const int32_t *row = ts->ids + n * T;
        if (row[0] != TOK_CLS) { errf(err, errlen, "task %s: input_ids[%lld, 0] = %d, every example must start with [CLS] = %d", path, (long long)n, row[0], TOK_CLS); goto out; }
        for (int64_t i = 0; i < T; i++)
            if (row[i] < 0 || row[i] >= vocab) {
                errf(err, errlen, "task %s: input_ids[%lld, %lld] = %d is outside the vocabulary [0, %lld)", path, (long long)n, (long long)i, row[i], (long long)vocab);
                goto out;
            }
        if (ts->doc[n] < 0 || ts->doc[n] >= nd) { errf(err, errlen, "task %s: doc[%lld] = %d is outside [0, %lld)", path, (long long)n, ts->doc[n], (long long)nd); goto out; }
        if (pos) {
            for (int64_t i = 0; i < T; i++) {
                int32_t l = ts->labels[n * T + i];
                if (l == TASK_IGNORE) continue;
                if (l < 0 || l >= nl) {
                    errf(err, errlen, "task %s: labels[%lld, %lld] = %d is outside [0, %lld) and not the ignore value %d", path, (long long)n, (long long)i, l, (long long)nl, TASK_IGNORE);
                    goto out;
                }
                if (row[i] == TOK_PAD) { errf(err, errlen, "task %s: labels[%lld, %lld] = %d sits on padding", path, (long long)n, (long long)i, l); goto out; }
            }
        } else if (ts->labels[n] < 0 || ts->labels[n] >= nl) {
            errf(err, errlen, "task %s: labels[%lld] = %d is outside [0, %lld)", path, (long long)n, ts->labels[n], (long long)nl);
            goto out;
        }
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
    if (a->kind != b->kind) { errf(err, errlen, "task %s is '%s' but %s is '%s'", pb, task_kind_name(b->kind), pa, task_kind_name(a->kind)); return -1; }
    if (a->T != b->T) { errf(err, errlen, "task %s has seq_len %d but %s has %d", pb, b->T, pa, a->T); return -1; }
    if (strcmp(a->tokenizer_hash, b->tokenizer_hash)) {
        errf(err, errlen, "task %s was made with tokenizer %s but %s with %s (re-run deberta prep-task)", pb, b->tokenizer_hash, pa, a->tokenizer_hash);
        return -1;
    }
    if (a->n_labels != b->n_labels) { errf(err, errlen, "task %s has %d labels but %s has %d", pb, b->n_labels, pa, a->n_labels); return -1; }
    for (int l = 0; l < a->n_labels; l++)
        if (strcmp(a->label_names[l], b->label_names[l])) {
            errf(err, errlen, "task %s: label %d is '%s' but '%s' in %s", pb, l, b->label_names[l], a->label_names[l], pa);
            return -1;
        }
    return 0;
}

/* ---------------------------------------------------------------- baselines */

int64_t task_n_labelled(const TaskSet *ts) {
    if (ts->kind == TASK_GENRE) return ts->N;
    int64_t k = 0;
    for (int64_t i = 0; i < ts->N * ts->T; i++) k += ts->labels[i] != TASK_IGNORE;
    return k;
}

int task_majority_label(const TaskSet *train) {
    int64_t cnt[TASK_MAX_LABELS] = {0};
    int64_t n = train->kind == TASK_POS ? train->N * train->T : train->N;
    for (int64_t i = 0; i < n; i++)
        if (train->labels[i] != TASK_IGNORE) cnt[train->labels[i]]++;
    int best = 0;
    for (int l = 1; l < train->n_labels; l++) if (cnt[l] > cnt[best]) best = l;
    return best;
}

double task_constant_accuracy(const TaskSet *eval, int label) {
    int64_t n = eval->kind == TASK_POS ? eval->N * eval->T : eval->N, ok = 0, tot = 0;
    for (int64_t i = 0; i < n; i++)
        if (eval->labels[i] != TASK_IGNORE) { tot++; ok += eval->labels[i] == label; }
    return tot ? (double)ok / (double)tot : 0.0;
}

/* A word of a pos example: its sub-tokens run from its labelled position to the next labelled
 * position, [SEP] or padding.  Its key is an FNV-1a 64 hash of those ids. */
static uint64_t word_key(const TaskSet *ts, int64_t n, int i) {
    const int32_t *row = ts->ids + n * ts->T;
    const int32_t *lab = ts->labels + n * ts->T;
    uint64_t h = 0xcbf29ce484222325ull;
    for (int j = i; j < ts->T; j++) {
        if (j > i && (lab[j] != TASK_IGNORE || row[j] == TOK_SEP || row[j] == TOK_PAD)) break;
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

double task_word_tag_accuracy(const TaskSet *train, const TaskSet *eval) {
    if (train->kind != TASK_POS || eval->kind != TASK_POS) return 0.0;
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
    int64_t ok = 0, tot = 0;
    for (int64_t e = 0; e < eval->N; e++)
        for (int i = 0; i < eval->T; i++) {
            int32_t l = eval->labels[e * eval->T + i];
            if (l == TASK_IGNORE) continue;
            uint64_t key = word_key(eval, e, i);
            int64_t lo = 0, hi = nb;
            while (lo < hi) { int64_t mid = (lo + hi) / 2; if (best[mid].key < key) lo = mid + 1; else hi = mid; }
            int pred = lo < nb && best[lo].key == key ? best[lo].label : fallback;
            tot++;
            ok += pred == l;
        }
    free(best);
    return tot ? (double)ok / (double)tot : 0.0;
}
