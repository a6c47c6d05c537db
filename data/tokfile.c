/* tokfile.c — a tokenizer file of either kind (see tokfile.h). */
#include "data/tokfile.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"

static const char BPE_MAGIC[8] = {'D', 'B', 'T', 'O', 'K', 'E', 'N', 'Z'};

/* 1 when the bytes start with our tokenizer file's magic (else they are read as a SentencePiece model). */
static int tokfile_is_bpe(const uint8_t *buf, size_t len) { return len >= 8 && !memcmp(buf, BPE_MAGIC, 8); }

static int cmp_i32(const void *a, const void *b) {
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* The never-masked ids: the five special ids plus extra[0..n_extra), sorted, duplicates removed. */
static void set_special(TokFile *t, const int32_t *extra, int n_extra) {
    const int32_t five[5] = {t->sp.pad, t->sp.cls, t->sp.sep, t->sp.unk, t->sp.mask};
    t->special = xmalloc((size_t)(5 + n_extra) * sizeof(int32_t));
    memcpy(t->special, five, sizeof five);
    if (n_extra) memcpy(t->special + 5, extra, (size_t)n_extra * sizeof(int32_t));
    qsort(t->special, (size_t)(5 + n_extra), sizeof(int32_t), cmp_i32);
    int n = 0;
    for (int i = 0; i < 5 + n_extra; i++)
        if (n == 0 || t->special[i] != t->special[n - 1]) t->special[n++] = t->special[i];
    t->n_special = n;
}

static void set_hash(TokFile *t) {
    size_t n;
    const uint8_t *b = tokfile_bytes(t, &n);
    tokenizer_hash_bytes(b, n, t->hash);
}

TokFile *tokfile_from_bpe(Tokenizer *tk) {
    TokFile *t = xcalloc(1, sizeof *t);
    t->kind = TOKFILE_BPE;
    t->bpe = tk;
    t->vocab_size = tokenizer_vocab_size(tk);
    t->sp = special_ids_bpe();
    set_special(t, NULL, 0);
    set_hash(t);
    return t;
}

/* The special ids of a SentencePiece model, by DeBERTa-V3's piece names (tokfile.h). */
static int spm_specials(TokFile *t, const char *what, char *err, size_t errlen) {
    const SpmModel *m = t->spm;
    static const char *const names[4] = {"[PAD]", "[CLS]", "[SEP]", "[UNK]"};
    int32_t *ids[4] = {&t->sp.pad, &t->sp.cls, &t->sp.sep, &t->sp.unk};
    for (int k = 0; k < 4; k++) {
        *ids[k] = spm_piece_to_id(m, names[k], strlen(names[k]));
        if (*ids[k] < 0)
            return errf(err, errlen,
                        "%s: the SentencePiece model has no piece '%s' (the special tokens must be the pieces [PAD], [CLS], [SEP] and "
                        "[UNK] as in DeBERTa-V3's spm.model; train with pad_piece/bos_piece/eos_piece/unk_piece set to them)",
                        what, names[k]);
    }
    if (t->sp.unk != spm_unk_id(m))
        return errf(err, errlen, "%s: the SentencePiece piece '[UNK]' is id %d but the model's unknown piece is id %d", what,
                    t->sp.unk, spm_unk_id(m));
    const int n = spm_vocab_size(m);
    t->sp.mask = spm_piece_to_id(m, "[MASK]", 6);
    t->vocab_size = n;
    if (t->sp.mask < 0) { /* appended after the pieces, as DeBERTa's and Hugging Face's tokenizers do */
        t->sp.mask = n;
        t->vocab_size = n + 1;
        t->mask_appended = 1;
    }
    int32_t *ctl = xmalloc((size_t)n * sizeof(int32_t));
    int n_ctl = 0;
    for (int i = 0; i < n; i++)
        if (spm_type(m, i) == SPM_CONTROL) ctl[n_ctl++] = i;
    set_special(t, ctl, n_ctl);
    free(ctl);
    if (t->special[0] != 0) {
        size_t len;
        const char *p = spm_piece(m, 0, &len);
        return errf(err, errlen,
                    "%s: id 0 is the ordinary SentencePiece piece '%.*s', but masking labels use 0 for 'not masked': id 0 must "
                    "be [PAD], [CLS], [SEP], [UNK], [MASK] or a control piece",
                    what, (int)(len > 64 ? 64 : len), p);
    }
    return 0;
}

TokFile *tokfile_from_bytes(const uint8_t *buf, size_t len, const char *what, char *err, size_t errlen) {
    if (len == 0) return errf(err, errlen, "%s: " FILE_EMPTY, what), NULL;
    if (tokfile_is_bpe(buf, len)) {
        Tokenizer *tk = tokenizer_from_bytes(buf, len, what, err, errlen);
        return tk ? tokfile_from_bpe(tk) : NULL;
    }
    TokFile *t = xcalloc(1, sizeof *t);
    t->kind = TOKFILE_SPM;
    char e[1400];
    t->spm = spm_from_bytes(buf, len, what, e, sizeof e);
    if (!t->spm) { /* say that both kinds were tried; spm.c's reason without its "sentencepiece model <what>: " */
        char prefix[1100];
        snprintf(prefix, sizeof prefix, "sentencepiece model %.1000s: ", what);
        const char *reason = strncmp(e, prefix, strlen(prefix)) ? e : e + strlen(prefix);
        errf(err, errlen, "%s: not a deberta.c tokenizer file (no DBTOKENZ magic), and as a SentencePiece model: %s", what, reason);
    }
    if (!t->spm || spm_specials(t, what, err, errlen)) {
        tokfile_free(t);
        return NULL;
    }
    set_hash(t);
    return t;
}

TokFile *tokfile_load(const char *path, char *err, size_t errlen) {
    size_t n;
    char *buf = read_file(path, &n);
    if (!buf) return errf(err, errlen, "tokenizer %s: cannot open (%s)", path, strerror(errno)), NULL;
    char what[1100];
    snprintf(what, sizeof what, "tokenizer %s", path); /* as tokenizer_load words it */
    TokFile *t = tokfile_from_bytes((const uint8_t *)buf, n, what, err, errlen);
    free(buf);
    return t;
}

void tokfile_free(TokFile *t) {
    if (!t) return;
    if (t->bpe) tokenizer_free(t->bpe);
    spm_free(t->spm);
    free(t->special);
    free(t);
}

const uint8_t *tokfile_bytes(const TokFile *t, size_t *len) {
    return t->kind == TOKFILE_BPE ? tokenizer_bytes(t->bpe, len) : spm_bytes(t->spm, len);
}
