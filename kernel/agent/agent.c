/*
 * The agent: the tool's hands inside the traced process.
 *
 * libdjprobe.so is both the in-process library and the agent.  Whether it is
 * preloaded (`djp trace -c` sets LD_PRELOAD) or linked, its constructor
 * starts one thread, the agent thread, which listens on a Unix stream socket
 * in the abstract namespace named "\0djprobe-agent-PID-TOKEN".  Abstract,
 * because it needs no file to create or clean up after a crash, and
 * disappears with the process.  TOKEN is random, so that no one can take
 * the name before the process starts; `djp trace -x PID` finds it through
 * the process's own descriptors, which only a ptrace-capable peer can read
 * (lib/agent_addr.c).  (Abstract names are per network namespace: tool and
 * target must share one.)
 *
 * An abstract socket has no permissions, so every peer is checked with
 * SO_PEERCRED when it is accepted, by ptrace's rule (lib/ptrace_perm.c):
 * the peer's uid and gid equal all of the process's, and the process is
 * dumpable; or the peer has CAP_SYS_PTRACE.  Anyone else gets one ERROR
 * frame and the socket is closed; nothing they send is read.
 *
 * All socket I/O happens on the agent thread, never in the application's
 * threads, so a slow or hostile tool can stall nothing but the agent.  The
 * thread polls the listening socket and every session socket, reads with
 * MSG_DONTWAIT, and sends with a one-second SO_SNDTIMEO: a tool that stops
 * reading loses its session rather than holding the agent.  The thread
 * blocks the asynchronous signals (SIGINT, SIGTERM, SIGCHLD, ...) so that the
 * application's handlers keep running where the application expects them;
 * the engine's own signals (SIGTRAP and its real-time signal) stay open, as the
 * engine requires of every thread.
 *
 * A session ends when its socket reports end of file or an error (the tool
 * exited, was killed, even by SIGKILL: the kernel closes its end), on a
 * malformed frame, or on BYE.  Ending disconnects every probe the session
 * connected, which restores every byte of text once no other session wants
 * the site, and then frees its ring region.  Poll wakes at once on the
 * hang-up, so this happens within milliseconds; should a disconnect fail
 * (a thread blocking SIGTRAP, say), the session is kept and retried every
 * 100 ms until it succeeds.
 *
 * Libraries loaded later.  The engine's dlopen interposer arms the markers
 * of a new library for the probes already connected; but a program whose
 * dlopen reference is versioned (dlopen@GLIBC_2.34) may call libc directly,
 * and in a process the agent was injected into (tools/djp/attach/inject.c) the
 * interposer is never called at all.  So while any session has probes, the
 * agent thread also looks, every 100 ms, at the loader's count of objects
 * loaded (dlpi_adds); when it has moved, it asks the engine to do what the
 * interposer does, which arms whatever the new objects have.  The tool
 * learns the new marker ids when their first events arrive.  In a process
 * where a thread blocks SIGTRAP, those batches ask a tool with probes to
 * stop the other threads, of the agent's own accord (agent_session.c).
 *
 * Threads gone.  On the same look it retires the ring slots of threads
 * that have exited since (lib/ring.c, "Threads coming and going"): a
 * thread's exit retires those of the threads that exited before it, so
 * this is for the last one, whose slot the consumer can then recycle.
 *
 * Another tool's breakpoints.  On the same look the engine finds jumps
 * whose first byte a uprobe (perf, bpftrace) has made an int3, and gives
 * their tails back to the original instructions before that uprobe goes
 * and the kernel writes the first byte back, and int3 probes whose int3 a
 * uprobe that went wrote the file's byte over (kernel/arm.c): counted as
 * arming errors, which the tool reports, and armed again on a later look
 * once the uprobe is gone.  And it asks whether the string copy's fault
 * handler is still installed: a program that replaced it by the raw
 * system call gets its handler back to itself and the copies go through
 * process_vm_readv from then on (kernel/safe_copy.c).
 *
 * The agent thread never ends, and takes itself off glibc's count of
 * threads as it starts (last_thread.c), so that a program whose main
 * calls pthread_exit still exits when its own last thread ends.
 *
 * fork: the child has no agent thread (threads do not survive fork), and
 * the engine disarms every site in it; the child closes its copies of the
 * agent's sockets so that a tool still sees end of file when the parent
 * exits.  Such a child starts an agent of its own when djp_agent_start is
 * called in it (the injector does, finding the library and no agent:
 * child_start).  exec: every descriptor is close-on-exec.
 *
 * Following forks.  A session may ask (FOLLOW) that children be traced:
 * then, in the child, before fork returns, a handler that runs after the
 * engine's own (it is registered at the first FOLLOW, which comes after the
 * engine's first connect, and fork's child handlers run in the order they
 * were registered) dials the tool's socket, starts a new agent thread with
 * that connection as its first session, and waits for the tool's START,
 * as a -c command's constructor does (agent_launch.c): the tool arms the
 * child's probes into a ring of its own, and the child's first instruction
 * after fork runs traced.  A tool that is gone costs the child a refused
 * connect; one that does not answer, the launch timeout.
 */
#include <errno.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "kernel/engine.h"
#include "kernel/agent/agent.h"
#include "lib/ring.h"
#include "kernel/interpose.h"

static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static int start_err;
/* the process whose agent thread this is: a child of fork has none until
 * it starts its own (djp_agent_start, follow_child) */
static pid_t agent_pid;
static int listen_fd = -1;
static int initial_fd = -1; /* the -c session, dialled by the constructor */
static struct djp_agent_session *sessions;
/* FOLLOW: the tool's socket, and the session that asked (owner) */
static char follow_name[108];
static const struct djp_agent_session *follow_owner;
static pthread_once_t follow_once = PTHREAD_ONCE_INIT;
static void start_thread(void);

bool djp_agent_peer_allowed(const struct ucred *cred, const char **why)
{
	struct djp_creds self, peer, proc;

	if (djp_creds_self(&self)) {
		*why = "cannot read the process's own credentials";
		return false;
	}
	/* The ids SO_PEERCRED took at connect time; capabilities from /proc,
	 * believed only while that process still has the same uid. */
	memset(&peer, 0, sizeof(peer));
	for (int i = 0; i < 4; i++) {
		peer.uid[i] = cred->uid;
		peer.gid[i] = cred->gid;
	}
	if (djp_creds_of(cred->pid, &proc) == 0 && proc.uid[1] == cred->uid && proc.uid[3] == cred->uid)
		peer.cap_ptrace = proc.cap_ptrace;
	return djp_may_trace(&peer, &self, why);
}

static int listen_socket(void)
{
	struct sockaddr_un a;
	socklen_t len;
	int fd, err = -EADDRINUSE;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* A random name (lib/agent_addr.c); taken by someone: draw again. */
	for (int i = 0; i < 16 && err == -EADDRINUSE; i++) {
		if ((err = djp_agent_addr_make(&a, &len)) < 0)
			break;
		err = bind(fd, (struct sockaddr *)&a, len) < 0 ? -errno : 0;
	}
	if (!err && listen(fd, 8) < 0)
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

static void session_setup_fd(int fd)
{
	struct timeval tv = { 1, 0 };
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static struct djp_agent_session *session_slot(void)
{
	for (int i = 0; i < DJP_AGENT_MAX_SESSIONS; i++)
		if (!sessions[i].used)
			return &sessions[i];
	return NULL;
}

/* A connection, or -errno of accept. */
static int accept_one(void)
{
	struct ucred cred = { 0, (uid_t)-1, (gid_t)-1 };
	socklen_t len = sizeof(cred);
	struct djp_agent_session *s;
	const char *why = "no credentials";
	char msg[256];
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

	if (fd < 0)
		return -errno;
	session_setup_fd(fd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || !djp_agent_peer_allowed(&cred, &why)) {
		snprintf(msg, sizeof(msg), "permission denied: uid %u may not trace process %d: %s", (unsigned)cred.uid,
			 (int)getpid(), why);
		djp_proto_send_error(fd, -EACCES, msg);
		close(fd);
		return 0;
	}
	if (!(s = session_slot())) {
		djp_proto_send_error(fd, -EBUSY, "too many tools attached to this process");
		close(fd);
		return 0;
	}
	djp_agent_session_open(s, fd, cred.pid, cred.uid, false);
	return 0;
}

static void end_session(struct djp_agent_session *s)
{
	djp_agent_unfollow(s);
	if (s->launch)
		djp_agent_launch_release();
	s->ending = true;
	djp_agent_session_end(s);
}

static int first_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds;
	return 1;
}

/* Objects loaded since the last look, behind the interposer's back? */
static void check_new_objects(void)
{
	static unsigned long long seen;
	unsigned long long adds = 0;

	dl_iterate_phdr(first_adds, &adds);
	if (adds != seen) {
		seen = adds;
		djp__engine_objects_changed(); /* what the dlopen interposer does */
	}
}

static bool any_probes(void)
{
	for (int i = 0; i < DJP_AGENT_MAX_SESSIONS; i++)
		if (sessions[i].used && sessions[i].nprobes)
			return true;
	return false;
}

/* How long the agent stops accepting after an accept failed for want of
 * a descriptor (RLIMIT_NOFILE) or memory. */
#define ACCEPT_PAUSE_MS 100

static void *agent_main(void *arg)
{
	bool listen_paused = false;
	struct pollfd pf[1 + DJP_AGENT_MAX_SESSIONS];
	int map[1 + DJP_AGENT_MAX_SESSIONS];
	sigset_t set;

	(void)arg;
	/* The program ends when its own threads have (last_thread.c) */
	djp_agent_leave_thread_count();
	/* What this thread calls (malloc, poll, ...) the program may have
	 * probed: its hits are not the program's */
	djp__thread_quiet();
	/* Asynchronous signals are the application's; the engine's own
	 * (SIGTRAP, the engine's real-time signal) and the synchronous ones
	 * stay open. */
	sigfillset(&set);
	sigdelset(&set, SIGTRAP);
	sigdelset(&set, SIGSEGV);
	sigdelset(&set, SIGBUS);
	sigdelset(&set, SIGILL);
	sigdelset(&set, SIGFPE);
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		sigdelset(&set, sig);
	pthread_sigmask(SIG_SETMASK, &set, NULL);

	for (;;) {
		int n = 0, timeout = -1;
		if (listen_fd >= 0 && !listen_paused) {
			pf[n] = (struct pollfd){ listen_fd, POLLIN, 0 };
			map[n++] = -1;
		} else if (listen_paused) {
			timeout = ACCEPT_PAUSE_MS;
			listen_paused = false;
		}
		for (int i = 0; i < DJP_AGENT_MAX_SESSIONS; i++) {
			if (!sessions[i].used)
				continue;
			if (sessions[i].ending) {
				timeout = 100;
				continue;
			}
			pf[n] = (struct pollfd){ sessions[i].fd, POLLIN, 0 };
			map[n++] = i;
		}
		if (any_probes()) {
			check_new_objects();
			djp__engine_check_foreign_traps();
			djp_safe_copy_check();
			djp_ring_reap_exited(); /* the last thread to exit's slot */
			timeout = 100;
		}
		if (poll(pf, (nfds_t)n, timeout) < 0 && errno != EINTR)
			usleep(100000);
		for (int k = 0; k < n; k++) {
			if (!pf[k].revents)
				continue;
			if (map[k] < 0) {
				int err = accept_one();
				/* no descriptor or memory for the connection: it
				 * stays queued and the socket readable, so poll
				 * would return at once, for ever */
				listen_paused = err == -EMFILE || err == -ENFILE || err == -ENOBUFS || err == -ENOMEM;
			} else if (djp_agent_session_input(&sessions[map[k]]) < 0)
				end_session(&sessions[map[k]]);
		}
		/* requests a freezer's ask read off a socket meanwhile */
		for (int k = 0; k < n; k++)
			if (map[k] >= 0 && !pf[k].revents && sessions[map[k]].used && !sessions[map[k]].ending &&
			    djp_agent_session_pending(&sessions[map[k]]) && djp_agent_session_input(&sessions[map[k]]) < 0)
				end_session(&sessions[map[k]]);
		for (int i = 0; i < DJP_AGENT_MAX_SESSIONS; i++)
			if (sessions[i].used && sessions[i].ending)
				end_session(&sessions[i]);
	}
	return NULL;
}

/* The child of a fork: no agent thread here; let go of the sockets. */
static void atfork_child(void)
{
	void *q = djp__quiet_begin();
	if (listen_fd >= 0)
		close(listen_fd);
	listen_fd = -1;
	for (int i = 0; sessions && i < DJP_AGENT_MAX_SESSIONS; i++) {
		if (sessions[i].used && sessions[i].fd >= 0) {
			close(sessions[i].fd);
			sessions[i].fd = -1;
		}
		sessions[i].serves = false; /* the parent's tools */
	}
	djp_agent_sessions_init(sessions);
	djp__quiet_end(q);
}

/* The agent's own socket, and the tool's connection `first` (-1: none),
 * dialled by a -c command or a child of fork, as the first session. */
static void open_sessions(int first)
{
	listen_fd = listen_socket();
	initial_fd = first;
	if (first >= 0) {
		session_setup_fd(first);
		djp_agent_session_open(&sessions[0], first, 0, getuid(), true);
	}
}

/* The child of a fork whose parent follows forks: a new agent, dialled in
 * to the tool, and the wait for its START (see the essay). */
static void follow_child_quiet(void)
{
	int fd;
	if (!follow_name[0] || !sessions)
		return;
	fd = djp_agent_dial_tool(follow_name);
	follow_name[0] = 0; /* the new session asks again if it wants to */
	follow_owner = NULL;
	if (fd < 0)
		return;
	/* the parent's sessions are not ours: forgotten, their rings left
	 * mapped (they are the parent's) */
	memset(sessions, 0, DJP_AGENT_MAX_SESSIONS * sizeof(*sessions));
	open_sessions(fd);
	djp_agent_launch_rearm();
	start_thread();
	if (start_err == 0)
		djp_agent_launch_wait();
}

/* In the child's one thread, the program's: the library's own work. */
static void follow_child(void)
{
	void *q = djp__quiet_begin();
	follow_child_quiet();
	djp__quiet_end(q);
}

static void register_follow(void)
{
	pthread_atfork(NULL, NULL, follow_child);
}

int djp_agent_follow(const struct djp_agent_session *s, const char *name)
{
	if (strlen(name) >= sizeof(follow_name))
		return -ENAMETOOLONG;
	pthread_once(&follow_once, register_follow);
	snprintf(follow_name, sizeof(follow_name), "%s", name);
	follow_owner = s;
	return 0;
}

void djp_agent_unfollow(const struct djp_agent_session *s)
{
	if (follow_owner == s) {
		follow_name[0] = 0;
		follow_owner = NULL;
	}
}

static void start(void)
{
	sessions = calloc(DJP_AGENT_MAX_SESSIONS, sizeof(*sessions));
	if (!sessions) {
		start_err = -ENOMEM;
		return;
	}
	djp_agent_sessions_init(sessions);
	open_sessions(initial_fd);
	if (listen_fd < 0 && initial_fd < 0) {
		start_err = listen_fd;
		return;
	}
	pthread_atfork(NULL, NULL, atfork_child);
	djp_sync_prepare(); /* while the process may still have one thread */
	start_thread();
}

static void start_thread(void)
{
	pthread_attr_t attr;
	pthread_t th;
	sigset_t all, old;
	int err;

	/* Start the thread with every signal blocked but the engine's; it
	 * opens what else it must. */
	sigfillset(&all);
	sigdelset(&all, SIGTRAP);
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		sigdelset(&all, sig);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = djp__pthread_create_real(&th, &attr, agent_main, NULL); /* unannounced */
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		start_err = -err;
		return;
	}
	__atomic_store_n(&agent_pid, getpid(), __ATOMIC_RELEASE);
	pthread_setname_np(th, "djp-agent");
}

/*
 * A child of fork whose parent's agent thread did not come along (no tool
 * followed the fork: a pre-fork server's worker forked after a tracing
 * session ended) starts its own at the first call here: the injector
 * makes that call when it finds the library loaded and no agent
 * (tools/djp/attach/inject.c).  One thread of the child claims the start;
 * another that calls meanwhile finds it claimed.
 */
static int child_start(void)
{
	pid_t me = getpid(), was = __atomic_load_n(&agent_pid, __ATOMIC_ACQUIRE);
	void *q;
	int err;

	if (was == me || !__atomic_compare_exchange_n(&agent_pid, &was, me, false, __ATOMIC_ACQ_REL,
						      __ATOMIC_ACQUIRE))
		return 0;
	q = djp__quiet_begin();
	/* the parent's sessions are not ours (atfork_child closed them) */
	memset(sessions, 0, DJP_AGENT_MAX_SESSIONS * sizeof(*sessions));
	djp_agent_sessions_init(sessions);
	open_sessions(-1);
	err = listen_fd < 0 ? listen_fd : 0;
	if (!err) {
		start_thread();
		if ((err = start_err)) {
			close(listen_fd);
			listen_fd = -1;
			start_err = 0; /* the parent's start stands; this one may be asked again */
		}
	}
	if (err)
		__atomic_store_n(&agent_pid, was, __ATOMIC_RELEASE);
	djp__quiet_end(q);
	return err;
}

DJP_API int djp_agent_start(void)
{
	int err;
	pthread_once(&start_once, start);
	err = start_err;
	if (!err && __atomic_load_n(&agent_pid, __ATOMIC_ACQUIRE) != getpid())
		err = child_start();
	if (err)
		errno = -err;
	return err;
}

/* On the program's thread that loaded the library (its main thread, or
 * the one an injection borrowed): the library's own work, which goes on
 * after the tool's first configuration has armed its probes. */
__attribute__((constructor)) static void agent_constructor(void)
{
	const char *env = getenv(DJP_AGENT_ENV);
	void *q;

	if (env && !strcmp(env, "0"))
		return;
	q = djp__quiet_begin();
	initial_fd = djp_agent_launch_dial();
	if (djp_agent_start() == 0 && initial_fd >= 0)
		djp_agent_launch_wait();
	djp__quiet_end(q);
}
