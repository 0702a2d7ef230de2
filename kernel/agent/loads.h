/*
 * The load programs a tool gave the recorder, by site (kernel/agent/
 * loads.c has the essay).
 */
#ifndef DJP_KERNEL_AGENT_LOADS_H
#define DJP_KERNEL_AGENT_LOADS_H

#include <stdint.h>

#include "kernel/engine.h"
#include "kernel/hit.h"
#include "lib/load_prog.h"
#include "lib/real_signal.h"

#define DJP_LOADS_MAX_SETS 1024
#define DJP_LOADS_NAME_MAX 256

/* The programs of the sites named provider:name. */
struct djp_load_set {
	char provider[32];
	char name[DJP_LOADS_NAME_MAX];
	uint64_t site; /* the one site's link-time address, or 0 (lib/load_prog.h) */
	unsigned n;
	struct djp_load_prog prog[DJP_LOAD_MAX_PROGS];
	/* djp_loads_add's: the programs whose results are strings, and
	 * their largest bound */
	uint64_t str_mask;
	unsigned str_bound;
	/* djp_loads_add's: the programs read at the call's entry (a return
	 * site's, at_entry) */
	uint64_t entry_mask;
};

struct djp_loads {
	struct djp_load_set *set[DJP_LOADS_MAX_SETS];
	unsigned nsets;
	unsigned gen;
	/* by marker id (DJP_RECORDER_MAX_IDS): gen << 16 | set index + 1, 0
	 * when none; computed at the id's first hit after a set came */
	uint32_t *cache;
};

/* A new table, or NULL (errno). */
struct djp_loads *djp_loads_create(void);
void djp_loads_destroy(struct djp_loads *l);
/* Add a set (copied); 0, -E2BIG when the table is full, -ENOMEM.  Not
 * concurrent with itself (the session's lock). */
int djp_loads_add(struct djp_loads *l, const struct djp_load_set *ls);
/* The set of site s (marker id id), or NULL. */
const struct djp_load_set *djp_loads_of(struct djp_loads *l, uint32_t id, const struct djp_site *s);
/* Run the set's programs at hit: their results into vals, the faulted
 * mask returned. */
uint64_t djp_loads_run(const struct djp_load_set *ls, const struct djp_hit *hit, const struct djp_site *s,
		       uint64_t *vals, const void *owner);
/* The engine's entry function (djp_ret_set_entry_fn): the at_entry
 * programs of the first recorder on return site r that has some, run
 * with the entry's hit; their results are taken at the return by
 * djp_loads_run, for the recorder `owner` that they are of. */
void djp_loads_ret_entry(const struct djp_hit *hit, const struct djp_site *e, const struct djp_site *r,
			 struct djp_ret_entry *out);

/* ---- the fast entry's (kernel/agent/recorder.c) ---------------------------- */

/* Whether ls can be run by djp_loads_run_fast at a lean hit: no string
 * result, every base a constant or a whole register every trampoline's
 * view holds (the caller-saved ones), and no more steps than a program
 * may have.  At connect time. */
bool djp_loads_fast_ok(const struct djp_load_set *ls);
/* And a set of one program from a register whose result needs no
 * finishing (unsigned, not a bitfield): the recorder's shortest entry. */
bool djp_loads_fast_one(const struct djp_load_set *ls);

/* The engine's fault-safe copy can serve this thread now (djp_safe_copy_on
 * without a call; when a forwarded handler blocks faults, no: the caller
 * takes the general path, which asks the kernel). */
static inline bool djp_loads_fast_copy(void)
{
	return __atomic_load_n(&djp__safe_copy_state, __ATOMIC_ACQUIRE) == 1 && !djp_faults_masked;
}

/* A fault-safe load in place (arch_load_safe: one instruction, its fault
 * resumed by the engine's handler at its own fixup, *out then left alone).  An
 * address in the first page is refused without a load (a NULL pointer's
 * member, which would cost a signal); one at the top of the address space
 * faults like any other (non-canonical: the kernel's SIGSEGV too). */
static inline __attribute__((always_inline)) bool djp_loads_read_fast(void *ctx, uint64_t addr, unsigned size,
								       uint64_t *out)
{
	(void)ctx;
	if (__builtin_expect(addr < 4096, 0))
		return false;
	return arch_load_safe(addr, size, out);
}

/* Run ls (djp_loads_fast_ok) at hit, djp_loads_fast_copy being true:
 * the results into out[0..ls->n-1], the faulted mask returned.  As
 * djp_load_run, for the shapes djp_loads_fast_ok lets through: a base
 * that needs no extension, loads that zero-extend, the rest only for a
 * signed or bitfield result. */
static inline __attribute__((always_inline)) uint64_t djp_loads_run_fast(const struct djp_load_set *ls,
									  const struct djp_hit *hit, uint64_t *out)
{
	const struct djp_load_prog *p = ls->prog, *end = p + ls->n;
	uint64_t faulted = 0, bit = 1;

	for (; p < end; p++, out++, bit <<= 1) {
		uint64_t v = p->base.kind == DJP_LOC_REG ? hit->regs.r[p->base.reg] : (uint64_t)p->base.disp, a;
		unsigned size = p->size;

		for (unsigned j = 0; j < p->nderef; j++)
			if (!djp_loads_read_fast(NULL, a = v + (uint64_t)p->off[j], 8, &v))
				goto fault;
		a = v + (uint64_t)p->last;
		if (!size) {
			v = a;
		} else if (!djp_loads_read_fast(NULL, a, size, &v)) {
			goto fault;
		} else if (__builtin_expect(p->is_signed || p->bit_size, 0)) {
			v = djp_load_finish(p, v);
		}
		*out = v;
		continue;
fault:
		*out = a;
		faulted |= bit;
	}
	return faulted;
}

#endif
