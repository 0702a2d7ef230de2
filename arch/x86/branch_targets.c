/*
 * Every address an object's code branches to directly.
 *
 * A jump over several instructions is safe only if nothing branches into
 * the middle of them.  The function's own branches are checked with the
 * run (insn_reloc.c, djp_insn_jump_range), but code elsewhere can branch
 * there too: GCC splits a function's unlikely paths into NAME.cold, which
 * jumps back into NAME, and a stripped object has no symbol to say which
 * cold part belongs to which function.  So the whole object is decoded
 * once, when a jump is first considered in it: every executable section,
 * linearly, restarting at each function symbol so that padding or data
 * cannot keep the decoder out of step for long, and every direct jmp, jcc
 * and call target is kept, sorted.  A run with a target strictly inside is
 * refused.  Bytes that are not code may add targets that no branch has:
 * they can only refuse a jump, never allow one.
 *
 * Indirect branches (jump tables) are the other way in; a function with an
 * indirect jump is refused by the run's own check, and a table in one
 * function that lands in another does not occur in compiled code.
 * Computed gotos (GCC's &&label) and C++ landing pads are reached through
 * tables too: the first makes an indirect jump in its own function, the
 * second lands after a call, at the end of a run at most.
 *
 * A megabyte of text decodes in a few milliseconds, once per object.
 */
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <Zydis/Zydis.h>

#include "arch/x86/arch.h"
#include "arch/x86/branch_targets.h"
#include "arch/x86/insn_reloc.h"
#include "arch/x86/vector_use.h"

struct targets {
	uint64_t *v;
	size_t n, cap;
};

static int add(struct targets *t, uint64_t a)
{
	if (t->n == t->cap) {
		void *nv = realloc(t->v, (t->cap = t->cap ? 2 * t->cap : 4096) * sizeof(*t->v));
		if (!nv)
			return -ENOMEM;
		t->v = nv;
	}
	t->v[t->n++] = a;
	return 0;
}

struct walk {
	ZydisDecoder dec;
	struct targets t;
};

static int section_targets(void *ctx, const uint8_t *code, size_t len, uint64_t addr, const size_t *starts,
			   size_t nstarts)
{
	struct walk *w = ctx;
	size_t at = 0, next = 0;
	while (at < len) {
		size_t end = len;
		while (next < nstarts && starts[next] <= at)
			next++;
		if (next < nstarts)
			end = starts[next];
		while (at < end) {
			/* The instruction without its operands: a relative
			 * branch's displacement is in the raw immediate, and
			 * its target the next instruction's address plus it
			 * (as ZydisCalcAbsoluteAddress computes it in 64-bit
			 * mode).  Decoding the operands too was two thirds of
			 * the walk, which is a third of arming function("*"). */
			ZydisDecodedInstruction in;
			if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&w->dec, NULL, code + at, end - at, &in))) {
				at++;
				continue;
			}
			for (unsigned i = 0; i < 2; i++)
				if (in.raw.imm[i].is_relative &&
				    add(&w->t, addr + at + in.length + (uint64_t)in.raw.imm[i].value.s))
					return -ENOMEM;
			at += in.length;
		}
		at = end;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

int djp_branch_targets_of_file(const char *path, uint64_t **out, size_t *n)
{
	struct walk w = { 0 };
	int err;

	*out = NULL;
	*n = 0;
	if (ZYAN_FAILED(ZydisDecoderInit(&w.dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64)))
		return -ENOSYS;
	if ((err = djp_elf_code_walk(path, section_targets, &w))) {
		free(w.t.v);
		return err;
	}
	if (w.t.n)
		qsort(w.t.v, w.t.n, sizeof(*w.t.v), cmp_u64);
	*out = w.t.v;
	*n = w.t.n;
	return 0;
}

bool djp_branch_target_inside(const uint64_t *v, size_t n, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = n;
	/* the first target > lo */
	while (a < b) {
		size_t mid = (a + b) / 2;
		if (v[mid] <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < n && v[a] < hi;
}

int djp_jump_run(const uint8_t *code, size_t size, uintptr_t start, uintptr_t addr, const uint64_t *targets, size_t n,
		 uintptr_t bias, unsigned *len, const char **why)
{
	const char *w = NULL;
	int err = djp_insn_jump_range(code, size, start, addr, len, &w);
	if (!err && *len > DJP_SITE_MAX_LEN) {
		w = "the instructions a jump would cover are too long";
		err = -E2BIG;
	}
	if (!err && !targets) {
		w = "the object's branch targets cannot be read";
		err = -ENODATA;
	}
	if (!err && djp_branch_target_inside(targets, n, addr - bias, addr + *len - bias)) {
		w = "a branch elsewhere in the object lands inside the instructions a jump would cover";
		err = -EBUSY;
	}
	if (why)
		*why = w;
	return err;
}
