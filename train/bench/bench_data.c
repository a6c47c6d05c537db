/* bench_data.c — data-room timings, a program of its own (not linked into build/deberta), built and run
 * by scripts/bench-tokenizer.sh.
 *
 *   bench_data CORPUS_DIR VOCAB OUT_TOKENIZER [SHARD_DIR]
 *
 * Prints one "key value" line per measurement: tokenizer training time (all threads and 1 thread),
 * encoding throughput in MB/s of input text (all threads and 1 thread, best of 3), and, with
 * SHARD_DIR, loader throughput in sequences/s for T=128 and T=512 with the official masking.
 */
#include "data/corpus.h"
#include "data/loader.h"
#include "data/tokenizer.h"
#include "autograd/gemm.h"
#include "autograd/base/util.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double encode_mbps(const Tokenizer *tk, const char **texts, const size_t *lens, size_t n, size_t bytes,
                          long long *ntok) {
    int32_t **ids = xmalloc(n * sizeof(int32_t *));
    size_t *nids = xmalloc(n * sizeof(size_t));
    double best = 1e30;
    for (int rep = 0; rep < 3; rep++) {
        double t = now_seconds();
        tokenizer_encode_batch(tk, texts, lens, n, ids, nids);
        t = now_seconds() - t;
        if (t < best) best = t;
        *ntok = 0;
        for (size_t i = 0; i < n; i++) { *ntok += (long long)nids[i]; free(ids[i]); }
    }
    free(ids); free(nids);
    return (double)bytes / 1e6 / best;
}

static void bench_loader(const char *dir, int T, int B) {
    LoaderConfig c;
    loader_config_default(&c);
    c.T = T; c.B = B;
    Loader *L = loader_open(dir, "train", &c);
    Batch b;
    batch_alloc(&b, B, T);
    long long seqs = 0;
    double t0 = now_seconds(), t;
    do {
        for (int i = 0; i < 20; i++) { loader_next(L, &b); seqs += B; }
        t = now_seconds() - t0;
    } while (t < 2.0);
    printf("loader_T%d_B%d_seq_per_s %.0f\n", T, B, (double)seqs / t);
    printf("loader_T%d_B%d_tokens_per_s %.0f\n", T, B, (double)seqs * T / t);
    printf("loader_T%d_epochs_covered %.2f\n", T, loader_epoch(L));
    batch_free(&b);
    loader_close(L);
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: bench_data CORPUS_DIR VOCAB OUT_TOKENIZER [SHARD_DIR]\n"); return 2; }
    char err[1024], **files;
    size_t n_files;
    const char *paths[1] = {argv[1]};
    if (corpus_list_files(paths, 1, &files, &n_files, err, sizeof err) != 0) fatal("%s", err);
    DocSet ds = {0};
    for (size_t i = 0; i < n_files; i++) if (corpus_read_file(files[i], &ds, err, sizeof err) != 0) fatal("%s", err);
    const char **texts = xmalloc(ds.n * sizeof(char *));
    for (size_t i = 0; i < ds.n; i++) texts[i] = ds.buf + ds.off[i];
    printf("corpus_docs %zu\ncorpus_mb %.2f\nthreads %d\n", ds.n, ds.buf_len / 1e6, omp_get_max_threads());

    TokTrainConfig tc;
    tok_train_config_default(&tc);
    tc.vocab_size = atoi(argv[2]);
    int nt = omp_get_max_threads();
    double t = now_seconds();
    Tokenizer *tk = tokenizer_train(texts, ds.len, ds.n, &tc, err, sizeof err);
    double t_train = now_seconds() - t;
    if (!tk) fatal("%s", err);
    threads_set(1);
    t = now_seconds();
    Tokenizer *tk1 = tokenizer_train(texts, ds.len, ds.n, &tc, err, sizeof err);
    double t_train1 = now_seconds() - t;
    size_t l0, l1;
    const uint8_t *b0 = tokenizer_bytes(tk, &l0), *b1 = tokenizer_bytes(tk1, &l1);
    if (l0 != l1 || memcmp(b0, b1, l0) != 0) fatal("bench: training differs between thread counts");
    tokenizer_free(tk1);
    threads_set(nt);
    printf("train_seconds %.3f\ntrain_seconds_1thread %.3f\nvocab %d\n", t_train, t_train1, tokenizer_vocab_size(tk));
    if (tokenizer_save(tk, argv[3], err, sizeof err) != 0) fatal("%s", err);

    long long ntok;
    double mbps = encode_mbps(tk, texts, ds.len, ds.n, ds.buf_len, &ntok);
    threads_set(1);
    double mbps1 = encode_mbps(tk, texts, ds.len, ds.n, ds.buf_len, &ntok);
    threads_set(nt);
    printf("encode_mb_per_s %.2f\nencode_mb_per_s_1thread %.2f\ntokens %lld\nbytes_per_token %.3f\n", mbps, mbps1, ntok,
           (double)ds.buf_len / (double)ntok);
    if (argc > 4) {
        bench_loader(argv[4], 128, 32);
        bench_loader(argv[4], 512, 8);
    }
    tokenizer_free(tk);
    free(texts);
    docset_free(&ds);
    for (size_t i = 0; i < n_files; i++) free(files[i]);
    free(files);
    return 0;
}
