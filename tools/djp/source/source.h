/*
 * The event source: the one way events reach anything in the tool, probe
 * scripts (script/) and `djp trace` (trace.c) alike.
 *
 * A source knows the markers of the traced process (descriptors, known when
 * it is opened, with dense ids 0..ndescs-1) and delivers their hits as
 * events, in time order.  A live source may deliver events of markers
 * loaded later, with descriptors of ids ndescs and up that it makes as it
 * meets them (stable until close); the engine binds those when it first
 * sees them.  The script engine resolves probe points against the
 * descriptors, then calls arm() with the ids it needs (nothing is armed
 * before the script has compiled), start() to let a -c command run, and
 * next() in a loop until it returns DJP_SRC_END or the script exits.  Timers
 * are the engine's: it passes the deadline of the next one to next(), and
 * the source returns DJP_SRC_TIMEOUT when its clock reaches it.
 *
 * The source keeps its marker table current as it drains (a marker loaded
 * after open is named there, by asking the agent or the device), so that
 * whoever consumes an event has all it needs in the event and its
 * descriptor, and never does I/O to print it.
 *
 * Implementations: the replay source (replay.c; a text file, for tests
 * and benchmarks), the process sources (sessions with the agents of a
 * traced process and its children, tools/djp/session/session.h: process.c for
 * djp trace, script/live.c for scripts, which adds what only a script
 * asks: aggregation in the target, reads of the target's memory, the
 * function around a site), the files source (files.c: the markers of
 * files a script names, for listing without a process), the kernel
 * source (kernel.c: the markers of loaded modules through /dev/djprobe)
 * and the CTF source (ctf.c: a trace djp trace -f ctf wrote).
 */
#ifndef DJP_SOURCE_SOURCE_H
#define DJP_SOURCE_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "lib/format.h"
#include "lib/load_prog.h"

#define DJP_EV_MAX_ARGS 12

struct djp_ev_desc {
	uint32_t id;	    /* index in djp_source.descs */
	const char *name;   /* marker name */
	/* SDT: the provider, provider_len bytes (not NUL-terminated); none
	 * when provider_len is 0 */
	const char *provider;
	unsigned provider_len;
	const char *format; /* printf-like format, "" when none */
	const char *object; /* path of the ELF object that holds the marker */
	unsigned nargs;
	struct djp_fmt fmt; /* `format` parsed (fmt.nfields may be < nargs) */
	/* the site: its run-time address (site_runtime) or its link-time one;
	 * 0 when unknown */
	uint64_t site;
	bool site_runtime;
	const char *function; /* the function around the site, when known at open */
	bool kernel;	      /* a marker of a kernel module, `object` its name */
	/* how output names it ("PROVIDER:NAME", "MODULE:NAME"); NULL: name */
	const char *label;
	bool unknown; /* nobody could name the marker: name is "marker#ID" */
	/* no marker: a process's life (DJP_LIFE_*), whose events the live
	 * source makes itself; 0 for a marker */
	uint8_t life;
};

/* The lives of processes a live source follows, as descriptors. */
enum {
	DJP_LIFE_BEGIN = 1, /* a process (or a program it exec'd) is traced */
	DJP_LIFE_END,	    /* ... it exited (or exec'd another program) */
};

struct djp_ev {
	const struct djp_ev_desc *desc;
	uint64_t ts_ns;	  /* on the source's clock (CLOCK_REALTIME for live) */
	int32_t pid, tid;
	const char *comm; /* execname of pid, or NULL (then: object basename) */
	unsigned nargs;
	int64_t args[DJP_EV_MAX_ARGS];
	const char *strs[DJP_EV_MAX_ARGS]; /* for %s arguments, else NULL */
	/* strs[i] is the readable prefix of a string whose copy faulted */
	bool str_fault[DJP_EV_MAX_ARGS];
	/* strs[i] was cut at the copy's bound (output marks it "...") */
	bool str_cut[DJP_EV_MAX_ARGS];
	int32_t cpu; /* the CPU of the hit, or -1 when not recorded */
	/* the user stack of the hit, innermost first (ustack[0] the hit's
	 * pc, then return addresses), when its probe asked for it: nustack
	 * pcs, 0 when none was recorded */
	const uint64_t *ustack;
	unsigned nustack;
	/* a life event's: the program the process runs, or NULL */
	const char *program;
	/* the registers of the hit, when the source was asked (want_regs):
	 * the DJP_EVF_REGS block, nregs words laid out as lib/proto.h says
	 * (DJP_REGS_PC, DJP_REGS_INFO...); NULL when none was recorded */
	const uint64_t *regs;
	unsigned nregs;
	/* the strings @var pointers point to, copied at the hit after the
	 * marker's arguments (DJP_VARS_STR_MAX at most): nvar_strs of them,
	 * in the order of the variables; var_str_fault[i]: the copy faulted */
	const char *var_strs[4];
	bool var_str_fault[4];
	unsigned nvar_strs;
	/* the results of the site's load programs (typed accesses), in the
	 * order of its struct djp_load_site; bit i of loads_faulted: program i
	 * faulted, loads[i] the address it could not read */
	const uint64_t *loads;
	unsigned nloads;
	uint64_t loads_faulted;
	/* those that are strings copied at the hit (djp_event_load_str of
	 * loads_ev, the event they are in) */
	uint64_t loads_strs;
	const struct djp_event *loads_ev;
};

enum {
	DJP_SRC_EVENT = 1,   /* *ev filled, valid until the next call */
	DJP_SRC_TIMEOUT = 0, /* deadline reached (or interrupted): no event */
	DJP_SRC_END = -1,    /* the target exited or the input ended */
};

struct djp_source;

/* A probe point's marker glob, with the arguments of its markers the
 * script reads as strings (user_string($argN)): a live source has them
 * copied in the target when the marker is hit. */
struct djp_arm_glob {
	const char *glob;
	uint32_t str_args; /* bit i: argument i */
	unsigned str_bound; /* bytes, NUL included */
	bool now;	    /* a function or statement point, not optional: it
			       must match when connected, not in a later object */
	bool ustack;	    /* each hit records the user stack (ubacktrace()) */
	unsigned plan1;	    /* run in the target: aggregation plan + 1, 0 not */
	const char *text;   /* the point as written, for messages; NULL: the glob */
	bool matched;	    /* the source's own: a connect made its sites */
};

struct djp_agg_plan;
struct djp_agg_delta;
/* One entry's gains in an aggregation table, with its marker's
 * descriptor (NULL when unknown) and the process it ran in. */
typedef void (*djp_src_agg_fn)(void *ctx, const struct djp_ev_desc *d, int32_t pid, const struct djp_agg_delta *dl);
typedef void (*djp_src_lost_fn)(void *ctx, const struct djp_ev_desc *d, uint64_t n);
typedef void (*djp_src_lost_new_fn)(void *ctx, const struct djp_ev_desc *d, int32_t pid, uint64_t n);
typedef void (*djp_src_lost_thread_fn)(void *ctx, int32_t pid, int32_t tid, uint64_t n);

struct djp_source_ops {
	/* Enable the markers whose ids are listed, and those of objects loaded
	 * later whose names match one of the globs (fnmatch); 0 or -errno. */
	int (*arm)(struct djp_source *src, const uint32_t *ids, unsigned n, const struct djp_arm_glob *globs,
		   unsigned nglobs);
	/* Read a NUL-terminated string of process pid at addr into buf (at
	 * most sz - 1 bytes and a NUL), now: for a user_string() whose
	 * address was not an argument copied at the hit.  0, or -errno
	 * (-EFAULT: unreadable).  May be NULL (-ENOTSUP). */
	int (*read_str)(struct djp_source *src, int32_t pid, uint64_t addr, char *buf, size_t sz);
	/* Exactly n bytes of process pid's memory at addr, now (printf's %m
	 * and %M).  0, or -errno (-EFAULT).  May be NULL (-ENOTSUP). */
	int (*read_mem)(struct djp_source *src, int32_t pid, uint64_t addr, void *buf, size_t n);
	/* The function around d's site in process pid ("" when unknown), for
	 * probefunc().  May be NULL: then d->function, or "". */
	const char *(*function_of)(struct djp_source *src, int32_t pid, const struct djp_ev_desc *d);
	/* Let the target run (-c: exec the command); 0 or -errno.  May be NULL. */
	/* A statement point's source line ("FILE:LINE") in `object` (NULL:
	 * the target's program) as the names its sites get, "FUNC" or
	 * "FUNC+0xOFF", malloc'd, at most max; how many, or -errno with a
	 * line in err.  NULL where the source cannot (replay). */
	int (*resolve_line)(struct djp_source *src, const char *object, const char *spec, char **names, unsigned max,
			    char *err, size_t errsz);
	int (*start)(struct djp_source *src);
	/* Next event before deadline_ns (UINT64_MAX: none): DJP_SRC_* or -errno
	 * (< -1).  May return DJP_SRC_TIMEOUT early, e.g. on EINTR. */
	int (*next)(struct djp_source *src, struct djp_ev *ev, uint64_t deadline_ns);
	/* Stop recording (^C): every probe disarmed now, and next() then
	 * returns what they recorded before it, then DJP_SRC_END; 0 or
	 * -errno.  May be NULL: the events not yet read are dropped. */
	int (*stop)(struct djp_source *src);
	/* The run ends (exit(), the target's end, ^C after its events): stop
	 * recording, every probe disarmed and the counts taken; what the
	 * rings still hold is not read.  May be NULL. */
	int (*finish)(struct djp_source *src);
	/* Events the rings dropped: per descriptor to fn, and their total
	 * (final after finish).  May be NULL. */
	uint64_t (*lost)(struct djp_source *src, djp_src_lost_fn fn, void *ctx);
	/* The events dropped since the last call, per marker and process:
	 * fn with each count that grew, by how much, read where the drops
	 * are counted (nothing asked of the target); between next()'s
	 * rounds, for a consumer that shows when events were lost.  May be
	 * NULL. */
	void (*lost_new)(struct djp_source *src, djp_src_lost_new_fn fn, void *ctx);
	/* What the aggregation tables (src->agg_plans) gained since the last
	 * call, entry by entry.  NULL: the source has no tables. */
	void (*agg_read)(struct djp_source *src, djp_src_agg_fn fn, void *ctx);
	/* Hits of plan p a full table had no room for. */
	uint64_t (*agg_lost)(struct djp_source *src, unsigned p);
	/* A `now` glob of arm that a -c wrapper did not have, kept for the
	 * programs it execs: did a connect make its sites in some process of
	 * the run?  May be NULL: every glob arm accepted matched. */
	bool (*glob_matched)(const struct djp_source *src, const char *glob);
	/* The last program the -c command's own process exec'd, or NULL. */
	const char *(*last_program)(const struct djp_source *src);
	/* djp trace's summary of the run, on f (per process, marker and
	 * thread; per marker for the kernel).  May be NULL. */
	void (*report)(struct djp_source *src, FILE *f);
	/* After report: the events lost, by thread, to fn (tid -1: lost by
	 * no one thread of pid, as a full kernel ring's); what they add up to
	 * is what the summary says.  May be NULL. */
	void (*lost_threads)(struct djp_source *src, djp_src_lost_thread_fn fn, void *ctx);
	/* djp trace's exit status once the run is over: a -c command's (ended
	 * first if it still runs), 1 when a pattern matched nothing in it; 0
	 * otherwise.  May be NULL (0). */
	int (*exit_status)(struct djp_source *src);
	/* The source's clock, in ns (for timers and gettimeofday_*()). */
	uint64_t (*now_ns)(struct djp_source *src);
	/* Disarm everything and free the source. */
	void (*close)(struct djp_source *src);
};

struct djp_source {
	const struct djp_source_ops *ops;
	const struct djp_ev_desc *descs;
	unsigned ndescs;
	int32_t target_pid; /* the -c or -x process, or 0 */
	bool want_cpu;	    /* set before arm: events should carry their CPU */
	bool want_int3;	    /* set before arm: int3 breakpoints only (--int3) */
	/* set before arm: events carry their hit's registers (1), and the
	 * stack words above the return address (2); with want_int3 for a
	 * script that reads a callee-saved register */
	unsigned want_regs;
	/* set before arm: the variables whose words events carry with the
	 * registers (a script's @var), nvars of them; the source fills in
	 * var_runtime[i], each one's address in the target (0: unknown) */
	const struct djp_var_want *vars;
	unsigned nvars;
	uint64_t *var_runtime;
	/* set before arm: ts_ns on CLOCK_MONOTONIC, not the engine's
	 * CLOCK_REALTIME (djp trace prints the boot-based clock) */
	bool want_monotonic;
	/* set before arm: events of markers nobody can name are delivered,
	 * with a descriptor of their own (unknown), not dropped */
	bool want_unknown;
	/* set before next: a %s argument keeps at most str_bound - 1 bytes
	 * (stap's MAXSTRINGLEN), cut where the copy was longer; 0: as copied */
	unsigned str_bound;
	/* set before next: once *interrupted (^C), next() returns
	 * DJP_SRC_TIMEOUT as soon as what it drained is handed out */
	const volatile int *interrupted;
	bool quiet; /* close() says nothing of lost events (-w) */
	const char *end_why; /* once next() said DJP_SRC_END: why ("the command exited") */
	const char *who; /* its messages start "djp: WHO: " ("trace -k"); NULL: "djp: " */
	bool arm_said; /* arm() failed and printed why, in one line */
	/* -c: the program the command's process runs when it may be a
	 * wrapper that execs another (no probes but libc's, or not the file
	 * the command names: cmd_path.h), for the hint of a point that
	 * matches nothing; NULL otherwise */
	const char *wrapper;
	/* set before arm: the probes the target runs (agg.c) */
	const struct djp_agg_plan *agg_plans;
	unsigned nagg_plans;
	uint32_t agg_capacity; /* entries of a thread's table */
	/* set before arm: the load programs of function sites, sent to every
	 * process before its patterns are connected (typed accesses) */
	const struct djp_load_site *load_sites;
	unsigned nload_sites;
};

struct djp_source_opts {
	const char *cmd;	  /* -c CMD, or NULL */
	int32_t pid;		  /* -x PID, or 0 */
	const char *const *paths; /* objects named by process("PATH") points; -a's PATHs */
	unsigned npaths;
	bool all;		  /* -a: every process of paths, or with a matching marker */
	bool list_only;		  /* -l/-L: the markers are wanted, not events */
	size_t buffer_size;	  /* ring bytes per thread (-s, --buffer-size); 0: the default */
	/* djp trace's (the process source's) */
	bool snapshot;		      /* the rings overwrite their oldest events */
	unsigned str_bound;	      /* a %s copy's bytes, NUL included; 0: the agent's */
	volatile int *snapshot_asked; /* --snapshot: read the rings now (SIGUSR1) */
	/* PATTERN=FORMAT: the markers of arm's i-th glob are named and
	 * converted by formats[i] (its %s the glob's str_args); NULL, or a
	 * NULL format: their own */
	char *const *formats;
};

/* A clock's time in ns, for the sources' now_ns and their events. */
static inline uint64_t djp_clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Opens a source; 0 or -errno with a one-line message in err. */
typedef int (*djp_source_open_fn)(const struct djp_source_opts *opts, struct djp_source **out, char *err,
				  size_t errsz);

/* The replay source (test-only input, see docs/SCRIPTS.md). */
int djp_replay_open(const char *path, struct djp_source **out, char *err, size_t errsz);

/* A synthetic in-memory source for --bench-events: n events cycling over the
 * descriptors of `base` (or eight made-up markers when base is NULL). */
int djp_synth_open(const struct djp_source *base, uint64_t n, struct djp_source **out);

/* A source with no markers and no events whose clock is the wall clock: for
 * scripts made only of begin, end and timer probes. */
int djp_null_open(struct djp_source **out);

/* The process source of djp trace (process.c): -c CMD or -x PID, the
 * processes it forks and execs; events named by the agent's ids (no
 * descriptors at open: djp trace arms patterns).  -errno, with a line in
 * err or (err "") the reason said on stderr already. */
int djp_process_source_open(const struct djp_source_opts *o, struct djp_source **out, char *err, size_t errsz);

/* The files source (files.c): the markers of o->paths read from the files,
 * for -l/-L with no process; no events. */
int djp_files_source_open(const struct djp_source_opts *o, struct djp_source **out, char *err, size_t errsz);

struct djp_marker_info;
/* *d: descriptor `id` of marker m of the file `object`, read by the tool
 * (its site the link-time one). */
void djp_desc_from_file(struct djp_ev_desc *d, uint32_t id, const struct djp_marker_info *m, const char *object);

/* The CTF source (ctf.c): the trace djp trace -f ctf wrote in dir, its
 * events in the order they were written; -errno with a line in err. */
int djp_ctf_source_open(const char *dir, struct djp_source **out, char *err, size_t errsz);

/* The kernel source (kernel.c): the markers of loaded modules through
 * /dev/djprobe; every marker is a descriptor, kernel = true. */
int djp_kernel_source_open(struct djp_source **out, char *err, size_t errsz);

#endif
