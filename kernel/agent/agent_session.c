/*
 * One tool's session with the agent: requests in, replies out, and the
 * guarantee that whatever the session armed is disarmed when it ends.
 *
 * Input is read without blocking into a buffer big enough for the largest
 * legal frame; each complete frame is checked (lib/proto.c: length, type,
 * flags) and handled, and its payload must parse exactly.  Anything else
 * ends the session.  Replies are sent synchronously from the agent thread;
 * the socket's one-second send timeout bounds how long a tool that does not
 * read can hold it.
 *
 * A session owns at most one ring region (RING) and a list of engine probe
 * ids, one per CONNECT, each the recorder connected to one pattern with the
 * session's region as its data.  The marker table (LIST) is gathered under
 * the engine lock into memory first and sent after the lock is dropped, so a
 * slow socket never holds up a dlopen or a connect in the application.
 *
 * Markers of objects loaded later reach the tool through the marker log
 * (MARKER_LOG, lib/marker_log.c), which the engine has the agent write
 * before it arms any of their sites.
 *
 * Ending: every probe is disconnected (djp_disconnect returns only after a
 * grace period: the recorder is running nowhere and will not run again for
 * it), and only then is the region unmapped.  A disconnect that fails is
 * kept and retried by the agent thread; the region stays until it succeeds.
 */
#include <errno.h>
#include <link.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kernel/agent/agent.h"
#include "kernel/agent/loads.h"
#include "kernel/engine.h"
#include "lib/clock.h"
#include "lib/marker_log.h"
#include "lib/marker_match.h"
#include "lib/load_wire.h"
#include "lib/ring.h"

/* ---- the socket, shared ---------------------------------------------------- */

/*
 * The agent thread reads the session's requests and answers them; a thread
 * whose batch the process's freezer serves (below) asks the same tool on
 * the same socket.  tool_io keeps their frames apart: each frame is sent
 * whole under it, every read appends to s->in under it, and fd, serves
 * and owed change under it.  It is never held while anything else is
 * taken, nor for longer than one send (bounded by the socket's send
 * timeout) or one ask (FREEZE_REPLY_MS).
 */
static pthread_mutex_t tool_io = PTHREAD_MUTEX_INITIALIZER;

static int send_frame(struct djp_agent_session *s, unsigned type, struct djp_pbuf *b, int pass_fd)
{
	int err;
	pthread_mutex_lock(&tool_io);
	err = s->fd >= 0 ? djp_proto_send(s->fd, type, b, pass_fd) : -EPIPE;
	pthread_mutex_unlock(&tool_io);
	return err;
}

static int send_error(struct djp_agent_session *s, int code, const char *msg)
{
	int err;
	pthread_mutex_lock(&tool_io);
	err = s->fd >= 0 ? djp_proto_send_error(s->fd, code, msg) : -EPIPE;
	pthread_mutex_unlock(&tool_io);
	return err;
}

void djp_agent_session_open(struct djp_agent_session *s, int fd, pid_t pid, uid_t uid, bool launch)
{
	s->fd = fd;
	s->peer_pid = pid;
	s->peer_uid = uid;
	s->used = true;
	s->hello = false;
	s->launch = launch;
	s->ending = false;
	s->rec = NULL;
	s->agg = NULL;
	s->nprobes = 0;
	s->inlen = 0;
	s->serves = false;
	s->owed = 0;
	s->arm_errors_at_open = djp__engine_background_error(NULL);
}

static int reply_ok(struct djp_agent_session *s, uint32_t v)
{
	struct djp_pbuf b;
	djp_pbuf_init(&b);
	djp_put_u32(&b, v);
	return send_frame(s, DJP_MSG_OK, &b, -1);
}

static int reply_error(struct djp_agent_session *s, int err, const char *fmt, const char *arg)
{
	char msg[512];
	snprintf(msg, sizeof(msg), fmt, arg);
	return send_error(s, err, msg);
}

/* ---- HELLO -------------------------------------------------------------- */

static int do_hello(struct djp_agent_session *s, struct djp_preader *r)
{
	uint32_t magic = djp_get_u32(r), version = djp_get_u32(r);
	char exe[1024];
	ssize_t n;
	struct djp_pbuf b;

	if (!djp_preader_done(r) || magic != DJP_PROTO_MAGIC)
		return -EPROTO;
	if (version != DJP_PROTO_VERSION) {
		char v[16];
		snprintf(v, sizeof(v), "%u", DJP_PROTO_VERSION);
		reply_error(s, -EPROTONOSUPPORT, "agent speaks protocol version %s only", v);
		return -EPROTONOSUPPORT;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	s->hello = true;
	djp_pbuf_init(&b);
	djp_put_u32(&b, DJP_PROTO_MAGIC);
	djp_put_u32(&b, DJP_PROTO_VERSION);
	djp_put_u32(&b, (uint32_t)getpid());
	djp_put_str(&b, exe);
	return send_frame(s, DJP_MSG_HELLO_REPLY, &b, -1);
}

/* ---- LIST ---------------------------------------------------------------- */

struct entry {
	uint32_t id;
	uint8_t nargs;
	uint64_t addr;
	char *name, *format, *object;
};

struct gather {
	uint32_t first;
	struct entry *v;
	size_t n, cap;
	int err;
};

/*
 * The format the tool gets for marker m: its own, or for an SDT probe,
 * which has none, one its argument locations say ("-4@%ebx 8@%rax": a
 * signed and an unsigned number of 4 and 8 bytes, "%d %lu"), so that the
 * tool prints each as its type is, in decimal (bpftrace's arg0), not as
 * bare hex words, and a CTF trace types it by its size.  The recorder
 * extends each value to 64 bits by the same size and sign.
 */
static const char *wire_format(const struct djp_marker_info *m, char *buf, size_t sz)
{
	size_t len = 0;

	if ((m->format && m->format[0]) || !m->from_sdt || !m->nargs)
		return m->format ? m->format : "";
	buf[0] = 0;
	for (unsigned i = 0; i < m->nargs && len + 6 < sz; i++) {
		uint8_t n = m->arg[i].size;
		len += (size_t)snprintf(buf + len, sz - len, "%s%%%s%c", i ? " " : "",
					n == 1 ? "hh" : n == 2 ? "h" : n == 8 ? "l" : "", m->arg[i].is_signed ? 'd' : 'u');
	}
	return buf;
}

static int gather_site(void *ctx, uint32_t id, const char *object, uintptr_t addr, const struct djp_marker_info *m)
{
	struct gather *g = ctx;
	struct entry *e;

	if (id < g->first)
		return 0;
	if (g->n == g->cap) {
		void *v = realloc(g->v, (g->cap = g->cap ? 2 * g->cap : 64) * sizeof(*g->v));
		if (!v)
			return g->err = -ENOMEM;
		g->v = v;
	}
	e = &g->v[g->n];
	e->id = id;
	e->nargs = m->nargs;
	e->addr = addr;
	{
		char full[512]; /* an SDT probe by its full name, provider:name */
		e->name = strdup(djp_marker_full_name(full, sizeof(full), m->provider, m->name ? m->name : ""));
	}
	{
		char fmt[64];
		e->format = strdup(wire_format(m, fmt, sizeof(fmt)));
	}
	e->object = strdup(object ? object : "");
	if (!e->name || !e->format || !e->object) {
		free(e->name);
		free(e->format);
		free(e->object);
		return g->err = -ENOMEM;
	}
	g->n++;
	return 0;
}

static size_t entry_size(const struct entry *e)
{
	size_t n = 4 + 8 + 1 + 6, k;
	k = strlen(e->name);
	n += k < DJP_PROTO_STR_MAX ? k : DJP_PROTO_STR_MAX;
	k = strlen(e->format);
	n += k < DJP_PROTO_STR_MAX ? k : DJP_PROTO_STR_MAX;
	k = strlen(e->object);
	n += k < DJP_PROTO_STR_MAX ? k : DJP_PROTO_STR_MAX;
	return n;
}

static int send_markers(struct djp_agent_session *s, struct djp_pbuf *b, uint32_t count)
{
	/* The count goes first: patch it into the frame's first field. */
	for (int i = 0; i < 4; i++)
		b->data[DJP_PROTO_HDR_SIZE + i] = (uint8_t)(count >> (8 * i));
	return send_frame(s, DJP_MSG_MARKERS, b, -1);
}

static int do_list(struct djp_agent_session *s, struct djp_preader *r)
{
	struct gather g = { .first = djp_get_u32(r) };
	struct djp_pbuf *b;
	uint32_t count = 0;
	int err;

	if (!djp_preader_done(r))
		return -EPROTO;
	err = djp__sites_foreach(gather_site, &g);
	if (!err)
		err = g.err;
	b = malloc(sizeof(*b));
	if (!b)
		err = -ENOMEM;
	if (err) {
		reply_error(s, err, "cannot list markers: %s", strerror(-err));
		goto out;
	}
	djp_pbuf_init(b);
	djp_put_u32(b, 0);
	for (size_t i = 0; i < g.n && !err; i++) {
		const struct entry *e = &g.v[i];
		if (djp_pbuf_room(b) < entry_size(e)) {
			err = send_markers(s, b, count);
			djp_pbuf_init(b);
			djp_put_u32(b, 0);
			count = 0;
		}
		djp_put_u32(b, e->id);
		djp_put_u64(b, e->addr);
		djp_put_u8(b, e->nargs);
		djp_put_str(b, e->name);
		djp_put_str(b, e->format);
		djp_put_str(b, e->object);
		count++;
	}
	if (!err && count)
		err = send_markers(s, b, count);
	if (!err)
		err = reply_ok(s, (uint32_t)g.n);
out:
	for (size_t i = 0; i < g.n; i++) {
		free(g.v[i].name);
		free(g.v[i].format);
		free(g.v[i].object);
	}
	free(g.v);
	free(b);
	return err;
}

/* ---- RING ----------------------------------------------------------------- */

static int do_ring(struct djp_agent_session *s, struct djp_preader *r)
{
	struct djp_ring_opts o = { .sz = sizeof(o) };
	struct djp_clock_params rate = { 0 };
	struct djp_pbuf b;

	o.mode = djp_get_u32(r);
	o.nslots = djp_get_u32(r);
	o.ring_size = djp_get_u64(r);
	o.nsubbufs = djp_get_u32(r);
	o.str_bound = djp_get_u32(r);
	/* the tool's TSC rate: this process need not measure its own */
	rate.kind = djp_get_u32(r);
	rate.shift = djp_get_u32(r);
	rate.mult = djp_get_u64(r);
	rate.raw_hz = djp_get_u64(r);
	if (!djp_preader_done(r))
		return -EPROTO;
	djp_clock_hint_rate(&rate);
	if (s->rec)
		return reply_error(s, -EBUSY, "%s", "this session has a ring already");
	/* The ring's own checks allow regions far larger than a tracer
	 * should map into somebody's process. */
	if (o.nslots > DJP_AGENT_MAX_SLOTS || o.ring_size > DJP_AGENT_MAX_RING ||
	    (uint64_t)(o.nslots ? o.nslots : 256) * (o.ring_size ? o.ring_size : 1u << 20) > DJP_AGENT_MAX_REGION)
		return reply_error(s, -E2BIG, "%s", "ring buffers too large");
	s->rec = djp_recorder_create(&o);
	if (!s->rec)
		return reply_error(s, -errno, "cannot create the ring buffers: %s", strerror(errno));
	s->rec->str_bound = o.str_bound;
	djp_pbuf_init(&b);
	djp_put_u64(&b, s->rec->region->size);
	return send_frame(s, DJP_MSG_RING_FD, &b, djp_region_fd(s->rec->region));
}

/* ---- TABLES ---------------------------------------------------------------- */

/* A program: its ops eight to a word, then its constants. */
static void djp_agg_get_code(struct djp_preader *r, struct djp_agg_code *c)
{
	for (unsigned w = 0; w < DJP_AGG_MAX_CODE / 8; w++) {
		uint64_t v = djp_get_u64(r);
		for (unsigned k = 0; k < 8; k++)
			c->op[w * 8 + k] = (uint8_t)(v >> (8 * k));
	}
	for (unsigned k = 0; k < DJP_AGG_MAX_IMM; k++)
		c->imm[k] = (int64_t)djp_get_u64(r);
}

static int do_tables(struct djp_agent_session *s, struct djp_preader *r)
{
	struct djp_agg_plan plans[DJP_AGG_MAX_PLANS];
	uint32_t capacity = djp_get_u32(r), n = djp_get_u32(r);
	struct djp_pbuf b;

	memset(plans, 0, sizeof(plans));
	for (uint32_t i = 0; i < n && i < DJP_AGG_MAX_PLANS; i++) {
		plans[i].key_args = djp_get_u32(r);
		plans[i].flags = djp_get_u32(r);
		plans[i].value_arg = djp_get_u32(r);
		plans[i].hist_kind = djp_get_u32(r);
		plans[i].value_const = (int64_t)djp_get_u64(r);
		plans[i].hist_start = (int64_t)djp_get_u64(r);
		plans[i].hist_interval = (int64_t)djp_get_u64(r);
		plans[i].nbuckets = djp_get_u32(r);
		plans[i].str_arg = djp_get_u32(r);
		plans[i].str_bound = djp_get_u32(r);
		/* a named plan's names (lib/agg.h) */
		for (unsigned k = 0; plans[i].flags & DJP_AGG_NAMED && k < DJP_AGG_MAX_NAMES; k++)
			djp_get_str(r, plans[i].names[k], sizeof(plans[i].names[k]));
		/* its programs (lib/agg.h), checked by djp_agg_create */
		if (plans[i].flags & (DJP_AGG_VALUE_CODE | DJP_AGG_COND | DJP_AGG_KEY_CODE)) {
			plans[i].code_args = djp_get_u32(r);
			djp_agg_get_code(r, &plans[i].value_code);
			djp_agg_get_code(r, &plans[i].cond_code);
			plans[i].nkeycode = djp_get_u32(r);
			for (unsigned k = 0; k < plans[i].nkeycode && k < DJP_AGG_MAX_KEY_ARGS; k++)
				djp_agg_get_code(r, &plans[i].key_code[k]);
		}
	}
	if (n > DJP_AGG_MAX_PLANS || !djp_preader_done(r))
		return -EPROTO;
	if (!s->rec)
		return reply_error(s, -EINVAL, "%s", "TABLES before RING");
	if (s->agg)
		return reply_error(s, -EBUSY, "%s", "this session has its tables already");
	if (!(s->agg = djp_agg_create(s->rec, plans, n, capacity)))
		return reply_error(s, -errno, "cannot create the aggregation tables: %s", strerror(errno));
	djp_pbuf_init(&b);
	djp_put_u64(&b, s->agg->size);
	return send_frame(s, DJP_MSG_TABLES_FD, &b, s->agg->fd);
}

/* ---- MARKER_LOG ------------------------------------------------------------ */

/* One log for the process, made at the first request (the agent thread is
 * the only one that asks) and kept until exit: every session is handed the
 * same memfd, and a tool keeps it after the process is gone. */
static struct djp_mlog marker_log = { .fd = -1 };

static int log_site(void *ctx, uint32_t id, const char *object, uintptr_t addr, const struct djp_marker_info *m)
{
	char full[512], fmt[64];
	djp_mlog_append(ctx, id, addr, m->nargs, djp_marker_full_name(full, sizeof(full), m->provider, m->name),
			wire_format(m, fmt, sizeof(fmt)), object);
	return 0;
}

static int do_marker_log(struct djp_agent_session *s, struct djp_preader *r)
{
	struct djp_pbuf b;
	int err;

	if (!djp_preader_done(r))
		return -EPROTO;
	if (marker_log.fd < 0) {
		struct djp_mlog log;
		if ((err = djp_mlog_create(&log)))
			return reply_error(s, err, "cannot create the marker log: %s", strerror(-err));
		marker_log = log;
		djp__sites_watch(log_site, &marker_log);
	}
	djp_pbuf_init(&b);
	djp_put_u64(&b, marker_log.hdr->size);
	return send_frame(s, DJP_MSG_MARKER_LOG_FD, &b, marker_log.fd);
}

/* ---- FREEZE, THAW ------------------------------------------------------------ */

/*
 * The freezers (kernel/freeze.c): a thread of the process blocks SIGTRAP,
 * so a batch is written with every other thread stopped, and the tool,
 * which may ptrace them, stops them.
 *
 * The session's own serves the batches of its requests: the agent thread
 * asks, in the middle of its answer to CONNECT, DISCONNECT or BYE (the tool
 * waits for that answer, reading what comes).
 *
 * The process's serves the batches nobody asked for: a library loaded
 * later, armed on the program's thread that loaded it (the dlopen hook) or
 * by the agent thread when it notices it; a site taken back from a uprobe
 * that went.  It asks the tool of a session that has probes (its loop
 * answers a FREEZE of the agent's own accord), from whatever thread runs
 * the batch, one that may hold the loader's lock: the tool needs nothing
 * of the process to stop it.  Without such a session (a program that only
 * preloads the library) there is no process freezer and the batch is
 * refused, counted as an arming error, as it is when the tool does not
 * answer.
 *
 * Either waits FREEZE_REPLY_MS for the answer, at most: a tool that is gone
 * is known at once (end of file), one that stopped answering is given up
 * (the batch refused, nothing written), told THAW so that threads it stops
 * late go on at once, and the replies it still owes are dropped when they
 * come.  Frames the tool sent before its answer (a request the agent
 * thread has not read yet) stay in s->in for the agent thread.
 */
#define FREEZE_REPLY_MS 5000

static long ms_left(const struct timespec *until)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (until->tv_sec - now.tv_sec) * 1000 + (until->tv_nsec - now.tv_nsec) / 1000000;
}

/* Take the tool's answer out of s->in, reading until it is there; tool_io
 * held.  0 (OK), -ENOLCK (ERROR: it could not stop them), -ETIMEDOUT, or
 * another -errno (the session is broken). */
static int await_answer(struct djp_agent_session *s, const struct timespec *until)
{
	for (;;) {
		size_t at = 0;
		ssize_t n;
		long left;
		while (at + DJP_PROTO_HDR_SIZE <= s->inlen) {
			unsigned type;
			long len = djp_proto_check_hdr(s->in + at, &type);
			size_t whole = DJP_PROTO_HDR_SIZE + (size_t)(len > 0 ? len : 0);
			if (len < 0)
				return (int)len;
			if (at + whole > s->inlen)
				break;
			if (type != DJP_MSG_OK && type != DJP_MSG_ERROR) {
				at += whole; /* a request: the agent thread's */
				continue;
			}
			memmove(s->in + at, s->in + at + whole, s->inlen - at - whole);
			s->inlen -= whole;
			if (s->owed) { /* the answer to an ask given up */
				s->owed--;
				continue;
			}
			return type == DJP_MSG_OK && len == 4 ? 0 : -ENOLCK;
		}
		if ((left = ms_left(until)) <= 0)
			return -ETIMEDOUT;
		if (s->inlen == sizeof(s->in))
			return -ENOBUFS;
		if (poll(&(struct pollfd){ s->fd, POLLIN, 0 }, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
		n = recv(s->fd, s->in + s->inlen, sizeof(s->in) - s->inlen, MSG_DONTWAIT);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		if (n > 0)
			s->inlen += (size_t)n;
	}
}

/* Ask s's tool to FREEZE or THAW the threads but this one; tool_io held.
 * 0 once it has, else -EDEADLK. */
static int ask_locked(struct djp_agent_session *s, unsigned type)
{
	static struct djp_pbuf b; /* (tool_io's) */
	struct timespec until;
	int err;

	if (s->fd < 0)
		return -EDEADLK;
	djp_pbuf_init(&b);
	djp_put_u32(&b, (uint32_t)syscall(SYS_gettid));
	if (djp_proto_send(s->fd, type, &b, -1))
		return -EDEADLK;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += FREEZE_REPLY_MS / 1000;
	err = await_answer(s, &until);
	if (err == -ETIMEDOUT) {
		s->owed++;
		if (type == DJP_MSG_FREEZE) { /* were it to stop them late */
			djp_pbuf_init(&b);
			djp_put_u32(&b, (uint32_t)syscall(SYS_gettid));
			if (!djp_proto_send(s->fd, DJP_MSG_THAW, &b, -1))
				s->owed++;
		}
	}
	return err ? -EDEADLK : 0;
}

static int ask_tool(struct djp_agent_session *s, unsigned type)
{
	int err;
	pthread_mutex_lock(&tool_io);
	err = ask_locked(s, type);
	pthread_mutex_unlock(&tool_io);
	return err;
}

static int freeze_by_tool(void *ctx)
{
	return ask_tool(ctx, DJP_MSG_FREEZE);
}

static void thaw_by_tool(void *ctx)
{
	ask_tool(ctx, DJP_MSG_THAW);
}

/* The process's freezer: the sessions it chooses from, and the one whose
 * tool holds the threads between its freeze and thaw (batches run under
 * the engine lock, one at a time). */
static struct djp_agent_session *all_sessions;
static struct djp_agent_session *holding;

static int freeze_by_any_tool(void *ctx)
{
	int err = -EDEADLK;
	(void)ctx;
	pthread_mutex_lock(&tool_io);
	holding = NULL;
	for (int i = 0; all_sessions && i < DJP_AGENT_MAX_SESSIONS && !holding; i++)
		if (all_sessions[i].serves && all_sessions[i].fd >= 0)
			holding = &all_sessions[i];
	if (holding && (err = ask_locked(holding, DJP_MSG_FREEZE)))
		holding = NULL;
	pthread_mutex_unlock(&tool_io);
	return err;
}

static void thaw_by_any_tool(void *ctx)
{
	(void)ctx;
	pthread_mutex_lock(&tool_io);
	if (holding)
		ask_locked(holding, DJP_MSG_THAW);
	holding = NULL;
	pthread_mutex_unlock(&tool_io);
}

/* The process's freezer, while a session serves it. */
static void update_process_freezer(void)
{
	static const struct djp_freezer f = { freeze_by_any_tool, thaw_by_any_tool, NULL };
	bool any = false;
	for (int i = 0; all_sessions && i < DJP_AGENT_MAX_SESSIONS; i++)
		any |= all_sessions[i].serves;
	djp__engine_set_process_freezer(any ? &f : NULL);
}

void djp_agent_sessions_init(struct djp_agent_session *v)
{
	/* (a child of fork: the parent's threads, the lock's holder among
	 * them, are not here) */
	pthread_mutex_init(&tool_io, NULL);
	all_sessions = v;
	holding = NULL;
	update_process_freezer();
}

/* The session's tool stops the other threads for the batches of the
 * request being answered (NULL: for none). */
static void freezer_for(struct djp_agent_session *s)
{
	static struct djp_freezer f = { freeze_by_tool, thaw_by_tool, NULL };
	f.ctx = s;
	djp__engine_set_freezer(s ? &f : NULL);
}

/* ---- CONNECT, DISCONNECT ---------------------------------------------------- */

static const char *connect_problem(int err)
{
	switch (err) {
	case -ENOENT:
		return "matches no marker";
	case -ENOTSUP:
		return "an instruction that cannot run out of line";
	case -EBUSY:
		return "a matching site holds bytes that are not djprobe's (a debugger or uprobe?)";
	case -EDEADLK:
		return "a thread of the process blocks SIGTRAP";
	case -EAGAIN: /* kernel/freeze.c */
		return "a thread of the process stays inside the instructions a jump would cover, and it blocks "
		       "SIGTRAP (no int3 can stand in for the jump meanwhile)";
	default:
		return strerror(-err);
	}
}

/* What a connect's error means, for a pattern that may name points. */
static const char *point_problem(const char *pattern, int err)
{
	struct djp_point *pt;
	int kind = djp__point_parse(pattern, &pt);
	bool ret = djp_point_is_return(pt);
	djp_point_free(pt);
	if (kind == -EINVAL)
		return "not a point: func:GLOB, func:NAME+OFFSET, func:NAME%return, line:FILE:LINE, "
		       "each with @OBJECT or not, or func:GLOB@FILE:LINE@OBJECT";
	if (kind == 1)
		return connect_problem(err);
	if (err == -ENOENT)
		return "matches no function or line with code";
	if (err == -EINVAL)
		return "not an instruction boundary inside its function";
	if (err == -EPERM && ret)
		return "no return to divert: not entered by a call (the program's entry point, a .cold part), "
		       "returning twice (setjmp, vfork, getcontext) or the unwinder's own";
	if (err == -ENOTSUP && ret)
		return "the process has a CET shadow stack, which a diverted return would fault";
	return connect_problem(err);
}

/* CONNECTED's list of the sites the connect left to the tool's uprobe
 * (DJP_CONNECT_KERNEL_TRAP): their count, then each one's marker id and
 * run-time address.  As many as a frame holds: when there are more, the
 * pattern is connected again without leaving any (do_connect), since a
 * site past them would be armed by nobody. */
#define KERNEL_TRAP_SITES_MAX ((DJP_PROTO_MAX_PAYLOAD - 64) / 12)
struct trap_sites {
	uint32_t id[KERNEL_TRAP_SITES_MAX];
	uint64_t addr[KERNEL_TRAP_SITES_MAX];
	unsigned n;
	bool over;
};

static int trap_site(void *ctx, uint32_t id, const char *path, uintptr_t pc, const struct djp_marker_info *m)
{
	struct trap_sites *t = ctx;
	(void)path, (void)m;
	if (t->n == KERNEL_TRAP_SITES_MAX) {
		t->over = true;
		return 1;
	}
	t->id[t->n] = id;
	t->addr[t->n++] = pc;
	return 0;
}

static void put_kernel_trap_sites(struct djp_pbuf *b, const struct trap_sites *t)
{
	djp_put_u32(b, t ? t->n : 0);
	for (unsigned i = 0; t && i < t->n; i++) {
		djp_put_u32(b, t->id[i]);
		djp_put_u64(b, t->addr[i]);
	}
}

static int do_connect(struct djp_agent_session *s, struct djp_preader *r)
{
	char pattern[DJP_AGENT_PATTERN_MAX + 1], msg[DJP_AGENT_PATTERN_MAX + 128];
	unsigned nsites = 0;
	struct djp_recorder_strings strings;
	struct djp_pbuf b;
	uint32_t flags, plan = 0, rflags;
	struct trap_sites *left = NULL;
	int id;

	djp_get_str(r, pattern, sizeof(pattern));
	flags = djp_get_u32(r);
	strings.args = djp_get_u32(r);
	strings.bound = djp_get_u32(r);
	if (flags & DJP_CONNECT_AGG)
		plan = djp_get_u32(r);
	if (!djp_preader_done(r) || (flags & ~(DJP_CONNECT_PENDING | DJP_CONNECT_CPU | DJP_CONNECT_USTACK |
					       DJP_CONNECT_INT3 | DJP_CONNECT_AGG | DJP_CONNECT_REGS |
					       DJP_CONNECT_REGS_STACK | DJP_CONNECT_KERNEL_TRAP)))
		return -EPROTO;
	if (strings.bound > DJP_RING_STR_BOUND_MAX)
		return reply_error(s, -EINVAL, "%s", "string bound over the ring's largest");
	if (!pattern[0])
		return reply_error(s, -EINVAL, "%s", "empty pattern");
	if (!s->rec)
		return reply_error(s, -EINVAL, "%s", "CONNECT before RING");
	if (s->nprobes == DJP_AGENT_MAX_PROBES)
		return reply_error(s, -E2BIG, "%s", "too many patterns in one session");
	if ((flags & DJP_CONNECT_AGG) && (!s->agg || plan >= s->agg->nplans))
		return reply_error(s, -EINVAL, "%s", "no such aggregation plan");
	if (flags & DJP_CONNECT_CPU)
		__atomic_store_n(&s->rec->cpu, true, __ATOMIC_RELAXED); /* before the connect: its plans read it */
	rflags = (flags & DJP_CONNECT_PENDING ? DJP_RECORD_PENDING : 0) |
		 (flags & DJP_CONNECT_USTACK ? DJP_RECORD_USTACK : 0) | (flags & DJP_CONNECT_REGS ? DJP_RECORD_REGS : 0) |
		 (flags & DJP_CONNECT_REGS_STACK ? DJP_RECORD_REGS_STACK : 0) |
		 (flags & DJP_CONNECT_INT3 ? DJP_RECORD_INT3 : 0) |
		 (flags & DJP_CONNECT_KERNEL_TRAP ? DJP_RECORD_KERNEL_TRAP : 0);
	freezer_for(s);
	if (flags & DJP_CONNECT_AGG)
		id = djp_agg_connect(s->agg, plan, pattern,
				     (flags & DJP_CONNECT_PENDING ? DJP_RECORD_PENDING : 0) |
					     (flags & DJP_CONNECT_INT3 ? DJP_RECORD_INT3 : 0),
				     &nsites);
	else
		id = djp_recorder_connect(s->rec, pattern, rflags, &strings, &nsites);
	if (id >= 0 && (rflags & DJP_RECORD_KERNEL_TRAP)) {
		if (!(left = calloc(1, sizeof(*left))))
			djp_disconnect(id), id = -ENOMEM;
		else if (djp__kernel_trap_sites(id, trap_site, left), left->over) {
			djp_disconnect(id);
			free(left);
			left = NULL;
			id = djp_recorder_connect(s->rec, pattern, rflags & ~DJP_RECORD_KERNEL_TRAP, &strings, &nsites);
		}
	}
	freezer_for(NULL);
	if (id < 0) {
		const struct djp_site *site = id == -EDEADLK ? djp__refused_site() : NULL;
		if (site)
			snprintf(msg, sizeof(msg),
				 "pattern '%s': the site %s at %s+0x%lx can only be an int3 breakpoint, "
				 "and a thread of the process blocks SIGTRAP",
				 pattern, site->m->name ? site->m->name : "?", site->obj->path,
				 (unsigned long)(djp_site_pc(site) - site->obj->bias));
		else
			snprintf(msg, sizeof(msg), "pattern '%s': %s", pattern, point_problem(pattern, id));
		return send_error(s, id, msg);
	}
	s->probe[s->nprobes] = id;
	if (!s->serves) { /* its tool serves the process's freezer too */
		pthread_mutex_lock(&tool_io);
		s->serves = true;
		pthread_mutex_unlock(&tool_io);
		update_process_freezer();
	}
	djp_pbuf_init(&b);
	djp_put_u32(&b, s->nprobes++);
	djp_put_u32(&b, nsites);
	put_kernel_trap_sites(&b, left);
	free(left);
	return send_frame(s, DJP_MSG_CONNECTED, &b, -1);
}

/* Disconnect probe i of the session; 0 when it is gone. */
static int drop_probe(struct djp_agent_session *s, unsigned i)
{
	int err;
	if (s->probe[i] < 0)
		return 0;
	err = djp_disconnect(s->probe[i]);
	if (err && err != -ENOENT)
		return err;
	s->probe[i] = -1;
	return 0;
}

static int drop_all(struct djp_agent_session *s, uint32_t *count)
{
	int err = 0;
	for (unsigned i = 0; i < s->nprobes; i++) {
		int had = s->probe[i] >= 0, e = drop_probe(s, i);
		if (e)
			err = e;
		else if (count)
			*count += had;
	}
	return err;
}

static int do_disconnect(struct djp_agent_session *s, struct djp_preader *r)
{
	uint32_t which = djp_get_u32(r), count = 0;
	int err;

	if (!djp_preader_done(r))
		return -EPROTO;
	freezer_for(s);
	if (which == DJP_PROBE_ALL) {
		err = drop_all(s, &count);
	} else if (which < s->nprobes) {
		count = s->probe[which] >= 0;
		err = drop_probe(s, which);
	} else {
		err = -ENOENT;
	}
	freezer_for(NULL);
	if (err == -ENOENT)
		return reply_error(s, -ENOENT, "%s", "no such probe");
	if (err)
		return reply_error(s, err, "cannot disconnect: %s", strerror(-err));
	return reply_ok(s, count);
}

/* ---- STATS ----------------------------------------------------------------- */

static int sum_misses(void *ctx, uint32_t id, const char *object, uintptr_t addr, const struct djp_marker_info *m)
{
	struct djp_site *site = djp_site_by_id(id); /* the engine lock is held */
	if (site)
		*(uint64_t *)ctx += atomic_load_explicit(&site->misses, memory_order_relaxed);
	return 0;
}

static int do_stats(struct djp_agent_session *s, struct djp_preader *r)
{
	struct djp_pbuf *b;
	struct djp_region *reg = s->rec ? s->rec->region : NULL;
	uint64_t misses = 0;
	uint32_t n = 0, m = 0;
	size_t at;
	int err;

	if (!djp_preader_done(r))
		return -EPROTO;
	if (!(b = malloc(sizeof(*b))))
		return reply_error(s, -ENOMEM, "%s", "out of memory");
	djp__sites_foreach(sum_misses, &misses);
	djp_pbuf_init(b);
	djp_put_u64(b, misses);
	djp_put_u64(b, reg ? __atomic_load_n(&reg->hdr->lost_noslot, __ATOMIC_RELAXED) : 0);
	at = b->len;
	djp_put_u32(b, 0);
	for (uint32_t i = 0; reg && i < reg->nslots && djp_pbuf_room(b) > 2048; i++) {
		struct djp_slot_hdr *sl = (struct djp_slot_hdr *)(reg->base + DJP_REGION_HDR_SIZE + i * reg->slot_stride);
		uint64_t owner = __atomic_load_n(&sl->owner, __ATOMIC_ACQUIRE);
		if (!owner)
			continue;
		djp_put_u32(b, (uint32_t)(owner >> 32));
		djp_put_u64(b, __atomic_load_n(&sl->nevents, __ATOMIC_RELAXED));
		djp_put_u64(b, __atomic_load_n(&sl->lost_full, __ATOMIC_RELAXED));
		djp_put_u64(b, __atomic_load_n(&sl->lost_nested, __ATOMIC_RELAXED));
		n++;
	}
	for (int i = 0; i < 4; i++)
		b->data[DJP_PROTO_HDR_SIZE + at + i] = (uint8_t)(n >> (8 * i));
	at = b->len;
	djp_put_u32(b, 0);
	for (uint32_t id = 0; s->rec && s->rec->lost_by_id && id < DJP_RECORDER_MAX_IDS && djp_pbuf_room(b) > 16; id++) {
		uint64_t *shared = s->rec->lost_shared;
		uint64_t lost = __atomic_load_n(&s->rec->lost_by_id[id], __ATOMIC_RELAXED);
		if (shared && id < DJP_TABLES_NIDS)
			lost += __atomic_load_n(&shared[id], __ATOMIC_RELAXED);
		if (!lost)
			continue;
		djp_put_u32(b, id);
		djp_put_u64(b, lost);
		m++;
	}
	for (int i = 0; i < 4; i++)
		b->data[DJP_PROTO_HDR_SIZE + at + i] = (uint8_t)(m >> (8 * i));
	{
		int last = 0;
		unsigned errs = djp__engine_background_error(&last) - s->arm_errors_at_open;
		djp_put_u32(b, errs);
		djp_put_u32(b, errs ? (uint32_t)last : 0);
	}
	err = send_frame(s, DJP_MSG_STATS_REPLY, b, -1);
	free(b);
	return err;
}

/* ---- VARS ------------------------------------------------------------------ */

struct var_find {
	const char *object;
	char exe[4096];
	uint64_t bias;
	bool found;
};

/* The loaded object that is `object` (a real path; "" in the loader's list
 * is the program, /proc/self/exe), and its bias. */
static int var_object(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct var_find *f = ctx;
	const char *name = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : f->exe;
	char *real = realpath(name, NULL);
	bool same = real && !strcmp(real, f->object);
	(void)size;
	free(real);
	if (same) {
		f->bias = info->dlpi_addr;
		f->found = true;
	}
	return same;
}

/* A script's @var variables: each one's run-time address, from where its
 * object is loaded now, for the recorder to read at each hit. */
static int do_vars(struct djp_agent_session *s, struct djp_preader *r)
{
	struct djp_pbuf b;
	uint64_t addr[DJP_VARS_MAX];
	uint16_t bound[DJP_VARS_MAX];
	uint8_t reg[DJP_VARS_MAX];
	uint32_t n = djp_get_u32(r), nstr = 0;
	ssize_t len;

	if (n > DJP_VARS_MAX)
		return -EPROTO;
	for (uint32_t i = 0; i < n; i++) {
		char object[4096];
		struct var_find f = { .object = object };
		uint64_t link;
		uint8_t size;
		djp_get_str(r, object, sizeof(object));
		link = djp_get_u64(r);
		size = djp_get_u8(r);
		reg[i] = !object[0] && !size && link <= DJP_REGS_PC ? (uint8_t)(link + 1) : 0;
		bound[i] = djp_get_u16(r);
		if (bound[i] > DJP_RING_STR_BOUND_MAX || (bound[i] && ++nstr > DJP_VARS_STR_MAX))
			return -EPROTO;
		if ((len = readlink("/proc/self/exe", f.exe, sizeof(f.exe) - 1)) > 0)
			f.exe[len] = 0;
		dl_iterate_phdr(var_object, &f);
		addr[i] = f.found && link && !reg[i] ? f.bias + link : 0;
	}
	if (!djp_preader_done(r))
		return -EPROTO;
	if (!s->rec)
		return reply_error(s, -EINVAL, "%s", "VARS before RING");
	for (uint32_t i = 0; i < n; i++) {
		s->rec->var_addr[i] = addr[i];
		s->rec->var_str[i] = bound[i];
		s->rec->var_reg[i] = reg[i];
	}
	if (nstr) /* the fast copy if the engine can have it */
		(void)djp_safe_copy_enable();
	__atomic_store_n(&s->rec->nvars, n, __ATOMIC_RELEASE);
	djp_pbuf_init(&b);
	djp_put_u32(&b, n);
	for (uint32_t i = 0; i < n; i++)
		djp_put_u64(&b, addr[i]);
	return send_frame(s, DJP_MSG_OK, &b, -1);
}

/* ---- LOADS ----------------------------------------------------------------- */

/* The load programs of the sites named provider:name (kernel/agent/
 * loads.c), for the patterns the session connects after. */
static int do_loads(struct djp_agent_session *s, struct djp_preader *r)
{
	static struct djp_load_set ls; /* the session thread's alone */
	int err = 0;

	memset(&ls, 0, sizeof(ls));
	djp_get_str(r, ls.provider, sizeof(ls.provider));
	djp_get_str(r, ls.name, sizeof(ls.name));
	ls.site = djp_get_u64(r);
	ls.n = djp_get_u32(r);
	if (ls.n > DJP_LOAD_MAX_PROGS)
		return -EPROTO;
	for (unsigned i = 0; i < ls.n && !err; i++)
		err = djp_load_get(r, &ls.prog[i]);
	if (err == -EPROTO || !djp_preader_done(r))
		return -EPROTO;
	if (err)
		return reply_error(s, err, "%s", "a load program the agent cannot run");
	if (!s->rec)
		return reply_error(s, -EINVAL, "%s", "LOADS before RING");
	if (!s->rec->loads) {
		struct djp_loads *l = djp_loads_create();
		if (!l)
			return reply_error(s, -ENOMEM, "%s", "no memory for load programs");
		__atomic_store_n(&s->rec->loads, l, __ATOMIC_RELEASE);
	}
	if ((err = djp_loads_add(s->rec->loads, &ls)))
		return reply_error(s, err, "cannot keep load programs: %s", strerror(-err));
	/* the loads' fast fault-safe copy, if the engine can have it */
	(void)djp_safe_copy_enable();
	return reply_ok(s, 0);
}

/* ---- FOLLOW ---------------------------------------------------------------- */

static int do_follow(struct djp_agent_session *s, struct djp_preader *r)
{
	char name[128];
	int err;
	if (!djp_get_str(r, name, sizeof(name)) || !djp_preader_done(r))
		return -EPROTO;
	if ((err = djp_agent_follow(s, name)))
		return reply_error(s, err, "%s", "the tool's socket name is too long");
	return reply_ok(s, 0);
}

/* ---- the session ------------------------------------------------------------ */

/* Handle one frame; 0 to go on, < 0 to end the session. */
static int handle(struct djp_agent_session *s, unsigned type, const uint8_t *payload, size_t len)
{
	struct djp_preader r;
	int err;

	djp_preader_init(&r, payload, len);
	if (!s->hello && type != DJP_MSG_HELLO) {
		send_error(s, -EPROTO, "HELLO first");
		return -EPROTO;
	}
	switch (type) {
	case DJP_MSG_HELLO:
		return s->hello ? -EPROTO : do_hello(s, &r);
	case DJP_MSG_LIST:
		return do_list(s, &r);
	case DJP_MSG_RING:
		return do_ring(s, &r);
	case DJP_MSG_MARKER_LOG:
		return do_marker_log(s, &r);
	case DJP_MSG_CONNECT:
		return do_connect(s, &r);
	case DJP_MSG_DISCONNECT:
		return do_disconnect(s, &r);
	case DJP_MSG_STATS:
		return do_stats(s, &r);
	case DJP_MSG_FOLLOW:
		return do_follow(s, &r);
	case DJP_MSG_TABLES:
		return do_tables(s, &r);
	case DJP_MSG_VARS:
		return do_vars(s, &r);
	case DJP_MSG_LOADS:
		return do_loads(s, &r);
	case DJP_MSG_START:
		if (!djp_preader_done(&r))
			return -EPROTO;
		/* the answer first: a process released may exit at once, and
		 * the tool must not read its end before the OK */
		err = reply_ok(s, 0);
		if (s->launch)
			djp_agent_launch_release();
		return err;
	case DJP_MSG_BYE:
		if (!djp_preader_done(&r))
			return -EPROTO;
		freezer_for(s);
		err = drop_all(s, NULL);
		freezer_for(NULL);
		if (err)
			reply_error(s, err, "cannot disconnect: %s", strerror(-err));
		else
			reply_ok(s, 0);
		return -ECONNRESET;
	default: /* a reply type, sent to the agent */
		return -EPROTO;
	}
}

int djp_agent_session_input(struct djp_agent_session *s)
{
	ssize_t n;
	int err = 0;

	/* (s->in may hold frames a freezer's ask read meanwhile: handled
	 * even when the socket has nothing new) */
	pthread_mutex_lock(&tool_io);
	n = recv(s->fd, s->in + s->inlen, sizeof(s->in) - s->inlen, MSG_DONTWAIT);
	if (n > 0)
		s->inlen += (size_t)n;
	else if (n < 0 && errno != EAGAIN && errno != EINTR)
		err = -errno;
	pthread_mutex_unlock(&tool_io);
	if (n == 0)
		return -ECONNRESET;
	if (err)
		return err;
	for (;;) {
		unsigned type;
		long len = 0;
		bool whole;
		/* the frame at the front stays where it is while it is
		 * handled: an ask appends behind it, takes out only answers */
		pthread_mutex_lock(&tool_io);
		whole = s->inlen >= DJP_PROTO_HDR_SIZE && (len = djp_proto_check_hdr(s->in, &type)) >= 0 &&
			s->inlen >= DJP_PROTO_HDR_SIZE + (size_t)len;
		if (whole && (type == DJP_MSG_OK || type == DJP_MSG_ERROR) && s->owed) {
			/* the late answer to an ask given up */
			s->owed--;
			s->inlen -= DJP_PROTO_HDR_SIZE + (size_t)len;
			memmove(s->in, s->in + DJP_PROTO_HDR_SIZE + len, s->inlen);
			pthread_mutex_unlock(&tool_io);
			continue;
		}
		pthread_mutex_unlock(&tool_io);
		if (len < 0)
			return (int)len;
		if (!whole)
			return 0;
		err = handle(s, type, s->in + DJP_PROTO_HDR_SIZE, (size_t)len);
		if (err < 0)
			return err;
		pthread_mutex_lock(&tool_io);
		s->inlen -= DJP_PROTO_HDR_SIZE + (size_t)len;
		memmove(s->in, s->in + DJP_PROTO_HDR_SIZE + len, s->inlen);
		pthread_mutex_unlock(&tool_io);
	}
}

bool djp_agent_session_pending(struct djp_agent_session *s)
{
	unsigned type;
	long len;
	bool whole;
	pthread_mutex_lock(&tool_io);
	whole = s->inlen >= DJP_PROTO_HDR_SIZE &&
		((len = djp_proto_check_hdr(s->in, &type)) < 0 || s->inlen >= DJP_PROTO_HDR_SIZE + (size_t)len);
	pthread_mutex_unlock(&tool_io);
	return whole;
}

int djp_agent_session_end(struct djp_agent_session *s)
{
	pthread_mutex_lock(&tool_io);
	s->serves = false;
	if (s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
	}
	pthread_mutex_unlock(&tool_io);
	update_process_freezer();
	if (drop_all(s, NULL))
		return -EAGAIN;
	djp_agg_destroy(s->agg);
	s->agg = NULL;
	djp_recorder_destroy(s->rec);
	s->rec = NULL;
	s->nprobes = 0;
	s->used = false;
	s->ending = false;
	return 0;
}
