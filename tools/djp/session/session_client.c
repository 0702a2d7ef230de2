/*
 * The requests the tool makes of the agent (lib/proto.h), for a session.
 *
 * Each request is one frame out and, after any MARKERS frames, one final
 * reply in, waited for at most SESSION_REPLY_TIMEOUT_MS per frame: an agent
 * that stops answering ends the trace instead of hanging the tool.  A reply
 * is parsed as strictly as the agent parses requests; an ERROR reply's
 * -errno is returned and its text kept in s->errmsg for the caller's one
 * line on stderr.  Any failure other than an ERROR reply means the session
 * is gone (s->alive is cleared), so nothing more is asked of it.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/load_wire.h"
#include "tools/djp/session/session.h"

/* Wait for one frame; an ERROR frame becomes its -errno.  While the
 * process's threads are stopped for the agent (FREEZE), the agent is
 * writing its text: they are let go only when it says so, or after a
 * minute (were it dead, its socket would say so at once). */
static long recv_frame(struct session *s, unsigned *type, int *fd_out)
{
	long n = djp_proto_recv(s->fd, type, s->buf, s->frozen.n ? 60000 : SESSION_REPLY_TIMEOUT_MS, fd_out);
	struct djp_preader r;

	if (n < 0) {
		s->alive = false;
		s->errcode = (int)n;
		snprintf(s->errmsg, sizeof(s->errmsg), "%s",
			 n == -ECONNRESET ? "the agent closed the connection"
			 : n == -ETIMEDOUT ? "the agent did not answer"
			 : n == -EPROTO	   ? "the agent sent a malformed frame"
					   : strerror((int)-n));
		return n;
	}
	if (*type != DJP_MSG_ERROR)
		return n;
	djp_preader_init(&r, s->buf, (size_t)n);
	s->errcode = (int)djp_get_u32(&r);
	djp_get_str(&r, s->errmsg, sizeof(s->errmsg));
	if (!djp_preader_done(&r) || s->errcode >= 0) {
		s->alive = false;
		s->errcode = -EPROTO;
		snprintf(s->errmsg, sizeof(s->errmsg), "the agent sent a malformed ERROR frame");
	}
	return s->errcode;
}

/* The agent's FREEZE or THAW (lib/proto.h), answered: 0, or -errno when
 * the answer could not be sent. */
static int answer_agent(struct session *s, unsigned type, long n)
{
	static struct djp_pbuf b;
	struct djp_preader r;
	pid_t tid;
	int err = 0;

	djp_preader_init(&r, s->buf, (size_t)n);
	tid = (pid_t)djp_get_u32(&r);
	if (!djp_preader_done(&r))
		err = -EPROTO;
	else if (type == DJP_MSG_FREEZE)
		err = freeze_stop(&s->frozen, s->pid, tid);
	else
		freeze_thaw(&s->frozen);
	if (err) {
		char msg[128];
		snprintf(msg, sizeof(msg), "cannot stop the threads of process %d: %s", (int)s->pid, strerror(-err));
		return djp_proto_send_error(s->fd, err, msg);
	}
	djp_pbuf_init(&b);
	djp_put_u32(&b, 0);
	return djp_proto_send(s->fd, DJP_MSG_OK, &b, -1);
}

/* The session broken while the agent asked FREEZE or THAW: the threads
 * go on, nothing more is asked. */
static int freeze_broken(struct session *s, int err)
{
	freeze_thaw(&s->frozen);
	s->alive = false;
	s->errcode = err;
	snprintf(s->errmsg, sizeof(s->errmsg), "cannot answer the agent: %s", strerror(-err));
	return err;
}

/* The next frame that is not the agent's FREEZE or THAW, those answered on
 * the way: a thread blocks SIGTRAP, and the agent has the others stopped
 * while it writes, in the middle of its answer to a request or of its own
 * accord (a library loaded meanwhile). */
static long recv_reply(struct session *s, unsigned *type, int *fd_out)
{
	long n;
	int err;
	while ((n = recv_frame(s, type, fd_out)) >= 0 && (*type == DJP_MSG_FREEZE || *type == DJP_MSG_THAW))
		if ((err = answer_agent(s, *type, n)))
			return freeze_broken(s, err);
	return n;
}

static long request(struct session *s, unsigned type, struct djp_pbuf *b, unsigned want, int *fd_out)
{
	unsigned got;
	long n;
	int err;

	if (!s->alive)
		return -ECONNRESET;
	err = djp_proto_send(s->fd, type, b, -1);
	if (err) {
		s->alive = false;
		s->errcode = err;
		snprintf(s->errmsg, sizeof(s->errmsg), "cannot send %s: %s", djp_msg_name(type), strerror(-err));
		return err;
	}
	n = recv_reply(s, &got, fd_out);
	freeze_thaw(&s->frozen); /* (an agent that left them stopped) */
	if (n >= 0 && got != want) {
		s->alive = false;
		s->errcode = -EPROTO;
		snprintf(s->errmsg, sizeof(s->errmsg), "the agent answered %s with %s", djp_msg_name(type),
			 djp_msg_name(got));
		return -EPROTO;
	}
	return n;
}

bool session_serve(struct session *s)
{
	for (;;) {
		uint8_t hdr[DJP_PROTO_HDR_SIZE];
		unsigned type;
		long n;
		int err;
		if (!s->alive)
			return true;
		if (!s->frozen.n) { /* (stopped: the THAW is waited for) */
			ssize_t got = recv(s->fd, hdr, sizeof(hdr), MSG_PEEK | MSG_DONTWAIT);
			if (got < 0)
				return errno != EAGAIN && errno != EINTR;
			if (got == 0)
				return true; /* its end: left for the caller to read */
			if (got < (ssize_t)sizeof(hdr))
				return false; /* the rest is on its way */
			if (djp_proto_check_hdr(hdr, &type) < 0 || (type != DJP_MSG_FREEZE && type != DJP_MSG_THAW))
				return true; /* nothing a tool was asked */
		}
		if ((n = recv_frame(s, &type, NULL)) < 0) {
			freeze_thaw(&s->frozen);
			return true;
		}
		if (type != DJP_MSG_FREEZE && type != DJP_MSG_THAW)
			return freeze_broken(s, -EPROTO), true;
		if ((err = answer_agent(s, type, n)))
			return freeze_broken(s, err), true;
	}
}

static int bad_reply(struct session *s, const char *what)
{
	s->alive = false;
	s->errcode = -EPROTO;
	snprintf(s->errmsg, sizeof(s->errmsg), "malformed %s reply from the agent", what);
	return -EPROTO;
}

int session_hello(struct session *s)
{
	static struct djp_pbuf b;
	struct djp_preader r;
	long n;

	djp_pbuf_init(&b);
	djp_put_u32(&b, DJP_PROTO_MAGIC);
	djp_put_u32(&b, DJP_PROTO_VERSION);
	n = request(s, DJP_MSG_HELLO, &b, DJP_MSG_HELLO_REPLY, NULL);
	if (n < 0)
		return (int)n;
	djp_preader_init(&r, s->buf, (size_t)n);
	if (djp_get_u32(&r) != DJP_PROTO_MAGIC || djp_get_u32(&r) != DJP_PROTO_VERSION)
		return bad_reply(s, "HELLO");
	s->pid = (pid_t)djp_get_u32(&r);
	s->exec_id = session_exec_id(s->pid);
	djp_get_str(&r, s->program, sizeof(s->program));
	return djp_preader_done(&r) ? 0 : bad_reply(s, "HELLO");
}

/* The marker log's memfd, mapped read-only for as long as the tool runs. */
static int marker_log(struct session *s)
{
	static struct djp_pbuf b;
	int fd = -1, err;
	long n;

	djp_pbuf_init(&b);
	n = request(s, DJP_MSG_MARKER_LOG, &b, DJP_MSG_MARKER_LOG_FD, &fd);
	if (n < 0)
		return (int)n;
	if (n != 8 || fd < 0) {
		if (fd >= 0)
			close(fd);
		return bad_reply(s, "MARKER_LOG");
	}
	err = djp_mlog_open(fd, &s->mlog);
	close(fd);
	if (err) {
		s->errcode = err;
		snprintf(s->errmsg, sizeof(s->errmsg), "cannot map the marker log: %s", strerror(-err));
	}
	return err;
}

/* An aggregation plan's program: its ops eight to a word, its constants. */
static void put_code(struct djp_pbuf *b, const struct djp_agg_code *c)
{
	for (unsigned w = 0; w < DJP_AGG_MAX_CODE / 8; w++) {
		uint64_t v = 0;
		for (unsigned k = 0; k < 8; k++)
			v |= (uint64_t)c->op[w * 8 + k] << (8 * k);
		djp_put_u64(b, v);
	}
	for (unsigned k = 0; k < DJP_AGG_MAX_IMM; k++)
		djp_put_u64(b, (uint64_t)c->imm[k]);
}

int session_tables(struct session *s)
{
	static struct djp_pbuf b;
	int fd = -1;
	long n;

	djp_pbuf_init(&b);
	djp_put_u32(&b, s->agg_capacity ? s->agg_capacity : 1);
	djp_put_u32(&b, s->nagg_plans);
	for (unsigned i = 0; i < s->nagg_plans; i++) {
		const struct djp_agg_plan *p = &s->agg_plans[i];
		djp_put_u32(&b, p->key_args);
		djp_put_u32(&b, p->flags);
		djp_put_u32(&b, p->value_arg);
		djp_put_u32(&b, p->hist_kind);
		djp_put_u64(&b, (uint64_t)p->value_const);
		djp_put_u64(&b, (uint64_t)p->hist_start);
		djp_put_u64(&b, (uint64_t)p->hist_interval);
		djp_put_u32(&b, p->nbuckets);
		djp_put_u32(&b, p->str_arg);
		djp_put_u32(&b, p->str_bound);
		for (unsigned k = 0; p->flags & DJP_AGG_NAMED && k < DJP_AGG_MAX_NAMES; k++)
			djp_put_str(&b, p->names[k]);
		if (p->flags & (DJP_AGG_VALUE_CODE | DJP_AGG_COND | DJP_AGG_KEY_CODE)) { /* as the agent reads them */
			djp_put_u32(&b, p->code_args);
			put_code(&b, &p->value_code);
			put_code(&b, &p->cond_code);
			djp_put_u32(&b, p->nkeycode);
			for (unsigned k = 0; k < p->nkeycode && k < DJP_AGG_MAX_KEY_ARGS; k++)
				put_code(&b, &p->key_code[k]);
		}
	}
	n = request(s, DJP_MSG_TABLES, &b, DJP_MSG_TABLES_FD, &fd);
	if (n < 0)
		return (int)n;
	if (n != 8 || fd < 0) {
		if (fd >= 0)
			close(fd);
		return bad_reply(s, "TABLES");
	}
	s->tables = djp_tables_open(fd);
	close(fd);
	if (!s->tables || djp_tables_nplans(s->tables) != s->nagg_plans) {
		int err = s->tables ? -EPROTO : -errno;
		djp_tables_close(s->tables);
		s->tables = NULL;
		s->errcode = err;
		snprintf(s->errmsg, sizeof(s->errmsg), "cannot map the aggregation tables: %s", strerror(-err));
		return err;
	}
	return 0;
}

int session_ring(struct session *s)
{
	static struct djp_pbuf b;
	const struct djp_clock_params *rate;
	int fd = -1;
	long n;

	djp_pbuf_init(&b);
	djp_put_u32(&b, s->snapshot ? DJP_RING_OVERWRITE : DJP_RING_DISCARD);
	djp_put_u32(&b, 0);
	djp_put_u64(&b, s->buffer_size);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, s->str_bound);
	/* the TSC's rate, measured here once for every process traced */
	rate = djp_clock_params();
	djp_put_u32(&b, rate->kind);
	djp_put_u32(&b, rate->shift);
	djp_put_u64(&b, rate->mult);
	djp_put_u64(&b, rate->raw_hz);
	n = request(s, DJP_MSG_RING, &b, DJP_MSG_RING_FD, &fd);
	if (n < 0)
		return (int)n;
	if (n != 8 || fd < 0) {
		if (fd >= 0)
			close(fd);
		return bad_reply(s, "RING");
	}
	s->cons = djp_consumer_open(fd);
	if (!s->cons) {
		int err = -errno;
		close(fd);
		s->errcode = err;
		snprintf(s->errmsg, sizeof(s->errmsg), "cannot map the ring buffers: %s", strerror(-err));
		return err;
	}
	s->ring_fd = fd;
	return marker_log(s);
}

int session_marker_log_read(struct session *s)
{
	static struct djp_mlog_entry e;
	int n, err;

	while ((n = djp_mlog_next(&s->mlog, &e)) > 0)
		if ((err = session_marker_add(s, e.id, e.addr, e.nargs, e.name, e.format, e.object)))
			return err;
	if (n < 0 && !s->mlog_bad_said) {
		s->mlog_bad_said = true;
		fprintf(stderr, "djp: process %d: its marker log is malformed; markers loaded later are asked for\n",
			(int)s->pid);
	}
	return n < 0 ? n : 0;
}

/* LIST from s->next_id: MARKERS frames, then OK. */
int session_list(struct session *s)
{
	static struct djp_pbuf b;
	static char name[DJP_PROTO_STR_MAX + 1], format[DJP_PROTO_STR_MAX + 1], object[DJP_PROTO_STR_MAX + 1];
	unsigned type;
	long n;
	int err;

	if (!s->alive)
		return -ECONNRESET;
	djp_pbuf_init(&b);
	djp_put_u32(&b, s->next_id);
	err = djp_proto_send(s->fd, DJP_MSG_LIST, &b, -1);
	if (err) {
		s->alive = false;
		return err;
	}
	while ((n = recv_reply(s, &type, NULL)) >= 0) {
		struct djp_preader r;
		uint32_t count;
		if (type == DJP_MSG_OK)
			return n == 4 ? 0 : bad_reply(s, "LIST");
		if (type != DJP_MSG_MARKERS)
			return bad_reply(s, "LIST");
		djp_preader_init(&r, s->buf, (size_t)n);
		count = djp_get_u32(&r);
		for (uint32_t i = 0; i < count && !r.bad; i++) {
			uint32_t id = djp_get_u32(&r);
			uint64_t addr = djp_get_u64(&r);
			uint8_t nargs = djp_get_u8(&r);
			djp_get_str(&r, name, sizeof(name));
			djp_get_str(&r, format, sizeof(format));
			djp_get_str(&r, object, sizeof(object));
			if (!r.bad && (err = session_marker_add(s, id, addr, nargs, name, format, object)))
				return err;
		}
		if (!djp_preader_done(&r))
			return bad_reply(s, "LIST");
	}
	return (int)n;
}

/* CONNECT b, its reply CONNECTED probe, sites, and the sites left for a
 * uprobe: the number of sites; those left armed with the pattern's
 * string arguments. */
static int connect_request(struct session *s, struct djp_pbuf *b, unsigned *nsites, uint32_t str_args,
			   unsigned str_bound)
{
	struct djp_preader r;
	long n = request(s, DJP_MSG_CONNECT, b, DJP_MSG_CONNECTED, NULL);
	uint32_t nleft, *ids;
	uint64_t *addrs;
	int err;

	if (n < 0)
		return (int)n;
	djp_preader_init(&r, s->buf, (size_t)n);
	djp_get_u32(&r);
	*nsites = djp_get_u32(&r);
	nleft = djp_get_u32(&r);
	if (r.bad || nleft > (size_t)n / 12)
		return bad_reply(s, "CONNECT");
	ids = calloc(nleft + 1, sizeof(*ids));
	addrs = calloc(nleft + 1, sizeof(*addrs));
	for (uint32_t i = 0; ids && addrs && i < nleft; i++) {
		ids[i] = djp_get_u32(&r);
		addrs[i] = djp_get_u64(&r);
	}
	if (!ids || !addrs)
		err = -ENOMEM;
	else if (!djp_preader_done(&r))
		err = bad_reply(s, "CONNECT");
	else
		err = nleft ? session_uprobes_arm(s, ids, addrs, nleft, str_args, str_bound) : 0;
	free(ids);
	free(addrs);
	if (err && err != -EPROTO)
		s->errcode = err;
	return err;
}

/* Leave the sites no jump can reach to the kernel's uprobe?  When the
 * source asks it and nothing the connect wants is only the engine's to
 * give (its aggregation, the stack, the registers, typed loads, the CPU:
 * none is in a uprobe's event). */
static unsigned kernel_trap_flag(const struct session *s, unsigned flags)
{
	const char *why;
	if (!s->kernel_trap || s->has_loads ||
	    (flags & (DJP_CONNECT_AGG | DJP_CONNECT_USTACK | DJP_CONNECT_REGS | DJP_CONNECT_REGS_STACK |
		      DJP_CONNECT_INT3 | DJP_CONNECT_CPU)))
		return 0;
	return session_uprobes_usable(&why) ? DJP_CONNECT_KERNEL_TRAP : 0;
}

int session_connect(struct session *s, const char *pattern, unsigned flags, uint32_t str_args, unsigned str_bound,
		    unsigned *nsites)
{
	static struct djp_pbuf b;

	djp_pbuf_init(&b);
	djp_put_str(&b, pattern);
	djp_put_u32(&b, flags | kernel_trap_flag(s, flags));
	djp_put_u32(&b, str_args);
	djp_put_u32(&b, str_bound);
	return connect_request(s, &b, nsites, str_args, str_bound);
}

int session_loads(struct session *s, const struct djp_load_site *v, unsigned n)
{
	static struct djp_pbuf b;
	long got;

	for (unsigned i = 0; i < n; i++) {
		djp_pbuf_init(&b);
		djp_put_str(&b, v[i].provider);
		djp_put_str(&b, v[i].name);
		djp_put_u64(&b, v[i].site);
		djp_put_u32(&b, v[i].n);
		for (unsigned k = 0; k < v[i].n; k++)
			djp_load_put(&b, &v[i].prog[k]);
		if ((got = request(s, DJP_MSG_LOADS, &b, DJP_MSG_OK, NULL)) < 0)
			return (int)got;
		s->has_loads = true;
	}
	return 0;
}

int session_connect_agg(struct session *s, const char *pattern, unsigned flags, unsigned plan, unsigned *nsites)
{
	static struct djp_pbuf b;

	djp_pbuf_init(&b);
	djp_put_str(&b, pattern);
	djp_put_u32(&b, flags | DJP_CONNECT_AGG);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, 0);
	djp_put_u32(&b, plan);
	return connect_request(s, &b, nsites, 0, 0);
}

/* A request answered by OK u32: 0 or -errno. */
static int request_ok(struct session *s, unsigned type, struct djp_pbuf *b)
{
	long n = request(s, type, b, DJP_MSG_OK, NULL);
	return n < 0 ? (int)n : n == 4 ? 0 : bad_reply(s, djp_msg_name(type));
}

/* ... with no payload */
static int simple(struct session *s, unsigned type)
{
	static struct djp_pbuf b;
	djp_pbuf_init(&b);
	return request_ok(s, type, &b);
}

int session_vars(struct session *s, const struct djp_var_want *v, unsigned n, uint64_t *runtime)
{
	static struct djp_pbuf b;
	struct djp_preader r;
	long len;

	djp_pbuf_init(&b);
	djp_put_u32(&b, n);
	for (unsigned i = 0; i < n; i++) {
		djp_put_str(&b, v[i].object);
		djp_put_u64(&b, v[i].addr);
		djp_put_u8(&b, (uint8_t)v[i].size);
		djp_put_u16(&b, (uint16_t)v[i].str_bound);
	}
	len = request(s, DJP_MSG_VARS, &b, DJP_MSG_OK, NULL);
	if (len < 0)
		return (int)len;
	djp_preader_init(&r, s->buf, (size_t)len);
	if (djp_get_u32(&r) != n)
		return bad_reply(s, "VARS");
	for (unsigned i = 0; i < n; i++)
		runtime[i] = djp_get_u64(&r);
	return djp_preader_done(&r) ? 0 : bad_reply(s, "VARS");
}

int session_start(struct session *s)
{
	return simple(s, DJP_MSG_START);
}

int session_follow(struct session *s, const char *name)
{
	static struct djp_pbuf b;
	djp_pbuf_init(&b);
	djp_put_str(&b, name);
	return request_ok(s, DJP_MSG_FOLLOW, &b);
}

int session_bye(struct session *s)
{
	int err;
	session_uprobes_detach(s); /* nothing fires after the agent's last word */
	err = simple(s, DJP_MSG_BYE);
	s->alive = false;
	return err;
}

int session_stats(struct session *s)
{
	static struct djp_pbuf b;
	struct djp_preader r;
	uint32_t n;
	long len;

	djp_pbuf_init(&b);
	len = request(s, DJP_MSG_STATS, &b, DJP_MSG_STATS_REPLY, NULL);
	if (len < 0)
		return (int)len;
	djp_preader_init(&r, s->buf, (size_t)len);
	s->misses = djp_get_u64(&r);
	djp_get_u64(&r); /* lost_noslot: the ring header says it too */
	n = djp_get_u32(&r);
	for (uint32_t i = 0; i < n && !r.bad; i++) {
		djp_get_u32(&r); /* per-thread counts: the ring has them */
		djp_get_u64(&r);
		djp_get_u64(&r);
		djp_get_u64(&r);
	}
	n = djp_get_u32(&r);
	for (uint32_t i = 0; i < n && !r.bad; i++) {
		uint32_t id = djp_get_u32(&r);
		uint64_t lost = djp_get_u64(&r);
		if (id < s->nmarkers)
			s->markers[id].lost = lost;
		else
			s->lost_unattributed += lost;
	}
	s->arm_errors = djp_get_u32(&r);
	s->arm_error_last = (int)djp_get_u32(&r);
	if (!djp_preader_done(&r))
		return bad_reply(s, "STATS");
	s->stats_ok = true;
	return 0;
}

void session_end(struct session *s)
{
	if (!s->alive)
		return;
	session_stats(s); /* lost events per marker, misses */
	session_bye(s);	  /* disarmed when it answers */
}
