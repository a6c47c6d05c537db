/* testutil.h — included by every cmocka suite. */
#ifndef DEBERTA_TESTUTIL_H
#define DEBERTA_TESTUTIL_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <float.h>
#include "autograd/tensor.h"

/* A fresh directory /tmp/deberta-test-<name>-XXXXXX, its path in dir[n]; 0, or -1 on failure. */
static inline int test_tmpdir(char *dir, size_t n, const char *name) {
    snprintf(dir, n, "/tmp/deberta-test-%s-XXXXXX", name);
    return mkdtemp(dir) ? 0 : -1;
}

/* Removes a directory made by test_tmpdir and everything in it; 0, or -1 on failure. */
static inline int test_rmtree(const char *dir) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* NaN-safe comparison (cmocka 1.1.5's assert_float_equal casts to float and lets NaN through):
 * |got - want| <= tol in double, NaN on either side fails.  REAL_TOL(f, d) picks the tolerance of
 * the build's precision (real = float or double) for quantities computed in `real`. */
#define REAL_TOL(f, d) (REAL_IS_DOUBLE ? (d) : (f))
#define assert_near(got, want, tol) test_near((double)(got), (double)(want), (double)(tol), #got, __FILE__, __LINE__)
static inline void test_near(double got, double want, double tol, const char *what, const char *file, int line) {
    if (!(fabs(got - want) <= tol)) {
        print_error("%s = %.17g, expected %.17g within %.3g (|diff| %.3g)\n", what, got, want, tol, fabs(got - want));
        _fail(file, line);
    }
}

/* A skipped test counts as a pass in cmocka: test_skip records it (with its reason on stderr) and
 * test_exit turns the group's result into the exit status run-all.sh reads: 0 all passed, 77 none
 * failed but some skipped, 1 a failure. */
static int test_skipped __attribute__((unused));
#define test_skip(...) do { fprintf(stderr, "SKIPPED: " __VA_ARGS__); fprintf(stderr, "\n"); test_skipped++; skip(); } while (0)
static inline int test_exit(int failed) {
    if (failed) return 1;
    if (test_skipped) fprintf(stderr, "SKIPPED: %d test(s) of this suite did not run (reason above)\n", test_skipped);
    return test_skipped ? 77 : 0;
}
#endif
