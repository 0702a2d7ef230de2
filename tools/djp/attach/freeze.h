/*
 * Stopping every thread of a traced process but its agent's, for the agent
 * to write its text while none runs (freeze.c has the essay).
 */
#ifndef DJP_TOOLS_FREEZE_H
#define DJP_TOOLS_FREEZE_H

#include <stddef.h>
#include <sys/types.h>

struct freeze {
	pid_t *tids; /* the threads stopped, seized by ptrace */
	int *sigs;   /* a signal each stopped with instead, given back */
	size_t n, cap;
};

/* Stop every thread of pid but `keep` (rescanned until no new one comes):
 * 0 once all are stopped, or -errno with every one let go again. */
int freeze_stop(struct freeze *f, pid_t pid, pid_t keep);
/* Let them all go on (nothing when none is stopped). */
void freeze_thaw(struct freeze *f);
void freeze_free(struct freeze *f);

#endif
