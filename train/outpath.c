/* outpath.c — see outpath.h. */
#include "train/outpath.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "autograd/base/util.h"

/* Creates and removes a new file at path: 0, or the errno of the creation.  An existing file of that
 * name (EEXIST) is left alone and counts as writable: the folder holds files. */
static int probe_create(const char *path) {
    const int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return errno == EEXIST ? 0 : errno;
    close(fd);
    unlink(path);
    return 0;
}

/* The folder path's parent into dir ("." for a bare name). */
static void parent_of(const char *path, char *dir, size_t cap) {
    snprintf(dir, cap, "%s", path);
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') dir[--n] = 0;
    char *s = strrchr(dir, '/');
    if (!s) snprintf(dir, cap, ".");
    else if (s == dir) dir[1] = 0;
    else *s = 0;
}

/* 1 when path is one of the files a run keeps in its directory (train/run.c, train/finetune.c) and
 * that directory holds a run (checkpoint.h5). */
static int is_run_file(const char *path) {
    static const char *const RUN_FILES[] = {"config.txt", "cmdline.txt", "metrics.jsonl", "results.txt", "lock"};
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    int named = 0;
    for (size_t i = 0; i < ARRAY_LEN(RUN_FILES); i++) named |= !strcmp(base, RUN_FILES[i]);
    if (!named) return 0;
    char dir[4200], ck[4300];
    parent_of(path, dir, sizeof dir);
    snprintf(ck, sizeof ck, "%s/checkpoint.h5", dir);
    return access(ck, F_OK) == 0;
}

static int is_sealed(const char *path) {
    char magic[8];
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    const int sealed = fread(magic, 1, 8, f) == 8 && !memcmp(magic, "DBH5SEAL", 8);
    fclose(f);
    return sealed;
}

int out_path_check(const char *flag, const char *out, OutKind kind, const char *const *inputs, int n_inputs, char *err, size_t errlen) {
    struct stat so, si;
    const int exists = stat(out, &so) == 0;
    for (int i = 0; exists && i < n_inputs; i++)
        if (inputs[i] && stat(inputs[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
            return errf(err, errlen, "%s %s: is the input %s (the same %s): writing it would destroy the input (give another %s)", flag, out,
                        inputs[i], S_ISDIR(so.st_mode) ? "folder" : "file", flag);
    char path[4200];
    if (exists && S_ISDIR(so.st_mode)) {
        if (kind == OUT_FILE) return errf(err, errlen, "%s %s: is a folder (give a file name)", flag, out);
        snprintf(path, sizeof path, "%.4000s/checkpoint.h5", out);
        if (kind == OUT_DIR && access(path, F_OK) == 0)
            return errf(err, errlen, "%s %s: is a run directory (it holds checkpoint.h5): writing into it could replace the run's files "
                        "(give another folder)", flag, out);
    } else if (exists) {
        if (kind != OUT_FILE) return errf(err, errlen, "%s %s: is a file, not a folder (give a folder)", flag, out);
        if (is_sealed(out))
            return errf(err, errlen, "%s %s: is a sealed deberta.c file (a checkpoint, shard or task file): writing it would destroy it "
                        "(give another %s)", flag, out, flag);
        if (kind == OUT_FILE && is_run_file(out))
            return errf(err, errlen, "%s %s: is a file of a run directory (it holds checkpoint.h5): writing it would destroy the run's "
                        "record (give another %s)", flag, out, flag);
    }
    /* writable: the file itself, or a file in the folder out is or will be made in */
    int e;
    char dir[4200];
    if (kind == OUT_FILE) {
        snprintf(path, sizeof path, "%.4000s.tmp-%ld", out, (long)getpid());
        if ((e = probe_create(path))) {
            parent_of(out, dir, sizeof dir);
            return errf(err, errlen, "%s %s: cannot write a file in %s (%s)", flag, out, dir, strerror(e));
        }
        return 0;
    }
    snprintf(dir, sizeof dir, "%s", out);
    struct stat sd;
    while (stat(dir, &sd) != 0) { /* the nearest folder that exists: mkdir -p makes the rest */
        if (errno != ENOENT && errno != ENOTDIR) return errf(err, errlen, "%s %s: cannot create it: %s (%s)", flag, out, dir, strerror(errno));
        char up[4200];
        parent_of(dir, up, sizeof up);
        if (!strcmp(up, dir)) break;
        snprintf(dir, sizeof dir, "%s", up);
    }
    if (stat(dir, &sd) == 0 && !S_ISDIR(sd.st_mode))
        return errf(err, errlen, "%s %s: cannot create it: %s is not a folder (%s)", flag, out, dir, strerror(ENOTDIR));
    snprintf(path, sizeof path, "%.4000s/.deberta-probe-%ld", dir, (long)getpid());
    if ((e = probe_create(path))) return errf(err, errlen, "%s %s: cannot write in %s (%s)", flag, out, dir, strerror(e));
    return 0;
}
