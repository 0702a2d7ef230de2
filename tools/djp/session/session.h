/*
 * A session with the agent of a traced process: what the process sources
 * (source/process.c, for djp trace; script/live.c, for probe scripts)
 * share, so that there is one of each.
 *
 *   session_target.c  getting a session: launch a command (-c) or attach (-x)
 *   session_client.c  requests to the agent (lib/proto.h)
 *   session.c         the marker table, the drain, the end
 *
 * The session owns the agent's socket, the rings (mapped from the memfd
 * the agent sends), the marker table (LIST, then the marker log for objects
 * loaded later) and the counts a summary needs.  It knows nothing of output:
 * session_drain() leaves one drain's events in time order, and each
 * consumer reads them (session_event) and does its own thing with them,
 * printing a line or running a probe.
 */
#ifndef DJP_TOOLS_SESSION_H
#define DJP_TOOLS_SESSION_H

#include <signal.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "tools/djp/session/agg_tables.h"
#include "tools/djp/session/session_all.h"
#include "tools/djp/attach/freeze.h"
#include "tools/djp/source/order.h"
#include "lib/format.h"
#include "lib/load_prog.h"
#include "lib/marker_log.h"
#include "lib/proto.h"
#include "lib/ring.h"

#define SESSION_REPLY_TIMEOUT_MS 5000

struct session_marker {
	bool known;
	uint8_t nargs;
	uint64_t addr;
	char *name, *format, *object;
	struct djp_fmt *fmt; /* NULL when the format does not parse */
	uint64_t events, lost;
};

struct session_thread {
	uint32_t tid;
	uint64_t events, lost;
};

struct session {
	/* what to reach, set before session_launch/session_attach */
	const char *cmd;
	pid_t attach_pid;
	bool snapshot;	    /* rings overwrite their oldest events */
	size_t buffer_size; /* ring bytes per thread, 0: the agent's default */
	unsigned str_bound; /* bytes a %s copy keeps, NUL included (MAXSTRINGLEN); 0: the agent's default */
	/* formats that replace the markers' own (djp trace's PATTERN=FORMAT):
	 * a marker the i-th pattern matches prints with the i-th format */
	char *const *fmt_patterns, *const *fmt_formats;
	int nfmt;
	/* a script's aggregation plans (TABLES, with the rings): the tables
	 * of the probes it aggregates where they fire */
	const struct djp_agg_plan *agg_plans;
	unsigned nagg_plans;
	uint32_t agg_capacity;

	/* the agent */
	int fd;
	bool alive; /* the agent is still there */
	uint64_t exec_id; /* the program the agent is in (session_exec_id) */
	bool exec_followed; /* its exec was looked for once it went */
	bool pinned;	    /* a reader points into its marker table: kept to the end */
	/* a script's process.begin and process.end said for it, and its
	 * name then; the session of the program it exec'd, whose begin
	 * waits for this one's end (script/live.c) */
	bool life_begun, life_ended, life_waits;
	char life_comm[64];
	struct session *life_next;
	const char *end_note; /* how it ended before the trace did, or NULL */
	pid_t pid;  /* the traced process */
	char program[1024];
	pid_t child;	  /* -c: the command we started, until reaped */
	int launch_fd;	  /* -c: the socket the command's processes dial, or -1 */
	int child_status; /* its wait status once reaped */
	bool child_done;
	struct freeze frozen; /* the threads stopped for the agent (FREEZE) */
	char errmsg[600]; /* the agent's last ERROR text */
	int errcode;
	uint8_t *buf; /* one payload */

	/* the rings and the markers */
	struct djp_consumer *cons;
	int ring_fd;
	struct djp_tables *tables; /* per-marker lost counts, aggregation tables */
	struct session_marker *markers; /* indexed by marker id */
	uint32_t nmarkers;		/* ids below this have a slot */
	uint32_t next_id;		/* LIST from here for new ids */
	struct djp_mlog_reader mlog;	/* markers of objects loaded later */
	bool mlog_bad_said;
	bool listed_this_drain;

	/* counts, for a summary */
	struct session_thread *threads;
	size_t nthreads, cap_threads;
	uint64_t events, lost_noslot, misses, lost_unattributed;
	/* probes the agent could not arm or disarm in objects that came or
	 * went during the session (dlopen, dlclose), and the last error */
	uint32_t arm_errors;
	int arm_error_last;
	bool stats_ok;

	/* sites armed with the kernel's uprobe (session_uprobes.c): asked
	 * for (the connects leave the sites no jump can reach to the tool),
	 * the marker id and the uprobe slot of each site armed (nup_ids of
	 * them; a slot -1 once disarmed), and the events of this process
	 * another session's drain took from the BPF ring, each after a word
	 * of its thread id */
	bool kernel_trap;
	bool has_loads; /* LOADS were sent: typed loads, the engine's */
	uint32_t *up_ids;
	int *up_slots;
	size_t nup_ids, cap_up_ids, cap_up_slots;
	uint8_t *up_stash;
	size_t len_up_stash, cap_up_stash;

	/* the last drain, in time order: each record a copy of the event,
	 * its tag the thread's id; batch.n events */
	struct djp_order batch;
	bool more; /* the drain stopped at its bound: drain again */
};

/* --force: load the agent into a process whose seccomp filter cannot be
 * read (tools/djp/attach/inject_seccomp.c); -x and the processes it follows. */
extern bool session_inject_force;
/* --no-children: -x attaches PID alone, none of the descendants it has
 * (those it forks later are followed all the same). */
extern bool session_no_children;

/* The other processes of a trace (session_kids.c): children of fork and a
 * -c wrapper's program, a session each. */
struct session_kids {
	int follow_fd; /* the socket they dial (FOLLOW), or -1: none followed */
	char follow_name[96];
	struct session **v;
	size_t n;
	struct pollfd *pfd; /* session_kids_wait's poll set */
	size_t npfd;
	/* -x PID's descendants found at the attach, attached in turn by
	 * session_kids_accept from nextfound on (root: PID) */
	pid_t *found, root;
	size_t nfound, nextfound;
	/* -a: every process of a program, found by session_all.c and
	 * attached by session_kids_accept as they come; NULL otherwise */
	struct session_all *all;
};

/* The signal that asked the tool to stop, or 0: set by its handler, it
 * ends a wait for a launched command's agent. */
extern volatile sig_atomic_t session_stop_signal;

/* 0, or -ENOMEM; every descriptor closed.  The caller sets what to reach. */
int session_init(struct session *s);
/* Close everything and free; the session is left as after session_init's
 * failure (safe to call twice). */
void session_free(struct session *s);

/* session_target.c */
int session_launch(struct session *s);
int session_attach(struct session *s);
/* Reap the command if it has exited (wait: block up to timeout_ms, -1
 * without limit).  True once it is reaped. */
bool session_reap(struct session *s, int timeout_ms);
/* pid is gone, or a zombie nobody reaps: it has exited. */
bool session_process_exited(pid_t pid);
/* Exited, or exiting: its last thread is in the kernel's exit path (the
 * task flag PF_EXITING, set before its descriptors close), which it
 * leaves only as a zombie. */
bool session_process_exiting(pid_t pid);
/* End the command: SIGTERM, then SIGKILL after two seconds. */
void session_stop_child(struct session *s);
/* -c: START, and the command runs its main; -errno after one line on
 * stderr ("djp: CMD: why").  0 when there is no command (-x). */
int session_start_command(struct session *s);
/* A command that never ran its main: kill it (and the shell around it). */
void session_kill_unstarted(struct session *s);
const char *session_preload_path(void);
/* A listening abstract socket of the tool's own, its name in `name`: the fd
 * (non-blocking), or -1 with errno. */
int session_listen(char *name, size_t namesz);
/* Take one agent dialling in on lfd, if one is there and may be traced:
 * a session for it (freshly initialised: its launch waits for START), or
 * NULL. */
struct session *session_accept(int lfd);
/* session_client.c: each returns 0 or -errno; an ERROR reply's text is in
 * s->errmsg. */
int session_hello(struct session *s);
/* The rings (RING), then the marker log (MARKER_LOG). */
int session_ring(struct session *s);
/* TABLES, after RING and before any CONNECT: the per-marker lost
 * counters, and the tables of s->agg_plans. */
int session_tables(struct session *s);
int session_list(struct session *s);
/* VARS, after RING and before any CONNECT: the words of v that every
 * event of a DJP_CONNECT_REGS session carries (a script's @var), and the
 * run-time address of each in runtime[] (0: its object is not loaded). */
int session_vars(struct session *s, const struct djp_var_want *v, unsigned n, uint64_t *runtime);
/* LOADS, once per site of v, after RING and before the CONNECTs of the
 * patterns that match those sites. */
int session_loads(struct session *s, const struct djp_load_site *v, unsigned n);
/* Add what the marker log holds that the table does not: works after the
 * process is gone.  0 or -EPROTO (said once on stderr). */
int session_marker_log_read(struct session *s);
/* flags: DJP_CONNECT_* (lib/proto.h); str_args: arguments of the
 * pattern's markers to copy as strings (bit i: argument i), bounded to
 * str_bound bytes with the NUL (0: the ring's bound). */
int session_connect(struct session *s, const char *pattern, unsigned flags, uint32_t str_args, unsigned str_bound,
		    unsigned *nsites);
/* CONNECT with DJP_CONNECT_AGG: the pattern's hits update plan's tables. */
int session_connect_agg(struct session *s, const char *pattern, unsigned flags, unsigned plan, unsigned *nsites);
int session_start(struct session *s);
/* FOLLOW: the children of fork dial the tool's socket `name`. */
int session_follow(struct session *s, const char *name);
int session_stats(struct session *s);
/* Answer what the agent asks of its own accord: FREEZE (and the THAW after
 * it, waited for) when a thread of the process blocks SIGTRAP and the
 * agent arms a library loaded meanwhile.  Never blocks otherwise.  True
 * when the socket holds something else: its end, an error, a frame no
 * request asked for (the agent is gone; the end is left to read). */
bool session_serve(struct session *s);
int session_bye(struct session *s);
/* STATS and BYE while the agent is there (it disarms before it answers). */
void session_end(struct session *s);

/* session_kids.c */
/* Listen, and ask main's agent (after its patterns, before START) to have
 * its children of fork dial in; for -x PID, find PID's descendants, which
 * session_kids_accept attaches (unless session_no_children).  0, also
 * when the tool cannot listen (nothing is followed then); -errno when
 * FOLLOW failed (nor then).  k starts zeroed with follow_fd -1. */
int session_kids_listen(struct session_kids *k, struct session *main);
/* -a: listen for the children of fork of the processes all finds, which
 * session_kids_accept attaches as they come (k owns all from now on).
 * Nothing is followed when the tool cannot listen. */
void session_kids_listen_all(struct session_kids *k, struct session_all *all);
/* A process dialling in, or the next of -x PID's descendants, attached:
 * a session with main's ring options, to be configured (then
 * session_kids_follow, START) and kept or discarded; NULL when none is
 * there.  A process that has a session already is not taken twice. */
struct session *session_kids_accept(struct session_kids *k, const struct session *main);
/* How long a round of the trace configures processes dialling in: a
 * configuration is several round trips with an agent that may be waiting
 * for a core among a hundred busy siblings (30 ms each was seen), and the
 * rings of the processes already traced must be drained meanwhile, or a
 * pre-fork server that starts a hundred workers at once loses their first
 * events.  The others wait in fork, losing nothing. */
#define SESSION_KIDS_ACCEPT_NS 3000000u
/* Processes dialling in (session_kids_accept), each handed to take(ctx,
 * c), which configures it and keeps or discards it, until none is there
 * or budget_ns have passed. */
void session_kids_accept_for(struct session_kids *k, const struct session *main, uint64_t budget_ns,
			     void (*take)(void *ctx, struct session *c), void *ctx);
/* STATS and BYE to main and each of k's (session_end): every process
 * disarmed when they answer, their rings holding all there will be. */
void session_kids_end(struct session_kids *k, struct session *main);
/* FOLLOW for session c too, when k follows: 0 or -errno. */
int session_kids_follow(struct session_kids *k, struct session *c);
/* Sleep until something needs the tool or timeout_ms pass, in one poll
 * over the main session's socket, every live child's and the sockets
 * processes dial.  True when a process is dialling in (accept it); a
 * child whose socket woke it has hung up: it is marked gone and handed
 * to gone(ctx, child). */
bool session_kids_wait(struct session_kids *k, struct session *main, int timeout_ms,
		       void (*gone)(void *ctx, struct session *child), void *ctx);
/* The tool and the processes it runs under (its parent, theirs...), into
 * line (n at most): how many. */
size_t session_our_line(pid_t *line, size_t n);
/* Which program pid runs: AT_RANDOM from its auxv, an address on the stack
 * its last exec made, new at every exec (ASLR); 0 when unreadable. */
uint64_t session_exec_id(pid_t pid);
/* A process of an -x trace whose agent went away while the process lives
 * on under a new program (exec; the agent's sockets were close-on-exec):
 * attached again, the agent injected, not yet configured.  NULL when it
 * did not exec (it is exiting), or after one line on stderr when it cannot
 * be attached.  Asked once per session. */
struct session *session_kids_exec(const struct session *main, struct session *gone);
/* Keep c among k's (discarded when there is no memory). */
void session_kids_keep(struct session_kids *k, struct session *c);
/* Take the i-th out of k's, the others kept in order (the caller has
 * discarded it). */
void session_kids_remove(struct session_kids *k, size_t i);
/* BYE (which releases a waiting fork) when its agent is there; free it. */
void session_discard(struct session *c);
/* Discard them all; close the socket. */
void session_kids_free(struct session_kids *k);

/* session_uprobes.c */
/* May sites be armed with the kernel's uprobe in this run?  The BPF
 * recorder is loaded the first time; false, with a one-line why, when it
 * cannot be (or session_uprobes_disable said not to). */
bool session_uprobes_usable(const char **why);
void session_uprobes_disable(void);
/* Arm the n sites a CONNECT left (marker ids, run-time addresses), with
 * the pattern's string arguments; 0 or -errno with s->errmsg. */
int session_uprobes_arm(struct session *s, const uint32_t *ids, const uint64_t *addrs, unsigned n, uint32_t str_args,
			unsigned str_bound);
/* Into s's batch (session_batch_add): the uprobe events of its process. */
void session_uprobes_drain(struct session *s);
/* Disarm s's uprobes (before BYE); what they wrote is still drained. */
void session_uprobes_detach(struct session *s);
/* s goes: its uprobes and what was kept for it (session_free). */
void session_uprobes_forget(struct session *s);
/* Hits of every session's uprobes whose events found no room. */
uint64_t session_uprobes_lost(void);

/* session.c */
/* One event of thread tid into the drain's batch, stamped ts (the rings'
 * raw clock), counted as the rings' are; false when there is no memory. */
bool session_batch_add(struct session *s, const struct djp_event *ev, uint64_t ts, uint32_t tid);
int session_marker_add(struct session *s, uint32_t id, uint64_t addr, uint8_t nargs, const char *name,
		       const char *format, const char *object);
/* Marker `id`, learnt from the marker log or, once per drain while the
 * agent lives, from LIST if it is new; NULL when nobody can name it. */
struct session_marker *session_marker_of(struct session *s, uint32_t id);
/* Drain the rings into the session's batch, in time order, counting events
 * per thread and per marker; returns the number of events (0 when none,
 * < 0 on error).  The batch stays valid until the next drain.  A drain
 * stops at a bound (s->more): drain again to get the rest. */
long session_drain(struct session *s);
static inline const struct djp_event *session_event(const struct session *s, size_t i)
{
	return djp_order_at(&s->batch, i);
}
/* The thread of the last drain's i-th event. */
static inline uint32_t session_event_tid(const struct session *s, size_t i)
{
	return s->batch.v[i].tag;
}
/* The per-thread lost counts of live slots, and the consumer's own;
 * the total of events lost. */
uint64_t session_count_lost(struct session *s);
/* One line on stderr, after `who: `, when the agent failed to arm or
 * disarm probes in objects loaded or unloaded during the session (known
 * from the last STATS). */
void session_report_arm_errors(const struct session *s, const char *who);
/* True once the agent has closed the session (the process exited, exec'd
 * or crashed): its socket is then readable.  Waits up to timeout_ms. */
bool session_agent_gone(struct session *s, int timeout_ms);

#endif
