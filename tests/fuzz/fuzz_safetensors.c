/* fuzz_safetensors.c — libFuzzer target: safetensors_open (the header's length field, JSON, every
 * entry's dtype, shape and data_offsets against the file, the crc32 metadata) and, for whatever
 * opens, every convertible tensor read and converted (the byte ranges the header vouched for). */
#include <stdint.h>
#include <stdlib.h>
#include "autograd/base/util.h"
#include "train/interop/safetensors.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n) {
    char err[1024];
    StFile *f = safetensors_open(fuzz_write_file(data, n), err, sizeof err);
    if (!f) return 0;
    for (int i = 0; i < f->n; i++) {
        const StTensor *t = &f->t[i];
        if (safetensors_find(f, t->name) != t) abort(); /* names are unique */
        if (t->dtype == ST_OTHER) continue;
        real *out = xmalloc((size_t)(t->numel ? t->numel : 1) * sizeof(real));
        safetensors_read(f, t, out);
        free(out);
    }
    safetensors_close(f);
    return 0;
}
