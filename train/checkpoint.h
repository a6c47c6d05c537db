/* checkpoint.h — HDF5 training checkpoints, written atomically.  Layout (docs/FORMATS.md):
 *
 *   /                      attrs: format = "deberta.c checkpoint", version = 1, real = "float"|"double",
 *                                 step (int64, global step), seed (uint64), n_params (int64)
 *   /params/<HF name>      one dataset per parameter, full name (generator./discriminator. prefix),
 *                          its shape, stored as the build's real (float32, or float64 in the double build)
 *   /optim/<state>/<HF name>  the optimizer's state buffers by name (train/optim.h; adamw and xadam:
 *                          m, the first moment, and v, the second), same shape and dtype
 *   /optim/step/<group>    int64 scalar: updates done by optimizer group <group> ("generator", ...)
 *   /loader_state          int64 [n]: the loader's position, opaque to this file
 *   /config                string: the resolved config text
 *   /tokenizer             uint8 [n]: the tokenizer file's bytes
 *
 * Writing goes to "<path>.tmp" in the same directory: H5Fflush, close, fsync(file), rename over
 * <path>, fsync(directory).  A crash at any point leaves the previous <path> intact.
 *
 * Every function returns 0 on success or -1 with one line in err (no "error: " prefix), e.g.
 *   checkpoint runs/x/checkpoint.h5: parameter 'discriminator.…' has shape [8192, 256], the model
 *   expects [8192, 128] (was it written with another config?)
 * so the caller prints it with fatal("%s", err).
 */
#ifndef DEBERTA_CHECKPOINT_H
#define DEBERTA_CHECKPOINT_H
#include <stddef.h>
#include <stdint.h>
#include "autograd/tensor.h"
#include "train/optim.h"

#define CHECKPOINT_FORMAT "deberta.c checkpoint"
#define CHECKPOINT_VERSION 2     /* written; 2 adds a Fletcher-32 checksum to every parameter and moment */
#define CHECKPOINT_VERSION_MIN 1 /* oldest read (version 1: no checksums) */
#define CHECKPOINT_MAX_GROUPS 4
#define CHECKPOINT_GROUP_NAME 64

/* Everything but the tensors.  On write the caller fills it (pointers are borrowed); on read
 * checkpoint_read_state/checkpoint_load fill it with heap copies freed by checkpoint_state_free. */
typedef struct CheckpointState {
    int version;                    /* on read: the file's format version */
    int64_t step;                   /* global step (completed training steps) */
    uint64_t seed;                  /* run seed of the counter-based RNG (with step it is the whole RNG state) */
    int n_groups;
    char group_name[CHECKPOINT_MAX_GROUPS][CHECKPOINT_GROUP_NAME];
    int64_t group_step[CHECKPOINT_MAX_GROUPS];   /* OptimGroup.step of each group */
    int64_t *loader_state;
    long n_loader_state;
    char *config;                   /* NUL-terminated; NULL is written as "" */
    unsigned char *tokenizer;
    size_t n_tokenizer;
} CheckpointState;

/* Atomically write ps (data), the optimizer state mo (NULL: the default optimizer's, zeros: a model
 * never updated) and st to path. */
int checkpoint_write(const char *path, const ParamSet *ps, const OptimMoments *mo, const CheckpointState *st, char *err, size_t errlen);

/* RUNDIR/checkpoint.h5 (atomically, the latest); with keep_numbered also a hard link
 * RUNDIR/checkpoint-<step>.h5 to the same file (costs no extra write). */
int checkpoint_save(const char *rundir, const ParamSet *ps, const OptimMoments *mo, const CheckpointState *st, int keep_numbered,
                    char *err, size_t errlen);

/* Reads and validates the format attributes and everything but the tensors, e.g. to compare the
 * config before the model is built. */
int checkpoint_read_state(const char *path, CheckpointState *st, char *err, size_t errlen);

/* A checkpoint read once: checkpoint_open checks the seal, reads the state into st (as
 * checkpoint_read_state) and keeps the file open, so that the tensors can be read once the model is
 * built (checkpoint_read_tensors, as checkpoint_load) without reading the file again.  NULL with a
 * message in err. */
typedef struct Checkpoint Checkpoint;
Checkpoint *checkpoint_open(const char *path, CheckpointState *st, char *err, size_t errlen);
int checkpoint_read_tensors(Checkpoint *ck, ParamSet *ps, OptimMoments *mo, char *err, size_t errlen);
const char *checkpoint_path(const Checkpoint *ck);
void checkpoint_close(Checkpoint *ck); /* NULL: nothing */

/* Validates and loads everything into ps (which must be finalized and built with the same
 * config) and the optimizer state into mo (initialised for ps: the buffers of its optimizer, by name;
 * NULL: every state buffer in the file validated and dropped, for a model that is not trained further): every parameter of ps present with the same shape and a float
 * dtype, no parameter in the file that ps lacks, no NaN/Inf in parameters or moments.  On failure
 * ps is left partly loaded: the caller must not use it. */
int checkpoint_load(const char *path, ParamSet *ps, OptimMoments *mo, CheckpointState *st, char *err, size_t errlen);

/* Compares two `key = value` config texts (as model/config.h writes them; '#' comments, blank lines
 * and spaces around '=' are ignored).  Keys listed in ignore (NULL-terminated, may be NULL) may
 * differ, e.g. the total number of steps when a run is extended.  Returns 0 when they agree, else 1
 * with the first difference in msg, e.g. "'hidden_size' is 256 in the checkpoint but 128 now". */
int checkpoint_config_diff(const char *saved, const char *now, const char *const *ignore, char *msg, size_t len);

/* Looks up a group's saved step counter; -1 if the group is absent. */
int64_t checkpoint_group_step(const CheckpointState *st, const char *group);
/* Adds (or replaces) a group's step counter in st (for the writer). */
void checkpoint_set_group_step(CheckpointState *st, const char *group, int64_t step);
void checkpoint_state_free(CheckpointState *st);

/* Test hook: when the environment variable DEBERTA_CHECKPOINT_CRASH_AFTER=N is set, the writer
 * raise(SIGKILL)s itself after writing N parameter datasets (the crash-safety test uses it). */
#define CHECKPOINT_CRASH_ENV "DEBERTA_CHECKPOINT_CRASH_AFTER"
#endif
