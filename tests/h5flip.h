/* h5flip.h — corrupts an HDF5 file on purpose: flips bytes inside the stored data of one dataset
 * (test_checkpoint, test_shard: the seal must catch it; resealed, the dataset's own checksum must
 * catch it and name the dataset); and test_reseal, the seal again after a file was edited in place
 * on purpose (H5Fopen read-write) to test a check behind the seal. */
#ifndef DEBERTA_TESTS_H5FLIP_H
#define DEBERTA_TESTS_H5FLIP_H
#include <hdf5.h>
#include <stdio.h>
#include "data/h5util.h"
#include "tests/testutil.h"

static inline void test_reseal(const char *path) {
    char err[512];
    if (h5_seal(path, err, sizeof err) != 0) fail_msg("h5_seal: %s", err);
}

/* Flips n bytes in the middle of the first chunk of the dataset name of the file at path. */
static inline void flip_dataset_bytes(const char *path, const char *name, int n) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    assert_true(d >= 0);
    haddr_t addr = 0;
    hsize_t size = 0, off[2];
    unsigned mask = 0;
    hid_t sp = H5Dget_space(d);
    assert_true(H5Dget_chunk_info(d, sp, 0, off, &mask, &addr, &size) >= 0);
    H5Sclose(sp);
    H5Dclose(d);
    hid_t fcpl = H5Fget_create_plist(f);
    hsize_t ub = 0;
    H5Pget_userblock(fcpl, &ub); /* chunk addresses count from the end of the user block */
    H5Pclose(fcpl);
    H5Fclose(f);
    addr += ub;
    assert_true(size >= 8);
    FILE *fp = fopen(path, "r+b");
    assert_non_null(fp);
    long at = (long)addr + (long)size / 2 - n / 2;
    if (at < (long)addr) at = (long)addr;
    for (int i = 0; i < n && at + i < (long)(addr + size); i++) {
        fseek(fp, at + i, SEEK_SET);
        int c = fgetc(fp);
        fseek(fp, at + i, SEEK_SET);
        fputc(c ^ 0x5a, fp);
    }
    fclose(fp);
}

#endif
