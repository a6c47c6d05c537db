/* safetensors.h — the safetensors format: a writer (F32 only, used by `deberta export`) and a
 * validating reader (F32, F16, BF16, F64 -> real, used by `deberta import`).
 *
 * Layout: u64 little-endian header length N, N bytes of JSON header (padded with spaces to a multiple
 * of 8), then the raw little-endian data of each tensor in header order, back to back.  The header
 * maps each name to {"dtype":"F32","shape":[...],"data_offsets":[begin,end]} (offsets relative to the
 * start of the data) and carries "__metadata__":{"format":"pt"}.
 */
#ifndef DEBERTA_SAFETENSORS_H
#define DEBERTA_SAFETENSORS_H
#include "autograd/tensor.h"

typedef struct StEntry {
    const char *name;
    int ndim;
    int shape[TENSOR_MAX_DIMS];
    const real *data;   /* converted to float32 on write */
} StEntry;

/* Writes the file atomically (temp file + rename).  Returns 0, or -1 with a message in err. */
int safetensors_write(const char *path, const StEntry *entries, int n, char *err, size_t errlen);

/* ---- reader ---- */
enum { ST_F32 = 0, ST_F16 = 1, ST_BF16 = 2, ST_F64 = 3, ST_OTHER = 4 /* a valid non-float dtype: not convertible */ };

typedef struct StTensor {
    char *name;
    int dtype;                 /* ST_F32 / ST_F16 / ST_BF16 / ST_F64, or ST_OTHER (I64, U8, BOOL, ...) */
    char dtype_name[12];       /* as in the header */
    int ndim;                  /* 0..8 */
    int64_t shape[8];
    int64_t numel;
    uint64_t begin, end;       /* byte range relative to the start of the data */
} StTensor;

typedef struct StFile {
    char *path;
    const uint8_t *map;        /* the whole file, mapped read-only */
    size_t size;
    size_t data_start;         /* 8 + header length */
    int n;
    StTensor *t;               /* in header order */
    int n_crc;                 /* "crc32.<name>" entries of __metadata__ (our exports write one per tensor) */
    char **crc_name;
    uint32_t *crc;
} StFile;

/* Opens and validates the whole header: the length field against the file size, JSON syntax, every
 * entry an object with exactly dtype / shape / data_offsets, a supported dtype, a byte range that
 * matches dtype x shape (every dtype of the format is known: F64/F32/F16/BF16 are readable, integer,
 * bool and float8 tensors are kept as ST_OTHER), lies inside the file, overlaps no other and leaves no gap (the format
 * requires the data to be exactly the tensors back to back), unique names; and every tensor that has a
 * "crc32.<name>" entry in __metadata__ (8 hex digits, as deberta export writes them; files of other
 * writers have none) against the CRC-32 of its bytes.  NULL + one-line message naming the file on any
 * problem. */
StFile *safetensors_open(const char *path, char *err, size_t errlen);
const StTensor *safetensors_find(const StFile *f, const char *name); /* NULL when absent */
/* Converts tensor t (not ST_OTHER) into out[numel] (float16/bfloat16 exactly, including subnormals,
 * inf, NaN; float64 rounded to real). */
void safetensors_read(const StFile *f, const StTensor *t, real *out);
void safetensors_close(StFile *f);
#endif
