/* cmd_seal.c — `deberta seal FILE...`: writes the seal (the whole-file CRC-32 in the HDF5 user
 * block, docs/FORMATS.md "Sealed HDF5 files") of HDF5 files that the readers refuse only for want
 * of it: a shard, checkpoint or task file written by a deberta.c older than the seal, or one
 * changed on purpose by another program (h5py, h5repack).  The readers validate the contents when
 * the file is next read.  `deberta seal --check FILE...` only checks (and times the check). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "autograd/base/util.h"
#include "data/h5util.h"
#include "train/cli/cli.h"

int cmd_seal(int argc, char **argv) {
    int n = 0, check = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: deberta seal FILE...\n"
                   "       deberta seal --check FILE...\n"
                   "  Seals HDF5 files that deberta.c refuses because they have no seal (written by an older\n"
                   "  deberta.c, or rewritten by h5py or h5repack) or because they were changed on purpose after\n"
                   "  they were written.  Only for files known to be intact: the seal is what stops a damaged file\n"
                   "  before it reaches libhdf5.  A file that is already sealed and intact is left alone.\n"
                   "  --check only checks each file's seal (without libhdf5) and prints how long that took;\n"
                   "  exit status 1 if a file has no seal or does not match it.\n");
            return 0;
        }
        if (!strcmp(argv[i], "--check")) check = 1;
        else if (argv[i][0] == '-' && argv[i][1]) return cli_usage_error("seal", "unexpected argument '%s'", argv[i]);
        else n++;
    }
    if (!n) return cli_usage_error("seal", "no FILE given");
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--check")) continue;
        char msg[1024];
        const double t0 = now_seconds();
        const int rc = h5_seal_check(argv[i], msg, sizeof msg);
        const double ms = 1e3 * (now_seconds() - t0);
        if (check) {
            struct stat sb;
            if (rc == H5_SEAL_OK && stat(argv[i], &sb) == 0) {
                printf("%s: sealed and intact (%lld bytes checked in %.1f ms, %.2f GB/s)\n", argv[i], (long long)sb.st_size, ms,
                       ms > 0 ? sb.st_size / (ms * 1e6) : 0.0);
            } else {
                fprintf(stderr, "error: seal %s: %s\n", argv[i], msg);
                bad = 1;
            }
            continue;
        }
        if (rc == H5_SEAL_OK) {
            printf("%s: already sealed and intact\n", argv[i]);
            continue;
        }
        if (h5_seal_file(argv[i], msg, sizeof msg) != 0) fatal("seal %s", msg);
        if (h5_seal_check(argv[i], msg, sizeof msg) != H5_SEAL_OK) fatal("seal %s: %s", argv[i], msg);
        printf("%s: sealed\n", argv[i]);
    }
    return bad;
}
