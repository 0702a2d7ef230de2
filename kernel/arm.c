/*
 * Applying a batch: every site of the batch goes, in one int3 bootstrap, to
 * the state that its (new) handler list asks for.  The order of the steps,
 * and what a failure at each one undoes, are the state machine that
 * djprobe.ko runs too (kernel/apply_steps.c); these are user space's steps.
 *
 * Step 1: decide.  No handlers: idle.  Some handler forced int3, the site is
 *         shorter than a jump (an SDT probe's 1-byte nop that the attach
 *         code could not widen: kernel/attach.c), or no trampoline is in
 *         reach: int3.  Otherwise a jump, to the full trampoline if
 *         any handler may touch vector state, else to the lean one; to
 *         their variant that puts %rsp and %rbp in the view if a handler
 *         walks the stack (DJP__STACK) and the arguments do not read them:
 *         a trampoline of its own, so that a site jumps from one variant
 *         to the other as handlers come and go, and the others pay nothing.
 * Step 2: make the missing trampolines (one text session for the batch);
 *         a site that cannot have one falls back to int3.
 * Check:  refuse before writing anything: a thread that blocks SIGTRAP
 *         (-EDEADLK) unless the other threads can be stopped for the
 *         writes and no site is left an int3 (kernel/freeze.c), or a site
 *         whose bytes are not what its state says
 *         (-EBUSY: a debugger's breakpoint, a uprobe, a foreign patcher).
 *         Only the shadow copy is ever compared, never re-read text.
 * Step 3: none of its own: an int3 and a jump are both bytes of ours, so
 *         the one bootstrap of step 5 leaves the old states as it enters
 *         the new ones.
 * Step 4: publish the new handler lists (and raise the SDT semaphores of
 *         the sites being armed).
 * Step 5: a trap table that tells the SIGTRAP handler what each site in
 *         flight is becoming, then the int3 bootstrap (arch_poke_batch),
 *         three syncs for all; or, the other threads stopped, each site
 *         written whole, one sync.  On failure the text is as before: the
 *         old lists go back.
 * Step 6: on success, record the states and publish the table of int3
 *         probes.  Either way wait for a grace period where a list was
 *         retired, then free the lists that no handler can still be
 *         reading.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "kernel/apply_steps.h"
#include "kernel/arming.h"
#include "kernel/lock.h"
#include "kernel/rcu.h"
#include "lib/addr_sorted.h"
#include "lib/sysops.h"

/* A site's state is its way (apply_steps.h), as djprobe.ko's is. */
_Static_assert(SITE_IDLE == (int)DJP_WAY_OFF && SITE_INT3 == (int)DJP_WAY_TRAP && SITE_JUMP == (int)DJP_WAY_JUMP,
	       "enum djp_site_state is enum djp_way");

void djp_site_expected(const struct djp_site *s, int state, int flavour, uint8_t *out)
{
	memcpy(out, s->orig, s->len);
	if (state == SITE_INT3)
		out[0] = X86_INT3;
	else if (state == SITE_JUMP)
		x86_encode_jmp(out, s->addr, s->tramp[flavour]);
}

/* The flavour (enum djp_flavour) of a site's trampoline index. */
static int arch_flavour(int flavour)
{
	return flavour >= DJP_TRAMP_STACK ? flavour - DJP_TRAMP_STACK : flavour;
}

/* The registers a site's trampoline of `flavour` keeps in the view: those
 * its argument locations read. */
static uint32_t regs_used(const struct djp_site *s, int flavour)
{
	uint32_t m = 0;
	/* An instruction probe's handler may read any register (djp_hit_reg;
	 * the site is its pc, which the view need not hold).  The full
	 * flavour stores them all; the lean one stores the stack pointer
	 * besides what every trampoline stores, and leaves the callee-saved
	 * registers where they are: djp_hit_reg finds them by unwinding the
	 * handler's frames (kernel/callee_saved.c), six stores a hit fewer on
	 * x86-64.  The prefetching flavour stores the stack pointer too,
	 * though its one handler, a fast entry,
	 * never reads it: a list is published before the text moves to the
	 * trampoline it asks for, so for the length of a batch the old
	 * trampoline runs the new list, whose handlers may (a return probe's
	 * hook writes through it).  A site whose arguments are read after
	 * its first trampolines were made (points.c) keeps them all: the
	 * view of a trampoline never changes, and theirs must hold what the
	 * arguments read later do. */
	if (s->obj->parent && (arch_flavour(flavour) == DJP_FULL || s->args_late))
		return ARCH_VIEW_ALL;
	if (s->obj->parent)
		m |= 1u << DJP_REG_SP;
	for (unsigned i = 0; i < s->m->nargs; i++) {
		const struct djp_argloc *a = &s->m->arg[i];
		if ((a->kind == DJP_LOC_REG || a->kind == DJP_LOC_MEM) && a->reg != DJP_REG_NONE)
			m |= 1u << a->reg;
		if (a->kind == DJP_LOC_MEM && a->index != DJP_REG_NONE)
			m |= 1u << a->index;
	}
	return m;
}

/* What the trampoline at index f of s.tramp (a flavour, + DJP_TRAMP_STACK
 * for its variant that keeps %rsp and %rbp) stores in the view. */
static uint32_t view_regs(const struct djp_site *s, int f)
{
	return ARCH_CALLER_SAVED | regs_used(s, f) | (f >= DJP_TRAMP_STACK ? DJP_STACK_REGS : 0);
}

bool djp__site_views_hold_stack(const struct djp_site *s)
{
	for (int f = 0; f < DJP_FLAVOURS; f++)
		if ((view_regs(s, f) & DJP_STACK_REGS) != DJP_STACK_REGS)
			return false;
	return true;
}

uint32_t djp__view_regs(const struct djp_hit *hit)
{
	const struct djp_site *s;
	if (!arch_hit_from_call(hit))
		return (1u << DJP_REG_COUNT) - 1;
	s = djp__hit_site(hit);
	for (int f = 0; f < DJP_SITE_TRAMPS; f++)
		if (arch_hit_from_tramp(hit, __atomic_load_n(&s->tramp[f], __ATOMIC_RELAXED)))
			return view_regs(s, f);
	return ARCH_CALLER_SAVED;
}

static void desired_state(const struct djp_site *s, const struct djp_handler_list *l, int *state, int *flavour,
			  bool *forced)
{
	int force_int3 = 0, full = 0, stack = 0;
	*forced = false;
	*flavour = DJP_LEAN;
	if (!l || !l->n || s->is_return) { /* a return site has no bytes */
		*state = SITE_IDLE;
		return;
	}
	for (unsigned i = 0; i < l->n; i++) {
		force_int3 |= !!(l->h[i].flags & DJP_FORCE_INT3);
		full |= !(l->h[i].flags & DJP_GPR_ONLY);
		stack |= (l->h[i].flags & (DJP__STACK | DJP__SKIP)) == DJP__STACK;
	}
	/* a handler that walks the stack: a view with %rsp and %rbp, where
	 * the arguments do not have them already (an instruction probe's
	 * view has every register); the one handler's fast entry, if any,
	 * is not for such a list */
	if (stack && (regs_used(s, full ? DJP_FULL : DJP_LEAN) & DJP_STACK_REGS) != DJP_STACK_REGS)
		*flavour = (full ? DJP_FULL : DJP_LEAN) + DJP_TRAMP_STACK;
	else
		*flavour = full ? DJP_FULL : l->wants_prefetch ? DJP_LEAN_PREFETCH : DJP_LEAN;
	/* a trap where a handler forces it or no jump can be placed */
	*state = djp_way_wanted(l->n, force_int3 || s->no_jump || s->len < X86_JMP_REL32_LEN || (full && !arch_xsave_size()),
				s->state, false);
	*forced = force_int3 && !s->no_jump && !(full && !arch_xsave_size());
}

/*
 * The trap entry of a site that is an int3 probe.  A run that starts
 * before its site has its int3 at the run's start, where the registers are
 * not the probe's: the trap enters the site's trampoline (of `flavour`,
 * made for it), which runs the instructions before the probe, the
 * handlers, then the rest.  Such a site is an int3 only while it is armed
 * and a thread kept its jump out (threads_check.c) or a handler asks for
 * an int3; one that is to be armed as an int3 from idle is narrowed to its
 * probe's instruction first (batch_decide).
 */
static struct djp_trap_entry int3_entry(struct djp_site *s, int flavour)
{
	if (djp_site_runs_before(s))
		return (struct djp_trap_entry){ s->addr, s->tramp[flavour], s, DJP_TRAP_JUMP, s->len };
	return (struct djp_trap_entry){ s->addr, djp_site_ool(s), s, DJP_TRAP_PROBE, s->len };
}

/* Every int3 probe outside the batch, plus the batch's own entries. */
static struct djp_trap_table *trap_table_build(struct djp_trap_entry *extra, size_t nextra, struct djp_site **skip,
					       size_t nskip)
{
	struct djp_trap_table *t;
	size_t n = nextra, k = 0;
	for (struct djp_object *o = djp_objects; o; o = o->next)
		for (size_t i = 0; i < o->nsites; i++)
			n += o->sites[i].state == SITE_INT3;
	t = malloc(sizeof(*t) + n * sizeof(t->e[0]));
	if (!t)
		return NULL;
	for (size_t j = 0; j < nskip; j++)
		skip[j]->in_batch = true;
	for (struct djp_object *o = djp_objects; o; o = o->next)
		for (size_t i = 0; i < o->nsites; i++) {
			struct djp_site *s = &o->sites[i];
			if (s->state == SITE_INT3 && !s->in_batch)
				t->e[k++] = int3_entry(s, s->flavour);
		}
	for (size_t j = 0; j < nskip; j++)
		skip[j]->in_batch = false;
	if (nextra)
		memcpy(&t->e[k], extra, nextra * sizeof(*extra));
	t->n = k + nextra;
	qsort(t->e, t->n, sizeof(t->e[0]), djp_addr_cmp);
	return t;
}

static void semaphore_adjust(struct djp_site *s, int delta)
{
	if (s->m->semaphore)
		__atomic_fetch_add((uint16_t *)(s->obj->bias + s->m->semaphore), (uint16_t)delta, __ATOMIC_RELAXED);
}

/* One batch of djp_sites_apply, for the steps' ops. */
struct batch {
	struct djp_site **sites;
	size_t n;
	const struct djp_handler_list **new_lists;
	int *state, *flavour;
	struct djp_handler_list **old_lists;
	struct djp_poke *pokes;
	struct djp_trap_entry *entries;
	struct djp_site **changing;
	size_t *poke_site, npokes;
	int frozen;
};

/* Does every handler of l leave an int3 probe to the kernel's uprobe? */
static bool left_to_kernel(const struct djp_handler_list *l)
{
	if (!l || !l->n)
		return false;
	for (unsigned i = 0; i < l->n; i++)
		if (!(l->h[i].flags & DJP__KERNEL_TRAP))
			return false;
	return true;
}

/* A site to become an int3 probe from idle for a reason of its own, not
 * a handler's asking, stays idle when its handlers leave it to the
 * kernel's uprobe (DJP__KERNEL_TRAP); true when it does. */
static bool leave_to_kernel(struct batch *b, size_t i, bool forced)
{
	struct djp_site *s = b->sites[i];
	if (b->state[i] != SITE_INT3 || forced || s->state != SITE_IDLE || !left_to_kernel(b->new_lists[i]))
		return false;
	b->state[i] = SITE_IDLE;
	s->kernel_trap = true;
	return true;
}

/* Step 1: each site's state.  (The lists are the caller's.) */
static int batch_decide(void *ctx)
{
	struct batch *b = ctx;
	struct djp_site **sites = b->sites;

	for (size_t i = 0; i < b->n; i++) {
		struct djp_site *s = sites[i];
		bool forced;
		desired_state(s, b->new_lists[i], &b->state[i], &b->flavour[i], &forced);
		if (b->state[i] == SITE_JUMP && arch_flavour(b->flavour[i]) == DJP_FULL &&
		    djp_object_vec_use(s->obj) == DJP_VEC_OTHER)
			b->state[i] = SITE_INT3, forced = false; /* state no trampoline saves */
		s->kernel_trap = false;
		if (leave_to_kernel(b, i, forced))
			continue;
		/* A run that starts before its site, to be an int3: from idle,
		 * narrowed to the probe's instruction for good; armed, its int3
		 * enters the trampoline (int3_entry), which only a handler's
		 * asking for an int3 allows (a trampoline of the flavour can be
		 * made; func_code.c allows no such run where a full one could
		 * not keep the object's vector state). */
		if (djp_site_runs_before(s) && b->state[i] == SITE_INT3 && s->state == SITE_IDLE)
			djp_site_narrow(s);
		else if (djp_site_runs_before(s) && b->state[i] == SITE_INT3 && !forced)
			return -ENOTSUP;
	}
	return 0;
}

/* The requests of a site of a batch: its out-of-line copy, which its int3
 * (and a jump being placed or taken away) runs, and its trampoline. */
static void site_reqs(struct batch *b, size_t i, struct djp_tramp_req *reqs, size_t *req_idx, size_t *nreqs)
{
	struct djp_site *s = b->sites[i];
	int state = b->state[i], flavour = b->flavour[i];
	/* a jump, or an int3 that enters the trampoline (int3_entry) */
	bool tramp = state == SITE_JUMP || (state == SITE_INT3 && djp_site_runs_before(s));

	if (state != SITE_IDLE && s->code && !s->code->ool)
		req_idx[*nreqs] = i, reqs[(*nreqs)++] = (struct djp_tramp_req){
			.site = s->addr, .len = s->len, .flavour = DJP_OOL, .ds = s, .code = s->orig
		};
	if (tramp && !s->tramp[flavour] && !s->no_jump)
		req_idx[*nreqs] = i,
		reqs[(*nreqs)++] = (struct djp_tramp_req){
			.site = s->addr,
			.len = s->len,
			.flavour = arch_flavour(flavour),
			.sp_align = s->m->sp_align,
			.ds = s,
			.list = &s->handlers,
			.regs_used = view_regs(s, flavour),
			/* an instruction probe's trampoline keeps the flags and
			 * ends with the displaced instructions (and, for a run
			 * that starts before it, begins with those before it) */
			.code = s->code ? s->orig : NULL,
			.keep_flags = s->code && s->code->keep_flags,
			.pre = s->code ? s->code->pre : 0,
			.args = s->m->arg,
			.nargs = s->m->nargs,
			.bias = s->obj->bias,
			.vec_use = arch_flavour(flavour) == DJP_FULL ? djp_object_vec_use(s->obj) : -1
		};
}

/* Step 2: the missing trampolines, in one text session (two where a run
 * that starts before its site gets none and is narrowed to an int3 probe
 * of its instruction, whose out-of-line copy is then made). */
static int batch_tramps(void *ctx)
{
	struct batch *b = ctx;
	struct djp_site **sites = b->sites;
	int *state = b->state, *flavour = b->flavour, err = 0;
	/* a trampoline and a copy a site */
	struct djp_tramp_req *reqs = calloc(2 * b->n, sizeof(*reqs));
	size_t *req_idx = calloc(2 * b->n, sizeof(*req_idx)), nreqs = 0;

	if (!reqs || !req_idx) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < b->n; i++)
		site_reqs(b, i, reqs, req_idx, &nreqs);
	for (int round = 0; nreqs && round < 2; round++) {
		size_t again = 0;
		arch_tramp_create(reqs, nreqs);
		for (size_t r = 0; r < nreqs; r++) {
			size_t i = req_idx[r];
			struct djp_site *s = sites[i];
			if (reqs[r].flavour == DJP_OOL) {
				/* no int3 probe at an instruction without its copy */
				if (!(s->code->ool = reqs[r].entry)) {
					err = reqs[r].err ? reqs[r].err : -ENOMEM;
					goto out;
				}
			} else if (reqs[r].entry) {
				s->tramp[flavour[i]] = reqs[r].entry;
			} else if (djp_site_runs_before(s) && s->state != SITE_IDLE) {
				/* armed: its int3 would have no trampoline to enter */
				err = reqs[r].err ? reqs[r].err : -ENOMEM;
				goto out;
			} else {
				s->no_jump |= reqs[r].err == -ERANGE;
				state[i] = SITE_INT3;
				if (leave_to_kernel(b, i, false))
					continue;
				if (djp_site_runs_before(s) && djp_site_narrow(s))
					req_idx[again++] = i; /* its copy made again, below */
			}
		}
		nreqs = 0;
		for (size_t k = 0; k < again; k++)
			site_reqs(b, req_idx[k], reqs, req_idx + again, &nreqs);
		memmove(req_idx, req_idx + again, nreqs * sizeof(*req_idx));
	}
out:
	free(reqs);
	free(req_idx);
	return err;
}

/* The refusals before anything is written: a site whose bytes are not
 * what its state says, a thread that blocks SIGTRAP with no way to write
 * the batch whole.  The pokes and the trap entries of the sites that
 * change. */
static int batch_check(void *ctx)
{
	struct batch *b = ctx;
	int *state = b->state, *flavour = b->flavour;

	for (size_t i = 0; i < b->n; i++) {
		struct djp_site *s = b->sites[i];
		struct djp_poke *p = &b->pokes[b->npokes];
		uint8_t cur[DJP_SITE_MAX_LEN];
		if (state[i] == s->state && (state[i] != SITE_JUMP || flavour[i] == s->flavour))
			continue;
		djp_site_expected(s, s->state, s->flavour, cur);
		if (memcmp((void *)s->addr, cur, s->len))
			return -EBUSY;
		p->addr = s->addr;
		p->len = s->len;
		/* a jump over instructions a thread may be inside */
		p->check = s->code && state[i] == SITE_JUMP && s->state != SITE_JUMP;
		b->poke_site[b->npokes] = i;
		memcpy(p->old, cur, s->len);
		djp_site_expected(s, state[i], flavour[i], p->new);
		if (state[i] == SITE_IDLE)
			b->entries[b->npokes] = (struct djp_trap_entry){ s->addr, djp_site_ool(s), s, DJP_TRAP_SKIP, s->len };
		else if (state[i] == SITE_JUMP)
			b->entries[b->npokes] =
				(struct djp_trap_entry){ s->addr, s->tramp[flavour[i]], s, DJP_TRAP_JUMP, s->len };
		else
			b->entries[b->npokes] = int3_entry(s, flavour[i]);
		b->changing[b->npokes++] = s;
	}
	/* a thread that blocks SIGTRAP: the batch is written with the other
	 * threads stopped, or refused (freeze.c) */
	if (b->npokes && (b->frozen = djp_freeze_needed(b->changing, b->pokes, b->npokes)) < 0)
		return b->frozen;
	return 0;
}

/* Step 4.  An SDT semaphore goes up with the lists, before the text
 * changes: a program that tests it before reaching the nop then reaches
 * the probe from the moment its first byte is armed (the nop it runs
 * before that does nothing). */
static bool batch_publish(void *ctx)
{
	struct batch *b = ctx;
	bool retired = false;

	for (size_t i = 0; i < b->n; i++) {
		struct djp_site *s = b->sites[i];
		b->old_lists[i] = atomic_exchange(&s->handlers, (struct djp_handler_list *)b->new_lists[i]);
		if (s->state == SITE_IDLE && b->state[i] != SITE_IDLE)
			semaphore_adjust(s, 1);
		/* A grace period only where a list is retired: then a handler
		 * may be running from it (and disconnect promises it runs
		 * nowhere on return).  Arming sites that had none retires
		 * nothing. */
		retired |= b->old_lists[i] != NULL;
	}
	return retired;
}

/* Step 5: a trap table that tells the SIGTRAP handler what each site in
 * flight is becoming, then the int3 bootstrap (arch_poke_batch), three
 * syncs for all; or, the other threads stopped, each site written whole,
 * one sync.  On failure the text is as before. */
static int batch_enter(void *ctx)
{
	struct batch *b = ctx;
	struct djp_trap_table *t;

	if (!b->npokes)
		return 0;
	if (!(t = trap_table_build(b->entries, b->npokes, b->changing, b->npokes)))
		return -ENOMEM;
	arch_trap_publish(t);
	return b->frozen ? djp_freeze_poke(b->pokes, b->npokes)
			 : arch_poke_batch(b->pokes, b->npokes, djp_sync_cores, djp_threads_outside);
}

/* The text is as before: so are the lists and the semaphores. */
static void batch_unpublish(void *ctx)
{
	struct batch *b = ctx;

	for (size_t i = 0; i < b->n; i++) {
		struct djp_site *s = b->sites[i];
		atomic_store(&s->handlers, b->old_lists[i]);
		if (s->state == SITE_IDLE && b->state[i] != SITE_IDLE)
			semaphore_adjust(s, -1);
	}
	arch_trap_publish(trap_table_build(NULL, 0, NULL, 0));
}

/* Step 6.  On success, the states recorded and the table of int3 probes
 * published; the lists no handler can still be reading freed: the old
 * ones, or after a failure the new ones. */
static void batch_retire(void *ctx, bool grace, int err)
{
	struct batch *b = ctx;

	if (!err) {
		/* a jump that a thread inside its range kept out: an int3 probe */
		for (size_t k = 0; k < b->npokes; k++)
			if (b->pokes[k].demoted)
				b->state[b->poke_site[k]] = SITE_INT3;
		for (size_t i = 0; i < b->n; i++) {
			struct djp_site *s = b->sites[i];
			if (s->state != SITE_IDLE && b->state[i] == SITE_IDLE)
				semaphore_adjust(s, -1); /* (raised in step 4) */
			s->state = (uint8_t)b->state[i];
			s->flavour = (uint8_t)b->flavour[i];
			s->yielded = false; /* armed again, or its handlers gone */
		}
		if (b->npokes)
			arch_trap_publish(trap_table_build(NULL, 0, NULL, 0));
	}
	if (grace)
		djp_rcu_synchronize();
	for (size_t i = 0; i < b->n; i++)
		free(err ? (void *)b->new_lists[i] : b->old_lists[i]);
}

/* Refused before step 4: the new lists were never seen. */
static void batch_discard(void *ctx)
{
	struct batch *b = ctx;

	for (size_t i = 0; i < b->n; i++)
		free((void *)b->new_lists[i]);
}

static const struct djp_apply_ops batch_ops = {
	.decide = batch_decide,
	.tramps = batch_tramps,
	.check = batch_check,
	.publish = batch_publish,
	.enter = batch_enter,
	.unpublish = batch_unpublish,
	.retire = batch_retire,
	.discard = batch_discard,
};

int djp_sites_apply(struct djp_site **sites, size_t n, const struct djp_handler_list **new_lists)
{
	DJP_LOCK_HELD();
	struct batch b = { .sites = sites, .n = n, .new_lists = new_lists };
	int err;

	b.state = calloc(n, sizeof(*b.state));
	b.flavour = calloc(n, sizeof(*b.flavour));
	b.old_lists = calloc(n, sizeof(*b.old_lists));
	b.pokes = calloc(n, sizeof(*b.pokes));
	b.entries = calloc(n, sizeof(*b.entries));
	b.changing = calloc(n, sizeof(*b.changing));
	b.poke_site = calloc(n, sizeof(*b.poke_site));
	if (!b.state || !b.flavour || !b.old_lists || !b.pokes || !b.entries || !b.changing || !b.poke_site) {
		batch_discard(&b);
		err = -ENOMEM;
	} else {
		err = djp_apply_steps(&batch_ops, &b, 0);
	}
	free(b.state);
	free(b.flavour);
	free(b.old_lists);
	free(b.pokes);
	free(b.entries);
	free(b.changing);
	free(b.poke_site);
	return err;
}

/*
 * An object unmapped while armed (unloaded by a dlclose that did not pass
 * through ours: glibc's own, for NSS modules): its text is gone, so
 * nothing is written; its sites forget their state, the trap table drops
 * its int3 probes, and its lists are freed after a grace period.
 */
void djp_sites_forget(struct djp_object *o)
{
	DJP_LOCK_HELD();
	struct djp_handler_list **old = calloc(o->nsites ? o->nsites : 1, sizeof(*old));
	struct djp_trap_table *t;
	bool retired = false;
	for (size_t i = 0; i < o->nsites; i++) {
		struct djp_site *s = &o->sites[i];
		struct djp_handler_list *l = atomic_exchange(&s->handlers, NULL);
		s->state = SITE_IDLE;
		retired |= l != NULL;
		if (old)
			old[i] = l; /* else leaked: better than freed too early */
	}
	if ((t = trap_table_build(NULL, 0, NULL, 0)))
		arch_trap_publish(t);
	if (retired)
		djp_rcu_synchronize(); /* no hit still reads the lists */
	for (size_t i = 0; old && i < o->nsites; i++)
		free(old[i]);
	free(old);
}

/*
 * Another tool's breakpoint on a site of ours: a uprobe (perf, bpftrace,
 * SystemTap) put on the same instruction after the engine armed it.  The
 * kernel writes its int3 over the first byte, keeps the byte it read from
 * the file, and writes that byte back when the uprobe goes.
 *
 *   - Over a jump, that byte in front of the jump's tail would leave a
 *     torn instruction, and the program would die on it.  So while the
 *     foreign int3 is there, the tail goes back to the original
 *     instructions under it (which keeps every thread off the bytes
 *     behind it: the kernel runs its probe and steps over its own copy of
 *     the instruction).
 *   - Inside a jump, at an instruction of the file that the jump covers,
 *     the int3 has bent the jump's target already, and the file's byte
 *     the kernel writes back when it goes would bend it for good: the
 *     site goes back to the original instructions around that int3.
 *   - Over an int3 of ours the kernel writes nothing (it takes the int3
 *     for its own), runs its probe at each hit instead of sending us the
 *     SIGTRAP, and when it goes writes the file's byte over our int3: the
 *     site is the original instruction again, and silent.
 *
 * Either way the site is given up, `yielded`: idle, its handler list kept,
 * its hits lost while the other tool holds it (each site given up is
 * counted, and `djp` reports it).  Once its bytes are the file's again, the
 * other tool gone, it is retaken: the same list applied again, an
 * ordinary batch (djp_sites_retake, kernel/retake.c, above the attach
 * code: this file decides no list).  A batch that arms it meanwhile finds
 * the foreign int3 (-EBUSY) while it lasts.
 *
 * The agent looks every 100 ms.  The bytes are read so that a fault cannot
 * kill the program (an object glibc unloaded behind the engine's back, its
 * own dlclose of an NSS module, is still on the list until the next
 * refresh), and cheaply: process_vm_readv of each site's bytes, PEEK_BATCH
 * sites a call; an element that faults ends a call's transfer, and the
 * next call starts after it.
 */
#define PEEK_BATCH 256 /* iovecs a call: 8 KiB of the agent thread's stack */

/* bytes[i] = sites[i]'s bytes, ok[i] whether they could all be read. */
static void peek_sites(struct djp_site **sites, size_t n, uint8_t (*bytes)[DJP_SITE_MAX_LEN], bool *ok)
{
	struct iovec local[PEEK_BATCH], remote[PEEK_BATCH];
	pid_t pid = getpid();
	size_t i = 0;

	while (i < n) {
		size_t k = n - i < PEEK_BATCH ? n - i : PEEK_BATCH, j = 0;
		long got;
		for (size_t e = 0; e < k; e++) {
			local[e] = (struct iovec){ bytes[i + e], sites[i + e]->len };
			remote[e] = (struct iovec){ (void *)sites[i + e]->addr, sites[i + e]->len };
		}
		got = syscall(SYS_process_vm_readv, pid, local, (unsigned long)k, remote, (unsigned long)k, 0UL);
		/* the elements read whole; the next one, if any, faulted */
		for (size_t left = got < 0 ? 0 : (size_t)got; j < k && left >= local[j].iov_len; j++) {
			left -= local[j].iov_len;
			ok[i + j] = true;
		}
		if (j < k)
			ok[i + j++] = false;
		i += j;
	}
}

/* A site with bytes in `state`; an idle one only if given up with its
 * handlers. */
static bool looked_at(struct djp_site *s, int state)
{
	return s->state == state && s->len && (state != SITE_IDLE || (s->yielded && atomic_load(&s->handlers)));
}

/* The sites looked_at in `state`, and their bytes as peek_sites reads them. */
static size_t sites_in(int state, struct djp_site ***sites, uint8_t (**bytes)[DJP_SITE_MAX_LEN], bool **ok)
{
	size_t n = 0;
	for (struct djp_object *o = djp_objects; o; o = o->next)
		for (size_t i = 0; i < o->nsites; i++)
			n += looked_at(&o->sites[i], state);
	*sites = NULL;
	*bytes = NULL;
	*ok = NULL;
	if (!n)
		return 0;
	*sites = malloc(n * sizeof(**sites));
	*bytes = malloc(n * sizeof(**bytes));
	*ok = malloc(n * sizeof(**ok));
	if (!*sites || !*bytes || !*ok)
		return 0;
	n = 0;
	for (struct djp_object *o = djp_objects; o; o = o->next)
		for (size_t i = 0; i < o->nsites; i++)
			if (looked_at(&o->sites[i], state))
				(*sites)[n++] = &o->sites[i];
	peek_sites(*sites, n, *bytes, *ok);
	return n;
}

static void sites_in_free(struct djp_site **sites, uint8_t (*bytes)[DJP_SITE_MAX_LEN], bool *ok)
{
	free(sites);
	free(bytes);
	free(ok);
}

/* May jump site s, whose bytes are `now`, be given up: the only bytes not
 * ours are int3s (another tool's breakpoints), each at the start of an
 * instruction of the file, as a uprobe's is?  `keep`: where they are. */
static bool under_foreign_int3(const struct djp_site *s, const uint8_t *now, bool *keep)
{
	uint8_t ours[DJP_SITE_MAX_LEN];
	bool any = false, starts[DJP_SITE_MAX_LEN] = { false };
	struct djp_insn in;
	djp_site_expected(s, SITE_JUMP, s->flavour, ours);
	for (unsigned b = 0; b < s->len; b++) {
		keep[b] = now[b] != ours[b];
		if (keep[b] && now[b] != X86_INT3)
			return false; /* someone else's instruction: not ours to mend */
		any |= keep[b];
	}
	if (!any) /* (the common case, every look: nothing decoded) */
		return false;
	for (unsigned b = 0; b < s->len; b += in.len) {
		if (djp_insn_decode(s->orig + b, s->len - b, s->addr + b, &in) || !in.len)
			break;
		starts[b] = true;
	}
	for (unsigned b = 0; b < s->len; b++)
		if (keep[b] && !starts[b])
			return false; /* not where a uprobe can be */
	return true;
}

/* A site whose bytes are the original instructions now (or those around
 * another tool's int3): idle, its handlers kept for djp_sites_retake. */
static void give_up(struct djp_site *s, size_t *given)
{
	semaphore_adjust(s, -1);
	s->state = SITE_IDLE;
	s->yielded = true;
	++*given;
}

/* The jumps with a foreign int3 on them, given back to the original
 * instructions around it: an int3 over the first byte keeps every thread
 * off the rest (the kernel runs its probe and steps over its own copy of
 * the instruction).  One inside the jump (SystemTap and perf probe put a
 * function's probe after its prologue, which may be inside the jump of
 * the function's entry) has already bent the jump's target: the sooner
 * the bytes are the original instructions the better, with our own int3
 * over the first byte meanwhile, a trap table entry that skips the site
 * as an idle one would, and the foreign int3 never written (arch_poke_batch
 * leaves an int3 that the old bytes and the new both hold). */
static int yield_jumps(size_t *given)
{
	struct djp_site **jumps;
	uint8_t(*bytes)[DJP_SITE_MAX_LEN];
	struct djp_trap_table *t;
	bool *ok, keep[DJP_SITE_MAX_LEN];
	size_t njumps = sites_in(SITE_JUMP, &jumps, &bytes, &ok), n = 0, ntrapped = 0;
	struct djp_poke *pokes = NULL;
	struct djp_trap_entry *entries = NULL;
	struct djp_site **trapped = NULL;
	int err = 0;

	for (size_t i = 0; i < njumps && !err; i++) {
		struct djp_site *s = jumps[i];
		if (!ok[i] || !under_foreign_int3(s, bytes[i], keep))
			continue;
		/* room for the rest at the first one (most looks find none) */
		if (!pokes && (!(pokes = calloc(njumps - i, sizeof(*pokes))) ||
			       !(entries = calloc(njumps - i, sizeof(*entries))) ||
			       !(trapped = calloc(njumps - i, sizeof(*trapped))))) {
			err = -ENOMEM;
			break;
		}
		pokes[n].addr = s->addr;
		pokes[n].len = s->len;
		memcpy(pokes[n].old, bytes[i], s->len);
		memcpy(pokes[n].new, s->orig, s->len);
		for (unsigned b = 0; b < s->len; b++)
			if (keep[b])
				pokes[n].new[b] = X86_INT3;
		if (!keep[0]) { /* our int3 there for the length of the batch */
			entries[ntrapped] = (struct djp_trap_entry){ s->addr, djp_site_ool(s), s, DJP_TRAP_SKIP, s->len };
			trapped[ntrapped++] = s;
		}
		jumps[n++] = s; /* (n <= i) */
	}
	if (ntrapped && !err) {
		if (!(t = trap_table_build(entries, ntrapped, trapped, ntrapped)))
			err = -ENOMEM;
		else
			arch_trap_publish(t);
	}
	if (n && !err)
		err = arch_poke_batch(pokes, n, djp_sync_cores, NULL);
	for (size_t k = 0; k < n && !err; k++)
		give_up(jumps[k], given);
	if (ntrapped)
		arch_trap_publish(trap_table_build(NULL, 0, NULL, 0));
	sites_in_free(jumps, bytes, ok);
	free(pokes);
	free(entries);
	free(trapped);
	return err;
}

/* The int3 probes whose int3 another tool took for its own and wrote the
 * file's byte over when it went: the original instruction, whole. */
static void yield_lost_int3s(size_t *given)
{
	struct djp_site **traps;
	uint8_t(*bytes)[DJP_SITE_MAX_LEN];
	bool *ok;
	size_t ntraps = sites_in(SITE_INT3, &traps, &bytes, &ok), before = *given;

	for (size_t i = 0; i < ntraps; i++)
		if (ok[i] && !memcmp(bytes[i], traps[i]->orig, traps[i]->len))
			give_up(traps[i], given);
	if (*given > before) /* no int3 probe there now: a late trap from one is stale */
		arch_trap_publish(trap_table_build(NULL, 0, NULL, 0));
	sites_in_free(traps, bytes, ok);
}

int djp_sites_yield_to_foreign_traps(void)
{
	DJP_LOCK_HELD();
	size_t given = 0;
	int err = yield_jumps(&given);
	yield_lost_int3s(&given);
	return err ? err : (int)given;
}

size_t djp_sites_yielded_whole(struct djp_site ***out)
{
	DJP_LOCK_HELD();
	struct djp_site **idle;
	uint8_t(*bytes)[DJP_SITE_MAX_LEN];
	bool *ok;
	size_t nidle = sites_in(SITE_IDLE, &idle, &bytes, &ok), n = 0;

	for (size_t i = 0; i < nidle; i++)
		if (ok[i] && !memcmp(bytes[i], idle[i]->orig, idle[i]->len))
			idle[n++] = idle[i];
	free(bytes);
	free(ok);
	*out = idle;
	return n;
}
