/*
 * The engine as its clients inside the library see it (the recorder, the
 * aggregation, the agent: kernel/agent/), beside the public API of
 * <djprobe/djprobe.h>: connecting with what only they may ask for, the
 * registry's sites, the agent's periodic look, the freezer, the library's
 * own threads.  The one engine header a client includes (with
 * kernel/hit_args.h for the arguments of a hit); the engine's own files
 * include kernel/site.h, arming.h, probes.h and hit.h.  Never installed.
 */
#ifndef DJP_KERNEL_ENGINE_H
#define DJP_KERNEL_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "djprobe/djprobe.h"
#include "kernel/site.h"

/* engine.c: djp_connect with what in-library clients may ask for besides. */
struct djp_connect_opts {
	djp_fast_plan_fn plan; /* a fast entry (kernel/site.h), or NULL */
	bool pending;	       /* keep the probe when nothing matches yet: the
				  markers of objects loaded later get it */
	bool once;	       /* DJP__ONCE: one call per hit with the client's
				  other probes of the same data */
	bool stack;	       /* DJP__STACK: the handler walks the stack */
	bool kernel_trap;      /* DJP__KERNEL_TRAP: sites no jump can reach are
				  left idle for the client's uprobe */
	struct djp_point *point; /* an instruction probe's points (the
				    pattern is then NULL); the probe owns
				    them, freed on failure too */
};
int djp__connect(const char *pattern, djp_handler_fn fn, void *data, unsigned flags,
		 const struct djp_connect_opts *opts);

/* point_spec.c: a pattern that names points ("func:NAME",
 * "line:FILE:LINE"...; point_spec.c has the syntax): 0 and *out, 1 when it is a marker pattern,
 * -EINVAL when it is a malformed point, -ENOMEM. */
int djp__point_parse(const char *pattern, struct djp_point **out);
void djp_point_free(struct djp_point *pt);
bool djp_point_is_return(const struct djp_point *pt);

/* engine.c.  For the agent: visit every site of every loaded object (the
 * registry is refreshed first; the engine lock is held during the walk, so
 * `fn` must not call djp_connect).  A non-zero return from fn stops the
 * walk and is returned (djp_site_visit_fn: kernel/site.h). */
int djp__sites_foreach(djp_site_visit_fn fn, void *ctx);
/* engine.c.  For the agent: visit the sites of probe `probe` that its
 * connect left to the kernel's uprobe (DJP__KERNEL_TRAP: kernel/site.h),
 * under the engine lock; a non-zero return from fn stops the walk. */
int djp__kernel_trap_sites(int probe, djp_site_visit_fn fn, void *ctx);
/* objects.c.  For the agent: from now on, fn is called for every site of each object
 * the engine reads, under the engine lock and before any of those sites can
 * be armed (the marker log is written there).  One watcher; NULL removes it. */
void djp__sites_watch(djp_site_visit_fn fn, void *ctx);

/* dlhooks.c.  How many batches run for dlopen or dlclose failed (they
 * cannot report to the application), and the last one's -errno. */
unsigned djp__engine_background_error(int *last);
/* For the agent's periodic look: djp_sites_yield_to_foreign_traps, each
 * site given up counted as a background error (-EBUSY), then
 * djp_sites_retake. */
void djp__engine_check_foreign_traps(void);
/* Objects were loaded behind the dlopen interposer's back (a versioned
 * dlopen, or an agent loaded after the program's calls were bound): give
 * every probe the sites it matches there, as the interposer does. */
void djp__engine_objects_changed(void);

/* sync.c: what the first arming's cross-core sync needs, done now when
 * it is free (the agent, as it starts; see the function). */
void djp_sync_prepare(void);

/* rcu.c: the calling thread's hits are none of the program's: from now
 * on (the agent's thread), or from __quiet_begin to __quiet_end given what
 * it returned (the library's own work on a program's thread; nothing
 * changes inside a handler, whose hits are misses already).  They are
 * dropped, not counted as misses. */
void djp__thread_quiet(void);
void *djp__quiet_begin(void);
void djp__quiet_end(void *was);

/* dispatch.c: the process-wide id of the site hit (what the recorder
 * stores), and its marker record (name, format, argument locations). */
uint32_t djp__hit_id(const struct djp_hit *hit);
const struct djp_marker_info *djp__hit_marker(const struct djp_hit *hit);

/* arm.c: the registers (1 << enum djp_reg) the hit's view holds: every
 * one at an int3, else what its trampoline stores. */
uint32_t djp__view_regs(const struct djp_hit *hit);

/* safe_copy.c: give the ring a fault-safe string copy without a system
 * call, when the engine can keep a fault handler installed; 0, or -errno
 * when the ring keeps process_vm_readv (also safe).  Idempotent. */
int djp_safe_copy_enable(void);
/* Whether it is on, for the calling thread: the fault handler serves
 * djp_arch_copy_str and djp_arch_read_word (arch/x86/copy_str.S).
 * Async-signal-safe. */
bool djp_safe_copy_on(void);
/* Its state (1: on), for a hit path that cannot afford the call: 1 here
 * and djp_faults_masked clear in the thread (lib/real_signal.h) is
 * djp_safe_copy_on's yes without its function call. */
extern int djp__safe_copy_state;
/* The periodic look: the copy goes off for good once the program has put
 * a handler of its own in ours' place (the raw system call). */
void djp_safe_copy_check(void);

/* freeze.c: a process whose threads block SIGTRAP, armed with every other
 * thread stopped.  The freezer is the caller's (the agent asks its tool,
 * which ptrace-stops them), and serves the batches of the thread that set
 * it: freeze returns 0 once every thread but the caller is stopped until
 * thaw.  NULL: none (the thread's batches refuse such a process). */
struct djp_freezer {
	int (*freeze)(void *ctx);
	void (*thaw)(void *ctx);
	void *ctx;
};
void djp__engine_set_freezer(const struct djp_freezer *f);
/* The freezer of the batches of threads that have none of their own (a
 * dlopen's, the agent's background work), from any thread; it must time
 * out rather than hang.  NULL: none. */
void djp__engine_set_process_freezer(const struct djp_freezer *f);
/* The site that the last -EDEADLK of this thread's batch refused for
 * being an int3 probe in a process where a thread blocks SIGTRAP, or NULL
 * (the refusal was the thread's block itself). */
const struct djp_site *djp__refused_site(void);

#endif
