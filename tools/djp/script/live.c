/*
 * The live event source: a probe script against a launched (-c) or running
 * (-x) process, through the same agent session as `djp trace`.
 *
 * open:  launch the command with the agent preloaded, or attach to the
 *        process's agent; HELLO, RING (the rings' memfd), LIST (the marker
 *        table).  Each site the agent lists becomes one descriptor, with
 *        ids 0..N-1.  Markers of objects loaded later (dlopen) get
 *        descriptors of their own when their first event is drained: the
 *        marker log (or LIST while the agent lives) names them, and the
 *        script engine binds them to its probes then (bind_late).
 * arm:   CONNECT the recorder once per distinct glob of the script's mark
 *        points, so that the engine in the target arms the matching
 *        markers of objects loaded later as well; events of descriptors
 *        the script did not bind are dropped.
 * start: START, which lets a -c command run its main.
 * next:  hand out the events of the session's last drain, which are in time
 *        order (session.c), leaving out those of markers the script did
 *        not bind; when they are used up, drain the rings again, and when nothing came, wait a few
 *        milliseconds (never past the deadline of the engine's next timer).
 *        The end is the command's exit (-c), the process's death or the
 *        session's end (-x); what was recorded until then is still drained.
 * close: STATS and BYE (the agent disarms before it answers), then end a
 *        command that is still running, as `djp trace -c` does.
 *
 * Children of fork (and the program a -c wrapper execs) dial the tool as
 * they do for `djp trace` (FOLLOW, kernel/agent/agent.c): each gets a
 * session with the script's globs, and next() hands out the sessions'
 * batches in turn, each event with its process's pid.
 *
 * Lives: process.begin and process.end have a descriptor each (made at
 * open, after the markers'), whose events this source makes itself from
 * what it sees of the sessions, when the script binds them: begin for
 * the main process at start, and for each process that dials in (a child
 * of fork before its fork returns, a program a process exec'd) as it is
 * kept; end for a process once its agent has gone (it exited, or exec'd:
 * the end of that program) and its rings were drained dry after that,
 * so after all its events, and, at the end of the run, for each process
 * that exited while nobody looked.  A program exec'd ends the one its
 * process ran before it begins.  Each event has the process's pid, its
 * main thread's tid, the name it had at its begin and the program it
 * runs (which process("PATH").begin compares).
 *
 * Listing (-l, -L) with only process("PATH") points and no process is the
 * files source's (tools/djp/source/files.c).  Running such a script with
 * no -c or -x reaches every process of the PATHs (`all`): the finder of
 * djp trace -a (tools/djp/session/session_all.c) hands them to the kids,
 * the main session stays unused, and the descriptors are the files'
 * markers, to which each process's are matched by name and object.
 *
 * Timestamps are CLOCK_MONOTONIC in the rings; the script engine's clock is
 * CLOCK_REALTIME (gettimeofday_ns()), so events are shifted by the offset
 * between the two taken at open.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "run/run.h"
#include "lib/escape.h"
#include "lib/func_symbols.h"
#include "script.h"
#include "site_function.h"
#include "source.h"
#include "run/builtins/tapset.h"
#include "usym.h"
#include "lib/marker_match.h"
#include "lib/markers.h"
#include "tools/djp/session/session.h"
#include "tools/djp/source/session_desc.h"

#define LIVE_POLL_MS 5

struct live {
	struct djp_source src;
	struct session s;
	struct djp_ev_desc *descs;	 /* those known at open */
	struct djp_ev_desc **desc_of_id; /* agent marker id -> descriptor, or NULL */
	uint32_t nids;
	bool *armed;			 /* per descriptor known at open */
	struct djp_ev_desc **late;	 /* descriptors of markers loaded later */
	size_t nlate, caplate;
	int64_t mono_to_real; /* realtime - monotonic, ns */
	char comm[64];
	size_t next; /* the next event of the current session's last drain */
	bool stopped; /* live_stop: disarmed, draining what was recorded */
	bool ended;
	/* Children of fork (FOLLOW) and the programs a -c wrapper execs: a
	 * session each, drained in turn with the main one; `cur` is the one
	 * whose batch is handed out (0: the main one, k + 1: kid k).  They are
	 * forks of the main process, so a marker id means there what it means
	 * in it (checked by name and object: ids may part after a fork). */
	struct session_kids kids;
	size_t cur;
	uint64_t released_lost; /* events lost by kids let go (release_kid) */
	struct djp_arm_glob *globs; /* their glob strings our own */
	unsigned nglobs;
	bool main_exec_traced; /* -x: the process exec'd and is traced again */
	char last_program[1024]; /* the last program the -c process exec'd */
	bool dialled;	       /* a process is dialling in: accept it */
	/* markers of the files that process("PATH") points name and the
	 * process did not have at open (a -c wrapper's program, a child's
	 * exec): read from the files, so that the script binds to them */
	struct djp_marker_list *flist[64];
	char *fobject[64];
	unsigned nflist;
	struct site_functions *fns; /* probefunc()'s answers, made when first asked */
	/* process("PATH") points with no -c or -x: every process of the
	 * PATHs (djp trace -a's finder), each a kid; the main session unused */
	bool all;
	char **all_paths;
	unsigned nall_paths;
	/* lives (the essay): their descriptors, and the events made and not
	 * handed out yet, in order */
	const struct djp_ev_desc *life_desc[DJP_LIFE_END + 1];
	struct life_ev {
		uint8_t life;
		int32_t pid;
		uint64_t ts_ns;
		char comm[64];
		char program[1024];
	} *lives;
	size_t nlives, caplives, next_life;
};

static struct session *session_at(struct live *l, size_t i);

/* The name of process pid now ("" when gone). */
static void comm_of(int32_t pid, char *buf, size_t sz)
{
	char path[64];
	FILE *f;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if ((f = fopen(path, "re"))) {
		if (fgets(buf, (int)sz, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
}

/* An event of life `life` of session s, when the script binds it. */
static void push_life(struct live *l, struct session *s, uint8_t life)
{
	struct life_ev *e;

	if (life == DJP_LIFE_BEGIN) {
		if (s->life_begun)
			return;
		s->life_begun = true;
	} else {
		if (!s->life_begun || s->life_ended)
			return;
		s->life_ended = true;
	}
	if (!l->life_desc[life] || !l->armed[l->life_desc[life]->id])
		return;
	if (l->nlives == l->caplives) {
		size_t n = l->caplives ? 2 * l->caplives : 8;
		void *v = realloc(l->lives, n * sizeof(*l->lives));
		if (!v)
			abort();
		l->lives = v;
		l->caplives = n;
	}
	e = &l->lives[l->nlives++];
	e->life = life;
	e->pid = s->pid;
	e->ts_ns = djp_clock_ns(CLOCK_REALTIME);
	snprintf(e->comm, sizeof(e->comm), "%s", s->life_comm);
	snprintf(e->program, sizeof(e->program), "%s", s->program);
}

/* The name of s's process, for its begin and end: read before it runs
 * (a program whose begin waits may be gone by then), or, when it is gone
 * already, its program's as the kernel names it (15 bytes). */
static void name_life(struct live *l, struct session *s)
{
	const char *base = strrchr(s->program, '/') ? strrchr(s->program, '/') + 1 : s->program;

	if (s->life_comm[0])
		return;
	if (s == &l->s && l->comm[0])
		snprintf(s->life_comm, sizeof(s->life_comm), "%s", l->comm);
	else
		comm_of(s->pid, s->life_comm, sizeof(s->life_comm));
	if (!s->life_comm[0])
		snprintf(s->life_comm, sizeof(s->life_comm), "%.15s", base);
}

/* Process s begins, or, when it is a program that a process of the
 * trace exec'd, once the program it ran before has ended: that one's
 * rings are complete (exec ended its threads) but maybe not drained yet,
 * and its end comes after its last event (end_life). */
static void begin_life(struct live *l, struct session *s)
{
	name_life(l, s);
	for (size_t i = 0; i <= l->kids.n; i++) {
		struct session *p = session_at(l, i);
		if (p != s && p->pid == s->pid && p->life_begun && !p->life_ended && !p->life_next) {
			p->life_next = s;
			s->life_waits = true;
			return;
		}
	}
	push_life(l, s, DJP_LIFE_BEGIN);
}

/* s ended (drained dry after its agent went, or after its process
 * exec'd): its end, then the begin of the program it exec'd. */
static void end_life(struct live *l, struct session *s)
{
	struct session *next = s->life_next;

	push_life(l, s, DJP_LIFE_END);
	s->life_next = NULL;
	if (next) {
		next->life_waits = false;
		push_life(l, next, DJP_LIFE_BEGIN);
	}
}

/* The next life event made, into ev; false when none waits. */
static bool next_life(struct live *l, struct djp_ev *ev)
{
	const struct life_ev *e;

	if (l->next_life == l->nlives) {
		l->nlives = l->next_life = 0;
		return false;
	}
	e = &l->lives[l->next_life++];
	memset(ev, 0, sizeof(*ev));
	ev->desc = l->life_desc[e->life];
	ev->ts_ns = e->ts_ns;
	ev->pid = ev->tid = e->pid;
	ev->comm = e->comm[0] ? e->comm : NULL;
	ev->cpu = -1;
	ev->program = e->program[0] ? e->program : NULL;
	return true;
}

/* At the end of the run: the end of each process that exited (or exec'd,
 * or whose agent went: not at a ^C, which says goodbye to the agents of
 * processes that live on) and was not said; true when one was. */
static bool end_lives(struct live *l)
{
	size_t before = l->nlives;
	bool unblocked = false;

	/* programs exec'd whose begin waits: begun first, and drained
	 * before their own end */
	for (size_t i = 0; i <= l->kids.n; i++) {
		struct session *s = session_at(l, i);
		if (s->life_next) {
			end_life(l, s);
			unblocked = true;
		}
	}
	if (unblocked)
		return true;
	for (size_t i = l->all; i <= l->kids.n; i++) { /* -a: no main process */
		struct session *s = session_at(l, i);
		if ((!s->alive && !l->stopped) || session_process_exited(s->pid))
			end_life(l, s);
	}
	return l->nlives > before;
}

/* CONNECT's flags: patterns kept for objects loaded later, and the CPU
 * of each hit when the script asks cpu() */
static unsigned connect_flags(const struct live *l)
{
	return DJP_CONNECT_PENDING | (l->src.want_cpu ? DJP_CONNECT_CPU : 0) | (l->src.want_int3 ? DJP_CONNECT_INT3 : 0) |
	       (l->src.want_regs == 1 ? DJP_CONNECT_REGS : l->src.want_regs > 1 ? DJP_CONNECT_REGS_STACK : 0);
}

/* A descriptor for a marker met after open; NULL when out of memory. */
static struct djp_ev_desc *late_desc(struct live *l, const struct session_marker *m)
{
	struct djp_ev_desc *d;
	if (l->nlate == l->caplate) {
		size_t n = l->caplate ? 2 * l->caplate : 16;
		void *v = realloc(l->late, n * sizeof(*l->late));
		if (!v)
			return NULL;
		l->late = v;
		l->caplate = n;
	}
	if (!(d = calloc(1, sizeof(*d))))
		return NULL;
	/* ids go on after those of open, in the order they are met */
	session_desc_of_marker(d, l->src.ndescs + (uint32_t)l->nlate, m);
	l->late[l->nlate++] = d;
	return d;
}

/* A descriptor for a marker id first seen in an event: one of an object
 * loaded after open.  NULL when nobody can name it. */
static const struct djp_ev_desc *learn(struct live *l, uint32_t id)
{
	const struct session_marker *m = session_marker_of(&l->s, id);
	struct djp_ev_desc *d;

	if (!m)
		return NULL;
	usym_remember(l->s.pid); /* what it has loaded since */
	/* and from the marker log, written while it lived: it may be gone */
	usym_object(l->s.pid, m->object, m->addr, m->name);
	if (id >= l->nids) {
		uint32_t n = l->nids ? l->nids : 64;
		void *v;
		while (n <= id)
			n *= 2;
		if (!(v = realloc(l->desc_of_id, n * sizeof(*l->desc_of_id))))
			return NULL;
		l->desc_of_id = v;
		memset(l->desc_of_id + l->nids, 0, (n - l->nids) * sizeof(*l->desc_of_id));
		l->nids = n;
	}
	if ((d = late_desc(l, m)))
		l->desc_of_id[id] = d;
	return d;
}

/* The descriptor of an event, or NULL when the script does not want it. */
static const struct djp_ev_desc *wanted(struct live *l, uint32_t id)
{
	const struct djp_ev_desc *d = id < l->nids && l->desc_of_id[id] ? l->desc_of_id[id] : learn(l, id);
	return d && (d->id >= l->src.ndescs || l->armed[d->id]) ? d : NULL;
}

static struct session *session_at(struct live *l, size_t i)
{
	return i ? l->kids.v[i - 1] : &l->s;
}

/* Is d the marker the agent calls m (its full name "provider:name")? */
static bool same_marker(const struct djp_ev_desc *d, const struct session_marker *m)
{
	size_t plen;
	const char *name = djp_marker_split(m->name, &plen);
	return d->provider_len == plen && (!plen || !strncmp(d->provider, m->name, plen)) && !strcmp(d->name, name) &&
	       !strcmp(d->object ? d->object : "", m->object ? m->object : "");
}

/* The descriptor of kid k's event.  A child of fork numbers its markers as
 * the main process does; one that exec'd (or whose ids parted) is matched
 * by name and object, and a marker the main process never had gets a
 * descriptor of its own, bound as a late one. */
static const struct djp_ev_desc *kid_wanted(struct live *l, struct session *k, uint32_t id)
{
	const struct session_marker *km = session_marker_of(k, id), *pm = l->all ? NULL : session_marker_of(&l->s, id);
	if (!km || !km->name)
		return NULL;
	if (pm && pm->name && !strcmp(km->name, pm->name) &&
	    !strcmp(km->object ? km->object : "", pm->object ? pm->object : ""))
		return wanted(l, id);
	for (unsigned i = 0; i < l->src.ndescs; i++)
		if (same_marker(&l->descs[i], km))
			return l->armed[i] ? &l->descs[i] : NULL;
	for (size_t i = 0; i < l->nlate; i++)
		if (same_marker(l->late[i], km))
			return l->late[i];
	k->pinned = true; /* the descriptor points into k's table */
	return late_desc(l, km);
}

/* CONNECT glob g: the recorder, or the handler of its aggregation plan. */
static int connect_glob(struct live *l, struct session *s, const struct djp_arm_glob *g, unsigned flags)
{
	unsigned nsites;
	if (g->plan1)
		return session_connect_agg(s, g->glob, flags & (DJP_CONNECT_PENDING | DJP_CONNECT_INT3), g->plan1 - 1,
					   &nsites);
	(void)l;
	return session_connect(s, g->glob, flags | (g->ustack ? DJP_CONNECT_USTACK : 0), g->str_args, g->str_bound,
			       &nsites);
}

/* Glob g in process k: a point a -c wrapper did not have and that has
 * matched nowhere yet is first connected as one that must match, so that
 * the end knows whether it ever did (live_glob_matched); kept pending
 * where it does not. */
static int connect_kid_glob(struct live *l, struct session *k, struct djp_arm_glob *g)
{
	if (g->now && !g->matched) {
		if (!connect_glob(l, k, g, connect_flags(l) & ~DJP_CONNECT_PENDING)) {
			g->matched = true;
			return 0;
		}
		if (k->errcode != -ENOENT)
			return -1;
	}
	return connect_glob(l, k, g, connect_flags(l));
}

/* Configure another process of the trace as the main session was (ring,
 * tables, globs, FOLLOW), START it when it waits for that, and keep it. */
static void keep_kid(struct live *l, struct session *k, bool start)
{
	uint64_t runtime[DJP_VARS_MAX];
	bool ok = !session_hello(k) && !session_ring(k) && !session_tables(k) &&
		  (!l->src.nvars || !session_vars(k, l->src.vars, l->src.nvars, runtime)) && !session_list(k) &&
		  !session_loads(k, l->src.load_sites, l->src.nload_sites);
	if (ok) {
		tapset_remember(k->pid);
		usym_remember(k->pid);
		name_life(l, k);
		if (k->pid == l->s.pid && k->program[0]) /* the -c process exec'd it */
			snprintf(l->last_program, sizeof(l->last_program), "%s", k->program);
	}
	/* FOLLOW first, as for the main session (live_arm) */
	ok = ok && !session_kids_follow(&l->kids, k);
	for (unsigned i = 0; ok && i < l->nglobs; i++)
		ok = !connect_kid_glob(l, k, &l->globs[i]);
	if (ok && (!start || !session_start(k))) {
		session_kids_keep(&l->kids, k);
		if (l->kids.n && l->kids.v[l->kids.n - 1] == k)
			begin_life(l, k);
	} else if (l->all && k->cons && !k->alive) {
		/* its agent went while it was configured: the process
		 * exited (what its rings hold is read) or exec'd (the finder
		 * looks at its new program) */
		session_kids_keep(&l->kids, k);
		session_all_look(l->kids.all, k->pid);
	} else {
		session_discard(k);
	}
}

/* Kid i, which had exited before a drain that found nothing: its socket,
 * rings and marker table let go at once, so that a fork storm keeps the
 * tool's descriptors and memory flat; its lost events counted for the
 * end.  Not one whose table a late descriptor points into (pinned), nor
 * one with aggregation tables: what they hold reaches the script only at
 * its next merge (agg.c). */
static bool release_kid(struct live *l, size_t i)
{
	struct session *k = l->kids.v[i];
	if (k->pinned || k->nagg_plans || !session_process_exited(k->pid))
		return false;
	if (k->cons)
		l->released_lost += session_count_lost(k);
	session_discard(k);
	session_kids_remove(&l->kids, i);
	return true;
}

static void take_kid(void *ctx, struct session *k)
{
	keep_kid(ctx, k, true);
}

/* Processes dialling in (children of fork, a wrapper's program), a few ms'
 * worth a round, the rings drained between (as djp trace). */
static void accept_kids(struct live *l)
{
	session_kids_accept_for(&l->kids, &l->s, SESSION_KIDS_ACCEPT_NS, take_kid, l);
}

/* A child whose agent hung up (session_kids_wait): one that exec'd in an
 * -x trace gets the agent again. */
static void kid_gone(void *ctx, struct session *gone)
{
	struct live *l = ctx;
	struct session *k;
	if (l->all) { /* the finder tells whether its new program is one */
		session_all_look(l->kids.all, gone->pid);
		return;
	}
	k = session_kids_exec(&l->s, gone);
	if (k)
		keep_kid(l, k, false);
}

/* -c: the command's exit; -x: the process's death, or the agent's end
 * unless the process exec'd and is traced again.  While the agent
 * answers, the process lives. */
static bool target_gone(struct live *l)
{
	struct session *s = &l->s;
	struct session *k;
	bool agent_gone;
	if (l->all) /* ends at ^C, or the script's exit() */
		return false;
	/* asked first in every case: a hung-up socket leaves the poll set */
	agent_gone = session_agent_gone(s, 0);
	if (s->cmd)
		return session_reap(s, 0);
	if (!agent_gone)
		return false;
	if (session_process_exited(s->pid))
		return true;
	if (!s->exec_followed && (k = session_kids_exec(s, s))) {
		size_t n = l->kids.n;
		keep_kid(l, k, false);
		l->main_exec_traced = l->kids.n > n;
	}
	return !l->main_exec_traced;
}

static int live_next(struct djp_source *src, struct djp_ev *ev, uint64_t deadline)
{
	struct live *l = (struct live *)src;
	for (;;) {
		struct session *s = session_at(l, l->cur);
		bool got = false;
		if (next_life(l, ev))
			return DJP_SRC_EVENT;
		while (l->next < s->batch.n) {
			size_t i = l->next++;
			const struct djp_event *e = session_event(s, i);
			const struct djp_ev_desc *d = l->cur ? kid_wanted(l, s, e->marker_id) : wanted(l, e->marker_id);
			unsigned n = e->nargs < DJP_EV_MAX_ARGS ? e->nargs : DJP_EV_MAX_ARGS;
			if (!d)
				continue;
			ev->desc = d;
			ev->ts_ns = djp_clock_to_ns(djp_consumer_clock(s->cons), e->timestamp) + (uint64_t)l->mono_to_real;
			ev->pid = s->pid;
			ev->tid = (int32_t)session_event_tid(s, i);
			ev->comm = l->comm[0] ? l->comm : NULL;
			/* process("PATH").thread.begin compares it */
			ev->program = s->program[0] ? s->program : NULL;
			ev->nargs = n;
			ev->cpu = djp_event_cpu(e);
			ev->ustack = djp_event_ustack(e, &ev->nustack);
			ev->regs = djp_event_regs(e, &ev->nregs);
			/* @var strings after the marker's own arguments */
			ev->nvar_strs = 0;
			if (ev->regs && e->nargs > d->nargs) {
				n = d->nargs < DJP_EV_MAX_ARGS ? d->nargs : DJP_EV_MAX_ARGS;
				for (unsigned i = d->nargs; i < e->nargs && ev->nvar_strs < 4; i++) {
					uint64_t flags = 0;
					ev->var_strs[ev->nvar_strs] = djp_event_str(e, i, NULL, &flags);
					ev->var_str_fault[ev->nvar_strs++] = (flags & DJP_STR_FAULT) || !djp_event_str_addr(e, i);
				}
				ev->nargs = n;
			}
			ev->loads = djp_event_loads(e, &ev->nloads, &ev->loads_faulted, &ev->loads_strs);
			ev->loads_ev = e;
			for (unsigned i = 0; i < n; i++) {
				uint64_t flags = 0;
				ev->strs[i] = djp_event_str(e, i, NULL, &flags);
				ev->str_fault[i] = flags & DJP_STR_FAULT;
				/* a string argument is still its pointer to the script */
				ev->args[i] = (int64_t)(ev->strs[i] ? djp_event_str_addr(e, i) : e->args[i]);
			}
			return DJP_SRC_EVENT;
		}
		if (run_interrupted && !l->stopped)
			return DJP_SRC_TIMEOUT;
		/* The batch is spent: a timer that is due (exit() in one, say)
		 * comes before the next, or a target that never lets the rings
		 * run dry would starve it. */
		if (deadline != UINT64_MAX && djp_clock_ns(CLOCK_REALTIME) >= deadline)
			return DJP_SRC_TIMEOUT;
		/* Spent: emptied, so that it is never handed out again when the
		 * turn below ends on this session without draining it (a kid
		 * let go moves `cur` back onto the one before it). */
		djp_order_reset(&s->batch);
		l->next = 0;
		if (l->dialled && !l->stopped) {
			l->dialled = false;
			accept_kids(l);
		}
		/* the next session with events, in turn, so that none starves */
		for (size_t tries = 0; tries <= l->kids.n && !got; tries++) {
			l->cur = (l->cur + 1) % (l->kids.n + 1);
			s = session_at(l, l->cur);
			/* gone before this drain (or exec'd: its program is
			 * another's now): the drain saw all it wrote */
			bool gone = (l->cur && !s->alive) || s->life_next;
			if (l->all && !l->cur)
				continue; /* no main process */
			if (s->life_waits)
				continue; /* nothing of it before its begin */
			got = session_drain(s) > 0 || s->batch.n;
			if (!got && gone)
				end_life(l, s); /* after all its events */
			if (!got && gone && l->cur && release_kid(l, l->cur - 1))
				l->cur--; /* the next one moved into its place */
		}
		if (got)
			continue;
		if (l->ended && end_lives(l))
			continue;
		if (l->ended)
			return DJP_SRC_END;
		if (target_gone(l)) {
			/* One more drain for what was recorded before the end. */
			l->ended = true;
			continue;
		}
		uint64_t now = djp_clock_ns(CLOCK_REALTIME);
		if (deadline != UINT64_MAX && now >= deadline)
			return DJP_SRC_TIMEOUT;
		uint64_t wait = (uint64_t)LIVE_POLL_MS * 1000000u;
		if (deadline != UINT64_MAX && deadline - now < wait)
			wait = deadline - now;
		if (session_kids_wait(&l->kids, &l->s, (int)(wait / 1000000u), kid_gone, l))
			l->dialled = true;
	}
}

/* process("PATH") points, no -c or -x: the processes of the PATHs are
 * looked for, as djp trace -a does, and each gets the globs (keep_kid). */
static int arm_all(struct live *l)
{
	char err[512], safe[4 * sizeof(err)];
	struct session_all *a = session_all_open((const char *const *)l->all_paths, l->nall_paths, NULL, 0, err,
						 sizeof(err));
	const char *deaf;

	if (!a) {
		fprintf(stderr, "djp: %s\n", djp_escape_c(safe, sizeof(safe), err, false));
		return -EINVAL;
	}
	if ((deaf = session_all_deaf(a)))
		fprintf(stderr,
			"djp: the kernel's process events cannot be heard (%s): the processes of the probe points' "
			"programs running now are traced, with the children they fork, not those started later\n",
			deaf);
	session_kids_listen_all(&l->kids, a);
	return 0;
}

static int live_arm(struct djp_source *src, const uint32_t *ids, unsigned n, const struct djp_arm_glob *globs,
		    unsigned nglobs)
{
	struct live *l = (struct live *)src;
	for (unsigned i = 0; i < n; i++) {
		if (ids[i] >= l->src.ndescs)
			return -EINVAL;
		l->armed[ids[i]] = true;
	}
	/* the tables first: the lost counters, and the target's aggregates */
	l->s.agg_plans = src->agg_plans;
	l->s.nagg_plans = src->nagg_plans;
	l->s.agg_capacity = src->agg_capacity;
	if (!l->all && (session_tables(&l->s) ||
			(src->nvars && session_vars(&l->s, src->vars, src->nvars, src->var_runtime)))) {
		fprintf(stderr, "djp: %s\n", l->s.errmsg);
		return l->s.errcode ? l->s.errcode : -EIO;
	}
	/* the typed accesses' programs, before the patterns of their sites */
	if (session_loads(&l->s, src->load_sites, src->nload_sites)) {
		fprintf(stderr, "djp: %s\n", l->s.errmsg);
		return l->s.errcode ? l->s.errcode : -EIO;
	}
	/* the same globs for the processes that dial in later */
	if (!(l->globs = calloc(nglobs ? nglobs : 1, sizeof(*l->globs))))
		return -ENOMEM;
	for (unsigned i = 0; i < nglobs; i++) {
		l->globs[l->nglobs] = globs[i];
		if (!(l->globs[l->nglobs++].glob = strdup(globs[i].glob)))
			return -ENOMEM;
	}
	if (l->all)
		return arm_all(l);
	/* children of fork dial in; if that cannot be had, the process
	 * only.  Before the first site is armed: a process that forks as
	 * soon as it sees one armed would otherwise fork before its agent
	 * knows where to dial, and the child run untraced, unsaid */
	session_kids_listen(&l->kids, &l->s);
	for (unsigned i = 0; i < nglobs; i++) {
		/* pending: an optional point ('?') may match nothing yet */
		unsigned flags = connect_flags(l) & ~(globs[i].now ? DJP_CONNECT_PENDING : 0u);
		if (!connect_glob(l, &l->s, &l->globs[i], flags)) {
			l->globs[i].matched = !(flags & DJP_CONNECT_PENDING);
			continue;
		}
		/* a function or a line a -c wrapper does not have: kept for
		 * the program it execs, which dials in (as djp trace) */
		if (l->s.errcode == -ENOENT && l->src.wrapper && !(flags & DJP_CONNECT_PENDING) &&
		    !connect_glob(l, &l->s, &globs[i], flags | DJP_CONNECT_PENDING)) {
			char glob[1024], prog[4096];
			fprintf(stderr, "djp: %s matches nothing in %s, the program the command ran; waiting for a "
					"program it execs\n",
				djp_escape_c(glob, sizeof(glob), globs[i].text ? globs[i].text : globs[i].glob, false),
				djp_escape_c(prog, sizeof(prog), l->src.wrapper, false));
			continue;
		}
		char glob[1024], msg[4 * sizeof(l->s.errmsg)];
		fprintf(stderr, "djp: %s: %s\n", djp_escape_c(glob, sizeof(glob), globs[i].glob, false),
			djp_escape_c(msg, sizeof(msg), l->s.errmsg, false));
		return l->s.errcode ? l->s.errcode : -EIO;
	}
	return 0;
}

static int live_start(struct djp_source *src)
{
	struct live *l = (struct live *)src;
	if (!l->all) /* else no main process: each of -a's begins as a kid */
		begin_life(l, &l->s);
	return session_start_command(&l->s);
}

static uint64_t live_now(struct djp_source *src)
{
	(void)src;
	return djp_clock_ns(CLOCK_REALTIME);
}

/* ^C, as stap has it: the probes stop, what they recorded before is read
 * (a count the end probe prints is every hit up to the stop, not those
 * the tool had drained by then), then the end probes run.  Each process
 * is disarmed as `djp trace` ends it (counts, then BYE: disconnect
 * returns when no handler runs), so its ring holds all there will be. */
static int live_stop(struct djp_source *src)
{
	struct live *l = (struct live *)src;
	session_kids_end(&l->kids, &l->s);
	l->stopped = l->ended = true;
	return 0;
}

/* The run is over: every process disarmed as at a ^C (counts, then
 * BYE), so that the tables and the lost counts are final. */
static int live_finish(struct djp_source *src)
{
	return live_stop(src);
}

/* The descriptor of session i's marker id, armed or not. */
static const struct djp_ev_desc *desc_of(struct live *l, size_t i, uint32_t id)
{
	if (i)
		return kid_wanted(l, session_at(l, i), id);
	return id < l->nids && l->desc_of_id[id] ? l->desc_of_id[id] : learn(l, id);
}

static uint64_t live_lost(struct djp_source *src, djp_src_lost_fn fn, void *ctx)
{
	struct live *l = (struct live *)src;
	/* kids let go: their total only; the kernel's uprobes: theirs, for
	 * every process at once (the BPF ring is one) */
	uint64_t lost = l->released_lost + session_uprobes_lost();
	for (size_t i = 0; i <= l->kids.n; i++) {
		struct session *s = session_at(l, i);
		if (!s->cons)
			continue;
		lost += session_count_lost(s); /* and each marker's */
		for (uint32_t id = 0; id < s->nmarkers; id++) {
			const struct djp_ev_desc *d;
			if (s->markers[id].lost && (d = desc_of(l, i, id)))
				fn(ctx, d, s->markers[id].lost);
		}
	}
	return lost;
}

struct agg_read_ctx {
	struct live *l;
	size_t i;
	djp_src_agg_fn fn;
	void *ctx;
};

static void agg_entry(void *ctx, const struct djp_agg_delta *dl)
{
	struct agg_read_ctx *c = ctx;
	c->fn(c->ctx, desc_of(c->l, c->i, dl->id), session_at(c->l, c->i)->pid, dl);
}

static void live_agg_read(struct djp_source *src, djp_src_agg_fn fn, void *ctx)
{
	struct live *l = (struct live *)src;
	for (size_t i = 0; i <= l->kids.n; i++) {
		struct session *s = session_at(l, i);
		struct agg_read_ctx c = { l, i, fn, ctx };
		if (s->tables && s->cons)
			djp_tables_read(s->tables, djp_consumer_slots_used(s->cons), agg_entry, &c);
	}
}

static uint64_t live_agg_lost(struct djp_source *src, unsigned p)
{
	struct live *l = (struct live *)src;
	uint64_t lost = 0;
	for (size_t i = 0; i <= l->kids.n; i++) {
		struct session *s = session_at(l, i);
		if (s->tables && s->cons)
			lost += djp_tables_plan_lost(s->tables, p, djp_consumer_slots_used(s->cons));
	}
	return lost;
}

static void live_close(struct djp_source *src)
{
	struct live *l = (struct live *)src;
	struct session *s = &l->s;
	session_end(s); /* counts, then BYE: disarmed when it answers */
	session_report_arm_errors(s, "djp");
	for (size_t i = 0; i < l->kids.n; i++)
		session_end(l->kids.v[i]);
	if (s->cmd && s->child > 0 && !s->child_done)
		session_stop_child(s);
	session_free(s);
	session_kids_free(&l->kids);
	site_functions_free(l->fns);
	for (unsigned i = 0; i < l->nglobs; i++)
		free((char *)l->globs[i].glob);
	free(l->globs);
	free(l->descs);
	free(l->lives);
	for (unsigned i = 0; i < l->nflist; i++) {
		djp_marker_list_free(l->flist[i]);
		free(l->fobject[i]);
	}
	for (size_t i = 0; i < l->nlate; i++)
		free(l->late[i]);
	free(l->late);
	for (unsigned i = 0; i < l->nall_paths; i++)
		free(l->all_paths[i]);
	free(l->all_paths);
	free(l->desc_of_id);
	free(l->armed);
	free(l);
}

/* A string the script's user_string() reads from an address that was no
 * argument copied at the hit: read now, from outside, page by page so that
 * a readable prefix still arrives. */
static int live_read_str(struct djp_source *src, int32_t pid, uint64_t addr, char *buf, size_t sz)
{
	size_t got = 0;
	(void)src;
	if (!addr)
		return -EFAULT;
	while (got + 1 < sz) {
		size_t page = 4096 - ((addr + got) & 4095), want = sz - 1 - got;
		struct iovec local = { buf + got, want < page ? want : page };
		struct iovec remote = { (void *)(uintptr_t)(addr + got), local.iov_len };
		ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
		if (n <= 0)
			break;
		if (memchr(buf + got, 0, (size_t)n))
			return 0;
		got += (size_t)n;
	}
	buf[got] = 0;
	return got + 1 == sz ? 0 : -EFAULT;
}

static int live_read_mem(struct djp_source *src, int32_t pid, uint64_t addr, void *buf, size_t n)
{
	struct iovec local = { buf, n }, remote = { (void *)(uintptr_t)addr, n };
	(void)src;
	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)n ? 0 : -EFAULT;
}

static const char *live_function_of(struct djp_source *src, int32_t pid, const struct djp_ev_desc *d)
{
	struct live *l = (struct live *)src;
	if (!l->fns)
		l->fns = site_functions_new();
	return site_function(l->fns, pid, d);
}

/* A statement point's line as the names the agent gives its sites
 * (kernel/points.c): the function around each address of the line, and
 * the offset into it. */
static int live_resolve_line(struct djp_source *src, const char *object, const char *spec, char **names,
			     unsigned max, char *err, size_t errsz)
{
	char exe[64], *path, name[512];
	uint64_t addrs[64];
	struct djp_func_table *t = NULL;
	int n, k = 0;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)src->target_pid);
	path = realpath(object ? object : exe, NULL);
	if (!path) {
		snprintf(err, errsz, "%s: %s", object ? object : exe, strerror(errno));
		return -errno;
	}
	n = djp_lines_resolve(path, spec, addrs, max < 64 ? max : 64, err, errsz);
	if (n > 0 && djp_funcs_read(path, &t, err, errsz) == 0)
		for (int i = 0; i < n; i++) {
			const struct djp_func *f;
			if (!(f = djp_funcs_at(t, addrs[i])))
				continue;
			if (addrs[i] == f->addr)
				snprintf(name, sizeof(name), "%s", f->name);
			else
				snprintf(name, sizeof(name), "%s+%#llx", f->name, (unsigned long long)(addrs[i] - f->addr));
			if (!(names[k] = strdup(name)))
				abort();
			k++;
		}
	djp_funcs_free(t);
	free(path);
	return n < 0 ? n : k;
}

static bool live_glob_matched(const struct djp_source *src, const char *glob)
{
	const struct live *l = (const struct live *)src;
	for (unsigned i = 0; i < l->nglobs; i++)
		if (l->globs[i].matched && !strcmp(l->globs[i].glob, glob))
			return true;
	return false;
}

static const char *live_last_program(const struct djp_source *src)
{
	const struct live *l = (const struct live *)src;
	return l->last_program[0] ? l->last_program : NULL;
}

static const struct djp_source_ops live_ops = {
	.resolve_line = live_resolve_line,
	.function_of = live_function_of,
	.arm = live_arm,
	.read_str = live_read_str,
	.read_mem = live_read_mem,
	.start = live_start,
	.next = live_next,
	.stop = live_stop,
	.finish = live_finish,
	.lost = live_lost,
	.agg_read = live_agg_read,
	.agg_lost = live_agg_lost,
	.glob_matched = live_glob_matched,
	.last_program = live_last_program,
	.now_ns = live_now,
	.close = live_close,
};

/* The files of o->paths whose markers the process does not have now: read
 * them (a path that is no file, a soname say, is left to the agent).
 * Returns how many markers they hold. */
static size_t read_named_files(struct live *l, const struct djp_source_opts *o)
{
	size_t total = 0;
	for (unsigned i = 0; i < o->npaths && l->nflist < sizeof(l->flist) / sizeof(l->flist[0]); i++) {
		char err[256], *rp = realpath(o->paths[i], NULL);
		bool have = false;
		if (!rp)
			continue;
		for (uint32_t id = 0; id < l->s.nmarkers && !have; id++)
			have = l->s.markers[id].known && l->s.markers[id].object && !strcmp(l->s.markers[id].object, rp);
		for (unsigned k = 0; k < l->nflist && !have; k++)
			have = !strcmp(l->fobject[k], rp);
		if (have || djp_markers_read_file(rp, DJP_READ_NO_DWARF, &l->flist[l->nflist], err, sizeof(err))) {
			free(rp);
			continue;
		}
		l->fobject[l->nflist] = rp;
		total += l->flist[l->nflist++]->count;
	}
	return total;
}

/* Descriptors nd.. for the markers read_named_files read; a process that
 * has them later finds them by name and object (kid_wanted).  Returns the
 * next id. */
static unsigned add_file_descs(struct live *l, unsigned nd)
{
	for (unsigned i = 0; i < l->nflist; i++)
		for (size_t j = 0; j < l->flist[i]->count; j++, nd++)
			djp_desc_from_file(&l->descs[nd], nd, &l->flist[i]->v[j], l->fobject[i]);
	return nd;
}

/* process("PATH") points with no -c or -x: every process of the PATHs,
 * as djp trace -a finds them, each a kid; the descriptors are the files'
 * markers, which each process's are matched to by name and object
 * (kid_wanted). */
static int open_all(const struct djp_source_opts *o, struct djp_source **out, char *err, size_t errsz)
{
	struct live *l = calloc(1, sizeof(*l));
	unsigned nd;

	if (l)
		l->kids.follow_fd = -1, l->dialled = true;
	if (!l || session_init(&l->s) || !(l->all_paths = calloc(o->npaths, sizeof(*l->all_paths)))) {
		if (l)
			session_free(&l->s);
		free(l);
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	l->all = true;
	l->src.ops = &live_ops; /* live_close frees what is made from here on */
	for (unsigned i = 0; i < o->npaths; i++)
		if (!(l->all_paths[l->nall_paths++] = strdup(o->paths[i])))
			goto nomem;
	l->s.str_bound = MAXSTRINGLEN < 8			  ? 8
			 : MAXSTRINGLEN < DJP_RING_STR_BOUND_MAX ? (unsigned)MAXSTRINGLEN
								  : DJP_RING_STR_BOUND_MAX;
	l->s.buffer_size = o->buffer_size;
	l->s.kernel_trap = true; /* sites no jump reaches: the kernel's uprobe, if it may */
	l->mono_to_real = (int64_t)(djp_clock_ns(CLOCK_REALTIME) - djp_clock_ns(CLOCK_MONOTONIC));
	nd = (unsigned)read_named_files(l, o);
	l->desc_of_id = calloc(1, sizeof(*l->desc_of_id));
	l->descs = calloc(nd + 1, sizeof(*l->descs));
	l->armed = calloc(nd + 1, sizeof(*l->armed));
	if (!l->desc_of_id || !l->descs || !l->armed)
		goto nomem;
	l->src.descs = l->descs;
	l->src.ndescs = add_file_descs(l, 0);
	*out = &l->src;
	return 0;
nomem:
	live_close(&l->src);
	snprintf(err, errsz, "out of memory");
	return -ENOMEM;
}

int djp_script_live_open(const struct djp_source_opts *o, struct djp_source **out, char *err, size_t errsz)
{
	struct live *l;
	struct session *s;
	unsigned nd = 0;
	size_t nfile;
	char path[64];
	FILE *f;

	if (!o->cmd && o->pid <= 0 && o->list_only && o->npaths)
		return djp_files_source_open(o, out, err, errsz);
	if (!o->cmd && o->pid <= 0 && o->npaths)
		return open_all(o, out, err, errsz);
	if (!o->cmd && o->pid <= 0) {
		/* Without an agent there is no process to read: say what to give. */
		snprintf(err, errsz,
			 "a process probe needs the process: give -c CMD or -x PID, or name its program "
			 "(process(\"PATH\"))");
		return -EINVAL;
	}
	l = calloc(1, sizeof(*l));
	if (l)
		l->kids.follow_fd = -1, l->dialled = true;
	if (!l || session_init(&l->s)) {
		if (l)
			session_free(&l->s);
		free(l);
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	s = &l->s;
	s->cmd = o->cmd;
	s->attach_pid = o->pid;
	/* a marker's %s arguments keep what a script string can (-D
	 * MAXSTRINGLEN), as far as the agent copies */
	s->str_bound = MAXSTRINGLEN < 8 ? 8 : MAXSTRINGLEN < DJP_RING_STR_BOUND_MAX ? (unsigned)MAXSTRINGLEN
										 : DJP_RING_STR_BOUND_MAX;
	s->buffer_size = o->buffer_size;
	if (o->cmd ? session_launch(s) : session_attach(s)) {
		/* session_launch/attach said why on stderr */
		snprintf(err, errsz, "%s: cannot start the trace", o->cmd ? o->cmd : "process");
		goto fail_quiet;
	}
	if (session_hello(s) || session_ring(s) || session_list(s)) {
		snprintf(err, errsz, "%s: %s", o->cmd ? o->cmd : "process", s->errmsg);
		goto fail;
	}
	tapset_remember(s->pid);
	usym_remember(s->pid);
	l->mono_to_real = (int64_t)(djp_clock_ns(CLOCK_REALTIME) - djp_clock_ns(CLOCK_MONOTONIC));
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)s->pid);
	if ((f = fopen(path, "r"))) {
		if (fgets(l->comm, sizeof(l->comm), f))
			l->comm[strcspn(l->comm, "\n")] = 0;
		fclose(f);
	}
	nfile = read_named_files(l, o);
	l->nids = s->nmarkers;
	l->desc_of_id = calloc(l->nids ? l->nids : 1, sizeof(*l->desc_of_id));
	l->descs = calloc(l->nids + nfile + DJP_LIFE_END + 1, sizeof(*l->descs));
	l->armed = calloc(l->nids + nfile + DJP_LIFE_END + 1, sizeof(*l->armed));
	if (!l->desc_of_id || !l->descs || !l->armed) {
		snprintf(err, errsz, "out of memory");
		goto fail;
	}
	for (uint32_t id = 0; id < s->nmarkers; id++) {
		if (!s->markers[id].known)
			continue;
		session_desc_of_marker(&l->descs[nd], nd, &s->markers[id]);
		l->desc_of_id[id] = &l->descs[nd];
		nd++;
	}
	nd = add_file_descs(l, nd);
	for (uint8_t life = DJP_LIFE_BEGIN; life <= DJP_LIFE_END; life++, nd++) {
		l->descs[nd] = (struct djp_ev_desc){ .id = nd, .name = life == DJP_LIFE_BEGIN ? "begin" : "end",
						     .format = "", .life = life };
		l->life_desc[life] = &l->descs[nd];
	}
	l->src.ops = &live_ops;
	l->src.descs = l->descs;
	l->src.ndescs = nd;
	l->src.target_pid = s->pid;
	if (s->cmd && s->program[0] && session_may_be_wrapper(s, s->cmd))
		l->src.wrapper = s->program;
	*out = &l->src;
	return 0;
fail_quiet:
	err[0] = 0; /* session_launch and session_attach said why */
fail:
	session_kill_unstarted(s);
	live_close(&l->src);
	return -EIO;
}
