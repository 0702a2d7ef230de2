/*
 * An SDT probe is a 1-byte nop (PostgreSQL's, python's, libstdc++'s): too
 * short for a jump, so it was an int3 probe, a trap a hit.  Widened, its
 * site covers the nop and the instructions after it, under the rules of
 * any instruction probe's jump, and its trampoline runs them relocated;
 * the probe's arguments are read at the nop as before (the registers and
 * stack the trampoline saves first).  Where the bytes after the nop are
 * too few (the function ends, a branch lands there), the run may start at
 * an earlier instruction and end just past the nop: the trampoline runs
 * the instructions before the nop relocated, then the handlers with the
 * registers as they are at the nop, then the rest.  Where no symbol covers the nop (a
 * static function of a stripped PostgreSQL or python), the function's
 * call-frame information gives its bounds.  An SDT site the rules refuse
 * stays what it was.
 */
#include <stdlib.h>
#include <string.h>

#include "kernel/lock.h"
#include "kernel/probes.h"
#include "lib/func_symbols.h"

void djp_sdt_widen(struct djp_site *s)
{
	DJP_LOCK_HELD();
	struct djp_object *o = s->obj;
	const struct djp_func_table *t;
	const struct djp_func *f;
	struct djp_func cf;
	uintptr_t start, a = s->addr;
	unsigned len, pre;
	uint8_t *b;

	s->widen_tried = true;
	if (s->state != SITE_IDLE || o->parent || o->closing || !(t = djp_object_funcs(o)))
		return;
	/* a static function of a stripped object: its FDE's bounds */
	if (!(f = djp_func_around(t, o->file, s->addr - djp_funcs_bias(o, t), &cf)))
		return;
	start = f->addr + djp_funcs_bias(o, t);
	if (!(b = djp_function_bytes(o, start, f->size)))
		return;
	/* (djp_jump_run checks the nop is an instruction boundary) */
	len = djp_jump_range(o, t, f, b, start, a, &pre);
	/* out of memory for what its instructions keep: a nop, as if the
	 * rules refused */
	if (len && (s->code = calloc(1, sizeof(*s->code)))) {
		/* a run that starts before the nop: the site's bytes are the
		 * run's, its probe still the nop (djp_site_pc) */
		s->addr = a - pre;
		memcpy(s->orig, b + (s->addr - start), len);
		s->len = (uint8_t)len;
		s->code->pre = (uint8_t)pre;
		s->code->keep_flags = !djp_insn_flags_dead(b + (a - start), f->size - (a - start), a);
	}
	free(b);
}

