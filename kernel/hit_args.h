/*
 * Fetching a marker argument from the register view of a hit, as its
 * location in the record says (lib/argloc.h): shared by djp_hit_arg and the
 * recorder.  Inline and free of library calls, so that it can run inside a
 * lean trampoline (general registers only).
 */
#ifndef DJP_KERNEL_HIT_ARGS_H
#define DJP_KERNEL_HIT_ARGS_H

#include "kernel/hit.h"

/* A load of `size` bytes, without a memcpy call. */
static inline uint64_t load_sized(uintptr_t addr, unsigned size)
{
	switch (size) {
	case 1:
		return *(const volatile uint8_t *)addr;
	case 2:
		return *(const volatile uint16_t *)addr;
	case 4:
		return *(const volatile uint32_t *)addr;
	default:
		return *(const volatile uint64_t *)addr;
	}
}

/* djp_hit_arg, written out for general registers only; registers first,
 * since that is where optimised code keeps most arguments. */
static inline uint64_t djp_arg_fetch(const struct djp_hit *hit, const struct djp_site *s, const struct djp_argloc *a)
{
	static const struct djp_argloc none = { .kind = DJP_LOC_NONE };
	const struct djp_regs *r = &hit->regs;
	uintptr_t addr;

	/* a load program's start at a marker: where this site's record
	 * places the argument (one level: a record's own are never ARG) */
	if (__builtin_expect(a->kind == DJP_LOC_ARG, 0))
		a = a->disp >= 0 && a->disp < s->m->nargs ? &s->m->arg[a->disp] : &none;
	if (__builtin_expect(a->kind == DJP_LOC_REG, 1))
		return djp_argloc_extend(r->r[a->reg] >> a->reg_shift, a);
	switch (a->kind) {
	case DJP_LOC_IMM:
		return (uint64_t)a->disp;
	case DJP_LOC_MEM:
		addr = djp_argloc_mem_addr(a, a->reg != DJP_REG_NONE ? r->r[a->reg] : 0,
					   a->index != DJP_REG_NONE ? r->r[a->index] : 0);
		return djp_argloc_extend(load_sized(addr, a->size), a);
	case DJP_LOC_ABS:
		return djp_argloc_extend(load_sized(s->obj->bias + (uintptr_t)a->disp, a->size), a);
	case DJP_LOC_SAVED:
		return djp_ret_saved((unsigned)a->disp);
	case DJP_LOC_ADDR:
		return s->obj->bias + (uint64_t)a->disp;
	default:
		return 0;
	}
}

#endif
