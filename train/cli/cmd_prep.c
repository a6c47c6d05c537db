/* cmd_prep.c — `deberta prep`: text files -> tokenizer + HDF5 token shards.
 *
 * Reads .txt/.jsonl inputs (data/corpus.h), splits documents into train/val deterministically from
 * --seed, trains the tokenizer on the train documents (or loads --tokenizer), encodes with all
 * threads and writes DIR/train-NNNNN.h5, DIR/val-NNNNN.h5, DIR/tokenizer.bin and DIR/tokenizer.json.
 * Same inputs and flags give byte-identical outputs, whatever the thread count.
 */
#include "train/cli/cli.h"
#include "data/corpus.h"
#include "data/shard.h"
#include "data/tokenizer.h"
#include "autograd/rng.h"
#include "autograd/util.h"
#include <errno.h>
#include <dirent.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_VOCAB 8192
#define DEFAULT_VAL_FRACTION 0.01
#define DEFAULT_SHARD_TOKENS 16777216LL
#define DEFAULT_SEED 1234
#define ENCODE_BLOCK 4096 /* documents encoded per parallel block */

static void usage(FILE *f) {
    fprintf(f,
            "usage: deberta prep --input PATH... --out DIR [options]\n"
            "\n"
            "Text files -> tokenizer + HDF5 token shards (formats in docs/FORMATS.md).\n"
            "Inputs: .txt (documents separated by blank lines) and .jsonl (field \"text\"), or folders of\n"
            "them (searched recursively, sorted).\n"
            "\n"
            "  --input PATH...      input files or folders (repeatable; required)\n"
            "  --out DIR            output folder, created if missing (required)\n"
            "  --vocab-size N       tokenizer vocabulary size (default %d)\n"
            "  --val-fraction F     fraction of documents held out for validation, 0 <= F < 1 (default %g)\n"
            "  --shard-tokens N     start a new shard after this many tokens (default %lld)\n"
            "  --tokenizer FILE     reuse this tokenizer.bin instead of training one\n"
            "  --seed S             seed of the train/val split (default %d)\n"
            "  --threads N          OpenMP threads (default: all cores)\n"
            "  --help               this text\n"
            "\n"
            "Writes DIR/train-00000.h5..., DIR/val-00000.h5..., DIR/tokenizer.bin (ours) and\n"
            "DIR/tokenizer.json (Hugging Face).\n",
            DEFAULT_VOCAB, DEFAULT_VAL_FRACTION, DEFAULT_SHARD_TOKENS, DEFAULT_SEED);
}

static int bad_flag(const char *fmt, const char *a) {
    fprintf(stderr, "error: prep: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, " (see deberta prep --help)\n");
    return 2;
}

static int parse_ll(const char *s, long long *v) {
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end) return -1;
    *v = x;
    return 0;
}

static int g_tty;
static void progress_line(const char *stage, double frac, void *ctx) {
    (void)ctx;
    if (!g_tty) return;
    fprintf(stderr, "\rprep: %-24s %5.1f%%", stage, 100.0 * frac);
    if (frac >= 1.0) fputc('\n', stderr);
    fflush(stderr);
}

typedef struct { uint64_t key; size_t idx; } SplitKey;
static int cmp_split(const void *a, const void *b) {
    const SplitKey *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Encodes the documents idx[0..n) and writes them as shards "<split>-NNNNN.h5". Returns #shards. */
static int write_split(const char *out, const char *split, const Tokenizer *tk, const DocSet *ds, const size_t *idx,
                       size_t n, long long shard_tokens, long long *tokens_out) {
    size_t tlen;
    const uint8_t *tbytes = tokenizer_bytes(tk, &tlen);
    ShardInfo info = {tokenizer_vocab_size(tk), tbytes, tlen, split, 0};
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
    char path[4096], err[1024], stage[64];
    snprintf(stage, sizeof stage, "encoding %s", split);
    int nthreads = omp_get_max_threads();
    TokEncoder **enc = xmalloc((size_t)nthreads * sizeof(TokEncoder *));
    for (int t = 0; t < nthreads; t++) enc[t] = tok_encoder_new(tk);
    for (size_t b0 = 0; b0 < n; b0 += ENCODE_BLOCK) {
        size_t nb = MIN((size_t)ENCODE_BLOCK, n - b0);
        for (size_t i = 0; i < nb; i++) { texts[i] = ds->buf + ds->off[idx[b0 + i]]; lens[i] = ds->len[idx[b0 + i]]; }
#pragma omp parallel for schedule(dynamic, 16)
        for (size_t i = 0; i < nb; i++) { /* per-thread encoders keep their word caches across blocks */
            size_t k;
            const int32_t *r = tok_encode(enc[omp_get_thread_num()], texts[i], lens[i], &k);
            ids[i] = xmalloc((k ? k : 1) * sizeof(int32_t));
            if (k) memcpy(ids[i], r, k * sizeof(int32_t));
            nids[i] = k;
        }
        for (size_t i = 0; i < nb; i++) {
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
                if (shard_write(path, toks, offs, nd, &info, err, sizeof err) != 0) fatal("%s", err);
                total += nt;
                n_shards++;
                nt = nd = 0;
            }
        }
        progress_line(stage, (double)(b0 + nb) / (double)n, NULL);
    }
    for (int t = 0; t < nthreads; t++) tok_encoder_free(enc[t]);
    free(enc);
    free(texts); free(lens); free(nids); free(ids); free(toks); free(offs);
    /* remove shards of an earlier run that this run did not overwrite */
    for (int k = n_shards;; k++) {
        snprintf(path, sizeof path, "%s/%s-%05d.h5", out, split, k);
        if (unlink(path) != 0) break;
    }
    *tokens_out = total;
    return n_shards;
}

int cmd_prep(int argc, char **argv) {
    const char **inputs = xmalloc((size_t)argc * sizeof(char *));
    int n_inputs = 0;
    const char *out = NULL, *tok_path = NULL;
    long long vocab = DEFAULT_VOCAB, shard_tokens = DEFAULT_SHARD_TOKENS, seed = DEFAULT_SEED, threads = 0;
    double val_fraction = DEFAULT_VAL_FRACTION;
    int vocab_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); free(inputs); return 0; }
        if (!strcmp(a, "--input")) {
            int k = 0;
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) { inputs[n_inputs++] = argv[++i]; k++; }
            if (!k) { free(inputs); return bad_flag("%s needs at least one path", a); }
            continue;
        }
        if (strncmp(a, "--", 2) != 0) { free(inputs); return bad_flag("unexpected argument '%s'", a); }
        if (i + 1 >= argc) { free(inputs); return bad_flag("%s needs a value", a); }
        const char *v = argv[++i];
        long long x;
        if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--tokenizer")) tok_path = v;
        else if (!strcmp(a, "--vocab-size")) {
            if (parse_ll(v, &x) || x < TOK_FIRST_CHAR + 1 || x > (1 << 24)) {
                free(inputs);
                return bad_flag("--vocab-size '%s' must be an integer in [262, 16777216]", v);
            }
            vocab = x; vocab_given = 1;
        } else if (!strcmp(a, "--shard-tokens")) {
            if (parse_ll(v, &x) || x < 1) { free(inputs); return bad_flag("--shard-tokens '%s' must be a positive integer", v); }
            shard_tokens = x;
        } else if (!strcmp(a, "--seed")) {
            if (parse_ll(v, &x) || x < 0) { free(inputs); return bad_flag("--seed '%s' must be a non-negative integer", v); }
            seed = x;
        } else if (!strcmp(a, "--threads")) {
            if (parse_ll(v, &x) || x < 1 || x > 4096) { free(inputs); return bad_flag("--threads '%s' must be an integer in [1, 4096]", v); }
            threads = x;
        } else if (!strcmp(a, "--val-fraction")) {
            char *end;
            double f = strtod(v, &end);
            if (end == v || *end || !(f >= 0 && f < 1)) { free(inputs); return bad_flag("--val-fraction '%s' must be a number in [0, 1)", v); }
            val_fraction = f;
        } else {
            free(inputs);
            return bad_flag("unknown flag '%s'", a);
        }
    }
    if (!n_inputs) { free(inputs); return bad_flag("%s", "--input is required"); }
    if (!out) { free(inputs); return bad_flag("%s", "--out is required"); }
    if (threads > 0) omp_set_num_threads((int)threads);
    g_tty = isatty(2);
    double t_start = now_seconds();
    char err[2048];

    /* 1. inputs */
    char **files;
    size_t n_files;
    if (corpus_list_files(inputs, n_inputs, &files, &n_files, err, sizeof err) != 0) fatal("%s", err);
    free(inputs);
    DocSet ds = {0};
    for (size_t i = 0; i < n_files; i++) {
        if (corpus_read_file(files[i], &ds, err, sizeof err) != 0) fatal("%s", err);
        progress_line("reading", (double)(i + 1) / (double)n_files, NULL);
    }
    if (ds.n == 0) fatal("inputs: no documents found in %zu file(s) (all empty or blank)", n_files);

    /* 2. deterministic split by document */
    size_t n_val = (size_t)llround(val_fraction * (double)ds.n);
    if (val_fraction > 0 && n_val == 0 && ds.n >= 2) n_val = 1;
    if (n_val >= ds.n) n_val = ds.n - 1;
    SplitKey *keys = xmalloc(ds.n * sizeof(SplitKey));
    for (size_t i = 0; i < ds.n; i++)
        keys[i] = (SplitKey){rng_u64((uint64_t)seed, rng_stream(RNG_SHUFFLE, 0, 7), i), i};
    qsort(keys, ds.n, sizeof(SplitKey), cmp_split);
    char *is_val = xcalloc(ds.n, 1);
    for (size_t i = 0; i < n_val; i++) is_val[keys[i].idx] = 1;
    free(keys);
    size_t *train_idx = xmalloc(ds.n * sizeof(size_t)), *val_idx = xmalloc((n_val ? n_val : 1) * sizeof(size_t));
    size_t n_train = 0, nv = 0;
    for (size_t i = 0; i < ds.n; i++) {
        if (is_val[i]) val_idx[nv++] = i; else train_idx[n_train++] = i;
    }
    free(is_val);

    /* 3. tokenizer */
    struct stat out_st;
    if (mkdir_p(out) != 0 || stat(out, &out_st) != 0 || !S_ISDIR(out_st.st_mode)) fatal("output %s: cannot create folder (%s)", out, strerror(errno));
    Tokenizer *tk;
    double t_tok = now_seconds();
    if (tok_path) {
        tk = tokenizer_load(tok_path, err, sizeof err);
        if (!tk) fatal("%s", err);
        if (vocab_given && vocab != tokenizer_vocab_size(tk))
            warn("prep: --vocab-size %lld ignored; %s has %d tokens", vocab, tok_path, tokenizer_vocab_size(tk));
    } else {
        TokTrainConfig tc;
        tok_train_config_default(&tc);
        tc.vocab_size = (int)vocab;
        tc.progress = progress_line;
        const char **texts = xmalloc(n_train * sizeof(char *));
        size_t *lens = xmalloc(n_train * sizeof(size_t));
        for (size_t i = 0; i < n_train; i++) { texts[i] = ds.buf + ds.off[train_idx[i]]; lens[i] = ds.len[train_idx[i]]; }
        tk = tokenizer_train(texts, lens, n_train, &tc, err, sizeof err);
        free(texts); free(lens);
        if (!tk) fatal("prep: tokenizer training: %s", err);
        if (tokenizer_vocab_size(tk) < vocab)
            warn("prep: the corpus supports only %d tokens (asked %lld): no pair occurs twice more", tokenizer_vocab_size(tk), vocab);
    }
    t_tok = now_seconds() - t_tok;
    char path[4096];
    snprintf(path, sizeof path, "%s/tokenizer.bin", out);
    if (tokenizer_save(tk, path, err, sizeof err) != 0) fatal("%s", err);
    snprintf(path, sizeof path, "%s/tokenizer.json", out);
    if (tokenizer_write_hf_json(tk, path, err, sizeof err) != 0) fatal("%s", err);

    /* 4. encode and write shards */
    double t_enc = now_seconds();
    long long tok_train = 0, tok_val = 0;
    int sh_train = write_split(out, "train", tk, &ds, train_idx, n_train, shard_tokens, &tok_train);
    int sh_val = write_split(out, "val", tk, &ds, val_idx, nv, shard_tokens, &tok_val);
    t_enc = now_seconds() - t_enc;
    char hash[17];
    tokenizer_hash_hex(tk, hash);
    printf("prep: %zu files, %zu docs (%zu train, %zu val), %.1f MB text -> %lld tokens (%lld train in %d shards, "
           "%lld val in %d shards), vocab %d, tokenizer %s (%s %.2f s), encode+write %.2f s, total %.2f s -> %s\n",
           n_files, ds.n, n_train, nv, (double)ds.buf_len / 1e6, tok_train + tok_val, tok_train, sh_train, tok_val,
           sh_val, tokenizer_vocab_size(tk), hash, tok_path ? "loaded" : "trained", t_tok, t_enc,
           now_seconds() - t_start, out);
    for (size_t i = 0; i < n_files; i++) free(files[i]);
    free(files);
    free(train_idx); free(val_idx);
    tokenizer_free(tk);
    docset_free(&ds);
    return 0;
}
