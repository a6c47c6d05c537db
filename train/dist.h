/* dist.h — data-parallel training over MPI (docs/ARCHITECTURE.md "Data parallel").
 *
 * One process per rank; every rank holds the whole model, reads a disjoint slice of every global
 * batch (data/loader.h, "Ranks") and sums its gradients with the others' in one allreduce per model
 * update.  The same binary runs without mpirun: dist_init then does nothing, rank 0 of 1, and every
 * collective below is a no-op (or a copy), so a single process never touches MPI.
 *
 * MPI is initialised only when the process was started by mpirun (Open MPI's OMPI_COMM_WORLD_SIZE,
 * or PMIX_RANK / PMI_RANK of other launchers, in the environment): MPI_Init of a singleton costs
 * about a second and the other commands never need it.  A build without mpicc (DEBERTA_MPI unset)
 * compiles the same interface with world = 1 and refuses to run under a launcher.
 *
 * Errors: MPI_COMM_WORLD keeps MPI_ERRORS_ARE_FATAL, and a rank that calls fatal() exits(1) without
 * MPI_Finalize; in both cases mpirun ends the other ranks (SIGTERM, then SIGKILL) and names the rank
 * that failed.  A rank that receives that SIGTERM prints one line saying so before it exits
 * (dist_init installs the handler).  A rank killed outright (SIGKILL, OOM killer, a lost machine)
 * is noticed the same way: see docs/ARCHITECTURE.md "Data parallel" for what was measured.
 */
#ifndef DEBERTA_TRAIN_DIST_H
#define DEBERTA_TRAIN_DIST_H
#include <stddef.h>
#include <stdint.h>
#include "autograd/tensor.h"

/* Initialises MPI when launched by mpirun, else nothing.  Exits with one clear line when launched
 * by mpirun but built without MPI.  Safe to call more than once. */
void dist_init(int *argc, char ***argv);
/* MPI_Finalize when dist_init initialised MPI. */
void dist_finalize(void);
/* Ends every rank with exit code `code` after a collective failure that all ranks detected. */
void dist_exit(int code) __attribute__((noreturn));

int dist_rank(void);        /* 0 .. world-1 */
int dist_world(void);       /* number of ranks (1 without mpirun) */
int dist_local_size(void);  /* ranks on this machine (1 without mpirun) */

/* Sums over all ranks, in place (every rank ends with the same values). */
void dist_allreduce_real(real *buf, long n);
void dist_allreduce_double(double *buf, int n);
void dist_allreduce_i64(int64_t *buf, int n);
/* ZeRO-1 (train/optim.h "shards"): buf holds the regions of every rank back to back, region r of
 * counts[r] elements.  reduce_scatter: this rank's region becomes the sum over ranks of that region;
 * allgather: every rank's region from its owner; gather: rank 0 receives every region. */
void dist_reduce_scatter_real(real *buf, const long *counts);
void dist_allgather_real(real *buf, const long *counts);
void dist_gather_real(real *buf, const long *counts);
/* all[r·n + i] = rank r's mine[i]. */
void dist_allgather_i64(const int64_t *mine, int n, int64_t *all);
/* Rank 0 gets every rank's bytes concatenated in rank order (a malloc'd buffer, *total bytes);
 * the others get NULL. */
void *dist_gather_bytes(const void *mine, size_t n, size_t *total);
/* Rank root's bytes to every rank. */
void dist_bcast(void *buf, size_t bytes, int root);
void dist_barrier(void);

/* Every rank passes its hash of `what` (e.g. "the options"); if any rank's differs from rank 0's,
 * every rank prints one line naming `what`, the ranks that differ and the hint, and exits 1.
 * dist_agree_text hashes a text and, on a rank whose text differs from rank 0's, names its first
 * differing line ("rank 0 has 'train_lr = 0.001', this rank 'train_lr = 0.002'"). */
void dist_agree(const char *what, uint64_t hash, const char *hint);
void dist_agree_text(const char *what, const char *text, const char *hint);

/* FNV-1a 64 over bytes, chained through h (start with DIST_HASH_INIT). */
#define DIST_HASH_INIT 0xcbf29ce484222325ULL
uint64_t dist_hash(uint64_t h, const void *data, size_t n);
#endif
