/* signals.c — see signals.h.  The handler only sets a flag (first signal) or unlinks fixed paths and
 * calls _exit (second signal): both async-signal-safe. */
#include "train/signals.h"
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop = 0;
/* the run directory's temporary files (util.h: every file is written as "<path>.tmp") */
static const char *const TMP_NAMES[] = {"checkpoint.h5.tmp", "metrics.jsonl.tmp", "config.txt.tmp",
                                        "best.h5.tmp", "results.txt.tmp"}; /* the last two: deberta finetune */
#define N_TMP (sizeof TMP_NAMES / sizeof TMP_NAMES[0])
static char g_tmp[N_TMP][4200];
static struct sigaction g_old_term, g_old_int;

static void on_signal(int sig) {
    if (!g_stop) {
        g_stop = sig;
        return;
    }
    for (size_t i = 0; i < N_TMP; i++)
        if (g_tmp[i][0]) unlink(g_tmp[i]);
    static const char msg[] = "error: interrupted a second time: exiting now without a new checkpoint (the last one is intact)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(128 + sig);
}

static int g_installed; /* signals_install ran and signals_restore has not */

void signals_install(const char *rundir) {
    g_installed = 1;
    for (size_t i = 0; i < N_TMP; i++)
        if (snprintf(g_tmp[i], sizeof g_tmp[i], "%s/%s", rundir, TMP_NAMES[i]) >= (int)sizeof g_tmp[i]) g_tmp[i][0] = 0;
    g_stop = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, &g_old_term);
    sigaction(SIGINT, &sa, &g_old_int);
}

int signals_stop_requested(void) { return g_stop; }

const char *signals_name(int sig) { return sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "a signal"; }

void signals_restore(void) {
    if (!g_installed) return;
    g_installed = 0;
    sigaction(SIGTERM, &g_old_term, NULL);
    sigaction(SIGINT, &g_old_int, NULL);
}
