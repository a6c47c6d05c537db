/* cmd_encode.c — `deberta encode --tokenizer FILE [TEXT_FILE...]`: the ids of every input line, one
 * output line per input line (ids separated by spaces; an empty line for a line with no ids).
 * FILE is a SentencePiece unigram model (.model) or the project's own tokenizer.bin (recognised by
 * its magic).  Lines end at '\n' (a preceding '\r' is kept: it is text).  Without TEXT_FILE, stdin. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "data/spm.h"
#include "data/tokenizer.h"
#include "train/cli/cli.h"

static void encode_stream(FILE *in, const SpmModel *spm, const Tokenizer *tk, int pieces, FILE *out) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) >= 0) {
        if (n > 0 && line[n - 1] == '\n') n--;
        size_t k = 0;
        int32_t *ids = spm ? spm_encode(spm, line, (size_t)n, &k) : tokenizer_encode(tk, line, (size_t)n, &k);
        for (size_t i = 0; i < k; i++) {
            if (i) fputc(' ', out);
            if (pieces) {
                size_t pl = 0;
                const char *p = spm ? spm_piece(spm, ids[i], &pl) : tokenizer_piece(tk, ids[i], &pl);
                fwrite(p, 1, pl, out);
            } else {
                fprintf(out, "%d", ids[i]);
            }
        }
        fputc('\n', out);
        free(ids);
    }
    free(line);
}

int cmd_encode(int argc, char **argv) {
    const char *tok = NULL;
    int pieces = 0, n_files = 0;
    const char **files = xcalloc((size_t)argc, sizeof(char *));
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: deberta encode --tokenizer FILE [--pieces] [TEXT_FILE...]\n"
                   "  Prints the ids of every line of the text files (stdin without files), one output line per\n"
                   "  input line.  FILE: a SentencePiece unigram model (.model; encoded exactly as sentencepiece\n"
                   "  does, no bos/eos) or a tokenizer.bin of deberta prep.  --pieces prints piece names instead.\n");
            free(files);
            return 0;
        } else if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc) {
            tok = argv[++i];
        } else if (!strcmp(argv[i], "--pieces")) {
            pieces = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "error: encode: unexpected argument '%s' (see deberta encode --help)\n", argv[i]);
            free(files);
            return 2;
        } else {
            files[n_files++] = argv[i];
        }
    }
    if (!tok) {
        fprintf(stderr, "error: encode: --tokenizer FILE is required (see deberta encode --help)\n");
        free(files);
        return 2;
    }
    char err[1400];
    SpmModel *spm = NULL;
    Tokenizer *tk = NULL;
    FILE *f = fopen(tok, "rb");
    char magic[8] = {0};
    if (!f) fatal("encode: cannot open tokenizer %s (%s)", tok, strerror(errno));
    size_t got = fread(magic, 1, 8, f);
    fclose(f);
    if (got == 0 && file_is_empty(tok)) fatal("tokenizer %s: " FILE_EMPTY, tok);
    if (got == 8 && !memcmp(magic, "DBTOKENZ", 8)) {
        if (!(tk = tokenizer_load(tok, err, sizeof err))) fatal("%s", err);
    } else if (!(spm = spm_load(tok, err, sizeof err))) {
        fatal("%s", err);
    }
    if (n_files == 0) encode_stream(stdin, spm, tk, pieces, stdout);
    for (int i = 0; i < n_files; i++) {
        FILE *in = !strcmp(files[i], "-") ? stdin : fopen(files[i], "rb");
        if (!in) fatal("encode: cannot open %s (%s)", files[i], strerror(errno));
        encode_stream(in, spm, tk, pieces, stdout);
        if (in != stdin) fclose(in);
    }
    if (fflush(stdout)) fatal("encode: cannot write the output (%s)", io_reason(errno));
    spm_free(spm);
    if (tk) tokenizer_free(tk);
    free(files);
    return 0;
}
