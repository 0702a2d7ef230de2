/*
 * A hit as its handler sees it: the public djp_hit_* questions (the
 * marker's name, the site, a register, an argument) and the ids the
 * recorder and the agent ask for (kernel/engine.h).  Apart from the
 * dispatch (kernel/dispatch.c), which an argument's fetch reads a
 * return's saved values from (kernel/hit_args.h).
 */
/* A lean handler (DJP_GPR_ONLY) calls these: the compiler must not use a
 * vector or x87 register in this file. */
#pragma GCC target("general-regs-only")

#include "kernel/arming.h"
#include "kernel/engine.h"
#include "kernel/hit.h"
#include "kernel/hit_args.h"

DJP_API const char *djp_hit_name(const struct djp_hit *hit)
{
	return djp__hit_site(hit)->m->name;
}

DJP_API unsigned djp_hit_nargs(const struct djp_hit *hit)
{
	return djp__hit_site(hit)->m->nargs;
}

DJP_API uintptr_t djp_hit_site(const struct djp_hit *hit)
{
	return djp_site_pc(djp__hit_site(hit));
}

/* DWARF's register numbers are the arch's (arch_dwarf_reg). */
DJP_API uint64_t djp_hit_reg(const struct djp_hit *hit, unsigned dwarf_reg)
{
	int v = arch_dwarf_reg(dwarf_reg);
	if (v == DJP_REG_NONE)
		return 0;
	const struct djp_site *s = djp__hit_site(hit);
	if (v == DJP_REG_PC) /* the site, which a jump's view does not store */
		return djp_site_pc(s);
	if (djp__view_regs(hit) & (1u << v))
		return hit->regs.r[v];
	/* not stored: a lean trampoline keeps an instruction probe's
	 * callee-saved registers in their registers only (kernel/
	 * callee_saved.c); a marker's stores what its arguments read, and the
	 * rest of its view is whatever the stack held, never given out */
	if ((ARCH_CALLEE_SAVED & (1u << v)) && s->obj->parent)
		return djp_callee_saved_reg(hit, (int)dwarf_reg);
	return 0;
}

DJP_API int64_t djp_hit_arg(const struct djp_hit *hit, unsigned i)
{
	const struct djp_site *s = djp__hit_site(hit);
	if (i >= s->m->nargs)
		return 0;
	return (int64_t)djp_arg_fetch(hit, s, &s->m->arg[i]);
}

/* For the recorder and the agent (kernel/engine.h). */
uint32_t djp__hit_id(const struct djp_hit *hit)
{
	return djp__hit_site(hit)->id;
}

const struct djp_marker_info *djp__hit_marker(const struct djp_hit *hit)
{
	return djp__hit_site(hit)->m;
}
