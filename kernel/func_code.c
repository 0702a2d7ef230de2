/*
 * An object's code as the jump rules read it, for instruction probes
 * (kernel/points.c) and SDT nops widened for a jump (kernel/sdt_widen.c):
 * its function symbols, read once; a function's bytes as its code has
 * them, with the shadow of every armed site of ours laid over memory, so
 * that an int3 or a jump of ours is never decoded as the program's; the
 * sites of ours in a range; and how many bytes a jump may cover from an
 * address (arch/x86's djp_jump_run, and no other site inside).  Lock held.
 */
#include <stdlib.h>
#include <string.h>

#include "kernel/probes.h"
#include "lib/func_symbols.h"

const struct djp_func_table *djp_object_funcs(struct djp_object *o)
{
	char err[256];
	if (!o->funcs && o->file)
		djp_funcs_read(o->file, &o->funcs, err, sizeof(err));
	return o->funcs;
}

uintptr_t djp_funcs_bias(const struct djp_object *o, const struct djp_func_table *t)
{
	return t->is_dyn ? o->bias : 0;
}

/* The site of o (its markers, its points) whose bytes hold `addr`: the one
 * at it, or one whose jump covers it. */
struct djp_site *djp_site_covering(struct djp_object *o, uintptr_t addr)
{
	for (struct djp_object *x = djp_objects; x; x = x->next)
		if (x == o || x->parent == o)
			for (size_t i = 0; i < x->nsites; i++)
				if (addr - x->sites[i].addr < x->sites[i].len)
					return &x->sites[i];
	return NULL;
}

/* The function's bytes as its code has them: memory, with the shadow of
 * every armed site of ours inside laid over it. */
uint8_t *djp_function_bytes(struct djp_object *o, uintptr_t start, size_t size)
{
	uint8_t *b = malloc(size ? size : 1);
	if (!b)
		return NULL;
	memcpy(b, (const void *)start, size);
	for (struct djp_object *x = djp_objects; x; x = x->next)
		if (x == o || x->parent == o)
			for (size_t i = 0; i < x->nsites; i++) {
				const struct djp_site *s = &x->sites[i];
				if (s->state != SITE_IDLE && s->addr >= start && s->addr + s->len <= start + size)
					memcpy(b + (s->addr - start), s->orig, s->len);
			}
	return b;
}

/* A site of o (its markers, its points) that overlaps [lo, hi) other than
 * the one at a (an SDT nop being widened). */
static struct djp_site *site_overlapping(struct djp_object *o, uintptr_t lo, uintptr_t hi, uintptr_t a)
{
	for (struct djp_object *x = djp_objects; x; x = x->next)
		if (x == o || x->parent == o)
			for (size_t i = 0; i < x->nsites; i++) {
				struct djp_site *s = &x->sites[i];
				if (s->len && djp_site_pc(s) != a && s->addr < hi && s->addr + s->len > lo)
					return s;
			}
	return NULL;
}

/* Where o's branches, direct and indirect, can land
 * (arch/x86/branch_targets.c), read the first time a jump is considered in
 * it, decoded from each start of its function table (a separate debug
 * file names a stripped program's static functions); NULL when it cannot
 * be read (then no jump: what lands inside a run is not known). */
static const struct djp_branch_map *object_targets(struct djp_object *o)
{
	if (!o->targets_read) {
		const struct djp_func_table *t = djp_object_funcs(o);
		uint64_t *starts = djp_funcs_starts(t);
		o->targets_read = true;
		o->map_ok = o->file && !djp_branch_targets_of_file(o->file, starts, starts ? t->count : 0, &o->map);
		free(starts);
	}
	return o->map_ok ? &o->map : NULL;
}

/*
 * Can a jump cover [a, a + len) in function f (whose bytes are b), or
 * [a - *pre, a - *pre + len), a run that starts before a?  The
 * rules of djp_jump_run (whole instructions inside the function, no jump
 * of the function into the range, no indirect jump whose targets are not
 * known, a call only last,
 * every instruction relocatable, and no direct branch anywhere in the
 * object into it: GCC's NAME.cold parts jump back into NAME, with no
 * symbol in a stripped object to say whose they are), and no other site
 * inside it.
 */
unsigned djp_jump_range(struct djp_object *o, const struct djp_func_table *t, const struct djp_func *f, const uint8_t *b,
			uintptr_t start, uintptr_t a, unsigned *pre)
{
	unsigned len = 0;

	*pre = 0;
	if (djp_jump_run(b, f->size, start, a, object_targets(o), djp_funcs_bias(o, t), pre, &len, NULL) ||
	    site_overlapping(o, a - *pre, a - *pre + len, a))
		return 0;
	/* A run that starts before its site is armed only as a jump (or an
	 * int3 that enters its trampoline: kernel/arm.c), which needs a
	 * trampoline that can keep whatever the object's code keeps in its
	 * vector registers. */
	if (*pre && (!arch_xsave_size() || djp_object_vec_use(o) == DJP_VEC_OTHER))
		return 0;
	return len;
}

