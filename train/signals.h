/* signals.h — SIGTERM / SIGINT during a run: the first asks the loop to finish its step, write a
 * checkpoint and exit 0; a second exits at once (status 128 + signal), after removing the
 * temporary files of the run directory, so no .tmp is left behind. */
#ifndef DEBERTA_SIGNALS_H
#define DEBERTA_SIGNALS_H

/* Installs the handlers for the run in rundir (its temporary files are the ones a second signal
 * removes). */
void signals_install(const char *rundir);
/* The signal that asked the run to stop (SIGTERM or SIGINT), or 0. */
int signals_stop_requested(void);
/* "SIGTERM", "SIGINT" */
const char *signals_name(int sig);
/* Restores the default handlers. */
void signals_restore(void);
#endif
