/*
 * `djp trace -c CMD`, the command's side: armed before main runs.
 *
 * SystemTap's -c starts the command and has its probes in place before the
 * command's first instruction of interest.  Here the tool cannot patch a
 * process that has not started, so the command comes to the tool: the tool
 * listens on an abstract socket of its own, puts its name in DJP_AGENT_TOOL
 * and libdjprobe.so in LD_PRELOAD, and starts the command.  In the command,
 * the agent's constructor (which runs before main: a preloaded library is
 * initialised before the program) connects to that socket, hands the
 * connection to the agent thread as its first session, and waits.  The
 * tool configures the session as it would any other (ring, patterns) and
 * then sends START, which releases the constructor, and main runs with
 * every probe armed.  The wait is bounded (DJP_AGENT_TIMEOUT seconds,
 * default 5): a tool that dies or dawdles costs the command at most that,
 * and the end of the session releases it at once.
 *
 * Which process is the target?  A command the tool runs itself (a plain
 * word list, exec'd directly) is: the tool names its pid in
 * DJP_AGENT_TOOL_PID, and it dials in whatever it holds, SDT probes only
 * (PostgreSQL, python3) or nothing yet (its probes may come with dlopen).
 * Otherwise the command runs through /bin/sh, and every process it starts
 * inherits the environment, so the first process with LD_PRELOAD may be a
 * shell: then the agent dials only from a process that has probes of its
 * own, djprobe markers in a loaded object or SDT notes in the program
 * itself (libc's SDT notes, which every shell loads, do not count).  Both
 * variables stay in the environment: a program the command execs in the
 * same process (a wrapper's program) dials in as the command did, and any
 * program another process of the trace execs later (a worker a child of
 * fork execs) dials in when it has probes, so that a fork-and-exec is
 * traced too.  A child of fork runs no constructor; it
 * is followed through fork instead (FOLLOW, agent.c).
 */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "kernel/agent/agent.h"
#include "lib/markers.h"

static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t launch_cond = PTHREAD_COND_INITIALIZER;
static bool released;

static int object_has_markers(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *name = info->dlpi_name;
	struct djp_marker_list *list = NULL;
	char err[256];
	int found = 0;

	(void)size;
	(void)arg;
	if (!name || strstr(name, "linux-vdso"))
		return 0;
	bool program = !name[0];
	if (program)
		name = "/proc/self/exe";
	/* SDT notes count in the program only: libc has some */
	if (djp_markers_read_file(name, DJP_READ_NO_DWARF | (program ? 0 : DJP_READ_NO_SDT), &list, err,
				  sizeof(err)) == 0) {
		/* the library's own (kernel/threads.c) are nobody's probes */
		found = djp_marker_list_programs(list) > 0;
		djp_marker_list_free(list);
	}
	return found;
}

int djp_agent_launch_dial(void)
{
	const char *tool = getenv(DJP_AGENT_TOOL_ENV);
	const char *cmd_pid = getenv(DJP_AGENT_TOOL_PID_ENV);
	bool own;

	if (!tool || !*tool)
		return -1;
	own = dl_iterate_phdr(object_has_markers, NULL) != 0;
	if ((!cmd_pid || atol(cmd_pid) != (long)getpid()) && !own)
		return -1;
	/* Both stay.  DJP_AGENT_TOOL_PID: the program the command execs in
	 * the same process (a wrapper's: env, runuser, the interpreter of a
	 * PATH shim and what that execs) dials in whatever it holds, for
	 * the function and line patterns the tool keeps for it; children
	 * have other pids.  DJP_AGENT_TOOL: a program that another process
	 * of the trace execs (a child's after fork) dials in too, if it has
	 * probes of its own.  A child of fork runs no constructor: it is
	 * followed (FOLLOW), never dials twice. */
	return djp_agent_dial_tool(tool);
}

int djp_agent_dial_tool(const char *tool)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	const char *why;
	size_t n = strlen(tool);
	int fd;

	if (!n || n >= sizeof(a.sun_path) - 1)
		return -1;
	memcpy(a.sun_path + 1, tool, n);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || !djp_agent_peer_allowed(&cred, &why)) {
		close(fd);
		return -1;
	}
	return fd;
}

void djp_agent_launch_wait(void)
{
	const char *env = getenv(DJP_AGENT_TIMEOUT_ENV);
	double secs = env ? strtod(env, NULL) : DJP_AGENT_DEFAULT_TIMEOUT;
	struct timespec until;

	if (!(secs > 0) || secs > 3600)
		secs = DJP_AGENT_DEFAULT_TIMEOUT;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)secs;
	until.tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&launch_lock);
	while (!released && pthread_cond_clockwait(&launch_cond, &launch_lock, CLOCK_MONOTONIC, &until) != ETIMEDOUT)
		;
	released = true;
	pthread_mutex_unlock(&launch_lock);
}

void djp_agent_launch_rearm(void)
{
	released = false; /* a child of fork: the parent's START was not its own */
}

void djp_agent_launch_release(void)
{
	pthread_mutex_lock(&launch_lock);
	released = true;
	pthread_cond_broadcast(&launch_cond);
	pthread_mutex_unlock(&launch_lock);
}
