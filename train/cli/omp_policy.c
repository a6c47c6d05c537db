/* omp_policy.c — build/deberta needs no OpenMP environment tuning.
 *
 * libgomp reads OMP_WAIT_POLICY / GOMP_SPINCOUNT once, in its own constructor, before any code of
 * ours runs; there is no API to change the wait policy afterwards.  Its default lets an idle thread
 * spin for ~300,000 iterations after every parallel region before it sleeps.  Every BLAS call and
 * every kernel loop of a training step is a parallel region, and the step alternates them with
 * serial code (op glue, sampling, tape bookkeeping): the spinning thread then competes with the
 * working one, and on a loaded machine (other processes on the cores) it burns the time slices the
 * working threads need — a step measured 3.6x slower with the default than with PASSIVE under a
 * load average of ~15 on 2 cores (docs/PERFORMANCE.md).
 *
 * So, unless the user chose a policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT set), the binary re-executes
 * itself once, before main(), with OMP_WAIT_POLICY=PASSIVE.  This is a constructor of the main
 * executable: glibc runs it after the shared libraries' constructors (libgomp, OpenBLAS, HDF5) and
 * passes it argc/argv.  No thread has been started at that point (libgomp creates its pool at the
 * first parallel region).  If the exec fails the program simply continues with the default policy.
 * The object is linked into build/deberta only (the test programs link libdeberta.a, which nothing
 * pulls this file from), and DEBERTA_NO_REEXEC=1 disables it (e.g. to measure the default). */
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void deberta_omp_policy(int argc, char **argv, char **envp) {
    (void)argc;
    (void)envp;
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || getenv("DEBERTA_NO_REEXEC")) return;
    if (!argv || !argv[0]) return;
    if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
    execv("/proc/self/exe", argv);
    /* exec failed: keep running with the default policy (the variable now set is harmless) */
}
