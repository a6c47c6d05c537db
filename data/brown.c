/* brown.c — tagged Brown texts, tag mapping, genres and split.  See brown.h and docs/FORMATS.md. */
#include "data/brown.h"
#include "autograd/base/util.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const brown_upos_names[UPOS_COUNT] = {"ADJ", "ADP", "ADV", "CONJ", "DET", "NOUN",
                                                  "NUM", "PRON", "PRT", "VERB", ".", "X"};
const char brown_genre_letters[BROWN_N_GENRES + 1] = "abcdefghjklmnpr";
const char *const brown_genre_names[BROWN_N_GENRES] = {
    "press-reportage", "press-editorial", "press-reviews", "religion", "skill-and-hobbies",
    "popular-lore", "belles-lettres", "government", "learned", "fiction-general",
    "fiction-mystery", "fiction-science", "fiction-adventure", "fiction-romance", "humor"};
const char *const brown_split_names[3] = {"train", "dev", "test"};

/* ---------------------------------------------------------------- tags
 * The base tags of the Brown tagset and their universal tag.  Written for this project after the
 * universal tagset of Petrov, Das & McDonald (2012, "A Universal Part-of-Speech Tagset") and its
 * mapping for the Brown corpus; the table in docs/FORMATS.md is this one. */
static const struct { const char *tag; int upos; } TAGS[] = {
    {".", UPOS_PUNCT}, {",", UPOS_PUNCT}, {":", UPOS_PUNCT}, {"(", UPOS_PUNCT}, {")", UPOS_PUNCT},
    {"--", UPOS_PUNCT}, {"'", UPOS_PUNCT}, {"''", UPOS_PUNCT}, {"``", UPOS_PUNCT}, {"`", UPOS_PUNCT},
    {"jj", UPOS_ADJ}, {"jjr", UPOS_ADJ}, {"jjs", UPOS_ADJ}, {"jjt", UPOS_ADJ}, {"od", UPOS_ADJ},
    {"in", UPOS_ADP},
    {"rb", UPOS_ADV}, {"rbr", UPOS_ADV}, {"rbt", UPOS_ADV}, {"rn", UPOS_ADV}, {"ql", UPOS_ADV},
    {"qlp", UPOS_ADV}, {"wql", UPOS_ADV}, {"wrb", UPOS_ADV}, {"*", UPOS_ADV},
    {"cc", UPOS_CONJ}, {"cs", UPOS_CONJ},
    {"abl", UPOS_DET}, {"abn", UPOS_DET}, {"abx", UPOS_DET}, {"ap", UPOS_DET}, {"at", UPOS_DET},
    {"dt", UPOS_DET}, {"dti", UPOS_DET}, {"dts", UPOS_DET}, {"dtx", UPOS_DET}, {"wdt", UPOS_DET},
    {"ex", UPOS_DET},
    {"nn", UPOS_NOUN}, {"nns", UPOS_NOUN}, {"np", UPOS_NOUN}, {"nps", UPOS_NOUN}, {"nr", UPOS_NOUN},
    {"nrs", UPOS_NOUN},
    {"cd", UPOS_NUM},
    {"pn", UPOS_PRON}, {"pp$", UPOS_PRON}, {"pp$$", UPOS_PRON}, {"ppl", UPOS_PRON}, {"ppls", UPOS_PRON},
    {"ppo", UPOS_PRON}, {"pps", UPOS_PRON}, {"ppss", UPOS_PRON}, {"wp$", UPOS_PRON}, {"wpo", UPOS_PRON},
    {"wps", UPOS_PRON},
    {"rp", UPOS_PRT}, {"to", UPOS_PRT},
    {"vb", UPOS_VERB}, {"vbd", UPOS_VERB}, {"vbg", UPOS_VERB}, {"vbn", UPOS_VERB}, {"vbz", UPOS_VERB},
    {"md", UPOS_VERB}, {"be", UPOS_VERB}, {"bed", UPOS_VERB}, {"bedz", UPOS_VERB}, {"beg", UPOS_VERB},
    {"bem", UPOS_VERB}, {"ben", UPOS_VERB}, {"ber", UPOS_VERB}, {"bez", UPOS_VERB}, {"do", UPOS_VERB},
    {"dod", UPOS_VERB}, {"doz", UPOS_VERB}, {"hv", UPOS_VERB}, {"hvd", UPOS_VERB}, {"hvg", UPOS_VERB},
    {"hvn", UPOS_VERB}, {"hvz", UPOS_VERB},
    {"nil", UPOS_X}, {"uh", UPOS_X},
};

static int lookup(const char *t) {
    for (size_t i = 0; i < ARRAY_LEN(TAGS); i++)
        if (!strcmp(TAGS[i].tag, t)) return TAGS[i].upos;
    return -1;
}

int brown_tag_to_upos(const char *tag) {
    char t[64];
    size_t n = strlen(tag);
    if (n == 0 || n >= sizeof t) return -1;
    for (size_t i = 0; i <= n; i++) t[i] = (char)tolower((unsigned char)tag[i]);
    if (!strncmp(t, "fw-", 3)) return UPOS_X;             /* foreign word, whatever follows */
    char *plus = strchr(t + 1, '+');                       /* contraction "ppss+bem": its first part */
    if (plus) *plus = 0;
    for (;;) {                                             /* -hl headline, -tl title, -nc cited word */
        n = strlen(t);
        if (n > 3 && (!strcmp(t + n - 3, "-hl") || !strcmp(t + n - 3, "-tl") || !strcmp(t + n - 3, "-nc")))
            t[n - 3] = 0;
        else break;
    }
    int u = lookup(t);
    if (u >= 0) return u;
    n = strlen(t);
    if (n > 1 && (t[n - 1] == '*' || t[n - 1] == '$')) {  /* negated "md*", possessive "nn$" */
        t[n - 1] = 0;
        return lookup(t);
    }
    return -1;
}

int brown_genre_of(const char *name) {
    if (!name || name[0] != 'c' || !name[1]) return -1;
    const char *p = strchr(brown_genre_letters, name[1]);
    return p ? (int)(p - brown_genre_letters) : -1;
}

int brown_split_of(const char *name) {
    if (brown_genre_of(name) < 0 || !isdigit((unsigned char)name[2]) || !isdigit((unsigned char)name[3]) || name[4])
        return -1;
    return name[3] == '2' ? BROWN_DEV : name[3] == '3' ? BROWN_TEST : BROWN_TRAIN;
}

/* ---------------------------------------------------------------- plain-text spacing
 * The same rules scripts/fetch-corpus.sh applies when it writes DIR/brown.txt: words are joined by
 * spaces, except no space before a word starting with , . ; : ! ? % ) ] or a clitic (n't 's 're 've
 * 'll 'd 'm), none after a word ending in ( [ $, none after an opening quote (``) and none before a
 * closing one ('').  The first word of a text has none. */
static int is_clitic(const char *w) {
    static const char *const C[] = {"n't", "'s", "'re", "'ve", "'ll", "'d", "'m"};
    for (size_t i = 0; i < ARRAY_LEN(C); i++) {
        size_t k = strlen(C[i]);
        if (!strncmp(w, C[i], k) && !(isalnum((unsigned char)w[k]) || w[k] == '_')) return 1;
    }
    return 0;
}

static void compute_spaces(BrownText *t, const uint8_t *open_q, const uint8_t *close_q) {
    for (size_t i = 0; i < t->n_words; i++) {
        const char *w = t->word[i];
        int sp = i > 0;
        if (sp && strchr(",.;:!?%)]", w[0]) && w[0]) sp = 0;
        if (sp && is_clitic(w)) sp = 0;
        if (sp && close_q[i]) sp = 0;
        if (sp) {
            const char *p = t->word[i - 1];
            size_t k = strlen(p);
            if (k && strchr("([$", p[k - 1])) sp = 0;
            if (open_q[i - 1]) sp = 0;
        }
        t->space_before[i] = (uint8_t)sp;
    }
}

/* ---------------------------------------------------------------- parsing */

int brown_parse(const char *name, const char *text, size_t len, BrownText *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (strlen(name) >= sizeof out->name || brown_split_of(name) < 0)
        return errf(err, errlen, "brown %s: not a Brown text name (expected c<genre letter><two digits>, e.g. ca01)", name);
    snprintf(out->name, sizeof out->name, "%s", name);
    out->genre = brown_genre_of(name);
    out->split = brown_split_of(name);
    out->buf = xmalloc(len + 1);
    size_t cap_w = 1024, cap_s = 64;
    out->word = xmalloc(cap_w * sizeof(char *));
    out->tag = xmalloc(cap_w);
    uint8_t *open_q = xmalloc(cap_w), *close_q = xmalloc(cap_w);
    out->sent_start = xmalloc((cap_s + 1) * sizeof(size_t));
    out->sent_start[0] = 0;
    size_t bl = 0, line_no = 0;
    for (size_t p = 0; p < len;) {
        size_t e = p;
        while (e < len && text[e] != '\n') e++;
        line_no++;
        size_t words_before = out->n_words;
        for (size_t q = p; q < e;) {
            while (q < e && isspace((unsigned char)text[q])) q++;
            if (q >= e) break;
            size_t r = q;
            while (r < e && !isspace((unsigned char)text[r])) r++;
            size_t slash = r;
            while (slash > q && text[slash - 1] != '/') slash--;
            if (slash == q || slash == r || slash - 1 == q) {
                errf(err, errlen, "brown %s: line %zu: token '%.*s' is not word/tag", name, line_no, (int)(r - q), text + q);
                goto fail;
            }
            char tag[64];
            size_t tl = r - slash;
            if (tl >= sizeof tag) tl = sizeof tag - 1;
            memcpy(tag, text + slash, tl);
            tag[tl] = 0;
            int u = brown_tag_to_upos(tag);
            if (u < 0) {
                errf(err, errlen, "brown %s: line %zu: unknown tag '%s' (word '%.*s')", name, line_no, tag,
                        (int)(slash - 1 - q), text + q);
                goto fail;
            }
            if (out->n_words == cap_w) {
                cap_w *= 2;
                out->word = xrealloc(out->word, cap_w * sizeof(char *));
                out->tag = xrealloc(out->tag, cap_w);
                open_q = xrealloc(open_q, cap_w);
                close_q = xrealloc(close_q, cap_w);
            }
            size_t wl = slash - 1 - q;
            int oq = wl == 2 && !memcmp(text + q, "``", 2), cq = wl == 2 && !memcmp(text + q, "''", 2);
            char *w = out->buf + bl;
            if (oq || cq) { memcpy(w, "\"", 2); bl += 2; }
            else { memcpy(w, text + q, wl); w[wl] = 0; bl += wl + 1; }
            out->word[out->n_words] = (char *)(uintptr_t)(w - out->buf); /* offset; fixed below */
            out->tag[out->n_words] = (uint8_t)u;
            open_q[out->n_words] = (uint8_t)oq;
            close_q[out->n_words] = (uint8_t)cq;
            out->n_words++;
            q = r;
        }
        if (out->n_words > words_before) {
            if (out->n_sents == cap_s) { cap_s *= 2; out->sent_start = xrealloc(out->sent_start, (cap_s + 1) * sizeof(size_t)); }
            out->sent_start[++out->n_sents] = out->n_words;
        }
        p = e + 1;
    }
    if (out->n_words == 0) { errf(err, errlen, "brown %s: no tagged words", name); goto fail; }
    for (size_t i = 0; i < out->n_words; i++) out->word[i] = out->buf + (uintptr_t)out->word[i];
    out->space_before = xmalloc(out->n_words);
    compute_spaces(out, open_q, close_q);
    free(open_q); free(close_q);
    return 0;
fail:
    free(open_q); free(close_q);
    brown_free(out, 1);
    memset(out, 0, sizeof *out);
    return -1;
}

void brown_free(BrownText *texts, size_t n) {
    if (!texts) return;
    for (size_t i = 0; i < n; i++) {
        free(texts[i].word); free(texts[i].tag); free(texts[i].space_before);
        free(texts[i].sent_start); free(texts[i].buf);
    }
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int brown_read_dir(const char *dir, BrownText **texts, size_t *n, char *err, size_t errlen) {
    *texts = NULL; *n = 0;
    DIR *d = opendir(dir);
    if (!d) { errf(err, errlen, "brown %s: cannot open folder (%s)", dir, strerror(errno)); return -1; }
    char **names = NULL;
    size_t nn = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (brown_split_of(e->d_name) < 0) continue;
        if (nn == cap) { cap = cap ? 2 * cap : 512; names = xrealloc(names, cap * sizeof(char *)); }
        names[nn++] = xstrdup(e->d_name);
    }
    closedir(d);
    if (nn == 0) {
        errf(err, errlen, "brown %s: no tagged Brown texts (files ca01 … cr09; scripts/fetch-corpus.sh writes them to DIR/brown-tagged)", dir);
        return -1;
    }
    qsort(names, nn, sizeof(char *), cmp_str);
    BrownText *t = xcalloc(nn, sizeof(BrownText));
    int rc = 0;
    size_t done = 0;
    for (; done < nn && rc == 0; done++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[done]);
        size_t len;
        char *buf = read_file(path, &len); /* errno EIO: opened but not readable */
        if (!buf && errno == EIO) { errf(err, errlen, "brown %s: read error", path); rc = -1; break; }
        if (!buf) { errf(err, errlen, "brown %s: cannot open (%s)", path, strerror(errno)); rc = -1; break; }
        if (len == 0) { errf(err, errlen, "brown %s: " FILE_EMPTY, path); free(buf); rc = -1; break; }
        if (brown_parse(names[done], buf, len, &t[done], err, errlen) != 0) rc = -1;
        free(buf);
        if (rc) break;
    }
    for (size_t i = 0; i < nn; i++) free(names[i]);
    free(names);
    if (rc) { brown_free(t, done); free(t); return -1; }
    *texts = t;
    *n = nn;
    return 0;
}

/* ---------------------------------------------------------------- fingerprints */

static uint64_t fp_update(uint64_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) { h ^= c; h *= 0x100000001b3ull; }
    }
    return h;
}

uint64_t text_fingerprint(const char *text, size_t len) { return fp_update(0xcbf29ce484222325ull, text, len); }

uint64_t brown_fingerprint(const BrownText *t) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < t->n_words; i++) h = fp_update(h, t->word[i], strlen(t->word[i]));
    return h;
}
