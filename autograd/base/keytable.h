/* keytable.h — one way to declare an option: a table of rows, each naming a field of a struct, its key
 * in `key = value` texts (config.txt, a checkpoint's /config), its command-line flag, its type and its
 * accepted range.  The model config (model/config.c), the training options (train/options.c) and the
 * fine-tuning options (train/finetune.c) are such tables; this file holds what they share: the number
 * parsers, setting a field from text (checked or as written), writing a value, finding a row.
 *
 * Part of the base (like util.h): every room may use it.  Error messages stay with each table (their
 * wording is part of each command's interface); these functions only say yes or no. */
#ifndef DEBERTA_KEYTABLE_H
#define DEBERTA_KEYTABLE_H
#include <stddef.h>
#include <stdio.h>

typedef enum { KEY_INT, KEY_LONG, KEY_U64, KEY_DOUBLE, KEY_BOOL, KEY_STR, KEY_CUSTOM } KeyType;

enum {
    KEY_RESUME_OK = 1,  /* --resume accepts the flag (the rest come from the saved run) */
    KEY_SKIP_ZERO = 2,  /* written only when not 0 (keys added later: older files stay byte-identical) */
    KEY_NO_FLAG = 4,    /* written and read, but no command-line flag sets it */
    KEY_USER = 256,     /* the first bit a table may use for its own purposes */
};

/* KEY_CUSTOM: the field's text form (enum names, a bitmask list, a setting with side effects). */
typedef struct KeyCodec {
    int (*parse)(void *base, void *field, const char *value); /* 0, or -1: not a valid value */
    const char *(*name)(const void *base, const void *field);  /* the value as written */
} KeyCodec;

typedef struct KeyRow {
    const char *key;        /* `key` (after the table's prefix) in config texts; NULL = not persisted */
    const char *flag;       /* `--flag`; NULL = not a flag (or KEY_NO_FLAG) */
    const char *alias;      /* a second spelling of the flag, or NULL */
    KeyType type;
    size_t off, size;       /* the field: offset in the struct; bytes (KEY_STR: the buffer) */
    double lo, hi;          /* checked values: lo <= v, and v <= hi (integers) or v < hi (numbers); hi 0 = no bound */
    const char *want;       /* what a checked value must be, for the table's message ("a positive integer") */
    int flags;              /* KEY_* */
    const KeyCodec *codec;  /* KEY_CUSTOM */
} KeyRow;

#define KEY_FIELD(T, m) offsetof(T, m), sizeof(((T *)0)->m)


/* The row whose key (by_flag 0) or flag / alias (by_flag 1) is name, or NULL.  A flag matches with
 * '-' and '_' interchangeable when the table spells it with '_'. */
const KeyRow *key_find(const KeyRow *rows, int n, const char *name, int by_flag);
/* Sets the row's field of base from text: 0, or -1 when the text is not a value of the type (or,
 * checked, outside [lo, hi]). */
int key_set(const KeyRow *r, void *base, const char *value, int checked);
/* A command's `--flag value` (flag without "--") through its table, checked: 1 when value was taken,
 * 2 when the row is a KEY_BOOL switch (set to true; value unused, may be NULL), 0 when no row has the
 * flag, -1 with "--flag 'value' must be <want>" (or "--flag needs a value", "--flag: value too long")
 * in err. */
int key_set_flag(const KeyRow *rows, int n, void *base, const char *flag, const char *value, char *err, size_t errlen);
/* 1 when the row's field is 0 (KEY_SKIP_ZERO). */
int key_is_zero(const KeyRow *r, const void *base);
/* --resume: the fields of the KEY_RESUME_OK rows that the command line gave (src: not 0, not "") are
 * copied over the saved ones (dst); the rest stays as saved. */
void key_keep_resume_ok(const KeyRow *rows, int n, void *dst, const void *src);
/* s without its leading and trailing blanks (cut in place). */
char *key_trim(char *s);
/* The lines of a `key = value` text ('#' starts a comment, blank lines skipped, spaces around key and
 * value trimmed): fn(key, value or NULL when the line has no '=', ctx) until it returns non-zero, which
 * is returned (-1: out of memory). */
int key_text_each(const char *text, int (*fn)(const char *key, const char *value, void *ctx), void *ctx);
/* The persisted rows (a key, not KEY_SKIP_ZERO at 0, not skip(row, base) when skip is given) as
 * `<prefix><key> = value` lines (heap string). */
char *key_table_to_text(const KeyRow *rows, int n, const void *base, const char *prefix, int (*skip)(const KeyRow *r, const void *base));
/* The `<prefix>*` lines of text back into base, as written (no range checks); other keys, the keys in
 * ignore (NULL-terminated, may be NULL) and empty values are skipped.  0, or -1 with "unknown <what>
 * option '<prefix>k' in the checkpoint" or a bad value named. */
int key_table_from_text(const KeyRow *rows, int n, void *base, const char *prefix, const char *const *ignore, const char *what,
                        const char *text, char *err, size_t errlen);
/* Writes the value as texts hold it: %d, %ld, %llu, %.17g, true/false, the string, the codec's name. */
void key_write_value(const KeyRow *r, const void *base, FILE *f);
#endif
