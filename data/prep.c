/* prep.c — the text -> shards pipeline (see prep.h). */
#include "data/prep.h"
#include "data/brown.h"
#include "data/corpus.h"
#include "data/shard.h"
#include "data/spm.h"
#include "data/tokenizer.h"
#include "data/tokfile.h"
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ENCODE_BLOCK 4096 /* documents encoded per parallel block */

typedef struct { uint64_t key; size_t idx; } SplitKey;
static int cmp_split(const void *a, const void *b) {
    const SplitKey *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The ids of one document into a fresh array (*k of them): our BPE through the thread's encoder (its
 * word cache lives across blocks), a SentencePiece model directly (spm_encode is thread-safe). */
static int32_t *encode_doc(const TokFile *tf, TokEncoder *enc, const char *text, size_t len, size_t *k) {
    if (tf->kind == TOKFILE_SPM) {
        int32_t *ids = spm_encode(tf->spm, text, len, k);
        return ids ? ids : xmalloc(sizeof(int32_t));
    }
    const int32_t *r = tok_encode(enc, text, len, k);
    int32_t *ids = xmalloc((*k ? *k : 1) * sizeof(int32_t));
    if (*k) memcpy(ids, r, *k * sizeof(int32_t));
    return ids;
}

/* Encodes the documents idx[0..n) and writes them as shards "<split>-NNNNN.h5". Returns #shards, or
 * -1 with err. */
static int write_split(const PrepConfig *c, const char *split, const TokFile *tf, const DocSet *ds, const size_t *idx,
                       size_t n, long long *tokens_out, char *err, size_t errlen) {
    const char *out = c->out;
    const long long shard_tokens = c->shard_tokens;
    size_t tlen;
    const uint8_t *tbytes = tokfile_bytes(tf, &tlen);
    ShardInfo info = {tf->vocab_size, tbytes, tlen, split, 0, &tf->sp};
    size_t cap_tok = 1 << 20, cap_doc = 1024;
    int32_t *toks = xmalloc(cap_tok * sizeof(int32_t));
    int64_t *offs = xmalloc((cap_doc + 1) * sizeof(int64_t));
    int64_t nt = 0, nd = 0;
    offs[0] = 0;
    int n_shards = 0;
    long long total = 0;
    const char **texts = xmalloc(ENCODE_BLOCK * sizeof(char *));
    size_t *lens = xmalloc(ENCODE_BLOCK * sizeof(size_t)), *nids = xmalloc(ENCODE_BLOCK * sizeof(size_t));
    int32_t **ids = xmalloc(ENCODE_BLOCK * sizeof(int32_t *));
    char path[4096], stage[64];
    int failed = 0;
    snprintf(stage, sizeof stage, "encoding %s", split);
    int nthreads = omp_get_max_threads();
    TokEncoder **enc = xcalloc((size_t)nthreads, sizeof(TokEncoder *));
    if (tf->kind == TOKFILE_BPE)
        for (int t = 0; t < nthreads; t++) enc[t] = tok_encoder_new(tf->bpe);
    for (size_t b0 = 0; b0 < n; b0 += ENCODE_BLOCK) {
        size_t nb = MIN((size_t)ENCODE_BLOCK, n - b0);
        for (size_t i = 0; i < nb; i++) { texts[i] = ds->buf + ds->off[idx[b0 + i]]; lens[i] = ds->len[idx[b0 + i]]; }
#pragma omp parallel for schedule(dynamic, 16)
        for (size_t i = 0; i < nb; i++) ids[i] = encode_doc(tf, enc[omp_get_thread_num()], texts[i], lens[i], &nids[i]);
        for (size_t i = 0; i < nb; i++) {
            if (failed) { free(ids[i]); continue; }
            if ((size_t)nt + nids[i] > cap_tok) {
                while ((size_t)nt + nids[i] > cap_tok) cap_tok *= 2;
                toks = xrealloc(toks, cap_tok * sizeof(int32_t));
            }
            if ((size_t)nd + 1 > cap_doc) { cap_doc *= 2; offs = xrealloc(offs, (cap_doc + 1) * sizeof(int64_t)); }
            memcpy(toks + nt, ids[i], nids[i] * sizeof(int32_t));
            nt += (int64_t)nids[i];
            offs[++nd] = nt;
            free(ids[i]);
            int last = b0 + i + 1 == n;
            if (nt >= shard_tokens || (last && nd > 0)) {
                snprintf(path, sizeof path, "%s/%s-%05d.h5", out, split, n_shards);
                info.index = n_shards;
                if (shard_write(path, toks, offs, nd, &info, err, errlen) != 0) { failed = 1; continue; }
                total += nt;
                n_shards++;
                nt = nd = 0;
            }
        }
        if (failed) break;
        if (c->progress) c->progress(stage, (double)(b0 + nb) / (double)n, c->progress_ctx);
    }
    for (int t = 0; t < nthreads; t++)
        if (enc[t]) tok_encoder_free(enc[t]);
    free(enc);
    free(texts); free(lens); free(nids); free(ids); free(toks); free(offs);
    if (failed) return -1;
    /* remove shards of an earlier run that this run did not overwrite */
    for (int k = n_shards;; k++) {
        snprintf(path, sizeof path, "%s/%s-%05d.h5", out, split, k);
        if (unlink(path) != 0) break;
    }
    *tokens_out = total;
    return n_shards;
}

static int cmp_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Deterministic split by document: the n_val documents with the smallest keys of the seed's stream
 * go to validation, and so does every document whose fingerprint is in the holdout list.  Fills
 * train_idx / val_idx (ascending document order). */
static void split_docs(const DocSet *ds, const PrepConfig *c, size_t *train_idx, size_t *n_train, size_t *val_idx, size_t *n_val,
                       size_t *n_held_out) {
    size_t nv = (size_t)llround(c->val_fraction * (double)ds->n);
    if (c->val_fraction > 0 && nv == 0 && ds->n >= 2) nv = 1;
    if (nv >= ds->n) nv = ds->n - 1;
    SplitKey *keys = xmalloc(ds->n * sizeof(SplitKey));
    for (size_t i = 0; i < ds->n; i++)
        keys[i] = (SplitKey){rng_u64(c->seed, rng_stream(RNG_SHUFFLE, 0, 7), i), i};
    qsort(keys, ds->n, sizeof(SplitKey), cmp_split);
    char *is_val = xcalloc(ds->n, 1);
    for (size_t i = 0; i < nv; i++) is_val[keys[i].idx] = 1;
    free(keys);
    *n_held_out = 0;
    if (c->n_holdout) {
        uint64_t *h = xmalloc(c->n_holdout * sizeof(uint64_t));
        memcpy(h, c->holdout, c->n_holdout * sizeof(uint64_t));
        qsort(h, c->n_holdout, sizeof(uint64_t), cmp_u64);
        for (size_t i = 0; i < ds->n; i++) {
            uint64_t fp = text_fingerprint(ds->buf + ds->off[i], ds->len[i]);
            if (bsearch(&fp, h, c->n_holdout, sizeof(uint64_t), cmp_u64)) { is_val[i] = 1; (*n_held_out)++; }
        }
        free(h);
    }
    *n_train = *n_val = 0;
    for (size_t i = 0; i < ds->n; i++) {
        if (is_val[i]) val_idx[(*n_val)++] = i; else train_idx[(*n_train)++] = i;
    }
    free(is_val);
}

/* The tokenizer: loaded from c->tokenizer (ours or a SentencePiece model), or trained on the train
 * documents. */
static TokFile *get_tokenizer(const PrepConfig *c, const DocSet *ds, const size_t *train_idx, size_t n_train, char *err, size_t errlen) {
    if (c->tokenizer) return tokfile_load(c->tokenizer, err, errlen);
    TokTrainConfig tc;
    tok_train_config_default(&tc);
    tc.vocab_size = (int)c->vocab_size;
    tc.progress = c->progress;
    tc.progress_ctx = c->progress_ctx;
    const char **texts = xmalloc(n_train * sizeof(char *));
    size_t *lens = xmalloc(n_train * sizeof(size_t));
    for (size_t i = 0; i < n_train; i++) { texts[i] = ds->buf + ds->off[train_idx[i]]; lens[i] = ds->len[train_idx[i]]; }
    char e[1024];
    Tokenizer *tk = tokenizer_train(texts, lens, n_train, &tc, e, sizeof e);
    free(texts); free(lens);
    if (!tk) return errf(err, errlen, "prep: tokenizer training: %s", e), NULL;
    return tokfile_from_bpe(tk);
}

/* OUT/tokenizer.bin + OUT/tokenizer.json (ours) or OUT/spm.model (a copy of the SentencePiece model);
 * the other kind's files of an earlier run in OUT are removed, so that the folder names one tokenizer
 * (deberta pretrain compares it with the shards'). */
static int save_tokenizer(const TokFile *tf, const char *out, char *err, size_t errlen) {
    char path[4096];
    static const char *const bpe_files[2] = {"tokenizer.bin", "tokenizer.json"};
    if (tf->kind == TOKFILE_BPE) {
        snprintf(path, sizeof path, "%s/tokenizer.bin", out);
        if (tokenizer_save(tf->bpe, path, err, errlen) != 0) return -1;
        snprintf(path, sizeof path, "%s/tokenizer.json", out);
        if (tokenizer_write_hf_json(tf->bpe, path, err, errlen) != 0) return -1;
        snprintf(path, sizeof path, "%s/spm.model", out);
        unlink(path);
        return 0;
    }
    size_t n;
    const uint8_t *bytes = tokfile_bytes(tf, &n);
    snprintf(path, sizeof path, "%s/spm.model", out);
    if (write_file_atomic(path, bytes, n) != 0) return errf(err, errlen, "%s: write failed (%s)", path, strerror(errno));
    for (int k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s", out, bpe_files[k]);
        unlink(path);
    }
    return 0;
}

int prep_run(const PrepConfig *c, PrepResult *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    char **files = NULL;
    size_t n_files = 0;
    DocSet ds = {0};
    size_t *train_idx = NULL, *val_idx = NULL;
    TokFile *tk = NULL;
    int rc = -1;

    /* 1. inputs */
    if (corpus_list_files(c->inputs, c->n_inputs, &files, &n_files, err, errlen) != 0) return -1;
    for (size_t i = 0; i < n_files; i++) {
        if (corpus_read_file(files[i], &ds, err, errlen) != 0) goto out;
        if (c->progress) c->progress("reading", (double)(i + 1) / (double)n_files, c->progress_ctx);
    }
    if (ds.n == 0) { errf(err, errlen, "inputs: no documents found in %zu file(s) (all empty or blank)", n_files); goto out; }

    /* 2. deterministic split by document */
    train_idx = xmalloc(ds.n * sizeof(size_t));
    val_idx = xmalloc(ds.n * sizeof(size_t));
    split_docs(&ds, c, train_idx, &r->n_train, val_idx, &r->n_val, &r->n_held_out);
    if (r->n_train == 0) { errf(err, errlen, "prep: every document is held out for validation; nothing is left to train on"); goto out; }

    /* 3. tokenizer: a given file is read before the output folder is made (a bad one leaves nothing),
     * one to train after (a folder that cannot be made is reported before minutes of training) */
    double t = now_seconds();
    if (c->tokenizer && !(tk = get_tokenizer(c, &ds, train_idx, r->n_train, err, errlen))) goto out;
    struct stat out_st;
    if (mkdir_p(c->out) != 0 || stat(c->out, &out_st) != 0 || !S_ISDIR(out_st.st_mode)) {
        errf(err, errlen, "output %s: cannot create folder (%s)", c->out, strerror(errno));
        goto out;
    }
    if (!tk && !(tk = get_tokenizer(c, &ds, train_idx, r->n_train, err, errlen))) goto out;
    r->seconds_tokenizer = now_seconds() - t;
    if (save_tokenizer(tk, c->out, err, errlen) != 0) goto out;

    /* 4. encode and write shards */
    t = now_seconds();
    r->shards_train = write_split(c, "train", tk, &ds, train_idx, r->n_train, &r->tokens_train, err, errlen);
    if (r->shards_train < 0) goto out;
    r->shards_val = write_split(c, "val", tk, &ds, val_idx, r->n_val, &r->tokens_val, err, errlen);
    if (r->shards_val < 0) goto out;
    r->seconds_encode = now_seconds() - t;
    r->n_files = n_files;
    r->n_docs = ds.n;
    r->text_bytes = ds.buf_len;
    r->vocab_size = tk->vocab_size;
    r->kind = tk->kind;
    r->special = tk->sp;
    r->mask_appended = tk->mask_appended;
    memcpy(r->tokenizer_hash, tk->hash, sizeof r->tokenizer_hash);
    rc = 0;
out:
    for (size_t i = 0; i < n_files; i++) free(files[i]);
    free(files);
    free(train_idx); free(val_idx);
    tokfile_free(tk);
    docset_free(&ds);
    return rc;
}
