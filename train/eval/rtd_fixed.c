/* rtd_fixed.c — the fixed-corruption RTD evaluation; see rtd_fixed.h. */
#include "train/eval/rtd_fixed.h"
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/base/util.h"
#include "data/h5util.h"
#include "train/eval/evaluate.h"

static int fail(char *err, size_t len, const char *path, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t len, const char *path, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(err, len, "fixed-corruption file %s: %s (re-make it: scripts/rtd_fixed.py SHARD_DIR)", path, msg);
    return -1;
}

/* An [N, T] integer dataset read as mtype into a new buffer; NULL with err set. */
static void *read_2d(hid_t f, const char *path, const char *name, hid_t mtype, size_t esize, int N, int T, char *err, size_t len) {
    char msg[512];
    hsize_t dims[2];
    void *buf = h5_read_dataset(f, name, H5T_INTEGER, 2, mtype, esize, dims, msg, sizeof msg);
    if (!buf) { fail(err, len, path, "%s", msg); return NULL; }
    if (dims[0] != (hsize_t)N || dims[1] != (hsize_t)T) {
        fail(err, len, path, "dataset '%s' is not of shape [n_seq, seq_len] = [%d, %d]", name, N, T);
        free(buf);
        return NULL;
    }
    return buf;
}

/* Reads and validates path (sealed; format, version, shapes, ids below vocab_size, 0/1 masks).
 * 0, or -1 with one line naming the file in err. */
static int rtd_fixed_read(const char *path, RtdFixed *fx, char *err, size_t errlen) {
    memset(fx, 0, sizeof *fx);
    if (access(path, R_OK) != 0) return fail(err, errlen, path, "cannot open (%s)", strerror(errno));
    if (h5_seal_require("fixed-corruption file", path, "re-make it with scripts/rtd_fixed.py", err, errlen)) return -1;
    H5Quiet q;
    h5_quiet(&q);
    int rc = -1;
    char *s = NULL;
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    int64_t v, N, T;
    if (f < 0) { fail(err, errlen, path, "not an HDF5 file, or truncated"); goto out; }
    s = h5_read_str_attr(f, "format");
    if (!s || strcmp(s, RTD_FIXED_FORMAT)) { fail(err, errlen, path, "format is '%s', expected '%s'", s ? s : "(none)", RTD_FIXED_FORMAT); goto out; }
    free(s);
    s = h5_read_str_attr(f, "tokenizer_hash");
    if (!s || strlen(s) != 16) { fail(err, errlen, path, "attribute 'tokenizer_hash' is missing"); goto out; }
    snprintf(fx->tokenizer_hash, sizeof fx->tokenizer_hash, "%s", s);
    if (h5_read_int_attr(f, "version", H5T_NATIVE_INT64, &v) || v != RTD_FIXED_VERSION) { fail(err, errlen, path, "version is not %d", RTD_FIXED_VERSION); goto out; }
    if (h5_read_int_attr(f, "n_seq", H5T_NATIVE_INT64, &N) || N < 1 || N > 1 << 24) { fail(err, errlen, path, "attribute 'n_seq' is missing or not in [1, 2^24]"); goto out; }
    if (h5_read_int_attr(f, "seq_len", H5T_NATIVE_INT64, &T) || T < 3 || T > 1 << 16) { fail(err, errlen, path, "attribute 'seq_len' is missing or not in [3, 65536]"); goto out; }
    if (h5_read_int_attr(f, "vocab_size", H5T_NATIVE_INT64, &fx->vocab_size) || fx->vocab_size < 6) { fail(err, errlen, path, "attribute 'vocab_size' is missing"); goto out; }
    if (h5_read_int_attr(f, "counter_flagged", H5T_NATIVE_INT64, &fx->counter_flagged) || h5_read_f64_attr(f, "counter_auc", &fx->counter_auc) ||
        h5_read_f64_attr(f, "counter_precision", &fx->counter_precision) || h5_read_f64_attr(f, "counter_accuracy", &fx->counter_accuracy) ||
        h5_read_f64_attr(f, "baseline_accuracy", &fx->baseline_accuracy)) {
        fail(err, errlen, path, "an attribute of the count detector (counter_auc, counter_flagged, counter_precision, counter_accuracy, baseline_accuracy) is missing");
        goto out;
    }
    fx->N = (int)N, fx->T = (int)T;
    const size_t n = (size_t)N * T;
    if (!(fx->ids = read_2d(f, path, "input_ids", H5T_NATIVE_INT32, 4, fx->N, fx->T, err, errlen))) goto out;
    if (!(fx->original = read_2d(f, path, "original_ids", H5T_NATIVE_INT32, 4, fx->N, fx->T, err, errlen))) goto out;
    if (!(fx->mask = read_2d(f, path, "attention_mask", H5T_NATIVE_INT32, 4, fx->N, fx->T, err, errlen))) goto out;
    if (!(fx->scored = read_2d(f, path, "scored", H5T_NATIVE_INT8, 1, fx->N, fx->T, err, errlen))) goto out;
    if (!(fx->replaced = read_2d(f, path, "replaced", H5T_NATIVE_INT8, 1, fx->N, fx->T, err, errlen))) goto out;
    for (size_t i = 0; i < n; i++) {
        const long r = (long)(i / (size_t)T), c = (long)(i % (size_t)T);
        if (fx->ids[i] < 0 || fx->ids[i] >= fx->vocab_size || fx->original[i] < 0 || fx->original[i] >= fx->vocab_size) {
            fail(err, errlen, path, "sequence %ld, position %ld: id outside [0, vocab_size %lld)", r, c, (long long)fx->vocab_size);
            goto out;
        }
        if ((fx->mask[i] | fx->scored[i] | fx->replaced[i]) & ~1) { fail(err, errlen, path, "sequence %ld, position %ld: a mask that is not 0/1", r, c); goto out; }
        if ((fx->scored[i] && !fx->mask[i]) || (fx->replaced[i] && !fx->scored[i]) || fx->replaced[i] != (fx->ids[i] != fx->original[i])) {
            fail(err, errlen, path, "sequence %ld, position %ld: 'replaced', 'scored', 'attention_mask' and the ids disagree", r, c);
            goto out;
        }
        fx->n_scored += fx->scored[i];
        fx->n_replaced += fx->replaced[i];
    }
    if (!fx->n_replaced || fx->n_replaced == fx->n_scored) { fail(err, errlen, path, "no replaced token, or nothing original"); goto out; }
    rc = 0;
out:
    free(s);
    if (f >= 0) H5Fclose(f);
    h5_loud(&q);
    if (rc) rtd_fixed_free(fx);
    return rc;
}

int rtd_fixed_open_dir(const char *dir, const ModelConfig *cfg, const char *tokenizer_hash, RtdFixed *fx, char *err, size_t errlen) {
    memset(fx, 0, sizeof *fx);
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, RTD_FIXED_FILE);
    if (access(path, F_OK) != 0) return 0;
    if (rtd_fixed_read(path, fx, err, errlen)) return -1;
    int bad = 0;
    if (fx->vocab_size != cfg->vocab_size) bad = fail(err, errlen, path, "vocab_size %lld, the model's is %d", (long long)fx->vocab_size, cfg->vocab_size);
    else if (tokenizer_hash && strcmp(tokenizer_hash, fx->tokenizer_hash))
        bad = fail(err, errlen, path, "made with tokenizer %s, the shards have %s", fx->tokenizer_hash, tokenizer_hash);
    if (bad) {
        rtd_fixed_free(fx);
        return -1;
    }
    if (fx->T > cfg->max_seq_len) { /* not this model's: skipped, with a note */
        snprintf(err, errlen, "%s: seq_len %d is above the model's max_seq_len %d: no fixed-corruption figures", path, fx->T, cfg->max_seq_len);
        rtd_fixed_free(fx);
        return 2;
    }
    return 1;
}

void rtd_fixed_free(RtdFixed *fx) {
    free(fx->ids);
    free(fx->original);
    free(fx->mask);
    free(fx->scored);
    free(fx->replaced);
    memset(fx, 0, sizeof *fx);
}

RtdFixedResult rtd_fixed_eval(const Electra *m, Tape *t, const RtdFixed *fx, int B) {
    RtdFixedResult r;
    memset(&r, 0, sizeof r);
    const int T = fx->T;
    Scored *sc = xmalloc((size_t)fx->n_scored * sizeof *sc);
    int32_t *labels = xmalloc((size_t)B * T * sizeof *labels);
    long ns = 0, ok = 0, flagged_ok = 0;
    const int saved_training = t->training;
    t->training = 0;
    for (int s0 = 0; s0 < fx->N; s0 += B) {
        const int b = fx->N - s0 < B ? fx->N - s0 : B;
        const size_t o = (size_t)s0 * T;
        for (long i = 0; i < (long)b * T; i++) labels[i] = fx->replaced[o + i] ? fx->original[o + i] : 0;
        ElectraInput in = {.B = b, .T = T, .input_ids = fx->ids + o, .attention_mask = fx->mask + o, .labels = labels};
        DiscOut d;
        tape_reset(t);
        tape_nograd_begin(t);
        discriminator_forward(t, m, &in, fx->ids + o, &d);
        tape_nograd_end(t);
        for (long i = 0; i < (long)b * T; i++) {
            if (!fx->scored[o + i]) continue;
            const float z = (float)d.logits->data[i];
            const int y = fx->replaced[o + i];
            sc[ns].logit = z;
            sc[ns++].y = y;
            ok += (z > 0) == y;
            if (z > 0) {
                r.flagged++;
                flagged_ok += y;
            }
            r.n_replaced += y;
        }
    }
    tape_reset(t);
    t->training = saved_training;
    r.n_scored = ns;
    r.accuracy = ns ? (double)ok / ns : NAN;
    r.baseline = ns ? 1.0 - (double)r.n_replaced / ns : NAN;
    r.precision = r.flagged ? (double)flagged_ok / r.flagged : NAN;
    r.auc = eval_auc(sc, ns);
    free(sc);
    free(labels);
    return r;
}
