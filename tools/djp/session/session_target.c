/*
 * Getting a session with the agent of the traced process (session.h).
 *
 * -x PID: the agent of a running process listens on an abstract socket
 * "\0djprobe-agent-PID-TOKEN" (kernel/agent/agent.c), found through the process's
 * own descriptors (lib/agent_addr.c).  Before connecting, the process is
 * checked with kill(PID, 0), which tells "no such process" from "another
 * user's"; a refused connection means no agent.  After connecting, the peer's
 * credentials must name that very process (an abstract name can be taken by
 * anyone), and that process must be one we could ptrace (lib/ptrace_perm.c):
 * an agent in a setuid program or in another user's process is refused,
 * root's included.
 *
 * -c CMD: the tool listens on an abstract socket with a random name, starts
 * the command with libdjprobe.so in LD_PRELOAD and the socket's name in
 * DJP_AGENT_TOOL, and waits for the command's agent to dial in; that agent's
 * constructor then waits until the tool sends START, so the probes are armed
 * before main (kernel/agent/agent_launch.c).  Like SystemTap's -c, a command that
 * is a plain word list (wordexp without command substitution accepts it) is
 * run with execvp, so the traced process is the command itself; anything
 * else (pipes, redirections, ';') goes through /bin/sh -c, and the first
 * process in it that has markers dials in.  An exec that fails is reported
 * through a close-on-exec pipe, with the errno of the exec itself.
 *
 * Every wait is bounded: the dial-in by the agent's own timeout plus a
 * margin, and by the command's exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>

#include "lib/agent_addr.h"
#include "lib/escape.h"
#include "lib/proto.h"
#include "lib/ptrace_perm.h"
#include "tools/djp/attach/inject.h"
#include "tools/djp/session/session.h"

#define DIAL_TIMEOUT_MS ((DJP_AGENT_DEFAULT_TIMEOUT + 5) * 1000)
/* Descriptors an agent opens for a session: the connection, the rings'
 * memfd, the marker log's, and one file it reads at a time. */
#define SESSION_FDS 4

/* Could we ptrace process pid?  We never talk to an agent we could not
 * trace ourselves, root's included (lib/ptrace_perm.c). */
static bool may_trace(pid_t pid, const char **why)
{
	struct djp_creds me, target;

	*why = "its credentials cannot be read";
	if (djp_creds_self(&me) || djp_creds_of(pid, &target))
		return false;
	return djp_may_trace(&me, &target, why);
}

/* Is process pid in a job-control stop (state T)? */
static bool stopped(pid_t pid)
{
	char path[64], buf[512], *c;
	bool t = false;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return false;
	if (fgets(buf, sizeof(buf), f) && (c = strrchr(buf, ')')))
		t = c[1] == ' ' && c[2] == 'T';
	fclose(f);
	return t;
}

/* libdjprobe.so next to the djp binary (the build tree), or in ../lib
 * (an installed tree); DJP_PRELOAD overrides both. */
const char *session_preload_path(void)
{
	static char path[PATH_MAX + 32];
	static const char *const rel[] = { "libdjprobe.so", "../lib/libdjprobe.so.0", "../lib/libdjprobe.so" };
	char exe[PATH_MAX];
	const char *env = getenv("DJP_PRELOAD");
	ssize_t n;
	char *slash;

	if (env && *env)
		return env;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = 0;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", exe, rel[i]);
		if (access(path, R_OK) == 0)
			return path;
	}
	return NULL;
}

/* ---- -x PID ----------------------------------------------------------------- */

bool session_inject_force;

int session_attach(struct session *s)
{
	struct sockaddr_un a;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	socklen_t alen = 0;
	const char *why;
	int fd, err;
	pid_t pid = s->attach_pid;

	if (kill(pid, 0) < 0) {
		if (errno == ESRCH)
			fprintf(stderr, "djp: process %d: no such process\n", (int)pid);
		else if (errno == EPERM)
			fprintf(stderr, "djp: process %d: belongs to another user (permission denied)\n", (int)pid);
		else
			fprintf(stderr, "djp: process %d: %s\n", (int)pid, strerror(errno));
		return -1;
	}
	if (!may_trace(pid, &why)) {
		fprintf(stderr, "djp: process %d: not allowed to trace it: %s\n", (int)pid, why);
		return -1;
	}
	if (stopped(pid)) {
		/* its agent thread is stopped with it: it could not answer */
		fprintf(stderr, "djp: process %d: it is stopped (SIGSTOP, or ^Z in its shell): continue it first (kill -CONT %d)\n",
			(int)pid, (int)pid);
		return -1;
	}
	err = djp_agent_addr_find(pid, &a, &alen);
	if (err == -EACCES) {
		fprintf(stderr, "djp: process %d: not allowed to trace it: its descriptors cannot be read\n", (int)pid);
		return -1;
	}
	if (err == -ENOENT || err == -ECONNREFUSED) {
		/* no agent: load one into it (inject.c), then find it */
		const char *lib = session_preload_path();
		char why_not[512], abs[PATH_MAX];
		if (!lib || !realpath(lib, abs)) {
			fprintf(stderr, "djp: cannot find libdjprobe.so next to djp or in ../lib (set DJP_PRELOAD)\n");
			return -1;
		}
		if (djp_inject(pid, abs, session_inject_force, why_not, sizeof(why_not))) {
			fprintf(stderr, "djp: process %d: no djprobe agent in it, and %s\n", (int)pid, why_not);
			return -1;
		}
		for (int i = 0; i < 200 && (err = djp_agent_addr_find(pid, &a, &alen)) == -ENOENT; i++)
			nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	if (!err) {
		/* its agent must accept, and open a ring and a marker log:
		 * without descriptors it could only leave the tool waiting */
		unsigned long long limit;
		long nfree;
		if (!djp_fds_free(pid, &nfree, &limit) && nfree < SESSION_FDS) {
			fprintf(stderr,
				"djp: process %d: its agent cannot take a session: %ld of its %llu descriptors free (RLIMIT_NOFILE), %d needed\n",
				(int)pid, nfree < 0 ? 0 : nfree, limit, SESSION_FDS);
			return -1;
		}
	}
	fd = err ? -1 : socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, alen) < 0) {
		if (!err)
			err = -errno;
		if (fd >= 0)
			close(fd);
		if (err == -ECONNREFUSED || err == -ENOENT)
			fprintf(stderr,
				"djp: process %d: no djprobe agent in it (start it with LD_PRELOAD=libdjprobe.so, or link it with libdjprobe)\n",
				(int)pid);
		else
			fprintf(stderr, "djp: process %d: cannot reach its agent: %s\n", (int)pid, strerror(-err));
		return -1;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.pid != pid) {
		fprintf(stderr, "djp: process %d: its agent socket is held by process %d\n", (int)pid, (int)cred.pid);
		close(fd);
		return -1;
	}
	if (!may_trace(pid, &why)) {
		fprintf(stderr, "djp: process %d: not allowed to trace it: %s\n", (int)pid, why);
		close(fd);
		return -1;
	}
	s->fd = fd;
	s->pid = pid;
	s->alive = true;
	return 0;
}

/* ---- children of fork ----------------------------------------------------- */

/* A descriptor held in reserve for the moment the tool has no other: it is
 * given up to take a connection that could not be accepted and close it,
 * so that the process dialling goes on untraced at once (its agent sees
 * the session end) rather than after its launch timeout, and the
 * listening socket, drained, stops waking the tool in a loop. */
static int spare_fd = -1;

static void refuse_one(int lfd)
{
	int fd;
	if (spare_fd < 0)
		return;
	close(spare_fd);
	if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		close(fd);
	spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* Out of descriptors (err): said once; the process goes on untraced. */
static bool no_room(int err)
{
	static bool said;
	if (err != EMFILE && err != ENFILE)
		return false;
	if (!said) {
		said = true;
		fprintf(stderr, "djp: cannot take a process that dialled in: %s\n", strerror(err));
	}
	return true;
}

/* An agent dialling in on lfd from a process we may trace: its socket, its
 * pid in *pid; -1 when none is there, or refused (closed). */
static int accept_traceable(int lfd, pid_t *pid)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	const char *why;
	int fd;

	if (spare_fd < 0)
		spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
		if (no_room(errno))
			refuse_one(lfd);
		return -1;
	}
	errno = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || !may_trace(cred.pid, &why)) {
		no_room(errno); /* its /proc could not be read */
		close(fd);
		return -1;
	}
	*pid = cred.pid;
	return fd;
}

struct session *session_accept(int lfd)
{
	struct session *s;
	pid_t pid;
	int fd = accept_traceable(lfd, &pid);

	if (fd < 0)
		return NULL;
	if (!(s = calloc(1, sizeof(*s))) || session_init(s)) {
		if (s) {
			session_free(s);
			free(s);
		}
		close(fd);
		return NULL;
	}
	s->fd = fd;
	s->pid = pid;
	s->alive = true;
	return s;
}

/* ---- -c CMD ----------------------------------------------------------------- */

int session_listen(char *name, size_t namesz)
{
	struct sockaddr_un a;
	uint64_t rnd = 0;
	int fd, len;

	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
	snprintf(name, namesz, "djprobe-tool-%d-%016llx", (int)getpid(), (unsigned long long)rnd);
	len = (int)djp_abstract_addr(&a, name);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, (socklen_t)len) < 0 || listen(fd, 4) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void child_exec(struct session *s, const char *preload, const char *sockname, int errfd)
{
	const char *old = getenv("LD_PRELOAD");
	char *pre;
	wordexp_t we;
	int err;

	if (old && *old) {
		pre = malloc(strlen(preload) + strlen(old) + 2);
		if (pre)
			sprintf(pre, "%s:%s", preload, old);
	} else {
		pre = strdup(preload);
	}
	if (!pre || setenv("LD_PRELOAD", pre, 1) || setenv(DJP_AGENT_TOOL_ENV, sockname, 1))
		goto fail;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGUSR1, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	if (wordexp(s->cmd, &we, WRDE_NOCMD) == 0) {
		if (we.we_wordc == 0) {
			errno = ENOENT;
			goto fail;
		}
		char pid[16];
		/* this process is the command: its agent dials whatever it has */
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		if (setenv(DJP_AGENT_TOOL_PID_ENV, pid, 1))
			goto fail;
		execvp(we.we_wordv[0], we.we_wordv);
	} else {
		execl("/bin/sh", "sh", "-c", s->cmd, (char *)NULL);
	}
fail:
	err = errno;
	if (write(errfd, &err, sizeof(err)) < 0)
		_exit(127);
	_exit(127);
}

/* The command as messages name it: C-escaped, a path may hold anything. */
static const char *cmd_text(const struct session *s)
{
	static char buf[4096];
	return djp_escape_c(buf, sizeof(buf), s->cmd, false);
}

static void set_status_message(struct session *s)
{
	if (WIFEXITED(s->child_status))
		fprintf(stderr, "djp: %s: exited with status %d before its agent connected\n",
			cmd_text(s), WEXITSTATUS(s->child_status));
	else
		fprintf(stderr, "djp: %s: killed by signal %d before its agent connected\n", cmd_text(s),
			WTERMSIG(s->child_status));
}

int session_launch(struct session *s)
{
	const char *preload = session_preload_path();
	char sockname[96];
	int lfd, pfd[2], err = 0, fd = -1, waited = 0;
	ssize_t n;

	if (!preload) {
		fprintf(stderr, "djp: cannot find libdjprobe.so next to djp or in ../lib (set DJP_PRELOAD)\n");
		return -1;
	}
	lfd = session_listen(sockname, sizeof(sockname));
	if (lfd < 0) {
		fprintf(stderr, "djp: cannot listen for the command's agent: %s\n", strerror(errno));
		return -1;
	}
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		fprintf(stderr, "djp: pipe: %s\n", strerror(errno));
		close(lfd);
		return -1;
	}
	fflush(NULL);
	s->child = fork();
	if (s->child < 0) {
		fprintf(stderr, "djp: fork: %s\n", strerror(errno));
		close(lfd);
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (s->child == 0) {
		close(pfd[0]);
		child_exec(s, preload, sockname, pfd[1]);
	}
	close(pfd[1]);
	do
		n = read(pfd[0], &err, sizeof(err));
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	if (n == sizeof(err)) {
		fprintf(stderr, "djp: %s: cannot execute: %s\n", cmd_text(s), strerror(err));
		session_reap(s, -1);
		close(lfd);
		return -1;
	}

	/* Wait for the dial-in, watching the command. */
	while (fd < 0) {
		struct pollfd p = { lfd, POLLIN, 0 };
		if (poll(&p, 1, 100) > 0) {
			fd = accept_traceable(lfd, &s->pid);
			continue;
		}
		if (session_reap(s, 0)) {
			set_status_message(s);
			close(lfd);
			return -1;
		}
		waited += 100;
		if (session_stop_signal) {
			close(lfd);
			session_stop_child(s);
			fprintf(stderr, "djp: %s: interrupted before its agent connected\n", cmd_text(s));
			return -1;
		}
		if (waited == DIAL_TIMEOUT_MS)
			/* a shell command none of whose processes has probes of its
			 * own yet: it is left to run, never killed for that */
			fprintf(stderr,
				"djp: %s: no process of it has dialled in after %d s (none has djprobe markers or SDT "
				"probes of its own?); waiting for it\n",
				cmd_text(s), DIAL_TIMEOUT_MS / 1000);
	}
	s->launch_fd = lfd; /* more of the command's processes may dial in */
	s->fd = fd;
	s->alive = true;
	return 0;
}

bool session_reap(struct session *s, int timeout_ms)
{
	int waited = 0;

	if (s->child <= 0 || s->child_done)
		return s->child_done;
	for (;;) {
		pid_t r = waitpid(s->child, &s->child_status, WNOHANG);
		if (r == s->child || (r < 0 && errno == ECHILD)) {
			s->child_done = true;
			return true;
		}
		if (timeout_ms >= 0 && waited >= timeout_ms)
			return false;
		usleep(10000);
		waited += 10;
	}
}

void session_stop_child(struct session *s)
{
	if (s->child <= 0 || s->child_done)
		return;
	if (s->pid > 0 && s->pid != s->child)
		kill(s->pid, SIGTERM); /* the traced process, started by a shell */
	kill(s->child, SIGTERM);
	if (!session_reap(s, 2000)) {
		kill(s->child, SIGKILL);
		session_reap(s, -1);
	}
}

int session_start_command(struct session *s)
{
	char cmd[1024], msg[4 * sizeof(s->errmsg)];

	if (!s->cmd || !session_start(s))
		return 0;
	fprintf(stderr, "djp: %s: %s\n", djp_escape_c(cmd, sizeof(cmd), s->cmd, false),
		djp_escape_c(msg, sizeof(msg), s->errmsg, false));
	return s->errcode ? s->errcode : -EIO;
}

void session_kill_unstarted(struct session *s)
{
	if (!s->cmd || s->child <= 0)
		return;
	if (s->pid > 0 && s->pid != s->child)
		kill(s->pid, SIGKILL); /* started by a shell */
	kill(s->child, SIGKILL);
	session_reap(s, -1);
	s->alive = false;
}

/* pid's state letter and its task flags (/proc/PID/stat fields 3 and
 * 9); state 0 when it is gone. */
static char process_state(pid_t pid, unsigned *flags)
{
	char path[64], buf[512], *c;
	char state = 0;
	FILE *f;

	*flags = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return 0;
	if (fgets(buf, sizeof(buf), f) && (c = strrchr(buf, ')')))
		sscanf(c + 1, " %c %*d %*d %*d %*d %*d %u", &state, flags);
	fclose(f);
	return state;
}

bool session_process_exited(pid_t pid)
{
	unsigned flags;
	char state = process_state(pid, &flags);
	return !state || state == 'Z' || state == 'X';
}

#define PF_EXITING_FLAG 0x4u /* linux/sched.h's PF_EXITING */

bool session_process_exiting(pid_t pid)
{
	unsigned flags;
	char state = process_state(pid, &flags);
	return !state || state == 'Z' || state == 'X' || (flags & PF_EXITING_FLAG);
}
