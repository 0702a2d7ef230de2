/*
 * The engine's data: the objects loaded, the sites of their markers and
 * points, and the handler lists a site runs.  The batch code (kernel/
 * arming.h) moves a site between its states; the probe code (kernel/
 * probes.h) decides which lists the sites get.  Never installed; kernel/
 * talks to arch/x86/ only through arch/x86/arch.h.
 */
#ifndef DJP_KERNEL_SITE_H
#define DJP_KERNEL_SITE_H

#include <stdatomic.h>
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
	uintptr_t aux2; /* and a second such word */
	/* the prefetched argument the entry starts from (a typed access's
	 * base), or DJP_TRAMP_PREFETCH for none */
	uint32_t arg;
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
/* DJP__KERNEL_TRAP: where every handler of a site says so, a site that
 * would become an int3 probe from idle for a reason of its own (no jump
 * can be placed: its bytes, its function, no trampoline in reach, vector
 * state) is left as it is, `kernel_trap` set, for the client to arm with
 * the kernel's uprobe (the djp tool's BPF recorder: docs/ENGINE.md,
 * "The kernel's uprobe where no jump can go").  Only the connect that
 * asks leaves sites: a probe's later objects get int3 probes. */
#define DJP__KERNEL_TRAP (1u << 28)

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

/*
 * What a site whose bytes are the program's own instructions keeps beyond
 * the common site, as kprobes' struct arch_specific_insn does: an
 * instruction probe's (kernel/points.c), or an SDT nop's once widened for
 * a jump over the instructions after it (kernel/sdt_widen.c).  They run
 * out of line or at the end of the site's trampoline, relocated.  A
 * marker's NOP is skipped instead and has none.  Read and written by the
 * batch code under the lock only: a trap reads its trap-table entry's
 * copy of `ool`, a jump's trampoline has the flags baked in, so no hit
 * follows this pointer.
 */
struct djp_site_code {
	/* where its int3 resumes: the first instruction relocated and a
	 * jump back (0 until made) */
	uintptr_t ool;
	bool keep_flags; /* its flags may be live (at the probe's instruction) */
	/* Bytes of the site before the probe's instruction: a run that
	 * starts earlier because the bytes after it were too few (kernel/
	 * site_narrow.c).  The site's bytes are then the run's; its int3,
	 * where it has one, is at the run's start and enters its trampoline
	 * (kernel/arm.c), never runs handlers there. */
	uint8_t pre;
};

struct djp_site {
	uintptr_t addr;
	uint8_t len;
	uint8_t state;	 /* enum djp_site_state */
	uint8_t flavour; /* when SITE_JUMP: enum djp_flavour, + DJP_TRAMP_STACK */
	uint8_t orig[DJP_SITE_MAX_LEN]; /* shadow of the original bytes */
	uintptr_t tramp[DJP_SITE_TRAMPS]; /* per flavour (above), 0 until made */
	bool no_jump;			 /* no trampoline in reach: int3 only */
	/* its bytes are instructions that run relocated (above), or NULL;
	 * freed with the site */
	struct djp_site_code *code;
	bool widen_tried; /* an SDT site: djp_sdt_widen looked at it */
	/* idle with handlers: given up to another tool's breakpoint, to be
	 * retaken when it goes (arm.c, djp_sites_yield_to_foreign_traps) */
	bool yielded;
	/* idle with handlers: left to the kernel's uprobe (DJP__KERNEL_TRAP),
	 * by the last batch that decided its state */
	bool kernel_trap;
	/* Return probes (kernel/retprobes.c).  A function entry's site may
	 * have a return site, `ret`: a site with no bytes (len 0, never
	 * armed) whose handlers run when the calls through the entry return;
	 * the entry carries the hook that diverts those returns. */
	struct djp_site *ret;
	bool is_return;
	/* A point's site made for probes that read no argument (DJP_NO_ARGS,
	 * kernel/points.c): `args_late` for its life, `args_unread` until a
	 * probe that reads them comes and its function's parameters are read
	 * then.  Its trampolines keep every register, whatever its arguments
	 * turn out to read (arm.c), and a prefetching one made before they
	 * were read (`prefetch_stale`: it loads none) runs no fast entry
	 * again (dispatch.c). */
	bool args_late, args_unread, prefetch_stale;
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

/* objects.c: the registry of loaded objects and their sites (lock held).
 * An object read from its file (NULL on ENOMEM; no sites when it cannot
 * be read), and freed once its sites are disarmed. */
extern struct djp_object *djp_objects;
struct djp_object *djp_object_load(const char *name, uintptr_t bias, uintptr_t text, bool permanent);
void djp_object_free(struct djp_object *o);
/* Put a new object on the list (its sites announced to the watcher), and
 * the next process-wide site id. */
void djp_object_add(struct djp_object *o);
uint32_t djp_site_id_next(void);
/* The watcher hears of a site again: its arguments changed (points.c). */
void djp_site_announce(const struct djp_site *s);
/* What its code keeps in vector registers (enum djp_vec_use, and
 * DJP_VEC_X87 when its x87 stack can be in use), decoded once. */
int djp_object_vec_use(struct djp_object *o);
struct djp_site *djp_site_by_id(uint32_t id);
/* refresh.c: bring the registry in step with the loader's list (lock
 * held); and fn is called at the end of every refresh from now on (one):
 * the stack walker's tables follow the registry. */
int djp_objects_refresh(void);
void djp_objects_on_refresh(void (*fn)(void));
/* What the registry tells a client of each site (kernel/engine.h). */
typedef int (*djp_site_visit_fn)(void *ctx, uint32_t id, const char *object, uintptr_t addr,
				 const struct djp_marker_info *m);

/* The probe's address: the site's, or past the part of its run before it. */
static inline uintptr_t djp_site_pc(const struct djp_site *s)
{
	return s->addr + (s->code ? s->code->pre : 0);
}

/* Does the site's run start before its probe's instruction? */
static inline bool djp_site_runs_before(const struct djp_site *s)
{
	return s->code && s->code->pre;
}

/* site_narrow.c: an idle site whose bytes are instructions (a widened SDT
 * nop, an instruction probe's run) becomes the probe's instruction alone,
 * an int3 probe for good: false when it cannot (armed, or a marker). */
bool djp_site_narrow(struct djp_site *s);

/* Where a site's int3 resumes: its code's relocated copy, or 0 (a
 * marker's NOP is skipped). */
static inline uintptr_t djp_site_ool(const struct djp_site *s)
{
	return s->code ? s->code->ool : 0;
}

/* The site a hit is at. */
static inline struct djp_site *djp__hit_site(const struct djp_hit *hit)
{
	return (struct djp_site *)arch_hit_site(hit);
}

#endif
