/* cmd_prep_task.c — `deberta prep-task`: tagged Brown texts -> the task files of a fine-tuning task
 * (data/task.h), tokenised with the tokenizer of a `deberta prep` output, after checking that none of
 * the task's dev and test texts is in that output's train shards. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/util.h"
#include "data/brown.h"
#include "data/shard.h"
#include "data/task.h"
#include "data/tokenizer.h"
#include "train/cli/cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: deberta prep-task --task pos|genre --brown DIR --shards DATA --out TASKDIR [--seq-len T]\n"
            "\n"
            "Tagged Brown texts -> TASKDIR/train.h5, dev.h5, test.h5 (layout: docs/FORMATS.md, \"Task files\").\n"
            "  --task pos|genre   pos: a universal tag per word (token classification); genre: the text's\n"
            "                     genre per window of T tokens (sequence classification)\n"
            "  --brown DIR        the tagged texts ca01 ... cr09 (scripts/fetch-corpus.sh: CORPUS/brown-tagged)\n"
            "  --shards DATA      a `deberta prep` output: its tokenizer.bin encodes the texts, and its train\n"
            "                     shards must not hold any dev or test text (prep --holdout-brown DIR)\n"
            "  --out TASKDIR      output folder, created if missing\n"
            "  --seq-len T        tokens per example, [CLS] and [SEP] included (default 128)\n"
            "Split by text number: ..2 dev, ..3 test, the rest train (data/brown.h).\n");
}

static int cmp_u64(const void *a, const void *b) {
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Every document of every DATA/train-*.h5 shard, decoded and fingerprinted; fatal if one is a dev or
 * test text (after freeing what it holds: one error line, no leak report under LeakSanitizer).
 * Returns the number of documents checked. */
static long check_holdout(const char *data, const Tokenizer *tk, const BrownText *bt, size_t nb) {
    uint64_t *fp = xmalloc(nb * sizeof(uint64_t));
    size_t nf = 0;
    for (size_t i = 0; i < nb; i++) if (bt[i].split != BROWN_TRAIN) fp[nf++] = brown_fingerprint(&bt[i]);
    qsort(fp, nf, sizeof(uint64_t), cmp_u64);
    char hash[17], err[1024], path[8192];
    tokenizer_hash_hex(tk, hash);
    long docs = 0;
    int shards = 0, bad = 0;
    for (int k = 0; !bad; k++) {
        snprintf(path, sizeof path, "%s/train-%05d.h5", data, k);
        FILE *probe = fopen(path, "rb");
        if (!probe) break;
        fclose(probe);
        Shard *s = shard_open(path, 0, err, sizeof err);
        if (!s) {
            bad = 1;
            break;
        }
        if (strcmp(shard_tokenizer_hash(s), hash)) {
            bad = errf(err, sizeof err, "shard %s: tokenizer %s, but %s/tokenizer.bin is %s", path, shard_tokenizer_hash(s), data, hash);
            shard_close(s);
            break;
        }
        int64_t nd = shard_n_docs(s), nt = shard_n_tokens(s);
        int64_t *off = xmalloc((size_t)(nd + 1) * sizeof(int64_t));
        int32_t *tok = xmalloc((size_t)(nt ? nt : 1) * sizeof(int32_t));
        if (shard_read_offsets(s, 0, nd + 1, off, err, sizeof err) || shard_read_tokens(s, 0, nt, tok, err, sizeof err)) bad = 1;
        for (int64_t d = 0; !bad && d < nd; d++) {
            size_t len;
            char *text = tokenizer_decode(tk, tok + off[d], (size_t)(off[d + 1] - off[d]), &len);
            uint64_t f = text_fingerprint(text, len);
            free(text);
            if (bsearch(&f, fp, nf, sizeof(uint64_t), cmp_u64)) {
                const char *name = "?";
                for (size_t i = 0; i < nb; i++) if (bt[i].split != BROWN_TRAIN && brown_fingerprint(&bt[i]) == f) name = bt[i].name;
                bad = errf(err, sizeof err, "shard %s: document %lld is the Brown text %s, a dev/test text of the tasks: pretraining on it would leak "
                           "the test set (re-run deberta prep with --holdout-brown DIR)", path, (long long)d, name);
            }
        }
        docs += nd;
        shards++;
        free(off); free(tok);
        shard_close(s);
    }
    free(fp);
    if (bad) fatal("%s", err);
    if (!shards) fatal("prep-task: no train shards %s/train-00000.h5 (is --shards a deberta prep output?)", data);
    return docs;
}

int cmd_prep_task(int argc, char **argv) {
    const char *task = NULL, *brown = NULL, *data = NULL, *out = NULL;
    long T = 128;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (i + 1 >= argc) return cli_usage_error("prep-task", "%s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--task")) task = v;
        else if (!strcmp(a, "--brown")) brown = v;
        else if (!strcmp(a, "--shards")) data = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--seq-len")) {
            char *end;
            T = strtol(v, &end, 10);
            if (end == v || *end || T < 3 || T > 65536) return cli_usage_error("prep-task", "--seq-len '%s' must be an integer in [3, 65536]", v);
        } else return cli_usage_error("prep-task", "unknown flag '%s'", a);
    }
    TaskKind kind;
    if (!task || task_kind_parse(task, &kind)) return cli_usage_error("prep-task", "%s", "--task pos|genre is required");
    if (!brown) return cli_usage_error("prep-task", "%s", "--brown DIR is required");
    if (!data) return cli_usage_error("prep-task", "%s", "--shards DATA is required");
    if (!out) return cli_usage_error("prep-task", "%s", "--out TASKDIR is required");
    char err[2048], path[8192];
    BrownText *bt;
    size_t nb;
    if (brown_read_dir(brown, &bt, &nb, err, sizeof err)) fatal("%s", err);
    snprintf(path, sizeof path, "%s/spm.model", data);
    if (access(path, F_OK) == 0) /* data/task.c encodes words with our tokenizer only */
        fatal("prep-task: %s was prepared with a SentencePiece model (%s); the fine-tuning tasks need shards of our own tokenizer "
              "(deberta prep without --tokenizer, or with a tokenizer.bin)", data, path);
    snprintf(path, sizeof path, "%s/tokenizer.bin", data);
    Tokenizer *tk = tokenizer_load(path, err, sizeof err);
    if (!tk) fatal("%s", err);
    long checked = check_holdout(data, tk, bt, nb);
    if (mkdir_p(out) != 0) fatal("output %s: cannot create folder (%s)", out, strerror(errno));
    TaskSet ts[3];
    for (int s = 0; s < 3; s++) {
        if (task_build(kind, bt, nb, s, tk, (int)T, &ts[s], err, sizeof err)) fatal("%s", err);
        snprintf(path, sizeof path, "%s/%s.h5", out, brown_split_names[s]);
        if (task_write(path, &ts[s], err, sizeof err)) fatal("%s", err);
    }
    char hash[17];
    tokenizer_hash_hex(tk, hash);
    printf("prep-task %s: %zu texts, tokenizer %s (%s); none of the dev/test texts is among the %ld documents of the train shards\n",
           task, nb, hash, data, checked);
    const int maj = task_majority_label(&ts[0]);
    for (int s = 0; s < 3; s++) {
        printf("  %-5s %3d texts, %6lld examples of %ld tokens, %7lld labelled %s; majority '%s' %.4f", brown_split_names[s], ts[s].n_docs,
               (long long)ts[s].N, T, (long long)task_n_labelled(&ts[s]), kind == TASK_POS ? "words" : "windows",
               ts[0].label_names[maj], task_constant_accuracy(&ts[s], maj));
        if (kind == TASK_POS && s) printf(", most frequent tag per word %.4f", task_word_tag_accuracy(&ts[0], &ts[s]));
        printf("\n");
    }
    printf("-> %s/train.h5 dev.h5 test.h5\n", out);
    for (int s = 0; s < 3; s++) task_free(&ts[s]);
    tokenizer_free(tk);
    brown_free(bt, nb);
    free(bt);
    return 0;
}
