/*
 * The other processes of a trace: children of fork and the program a -c
 * wrapper execs (session.h, struct session_kids).
 *
 * The tool listens on an abstract socket of its own and names it to each
 * agent (FOLLOW); an agent in a child of fork dials it before fork returns
 * there and waits for START (kernel/trace/agent.c).  A -c command's socket
 * (launch_fd) keeps taking dial-ins too: a wrapper without probes leaves it
 * to the program it execs.  Each process that dials becomes a session of
 * its own, with the main session's ring options; the caller configures it
 * (it knows the patterns) and keeps it, or gives it up, which BYE's it and
 * so releases its fork.  `djp trace` and the script's live source both
 * drain them beside the main session.
 */
#include <stdlib.h>
#include <unistd.h>

#include "session.h"

int session_kids_listen(struct session_kids *k, struct session *main)
{
	int err = 0;
	k->follow_fd = session_listen(k->follow_name, sizeof(k->follow_name));
	if (k->follow_fd >= 0 && (err = session_follow(main, k->follow_name))) {
		close(k->follow_fd);
		k->follow_fd = -1;
	}
	return err;
}

struct session *session_kids_accept(struct session_kids *k, const struct session *main)
{
	struct session *c = NULL;
	if ((k->follow_fd >= 0 && (c = session_accept(k->follow_fd))) ||
	    (main->launch_fd >= 0 && (c = session_accept(main->launch_fd)))) {
		c->snapshot = main->snapshot;
		c->buffer_size = main->buffer_size;
		c->fmt_patterns = main->fmt_patterns;
		c->fmt_formats = main->fmt_formats;
		c->nfmt = main->nfmt;
	}
	return c;
}

int session_kids_follow(struct session_kids *k, struct session *c)
{
	return k->follow_fd >= 0 ? session_follow(c, k->follow_name) : 0;
}

void session_kids_keep(struct session_kids *k, struct session *c)
{
	struct session **v = realloc(k->v, (k->n + 1) * sizeof(*v));
	if (!v) {
		session_discard(c);
		return;
	}
	k->v = v;
	k->v[k->n++] = c;
}

void session_discard(struct session *c)
{
	if (c->alive)
		session_bye(c); /* also releases its fork */
	session_free(c);
	free(c);
}

void session_kids_free(struct session_kids *k)
{
	for (size_t i = 0; i < k->n; i++)
		session_discard(k->v[i]);
	free(k->v);
	if (k->follow_fd >= 0)
		close(k->follow_fd);
	k->v = NULL;
	k->n = 0;
	k->follow_fd = -1;
}
