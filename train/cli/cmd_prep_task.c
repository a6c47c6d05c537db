/* cmd_prep_task.c — `deberta prep-task`: labelled text -> the task files of a fine-tuning task
 * (data/task.h, docs/FORMATS.md "Task files"), tokenised with the tokenizer of a `deberta prep`
 * output (ours or a SentencePiece model).  Two sources:
 *   --format F --train FILE [--dev FILE] [--test FILE]   the user's files in one of the formats of
 *                                                       data/task_format.h (data/task_input.h, task_build.h)
 *   --task pos|genre --brown DIR   the tagged Brown texts (data/brown.h), after checking that none of the
 *                                  task's dev and test texts is in the shards' train split.
 * Every split is built in memory first; the files are written into TASKDIR.tmp-PID and that folder is
 * renamed to TASKDIR at the end, so a failed run leaves no partial TASKDIR. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "autograd/base/util.h"
#include "data/brown.h"
#include "data/shard.h"
#include "data/task.h"
#include "data/task_build.h"
#include "data/task_format.h"
#include "data/task_input.h"
#include "data/tokenizer.h"
#include "data/tokfile.h"
#include "train/cli/cli.h"
#include "train/outpath.h"

static void usage(FILE *f) {
    char all[128], seq[128], tok[128];
    task_format_names(all, sizeof all, TASK_HOLDS_ANY, "|", "|");
    task_format_names(seq, sizeof seq, TASK_HOLDS_SEQUENCES, ", ", " or ");
    task_format_names(tok, sizeof tok, TASK_HOLDS_TOKENS, ", ", " or ");
    fprintf(f,
            "usage: deberta prep-task --format %s --train FILE [--dev FILE] [--test FILE] --shards DATA --out TASKDIR [options]\n"
            "       deberta prep-task --task pos|genre --brown DIR --shards DATA --out TASKDIR [--seq-len T]\n"
            "\n"
            "Labelled text -> TASKDIR/train.h5, dev.h5, test.h5 (inputs: docs/FORMATS.md \"Task inputs\"; files: \"Task files\").\n"
            "  --shards DATA        a `deberta prep` output, or a model folder with spm.model (e.g. the Hugging Face folder\n"
            "                       of a model brought in with `deberta import`): its tokenizer (DATA/spm.model when\n"
            "                       present, else DATA/tokenizer.bin) encodes the texts\n"
            "  --out TASKDIR        output folder (replaced as a whole at the end; nothing is written on an error)\n"
            "  --seq-len T          tokens per example, [CLS] and [SEP] included                        [128]\n"
            "Your files:\n"
            "  --format F           the files' format:\n", all);
    task_format_help(f, "                         ");
    fprintf(f,
            "  --train FILE         the labelled examples; the label set is taken from them\n"
            "  --dev FILE --test FILE  optional: a split not given is drawn from --train (seeded, recorded)\n"
            "  --split-seed S --dev-fraction X --test-fraction X                               [1 0.1 0.1]\n"
            "  --name NAME          the task's name, checked by finetune --task           [the kind's name]\n"
            "  sequence classification (--format %s, with --text-field):\n"
            "  --text-field NAME    the text (a key or a header column)\n"
            "  --text-pair-field NAME  a second text: [CLS] a [SEP] b [SEP], the longer side cut first\n"
            "  --label-field NAME   the label: a string or an integer                                [label]\n"
            "  --regression         the label is a number (a float label, MSE loss)\n"
            "  token classification (--format %s; a format of both kinds without --text-field):\n"
            "  --tokens-field K --tags-field K   keys of the lists of words and of their tags   [tokens tags]\n"
            "  --token-column N --tag-column N   columns of the word and of its tag, 1-based [1, the last one]\n"
            "  --labels A,B,...     the label ids in this order (default: the train labels sorted, numerically for integers)\n"
            "  --labels-file FILE   the same, one label per line (a label may hold ','): the whole set, also\n"
            "                       labels only dev or test hold\n"
            "The Brown tasks:\n"
            "  --task pos|genre     pos: a universal tag per word; genre: the text's genre per window\n"
            "  --brown DIR          the tagged texts ca01 ... cr09 (scripts/fetch-corpus.sh: CORPUS/brown-tagged);\n"
            "                       the train shards of DATA must not hold any dev or test text\n"
            "                       (prep --holdout-brown DIR).  Split by text number: ..2 dev, ..3 test.\n", seq, tok);
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

/* ---------------------------------------------------------------- writing TASKDIR whole */

static const char *const SPLITS[3] = {"train", "dev", "test"};

static void remove_split_files(const char *dir) {
    char p[8300];
    for (int k = 0; k < 3; k++) {
        snprintf(p, sizeof p, "%s/%s.h5", dir, SPLITS[k]);
        unlink(p);
        snprintf(p, sizeof p, "%s/%s.h5.tmp", dir, SPLITS[k]);
        unlink(p);
    }
    rmdir(dir);
}

/* 1 when dir exists and is not a folder, or holds something other than train.h5, dev.h5, test.h5. */
static int has_other_files(const char *dir) {
    struct stat st;
    if (stat(dir, &st) != 0) return 0;
    if (!S_ISDIR(st.st_mode)) return 1;
    DIR *d = opendir(dir);
    if (!d) return 1;
    struct dirent *e;
    int other = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "train.h5") && strcmp(e->d_name, "dev.h5") &&
            strcmp(e->d_name, "test.h5"))
            other = 1;
    closedir(d);
    return other;
}

/* Writes the three splits into OUT.tmp-PID, then puts that folder in OUT's place. */
static void write_taskdir(const char *out, TaskSet ts[3]) {
    char tmp[8192], old[8192], path[8300], err[2048];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", out, (long)getpid());
    snprintf(old, sizeof old, "%s.old-%ld", out, (long)getpid());
    remove_split_files(tmp);
    if (mkdir_p(tmp) != 0) fatal("output %s: cannot create folder (%s)", tmp, strerror(errno));
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "%s/%s.h5", tmp, SPLITS[k]);
        if (task_write(path, &ts[k], err, sizeof err)) {
            remove_split_files(tmp);
            fatal("%s", err);
        }
    }
    struct stat st;
    int had = stat(out, &st) == 0;
    if (had && rename(out, old) != 0) { remove_split_files(tmp); fatal("output %s: cannot move the old task files aside (%s)", out, strerror(errno)); }
    if (rename(tmp, out) != 0) {
        int e = errno;
        if (had) rename(old, out);
        remove_split_files(tmp);
        fatal("output %s: cannot rename %s to it (%s)", out, tmp, strerror(e));
    }
    fsync_dir_of(out);
    if (had) remove_split_files(old);
}

static void print_splits(TaskSet ts[3], const char *what) {
    const int tag = ts[0].kind == TASK_TAGGING, reg = ts[0].kind == TASK_REGRESSION;
    const int maj = task_majority_label(&ts[0]);
    for (int s = 0; s < 3; s++) {
        if (ts[s].n_docs) printf("  %-5s %3d texts, %6lld examples of %d tokens", SPLITS[s], ts[s].n_docs, (long long)ts[s].N, ts[s].T);
        else printf("  %-5s %7lld examples of %d tokens", SPLITS[s], (long long)ts[s].N, ts[s].T);
        if (!reg) printf(", %7lld labelled %s; majority '%s' %.4f", (long long)task_n_labelled(&ts[s]), tag ? "words" : what,
                         ts[0].label_names[maj], task_constant_accuracy(&ts[s], maj));
        if (tag && s) printf(", most frequent tag per word %.4f", task_word_tag_accuracy(&ts[0], &ts[s]));
        if (reg) {
            double m = 0;
            for (int64_t n = 0; n < ts[s].N; n++) m += ts[s].targets[n];
            printf(", label mean %.4f", m / (double)ts[s].N);
        }
        printf("\n");
    }
}

/* ---------------------------------------------------------------- the Brown tasks */

static int prep_brown(const char *task, const char *brown, const char *data, const char *out, long T) {
    TaskKind kind;
    if (!strcmp(task, "pos")) kind = TASK_TAGGING;
    else if (!strcmp(task, "genre")) kind = TASK_CLASSIFICATION;
    else return cli_usage_error("prep-task", "--task must be pos or genre (got '%s')", task);
    char err[2048], path[8192];
    BrownText *bt;
    size_t nb;
    if (brown_read_dir(brown, &bt, &nb, err, sizeof err)) fatal("%s", err);
    snprintf(path, sizeof path, "%s/spm.model", data);
    if (access(path, F_OK) == 0) /* the Brown builder and the hold-out check decode with our tokenizer only */
        fatal("prep-task: %s was prepared with a SentencePiece model (%s); the Brown tasks need shards of our own tokenizer "
              "(deberta prep without --tokenizer, or with a tokenizer.bin); your own files (--format) take either", data, path);
    snprintf(path, sizeof path, "%s/tokenizer.bin", data);
    Tokenizer *tk = tokenizer_load(path, err, sizeof err);
    if (!tk) fatal("%s", err);
    long checked = check_holdout(data, tk, bt, nb);
    TaskSet ts[3];
    for (int s = 0; s < 3; s++) {
        if (task_build(kind, bt, nb, s, tk, (int)T, &ts[s], err, sizeof err)) fatal("%s", err);
        snprintf(ts[s].source, sizeof ts[s].source, "brown:%.500s", brown);
    }
    write_taskdir(out, ts);
    char hash[17];
    tokenizer_hash_hex(tk, hash);
    printf("prep-task %s: %zu texts, tokenizer %s (%s); none of the dev/test texts is among the %ld documents of the train shards\n",
           task, nb, hash, data, checked);
    print_splits(ts, "windows");
    printf("-> %s/train.h5 dev.h5 test.h5\n", out);
    for (int s = 0; s < 3; s++) task_free(&ts[s]);
    tokenizer_free(tk);
    brown_free(bt, nb);
    free(bt);
    return 0;
}

/* ---------------------------------------------------------------- the user's files */

typedef struct {
    const char *format, *files[3], *name, *text, *pair, *label, *tokens, *tags, *labels, *labels_file;
    int regression, token_col, tag_col;
    long seed;
    double dev_frac, test_frac;
} UserArgs;

static int prep_files(const UserArgs *u, const char *data, const char *out, long T) {
    const TaskFormat *fmt = task_format_find(u->format);
    char names[128];
    if (!fmt) return cli_usage_error("prep-task", "--format must be %s (got '%s')", task_format_names(names, sizeof names, TASK_HOLDS_ANY, ", ", " or "), u->format);
    if (!u->files[0]) return cli_usage_error("prep-task", "%s", "--train FILE is required with --format");
    /* token examples from a format that holds only them, or from one of both kinds without a text field */
    const int both = (fmt->holds & TASK_HOLDS_ANY) == TASK_HOLDS_ANY;
    const int tagging = !(fmt->holds & TASK_HOLDS_SEQUENCES) || (both && !u->text);
    if (!tagging && !u->text) return cli_usage_error("prep-task", "--text-field NAME is required with --format %s", u->format);
    if (tagging && (u->pair || u->regression)) return cli_usage_error("prep-task", "%s", "--text-pair-field and --regression are for sequence examples (--text-field)");
    if (tagging && both && u->label) return cli_usage_error("prep-task", "%s", "token examples take --tags-field, not --label-field");
    if (!(u->dev_frac >= 0 && u->test_frac >= 0 && u->dev_frac + u->test_frac < 1))
        return cli_usage_error("prep-task", "%s", "--dev-fraction and --test-fraction must be >= 0 with a sum below 1");
    if (u->regression && (u->labels || u->labels_file)) return cli_usage_error("prep-task", "%s", "--labels and --labels-file are for classification and tagging, not --regression");
    if (u->labels && u->labels_file) return cli_usage_error("prep-task", "%s", "--labels and --labels-file do not go together (give one)");
    TaskInputSpec spec = {.format = fmt, .tagging = tagging, .need_labels = 1, .text_field = u->text, .text_pair_field = u->pair,
                          .label_field = u->label ? u->label : "label", .tokens_field = u->tokens, .tags_field = u->tags,
                          .token_column = u->token_col, .tag_column = u->tag_col};
    if (tagging) spec.label_field = NULL;
    TaskBuildSpec bs = {.kind = tagging ? TASK_TAGGING : u->regression ? TASK_REGRESSION : TASK_CLASSIFICATION, .name = u->name, .T = (int)T,
                        .pair = u->pair != NULL, .label_order = u->labels, .label_field = spec.label_field,
                        .labels_file = u->labels_file,
                        .unseen_hint = u->labels || u->labels_file ? NULL : "give the whole label set with --labels-file FILE, one label per line"};
    char err[2048], path[8192];
    /* the tokenizer: a SentencePiece model when DATA has one, else ours */
    snprintf(path, sizeof path, "%s/spm.model", data);
    if (access(path, F_OK) != 0) snprintf(path, sizeof path, "%s/tokenizer.bin", data);
    TokFile *tk = tokfile_load(path, err, sizeof err);
    if (!tk) fatal("%s (is --shards a deberta prep output?)", err);
    TaskExamples ex[3];
    memset(ex, 0, sizeof ex);
    for (int k = 0; k < 3; k++)
        if (u->files[k] && task_input_read(u->files[k], &spec, &ex[k], err, sizeof err)) fatal("%s", err);
    TaskSet ls;
    memset(&ls, 0, sizeof ls);
    if (task_label_set(&ex[0], u->files[0], &bs, &ls, err, sizeof err)) fatal("%s", err);
    size_t *sel[3] = {0}, n_sel[3] = {0};
    const int draw_dev = !u->files[1], draw_test = !u->files[2];
    task_split_draw(ex[0].n, (uint64_t)u->seed, u->dev_frac, u->test_frac, draw_dev, draw_test, sel, n_sel);
    TaskSet ts[3];
    for (int k = 0; k < 3; k++) {
        const int from_train = k == 0 || !u->files[k];
        const int src = from_train ? 0 : k;
        if (task_build_examples(&ex[src], from_train ? sel[k] : NULL, from_train ? n_sel[k] : 0, u->files[src], &bs, &ls, tk, SPLITS[k], &ts[k],
                                err, sizeof err))
            fatal("%s%s", err, from_train && k ? " (drawn from --train; give --dev/--test files or other fractions)" : "");
        if ((draw_dev || draw_test) && from_train) {
            ts[k].split_seed = u->seed;
            ts[k].split_dev_fraction = draw_dev ? u->dev_frac : 0;
            ts[k].split_test_fraction = draw_test ? u->test_frac : 0;
        }
    }
    write_taskdir(out, ts);
    printf("prep-task %s (%s, %s): %s", ts[0].name, task_kind_name(bs.kind), u->format, u->files[0]);
    if (draw_dev || draw_test)
        printf(" (%s%s%s drawn from it: seed %ld, fractions %g %g)", draw_dev ? "dev" : "", draw_dev && draw_test ? " and " : "", draw_test ? "test" : "",
               u->seed, draw_dev ? u->dev_frac : 0, draw_test ? u->test_frac : 0);
    printf("; tokenizer %s (%s, %s), %d label%s\n", tk->hash, tk->kind == TOKFILE_SPM ? "SentencePiece" : "ours", path, ls.n_labels, ls.n_labels == 1 ? "" : "s");
    print_splits(ts, "examples");
    for (int k = 0; k < 3; k++) {
        if (ts[k].n_truncated)
            printf("  %s: %lld %s cut to %ld tokens%s\n", SPLITS[k], (long long)ts[k].n_truncated, tagging ? "words longer than a window" : "examples",
                   T, bs.pair ? " (longest first)" : "");
        if (ts[k].n_windows)
            printf("  %s: sentences longer than %ld tokens split into windows: %lld more examples\n", SPLITS[k], T - 2, (long long)ts[k].n_windows);
    }
    printf("-> %s/train.h5 dev.h5 test.h5\n", out);
    for (int k = 0; k < 3; k++) { task_free(&ts[k]); task_examples_free(&ex[k]); free(sel[k]); }
    tokfile_free(tk);
    return 0;
}

static int num_arg(const char *flag, const char *v, double lo, double hi, double *x) {
    char *end;
    *x = strtod(v, &end);
    if (end == v || *end || !(*x >= lo && *x <= hi)) return cli_usage_error("prep-task", "%s '%s' must be a number in [%g, %g]", flag, v, lo, hi);
    return 0;
}

int cmd_prep_task(int argc, char **argv) {
    const char *task = NULL, *brown = NULL, *data = NULL, *out = NULL;
    UserArgs u = {.seed = 1, .dev_frac = 0.1, .test_frac = 0.1};
    long T = 128;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        if (!strcmp(a, "--regression")) { u.regression = 1; continue; }
        if (i + 1 >= argc) return cli_usage_error("prep-task", "%s needs a value", a);
        const char *v = argv[++i];
        double x;
        if (!strcmp(a, "--task")) task = v;
        else if (!strcmp(a, "--brown")) brown = v;
        else if (!strcmp(a, "--shards")) data = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--format")) u.format = v;
        else if (!strcmp(a, "--train")) u.files[0] = v;
        else if (!strcmp(a, "--dev")) u.files[1] = v;
        else if (!strcmp(a, "--test")) u.files[2] = v;
        else if (!strcmp(a, "--name")) {
            if (!v[0] || strlen(v) > 31 || strpbrk(v, " \t\n")) return cli_usage_error("prep-task", "--name '%s' must be 1 to 31 bytes without spaces", v);
            u.name = v;
        } else if (!strcmp(a, "--text-field")) u.text = v;
        else if (!strcmp(a, "--text-pair-field")) u.pair = v;
        else if (!strcmp(a, "--label-field")) u.label = v;
        else if (!strcmp(a, "--tokens-field")) u.tokens = v;
        else if (!strcmp(a, "--tags-field")) u.tags = v;
        else if (!strcmp(a, "--labels")) u.labels = v;
        else if (!strcmp(a, "--labels-file")) u.labels_file = v;
        else if (!strcmp(a, "--token-column")) { if (num_arg(a, v, 1, 64, &x)) return 2; u.token_col = (int)x; if (u.token_col != x) return cli_usage_error("prep-task", "%s must be an integer", a); }
        else if (!strcmp(a, "--tag-column")) { if (num_arg(a, v, 1, 64, &x)) return 2; u.tag_col = (int)x; if (u.tag_col != x) return cli_usage_error("prep-task", "%s must be an integer", a); }
        else if (!strcmp(a, "--split-seed")) { if (num_arg(a, v, 0, 9007199254740991.0, &x) || x != floor(x)) return x != floor(x) ? cli_usage_error("prep-task", "--split-seed must be an integer") : 2; u.seed = (long)x; }
        else if (!strcmp(a, "--dev-fraction")) { if (num_arg(a, v, 0, 0.9, &u.dev_frac)) return 2; }
        else if (!strcmp(a, "--test-fraction")) { if (num_arg(a, v, 0, 0.9, &u.test_frac)) return 2; }
        else if (!strcmp(a, "--seq-len")) {
            char *end;
            T = strtol(v, &end, 10);
            if (end == v || *end || T < 3 || T > 65536) return cli_usage_error("prep-task", "--seq-len '%s' must be an integer in [3, 65536]", v);
        } else return cli_usage_error("prep-task", "unknown flag '%s'", a);
    }
    if (!data) return cli_usage_error("prep-task", "%s", "--shards DATA is required");
    if (!out) return cli_usage_error("prep-task", "%s", "--out TASKDIR is required");
    if (has_other_files(out)) return cli_usage_error("prep-task", "--out %s is not a folder of task files (it holds other files than train.h5, dev.h5, test.h5, or is not a folder); give a new or a task folder", out);
    char err[2048];
    const char *ins[6] = {data, brown, u.files[0], u.files[1], u.files[2], u.labels_file};
    if (out_path_check("--out", out, OUT_DIR, ins, 6, err, sizeof err)) fatal("prep-task: %s", err);
    if (task || brown) {
        if (u.format) return cli_usage_error("prep-task", "%s", "--task/--brown (the Brown tasks) and --format (your files) do not go together");
        if (u.labels || u.labels_file) return cli_usage_error("prep-task", "%s", "--labels and --labels-file are for your files (--format); the Brown tasks have their own label sets");
        if (!task) return cli_usage_error("prep-task", "%s", "--task pos|genre is required with --brown");
        if (!brown) return cli_usage_error("prep-task", "%s", "--brown DIR is required with --task");
        return prep_brown(task, brown, data, out, T);
    }
    if (!u.format) {
        char names[128];
        return cli_usage_error("prep-task", "--format %s (your files) or --task pos|genre --brown DIR is required", task_format_names(names, sizeof names, TASK_HOLDS_ANY, "|", "|"));
    }
    return prep_files(&u, data, out, T);
}
