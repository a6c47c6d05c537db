/* version.h — the build's identity: `deberta --version`, the first line of every run's log and the
 * comment line before each command in RUNDIR/cmdline.txt, so that a result can be traced to the
 * build that made it. */
#ifndef DEBERTA_TRAIN_VERSION_H
#define DEBERTA_TRAIN_VERSION_H

#define DEBERTA_VERSION "0.9"

/* "deberta 0.9 (commit 1a2b3c4d5e6f, float, MPI on, BLAS SkylakeX, gemm own AVX-512)": the git
 * commit baked in by the Makefile ("unknown" outside git, "-dirty" when the work tree had changes),
 * the precision, whether MPI is built in, OpenBLAS's core and the gemm kernel the run uses. */
const char *deberta_version(void);
#endif
