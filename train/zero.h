/* zero.h — ZeRO-1 (data parallel, `--zero 1`): each of the N ranks keeps the optimizer state (every
 * state buffer of the optimizer's registry entry, train/optim.h) of, and
 * updates, one shard of every optimizer group (train/optim.h "shards": a contiguous run of whole
 * chunks balanced by elements).  This object owns every collective that sharding adds:
 *   - after the backward, the group's gradient is reduce-scattered (each rank gets the sum of its
 *     shard only); without ZeRO-1 it is allreduced;
 *   - the gradient norm's per-chunk partial sums are summed over the ranks (each chunk is non-zero
 *     on its owner only, so the norm is the unsharded one);
 *   - after the update every rank all-gathers the others' new parameters;
 *   - the moments outside the rank's shards go back to the system (release), and before a
 *     checkpoint rank 0 gathers them (gather-for-save), then releases them again.
 * Off (one process, or --zero 0) every call but the gradient sum is a no-op.  The shard sizes are
 * computed once, so the step's collectives allocate nothing. */
#ifndef DEBERTA_TRAIN_ZERO_H
#define DEBERTA_TRAIN_ZERO_H
#include "train/optim.h"

#define ZERO_MAX_GROUPS 4

typedef struct Zero {
    int on;                          /* sharded over world > 1 ranks */
    int rank, world;
    OptimGroup *groups;              /* the run's groups (not owned) */
    int n_groups;
    const ParamSet *ps;
    OptimMoments *mo;
    long *counts[ZERO_MAX_GROUPS];   /* per group: the elements of each rank's shard [world] */
} Zero;

/* Shards the groups when on (and world > 1); z->on says whether it did. */
void zero_init(Zero *z, int on, OptimGroup *groups, int n_groups, const ParamSet *ps, OptimMoments *mo);
void zero_free(Zero *z);

/* The group's gradient (one span of the flat buffer) summed over the ranks: allreduce, or with ZeRO-1
 * a reduce-scatter that leaves each rank the sum of its shard only (z NULL: no sharding).  bad: this
 * rank's loss was not finite, so its gradient is poisoned with a NaN first and every rank skips. */
void zero_sync_grads(const Zero *z, OptimGroup *g, int bad);
/* After a group's update (not skipped): every rank fetches the other shards' new parameters. */
void zero_after_update(const Zero *z, OptimGroup *g);

/* The state outside this rank's shards back to the system (it reads as zero).  Returns the bytes
 * of state this rank keeps. */
double zero_release(const Zero *z);
/* Before a checkpoint: rank 0 gathers every shard's moments (every rank takes part); after it,
 * zero_release again. */
void zero_gather_for_save(const Zero *z);
#endif
