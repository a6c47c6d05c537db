/* shard.c — HDF5 shard writer and validating reader.  See shard.h and docs/FORMATS.md. */
#include "data/shard.h"
#include "data/h5util.h"
#include "data/tokfile.h"
#include "autograd/base/util.h"
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct Shard {
    char *path;
    hid_t file, tokens, offsets;
    int64_t n_tokens, n_docs, vocab_size, max_id;
    char hash[17];
    TokFileKind kind;
    SpecialIds sp;
    int32_t *never_masked;
    int n_never_masked;
};

/* ---------------------------------------------------------------- writing */


/* A 1-D dataset of n values; compressed: chunked, shuffled, deflated and checksummed. */
static int write_1d(H5Out *o, const char *name, hid_t ftype, hid_t mtype, const void *data, hsize_t n, int compress) {
    H5Store st = {.chunk = {n < SHARD_CHUNK ? n : SHARD_CHUNK}, .shuffle = 1, .deflate = 4, .fletcher32 = 1};
    return h5out_dataset(o, H5OUT_ROOT, name, ftype, mtype, 1, &n, data, compress ? &st : NULL);
}

int shard_write(const char *path, const int32_t *tokens, const int64_t *doc_offsets, int64_t n_docs,
                const ShardInfo *info, char *err, size_t errlen) {
    if (n_docs < 1 || doc_offsets[0] != 0 || doc_offsets[n_docs] < 1)
        return errf(err, errlen, "shard %s: refusing to write an empty shard", path);
    int64_t n_tokens = doc_offsets[n_docs], max_id = 0;
    for (int64_t i = 0; i < n_tokens; i++) max_id = MAX(max_id, (int64_t)tokens[i]);
    H5Out o;
    if (h5out_create(&o, "shard", path, 1, err, errlen) != 0) return -1;
    o.hint = "free space and re-run deberta prep";
    char hash[17];
    tokenizer_hash_bytes(info->tokenizer, info->tokenizer_len, hash);
    h5out_attr_str(&o, "format", SHARD_FORMAT);
    h5out_attr_i64(&o, "version", SHARD_VERSION);
    h5out_attr_i64(&o, "vocab_size", info->vocab_size);
    h5out_attr_str(&o, "tokenizer_hash", hash);
    const SpecialIds sp = info->special ? *info->special : special_ids_bpe();
    h5out_attr_i64(&o, "pad_id", sp.pad);
    h5out_attr_i64(&o, "cls_id", sp.cls);
    h5out_attr_i64(&o, "sep_id", sp.sep);
    h5out_attr_i64(&o, "unk_id", sp.unk);
    h5out_attr_i64(&o, "mask_id", sp.mask);
    h5out_attr_i64(&o, "n_docs", n_docs);
    h5out_attr_i64(&o, "n_tokens", n_tokens);
    h5out_attr_i64(&o, "max_token_id", max_id);
    h5out_attr_str(&o, "split", info->split ? info->split : "");
    h5out_attr_i64(&o, "shard_index", info->index);
    int small = info->vocab_size <= 65536;
    write_1d(&o, "tokens", small ? H5T_STD_U16LE : H5T_STD_I32LE, H5T_NATIVE_INT32, tokens, (hsize_t)n_tokens, 1);
    /* Test hook (tests/test_shard.c): die here, with the file half-written under its temporary name. */
    if (getenv("DEBERTA_SHARD_CRASH")) raise(SIGKILL);
    write_1d(&o, "doc_offsets", H5T_STD_I64LE, H5T_NATIVE_INT64, doc_offsets, (hsize_t)n_docs + 1, 1);
    write_1d(&o, "tokenizer", H5T_STD_U8LE, H5T_NATIVE_UINT8, info->tokenizer, (hsize_t)info->tokenizer_len, 0);
    return h5out_close(&o, err, errlen);
}

/* ---------------------------------------------------------------- reading */

#define FAIL(...) do { errf(err, errlen, __VA_ARGS__); goto fail; } while (0)
#define REDO "(re-run deberta prep)"

static int read_attr_i64(hid_t f, const char *name, int64_t *v) { return h5_read_int_attr(f, name, H5T_NATIVE_INT64, v); }
/* A string attribute, fixed or variable length, read whole whatever its padding (h5py rewrites
 * strings as NULLPAD without a terminating NUL). */
static int read_attr_str(hid_t f, const char *name, char *buf, size_t n) {
    if (H5Aexists(f, name) <= 0) return -1;
    char *s = h5_read_str_attr(f, name);
    if (!s) return -2;
    snprintf(buf, n, "%s", s);
    free(s);
    return 0;
}

static const char *dtype_name(hid_t t) {
    H5T_class_t c = H5Tget_class(t);
    size_t s = H5Tget_size(t);
    if (c == H5T_INTEGER) {
        int sgn = H5Tget_sign(t) == H5T_SGN_2;
        static const char *names[2][9] = {{0, "uint8", "uint16", 0, "uint32", 0, 0, 0, "uint64"},
                                          {0, "int8", "int16", 0, "int32", 0, 0, 0, "int64"}};
        if (s <= 8 && names[sgn][s]) return names[sgn][s];
        return "integer";
    }
    if (c == H5T_FLOAT) return s == 4 ? "float32" : s == 8 ? "float64" : "float";
    if (c == H5T_STRING) return "string";
    return "non-numeric";
}

/* 1 when the dataset carries HDF5's Fletcher-32 checksum filter. */
static int has_checksum(hid_t d) {
    hid_t p = H5Dget_create_plist(d);
    unsigned flags = 0, cd[8];
    size_t ncd = 8;
    char name[64];
    const int ok = p >= 0 && H5Pget_filter_by_id2(p, H5Z_FILTER_FLETCHER32, &flags, &ncd, cd, sizeof name, name, NULL) >= 0;
    if (p >= 0) H5Pclose(p);
    return ok;
}

/* Opens a 1-D dataset and checks rank and length; returns the dataset id or -1 with a message. */
static hid_t open_1d(hid_t f, const char *path, const char *name, int64_t want_len, char *err, size_t errlen) {
    if (H5Lexists(f, name, H5P_DEFAULT) <= 0) return errf(err, errlen, "shard %s: missing dataset '%s' " REDO, path, name);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) { errf(err, errlen, "shard %s: cannot open dataset '%s' (file corrupt?) " REDO, path, name); return -1; }
    hid_t sp = H5Dget_space(d);
    int rank = H5Sget_simple_extent_ndims(sp);
    hsize_t dims[8] = {0};
    if (rank == 1) H5Sget_simple_extent_dims(sp, dims, NULL);
    H5Sclose(sp);
    if (rank != 1) {
        errf(err, errlen, "shard %s: dataset '%s' has %d dimensions, expected 1 " REDO, path, name, rank);
        H5Dclose(d);
        return -1;
    }
    if (want_len >= 0 && (int64_t)dims[0] != want_len) {
        errf(err, errlen, "shard %s: dataset '%s' has %lld elements, expected %lld from the attributes " REDO,
                path, name, (long long)dims[0], (long long)want_len);
        H5Dclose(d);
        return -1;
    }
    return d;
}

static int read_1d(hid_t d, hid_t mtype, int64_t start, int64_t count, void *out) {
    if (count <= 0) return 0;
    hsize_t st[1] = {(hsize_t)start}, cn[1] = {(hsize_t)count};
    hid_t fs = H5Dget_space(d);
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, st, NULL, cn, NULL);
    hid_t ms = H5Screate_simple(1, cn, NULL);
    herr_t rc = H5Dread(d, mtype, ms, fs, H5P_DEFAULT, out);
    H5Sclose(ms);
    H5Sclose(fs);
    return rc < 0 ? -1 : 0;
}

Shard *shard_open(const char *path, int check_ids, char *err, size_t errlen) {
    FILE *probe = fopen(path, "rb");
    if (!probe) { errf(err, errlen, "shard %s: cannot open (%s)", path, strerror(errno)); return NULL; }
    fclose(probe);
    H5Quiet q;
    h5_quiet(&q);
    Shard *s = xcalloc(1, sizeof *s);
    s->path = xstrdup(path);
    s->file = s->tokens = s->offsets = -1;
    hid_t tokd = -1;
    int64_t *obuf = NULL;
    int32_t *tbuf = NULL;
    /* the seal first: libhdf5 never sees a damaged file (it can crash decoding corrupt metadata) */
    if (h5_seal_require("shard", path, "re-run deberta prep", err, errlen) != 0) goto fail;
    if (H5Fis_hdf5(path) <= 0) FAIL("shard %s: not an HDF5 file " REDO, path);
    s->file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (s->file < 0) FAIL("shard %s: cannot open as HDF5 (truncated or corrupt file) " REDO, path);
    char fmt[64] = "";
    if (read_attr_str(s->file, "format", fmt, sizeof fmt) != 0 || strcmp(fmt, SHARD_FORMAT) != 0)
        FAIL("shard %s: attribute 'format' is '%s', expected '%s' (not a deberta.c shard)", path, fmt, SHARD_FORMAT);
    int64_t version = -1;
    if (read_attr_i64(s->file, "version", &version) != 0 || version != SHARD_VERSION)
        FAIL("shard %s: format version %lld, this build reads version %d " REDO, path, (long long)version, SHARD_VERSION);
    int64_t nt = -1, nd = -1, v = -1;
    if (read_attr_i64(s->file, "n_tokens", &nt) != 0 || nt < 1) FAIL("shard %s: attribute 'n_tokens' missing or < 1 " REDO, path);
    if (read_attr_i64(s->file, "n_docs", &nd) != 0 || nd < 1) FAIL("shard %s: attribute 'n_docs' missing or < 1 " REDO, path);
    if (read_attr_i64(s->file, "vocab_size", &v) != 0 || v <= TOK_MASK || v > INT32_MAX)
        FAIL("shard %s: attribute 'vocab_size' missing or out of range " REDO, path);
    s->n_tokens = nt; s->n_docs = nd; s->vocab_size = v;
    /* the special ids: checked against the embedded tokenizer's below */
    static const char *const special_names[5] = {"pad_id", "cls_id", "sep_id", "unk_id", "mask_id"};
    int64_t special_attr[5];
    for (int i = 0; i < 5; i++) {
        special_attr[i] = -1;
        if (read_attr_i64(s->file, special_names[i], &special_attr[i]) != 0)
            FAIL("shard %s: attribute '%s' is missing or not an integer " REDO, path, special_names[i]);
    }
    if (read_attr_str(s->file, "tokenizer_hash", s->hash, sizeof s->hash) != 0 || strlen(s->hash) != 16)
        FAIL("shard %s: attribute 'tokenizer_hash' missing or malformed " REDO, path);

    /* tokens */
    s->tokens = open_1d(s->file, path, "tokens", nt, err, errlen);
    if (s->tokens < 0) goto fail;
    {
        hid_t t = H5Dget_type(s->tokens);
        int ok = H5Tget_class(t) == H5T_INTEGER &&
                 ((H5Tget_size(t) == 2 && H5Tget_sign(t) == H5T_SGN_NONE) || (H5Tget_size(t) == 4 && H5Tget_sign(t) == H5T_SGN_2));
        const char *dn = dtype_name(t);
        H5Tclose(t);
        if (!ok) FAIL("shard %s: dataset 'tokens' has dtype %s, expected uint16 or int32 " REDO, path, dn);
        if (!has_checksum(s->tokens)) FAIL("shard %s: dataset 'tokens' has no checksum, which version %d requires " REDO, path, SHARD_VERSION);
    }
    /* doc_offsets: 0, monotonic, last == n_tokens (streamed) */
    s->offsets = open_1d(s->file, path, "doc_offsets", nd + 1, err, errlen);
    if (s->offsets < 0) goto fail;
    {
        hid_t t = H5Dget_type(s->offsets);
        int ok = H5Tget_class(t) == H5T_INTEGER && H5Tget_size(t) == 8 && H5Tget_sign(t) == H5T_SGN_2;
        const char *dn = dtype_name(t);
        H5Tclose(t);
        if (!ok) FAIL("shard %s: dataset 'doc_offsets' has dtype %s, expected int64 " REDO, path, dn);
        if (!has_checksum(s->offsets)) FAIL("shard %s: dataset 'doc_offsets' has no checksum, which version %d requires " REDO, path, SHARD_VERSION);
        obuf = xmalloc(SHARD_CHUNK * sizeof(int64_t));
        int64_t prev = 0;
        for (int64_t st = 0; st < nd + 1; st += SHARD_CHUNK) {
            int64_t cn = MIN((int64_t)SHARD_CHUNK, nd + 1 - st);
            if (read_1d(s->offsets, H5T_NATIVE_INT64, st, cn, obuf) != 0)
                FAIL("shard %s: cannot read 'doc_offsets': checksum mismatch or truncated data (the file is corrupt) " REDO, path);
            for (int64_t i = 0; i < cn; i++) {
                int64_t x = obuf[i];
                if (st + i == 0 && x != 0) FAIL("shard %s: doc_offsets[0] is %lld, expected 0 " REDO, path, (long long)x);
                if (x < prev) FAIL("shard %s: doc_offsets not monotonic at document %lld " REDO, path, (long long)(st + i));
                prev = x;
            }
        }
        if (prev != nt) FAIL("shard %s: last doc_offset is %lld, expected n_tokens = %lld " REDO, path, (long long)prev, (long long)nt);
        free(obuf); obuf = NULL;
    }
    /* tokenizer: bytes match the hash and the vocab size */
    tokd = open_1d(s->file, path, "tokenizer", -1, err, errlen);
    if (tokd < 0) goto fail;
    {
        hid_t t = H5Dget_type(tokd);
        int ok = H5Tget_class(t) == H5T_INTEGER && H5Tget_size(t) == 1;
        H5Tclose(t);
        if (!ok) FAIL("shard %s: dataset 'tokenizer' is not a byte array " REDO, path);
        H5Dclose(tokd); tokd = -1;
        size_t tlen;
        uint8_t *tb = shard_read_tokenizer(s, &tlen, err, errlen);
        if (!tb) goto fail;
        char h[17];
        tokenizer_hash_bytes(tb, tlen, h);
        char terr[1400];
        TokFile *tk = tokfile_from_bytes(tb, tlen, "embedded tokenizer", terr, sizeof terr);
        free(tb);
        if (strcmp(h, s->hash) != 0) { tokfile_free(tk); FAIL("shard %s: tokenizer bytes hash to %s, attribute says %s " REDO, path, h, s->hash); }
        if (!tk) FAIL("shard %s: %s " REDO, path, terr);
        const int tv = tk->vocab_size;
        s->kind = tk->kind;
        s->sp = tk->sp;
        s->n_never_masked = tk->n_special;
        s->never_masked = xmalloc((size_t)tk->n_special * sizeof(int32_t));
        memcpy(s->never_masked, tk->special, (size_t)tk->n_special * sizeof(int32_t));
        tokfile_free(tk);
        if (tv != v) FAIL("shard %s: vocab_size %lld but the embedded tokenizer has %d tokens " REDO, path, (long long)v, tv);
        const int32_t want[5] = {s->sp.pad, s->sp.cls, s->sp.sep, s->sp.unk, s->sp.mask};
        for (int i = 0; i < 5; i++)
            if (special_attr[i] != want[i])
                FAIL("shard %s: attribute '%s' is %lld, but the embedded tokenizer's is %d " REDO, path, special_names[i],
                     (long long)special_attr[i], want[i]);
    }
    /* every id <= max_token_id < vocab_size: checked here once, and on every read */
    int64_t mx = -1;
    if (read_attr_i64(s->file, "max_token_id", &mx) != 0 || mx < 0 || mx >= v)
        FAIL("shard %s: attribute 'max_token_id' is missing or outside the vocabulary [0, %lld) " REDO, path, (long long)v);
    s->max_id = mx;
    if (check_ids) {
        tbuf = xmalloc(SHARD_CHUNK * sizeof(int32_t));
        for (int64_t st = 0; st < nt; st += SHARD_CHUNK) {
            int64_t cn = MIN((int64_t)SHARD_CHUNK, nt - st);
            if (shard_read_tokens(s, st, cn, tbuf, err, errlen) != 0) goto fail;
        }
        free(tbuf); tbuf = NULL;
    }
    h5_loud(&q);
    return s;
fail:
    free(obuf);
    free(tbuf);
    if (tokd >= 0) H5Dclose(tokd);
    shard_close(s);
    h5_loud(&q);
    return NULL;
}

void shard_close(Shard *s) {
    if (!s) return;
    if (s->tokens >= 0) H5Dclose(s->tokens);
    if (s->offsets >= 0) H5Dclose(s->offsets);
    if (s->file >= 0) H5Fclose(s->file);
    free(s->path);
    free(s->never_masked);
    free(s);
}

int64_t shard_n_tokens(const Shard *s) { return s->n_tokens; }
int64_t shard_n_docs(const Shard *s) { return s->n_docs; }
int64_t shard_vocab_size(const Shard *s) { return s->vocab_size; }
const char *shard_tokenizer_hash(const Shard *s) { return s->hash; }
TokFileKind shard_tokenizer_kind(const Shard *s) { return s->kind; }
SpecialIds shard_special_ids(const Shard *s) { return s->sp; }
const int32_t *shard_never_masked(const Shard *s, int *n) {
    *n = s->n_never_masked;
    return s->never_masked;
}

int shard_read_tokens(Shard *s, int64_t start, int64_t count, int32_t *out, char *err, size_t errlen) {
    if (start < 0 || count < 0 || start + count > s->n_tokens)
        return errf(err, errlen, "shard %s: token range [%lld, %lld) outside [0, %lld)", s->path, (long long)start,
                       (long long)(start + count), (long long)s->n_tokens);
    H5Quiet q;
    h5_quiet(&q);
    int rc = read_1d(s->tokens, H5T_NATIVE_INT32, start, count, out);
    h5_loud(&q);
    if (rc != 0) {
        errf(err, errlen, "shard %s: cannot read dataset 'tokens' [%lld, %lld): checksum mismatch or truncated data (the file is corrupt) " REDO, s->path,
                (long long)start, (long long)(start + count));
        return -1;
    }
    for (int64_t i = 0; i < count; i++) {
        if (out[i] < 0 || out[i] >= s->vocab_size)
            return errf(err, errlen, "shard %s: token %lld has id %d, outside the vocabulary [0, %lld) " REDO, s->path,
                           (long long)(start + i), out[i], (long long)s->vocab_size);
        if (out[i] > s->max_id) {
            errf(err, errlen, "shard %s: token %lld has id %d, above the shard's max_token_id %lld (the file is corrupt) " REDO, s->path,
                    (long long)(start + i), out[i], (long long)s->max_id);
            return -1;
        }
    }
    return 0;
}

int shard_read_offsets(Shard *s, int64_t start, int64_t count, int64_t *out, char *err, size_t errlen) {
    if (start < 0 || count < 0 || start + count > s->n_docs + 1)
        return errf(err, errlen, "shard %s: offset range outside the file", s->path);
    H5Quiet q;
    h5_quiet(&q);
    int rc = read_1d(s->offsets, H5T_NATIVE_INT64, start, count, out);
    h5_loud(&q);
    if (rc != 0) {
        errf(err, errlen, "shard %s: cannot read 'doc_offsets': checksum mismatch or truncated data (the file is corrupt) " REDO, s->path);
        return -1;
    }
    return 0;
}

uint8_t *shard_read_tokenizer(Shard *s, size_t *len, char *err, size_t errlen) {
    H5Quiet q;
    h5_quiet(&q);
    uint8_t *buf = NULL;
    hid_t d = open_1d(s->file, s->path, "tokenizer", -1, err, errlen);
    if (d >= 0) {
        hid_t sp = H5Dget_space(d);
        hsize_t n = 0;
        H5Sget_simple_extent_dims(sp, &n, NULL);
        H5Sclose(sp);
        buf = xmalloc(n ? n : 1);
        if (n && read_1d(d, H5T_NATIVE_UINT8, 0, (int64_t)n, buf) != 0) {
            errf(err, errlen, "shard %s: cannot read dataset 'tokenizer' (truncated or corrupt file) " REDO, s->path);
            free(buf);
            buf = NULL;
        }
        *len = n;
        H5Dclose(d);
    }
    h5_loud(&q);
    return buf;
}
