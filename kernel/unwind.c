/*
 * Walking the call stack at a probe hit, in the process, from call-frame
 * information: what ubacktrace() needs.
 *
 * Where it runs.  A handler may be called from a SIGTRAP handler (an int3
 * probe) or from a trampoline at any instruction of the program, malloc's
 * included.  So the walk allocates nothing, takes no lock and interprets
 * no DWARF: like the kernel's ORC unwinder, it looks rows up in tables
 * made ahead of time (lib/unwind_table.c: per address range, the CFA as
 * %rsp or %rbp plus an offset, and where the caller's %rbp was saved) and
 * does the arithmetic.
 *
 * The tables.  djp__unwind_prepare() (arm time) reads a table for every
 * object of the engine's list (kernel/objects.c), by the object's path and
 * load bias, and publishes a registry: an immutable array of
 * [lo, hi) runtime ranges, sorted, each with its object's bias and table.
 * From then on every refresh of the object list (djp_connect, dlopen and
 * dlclose through the interposers) brings the registry in step: tables are
 * read for new objects, and the entries of objects that are gone are
 * dropped.  A registry is replaced whole; the old one, and the tables of
 * objects that went, are freed only after a grace period of the engine's
 * RCU (kernel/rcu.h), since a handler may be walking through them: every
 * handler runs inside a read-side section.  Between an object's unmapping
 * and the refresh that drops it, a walk may still find its table; the
 * table is ours and stays readable, and a pc there is at worst described
 * by stale rows, which the reads below survive.
 *
 * The walk.  pcs[0] is the hit's %rip, and its row is the one at %rip
 * itself; a caller's row is looked up at its return address minus one,
 * the call instruction, because a call may be the last instruction of a
 * function (noreturn) and the return address then belongs to the next
 * one.  From a row: CFA = %rsp or %rbp + offset; the return address is
 * the word where a call leaves it (ARCH_RA_FROM_CFA: CFA - 8 on x86-64);
 * the caller's %rsp is the CFA; its %rbp is ours or the word at CFA +
 * offset.  A frame must move up the stack (CFA above %rsp), which also
 * ends any cycle that garbage could make.  The registers are the arch's
 * stack and frame pointers (DJP_REG_SP, DJP_REG_FP), named here as x86-64
 * names them.
 *
 * Signal frames.  A signal handler returns to the restorer glibc gives
 * the kernel (__restore_rt: mov $15, %eax; syscall, whose own CFI is an
 * expression we do not follow).  When a return address holds exactly
 * those bytes (arch_at_sigreturn), and the row there is the signal
 * trampoline's, unknown or missing, the frame is a signal frame: at the
 * restorer %rsp points at the struct ucontext the kernel pushed (struct
 * rt_sigframe is the return address, then the ucontext), and the
 * interrupted registers are read from its mcontext (ARCH_UC_PC, _SP,
 * _FP).  The interrupted pc is where that frame is, not a
 * return address: its row is looked up at the pc itself.  The frame after
 * a signal frame may be on another stack (sigaltstack), so the
 * moves-up check does not apply across it.
 *
 * Reads.  Every stack word and the restorer's bytes are read with the
 * engine's fault-safe copy when it is on (djp_arch_read_word, in the same
 * fixup range as the string copy: kernel/safe_copy.c, a few nanoseconds;
 * djp__unwind_prepare asks for it), else with process_vm_readv on our own
 * process (a system call each: still never a crash).  A read that faults
 * ends the walk.
 *
 * The registers a walk starts from are the caller's to supply: %rip,
 * %rsp and %rbp.  An int3 probe's view holds them all (the SIGTRAP
 * handler copies the ucontext), an instruction probe's all but %rip (the
 * site: djp_hit_site).  A jump-armed marker's view holds %rsp and %rbp
 * when the marker's arguments read them, or when a handler connected with
 * DJP__STACK runs there: the site then jumps to a trampoline that saves
 * them (kernel/arm.c), which the others, paying for every register they
 * store, do not.
 *
 * Diverted returns.  A return probe replaces the return address of each
 * call it watches with its trampoline's (kernel/retprobes.c), so a walk
 * inside such a call reads djp_ret_tramp where the caller's address was.
 * The thread's own list of pending returns says what the slot held: the
 * walk goes on from there, as if nothing had been diverted.  (A walk runs
 * on the thread that hit, and a hit inside a handler is a miss, so the
 * list does not change under it.)
 *
 * Not followed: a CFA that an expression computes (stack realignment
 * through %r10, PLT stubs), registers other than %rsp, %rbp and the
 * return address, and code no object of the engine's list holds (the
 * vDSO, JIT code): a walk ends there.
 */
/* A walk runs in handlers the lean trampoline serves, which saves no
 * vector state: the compiler must not use a vector or x87 register here. */
#pragma GCC target("general-regs-only")

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "kernel/engine.h"
#include "kernel/hit.h"
#include "kernel/lock.h"
#include "kernel/probes.h"
#include "kernel/rcu.h"
#include "kernel/unwind.h"

extern uint64_t djp_arch_read_word(uint64_t *dst, const void *src);

/* One object's table, on the writer's side (engine lock). */
struct uw_obj {
	char *path;
	uintptr_t bias;
	struct djp_unwind_table *t; /* NULL: the object has none */
	bool seen;
	struct uw_obj *next;
};

/* What a walk reads: runtime ranges, sorted, immutable once published. */
struct uw_range {
	uintptr_t lo, hi, bias;
	const struct djp_unwind_table *t;
};

struct uw_registry {
	size_t n;
	struct uw_range r[];
};

static struct uw_obj *uw_objs;		     /* the writer's entries (engine lock) */
static bool prepared;			     /* since then refreshes keep them in step */
static struct uw_registry *_Atomic registry; /* what walks read (RCU) */
static atomic_bool syscall_reads;	     /* tests: process_vm_readv anyway */

/* ---- the registry (engine lock held) -------------------------------------- */

static struct uw_obj *uw_find(const char *path, uintptr_t bias)
{
	for (struct uw_obj *u = uw_objs; u; u = u->next)
		if (u->bias == bias && !strcmp(u->path, path))
			return u;
	return NULL;
}

/* A new entry for object o, its table read now (none when it has no CFI
 * or is not readable: walks stop there, and it is not read again). */
static struct uw_obj *uw_add(const struct djp_object *o)
{
	struct uw_obj *u = calloc(1, sizeof(*u));
	char err[256];

	if (!u || !(u->path = strdup(o->path))) {
		free(u);
		return NULL;
	}
	u->bias = o->bias;
	if (djp_unwind_table_build(o->file, &u->t, err, sizeof(err)))
		u->t = NULL;
	u->next = uw_objs;
	uw_objs = u;
	return u;
}

/* Ranges by start, for the walk's binary search. */
static int cmp_range(const void *a, const void *b)
{
	const struct uw_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The registry of the entries seen, sorted; NULL on ENOMEM. */
static struct uw_registry *registry_make(void)
{
	struct uw_registry *r;
	size_t n = 0;

	for (struct uw_obj *u = uw_objs; u; u = u->next)
		n += u->seen && u->t;
	if (!(r = malloc(sizeof(*r) + (n ? n : 1) * sizeof(r->r[0]))))
		return NULL;
	r->n = 0;
	for (struct uw_obj *u = uw_objs; u; u = u->next) {
		const struct djp_unwind_table *t = u->t;
		if (!u->seen || !t || t->n < 2)
			continue;
		uintptr_t lo = t->base + u->bias;
		r->r[r->n++] = (struct uw_range){ lo, lo + t->start[t->n - 1], u->bias, t };
	}
	qsort(r->r, r->n, sizeof(r->r[0]), cmp_range);
	return r;
}

/* Bring the entries in step with the engine's objects, publish a new
 * registry when anything changed, and free what went after a grace
 * period.  0 or -ENOMEM (the old registry then stays, and so do the
 * entries of objects that went). */
static int uw_sync(void)
{
	struct uw_registry *fresh, *old;
	struct uw_obj **pp, *gone = NULL;
	bool changed = false;
	int err = 0;

	for (struct uw_obj *u = uw_objs; u; u = u->next)
		u->seen = false;
	for (struct djp_object *o = djp_objects; o; o = o->next) {
		struct uw_obj *u;
		if (o->parent || !o->path || !o->file)
			continue; /* a point object: its parent has the code */
		if (!(u = uw_find(o->path, o->bias))) {
			if (!(u = uw_add(o))) {
				err = -ENOMEM;
				continue;
			}
			changed = true;
		}
		u->seen = true;
	}
	for (struct uw_obj *u = uw_objs; u; u = u->next)
		changed |= !u->seen;
	if (!changed)
		return err;
	if (!(fresh = registry_make()))
		return -ENOMEM;
	old = atomic_exchange_explicit(&registry, fresh, memory_order_acq_rel);
	for (pp = &uw_objs; *pp;) {
		struct uw_obj *u = *pp;
		if (u->seen) {
			pp = &u->next;
			continue;
		}
		*pp = u->next;
		u->next = gone;
		gone = u;
	}
	if (old || gone)
		djp_rcu_synchronize(); /* no walk still reads them */
	free(old);
	while (gone) {
		struct uw_obj *u = gone;
		gone = u->next;
		djp_unwind_table_free(u->t);
		free(u->path);
		free(u);
	}
	return err;
}

bool djp_unwind_prepared(void)
{
	return prepared;
}

/* The registry refreshed (kernel/objects.c tells once prepared). */
static void objects_changed(void)
{
	DJP_LOCK_HELD();
	uw_sync();
}

int djp_unwind_prepare_locked(void)
{
	DJP_LOCK_HELD();
	int err = djp_engine_init_locked(), err2;
	if (err)
		return err;
	prepared = true;
	djp_objects_on_refresh(objects_changed);
	err = djp_objects_refresh(); /* which brings the tables in step too */
	err2 = uw_sync();	     /* nothing to do, unless that ran short */
	return err ? err : err2;
}

int djp__unwind_prepare(void)
{
	int err;
	if (djp_in_handler())
		return -EDEADLK;
	/* outside the engine lock, as the recorder asks for it */
	(void)djp_safe_copy_enable();
	djp_engine_lock_take();
	err = djp_unwind_prepare_locked();
	djp_engine_lock_release();
	return err;
}

void djp__unwind_syscall_reads(bool on)
{
	atomic_store(&syscall_reads, on);
}

/* ---- the walk ----------------------------------------------------------------- */

/* How this walk reads memory. */
struct uw_reader {
	bool fast;
	pid_t pid; /* for process_vm_readv, 0 until first needed */
};

/* The word at addr; false when it cannot be read. */
static bool uw_read(struct uw_reader *rd, uint64_t addr, uint64_t *out)
{
	struct iovec local = { out, 8 }, remote = { (void *)(uintptr_t)addr, 8 };
	int saved_errno;
	long got;

	if (addr < 4096 || addr > UINT64_MAX - 8)
		return false;
	if (rd->fast)
		return !(djp_arch_read_word(out, (const void *)(uintptr_t)addr) >> 63);
	saved_errno = errno;
	if (!rd->pid)
		rd->pid = (pid_t)syscall(SYS_getpid);
	got = syscall(SYS_process_vm_readv, (long)rd->pid, &local, 1L, &remote, 1L, 0L);
	errno = saved_errno;
	return got == 8;
}

/* The range of the registry that holds runtime address pc, or NULL. */
static const struct uw_range *uw_range_at(const struct uw_registry *r, uint64_t pc)
{
	size_t lo = 0, hi = r ? r->n : 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pc < r->r[mid].lo)
			hi = mid;
		else if (pc >= r->r[mid].hi)
			lo = mid + 1;
		else
			return &r->r[mid];
	}
	return NULL;
}

/* The row for runtime address pc, or NULL. */
static const struct djp_uw_row *uw_row_at(const struct uw_registry *r, uint64_t pc)
{
	const struct uw_range *g = uw_range_at(r, pc);
	return g ? djp_unwind_table_find(g->t, pc - g->bias) : NULL;
}

const struct djp_unwind_table *djp__unwind_table_at(uint64_t pc, uint64_t *bias)
{
	const struct uw_range *g = uw_range_at(atomic_load_explicit(&registry, memory_order_acquire), pc);
	if (g && bias)
		*bias = g->bias;
	return g ? g->t : NULL;
}

/* Where one frame is. */
struct uw_frame {
	uint64_t pc, sp, bp;
	bool bp_ok; /* bp is the frame's %rbp */
	bool exact; /* pc is where the frame is (the hit, an interrupted pc),
		       not a return address */
};

/* uw_read for the arch's test of the restorer's bytes. */
static bool uw_read_word(void *rd, uint64_t addr, uint64_t *out)
{
	return uw_read(rd, addr, out);
}

/* Does pc hold the kernel's signal restorer (the arch's bytes)? */
static bool at_restorer(struct uw_reader *rd, uint64_t pc)
{
	return arch_at_sigreturn(uw_read_word, rd, pc);
}

/* Step from a signal handler's restorer to the interrupted frame: the
 * registers the kernel saved in the ucontext at the stack pointer. */
static bool uw_signal_step(struct uw_reader *rd, struct uw_frame *f)
{
	uint64_t uc = f->sp, pc, sp, bp;

	if (!uw_read(rd, uc + ARCH_UC_PC, &pc) || !uw_read(rd, uc + ARCH_UC_SP, &sp) ||
	    !uw_read(rd, uc + ARCH_UC_FP, &bp))
		return false;
	*f = (struct uw_frame){ .pc = pc, .sp = sp, .bp = bp, .bp_ok = true, .exact = true };
	return true;
}

/* Step from frame f to its caller; false when the walk ends here. */
static bool uw_step(const struct uw_registry *r, struct uw_reader *rd, struct uw_frame *f)
{
	const struct djp_uw_row *row = uw_row_at(r, f->exact ? f->pc : f->pc - 1);
	uint64_t cfa, ra, bp = f->bp;

	if (!row || row->cfa == DJP_UW_UNKNOWN || row->cfa == DJP_UW_SIGNAL)
		return at_restorer(rd, f->pc) && uw_signal_step(rd, f);
	if (row->cfa == DJP_UW_END)
		return false;
	if (row->cfa == DJP_UW_CFA_RBP && !f->bp_ok)
		return false;
	cfa = (row->cfa == DJP_UW_CFA_RSP ? f->sp : f->bp) + (uint64_t)(int64_t)row->cfa_off;
	if (cfa <= f->sp || !uw_read(rd, cfa + ARCH_RA_FROM_CFA, &ra))
		return false;
	if (ra == (uintptr_t)djp_ret_tramp) { /* a return probe's: the real one */
		uint64_t real = djp_ret_diverted(cfa + ARCH_RA_FROM_CFA);
		ra = real ? real : ra;
	}
	if (row->rbp == DJP_UW_RBP_SAVED && !uw_read(rd, cfa + (uint64_t)(int64_t)row->rbp_off, &bp))
		return false;
	f->bp_ok = row->rbp != DJP_UW_RBP_LOST && (row->rbp == DJP_UW_RBP_SAVED || f->bp_ok);
	f->bp = bp;
	f->sp = cfa;
	f->pc = ra;
	f->exact = false;
	return true;
}

unsigned djp__unwind(const struct djp_regs *regs, uint64_t *pcs, unsigned max)
{
	const struct uw_registry *r = atomic_load_explicit(&registry, memory_order_acquire);
	struct uw_reader rd = { .fast = djp_safe_copy_on() &&
					!atomic_load_explicit(&syscall_reads, memory_order_relaxed) };
	struct uw_frame f = { .pc = regs->r[DJP_REG_PC],
			      .sp = regs->r[DJP_REG_SP],
			      .bp = regs->r[DJP_REG_FP],
			      .bp_ok = true,
			      .exact = true };
	unsigned n = 0;

	if (!max)
		return 0;
	pcs[n++] = f.pc;
	while (n < max && uw_step(r, &rd, &f) && f.pc)
		pcs[n++] = f.pc;
	return n;
}
