/* cli.c — what every command shares: the usage-error line. */
#include "train/cli/cli.h"
#include <stdarg.h>
#include <stdio.h>

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "error: %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see deberta %s --help)\n", cmd);
    va_end(ap);
    return 2;
}
