/*
 * The engine's internals: objects, sites, probes, and the one lock.
 * Never installed; kernel/ talks to arch/x86/ only through arch/x86/arch.h.
 */
#ifndef DJP_KERNEL_ENGINE_H
#define DJP_KERNEL_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/arch.h"
#include "djprobe/djprobe.h"
#include "lib/markers.h"

/* The state of a site's bytes: what the expected-bytes check compares. */
enum djp_site_state {
	SITE_IDLE, /* the original bytes (the shadow copy) */
	SITE_INT3, /* 0xcc then the original tail */
	SITE_JUMP, /* e9 rel32 to tramp[flavour], then the original tail */
};

/*
 * Per-site constants for a handler's specialised fast entry: filled in by
 * the handler's plan function when a site's list is sealed, and passed to
 * the entry as its data, so that a hit needs no lookup to find them.
 */
struct djp_fast_plan {
	void *data;	/* the handler's own data */
	uint32_t id;	/* the site's process-wide id */
	uint32_t nargs; /* arguments, which the trampoline prefetched */
	uintptr_t aux;	/* the handler's, derived from its data */
};

struct djp_site;

/*
 * The fast entry, a capability any lean handler may register with
 * djp__connect: called by a lean trampoline that loaded the site's first
 * four arguments itself (DJP_LEAN_PREFETCH), with the site's plan as data.
 * The plan function is asked once per site, when the site's list is sealed
 * with this handler alone on it; it fills in the plan and returns the entry,
 * or NULL when the site's arguments do not allow one (the handler is then
 * called as usual).
 */
typedef void (*djp_fast_entry_fn)(const struct djp_hit *hit, void *plan, uint64_t a0, uint64_t a1, uint64_t a2,
				  uint64_t a3);
typedef djp_fast_entry_fn (*djp_fast_plan_fn)(void *data, const struct djp_site *s, struct djp_fast_plan *plan);

/* Internal handler flags, above the public DJP_* ones.  DJP__ONCE: of the
 * handlers of a site with this flag and the same data (probes of one
 * client whose patterns overlap), one runs per hit, a DJP__STACK one if
 * there is one (it does what the client's others do, and more), else the
 * first; djp_list_seal marks the others DJP__SKIP.  DJP__STACK: the
 * handler walks the stack (kernel/unwind.h), so the site's view must hold
 * %rsp and %rbp, which a jump-armed marker's trampoline saves only for
 * such handlers (kernel/arm.c). */
#define DJP__STACK (1u << 29)
/* the view's registers a DJP__STACK handler walks from (1 << enum djp_reg) */
#define DJP_STACK_REGS (1u << DJP_REG_SP | 1u << DJP_REG_FP)
#define DJP__ONCE (1u << 30)
#define DJP__SKIP (1u << 31)

/*
 * A site's trampolines: one per flavour (arch.h), and the lean and full
 * ones again with %rsp and %rbp in the view, for sites a DJP__STACK
 * handler runs at: index flavour + DJP_TRAMP_STACK.  A site's view keeps
 * to what its arguments read otherwise, since every register stored is
 * paid at every hit (two more were 0.2 ns a hit of a lean marker's 1.5).
 */
#define DJP_TRAMP_STACK DJP_FLAVOURS
#define DJP_SITE_TRAMPS (2 * DJP_FLAVOURS)

struct djp_handler {
	djp_handler_fn fn;
	void *data;
	unsigned flags;
	int probe_id;
	djp_fast_plan_fn plan; /* or NULL */
};

/* Immutable once published; replaced whole and freed after a grace period
 * (kernel/rcu.c); made only by djp_list_make.  `lean` comes first: a lean
 * trampoline calls it directly (the only handler, or djp_run_lean_list
 * for more), a full one `full`, and a lean one that prefetched the site's
 * arguments `prefetch` (the only handler's specialised entry, if it has
 * one: each trampoline reads the one that matches what it passes, so that
 * none calls an entry with arguments it did not load). */
struct djp_handler_list {
	struct djp_fast_call lean;
	struct djp_fast_call full;     /* the full trampoline's: any one handler */
	struct djp_fast_call prefetch; /* a lean one's that prefetched the arguments */
	struct djp_fast_plan plan;
	bool wants_prefetch;	       /* `prefetch` is a specialised entry */
	unsigned n;
	struct djp_handler h[];
};

struct djp_object;

struct djp_site {
	uintptr_t addr;
	uint8_t len;
	uint8_t state;	 /* enum djp_site_state */
	uint8_t flavour; /* when SITE_JUMP: enum djp_flavour, + DJP_TRAMP_STACK */
	uint8_t orig[DJP_SITE_MAX_LEN]; /* shadow of the original bytes */
	uintptr_t tramp[DJP_SITE_TRAMPS]; /* per flavour (above), 0 until made */
	bool no_jump;			 /* no trampoline in reach: int3 only */
	/* An instruction probe's (kernel/points.c): where its int3 resumes,
	 * the displaced instruction relocated and a jump back (0 until made;
	 * a marker's NOP is skipped instead) */
	uintptr_t ool;
	bool keep_flags; /* an instruction probe's: its flags may be live */
	/* its bytes are instructions that run out of line or in its
	 * trampoline, relocated: an instruction probe's, or an SDT probe's
	 * nop and what follows it, once widened for a jump */
	bool displaces;
	bool widen_tried; /* an SDT site: djp_sdt_widen looked at it */
	/* idle with handlers: given up to another tool's breakpoint, to be
	 * retaken when it goes (arm.c, djp_sites_yield_to_foreign_traps) */
	bool yielded;
	/* Return probes (kernel/retprobes.c).  A function entry's site may
	 * have a return site, `ret`: a site with no bytes (len 0, never
	 * armed) whose handlers run when the calls through the entry return;
	 * the entry carries the hook that diverts those returns. */
	struct djp_site *ret;
	bool is_return;
	/* a return site's: some handler that may touch vector or x87 state
	 * was attached to it once (sticky), so returns save that state */
	atomic_bool ret_vec;
	bool in_batch;			 /* scratch for arm.c, under the lock */
	uint32_t id;			 /* process-wide marker id */
	const struct djp_marker_info *m;
	struct djp_object *obj;
	struct djp_handler_list *_Atomic handlers;
	/* hits not reported: inside a handler, or a handler skipped by a
	 * trampoline from before its batch (dispatch.c) */
	atomic_ulong misses;
};

struct djp_object {
	char *path; /* its name, as the loader knows it */
	char *file; /* what to read it from: the file mapped (objects.c) */
	uintptr_t bias;
	struct djp_marker_list *markers;
	size_t nsites;
	struct djp_site *sites;
	struct djp_object *next;
	bool seen; /* by the current refresh */
	/* loaded before the library's constructor ran: never unloaded */
	bool permanent;
	/* dlcloses in flight that may unload it (dlhooks.c): while non-zero
	 * its sites are out of every batch, and the object is not freed */
	unsigned closing;
	/* enum djp_vec_use of its code, -1 until a full trampoline needs it
	 * (arch/x86/vector_use.c); under the lock */
	int vec_use;
	/* Instruction probes (kernel/points.c).  A real object's function
	 * symbols, read when a point is first resolved in it (NULL before),
	 * and whether it is the main program.  Point sites live in objects of
	 * their own, `parent` being the object whose code they are in: every
	 * walk over sites sees them, and they come and go with it. */
	struct djp_func_table *funcs;
	bool is_main;
	/* its DWARF, for the parameters of its functions (lib/func_params.c),
	 * opened when a point is first made in it; NULL when it has none */
	struct djp_params_file *params;
	bool params_tried;
	/* where its branches can land, read when a jump is first considered */
	struct djp_branch_map map;
	bool map_ok;
	bool targets_read;
	struct djp_object *parent;
};

struct djp_probe {
	int id;
	char *pattern;
	djp_fast_plan_fn plan;
	djp_handler_fn fn;
	void *data;
	unsigned flags;
	struct djp_point *point; /* an instruction probe's points, or NULL */
	struct djp_probe *next;
};

/* engine.c */
/* djp_connect with what in-library clients may ask for besides. */
struct djp_connect_opts {
	djp_fast_plan_fn plan; /* a fast entry (above), or NULL */
	bool pending;	       /* keep the probe when nothing matches yet: the
				  markers of objects loaded later get it */
	bool once;	       /* DJP__ONCE: one call per hit with the client's
				  other probes of the same data */
	bool stack;	       /* DJP__STACK: the handler walks the stack */
	struct djp_point *point; /* an instruction probe's points (the
				    pattern is then NULL); the probe owns
				    them, freed on failure too */
};
int djp__connect(const char *pattern, djp_handler_fn fn, void *data, unsigned flags,
		 const struct djp_connect_opts *opts);
/* A new list for site `s`: `l`'s handlers without probe `remove_id`, plus
 * `add` (either may be NULL / -1), sealed; NULL when it would be empty or
 * on ENOMEM. */
struct djp_handler_list *djp_list_make(const struct djp_handler_list *l, const struct djp_probe *add, int remove_id,
				       const struct djp_site *s);
extern pthread_mutex_t djp_engine_lock;
/* Take and release djp_engine_lock, marking this thread as its holder
 * (connect and disconnect from a signal handler then return -EDEADLK). */
void djp_engine_lock_take(void);
void djp_engine_lock_release(void);
extern struct djp_object *djp_objects;
extern struct djp_probe *djp_probes;
int djp_engine_init_locked(void);
bool djp_engine_ready(void);

/* objects.c */
int djp_objects_refresh(void);
/* Put a new object on the list (its sites announced to the watcher), and
 * the next process-wide site id. */
void djp_object_add(struct djp_object *o);
uint32_t djp_site_id_next(void);
/* For the agent: visit every site of every loaded object (the registry is
 * refreshed first; the engine lock is held during the walk, so `fn` must not
 * call djp_connect).  A non-zero return from fn stops the walk and is
 * returned. */
typedef int (*djp_site_visit_fn)(void *ctx, uint32_t id, const char *object, uintptr_t addr,
				 const struct djp_marker_info *m);
int djp__sites_foreach(djp_site_visit_fn fn, void *ctx);
/* For the agent: from now on, fn is called for every site of each object
 * the engine reads, under the engine lock and before any of those sites can
 * be armed (the marker log is written there).  One watcher; NULL removes it. */
void djp__sites_watch(djp_site_visit_fn fn, void *ctx);
struct djp_site *djp_site_by_id(uint32_t id);

/* arm.c: bring every site of `sites` to the state its probes ask for. */
int djp_sites_apply(struct djp_site **sites, size_t n, const struct djp_handler_list **new_lists);
/* The sites another tool's breakpoint took over, given up: a jump with
 * its int3 on or in it given back to the original instructions around
 * that int3, an int3 probe whose int3 the other tool wrote the file's byte
 * over (arm.c has why).  Lock held; how many, or -errno. */
int djp_sites_yield_to_foreign_traps(void);
/* The sites given up whose bytes are the file's again, the other tool
 * gone: armed again for their handlers.  Lock held; 0 or -errno. */
int djp_sites_retake(void);
/* The one attach and detach path (attach.c; lock held).  Attach gives the
 * probe every matching site it does not carry, outside closing objects;
 * `*matched` (if not NULL) counts the matches, closing ones included. */
int djp_probe_attach(const struct djp_probe *p, size_t *matched);
int djp_probes_attach_all(void);
int djp_probe_detach(int id);
/* The pieces of an attach, for points.c: a vector of sites, and giving
 * each of them its list with `add` added or `remove_id` gone (one batch). */
struct site_vec {
	struct djp_site **v;
	size_t n, cap;
};
int djp_site_vec_push(struct site_vec *sv, struct djp_site *s);
/* Does the site's handler list hold probe `id`? */
bool djp_site_carries(const struct djp_site *s, int id);
int djp_change_probe(struct site_vec *sv, const struct djp_probe *add, int remove_id);
int djp_objects_detach(struct djp_object *const *objs, size_t nobjs);
/* How many batches run for dlopen or dlclose failed (they cannot report to
 * the application), and the last one's -errno (dlhooks.c). */
unsigned djp__engine_background_error(int *last);
/* For the agent's periodic look: djp_sites_yield_to_foreign_traps, each
 * site given up counted as a background error (-EBUSY), then
 * djp_sites_retake. */
void djp__engine_check_foreign_traps(void);
/* Objects were loaded behind the dlopen interposer's back (a versioned
 * dlopen, or an agent loaded after the program's calls were bound): give
 * every probe the sites it matches there, as the interposer does. */
void djp__engine_objects_changed(void);
/* The object is unmapped while armed: forget its sites' state without a
 * text write (arm.c). */
void djp_sites_forget(struct djp_object *o);
void djp_site_expected(const struct djp_site *s, int state, int flavour, uint8_t *out);

/* The site a hit is at. */
static inline struct djp_site *djp__hit_site(const struct djp_hit *hit)
{
	return (struct djp_site *)arch_hit_site(hit);
}

/* callee_saved.c: an instruction probe's %rbx, %rbp or %r12-%r15 (DWARF
 * number) at a lean hit, from where the handler's frames keep them; 0
 * when a frame on the way has no call-frame information.  _prepare sets
 * up the unwinder outside any handler (connect time). */
uint64_t djp_callee_saved_reg(const struct djp_hit *hit, int dwarf_reg);
void djp_callee_saved_prepare(void);

/* rcu.c: the calling thread's hits are none of the program's: from now
 * on (the agent's thread), or from __quiet_begin to __quiet_end given what
 * it returned (the library's own work on a program's thread; nothing
 * changes inside a handler, whose hits are misses already).  They are
 * dropped, not counted as misses. */
void djp__thread_quiet(void);
void *djp__quiet_begin(void);
void djp__quiet_end(void *was);

/* dispatch.c */
void djp_dispatch_lean(struct djp_hit *hit);
void djp_dispatch_full(struct djp_hit *hit);
void djp_trap_probe(struct djp_hit *hit);
bool djp_in_handler(void);
/* Fill in l->lean, l->full and l->prefetch (and l->plan, l->wants_prefetch)
 * from the handlers of a new list for site `s` (djp_list_make does). */
void djp_list_seal(struct djp_handler_list *l, const struct djp_site *s);
/* arm.c: does every trampoline flavour of site s keep %rsp and %rbp in
 * its view (its arguments read them, or it is an instruction probe's
 * full one), not only the DJP__STACK variants?  And the registers the
 * view of a hit holds (1 << enum djp_reg): every one for a SIGTRAP's or
 * a return's; for a trampoline's, what that trampoline stores (the one
 * whose slot the hit's key lies in). */
bool djp__site_views_hold_stack(const struct djp_site *s);
uint32_t djp__view_regs(const struct djp_hit *hit);
/* The process-wide id of the site hit (what the recorder stores), and its
 * marker record (name, format, argument locations). */
uint32_t djp__hit_id(const struct djp_hit *hit);
const struct djp_marker_info *djp__hit_marker(const struct djp_hit *hit);

/* points.c: instruction probes.  A probe's points, resolved again in every
 * object an attach looks at; attach gives it their sites (made the first
 * time a point is resolved).  Lock held. */
int djp_point_attach(const struct djp_probe *p, size_t *matched);
void djp_point_free(struct djp_point *pt);
bool djp_point_is_return(const struct djp_point *pt);
/* A pattern that names points ("func:NAME", "line:FILE:LINE"...; points.c
 * has the syntax): 0 and *out, 1 when it is a marker pattern, -EINVAL when
 * it is a malformed point, -ENOMEM. */
int djp__point_parse(const char *pattern, struct djp_point **out);
/* An idle SDT probe's 1-byte nop, about to be armed: widen the site to the
 * run of instructions a jump may cover from it, where the rules allow
 * (once a site; nothing changes when they do not). */
void djp_sdt_widen(struct djp_site *s);
/* An object goes: its symbol table too (objects.c). */
void djp_point_object_free(struct djp_object *o);

/* retprobes.c: return probes.  djp_ret_attach gives probe p the entry
 * sites of sv (function entries that do not carry it yet): their return
 * sites (made by points.c's djp_ret_sites) get p's handler, the entries
 * the hook that diverts their returns; one batch each, undone together.
 * djp_ret_probes_changed keeps the unwinder's hooks (retprobes.c) while
 * any return probe is connected.  Lock held. */
int djp_ret_attach(struct site_vec *sv, const struct djp_probe *p);
int djp_ret_probes_changed(int delta);
/* The value argument i had at the entry of the call whose return
 * handlers run on this thread now (DJP_LOC_SAVED); 0 elsewhere. */
uint64_t djp_ret_saved(unsigned i);
/* The return address that the stack word at `slot` held before this
 * thread's call there was diverted (it holds djp_ret_tramp's now), or 0
 * when no pending return of the thread has that slot: for a stack walk
 * in a handler.  Async-signal-safe. */
uintptr_t djp_ret_diverted(uintptr_t slot);
/* The return trampoline's entry (arch/x86/ret_tramp.S): a `ret` of a
 * diverted call lands there. */
extern char djp_ret_tramp[];
/* points.c: give every entry site of sv a return site (once a site). */
int djp_ret_sites(struct site_vec *sv);
/* engine.c: a probe of the engine's own, kept while return probes are
 * connected (pending: objects loaded later get it too): 0 and its id in
 * *id (below -1), or -errno.  djp__internal_probe_drop takes it away. */
int djp__internal_probe(struct djp_point *pt, djp_handler_fn fn, unsigned flags, int *id);
int djp__internal_probe_drop(int id);

/* threads_check.c: before a jump covers several instructions, whether a
 * thread is inside them (arch_poke_batch's check); and the engine signal
 * handler's part of it. */
void djp_threads_outside(struct djp_poke *p, size_t n);
/* The same while every other thread is stopped (kernel/freeze.c): _new,
 * before they are, allocates what _run needs; _run, while they are,
 * allocates nothing and returns 0 when every other thread is stopped and
 * none is inside a range of a poke marked `check`, -EAGAIN when one is
 * (or a thread's place cannot be read), -EDEADLK when one is not stopped. */
struct djp_stopped_check;
struct djp_stopped_check *djp_stopped_check_new(struct djp_poke *p, size_t n);
int djp_stopped_check_run(struct djp_stopped_check *c);
void djp_stopped_check_free(struct djp_stopped_check *c);
void djp_threads_check_answer(void *ucontext);

/* sync.c, engine_signal.c */
int djp_sync_init(void);
int djp_sync_cores(void); /* 0 or -errno */
int djp_engine_signal_init(void);
int djp_engine_signal(void);

/* safe_copy.c: give the ring a fault-safe string copy without a system
 * call, when the engine can keep a fault handler installed; 0, or -errno
 * when the ring keeps process_vm_readv (also safe).  Idempotent. */
int djp_safe_copy_enable(void);
/* Whether it is on, for the calling thread: the fault handler serves
 * djp_arch_copy_str and djp_arch_read_word (arch/x86/copy_str.S).
 * Async-signal-safe. */
bool djp_safe_copy_on(void);
/* The periodic look: the copy goes off for good once the program has put
 * a handler of its own in ours' place (the raw system call). */
void djp_safe_copy_check(void);

/* got_patch.c: in an injected library, point the program's GOT slots for
 * the interposed functions at ours (every loaded object; again for objects
 * loaded later).  djp_interposing: the program's calls reach them. */
int djp_got_interpose(void);
bool djp_interposing(void);
/* The interposers themselves (sigmask.c, dlhooks.c), by hidden names. */
extern __typeof(sigprocmask) djp__sigprocmask;
extern __typeof(pthread_sigmask) djp__pthread_sigmask;
extern __typeof(sigaction) djp__sigaction;
extern __typeof(signal) djp__signal;
extern __typeof(dlopen) djp__dlopen;
extern __typeof(dlclose) djp__dlclose;

/* sigmask.c */
int djp_check_sigblk(void);
/* One look, no waiting: -EDEADLK when a thread blocks a signal of `bad`
 * (bit sig - 1) now. */
int djp_sigblk_now(unsigned long long bad);
/* The same for the signals of `bad` (bit sig - 1). */
int djp_check_blocked(unsigned long long bad);

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
/* For a batch of pokes (sites[i] each's site): 0 when no thread blocks
 * SIGTRAP or the engine's signal (the int3 bootstrap serves), 1 when one
 * does and this thread has a freezer (djp_freeze_poke then writes the
 * batch), or -EDEADLK: one does and there is no freezer, or a site would
 * be left an int3 probe where a thread blocks SIGTRAP (remembered:
 * djp__refused_site). */
int djp_freeze_needed(struct djp_site *const *sites, const struct djp_poke *p, size_t n);
/* Stop the other threads, check that none is inside a range a poke covers
 * (retried a few times, the threads let go between), write the batch
 * whole, let them go.  0 or -errno (nothing written). */
int djp_freeze_poke(struct djp_poke *p, size_t n);
/* The site that the last -EDEADLK of this thread's batch refused for
 * being an int3 probe in a process where a thread blocks SIGTRAP, or NULL
 * (the refusal was the thread's block itself). */
const struct djp_site *djp__refused_site(void);

#endif
