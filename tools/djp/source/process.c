/*
 * The process source of `djp trace`: a launched (-c) or attached (-x)
 * process, its children of fork and the programs they exec, each through
 * a session with its agent (tools/djp/session/session.h).
 *
 * open:  launch the command with the agent preloaded, or attach to the
 *        process (the agent injected when it has none); the command waits
 *        in the agent's constructor.
 * arm:   HELLO, RING, TABLES, LIST, then CONNECT the recorder to each
 *        pattern (PATTERN=FORMAT: the session prints its markers with
 *        FORMAT and copies its %s arguments).  A pattern that matches
 *        nothing is an error, unless the -c command's process may be a
 *        wrapper that execs the program that has it (then kept pending,
 *        and said); the processes that dial in later (FOLLOW) get the same.
 * start: START: the command runs its main.
 * next:  a round at a time.  A round drains every process in turn (the
 *        main one, then the children), each drain's events in time order
 *        (session.c), handing them out one by one; a child that had
 *        exited before a drain that found nothing is released (its
 *        summary kept as text, its rings and table let go).  After a
 *        round, processes that dialled in are configured (a few ms'
 *        worth), and next() returns DJP_SRC_TIMEOUT so that the consumer
 *        checks its own ends (^C, --duration, a failed write).  Before the
 *        next round it sees whether the target ended (the command exited;
 *        the process died, or its agent went without an exec to follow),
 *        then DJP_SRC_END, and otherwise waits for the agents' sockets, a
 *        process dialling in, or a few ms: at once again after a busy
 *        round, every 5 ms while events come, backing off to 20 ms.  In
 *        --snapshot mode a round drains only when SIGUSR1 asked.
 * stop:  STATS and BYE to every process (the agent disarms before it
 *        answers); next() then makes one last round, whatever the mode,
 *        and says the end.
 *
 * -a (every process of a program): there is no main process.  arm checks
 * the patterns against the PATHs' files and starts the finder
 * (session/session_all.c), whose processes session_kids_accept attaches
 * one by one as if they had dialled in; each is configured as a child of
 * fork is, its patterns kept pending where it lacks their markers.  One
 * that exits or execs while it is configured keeps what its rings hold,
 * quietly; one whose agent goes later is looked at again by the finder.
 * The rounds drain the kids only, and the trace ends at ^C or --duration.
 *
 * Each event's marker is named here, as the round hands it out: its
 * descriptor is made from the session's table the first time its id comes
 * (the label the agent's full name, the format the session's, which is
 * PATTERN=FORMAT's where one matched), so that an output never asks the
 * agent anything.  An id nobody can name goes out as "marker#ID".
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "kernel/agent/agent.h"
#include "lib/escape.h"
#include "lib/marker_match.h"
#include "lib/markers.h"
#include "tools/djp/session/agg_tables.h"
#include "process.h"
#include "session_desc.h"
#include "tools/djp/grow.h"

#define DRAIN_PERIOD_MS 5
#define DRAIN_IDLE_MS 20
#define BUSY_DRAIN 1024		 /* a round that brought this many: again at once */

static struct session *session_at(struct proc *p, size_t i)
{
	return i ? p->kids.v[i - 1] : &p->s;
}

/* ---- descriptors --------------------------------------------------------- */

static struct proc_descs *descs_of(struct proc *p, struct session *s)
{
	for (size_t i = 0; i < p->ntabs; i++)
		if (p->tabs[i].s == s)
			return &p->tabs[i];
	struct proc_descs *v = realloc(p->tabs, (p->ntabs + 1) * sizeof(*v));
	if (!v)
		abort();
	p->tabs = v;
	p->tabs[p->ntabs] = (struct proc_descs){ .s = s };
	return &p->tabs[p->ntabs++];
}

static void descs_drop(struct proc *p, struct proc_descs *t)
{
	for (uint32_t id = 0; id < t->n; id++)
		free(t->v[id]);
	free(t->v);
	free(t->lost_told);
	*t = p->tabs[--p->ntabs];
}

static const struct djp_ev_desc *desc_of(struct proc *p, struct session *s, uint32_t id)
{
	struct proc_descs *t = p->tab;
	const struct session_marker *m;
	struct djp_ev_desc *d;

	if (id < t->n && t->v[id])
		return t->v[id];
	if (!(m = session_marker_of(s, id))) {
		snprintf(p->unknown_name, sizeof(p->unknown_name), "marker#%u", id);
		p->unknown.id = id;
		return &p->unknown;
	}
	if (id >= t->n) {
		uint32_t n = t->n ? t->n : 64;
		while (n <= id)
			n *= 2;
		void *v = realloc(t->v, n * sizeof(*t->v));
		if (!v)
			abort();
		t->v = v;
		memset(t->v + t->n, 0, (n - t->n) * sizeof(*t->v));
		t->n = n;
	}
	if (!(d = malloc(sizeof(*d))))
		abort();
	session_desc_of_marker(d, id, m);
	return t->v[id] = d;
}

/* ---- configuring a process --------------------------------------------- */

/* What the messages name the target by: the command (escaped: a path may
 * hold anything), or its pid. */
static void where(struct session *s, char *buf, size_t sz)
{
	if (s->cmd)
		djp_escape_c(buf, sz, s->cmd, false);
	else
		snprintf(buf, sz, "process %d", (int)s->pid);
}

/* func:NAME, line:FILE:LINE: instruction probes (docs/TRACE.md) */
static bool is_point(const char *pattern)
{
	return !strncmp(pattern, "func:", 5) || !strncmp(pattern, "line:", 5);
}

/* The -c command's own process has nothing a pattern names: say so and
 * which program that is, since what the trace waits for may never come
 * (a wrapper that runs nothing, or whose program has no such function). */
static void waiting_note(struct session *s, const char *why)
{
	char cmd[1024], msg[4 * sizeof(s->errmsg)], prog[4096];

	fprintf(stderr, "djp: %s: %s in %s, the program that was run; waiting for a program it execs\n",
		djp_escape_c(cmd, sizeof(cmd), s->cmd, false), djp_escape_c(msg, sizeof(msg), why, false),
		djp_escape_c(prog, sizeof(prog), s->program[0] ? s->program : "?", false));
}

static int config_steps(struct proc *p, struct session *s, bool launched, bool start, char *errline,
			size_t errsz);

/* -a, and -x's process: a process that exited while it was configured
 * (once its probes were armed, the next request met a closed session) is
 * no error: the rings it has hold what it recorded (s->cons), or there is
 * nothing. */
static bool exited_meanwhile(const struct proc *p, const struct session *s)
{
	bool attached = s == &p->s && !s->cmd && !p->all;
	uint64_t id;
	if (!attached && (!p->all || s == &p->s))
		return false;
	if (s->errcode != -ECONNRESET && s->errcode != -EPIPE)
		return !attached && session_process_exiting(s->pid);
	/* The agent closed the session: the process is exiting (the
	 * kernel marks it so before its descriptors close; becoming a
	 * zombie may take it long after, under load), or it exec'd, and
	 * the finder looks at its new program. */
	for (int i = 0; i < 100 && !session_process_exiting(s->pid); i++) {
		if ((id = session_exec_id(s->pid)) && id != s->exec_id)
			return true;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	return session_process_exiting(s->pid);
}

/* Ring, marker table, patterns, FOLLOW, and START when `start` (a child of
 * fork; the main process's START is start()'s).  `launched`: a launched
 * command or a child of fork, whose patterns may wait for its exec.  0,
 * or 1 after one line on stderr; -a: 2, quietly, when the process exited
 * meanwhile (kept if it has rings). */
static int configure(struct proc *p, struct session *s, bool launched, bool start)
{
	char errline[8192];
	int rc = config_steps(p, s, launched, start, errline, sizeof(errline));
	if (rc && exited_meanwhile(p, s))
		return s->cons ? 2 : 3;
	if (rc)
		fprintf(stderr, "%s\n", errline);
	return rc;
}

static int config_steps(struct proc *p, struct session *s, bool launched, bool start, char *errline, size_t errsz)
{
	char what[1024], msg[4 * sizeof(s->errmsg)], pat[4 * DJP_AGENT_PATTERN_MAX + 4];
	unsigned nsites;

	where(s, what, sizeof(what));
	/* -a: the marker table is learnt from the marker log as events come
	 * (session_marker_of): a LIST is a tenth of a process's attach */
	if (session_hello(s) || session_ring(s) || session_tables(s) || (!p->all && session_list(s))) {
		snprintf(errline, errsz, "djp: %s: %s", what, djp_escape_c(msg, sizeof(msg), s->errmsg, false));
		return 1;
	}
	/* FOLLOW before the first site is armed: a process that forks as
	 * soon as it sees a site armed (a test, a server told to) would
	 * otherwise fork before the agent knows where to dial, and the
	 * child would run untraced, unsaid */
	if (s == &p->s ? session_kids_listen(&p->kids, s) : session_kids_follow(&p->kids, s)) {
		snprintf(errline, errsz, "djp: %s: %s", what, djp_escape_c(msg, sizeof(msg), s->errmsg, false));
		return 1;
	}
	for (int i = 0; i < p->npatterns; i++) {
		unsigned how = p->int3 ? DJP_CONNECT_INT3 : 0;
		if (session_connect(s, p->patterns[i], how, p->str_args[i], 0, &nsites) == 0) {
			p->matched[i] = true; /* not pending: it matched */
			continue;
		}
		/* -a: a process of the program need not have every pattern's
		 * markers; kept for the objects it loads */
		if (s->errcode == -ENOENT && p->all &&
		    session_connect(s, p->patterns[i], how | DJP_CONNECT_PENDING, p->str_args[i], 0, &nsites) == 0)
			continue;
		/* a wrapper (runuser, env, a shim) or a child that has not
		 * exec'd yet: kept for what it loads or execs; one that never
		 * matches is said at the end (unmatched()) */
		if (s->errcode == -ENOENT && (launched || s->cmd) && session_may_be_wrapper(s, p->s.cmd)) {
			char why[sizeof(s->errmsg)]; /* the agent's: "pattern 'P': matches no ..." */
			snprintf(why, sizeof(why), "%s", s->errmsg);
			if (session_connect(s, p->patterns[i], how | DJP_CONNECT_PENDING, p->str_args[i], 0, &nsites) ==
			    0) {
				if (s == &p->s)
					waiting_note(s, why);
				continue;
			}
		}
		if (s->errcode == -ENOENT && !is_point(p->patterns[i]))
			snprintf(errline, errsz, "djp: %s: pattern '%s' matches no marker", what,
				djp_escape_c(pat, sizeof(pat), p->patterns[i], false));
		else
			snprintf(errline, errsz, "djp: %s: %s", what, djp_escape_c(msg, sizeof(msg), s->errmsg, false));
		return 1;
	}
	if (start && session_start(s)) {
		snprintf(errline, errsz, "djp: %s: %s", what, djp_escape_c(msg, sizeof(msg), s->errmsg, false));
		return 1;
	}
	return 0;
}

/* A child of fork dialling in: the same patterns and FOLLOW, then START
 * (its fork returns then). */
static void take_kid(void *ctx, struct session *k)
{
	struct proc *p = ctx;
	/* START releases a child of fork waiting for it; a process -a
	 * attached (attach_pid) waits for nothing: a round trip saved */
	int rc = configure(p, k, !p->all, !p->all || !k->attach_pid);
	if (rc == 2) { /* -a: it exited or exec'd meanwhile; what it recorded is read */
		k->alive = false;
		k->end_note = "ended during the trace";
		session_kids_keep(&p->kids, k);
		session_all_look(p->kids.all, k->pid); /* its new program, if it exec'd */
	} else if (rc) {
		if (p->all) /* said in one line: not again */
			session_all_failed(p->kids.all, k->pid);
		session_discard(k);
	} else
		session_kids_keep(&p->kids, k);
}

static void accept_kids(struct proc *p)
{
	session_kids_accept_for(&p->kids, &p->s, SESSION_KIDS_ACCEPT_NS, take_kid, p);
}

/* A process of an -x trace that exec'd: the agent injected again and the
 * same patterns armed (session_kids.c). */
static void follow_exec(struct proc *p, struct session *gone)
{
	struct session *c = session_kids_exec(&p->s, gone);
	gone->end_note = "ended during the trace";
	if (!c)
		return;
	gone->end_note = "exec'd; traced on in the block of its new program";
	if (configure(p, c, false, false))
		session_discard(c);
	else
		session_kids_keep(&p->kids, c);
}

/* A child whose agent is gone (it exited, was killed or exec'd): its rings
 * stay mapped here, for the last drain, and hold its events up to its
 * end; one that exec'd is followed. */
static void kid_gone_cb(void *ctx, struct session *k)
{
	struct proc *p = ctx;
	if (!p->all) {
		follow_exec(p, k);
		return;
	}
	/* -a: whether the program it exec'd is one of them is the finder's
	 * question, as for any exec */
	uint64_t now = session_exec_id(k->pid);
	k->end_note = now && now != k->exec_id ? "exec'd" : "ended during the trace";
	session_all_look(p->kids.all, k->pid);
}

/* ---- the rounds ------------------------------------------------------------ */

static void begin_session(struct proc *p)
{
	struct session *s = session_at(p, p->cur);
	p->tab = descs_of(p, s);
	p->cur_gone = !s->alive; /* gone before its drain: the drain sees all it wrote */
	p->cur_total = 0;
	p->drain_due = true;
	p->bi = s->batch.n; /* the last round's batch is spent */
}

static void begin_round(struct proc *p)
{
	p->in_round = true;
	p->round_total = 0;
	p->cur = p->all; /* -a: no main process, only the kids */
	if (p->cur <= p->kids.n)
		begin_session(p);
}

/* The file name of a program's path: its execname, as the outputs that
 * name processes want it. */
static const char *program_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static void fill(struct proc *p, struct session *s, struct djp_ev *ev)
{
	size_t i = p->bi++;
	const struct djp_event *e = session_event(s, i);
	uint64_t ns = djp_clock_to_ns(djp_consumer_clock(s->cons), e->timestamp);

	ev->desc = desc_of(p, s, e->marker_id);
	ev->ts_ns = p->src.want_monotonic ? ns : ns + (uint64_t)p->mono_to_real;
	ev->pid = (int32_t)s->pid;
	ev->tid = (int32_t)session_event_tid(s, i);
	ev->comm = s->program[0] ? program_name(s->program) : NULL;
	ev->cpu = p->src.want_cpu ? djp_event_cpu(e) : -1;
	ev->ustack = NULL;
	ev->nustack = 0;
	ev->regs = NULL;
	ev->nregs = 0;
	ev->nvar_strs = 0;
	ev->loads = NULL;
	ev->nloads = 0;
	ev->nargs = e->nargs < DJP_EV_MAX_ARGS ? e->nargs : DJP_EV_MAX_ARGS;
	for (unsigned a = 0; a < ev->nargs; a++) {
		uint64_t flags = 0;
		ev->args[a] = (int64_t)e->args[a];
		ev->strs[a] = djp_event_str(e, a, NULL, &flags);
		ev->str_fault[a] = flags & DJP_STR_FAULT;
		ev->str_cut[a] = flags & DJP_STR_TRUNCATED;
	}
}

/* The round goes on: the next batch of the process being drained, or the
 * next process.  false when the round is over. */
static bool round_step(struct proc *p)
{
	struct session *s = session_at(p, p->cur);

	if (p->drain_due) {
		long n = session_drain(s);
		p->bi = 0;
		if (n > 0) {
			p->cur_total += n;
			p->drain_due = s->more; /* the drain stopped at its bound */
			return true;
		}
		p->drain_due = false;
		p->bi = s->batch.n;
	}
	p->round_total += p->cur_total;
	if (p->cur && p->cur_gone && !p->cur_total && session_process_exited(s->pid) && proc_release_kid(p, s)) {
		descs_drop(p, p->tab);
		session_kids_remove(&p->kids, p->cur - 1); /* the next one moves into its place */
	} else {
		p->cur++;
	}
	if (p->cur > p->kids.n)
		return false;
	begin_session(p);
	return true;
}

/* Between rounds: has the target ended (its reason in end_why)?  If not,
 * wait for something to do. */
static bool ended(struct proc *p)
{
	struct session *s = &p->s;
	long n = p->round_total;

	if (p->all) /* ends at ^C or --duration only */
		goto wait;
	if (s->cmd && session_reap(s, 0)) {
		p->src.end_why = "the command exited";
		return true;
	}
	/* while its agent answers, the process lives (its death hangs the
	 * socket up, which wakes session_kids_wait) */
	if (!s->cmd && !s->alive && session_process_exited(s->pid)) {
		p->src.end_why = "the process exited";
		return true;
	}
wait:
	/* Drain again at once when busy, every 5 ms while events come, and
	 * back off to 20 ms while none do: a quiet process costs the machine
	 * less, and 20 ms of events fit a ring at any rate short of a million
	 * a second per thread. */
	if (n >= BUSY_DRAIN)
		p->idle_ms = 0;
	else if (n > 0)
		p->idle_ms = DRAIN_PERIOD_MS;
	else if ((p->idle_ms = p->idle_ms * 2 + 1) > DRAIN_IDLE_MS)
		p->idle_ms = DRAIN_IDLE_MS;
	if (session_kids_wait(&p->kids, s, p->idle_ms, kid_gone_cb, p))
		p->dialled = true;
	if (p->all)
		return false;
	/* The agent gone: the process exited, exec'd or crashed.  A -c trace
	 * lasts as long as the command (a shell may go on after the traced
	 * process); -x ends here unless it exec'd and is traced again. */
	if (session_agent_gone(s, 0) && !s->cmd) {
		if (session_process_exited(s->pid)) {
			p->src.end_why = "the process exited";
			return true;
		}
		size_t kids = p->kids.n;
		if (!s->exec_followed) {
			follow_exec(p, s);
			p->main_exec_traced = p->kids.n > kids;
		}
		if (!p->main_exec_traced) {
			p->src.end_why = "the agent closed the session";
			return true;
		}
	}
	return false;
}

static int proc_next(struct djp_source *src, struct djp_ev *ev, uint64_t deadline)
{
	struct proc *p = (struct proc *)src;

	(void)deadline; /* a round at a time: the consumer looks at its clock between */
	for (;;) {
		if (p->in_round) {
			struct session *s = p->cur <= p->kids.n ? session_at(p, p->cur) : NULL;
			if (s && p->bi < s->batch.n) {
				fill(p, s, ev);
				return DJP_SRC_EVENT;
			}
			if (s && round_step(p))
				continue;
			p->in_round = false;
			if (p->stopped) {
				p->last_round_done = true;
				return DJP_SRC_END;
			}
			if (p->dialled) {
				p->dialled = false;
				accept_kids(p);
			}
			if (!p->counting) /* --snapshot: no events to pace by */
				p->round_total = 0;
			p->after_round = true;
			return DJP_SRC_TIMEOUT;
		}
		if (p->stopped) {
			if (p->last_round_done)
				return DJP_SRC_END;
			begin_round(p);
			continue;
		}
		if (p->after_round) {
			p->after_round = false;
			if (ended(p))
				return DJP_SRC_END;
		}
		/* --snapshot: the rings are read on SIGUSR1 only */
		p->counting = !p->s.snapshot;
		if (p->s.snapshot && !(p->snapshot_asked && *p->snapshot_asked)) {
			p->round_total = 0;
			p->after_round = true;
			if (p->dialled) {
				p->dialled = false;
				accept_kids(p);
			}
			return DJP_SRC_TIMEOUT;
		}
		if (p->s.snapshot)
			*p->snapshot_asked = 0;
		begin_round(p);
	}
}

/* ---- the rest of the interface -------------------------------------------- */

/* Does a marker of one of -a's PATHs match pattern? */
static bool paths_have(const struct proc *p, const char *pattern)
{
	bool match = false;
	for (unsigned f = 0; f < p->nall_paths && !match; f++) {
		struct djp_marker_list *l;
		char why[256];
		if (djp_markers_read_file(p->all_paths[f], DJP_READ_NO_DWARF, &l, why, sizeof(why)))
			continue;
		for (size_t i = 0; i < l->count && !match; i++)
			match = djp_marker_match(pattern, l->v[i].provider, l->v[i].name);
		djp_marker_list_free(l);
	}
	return match;
}

/* -a: the patterns checked against the PATHs' files (one that matches no
 * marker of theirs is an error, as it is in a process), or, with no PATH,
 * markers only; then the processes are looked for.  0, or -EINVAL after
 * one line on stderr. */
static int arm_all(struct proc *p)
{
	char err[512], pat[4 * DJP_AGENT_PATTERN_MAX + 4], path[4096];
	struct session_all *all;
	const char *deaf;

	for (int i = 0; i < p->npatterns; i++) {
		djp_escape_c(pat, sizeof(pat), p->patterns[i], false);
		if (is_point(p->patterns[i])) {
			if (p->nall_paths)
				continue; /* the agent resolves it in each process */
			fprintf(stderr,
				"djp: -a: pattern '%s': a function or line needs a PATH (djp trace -a PATH %s)\n", pat,
				pat);
			return -EINVAL;
		}
		if (p->nall_paths && !paths_have(p, p->patterns[i])) {
			fprintf(stderr, "djp: -a: pattern '%s' matches no marker in %s%s\n", pat,
				djp_escape_c(path, sizeof(path), p->all_paths[0], false),
				p->nall_paths > 1 ? " nor the other PATHs" : "");
			return -EINVAL;
		}
	}
	if (!(all = session_all_open(p->all_paths, p->nall_paths, p->patterns, (unsigned)p->npatterns, err,
				     sizeof(err)))) {
		fprintf(stderr, "djp: -a: %s\n", djp_escape_c(pat, sizeof(pat), err, false));
		return -EINVAL;
	}
	if ((deaf = session_all_deaf(all)))
		fprintf(stderr,
			"djp trace: -a: the kernel's process events cannot be heard (%s): the "
			"processes running now are traced, with the children they fork, not those started later\n",
			deaf);
	session_kids_listen_all(&p->kids, all);
	return 0;
}

static int proc_arm(struct djp_source *src, const uint32_t *ids, unsigned n, const struct djp_arm_glob *globs,
		    unsigned nglobs)
{
	struct proc *p = (struct proc *)src;
	struct session *s = &p->s;
	int rc;

	(void)ids, (void)n; /* patterns, not descriptors */
	p->patterns = calloc(nglobs + 1, sizeof(*p->patterns));
	p->formats = calloc(nglobs + 1, sizeof(*p->formats));
	p->str_args = calloc(nglobs + 1, sizeof(*p->str_args));
	p->matched = calloc(nglobs + 1, sizeof(*p->matched));
	if (!p->patterns || !p->formats || !p->str_args || !p->matched) {
		fprintf(stderr, "djp: out of memory\n");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < nglobs; i++) {
		p->patterns[i] = globs[i].glob;
		p->formats[i] = p->fmt_of ? p->fmt_of[i] : NULL;
		p->str_args[i] = globs[i].str_args;
	}
	p->npatterns = (int)nglobs;
	p->int3 = src->want_int3;
	s->fmt_patterns = (char *const *)p->patterns;
	s->fmt_formats = p->formats;
	s->nfmt = p->npatterns;
	if (p->all)
		return arm_all(p);
	rc = configure(p, s, s->cmd != NULL, false);
	if (rc == 0)
		return 0;
	if (rc == 2) { /* -x: it exited as it was armed; its rings are read */
		s->alive = false;
		return 0;
	}
	if (rc == 3) /* -x: it exited before it had rings: said, as an error */
		fprintf(stderr, "djp: process %d: it exited before it could be traced\n", (int)s->pid);
	/* Nothing stays armed: a command that never ran its main is killed;
	 * an attached process is told BYE (or sees the session end), which
	 * disarms. */
	if (s->cmd)
		session_kill_unstarted(s);
	else if (s->alive)
		session_bye(s);
	return -EINVAL;
}

static int proc_start(struct djp_source *src)
{
	struct proc *p = (struct proc *)src;

	if (session_start_command(&p->s)) {
		session_kill_unstarted(&p->s);
		return -EIO;
	}
	return 0;
}

/* Counts, then BYE, to every process: disarmed when they answer. */
static int proc_stop(struct djp_source *src)
{
	struct proc *p = (struct proc *)src;
	session_kids_end(&p->kids, &p->s);
	p->stopped = true;
	p->in_round = p->after_round = p->last_round_done = false;
	return 0;
}

/* Does a marker a process loaded later (dlopen) match pattern i? */
static bool matched_later(struct proc *p, int i)
{
	for (size_t k = 0; k <= p->kids.n; k++) {
		struct session *s = session_at(p, k);
		for (uint32_t id = 0; id < s->nmarkers && !is_point(p->patterns[i]); id++) {
			const struct session_marker *m = &s->markers[id];
			size_t plen;
			const char *name = m->known ? djp_marker_split(m->name, &plen) : NULL;
			if (name && djp_marker_match_n(p->patterns[i], m->name, plen, name))
				return true;
		}
	}
	return false;
}

/* A -c command's patterns that matched nothing in any of its programs
 * (they were kept for the program a wrapper would exec, which never came
 * or never had them): one line each, naming the program that was run, and
 * true.  A pattern that matches nothing is an error. */
static bool unmatched(struct proc *p)
{
	char pat[1024], prog[4096], cmd[4096], last[4096 + 64] = "";
	bool any = false;

	/* the last program the command's own process exec'd */
	for (size_t k = p->kids.n; k-- > 0;)
		if (p->kids.v[k]->pid == p->s.pid && p->kids.v[k]->program[0]) {
			snprintf(last, sizeof(last), ", nor in the programs it exec'd (the last: %s)",
				 djp_escape_c(prog, sizeof(prog), p->kids.v[k]->program, false));
			break;
		}
	for (int i = 0; i < p->npatterns; i++) {
		if (p->matched[i] || matched_later(p, i))
			continue;
		fprintf(stderr, "djp: %s: pattern '%s' matched nothing in %s, the program that was run%s\n",
			djp_escape_c(cmd, sizeof(cmd), p->s.cmd, false),
			djp_escape_c(pat, sizeof(pat), p->patterns[i], false),
			djp_escape_c(prog, sizeof(prog), p->s.program[0] ? p->s.program : "?", false), last);
		any = true;
	}
	return any;
}

/* -c: the command's exit status (128 + signal when it was killed), ending
 * it first if the trace ended before it did, and 1 when a pattern matched
 * nothing in it; -x: 0. */
static int proc_exit_status(struct djp_source *src)
{
	struct proc *p = (struct proc *)src;
	struct session *s = &p->s;
	int rc = 1;

	if (!s->cmd)
		return 0; /* -x, -a */
	if (!s->child_done)
		session_stop_child(s);
	if (s->child > 0 && s->child_done) {
		if (WIFEXITED(s->child_status))
			rc = WEXITSTATUS(s->child_status);
		else if (WIFSIGNALED(s->child_status))
			rc = 128 + WTERMSIG(s->child_status);
	}
	return unmatched(p) ? 1 : rc;
}

static uint64_t proc_now(struct djp_source *src)
{
	return djp_clock_ns(src->want_monotonic ? CLOCK_MONOTONIC : CLOCK_REALTIME);
}

/* What the tables of every process counted since the last call (they
 * count the drops of each marker as the recorder makes them). */
static void proc_lost_new(struct djp_source *src, djp_src_lost_new_fn fn, void *ctx)
{
	struct proc *p = (struct proc *)src;
	size_t cur = p->tab ? (size_t)(p->tab - p->tabs) : SIZE_MAX; /* descs_of may move them */

	for (size_t i = 0; i <= p->kids.n; i++) {
		struct session *s = session_at(p, i);
		struct proc_descs *t;
		if (!s->tables)
			continue;
		t = p->tab = descs_of(p, s);
		if (t->nlost_told < s->nmarkers) {
			uint64_t *v = realloc(t->lost_told, s->nmarkers * sizeof(*v));
			if (!v)
				continue;
			memset(v + t->nlost_told, 0, (s->nmarkers - t->nlost_told) * sizeof(*v));
			t->lost_told = v;
			t->nlost_told = s->nmarkers;
		}
		for (uint32_t id = 0; id < s->nmarkers; id++) {
			uint64_t n = djp_tables_lost(s->tables, id);
			if (n > t->lost_told[id]) {
				fn(ctx, desc_of(p, s, id), (int32_t)s->pid, n - t->lost_told[id]);
				t->lost_told[id] = n;
			}
		}
	}
	p->tab = cur < p->ntabs ? &p->tabs[cur] : NULL;
}

static void proc_close(struct djp_source *src)
{
	struct proc *p = (struct proc *)src;
	session_free(&p->s);
	session_kids_free(&p->kids);
	while (p->ntabs)
		descs_drop(p, &p->tabs[0]);
	free(p->tabs);
	if (p->released)
		fclose(p->released);
	free(p->released_text);
	free(p->released_lost);
	free(p->patterns);
	free(p->formats);
	free(p->str_args);
	free(p->matched);
	free(p);
}

static const struct djp_source_ops proc_ops = {
	.arm = proc_arm,
	.start = proc_start,
	.next = proc_next,
	.stop = proc_stop,
	.report = proc_report,
	.lost_new = proc_lost_new,
	.lost_threads = proc_lost_threads,
	.exit_status = proc_exit_status,
	.now_ns = proc_now,
	.close = proc_close,
};

int djp_process_source_open(const struct djp_source_opts *o, struct djp_source **out, char *err, size_t errsz)
{
	struct proc *p = calloc(1, sizeof(*p));

	err[0] = 0;
	if (!p || session_init(&p->s)) {
		free(p);
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	p->kids.follow_fd = -1;
	p->dialled = true;
	p->idle_ms = DRAIN_PERIOD_MS;
	p->s.cmd = o->cmd;
	p->s.attach_pid = o->pid;
	p->s.snapshot = o->snapshot;
	p->s.buffer_size = o->buffer_size;
	p->s.kernel_trap = true; /* sites no jump reaches: the kernel's uprobe, if it may */
	p->s.str_bound = o->str_bound;
	p->snapshot_asked = o->snapshot_asked;
	p->fmt_of = o->formats;
	p->unknown.name = p->unknown.label = p->unknown_name;
	p->unknown.format = "";
	p->unknown.unknown = true;
	p->src.ops = &proc_ops;
	p->all = o->all;
	p->all_paths = o->paths;
	p->nall_paths = o->npaths;
	if (p->all) { /* the processes are looked for at arm, knowing the patterns */
		p->mono_to_real = (int64_t)(djp_clock_ns(CLOCK_REALTIME) - djp_clock_ns(CLOCK_MONOTONIC));
		*out = &p->src;
		return 0;
	}
	if (o->cmd ? session_launch(&p->s) : session_attach(&p->s)) {
		proc_close(&p->src); /* session_launch and session_attach said why */
		return -EIO;
	}
	p->src.target_pid = p->s.pid;
	p->mono_to_real = (int64_t)(djp_clock_ns(CLOCK_REALTIME) - djp_clock_ns(CLOCK_MONOTONIC));
	*out = &p->src;
	return 0;
}
