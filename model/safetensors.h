/* safetensors.h — a minimal writer of the safetensors format (F32 only), used by `deberta export`.
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
#endif
