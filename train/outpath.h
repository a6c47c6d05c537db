/* outpath.h — the one check every command that writes makes on each output path, before it reads or
 * writes anything: no mistyped path destroys a file the user gave or a run already written, and an
 * output that cannot be written is said at once, not after the long work.
 *
 * out_path_check refuses (-1, one line in err: "<flag> <out>: <what is wrong> (<what to do>)"):
 *   - out is one of the command's inputs: the same file or folder by st_dev and st_ino, so another
 *     path to it, a hard link or a symlink counts;
 *   - out is a run directory (it holds checkpoint.h5), or (OUT_FILE) a sealed deberta.c file (a
 *     checkpoint, shard or task file: docs/FORMATS.md "Sealed HDF5 files") or an existing record of a
 *     run (config.txt, cmdline.txt, metrics.jsonl, results.txt, lock beside a checkpoint.h5);
 *   - OUT_FILE: out is an existing folder; OUT_DIR, OUT_RUN: out is an existing file;
 *   - out cannot be written: the folder it goes into is missing, not a folder, or refuses a new file
 *     (with the reason, strerror(errno)).  Tried by creating and removing a file: "<out>.tmp-PID" for
 *     a file output, "<DIR>/.deberta-probe-PID" in the folder a folder output is (or will be made in).
 * 0 when out may be written.  inputs[0..n) may hold NULLs (flags not given); an input that does not
 * exist is skipped (its reader says so). */
#ifndef DEBERTA_TRAIN_OUTPATH_H
#define DEBERTA_TRAIN_OUTPATH_H
#include <stddef.h>

/* OUT_RUN: a run directory of pretrain / finetune / import, which refuse one that holds a run themselves
 * (train/run.c: after taking its lock, so that a run in progress is named as such); else as OUT_DIR. */
typedef enum { OUT_FILE, OUT_DIR, OUT_RUN } OutKind;

int out_path_check(const char *flag, const char *out, OutKind kind, const char *const *inputs, int n_inputs, char *err, size_t errlen);
#endif
