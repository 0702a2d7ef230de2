/*
 * Every process of a program (djp trace -a): which processes to attach,
 * found by a look at /proc at the start and, from then on, by the kernel's
 * own notices of exec and fork (session_all.c).
 */
#ifndef DJP_TOOLS_SESSION_ALL_H
#define DJP_TOOLS_SESSION_ALL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct session_all;

/* Whether pid has a session of the trace that lives. */
typedef bool (*session_all_traced_fn)(void *ctx, pid_t pid);

/* The processes that map one of paths (resolved, each an existing file),
 * or, with none, those that map an object with a marker one of the marker
 * patterns matches.  The process events are listened to first, then every
 * process running is queued for a look.  NULL with a line in err. */
struct session_all *session_all_open(const char *const *paths, unsigned npaths, const char *const *patterns,
				     unsigned npatterns, char *err, size_t errsz);
/* The kernel's process events could not be listened to (not root): why,
 * or NULL when they are heard. */
const char *session_all_deaf(const struct session_all *a);
/* The socket to poll for the kernel's notices, or -1. */
int session_all_fd(const struct session_all *a);
/* Read the notices there are: each exec and each new process queued. */
void session_all_read(struct session_all *a);
/* Look at pid again (its agent went away while it lives on: an exec). */
void session_all_look(struct session_all *a, pid_t pid);
/* Milliseconds until a queued process is due a look: 0 now, -1 none. */
int session_all_due_ms(const struct session_all *a);
/* The next process due that is one of the program's, the user may trace,
 * is not the tool nor what runs it, and has no session (traced): its
 * pid, or 0 when none is due now. */
pid_t session_all_next(struct session_all *a, session_all_traced_fn traced, void *ctx);
/* pid could not be attached or armed (said in one line): not tried again
 * while it runs the same program. */
void session_all_failed(struct session_all *a, pid_t pid);
void session_all_free(struct session_all *a);

#endif
