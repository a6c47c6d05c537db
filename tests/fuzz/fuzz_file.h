/* fuzz_file.h — the fuzz targets' shared helper: the input as a file (HDF5 reads paths), one per
 * process, rewritten for every input. */
#ifndef DEBERTA_FUZZ_FILE_H
#define DEBERTA_FUZZ_FILE_H
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline const char *fuzz_write_file(const unsigned char *data, size_t n) {
    static char path[256];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/deberta-fuzz-%ld.h5", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n && fwrite(data, 1, n, f) != n) abort();
    fclose(f);
    return path;
}
#endif
