/* corpus.h — reading text inputs for `deberta prep`: file discovery, .txt and .jsonl documents.
 *
 * .txt:   documents are separated by blank lines (lines containing only spaces, tabs or '\r').
 *         A document is the exact bytes from its first to its last non-blank line, inner newlines
 *         included, without the final line end.
 * .jsonl: one JSON object per line; the document is its top-level string field "text" (escapes
 *         decoded, \u surrogate pairs combined into UTF-8).  Blank lines are skipped.  A line that is
 *         not valid JSON, or has no string "text", is an error naming file and line.
 * Documents of zero bytes are dropped.  Bytes are never altered: invalid UTF-8 passes through (the
 * tokenizer's byte fallback encodes it losslessly).
 */
#ifndef DEBERTA_CORPUS_H
#define DEBERTA_CORPUS_H
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *buf;              /* all document bytes, concatenated */
    size_t buf_len, buf_cap;
    size_t *off, *len;      /* per document */
    size_t n, cap;
} DocSet;

/* Expands files and folders (recursively; names starting with '.' are skipped) into the sorted,
 * de-duplicated list of .txt/.jsonl files.  Returns 0, or -1 with a message (unreadable path,
 * unsupported file type named explicitly, no input files at all). */
int corpus_list_files(const char *const *paths, int n_paths, char ***files, size_t *n_files, char *err, size_t errlen);
/* Appends the documents of one file.  Returns 0, or -1 with a message naming the file (and line). */
int corpus_read_file(const char *path, DocSet *ds, char *err, size_t errlen);
void docset_free(DocSet *ds);

/* Parses one JSON object (line[0..len)) and extracts its top-level string field `field` into a
 * malloc'd buffer.  Returns 0 on success, 1 when the object has no such field, -1 with a message
 * (without file/line prefix) when the text is not valid JSON or the field is not a string. */
int json_string_field(const char *line, size_t len, const char *field, char **out, size_t *out_len,
                      char *err, size_t errlen);
#endif
