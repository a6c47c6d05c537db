/* cli.c — what every command shares: the usage-error line, the OpenMP wait policy for the log. */
#include "train/cli/cli.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "error: %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see deberta %s --help)\n", cmd);
    va_end(ap);
    return 2;
}

char *omp_wait_describe(char *buf, size_t n) {
    const char *chosen = getenv("DEBERTA_OMP_POLICY"), *pol = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    if (chosen)
        snprintf(buf, n, "%s", chosen);
    else if (pol || spin)
        snprintf(buf, n, "%s%s%s%s%s (from the environment)", pol ? "OMP_WAIT_POLICY=" : "", pol ? pol : "", pol && spin ? " " : "",
                 spin ? "GOMP_SPINCOUNT=" : "", spin ? spin : "");
    else
        snprintf(buf, n, "libgomp's default");
    return buf;
}
