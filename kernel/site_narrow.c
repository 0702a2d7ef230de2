/*
 * A site narrowed to its probe's instruction.
 *
 * A site whose bytes are the program's instructions (an instruction
 * probe's, a widened SDT nop's) covers the run of instructions its jump
 * would replace, which may start before the probe's instruction when the
 * bytes after it were too few (kernel/func_code.c).  Some things need the
 * site to be that one instruction instead, for good: another probe's
 * point lands inside the run (kernel/points.c), or the site is to be an
 * int3 probe, which runs its handlers where the int3 is and so must sit on
 * the probe's own instruction (kernel/arm.c).  Only an idle site changes:
 * an armed one's bytes in memory are what its state says they are, and
 * its trampolines, which threads may be running, jump back to the end of
 * the run they were made for.  A narrowed site never gets a jump again
 * (`no_jump`); a narrowed SDT site is the nop again, whose int3 probe
 * skips it.
 */
#include <stdlib.h>
#include <string.h>

#include "kernel/site.h"

bool djp_site_narrow(struct djp_site *s)
{
	unsigned pre = s->code ? s->code->pre : 0;
	struct djp_insn in;

	if (!s->code || s->state != SITE_IDLE || pre >= s->len ||
	    djp_insn_decode(s->orig + pre, s->len - pre, s->addr + pre, &in) || !in.len || pre + in.len > s->len)
		return false;
	memmove(s->orig, s->orig + pre, in.len);
	s->addr += pre;
	s->len = in.len;
	s->no_jump = true;
	s->code->ool = 0;
	s->code->pre = 0;
	if (!s->obj->parent) { /* a widened SDT nop: a nop again */
		free(s->code);
		s->code = NULL;
	}
	return true;
}
