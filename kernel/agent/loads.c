/*
 * Typed accesses read in the target: the load programs (lib/load_prog.h)
 * a tool gave the recorder, run at each hit of the sites they are for.
 *
 * A script's `$req->hdr->len` at process.function("handle") is compiled
 * by the tool, from the function's DWARF, into a program: start from the
 * argument's location at that address, add offsets, load pointers, load
 * the field.  The tool sends the programs of each function as a set named
 * as the function's site is ("func", "handle", or "handle%return"),
 * LOADS, before it connects the pattern; every event of that site then
 * carries the results after its arguments (DJP_EVF_LOADS, lib/ring.h).
 * They are read at the hit, in the thread that hit, never later from
 * outside: the structure the program is looking at may be gone a moment
 * after the function returns.
 *
 * Which set a site has is decided when the site's handler list is sealed
 * (the recorder's plan, kernel/agent/recorder.c): a site whose programs
 * the fast entry can run (djp_loads_fast_ok) keeps the set's pointer in
 * its plan and never looks it up again.  For the general record it is
 * found by its name at the site's first hit after a set came and cached
 * by marker id, tagged with the generation of the table, as the recorder
 * caches the string arguments of an id: a plain loop over the names (no
 * libc, no vector register: the recorder's promise), then one load per
 * hit.  A set is never changed or freed while the recorder lives, so a
 * hit that read a pointer to it may use it without a lock.
 *
 * Every load is fault-safe: the engine's copy routine when it is on
 * (arch_load_safe: one load instruction in place, whose fault the
 * engine's handler resumes at its entry of the djp_extable section), else process_vm_readv on
 * our own process, as the stack walker reads; an
 * address in the first page is refused without a load (a NULL pointer's
 * member).  A fault ends that program with the address, which the tool
 * says as stap does; the others run, and the program is not harmed.
 */
#pragma GCC target("general-regs-only")

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "kernel/engine.h"
#include "kernel/hit_args.h"
#include "kernel/agent/loads.h"
#include "kernel/agent/recorder.h"

struct djp_loads *djp_loads_create(void)
{
	struct djp_loads *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	if (!(l->cache = calloc(DJP_RECORDER_MAX_IDS, sizeof(*l->cache)))) {
		free(l);
		return NULL;
	}
	l->gen = 1;
	return l;
}

void djp_loads_destroy(struct djp_loads *l)
{
	if (!l)
		return;
	for (unsigned i = 0; i < l->nsets; i++)
		free(l->set[i]);
	free(l->cache);
	free(l);
}

int djp_loads_add(struct djp_loads *l, const struct djp_load_set *ls)
{
	struct djp_load_set *c;

	if (l->nsets == DJP_LOADS_MAX_SETS)
		return -E2BIG;
	if (!(c = malloc(sizeof(*c))))
		return -ENOMEM;
	*c = *ls;
	c->str_mask = 0;
	c->str_bound = 0;
	c->entry_mask = 0;
	for (unsigned i = 0; i < c->n && i < DJP_LOAD_MAX_PROGS; i++)
		c->entry_mask |= (uint64_t)c->prog[i].at_entry << i;
	if (c->entry_mask)
		djp_ret_set_entry_fn(djp_loads_ret_entry);
	for (unsigned i = 0; i < c->n && i < DJP_LOAD_MAX_PROGS; i++)
		if (c->prog[i].str_bound) {
			c->str_mask |= 1ull << i;
			if (c->prog[i].str_bound > c->str_bound)
				c->str_bound = c->prog[i].str_bound;
		}
	l->set[l->nsets] = c;
	__atomic_store_n(&l->nsets, l->nsets + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&l->gen, l->gen + 1, __ATOMIC_RELEASE);
	return 0;
}

/* a and b are the same string (b NUL-terminated, a may be NULL) */
static bool same(const char *a, const char *b)
{
	if (!a)
		a = "";
	for (; *a == *b; a++, b++)
		if (!*a)
			return true;
	return false;
}

static __attribute__((noinline)) uint32_t find(struct djp_loads *l, uint32_t id, const struct djp_site *s)
{
	unsigned gen = __atomic_load_n(&l->gen, __ATOMIC_ACQUIRE);
	unsigned n = __atomic_load_n(&l->nsets, __ATOMIC_ACQUIRE);
	uint32_t v = 0;

	for (unsigned i = 0; i < n; i++)
		if (same(s->m->provider, l->set[i]->provider) && same(s->m->name, l->set[i]->name) &&
		    (!l->set[i]->site || l->set[i]->site == s->m->site)) {
			v = i + 1;
			break;
		}
	v |= (gen & 0xffff) << 16;
	if (id < DJP_RECORDER_MAX_IDS)
		__atomic_store_n(&l->cache[id], v, __ATOMIC_RELAXED);
	return v;
}

const struct djp_load_set *djp_loads_of(struct djp_loads *l, uint32_t id, const struct djp_site *s)
{
	uint32_t v = id < DJP_RECORDER_MAX_IDS ? __atomic_load_n(&l->cache[id], __ATOMIC_RELAXED) : 0;

	if (__builtin_expect(!v || (v >> 16) != (__atomic_load_n(&l->gen, __ATOMIC_RELAXED) & 0xffff), 0))
		v = find(l, id, s);
	v &= 0xffff;
	return v ? __atomic_load_n(&l->set[v - 1], __ATOMIC_RELAXED) : NULL;
}

/* The slow reader, where the engine's copy cannot serve: process_vm_readv
 * on our own process, as the stack walker reads. */
static bool read_syscall(void *ctx, uint64_t addr, unsigned size, uint64_t *out)
{
	pid_t *pid = ctx; /* 0 until first needed */
	struct iovec local = { out, size }, remote = { (void *)(uintptr_t)addr, size };
	int saved_errno;
	long got;

	if (addr < 4096 || addr > UINT64_MAX - 8)
		return false;
	*out = 0;
	saved_errno = errno;
	if (!*pid)
		*pid = (pid_t)syscall(SYS_getpid);
	got = syscall(SYS_process_vm_readv, (long)*pid, &local, 1L, &remote, 1L, 0L);
	errno = saved_errno;
	return got == (long)size;
}

/* The programs of ls in `mask` (all: ~0) at hit, at site s. */
static uint64_t run_some(const struct djp_load_set *ls, uint64_t mask, const struct djp_hit *hit,
			 const struct djp_site *s, uint64_t *vals)
{
	bool fast = djp_safe_copy_on();
	uint64_t faulted = 0;
	pid_t pid = 0;

	for (unsigned i = 0; i < ls->n && i < DJP_LOAD_MAX_PROGS; i++) {
		const struct djp_load_prog *p = &ls->prog[i];
		uint64_t v;
		if (!(mask >> i & 1))
			continue;
		v = djp_arg_fetch(hit, s, &p->base);
		uint64_t x = p->idx.kind != DJP_LOC_NONE ? djp_arg_fetch(hit, s, &p->idx) : 0;
		if (!(fast ? djp_load_run_idx(p, v, x, djp_loads_read_fast, NULL, &vals[i])
			   : djp_load_run_idx(p, v, x, read_syscall, &pid, &vals[i])))
			faulted |= 1ull << i;
	}
	return faulted;
}

uint64_t djp_loads_run(const struct djp_load_set *ls, const struct djp_hit *hit, const struct djp_site *s,
		       uint64_t *vals, const void *owner)
{
	uint64_t faulted = run_some(ls, ~ls->entry_mask, hit, s, vals);
	const struct djp_ret_entry *e;

	if (!ls->entry_mask)
		return faulted;
	/* read at the call's entry, for this recorder; else (another
	 * session's probe of the same return took them) not read */
	e = djp_ret_entry_values();
	for (unsigned i = 0; i < ls->n && i < DJP_LOAD_MAX_PROGS; i++) {
		if (!(ls->entry_mask >> i & 1))
			continue;
		if (e && e->owner == owner) {
			vals[i] = e->v[i];
			faulted |= e->faulted & 1ull << i;
		} else {
			vals[i] = 0;
			faulted |= 1ull << i;
		}
	}
	return faulted;
}

void djp_loads_ret_entry(const struct djp_hit *hit, const struct djp_site *e, const struct djp_site *r,
			 struct djp_ret_entry *out)
{
	const struct djp_handler_list *l = atomic_load_explicit(&r->handlers, memory_order_acquire);

	for (unsigned k = 0; l && k < l->n; k++) {
		struct djp_recorder *rec;
		struct djp_loads *loads;
		const struct djp_load_set *ls;

		if (l->h[k].fn != djp_recorder_hit && l->h[k].fn != djp_recorder_hit_stack)
			continue;
		rec = l->h[k].data;
		if (!rec || !(loads = __atomic_load_n(&rec->loads, __ATOMIC_ACQUIRE)) ||
		    !(ls = djp_loads_of(loads, r->id, r)) || !ls->entry_mask)
			continue;
		out->faulted = run_some(ls, ls->entry_mask, hit, e, out->v);
		out->owner = rec;
		return;
	}
}

bool djp_loads_fast_ok(const struct djp_load_set *ls)
{
	if (ls->str_mask || ls->n > DJP_LOAD_MAX_PROGS)
		return false;
	for (unsigned i = 0; i < ls->n; i++) {
		const struct djp_argloc *b = &ls->prog[i].base;
		if (ls->prog[i].nderef > DJP_LOAD_MAX_DEREF || ls->prog[i].idx.kind != DJP_LOC_NONE ||
		    ls->prog[i].at_entry)
			return false;
		if (b->kind == DJP_LOC_IMM)
			continue;
		if (b->kind != DJP_LOC_REG || b->reg >= DJP_REG_COUNT || !(ARCH_CALLER_SAVED >> b->reg & 1) ||
		    b->size != 8 || b->reg_shift)
			return false;
	}
	return true;
}

bool djp_loads_fast_one(const struct djp_load_set *ls)
{
	const struct djp_load_prog *p = &ls->prog[0];

	return djp_loads_fast_ok(ls) && ls->n == 1 && p->base.kind == DJP_LOC_REG && !p->bit_size &&
	       (!p->is_signed || !p->size || p->size == 8);
}
