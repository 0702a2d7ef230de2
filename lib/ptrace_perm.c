/*
 * Who may trace whom.
 *
 * A session with the agent gives the tool what ptrace would: the target's
 * memory (a %s argument reads any string) and a hand in its text.  So the
 * rule for a session is ptrace's own (ptrace_may_access in the kernel,
 * PTRACE_MODE_READ_REALCREDS): the tracer may trace the target when the
 * tracer's uid equals all three of the target's uids (real, effective,
 * saved) and its gid all three of the target's gids, and the target is
 * dumpable; a tracer with CAP_SYS_PTRACE may trace anything.  A setuid
 * program run by an ordinary user has an effective uid that is not the
 * user's, and the kernel makes it non-dumpable: refused.  A daemon that
 * dropped privileges is non-dumpable too: refused to all but root.
 *
 * Both sides apply it.  The agent checks its peer (SO_PEERCRED names the
 * peer's pid and its effective uid and gid at connect time; the peer's
 * capabilities come from /proc/PID/status, believed only when that file
 * still shows the uid SO_PEERCRED gave, so a pid reused by another user's
 * process grants nothing).  The tool checks the agent's process, named by
 * SO_PEERCRED on the socket it connected to, against itself: it never talks
 * to an agent it could not ptrace, root's included.
 *
 * The kernel compares the tracer's filesystem ids (normally its effective
 * ones); so do we.  Supplementary groups do not count, as in the kernel.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/ptrace_perm.h"

#define CAP_SYS_PTRACE_BIT 19

static int read_status(const char *path, struct djp_creds *c)
{
	char line[256];
	unsigned long long cap = 0;
	int have = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned a, b, d, e;
		if (sscanf(line, "Uid: %u %u %u %u", &a, &b, &d, &e) == 4) {
			c->uid[0] = a, c->uid[1] = b, c->uid[2] = d, c->uid[3] = e;
			have |= 1;
		} else if (sscanf(line, "Gid: %u %u %u %u", &a, &b, &d, &e) == 4) {
			c->gid[0] = a, c->gid[1] = b, c->gid[2] = d, c->gid[3] = e;
			have |= 2;
		} else if (sscanf(line, "CapEff: %llx", &cap) == 1) {
			have |= 4;
		}
	}
	fclose(f);
	if (have != 7)
		return -EIO;
	c->cap_ptrace = (cap >> CAP_SYS_PTRACE_BIT) & 1;
	return 0;
}

int djp_creds_self(struct djp_creds *c)
{
	int ret = read_status("/proc/self/status", c);

	if (ret)
		return ret;
	c->dumpable = prctl(PR_GET_DUMPABLE) == 1;
	return 0;
}

int djp_creds_of(pid_t pid, struct djp_creds *c)
{
	char path[64];
	struct stat st;
	int ret;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((ret = read_status(path, c)))
		return ret;
	if (stat(path, &st))
		return errno == ENOENT ? -ESRCH : -errno;
	/* The files in /proc/PID belong to the process's effective uid when
	 * it is dumpable, to root otherwise (the directory itself does not
	 * change owner). */
	c->dumpable = st.st_uid == c->uid[1];
	return 0;
}

bool djp_may_trace(const struct djp_creds *tracer, const struct djp_creds *target, const char **why)
{
	const char *reason = NULL;

	if (tracer->cap_ptrace)
		return true;
	for (int i = 0; i < 3 && !reason; i++)
		if (target->uid[i] != tracer->uid[3] || target->gid[i] != tracer->gid[3])
			reason = "its user or group ids are not all the tracer's (setuid, setgid or another user)";
	if (!reason && !target->dumpable)
		reason = "it is not dumpable (it changed its privileges, or asked not to be traced)";
	if (reason && why)
		*why = reason;
	return !reason;
}
