/*
 * The other processes of a trace: children of fork and the program a -c
 * wrapper execs (session.h, struct session_kids).
 *
 * The tool listens on an abstract socket of its own and names it to each
 * agent (FOLLOW); an agent in a child of fork dials it before fork returns
 * there and waits for START (kernel/agent/agent.c).  A -c command's socket
 * (launch_fd) keeps taking dial-ins too: a wrapper without probes leaves it
 * to the program it execs.  Each process that dials becomes a session of
 * its own, with the main session's ring options; the caller configures it
 * (it knows the patterns) and keeps it, or gives it up, which BYE's it and
 * so releases its fork.  `djp trace` and the script's live source both
 * drain them beside the main session.
 *
 * exec: a -c trace's preload travels in the environment, so the new program
 * dials in as a wrapper's does.  An -x trace's does not: when the agent of
 * one of its processes goes away and the process is still there running
 * another program (its AT_RANDOM moved), the tool attaches to it again,
 * injecting the agent as it did the first time, and the caller configures
 * the new session like a child of fork.  The events between the exec and
 * the injection (tens of ms) are not seen.
 *
 * -x PID's descendants: a server's workers forked before the attach (a
 * postmaster's checkpointer, walwriter, autovacuum launcher) never fork
 * again in front of the tool.  When the main session is set to follow
 * forks, the tool reads every process's parent (/proc/N/stat) and takes
 * PID's children, their children, and so on, as they are now (zombies
 * left out); each is then attached as -x attaches (its agent reached, or
 * injected, by the rules of -x), one per session_kids_accept as if it had
 * dialled in, so that the rings already traced are drained between two
 * injections.  One that cannot be attached is said in one line and
 * skipped; one whose parent is no longer in the tree (it exited, its pid
 * reused) is skipped quietly.  A process that forks after FOLLOW both
 * dials in and may be among those found: whichever session comes second
 * for a pid that has one alive is given up (its BYE releases a waiting
 * fork).  --no-children (session_no_children) attaches PID alone.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "lib/mapped_file.h"
#include "tools/djp/session/session.h"
#include "tools/djp/session/session_all.h"

bool session_no_children;

/* pid's parent and whether it lives (not a zombie): 0, or -1 when gone. */
static int parent_of(pid_t pid, pid_t *ppid)
{
	char path[64], buf[1024], *c;
	FILE *f;
	int ret = -1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	/* "PID (COMM) STATE PPID ...": COMM may hold anything, ')' too */
	if (fgets(buf, sizeof(buf), f) && (c = strrchr(buf, ')')) && c[1] == ' ' && c[2] != 'Z' && c[2] != 'X') {
		int p;
		if (sscanf(c + 3, " %d", &p) == 1) {
			*ppid = (pid_t)p;
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

static bool among(const pid_t *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return true;
	return false;
}

size_t session_our_line(pid_t *line, size_t n)
{
	size_t k = 0;
	for (pid_t p = getpid(), pp; p > 1 && k < n; p = pp) {
		line[k++] = p;
		if (parent_of(p, &pp))
			break;
	}
	return k;
}

/* root's descendants now, children before grandchildren, into k; none
 * of the tool's own line (a shell given as -x PID runs the tool, perhaps
 * through sudo: the tool is not traced, nor what waits for it). */
static void find_descendants(struct session_kids *k, pid_t root)
{
	pid_t *pids = NULL, *parents = NULL, line[64];
	size_t n = 0, cap = 0, nline = session_our_line(line, 64);
	struct dirent *de;
	DIR *d = opendir("/proc");
	bool more = true;

	while (d && (de = readdir(d))) {
		pid_t pid = (pid_t)atoi(de->d_name), pp;
		if (pid <= 0 || pid == root || among(line, nline, pid) || parent_of(pid, &pp))
			continue;
		if (n == cap) {
			size_t c = cap ? 2 * cap : 256;
			pid_t *a = realloc(pids, c * sizeof(*a)), *b;
			if (a)
				pids = a;
			if (!a || !(b = realloc(parents, c * sizeof(*b))))
				break;
			parents = b;
			cap = c;
		}
		pids[n] = pid;
		parents[n++] = pp;
	}
	if (d)
		closedir(d);
	/* a pass per generation */
	while (more) {
		more = false;
		for (size_t i = 0; i < n; i++) {
			pid_t *v;
			if (among(k->found, k->nfound, pids[i]) ||
			    (parents[i] != root && !among(k->found, k->nfound, parents[i])))
				continue;
			if (!(v = realloc(k->found, (k->nfound + 1) * sizeof(*v))))
				break;
			k->found = v;
			k->found[k->nfound++] = pids[i];
			more = true;
		}
	}
	free(pids);
	free(parents);
}

int session_kids_listen(struct session_kids *k, struct session *main)
{
	int err = 0;
	k->follow_fd = session_listen(k->follow_name, sizeof(k->follow_name));
	if (k->follow_fd >= 0 && (err = session_follow(main, k->follow_name))) {
		close(k->follow_fd);
		k->follow_fd = -1;
	}
	/* after FOLLOW: a fork from now on dials in */
	if (!err && !main->cmd && !session_no_children)
		find_descendants(k, main->pid);
	k->root = main->pid;
	return err;
}

void session_kids_listen_all(struct session_kids *k, struct session_all *all)
{
	struct rlimit rl;

	k->follow_fd = session_listen(k->follow_name, sizeof(k->follow_name));
	k->all = all;
	/* a session a process: a hundred of them need more descriptors
	 * than a shell's soft limit may give */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/* What a process of the trace takes from the main session's options. */
static void inherit(struct session *c, const struct session *main)
{
	c->snapshot = main->snapshot;
	c->buffer_size = main->buffer_size;
	c->str_bound = main->str_bound;
	c->kernel_trap = main->kernel_trap;
	c->agg_plans = main->agg_plans;
	c->nagg_plans = main->nagg_plans;
	c->agg_capacity = main->agg_capacity;
	c->fmt_patterns = main->fmt_patterns;
	c->fmt_formats = main->fmt_formats;
	c->nfmt = main->nfmt;
}

/* Has pid a session that lives (found: one of -x PID's descendants)? */
static bool traced(const struct session_kids *k, const struct session *main, pid_t pid, bool found)
{
	if (!found && main->alive && main->pid == pid)
		return true;
	for (size_t i = 0; i < k->n; i++)
		if (k->v[i]->alive && k->v[i]->pid == pid && (!found || k->v[i]->attach_pid == pid))
			return true;
	return false;
}

/* pid attached as -x attaches it, with main's options: its session; NULL
 * after one line on stderr, or (*nomem) for want of memory. */
static struct session *attach_one(pid_t pid, const struct session *main, bool *nomem)
{
	struct session *c = calloc(1, sizeof(*c));

	*nomem = !c || session_init(c);
	if (*nomem) {
		free(c);
		return NULL;
	}
	c->attach_pid = pid;
	inherit(c, main);
	if (session_attach(c) == 0)
		return c;
	session_free(c); /* said why, in one line */
	free(c);
	return NULL;
}

/* The next of -x PID's descendants, attached; NULL when none is left. */
static struct session *next_descendant(struct session_kids *k, const struct session *main)
{
	bool nomem;

	while (k->nextfound < k->nfound) {
		pid_t pid = k->found[k->nextfound++], pp;
		struct session *c;
		/* still in the tree: its parent is PID or one found before it */
		if (traced(k, main, pid, false) || parent_of(pid, &pp) ||
		    (pp != k->root && !among(k->found, k->nextfound - 1, pp)))
			continue;
		if ((c = attach_one(pid, main, &nomem)) || nomem)
			return c;
	}
	return NULL;
}

struct all_ctx {
	const struct session_kids *k;
	const struct session *main;
};

static bool all_traced(void *ctx, pid_t pid)
{
	const struct all_ctx *a = ctx;
	return traced(a->k, a->main, pid, false);
}

/* -a: the next process of the program, attached; NULL when none is due. */
static struct session *next_of_all(struct session_kids *k, const struct session *main)
{
	struct all_ctx ctx = { k, main };
	struct session *c;
	bool nomem;
	pid_t pid;

	while ((pid = session_all_next(k->all, all_traced, &ctx))) {
		if ((c = attach_one(pid, main, &nomem)) || nomem)
			return c;
		session_all_failed(k->all, pid); /* not tried again: said once */
	}
	return NULL;
}

struct session *session_kids_accept(struct session_kids *k, const struct session *main)
{
	struct session *c;
	/* a child of fork that is one of the descendants attached already */
	while (k->follow_fd >= 0 && (c = session_accept(k->follow_fd))) {
		if (!traced(k, main, c->pid, true)) {
			inherit(c, main);
			return c;
		}
		session_discard(c);
	}
	if ((main->launch_fd >= 0 && (c = session_accept(main->launch_fd))) || (c = next_descendant(k, main)) ||
	    (k->all && (c = next_of_all(k, main))))
		inherit(c, main);
	return c;
}

void session_kids_accept_for(struct session_kids *k, const struct session *main, uint64_t budget_ns,
			     void (*take)(void *ctx, struct session *c), void *ctx)
{
	struct timespec ts;
	uint64_t now, until;
	struct session *c;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	until = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + budget_ns;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		if (now >= until || !(c = session_kids_accept(k, main)))
			return;
		take(ctx, c);
	}
}

void session_kids_end(struct session_kids *k, struct session *main)
{
	session_end(main);
	for (size_t i = 0; i < k->n; i++)
		session_end(k->v[i]);
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

void session_kids_remove(struct session_kids *k, size_t i)
{
	memmove(&k->v[i], &k->v[i + 1], (k->n - i - 1) * sizeof(*k->v));
	k->n--;
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
	free(k->pfd);
	k->pfd = NULL;
	k->npfd = 0;
	if (k->follow_fd >= 0)
		close(k->follow_fd);
	free(k->found);
	session_all_free(k->all);
	k->all = NULL;
	k->found = NULL;
	k->nfound = k->nextfound = 0;
	k->v = NULL;
	k->n = 0;
	k->follow_fd = -1;
}

uint64_t session_exec_id(pid_t pid)
{
	char path[64];
	Elf64_auxv_t a[64];
	ssize_t n;
	int fd;
	uint64_t id = 0;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, a, sizeof(a));
	close(fd);
	for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof(a[0]) && a[i].a_type != AT_NULL; i++)
		if (a[i].a_type == AT_RANDOM)
			id = a[i].a_un.a_val;
	return id;
}

/* Whether pid's loader has mapped libc yet (a new program's first
 * milliseconds are the loader's): polled up to two seconds. */
static bool libc_mapped(pid_t pid)
{
	char path[64], line[4200];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(path, "re");
		bool found = false;
		struct djp_mapping m;
		if (!f)
			return false;
		while (!found && fgets(line, sizeof(line), f))
			found = djp_mapping_parse(line, &m) && m.exec && djp_path_is_libc(m.path);
		fclose(f);
		if (found)
			return true;
		nanosleep(&(struct timespec){ 0, 2000000 }, NULL);
	}
	return false;
}

struct session *session_kids_exec(const struct session *main, struct session *gone)
{
	struct session *c;
	uint64_t now;

	if (gone->exec_followed || main->cmd || gone->alive || gone->pid <= 0)
		return NULL;
	gone->exec_followed = true;
	/* exiting, or a zombie: no auxv, or the same program */
	now = session_exec_id(gone->pid);
	if (!now || now == gone->exec_id || kill(gone->pid, 0))
		return NULL;
	if (!(c = calloc(1, sizeof(*c))) || session_init(c)) {
		free(c);
		return NULL;
	}
	c->attach_pid = gone->pid;
	inherit(c, main);
	/* the old program's uprobes first: the kernel puts them in the new
	 * text when it maps the same file, and the engine leaves alone a site
	 * that does not hold its nop when it first reads the object */
	session_uprobes_detach(gone);
	/* the injector takes no thread that is in the loader; a static
	 * program never maps libc, and attaching says so */
	(void)libc_mapped(gone->pid);
	if (session_attach(c)) {
		/* said why on stderr */
		session_free(c);
		free(c);
		return NULL;
	}
	return c;
}

/* One system call a round, whatever the number of processes: a child of
 * fork waits in fork for its START, so a dial-in wakes the tool at once,
 * and a child's exit or exec hangs its socket up. */
bool session_kids_wait(struct session_kids *k, struct session *main, int timeout_ms,
		       void (*gone)(void *ctx, struct session *child), void *ctx)
{
	size_t n = 0, need = k->n + 4;
	int all_fd = k->all ? session_all_fd(k->all) : -1, due = k->all ? session_all_due_ms(k->all) : -1;
	struct pollfd *p;
	bool dialled = false;

	if (need > k->npfd) {
		void *v = realloc(k->pfd, need * 2 * sizeof(*k->pfd));
		if (!v) {
			poll(NULL, 0, timeout_ms);
			return true; /* look for dial-ins anyway */
		}
		k->pfd = v;
		k->npfd = need * 2;
	}
	p = k->pfd;
	if (main->alive)
		p[n++] = (struct pollfd){ main->fd, POLLIN, 0 };
	if (k->follow_fd >= 0)
		p[n++] = (struct pollfd){ k->follow_fd, POLLIN, 0 };
	if (main->launch_fd >= 0)
		p[n++] = (struct pollfd){ main->launch_fd, POLLIN, 0 };
	for (size_t i = 0; i < k->n; i++)
		if (k->v[i]->alive)
			p[n++] = (struct pollfd){ k->v[i]->fd, POLLIN, 0 };
	if (all_fd >= 0)
		p[n++] = (struct pollfd){ all_fd, POLLIN, 0 };
	if (k->nextfound < k->nfound) /* descendants left to attach */
		timeout_ms = 0;
	if (due >= 0 && due < timeout_ms) /* -a: a process due a look */
		timeout_ms = due;
	if (poll(p, n, timeout_ms) < 0)
		return false;
	dialled = k->nextfound < k->nfound;
	for (size_t i = 0; i < n; i++) {
		if (p[i].revents && (p[i].fd == k->follow_fd || p[i].fd == main->launch_fd))
			dialled = true;
		if (p[i].revents && p[i].fd == all_fd)
			session_all_read(k->all);
	}
	if (k->all && session_all_due_ms(k->all) == 0)
		dialled = true;
	/* k->n may grow in gone() (an exec followed): only the ones polled */
	for (size_t i = 0, j = 0, polled = k->n; i < polled; i++) {
		struct session *c = k->v[i];
		if (!c->alive)
			continue;
		while (j < n && p[j].fd != c->fd)
			j++;
		if (j < n && p[j].revents && session_serve(c)) {
			c->alive = false;
			gone(ctx, c);
		}
	}
	return dialled;
}
