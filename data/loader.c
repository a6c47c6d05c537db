/* loader.c — shards -> packed, shuffled, masked batches.  Rules in loader.h and docs/FORMATS.md. */
#include "data/loader.h"
#include "data/shard.h"
#include "data/tokenizer.h"
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *path;
    int64_t n_tokens, n_docs, n_seq;
    int64_t base;             /* global id of its first sequence (file order) */
} ShardMeta;

struct Loader {
    LoaderConfig cfg;
    int shuffle, single_pass;
    char split[16];
    ShardMeta *shards;
    int n_shards;
    int64_t n_seq;
    int vocab_size;
    char hash[17];
    TokFileKind kind;
    SpecialIds sp;            /* the shards' special ids */
    int32_t *never_masked;    /* ascending (MaskVocab.special) */
    uint8_t *is_special;      /* [vocab_size] */
    MaskVocab mv;
    int64_t position;
    /* epoch order (cached for one epoch) */
    int64_t order_epoch;
    int *shard_order;         /* [n_shards] */
    int64_t *shard_cum;       /* [n_shards + 1] cumulative sequences in shard_order */
    /* window order of one (epoch, shard) */
    int64_t win_epoch; int win_shard;
    int64_t *win_order;       /* permuted window numbers */
    int64_t *win_cum;         /* cumulative sizes in win_order */
    int64_t n_win, win_cap;
    /* open shard and its doc_offsets */
    Shard *cur; int cur_shard;
    int64_t *offsets;         /* [n_docs + 1] of cur */
    /* loaded window: sequences [w*W, w*W + wsize) of shard wl_shard, stream tokens in wbuf */
    int64_t wl_epoch; int wl_shard; int64_t wl_win, wl_size;
    int32_t *wbuf;            /* [window * L] */
    int32_t *tbuf;            /* token read buffer */
    int64_t *wperm;           /* [window] permutation inside the window */
};

void batch_alloc(Batch *b, int B, int T) {
    b->B = B; b->T = T;
    b->input_ids = xcalloc((size_t)B * T, sizeof(int32_t));
    b->attention_mask = xcalloc((size_t)B * T, sizeof(int32_t));
    b->labels = xcalloc((size_t)B * T, sizeof(int32_t));
    b->n_masked = b->n_tokens = 0;
}
void batch_free(Batch *b) {
    free(b->input_ids); free(b->attention_mask); free(b->labels);
    b->input_ids = b->attention_mask = b->labels = NULL;
}

void loader_config_default(LoaderConfig *c) {
    memset(c, 0, sizeof *c);
    c->T = 128; c->B = 32; c->seed = 1234;
    c->mask_mode = MASK_OFFICIAL; c->mask_prob = 0.15;
    c->rank = 0; c->world = 1; c->shuffle = -1; c->window = 1024;
}

static const char *const MODE_NAMES[] = {"official", "random", "bert", "none"};
int mask_mode_parse(const char *s, MaskMode *out) {
    for (int i = 0; i < 4; i++) if (strcmp(s, MODE_NAMES[i]) == 0) { *out = (MaskMode)i; return 0; }
    return -1;
}
const char *mask_mode_name(MaskMode m) { return (unsigned)m < 4 ? MODE_NAMES[m] : "?"; }

/* ---------------------------------------------------------------- masking */

static inline int is_special(const MaskVocab *v, int32_t id) {
    if (v->is_special) return id < 0 || id >= v->vocab_size || v->is_special[id];
    for (int i = 0; i < v->n_special && v->special[i] <= id; i++)
        if (v->special[i] == id) return 1;
    return 0;
}

/* The k-th non-special id (k from 0): k shifted past every special id at or below it (ascending), so
 * that with our tokenizer (special 0..4) it is 5 + k. */
static int32_t nth_plain(const MaskVocab *v, uint64_t k) {
    int32_t id = (int32_t)k;
    for (int i = 0; i < v->n_special && v->special[i] <= id; i++) id++;
    return id;
}

int mask_sequence_vocab(int32_t *ids, int32_t *labels, int n, int T, MaskMode mode, double p, const MaskVocab *v,
                        uint64_t seed, uint64_t stream, uint64_t base) {
    for (int i = 0; i < T; i++) labels[i] = 0;
    if (mode == MASK_NONE || n <= 0) return 0;
    int cand[n];
    int nc = 0;
    for (int i = 0; i < n; i++) if (!is_special(v, ids[i])) cand[nc++] = i;
    int max_preds = (int)ceil((double)T * p / 10.0) * 10;
    int num = (int)rint((double)n * p);
    if (num < 1) num = 1;
    if (num > max_preds) num = max_preds;
    int masked = 0;
    if (mode == MASK_OFFICIAL) {
        int win = (int)(1.0 / p);
        if (win < 1) win = 1;
        uint64_t draw = 0;
        for (int off = 0; off < nc; off += win) {
            int ctx = MIN(win, nc - off);
            int m = (int)rng_below(seed, stream, base + draw++, (uint64_t)ctx);
            if (masked < num) {
                int pos = cand[off + m];
                labels[pos] = ids[pos];
                ids[pos] = v->mask_id;
                masked++;
            }
        }
        return masked;
    }
    const int64_t n_plain = (int64_t)v->vocab_size - v->n_special;
    /* random / bert: partial Fisher-Yates over the candidates */
    if (num > nc) num = nc;
    for (int i = 0; i < num; i++) {
        int j = i + (int)rng_below(seed, stream, base + (uint64_t)i, (uint64_t)(nc - i));
        int t = cand[i]; cand[i] = cand[j]; cand[j] = t;
        int pos = cand[i];
        labels[pos] = ids[pos];
        if (mode == MASK_BERT) {
            double u = rng_uniform(seed, stream, base + (1u << 19) + (uint64_t)i);
            if (u < 0.8) ids[pos] = v->mask_id;
            else if (u < 0.9 && n_plain > 0)
                ids[pos] = nth_plain(v, rng_below(seed, stream, base + (1u << 18) + (uint64_t)i, (uint64_t)n_plain));
            /* else: keep the original token */
        } else {
            ids[pos] = v->mask_id;
        }
        masked++;
    }
    return masked;
}

int mask_sequence(int32_t *ids, int32_t *labels, int n, int T, MaskMode mode, double p, int vocab_size,
                  uint64_t seed, uint64_t stream, uint64_t base) {
    static const int32_t ours[5] = {TOK_PAD, TOK_CLS, TOK_SEP, TOK_UNK, TOK_MASK}; /* ascending */
    const MaskVocab v = {vocab_size, TOK_MASK, ours, 5, NULL};
    return mask_sequence_vocab(ids, labels, n, T, mode, p, &v, seed, stream, base);
}

/* ---------------------------------------------------------------- opening */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int is_shard_name(const char *name, const char *split) {
    size_t l = strlen(split);
    if (strncmp(name, split, l) != 0 || name[l] != '-') return 0;
    const char *p = name + l + 1;
    for (int i = 0; i < 5; i++) if (p[i] < '0' || p[i] > '9') return 0;
    return strcmp(p + 5, ".h5") == 0;
}

Loader *loader_open_err(const char *dir, const char *split, const LoaderConfig *cfg, char *err, size_t errlen) {
    if (strcmp(split, "train") != 0 && strcmp(split, "val") != 0)
        return errf(err, errlen, "loader: split must be 'train' or 'val', got '%s'", split), NULL;
    if (cfg->T < 3 || cfg->B < 1 || cfg->world < 1 || cfg->rank < 0 || cfg->rank >= cfg->world ||
        !(cfg->mask_prob > 0 && cfg->mask_prob < 1) || cfg->window < 1 || (unsigned)cfg->mask_mode > MASK_NONE) {
        errf(err, errlen, "loader: invalid config (T=%d B=%d rank=%d world=%d mask_prob=%g window=%d)", cfg->T,
                cfg->B, cfg->rank, cfg->world, cfg->mask_prob, cfg->window);
        return NULL;
    }
    DIR *d = opendir(dir);
    if (!d) { errf(err, errlen, "shards %s: cannot open folder (%s)", dir, strerror(errno)); return NULL; }
    char **names = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!is_shard_name(e->d_name, split)) continue;
        if (n == cap) { cap = cap ? 2 * cap : 16; names = xrealloc(names, (size_t)cap * sizeof(char *)); }
        size_t l = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = xmalloc(l);
        snprintf(names[n], l, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    if (n == 0) {
        errf(err, errlen, "shards %s: no %s-NNNNN.h5 files (run deberta prep)", dir, split);
        free(names);
        return NULL;
    }
    qsort(names, (size_t)n, sizeof(char *), cmp_str);
    Loader *L = xcalloc(1, sizeof *L);
    L->cfg = *cfg;
    snprintf(L->split, sizeof L->split, "%s", split);
    L->shuffle = cfg->shuffle >= 0 ? cfg->shuffle : strcmp(split, "train") == 0;
    L->single_pass = strcmp(split, "val") == 0;
    L->shards = xcalloc((size_t)n, sizeof(ShardMeta));
    L->n_shards = n;
    const int64_t Lc = cfg->T - 2;
    for (int i = 0; i < n; i++) {
        Shard *s = shard_open(names[i], 0, err, errlen);
        if (!s) goto fail;
        ShardMeta *m = &L->shards[i];
        m->path = names[i]; names[i] = NULL;
        m->n_tokens = shard_n_tokens(s);
        m->n_docs = shard_n_docs(s);
        m->n_seq = (m->n_tokens + m->n_docs + Lc - 1) / Lc;
        m->base = L->n_seq;
        L->n_seq += m->n_seq;
        if (i == 0) { /* the other shards have the same tokenizer (hash), so the same special ids */
            L->vocab_size = (int)shard_vocab_size(s);
            snprintf(L->hash, sizeof L->hash, "%s", shard_tokenizer_hash(s));
            L->kind = shard_tokenizer_kind(s);
            L->sp = shard_special_ids(s);
            int ns;
            const int32_t *never = shard_never_masked(s, &ns);
            L->never_masked = xmalloc((size_t)ns * sizeof(int32_t));
            memcpy(L->never_masked, never, (size_t)ns * sizeof(int32_t));
            L->is_special = xcalloc((size_t)L->vocab_size, 1);
            for (int k = 0; k < ns; k++) L->is_special[never[k]] = 1;
            L->mv = (MaskVocab){L->vocab_size, L->sp.mask, L->never_masked, ns, L->is_special};
        } else if (shard_vocab_size(s) != L->vocab_size || strcmp(shard_tokenizer_hash(s), L->hash) != 0) {
            errf(err, errlen, "shard %s: tokenizer %s (vocab %lld) differs from %s's %s (vocab %d); mixed prep outputs?",
                    m->path, shard_tokenizer_hash(s), (long long)shard_vocab_size(s), L->shards[0].path, L->hash,
                    L->vocab_size);
            shard_close(s);
            goto fail;
        }
        shard_close(s);
    }
    free(names);
    L->order_epoch = -1;
    L->win_epoch = -1; L->win_shard = -1;
    L->cur_shard = -1;
    L->wl_epoch = -1; L->wl_shard = -1; L->wl_win = -1;
    L->shard_order = xmalloc((size_t)n * sizeof(int));
    L->shard_cum = xmalloc(((size_t)n + 1) * sizeof(int64_t));
    L->wbuf = xmalloc((size_t)cfg->window * (size_t)Lc * sizeof(int32_t));
    L->tbuf = xmalloc((size_t)cfg->window * (size_t)Lc * sizeof(int32_t));
    L->wperm = xmalloc((size_t)cfg->window * sizeof(int64_t));
    return L;
fail:
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    loader_close(L);
    return NULL;
}

Loader *loader_open(const char *dir, const char *split, const LoaderConfig *cfg) {
    char err[1024];
    Loader *L = loader_open_err(dir, split, cfg, err, sizeof err);
    if (!L) fatal("%s", err);
    return L;
}

void loader_close(Loader *L) {
    if (!L) return;
    for (int i = 0; i < L->n_shards; i++) free(L->shards[i].path);
    free(L->shards);
    free(L->never_masked); free(L->is_special);
    free(L->shard_order); free(L->shard_cum);
    free(L->win_order); free(L->win_cum);
    if (L->cur) shard_close(L->cur);
    free(L->offsets);
    free(L->wbuf); free(L->tbuf); free(L->wperm);
    free(L);
}

/* ---------------------------------------------------------------- order */

/* Fisher-Yates permutation of [0, n) from (seed, stream), counters cbase + i. */
static void permute(int64_t *a, int64_t n, uint64_t seed, uint64_t stream, uint64_t cbase) {
    for (int64_t i = 0; i < n; i++) a[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below(seed, stream, cbase + (uint64_t)i, (uint64_t)i + 1);
        int64_t t = a[i]; a[i] = a[j]; a[j] = t;
    }
}

static void ensure_epoch_order(Loader *L, int64_t epoch) {
    if (L->order_epoch == epoch) return;
    int64_t *p = xmalloc((size_t)L->n_shards * sizeof(int64_t));
    if (L->shuffle) permute(p, L->n_shards, L->cfg.seed, rng_stream(RNG_SHUFFLE, (uint64_t)epoch, 0), 0);
    else for (int i = 0; i < L->n_shards; i++) p[i] = i;
    L->shard_cum[0] = 0;
    for (int i = 0; i < L->n_shards; i++) {
        L->shard_order[i] = (int)p[i];
        L->shard_cum[i + 1] = L->shard_cum[i] + L->shards[p[i]].n_seq;
    }
    free(p);
    L->order_epoch = epoch;
}

static void ensure_window_order(Loader *L, int64_t epoch, int s) {
    if (L->win_epoch == epoch && L->win_shard == s) return;
    const int64_t W = L->cfg.window, n_seq = L->shards[s].n_seq;
    int64_t nw = (n_seq + W - 1) / W;
    if (nw > L->win_cap) {
        L->win_cap = nw;
        L->win_order = xrealloc(L->win_order, (size_t)nw * sizeof(int64_t));
        L->win_cum = xrealloc(L->win_cum, ((size_t)nw + 1) * sizeof(int64_t));
    }
    if (L->shuffle) permute(L->win_order, nw, L->cfg.seed, rng_stream(RNG_SHUFFLE, (uint64_t)epoch, 2), (uint64_t)s << 32);
    else for (int64_t i = 0; i < nw; i++) L->win_order[i] = i;
    L->win_cum[0] = 0;
    for (int64_t i = 0; i < nw; i++) {
        int64_t w = L->win_order[i];
        L->win_cum[i + 1] = L->win_cum[i] + MIN(W, n_seq - w * W);
    }
    L->n_win = nw;
    L->win_epoch = epoch;
    L->win_shard = s;
}

static void open_shard(Loader *L, int s) {
    if (L->cur_shard == s) return;
    if (L->cur) shard_close(L->cur);
    char err[1024];
    L->cur = shard_open(L->shards[s].path, 0, err, sizeof err);
    if (!L->cur) fatal("%s", err);
    if (shard_n_tokens(L->cur) != L->shards[s].n_tokens || shard_n_docs(L->cur) != L->shards[s].n_docs)
        fatal("shard %s: changed since the loader opened it", L->shards[s].path);
    int64_t nd = L->shards[s].n_docs;
    L->offsets = xrealloc(L->offsets, ((size_t)nd + 1) * sizeof(int64_t));
    if (shard_read_offsets(L->cur, 0, nd + 1, L->offsets, err, sizeof err) != 0) fatal("%s", err);
    L->cur_shard = s;
}

/* Loads window w of shard s: the stream tokens of its sequences, and its inner permutation. */
static void load_window(Loader *L, int64_t epoch, int s, int64_t w) {
    const int64_t W = L->cfg.window, Lc = L->cfg.T - 2;
    const ShardMeta *m = &L->shards[s];
    if (L->wl_shard != s || L->wl_win != w) {
        open_shard(L, s);
        const int64_t S = m->n_tokens + m->n_docs;
        int64_t a = w * W * Lc, b = MIN((w * W + MIN(W, m->n_seq - w * W)) * Lc, S);
        /* first document whose stream range reaches a: stream start of doc d is offsets[d] + d */
        int64_t lo = 0, hi = m->n_docs - 1;
        while (lo < hi) { /* largest d with offsets[d] + d <= a */
            int64_t mid = (lo + hi + 1) / 2;
            if (L->offsets[mid] + mid <= a) lo = mid; else hi = mid - 1;
        }
        int64_t d = lo, t0 = a - d, t1 = MIN(m->n_tokens, b - d);
        char err[1024];
        if (t1 > t0 && shard_read_tokens(L->cur, t0, t1 - t0, L->tbuf, err, sizeof err) != 0) fatal("%s", err);
        int64_t t = t0, sep = L->offsets[d + 1] + d;
        for (int64_t p = a; p < b; p++) {
            if (p == sep) {
                L->wbuf[p - a] = L->sp.sep;
                d++;
                sep = d < m->n_docs ? L->offsets[d + 1] + d : INT64_MAX;
            } else {
                L->wbuf[p - a] = L->tbuf[t - t0];
                t++;
            }
        }
        L->wl_shard = s; L->wl_win = w; L->wl_epoch = -1;
        L->wl_size = MIN(W, m->n_seq - w * W);
    }
    if (L->wl_epoch != epoch) {
        if (L->shuffle)
            permute(L->wperm, L->wl_size, L->cfg.seed, rng_stream(RNG_SHUFFLE, (uint64_t)epoch, 1),
                    ((uint64_t)s << 40) | ((uint64_t)w << 20));
        else for (int64_t i = 0; i < L->wl_size; i++) L->wperm[i] = i;
        L->wl_epoch = epoch;
    }
}

/* Writes the unmasked sequence at epoch position p into ids (T), returns its real length n. */
static int fetch_sequence(Loader *L, int64_t epoch, int64_t p, int32_t *ids, int64_t *gid) {
    const int T = L->cfg.T;
    const int64_t W = L->cfg.window, Lc = T - 2;
    ensure_epoch_order(L, epoch);
    int k = 0, hi_k = L->n_shards - 1;
    while (k < hi_k) { /* largest k with shard_cum[k] <= p */
        int mid = (k + hi_k + 1) / 2;
        if (L->shard_cum[mid] <= p) k = mid; else hi_k = mid - 1;
    }
    int s = L->shard_order[k];
    int64_t j = p - L->shard_cum[k];
    ensure_window_order(L, epoch, s);
    int64_t lo = 0, hi = L->n_win - 1;
    while (lo < hi) { /* largest i with win_cum[i] <= j */
        int64_t mid = (lo + hi + 1) / 2;
        if (L->win_cum[mid] <= j) lo = mid; else hi = mid - 1;
    }
    int64_t w = L->win_order[lo], i = j - L->win_cum[lo];
    load_window(L, epoch, s, w);
    int64_t local = L->wperm[i];                   /* index inside the window */
    int64_t seq = w * W + local;                   /* sequence number in the shard */
    const ShardMeta *m = &L->shards[s];
    int64_t S = m->n_tokens + m->n_docs;
    int64_t a = seq * Lc, len = MIN(Lc, S - a);
    const int32_t *src = L->wbuf + (local * Lc);
    ids[0] = L->sp.cls;
    memcpy(ids + 1, src, (size_t)len * sizeof(int32_t));
    ids[len + 1] = L->sp.sep;
    for (int t = (int)len + 2; t < T; t++) ids[t] = L->sp.pad;
    *gid = m->base + seq;
    return (int)len + 2;
}

/* ---------------------------------------------------------------- batches */

int loader_next(Loader *L, Batch *b) {
    const int B = L->cfg.B, T = L->cfg.T;
    if (b->B != B || b->T != T) fatal("loader: batch is %dx%d, loader makes %dx%d", b->B, b->T, B, T);
    if (L->single_pass && L->position >= L->n_seq) return 0;
    b->n_masked = b->n_tokens = 0;
    for (int r = 0; r < B; r++) {
        int32_t *ids = b->input_ids + (size_t)r * T, *am = b->attention_mask + (size_t)r * T, *lab = b->labels + (size_t)r * T;
        int64_t q = L->position + (int64_t)L->cfg.rank * B + r;
        if (L->single_pass && q >= L->n_seq) {
            for (int t = 0; t < T; t++) ids[t] = L->sp.pad;
            memset(am, 0, (size_t)T * sizeof(int32_t));
            memset(lab, 0, (size_t)T * sizeof(int32_t));
            continue;
        }
        int64_t epoch = q / L->n_seq, p = q % L->n_seq, gid;
        int n = fetch_sequence(L, epoch, p, ids, &gid);
        for (int t = 0; t < T; t++) am[t] = t < n;
        b->n_tokens += n;
        b->n_masked += mask_sequence_vocab(ids, lab, n, T, L->cfg.mask_mode, L->cfg.mask_prob, &L->mv, L->cfg.seed,
                                           rng_stream(RNG_MASK, (uint64_t)epoch, 0), (uint64_t)gid << 20);
    }
    L->position += (int64_t)B * L->cfg.world;
    return 1;
}

void loader_rewind(Loader *L) { L->position = 0; }

void loader_get_state(const Loader *L, LoaderState *s) {
    memset(s, 0, sizeof *s);
    s->version = LOADER_STATE_VERSION;
    s->position = L->position;
    s->epoch = L->position / L->n_seq;
    s->seed = (int64_t)L->cfg.seed;
    s->n_sequences = L->n_seq;
    s->T = L->cfg.T;
    s->mask_mode = L->cfg.mask_mode;
}

int loader_set_state(Loader *L, const LoaderState *s, char *err, size_t errlen) {
    if (s->version != LOADER_STATE_VERSION)
        return errf(err, errlen, "loader state: version %lld, expected %d", (long long)s->version, LOADER_STATE_VERSION);
    if (s->n_sequences != L->n_seq || s->T != L->cfg.T || s->seed != (int64_t)L->cfg.seed ||
        s->mask_mode != L->cfg.mask_mode || s->position < 0) {
        errf(err, errlen,
                "loader state: saved for %lld sequences, T=%lld, seed %lld, mask %lld; this loader has %lld, T=%d, "
                "seed %llu, mask %d (different shards or settings)",
                (long long)s->n_sequences, (long long)s->T, (long long)s->seed, (long long)s->mask_mode,
                (long long)L->n_seq, L->cfg.T, (unsigned long long)L->cfg.seed, (int)L->cfg.mask_mode);
        return -1;
    }
    L->position = s->position;
    return 0;
}

int64_t loader_n_sequences(const Loader *L) { return L->n_seq; }
double loader_epoch(const Loader *L) { return (double)L->position / (double)L->n_seq; }
int loader_vocab_size(const Loader *L) { return L->vocab_size; }

const char *loader_tokenizer_hash(const Loader *L) { return L->hash; }
SpecialIds loader_special_ids(const Loader *L) { return L->sp; }
TokFileKind loader_tokenizer_kind(const Loader *L) { return L->kind; }

uint8_t *loader_tokenizer_bytes(const Loader *L, size_t *len) {
    char err[1024];
    Shard *s = shard_open(L->shards[0].path, 0, err, sizeof err);
    if (!s) fatal("%s", err);
    uint8_t *b = shard_read_tokenizer(s, len, err, sizeof err);
    shard_close(s);
    if (!b) fatal("%s", err);
    return b;
}
