/* test_task_input.c — the task-input readers (data/task_input.c, the core; data/task_jsonl.c,
 * task_csv.c, task_conll.c) on small inputs in memory: UTF-8
 * validation, RFC 4180 CSV (quoted commas, doubled quotes, line breaks in fields, CRLF, a BOM) with the
 * line each record starts on, TSV, CoNLL (-DOCSTART-, spaces or tabs, default and given columns),
 * JSONL (\u escapes and surrogate pairs, integer and real labels, token lists); the label set (numbers
 * with a fraction refused as class names, --labels, --labels-file); the split draw; the format registry
 * (data/task_formats.c) checked over whatever it lists; and a format written here against the reader
 * interface (data/task_reader.h), as a new module would be. */
#include "data/task_build.h"
#include "data/task_format.h"
#include "data/task_input.h"
#include "data/task_reader.h"
#include "data/tokfile.h"
#include "autograd/base/util.h"
#include "tests/testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_utf8(void **state) {
    (void)state;
    static const char *const good[] = {"", "plain", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf"};
    for (size_t i = 0; i < ARRAY_LEN(good); i++)
        if (!utf8_valid(good[i], strlen(good[i]), NULL)) fail_msg("valid UTF-8 #%zu refused", i);
    static const struct { const char *s; size_t bad; } B[] = {
        {"ab\x80", 2},             /* lone continuation byte */
        {"\xc0\xaf", 0},           /* overlong '/' */
        {"\xc1\xbf", 0},           /* overlong */
        {"x\xe0\x80\x80", 1},      /* overlong 3-byte */
        {"\xed\xa0\x80", 0},       /* surrogate U+D800 */
        {"\xf0\x8f\xbf\xbf", 0},   /* overlong 4-byte */
        {"\xf4\x90\x80\x80", 0},   /* above U+10FFFF */
        {"ok\xe2\x82", 2},         /* truncated at the end */
        {"\xc3(", 0},              /* bad continuation */
        {"\xff", 0},
    };
    for (size_t i = 0; i < ARRAY_LEN(B); i++) {
        size_t bad = 99;
        if (utf8_valid(B[i].s, strlen(B[i].s), &bad)) fail_msg("invalid UTF-8 #%zu accepted", i);
        assert_int_equal(bad, B[i].bad);
    }
}

/* The registered format called name (the test fails when there is none). */
static const TaskFormat *format_of(const char *name) {
    const TaskFormat *f = task_format_find(name);
    if (!f) fail_msg("no input format '%s' in the registry", name);
    return f;
}

static TaskExamples read_ok(const char *text, const TaskInputSpec *sp) {
    TaskExamples ex;
    char err[512];
    if (task_input_read_mem(text, strlen(text), "mem", sp, &ex, err, sizeof err)) fail_msg("%s", err);
    return ex;
}
static void read_bad(const char *text, const TaskInputSpec *sp, const char *needle) {
    TaskExamples ex;
    char err[512];
    if (task_input_read_mem(text, strlen(text), "mem", sp, &ex, err, sizeof err) == 0) fail_msg("accepted; expected '%s'", needle);
    if (!strstr(err, needle)) fail_msg("message '%s' lacks '%s'", err, needle);
    assert_null(ex.ex);
}

static void test_csv(void **state) {
    (void)state;
    TaskInputSpec sp = {.format = format_of("csv"), .need_labels = 1, .text_field = "text", .label_field = "label"};
    const char *in = "\xef\xbb\xbfid,text,label\r\n"
                     "1,\"a, b\",x\r\n"
                     "2,\"say \"\"hi\"\"\nand go\",y\r\n"
                     "\r\n"
                     "3, spaced ,x\r\n";
    TaskExamples ex = read_ok(in, &sp);
    assert_int_equal(ex.n, 3);
    assert_string_equal(ex.ex[0].text, "a, b");
    assert_int_equal(ex.ex[0].line, 2);
    assert_string_equal(ex.ex[1].text, "say \"hi\"\nand go");
    assert_int_equal(ex.ex[1].line, 3);
    assert_string_equal(ex.ex[2].text, " spaced ");   /* RFC 4180: spaces belong to the field */
    assert_int_equal(ex.ex[2].line, 6);                /* after the two-line record and a blank line */
    assert_string_equal(ex.ex[2].label, "x");
    assert_true(ex.has_labels);
    task_examples_free(&ex);
    read_bad("text,label\n\"open,x\n", &sp, "mem:2: unterminated quoted field");
    read_bad("text,label\na\"b,x\n", &sp, "mem:2: CSV:");
    read_bad("txt,label\na,x\n", &sp, "mem:1: no column 'text' (the header has: txt, label)");
    read_bad("text,label\n,x\n", &sp, "mem:2: empty text in column 'text'");
    read_bad("text,label\na,\n", &sp, "mem:2: empty label in column 'label'");
    /* labels optional (predict): no label column is fine */
    TaskInputSpec pr = sp;
    pr.need_labels = 0;
    ex = read_ok("text\nhello\n", &pr);
    assert_int_equal(ex.n, 1);
    assert_null(ex.ex[0].label);
    assert_false(ex.has_labels);
    task_examples_free(&ex);
}

static void test_tsv(void **state) {
    (void)state;
    TaskInputSpec sp = {.format = format_of("tsv"), .need_labels = 1, .text_field = "a", .text_pair_field = "b", .label_field = "y"};
    TaskExamples ex = read_ok("y\ta\tb\r\n1\tone \"q\"\ttwo\n0\tthree\tfour\n", &sp);
    assert_int_equal(ex.n, 2);
    assert_string_equal(ex.ex[0].text, "one \"q\"");  /* no quoting in TSV */
    assert_string_equal(ex.ex[0].text_pair, "two");
    assert_string_equal(ex.ex[1].label, "0");
    assert_int_equal(ex.ex[1].line, 3);
    task_examples_free(&ex);
    read_bad("y\ta\tb\n1\tx\n", &sp, "mem:2: 2 fields, the header has 3");
    read_bad("y\ta\tb\n1\tx\t\n", &sp, "mem:2: empty text in column 'b'");
}

static void test_conll(void **state) {
    (void)state;
    TaskInputSpec sp = {.format = format_of("conll"), .tagging = 1, .need_labels = 1};
    const char *in = "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects\tVBZ\tB-VP\tO\n\n\n-DOCSTART- O\nPeter NNP B-NP B-PER\r\n";
    TaskExamples ex = read_ok(in, &sp);
    assert_int_equal(ex.n, 2);
    assert_int_equal(ex.ex[0].n_words, 2);
    assert_int_equal(ex.ex[0].line, 3);
    assert_string_equal(ex.ex[0].words[1], "rejects");
    assert_string_equal(ex.ex[0].tags[0], "B-ORG");    /* the last column by default */
    assert_int_equal(ex.ex[1].line, 8);
    assert_string_equal(ex.ex[1].tags[0], "B-PER");
    task_examples_free(&ex);
    sp.tag_column = 2;
    ex = read_ok(in, &sp);
    assert_string_equal(ex.ex[0].tags[1], "VBZ");
    task_examples_free(&ex);
    sp.tag_column = 4;
    read_bad("a b c d\nx y\n", &sp, "mem:2: 2 columns, --tag-column 4 needs at least 4");
    sp.tag_column = 0;
    read_bad("word\n", &sp, "mem:1: 1 column, a token and its tag need at least 2");
}

static void test_jsonl(void **state) {
    (void)state;
    TaskInputSpec sp = {.format = format_of("jsonl"), .need_labels = 1, .text_field = "t", .label_field = "l"};
    TaskExamples ex = read_ok("{\"t\": \"caf\\u00e9 \\ud83d\\ude00\", \"l\": 7}\n\n  \n{\"t\": \"x\", \"l\": 0.25, \"other\": [1]}\n", &sp);
    assert_int_equal(ex.n, 2);
    assert_string_equal(ex.ex[0].text, "caf\xc3\xa9 \xf0\x9f\x98\x80");
    assert_string_equal(ex.ex[0].label, "7");
    assert_string_equal(ex.ex[1].label, "0.25");
    assert_int_equal(ex.ex[1].line, 4);
    task_examples_free(&ex);
    read_bad("{\"t\": \"x\", \"l\": true}\n", &sp, "mem:1: the label at key 'l' is not a string or a number");
    read_bad("{\"t\": 5, \"l\": 1}\n", &sp, "mem:1: the value at key 't' is not a string");
    read_bad("{\"t\": \"a\\u0000b\", \"l\": 1}\n", &sp, "mem:1: not JSON");
    read_bad("{\"t\": \"a\", \"t\": \"b\", \"l\": 1}\n", &sp, "mem:1: not JSON: duplicate object key");
    TaskInputSpec tg = {.format = format_of("jsonl"), .tagging = 1, .need_labels = 1};
    ex = read_ok("{\"tokens\": [\"A\", \"b\"], \"tags\": [3, \"O\"]}\n", &tg);
    assert_int_equal(ex.ex[0].n_words, 2);
    assert_string_equal(ex.ex[0].tags[0], "3");
    task_examples_free(&ex);
    read_bad("{\"tokens\": [\"A\", \"b\"], \"tags\": [\"O\"]}\n", &tg, "mem:1: 2 tokens at key 'tokens' but 1 tags at key 'tags'");
    read_bad("{\"tokens\": [\"A\", \"\"], \"tags\": [\"O\", \"O\"]}\n", &tg, "mem:1: token 2 at key 'tokens' is empty");
    read_bad("{\"tokens\": [], \"tags\": []}\n", &tg, "mem:1: empty list at key 'tokens'");
}

/* the label set (data/task_build.c task_label_set): numbers with a fraction are refused without
 * --regression in every format (JSONL reals and CSV text alike), kept as class names when named with
 * --labels; --labels-file (one per line) takes ',' and labels train lacks, and names its bad lines */
static int label_set(const char *text, const char *f, TaskKind kind, const char *order, const char *file, TaskSet *ls, char *err, size_t errlen) {
    TaskInputSpec sp = {.format = format_of(f), .tagging = kind == TASK_TAGGING, .need_labels = 1, .text_field = kind == TASK_TAGGING ? NULL : "t",
                        .label_field = kind == TASK_TAGGING ? NULL : "l"};
    TaskExamples ex = read_ok(text, &sp);
    TaskBuildSpec bs = {.kind = kind, .T = 16, .label_order = order, .labels_file = file, .label_field = "l"};
    memset(ls, 0, sizeof *ls);
    const int rc = task_label_set(&ex, "mem", &bs, ls, err, errlen);
    task_examples_free(&ex);
    return rc;
}
static void label_set_bad(const char *text, const char *f, TaskKind kind, const char *order, const char *file, const char *needle) {
    TaskSet ls;
    char err[1024];
    if (label_set(text, f, kind, order, file, &ls, err, sizeof err) == 0) fail_msg("label set accepted; expected '%s'", needle);
    if (!strstr(err, needle)) fail_msg("message '%s' lacks '%s'", err, needle);
}

static void test_label_set(void **state) {
    (void)state;
    TaskSet ls;
    char err[1024];
    const char *reals = "{\"t\": \"a\", \"l\": 1.5}\n{\"t\": \"b\", \"l\": 0.5}\n";
    label_set_bad(reals, "jsonl", TASK_CLASSIFICATION, NULL, NULL, "mem:2: label '0.5' is a number that is not an integer (a number label needs --regression");
    label_set_bad("t,l\na,1\nb,2.75\n", "csv", TASK_CLASSIFICATION, NULL, NULL, "mem:3: label '2.75' is a number that is not an integer");
    label_set_bad("t\tl\na\tneg\nb\t-1e-3\n", "tsv", TASK_CLASSIFICATION, NULL, NULL, "mem:3: label '-1e-3' is a number");
    assert_int_equal(label_set(reals, "jsonl", TASK_REGRESSION, NULL, NULL, &ls, err, sizeof err), 0);
    assert_int_equal(ls.n_labels, 1);
    assert_int_equal(label_set(reals, "jsonl", TASK_CLASSIFICATION, "0.5,1.5", NULL, &ls, err, sizeof err), 0); /* named: class names */
    assert_int_equal(ls.n_labels, 2);
    assert_int_equal(label_set("t,l\na,10\nb,9\nc,1.\n", "csv", TASK_CLASSIFICATION, NULL, NULL, &ls, err, sizeof err), -1);
    assert_int_equal(label_set("t,l\na,10\nb,9\nc,v1.5\n", "csv", TASK_CLASSIFICATION, NULL, NULL, &ls, err, sizeof err), 0);
    assert_int_equal(label_set("t,l\na,10\nb,-9\n", "csv", TASK_CLASSIFICATION, NULL, NULL, &ls, err, sizeof err), 0);
    assert_string_equal(ls.label_names[0], "-9");  /* integers: numeric order */
    /* --labels-file: ',' is a label, 'fw-wps' only in the file, CRLF and blank lines */
    char path[] = "/tmp/test_task_input-XXXXXX";
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("NN\r\n,\n\nfw-wps\nVB\n", f);
    fclose(f);
    const char *conll = "the NN\n, ,\nruns VB\n";
    assert_int_equal(label_set(conll, "conll", TASK_TAGGING, NULL, path, &ls, err, sizeof err), 0);
    assert_int_equal(ls.n_labels, 4);
    assert_string_equal(ls.label_names[0], "NN");
    assert_string_equal(ls.label_names[1], ",");
    assert_string_equal(ls.label_names[2], "fw-wps");
    label_set_bad("the NN\nx JJ\n", "conll", TASK_TAGGING, NULL, path, "mem:1: label 'JJ' is not one of the labels of --labels-file");
    f = fopen(path, "w");
    fputs("NN\n,\nNN\n", f);
    fclose(f);
    label_set_bad(conll, "conll", TASK_TAGGING, NULL, path, ":3: 'NN' twice");
    f = fopen(path, "w");
    fputs("NN\n\xff\n", f);
    fclose(f);
    label_set_bad(conll, "conll", TASK_TAGGING, NULL, path, ":2: invalid UTF-8");
    unlink(path);
    label_set_bad(conll, "conll", TASK_TAGGING, NULL, path, "cannot read (No such file or directory)");
}

/* ---------------------------------------------------------------- the registry and the interface */

/* Every registered format: found by its name, a name that fits the task files' input_format (1 to 7
 * bytes), a --help line, what it holds, a reader; no name twice; the lists by kind hold exactly the
 * formats of that kind; an unknown name is NULL.  And the core's checks of a spec against the format,
 * for each format: token examples only from a format that holds them, sequence examples likewise,
 * each refusal one line naming the format. */
static void test_format_registry(void **state) {
    (void)state;
    char all[256], seq[256], tok[256], err[512];
    task_format_names(all, sizeof all, TASK_HOLDS_ANY, "|", "|");
    task_format_names(seq, sizeof seq, TASK_HOLDS_SEQUENCES, "|", "|");
    task_format_names(tok, sizeof tok, TASK_HOLDS_TOKENS, "|", "|");
    int n = 0, n_seq = 0, n_tok = 0;
    for (char *save = NULL, *name = strtok_r(all, "|", &save); name; name = strtok_r(NULL, "|", &save), n++) {
        const TaskFormat *f = format_of(name);
        TaskSet ts;
        if (strlen(f->name) < 1 || strlen(f->name) >= sizeof ts.input_format) fail_msg("format name '%s' does not fit input_format", f->name);
        if (!f->about || !f->about[0] || !f->read || !(f->holds & TASK_HOLDS_ANY)) fail_msg("format '%s' lacks its about line, reader or kind", f->name);
        char bar[16];
        snprintf(bar, sizeof bar, "|%s|", name);
        char wrapped[260];
        snprintf(wrapped, sizeof wrapped, "|%s|", seq);
        if (!!(f->holds & TASK_HOLDS_SEQUENCES) != !!strstr(wrapped, bar)) fail_msg("'%s' and the list of sequence formats disagree", name);
        n_seq += !!(f->holds & TASK_HOLDS_SEQUENCES);
        snprintf(wrapped, sizeof wrapped, "|%s|", tok);
        if (!!(f->holds & TASK_HOLDS_TOKENS) != !!strstr(wrapped, bar)) fail_msg("'%s' and the list of token formats disagree", name);
        n_tok += !!(f->holds & TASK_HOLDS_TOKENS);
        /* the spec against the format: the kind it does not hold is refused with one line */
        TaskInputSpec sp = {.format = f, .need_labels = 1, .text_field = "t", .label_field = "l"};
        TaskExamples ex;
        const char *x = "t,l\nx,1\n";
        if (!(f->holds & TASK_HOLDS_SEQUENCES)) {
            assert_int_equal(task_input_read_mem(x, strlen(x), "mem", &sp, &ex, err, sizeof err), -1);
            char want[128];
            snprintf(want, sizeof want, "mem: %s holds token examples (tags per word)", f->name);
            assert_string_equal(err, want);
            assert_null(ex.ex);
        }
        sp = (TaskInputSpec){.format = f, .tagging = 1, .need_labels = 1};
        if (!(f->holds & TASK_HOLDS_TOKENS)) {
            assert_int_equal(task_input_read_mem(x, strlen(x), "mem", &sp, &ex, err, sizeof err), -1);
            char want[128];
            snprintf(want, sizeof want, ", not %s", f->name);
            const size_t e = strlen(err), w = strlen(want);
            if (strncmp(err, "mem: token examples are read from ", 34) || e < w || strcmp(err + e - w, want))
                fail_msg("'%s' is not 'mem: token examples are read from ...%s'", err, want);
            assert_null(ex.ex);
        }
    }
    assert_true(n >= 1);
    /* every name once: n names, each found, and the joined list as long as the names and separators */
    char again[256];
    size_t len = 0;
    task_format_names(again, sizeof again, TASK_HOLDS_ANY, "|", "|");
    for (char *save = NULL, *a = strtok_r(again, "|", &save); a; a = strtok_r(NULL, "|", &save)) {
        char rest[256];
        snprintf(rest, sizeof rest, "|%s|", save && *save ? save : "");
        char bar[16];
        snprintf(bar, sizeof bar, "|%s|", a);
        if (strstr(rest, bar)) fail_msg("format name '%s' registered twice", a);
        len++;
    }
    assert_int_equal(len, n);
    /* --help: one line per format, each naming a format of the list */
    char *help = NULL;
    size_t hlen = 0;
    FILE *hf = open_memstream(&help, &hlen);
    task_format_help(hf, "  ");
    fclose(hf);
    int lines = 0;
    for (char *save = NULL, *line = strtok_r(help, "\n", &save); line; line = strtok_r(NULL, "\n", &save), lines++) {
        char name[16] = "", bar[20];
        sscanf(line, " %15s", name);
        snprintf(bar, sizeof bar, "|%s|", name);
        char wrapped[260];
        task_format_names(again, sizeof again, TASK_HOLDS_ANY, "|", "|");
        snprintf(wrapped, sizeof wrapped, "|%s|", again);
        if (!strstr(wrapped, bar)) fail_msg("--help line '%s' names no format of the list '%s'", line, again);
    }
    free(help);
    assert_int_equal(lines, n);
    assert_true(n_seq >= 1 && n_tok >= 1);
    assert_null(task_format_find("xml"));
    assert_null(task_format_find(""));
    /* the English list of the messages: "a, b or c" */
    char list[256];
    task_format_names(list, sizeof list, TASK_HOLDS_ANY, ", ", " or ");
    if (n > 1 && (!strstr(list, " or ") || strstr(strstr(list, " or ") + 4, ", "))) fail_msg("'%s' is not 'a, b or c'", list);
}

/* A format defined here, as a new module would be (task_reader.h only): one sentence per line,
 * words separated by spaces, each word/TAG.  Read through the core (the byte-order mark, the spec
 * checks, the example list, has_labels, the format recorded); built into task examples whose
 * input_format is its name; and a bad tag's line: the sentence's line for this format
 * (word_per_line 0), the word's own line for conll (word_per_line 1). */
static int slash_line(TaskReader *r, const TaskLine *l) {
    TaskExample *e = tr_push(r, l->no);
    const char **w = tr_alloc(r, l->n * sizeof(char *)), **t = tr_alloc(r, l->n * sizeof(char *));
    int n = 0;
    for (size_t a = 0; a < l->n;) {
        size_t b = a;
        while (b < l->n && l->p[b] != ' ') b++;
        const char *slash = memchr(l->p + a, '/', b - a);
        if (!slash) return errf(r->err, r->errlen, "%s:%ld: a word without /TAG", r->name, l->no);
        w[n] = tr_str(r, l->p + a, (size_t)(slash - l->p - a));
        t[n] = tr_str(r, slash + 1, (size_t)(l->p + b - slash - 1));
        if (tr_label(r, l->no, t[n], "")) return -1;
        n++;
        a = b + 1;
    }
    e->n_words = n;
    e->words = w;
    e->tags = t;
    return 0;
}
static int read_slash(TaskReader *r, const char *buf, size_t len) { return tr_each_line(r, buf, len, slash_line); }
static const TaskFormat slash_format = {"slash", "a sentence per line, each word/TAG", TASK_HOLDS_TOKENS, 0, read_slash};

static void test_format_interface(void **state) {
    (void)state;
    char err[1024];
    TaskInputSpec sp = {.format = &slash_format, .tagging = 1, .need_labels = 1};
    TaskExamples ex = read_ok("\xef\xbb\xbfthe/DET cat/NOUN\n\nsat/VERB on/ADP it/PRON\n", &sp);
    assert_int_equal(ex.n, 2);
    assert_ptr_equal(ex.format, &slash_format);
    assert_true(ex.has_labels);
    assert_int_equal(ex.ex[1].line, 3);
    assert_string_equal(ex.ex[0].words[0], "the");
    assert_string_equal(ex.ex[1].tags[2], "PRON");
    read_bad("a/DET b\n", &sp, "mem:1: a word without /TAG");
    read_bad("a/DET b/\n", &sp, "mem:1: empty label");
    TaskInputSpec seq = {.format = &slash_format, .need_labels = 1, .text_field = "t", .label_field = "l"};
    read_bad("a/DET\n", &seq, "mem: slash holds token examples (tags per word)");

    /* built: input_format is the format's name; a tag not in the set is reported on its line */
    static const char *const docs[] = {"the cat sat on it and the dog ran in the park"};
    size_t lens[1] = {strlen(docs[0])};
    TokTrainConfig c;
    tok_train_config_default(&c);
    c.vocab_size = 280;
    Tokenizer *tk = tokenizer_train(docs, lens, 1, &c, err, sizeof err);
    assert_non_null(tk);
    TokFile *tf = tokfile_from_bpe(tk);
    TaskBuildSpec bs = {.kind = TASK_TAGGING, .T = 16};
    TaskSet ls, ts;
    memset(&ls, 0, sizeof ls);
    assert_int_equal(task_label_set(&ex, "mem", &bs, &ls, err, sizeof err), 0);
    assert_int_equal(task_build_examples(&ex, NULL, 0, "mem", &bs, &ls, tf, "train", &ts, err, sizeof err), 0);
    assert_string_equal(ts.input_format, "slash");
    task_free(&ts);
    TaskExamples bad = read_ok("the/DET cat/NOUN\nsat/VERB on/XX\n", &sp);
    assert_int_equal(task_build_examples(&bad, NULL, 0, "mem", &bs, &ls, tf, "train", &ts, err, sizeof err), -1);
    if (!strstr(err, "mem:2: tag 'XX' (word 2)")) fail_msg("'%s': the tag's line is the sentence's (word_per_line 0)", err);
    task_examples_free(&bad);
    TaskInputSpec cs = {.format = format_of("conll"), .tagging = 1, .need_labels = 1};
    bad = read_ok("x DET\n\nthe DET\ncat NOUN\nsat XX\n", &cs);
    assert_int_equal(task_build_examples(&bad, NULL, 0, "mem", &bs, &ls, tf, "train", &ts, err, sizeof err), -1);
    if (!strstr(err, "mem:5: tag 'XX' (word 3)")) fail_msg("'%s': a conll tag's line is its word's (word_per_line 1)", err);
    task_examples_free(&bad);
    bad = read_ok("the DET\ncat NOUN\n", &cs);
    assert_int_equal(task_build_examples(&bad, NULL, 0, "mem", &bs, &ls, tf, "train", &ts, err, sizeof err), 0);
    assert_string_equal(ts.input_format, "conll");
    task_free(&ts);
    task_examples_free(&bad);
    task_examples_free(&ex);
    tokfile_free(tf);
}

/* the split: a partition of the records, sizes round(n * fraction), each list ascending, and the
 * same draw for the same seed */
static void test_split_draw(void **state) {
    (void)state;
    size_t *sel[3], n_sel[3], *sel2[3], n2[3];
    task_split_draw(101, 7, 0.1, 0.2, 1, 1, sel, n_sel);
    assert_int_equal(n_sel[1], 10);
    assert_int_equal(n_sel[2], 20);
    assert_int_equal(n_sel[0], 71);
    int seen[101] = {0};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < n_sel[k]; i++) {
            seen[sel[k][i]]++;
            if (i) assert_true(sel[k][i - 1] < sel[k][i]);
        }
    for (int i = 0; i < 101; i++) assert_int_equal(seen[i], 1);
    task_split_draw(101, 7, 0.1, 0.2, 1, 1, sel2, n2);
    for (int k = 0; k < 3; k++) assert_memory_equal(sel[k], sel2[k], n_sel[k] * sizeof(size_t));
    for (int k = 0; k < 3; k++) free(sel2[k]);
    task_split_draw(101, 8, 0.1, 0.2, 1, 1, sel2, n2);
    assert_true(memcmp(sel[1], sel2[1], n_sel[1] * sizeof(size_t)) != 0);  /* another seed, another dev */
    for (int k = 0; k < 3; k++) { free(sel[k]); free(sel2[k]); }
    task_split_draw(10, 1, 0.1, 0.1, 0, 1, sel, n_sel);                       /* dev given as a file */
    assert_null(sel[1]);
    assert_int_equal(n_sel[2], 1);
    assert_int_equal(n_sel[0], 9);
    free(sel[0]); free(sel[2]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_utf8), cmocka_unit_test(test_csv), cmocka_unit_test(test_tsv),
        cmocka_unit_test(test_conll), cmocka_unit_test(test_jsonl), cmocka_unit_test(test_label_set), cmocka_unit_test(test_split_draw),
        cmocka_unit_test(test_format_registry), cmocka_unit_test(test_format_interface),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
