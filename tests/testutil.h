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
#endif
