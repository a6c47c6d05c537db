/* omp_policy.c — build/deberta needs no OpenMP (or OpenBLAS) environment tuning.
 *
 * libgomp reads OMP_WAIT_POLICY / GOMP_SPINCOUNT once, in its own constructor, before any code of
 * ours runs; there is no API to change the wait policy afterwards.  A training step opens ~500
 * parallel regions (every BLAS call and every kernel loop), separated by short serial stretches (op
 * glue, sampling, tape bookkeeping).  What the idle thread does between them decides a good part of
 * the 2-thread speed:
 *   - libgomp's default spins ~300,000 iterations (several ms) before it sleeps.  On a loaded machine
 *     (other processes on the cores) the spinning thread burns the time slices the working threads
 *     need: the step becomes several times slower than with PASSIVE (docs/PERFORMANCE.md, "OpenMP
 *     wait policy", has the figures).
 *   - PASSIVE (no spinning) sleeps at once, and every region then pays a futex wake-up, which on a
 *     virtual machine (the sleeping vCPU halted) costs tens of microseconds: a tenth of a tiny step
 *     on an idle machine.
 *   - A short spin (GOMP_SPINCOUNT=10000, a fraction of a millisecond) catches the next region on an
 *     idle machine (the step faster than with PASSIVE) but still costs a loaded one.
 * So, unless the user chose a policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT set), the binary looks at the
 * machine once and re-executes itself, before main(), with GOMP_SPINCOUNT=10000 if nothing else is
 * running (the kernel's count of runnable tasks, /proc/stat "procs_running", sampled 10 times over
 * ~10 ms, averages under 1.5 with ourselves counted) and with OMP_WAIT_POLICY=PASSIVE otherwise.  The
 * choice is made at start only: load that begins later in a long run meets the short spin (set
 * OMP_WAIT_POLICY=PASSIVE on a machine shared that way).  DEBERTA_OMP_POLICY tells the re-executed
 * program (and `deberta bench`) what was chosen.
 *
 * The same re-execution also sets OpenBLAS's kernel set when OpenBLAS, not knowing the CPU, fell back to
 * one without AVX2 on a CPU that has it (Prescott and the like; gemm_blas_core_fix, autograd/gemm.h):
 * OPENBLAS_CORETYPE=Haswell, unless the user set OPENBLAS_CORETYPE.  OpenBLAS reads that variable only
 * in its own constructor, so this too needs the exec.  DEBERTA_BLAS_CORE tells the re-executed program
 * (deberta --version) what OpenBLAS had chosen; any other value of it is dropped (blas_note_check).
 *
 * This is a constructor of the main executable: glibc runs it after the shared libraries'
 * constructors (libgomp, OpenBLAS, HDF5) and passes it argc/argv.  No thread has been started at that
 * point (libgomp creates its pool at the first parallel region).  If the exec fails the program
 * simply continues with the default policy and OpenBLAS's own kernel set.  The object is linked into
 * build/deberta only (the test programs link libdeberta.a, which nothing pulls this file from), and
 * DEBERTA_NO_REEXEC=1 disables both (e.g. to measure the defaults).  scripts/lib-bench.sh reads the note
 * in --version to learn that OpenBLAS fell back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cblas.h>
#include "autograd/gemm.h"

#define SHORT_SPIN "10000" /* GOMP_SPINCOUNT on an idle machine (scripts/bench-vs-torch.sh gives torch.nn the same) */

/* the mean of procs_running over a few samples, or -1 if /proc/stat cannot be read */
static double runnable_tasks(void) {
    const int samples = 10;
    long sum = 0;
    for (int s = 0; s < samples; s++) {
        FILE *f = fopen("/proc/stat", "r");
        if (!f) return -1;
        char line[256];
        long v = -1;
        while (fgets(line, sizeof line, f))
            if (strncmp(line, "procs_running ", 14) == 0) v = strtol(line + 14, NULL, 10);
        fclose(f);
        if (v < 0) return -1;
        sum += v;
        if (s + 1 < samples) nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return (double)sum / samples;
}

#define BLAS_NOTE "set by deberta: OpenBLAS chose " /* DEBERTA_BLAS_CORE: this prefix, then OpenBLAS's choice */

/* Keeps DEBERTA_BLAS_CORE only as the re-exec writes it: a fallback set named after BLAS_NOTE whose fix is the
 * OPENBLAS_CORETYPE in force.  A stale or hand-set value cannot make --version claim what deberta did not do. */
static void blas_note_check(int avx2_fma) {
    const char *note = getenv("DEBERTA_BLAS_CORE"), *set = getenv("OPENBLAS_CORETYPE");
    if (!note) return;
    const size_t n = strlen(BLAS_NOTE);
    const char *fix = strncmp(note, BLAS_NOTE, n) ? NULL : gemm_blas_core_fix(note + n, avx2_fma);
    if (!fix || !set || strcmp(fix, set)) unsetenv("DEBERTA_BLAS_CORE");
}

__attribute__((constructor)) static void deberta_start_env(int argc, char **argv, char **envp) {
    (void)argc;
    (void)envp;
    __builtin_cpu_init();
    const int avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    blas_note_check(avx2_fma);
    if (getenv("DEBERTA_NO_REEXEC") || !argv || !argv[0]) return;
    /* the OpenMP wait policy, unless the user chose one */
    const char *var = NULL;
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) {
        const double running = runnable_tasks();
        const int idle = running >= 0 && running < 1.5;
        var = idle ? "GOMP_SPINCOUNT" : "OMP_WAIT_POLICY";
        if (setenv(var, idle ? SHORT_SPIN : "PASSIVE", 1) != 0) return;
        setenv("DEBERTA_OMP_POLICY", idle ? "GOMP_SPINCOUNT=" SHORT_SPIN " (machine idle at start)"
                                          : "OMP_WAIT_POLICY=PASSIVE (other tasks running at start)", 1);
    }
    /* OpenBLAS's kernel set, unless the user chose one */
    const char *core = NULL;
    if (!getenv("OPENBLAS_CORETYPE")) {
        const char *own = openblas_get_corename();
        core = gemm_blas_core_fix(own, avx2_fma);
        if (core) {
            char note[96];
            snprintf(note, sizeof note, BLAS_NOTE "%s", own);
            setenv("OPENBLAS_CORETYPE", core, 1);
            setenv("DEBERTA_BLAS_CORE", note, 1);
        }
    }
    if (!var && !core) return;
    execv("/proc/self/exe", argv);
    /* exec failed: keep running with libgomp's default policy and OpenBLAS's own kernel set, and say so
     * (omp_wait_describe, deberta_version) */
    if (var) {
        unsetenv(var);
        unsetenv("DEBERTA_OMP_POLICY");
    }
    if (core) {
        unsetenv("OPENBLAS_CORETYPE");
        unsetenv("DEBERTA_BLAS_CORE");
    }
}
