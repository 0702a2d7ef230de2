/*
 * Every process of a program (djp trace -a): which processes to attach.
 *
 * A process is one of the program's when one of its mappings is one of
 * the PATHs given (the same device and inode, or the same path), or, with
 * no PATH, when it maps an object with a marker or SDT probe one of the
 * marker patterns matches (read from the object's file, once per file:
 * the answers are kept by device and inode).  The tool itself and the
 * processes it runs under (a shell, sudo) are never among them.
 *
 * The kernel tells of new processes: the process-events connector
 * (NETLINK_CONNECTOR, multicast group CN_IDX_PROC) sends a notice at each
 * exec and fork, as root only (binding the group needs CAP_NET_ADMIN).  It
 * is listened to before /proc is read once at the start, so that a process
 * is either in the listing or announced.  A notice queues the process for
 * a look, never /proc as a whole:
 *
 *   exec  looked at at once, and every 2 ms while its loader has not yet
 *         mapped libc (the injector needs it; a program with no
 *         interpreter is static and looked at as it is), for two seconds
 *         at most;
 *   fork  (a new process, not a thread) looked at after 100 ms: a child of
 *         a traced process dials in by itself before fork returns in it,
 *         so by then one that has no session was forked before its parent
 *         was followed (or from a process not traced), and is attached as
 *         any other.
 *
 * A notice of a process that has a session is dropped: when it exec'd,
 * its agent goes with its old program, and the trace asks for a look
 * (session_all_look) once it sees the session end.  When the kernel had
 * more notices than the socket's buffer held (ENOBUFS), /proc is read
 * again, once, and every process queued: a burst costs a listing, never
 * the session.
 *
 * Without the connector (not root), the processes running at the start
 * are all that is found; the children they fork dial in, and a traced one
 * that execs is looked at again; the trace says so once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "lib/mapped_file.h"
#include "lib/marker_match.h"
#include "lib/markers.h"
#include "tools/djp/session/session.h"
#include "tools/djp/session/session_all.h"

#define EXEC_WAIT_NS 2000000000ull /* for an exec'd program's loader to map libc */
#define EXEC_RETRY_NS 2000000ull
#define FORK_DELAY_NS 100000000ull /* for a child of a traced process to dial in */
#define RCVBUF (4 << 20)
#define CAP_NET_ADMIN_BIT 12 /* linux/capability.h's CAP_NET_ADMIN */

struct all_file {
	dev_t dev;
	ino_t ino;
	char *path; /* realpath */
};

struct all_obj { /* an object looked at for markers (no PATH) */
	dev_t dev;
	ino_t ino;
	bool match;
};

struct all_entry {
	pid_t pid;
	uint64_t since, due; /* queued; due a look (CLOCK_MONOTONIC ns) */
};

struct all_failed {
	pid_t pid;
	uint64_t exec_id;
};

struct session_all {
	struct all_file *files;
	unsigned nfiles;
	const char *const *patterns;
	unsigned npatterns;
	struct all_obj *objs;
	size_t nobjs;
	int nl_fd;
	char deaf[160]; /* why the connector cannot be heard, "" when it is */
	struct all_entry *q;
	size_t nq, capq;
	struct all_failed *failed;
	size_t nfailed;
	pid_t line[64]; /* the tool and what runs it */
	size_t nline;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void queue(struct session_all *a, pid_t pid, uint64_t delay)
{
	uint64_t now = now_ns();
	for (size_t i = 0; i < a->nq; i++)
		if (a->q[i].pid == pid) {
			if (a->q[i].due > now + delay) /* an exec comes before the look its fork asked */
				a->q[i].due = now + delay;
			a->q[i].since = now;
			return;
		}
	if (a->nq == a->capq) {
		size_t c = a->capq ? 2 * a->capq : 256;
		struct all_entry *v = realloc(a->q, c * sizeof(*v));
		if (!v)
			return; /* no memory: not looked at */
		a->q = v;
		a->capq = c;
	}
	a->q[a->nq++] = (struct all_entry){ pid, now, now + delay };
}

static void scan(struct session_all *a)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		pid_t pid = (pid_t)atoi(de->d_name);
		if (pid > 0)
			queue(a, pid, 0);
	}
	if (d)
		closedir(d);
}

/* The notices in one datagram queued; the error of the kernel's answer to
 * our LISTEN (its ack is seq + 1) in *ack when it is there. */
static void notices(struct session_all *a, struct nlmsghdr *nh, size_t n, uint32_t seq, int *ack)
{
	for (; NLMSG_OK(nh, n); nh = NLMSG_NEXT(nh, n)) {
		struct cn_msg *cn = NLMSG_DATA(nh);
		struct proc_event *ev = (struct proc_event *)cn->data;
		if (nh->nlmsg_type == NLMSG_ERROR || nh->nlmsg_type == NLMSG_NOOP || cn->id.idx != CN_IDX_PROC ||
		    cn->len < offsetof(struct proc_event, event_data) + sizeof(ev->event_data.ack))
			continue;
		if (ev->what == PROC_EVENT_NONE && ack && cn->ack == seq + 1) /* its seq is the kernel's */
			*ack = (int)ev->event_data.ack.err;
		else if (ev->what == PROC_EVENT_EXEC)
			queue(a, ev->event_data.exec.process_tgid, 0);
		else if (ev->what == PROC_EVENT_FORK && ev->event_data.fork.child_pid == ev->event_data.fork.child_tgid)
			queue(a, ev->event_data.fork.child_tgid, FORK_DELAY_NS);
	}
}

/* Read what the socket holds; false when it failed otherwise than by
 * having nothing more. */
static bool read_notices(struct session_all *a, uint32_t seq, int *ack)
{
	char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));
	ssize_t n;

	for (;;) {
		n = recv(a->nl_fd, buf, sizeof(buf), 0);
		if (n > 0) {
			notices(a, (struct nlmsghdr *)buf, (size_t)n, seq, ack);
		} else if (n < 0 && errno == ENOBUFS) {
			scan(a); /* notices lost: a listing instead */
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else {
			return n < 0 && errno == EAGAIN;
		}
	}
}

/* Has the tool CAP_NET_ADMIN (its effective set, /proc/self/status)? */
static bool net_admin(void)
{
	char line[256];
	unsigned long long caps = 0;
	FILE *f = fopen("/proc/self/status", "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &caps) == 1)
			break;
	if (f)
		fclose(f);
	return caps & (1ull << CAP_NET_ADMIN_BIT);
}

/* Listen to the kernel's process events: the socket, or -1 with why in
 * a->deaf. */
static int connector(struct session_all *a)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
	struct {
		struct nlmsghdr nh;
		struct cn_msg cn;
		enum proc_cn_mcast_op op;
	} __attribute__((packed)) req;
	int fd = socket(PF_NETLINK, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_CONNECTOR), sz = RCVBUF;
	uint32_t seq = (uint32_t)getpid() ^ (uint32_t)now_ns();
	uint64_t until = now_ns() + 2000000000ull;
	int ack = -1;

	/* without it the kernel refuses, and says so only while someone
	 * else listens */
	if (!net_admin()) {
		snprintf(a->deaf, sizeof(a->deaf), "they need CAP_NET_ADMIN");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(a->deaf, sizeof(a->deaf), "%s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* room for a burst: FORCE past rmem_max where allowed */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = NLMSG_DONE;
	req.cn.id.idx = CN_IDX_PROC;
	req.cn.id.val = CN_VAL_PROC;
	req.cn.seq = seq;
	req.cn.ack = seq;
	req.cn.len = sizeof(req.op);
	req.op = PROC_CN_MCAST_LISTEN;
	if (send(fd, &req, sizeof(req), 0) != (ssize_t)sizeof(req)) {
		snprintf(a->deaf, sizeof(a->deaf), "%s", strerror(errno));
		close(fd);
		return -1;
	}
	/* The kernel answers a LISTEN on the group itself (an ack, seq + 1):
	 * EPERM without CAP_NET_ADMIN, though the bind may have worked. */
	a->nl_fd = fd;
	while (ack < 0 && now_ns() < until && poll(&(struct pollfd){ fd, POLLIN, 0 }, 1, 100) >= 0)
		if (!read_notices(a, seq, &ack))
			break;
	a->nl_fd = -1;
	if (ack) {
		snprintf(a->deaf, sizeof(a->deaf), "%s", ack > 0 ? strerror(ack) : "the kernel did not answer");
		close(fd);
		return -1;
	}
	return fd;
}

struct session_all *session_all_open(const char *const *paths, unsigned npaths, const char *const *patterns,
				     unsigned npatterns, char *err, size_t errsz)
{
	struct session_all *a = calloc(1, sizeof(*a));

	if (!a || (npaths && !(a->files = calloc(npaths, sizeof(*a->files))))) {
		free(a);
		snprintf(err, errsz, "out of memory");
		return NULL;
	}
	for (unsigned i = 0; i < npaths; i++) {
		struct stat st;
		char *real = realpath(paths[i], NULL);
		if (!real || stat(real, &st)) {
			snprintf(err, errsz, "%s: %s", paths[i], strerror(errno));
			free(real);
			session_all_free(a);
			return NULL;
		}
		a->files[a->nfiles++] = (struct all_file){ st.st_dev, st.st_ino, real };
	}
	a->patterns = patterns;
	a->npatterns = npatterns;
	a->nline = session_our_line(a->line, sizeof(a->line) / sizeof(a->line[0]));
	a->nl_fd = connector(a); /* before the listing: nothing falls between */
	scan(a);
	return a;
}

const char *session_all_deaf(const struct session_all *a)
{
	return a->nl_fd < 0 ? a->deaf : NULL;
}

int session_all_fd(const struct session_all *a)
{
	return a->nl_fd;
}

void session_all_read(struct session_all *a)
{
	if (a->nl_fd >= 0)
		read_notices(a, 0, NULL);
}

void session_all_look(struct session_all *a, pid_t pid)
{
	queue(a, pid, 0);
}

int session_all_due_ms(const struct session_all *a)
{
	uint64_t now = now_ns(), first = UINT64_MAX;
	for (size_t i = 0; i < a->nq; i++)
		if (a->q[i].due < first)
			first = a->q[i].due;
	if (first == UINT64_MAX)
		return -1;
	return first <= now ? 0 : (int)((first - now + 999999) / 1000000);
}

/* Does the object m maps have a marker a pattern matches?  Read once per
 * file (device, inode). */
static bool obj_matches(struct session_all *a, pid_t pid, const struct djp_mapping *m)
{
	dev_t dev = makedev(m->dev_major, m->dev_minor);
	struct djp_marker_list *l;
	char path[4200], why[256];
	struct all_obj *v;
	bool match = false;

	for (size_t i = 0; i < a->nobjs; i++)
		if (a->objs[i].dev == dev && a->objs[i].ino == (ino_t)m->inode)
			return a->objs[i].match;
	if (djp_mapping_file(pid, m, path, sizeof(path)))
		return false; /* gone from the disk: not kept */
	if (djp_markers_read_file(path, DJP_READ_NO_DWARF, &l, why, sizeof(why)) == 0) {
		for (size_t i = 0; i < l->count && !match; i++)
			for (unsigned p = 0; p < a->npatterns && !match; p++)
				match = djp_marker_match(a->patterns[p], l->v[i].provider, l->v[i].name);
		djp_marker_list_free(l);
	}
	if ((v = realloc(a->objs, (a->nobjs + 1) * sizeof(*v)))) {
		a->objs = v;
		a->objs[a->nobjs++] = (struct all_obj){ dev, (ino_t)m->inode, match };
	}
	return match;
}

static bool is_interp(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	return !strncmp(base, "ld-linux", 8) || !strncmp(base, "ld64.so", 7);
}

enum { LOOK_NOT, LOOK_WAIT, LOOK_YES };

/* Is pid one of the program's?  WAIT while its loader has not mapped libc
 * yet (the PATH may be a library it maps, the injector needs libc). */
static int look(struct session_all *a, pid_t pid)
{
	char path[64], line[4096 + 256];
	bool interp = false, libc = false, match = false;
	struct djp_mapping m;
	FILE *f;

	for (size_t i = 0; i < a->nline; i++)
		if (a->line[i] == pid)
			return LOOK_NOT;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	/* another user's process cannot be read: not one the user may trace */
	if (session_process_exiting(pid) || !(f = fopen(path, "re")))
		return LOOK_NOT;
	while (fgets(line, sizeof(line), f)) {
		if (!djp_mapping_parse(line, &m) || m.path[0] != '/')
			continue;
		interp |= is_interp(m.path);
		libc |= m.exec && djp_path_is_libc(m.path);
		if (match)
			continue;
		for (unsigned i = 0; i < a->nfiles && !match; i++)
			match = (makedev(m.dev_major, m.dev_minor) == a->files[i].dev &&
				 (ino_t)m.inode == a->files[i].ino) ||
				!strcmp(m.path, a->files[i].path);
		if (!a->nfiles && m.exec && !m.deleted)
			match = obj_matches(a, pid, &m);
	}
	fclose(f);
	if (interp && !libc)
		return LOOK_WAIT;
	return match ? LOOK_YES : LOOK_NOT;
}

static bool has_failed(const struct session_all *a, pid_t pid)
{
	uint64_t id = session_exec_id(pid);
	for (size_t i = 0; i < a->nfailed; i++)
		if (a->failed[i].pid == pid && a->failed[i].exec_id == id)
			return true;
	return false;
}

pid_t session_all_next(struct session_all *a, session_all_traced_fn traced, void *ctx)
{
	uint64_t now = now_ns();

	for (size_t i = 0; i < a->nq;) {
		struct all_entry e = a->q[i];
		int r;
		if (e.due > now) {
			i++;
			continue;
		}
		r = traced(ctx, e.pid) || has_failed(a, e.pid) ? LOOK_NOT : look(a, e.pid);
		if (r == LOOK_WAIT && now - e.since < EXEC_WAIT_NS) {
			a->q[i++].due = now + EXEC_RETRY_NS;
			continue;
		}
		a->q[i] = a->q[--a->nq]; /* taken out, whatever the answer */
		if (r == LOOK_YES)
			return e.pid;
	}
	return 0;
}

void session_all_failed(struct session_all *a, pid_t pid)
{
	struct all_failed *v = realloc(a->failed, (a->nfailed + 1) * sizeof(*v));
	if (!v)
		return;
	a->failed = v;
	a->failed[a->nfailed++] = (struct all_failed){ pid, session_exec_id(pid) };
}

void session_all_free(struct session_all *a)
{
	if (!a)
		return;
	for (unsigned i = 0; i < a->nfiles; i++)
		free(a->files[i].path);
	if (a->nl_fd >= 0)
		close(a->nl_fd);
	free(a->files);
	free(a->objs);
	free(a->q);
	free(a->failed);
	free(a);
}
