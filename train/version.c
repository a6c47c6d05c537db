/* version.c — see version.h.  DEBERTA_COMMIT comes from the Makefile (only this file is rebuilt when
 * the commit changes). */
#include "train/version.h"
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include "autograd/gemm.h"
#include "autograd/tensor.h"

#ifndef DEBERTA_COMMIT
#define DEBERTA_COMMIT "unknown"
#endif
#ifdef DEBERTA_MPI
#define MPI_STATE "MPI on"
#else
#define MPI_STATE "MPI off"
#endif

const char *deberta_version(void) {
    static char s[256];
    if (!s[0]) {
        const char *set = getenv("DEBERTA_BLAS_CORE"); /* train/cli/omp_policy.c */
        snprintf(s, sizeof s, "deberta %s (commit %s, %s, %s, BLAS %s%s%s, gemm %s)", DEBERTA_VERSION, DEBERTA_COMMIT, REAL_NAME,
                 MPI_STATE, openblas_get_corename(), set ? " " : "", set ? set : "", gemm_kernel_name());
    }
    return s;
}
