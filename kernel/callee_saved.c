/*
 * The callee-saved registers of a hit that the lean trampoline did not
 * store: recovered by unwinding the handler's own frames.
 *
 * Why they are not stored.  An instruction probe promises its handler
 * every register (djp_hit_reg), but a lean trampoline that stored %rbx,
 * %rbp and %r12-%r15 at every hit would spend six stores on values almost
 * no handler reads: a function-entry probe then cost 1.4 times a marker
 * with the same handler (bench/engine_hits, "jump: function entry probe /
 * marker").  Those six registers need no storing to survive, though: the
 * trampoline leaves them alone, and the ABI makes every function the
 * handler runs keep them for its caller.  So at the moment of the call
 * into the handler they hold the site's values, and wherever the handler
 * (or something it called) is now, each is either still in its register
 * or in the stack slot where a function on the way saved it; the
 * call-frame information of those functions says which slot.
 *
 * How.  libgcc's unwinder (_Unwind_Backtrace, as C++ exceptions use it)
 * walks from here up the stack, following the CFI of every frame,
 * expressions included (djp_dispatch_lean realigns the stack), and keeps
 * where each callee-saved register of each frame lives.  The frame we
 * want is the trampoline's, which has no CFI: it is the one whose pc is
 * the return address of the trampoline's call (the hit's key, the word
 * below the view) and whose CFA is the view itself, since on x86-64 the
 * call pushed that return address just below the view
 * (arch_hit_call_frame).  There the unwinder's register is the site's.
 * Which registers are callee-saved, and so never stored by the lean
 * trampoline, is the arch's ARCH_CALLEE_SAVED.  libgcc finds each frame's FDE with
 * glibc's _dl_find_object, which takes no lock, so this may run wherever
 * a handler does.
 *
 * What it costs.  Only a handler that asks pays: microseconds for the walk,
 * plus saving and restoring the vector state around it, since the lean
 * trampoline saves none and libgcc's code is free to use SSE.
 *
 * When no frame matches (a handler, or a function it called, without CFI:
 * hand-written assembly, JIT code) the value is unknown and 0 is returned;
 * a hit through the full trampoline or a SIGTRAP has every register in its
 * view and never comes here.
 */
#pragma GCC target("general-regs-only")
#include <stdint.h>
#include <unwind.h>

#include "arch/x86/arch.h"
#include "kernel/hit.h"

/* Frames between this function and the trampoline: the handler's calls,
 * and the dispatcher's when the list runs through it. */
#define MAX_FRAMES 256

struct walk {
	uintptr_t key, view; /* the trampoline's frame: pc and CFA */
	int dwarf_reg;
	unsigned frames;
	int found;
	uint64_t val;
};

static _Unwind_Reason_Code frame(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	if (_Unwind_GetIP(ctx) == w->key && _Unwind_GetCFA(ctx) == w->view) {
		w->val = _Unwind_GetGR(ctx, w->dwarf_reg);
		w->found = 1;
		return _URC_NORMAL_STOP;
	}
	return ++w->frames < MAX_FRAMES ? _URC_NO_REASON : _URC_NORMAL_STOP;
}

__attribute__((noinline)) static void walk(struct walk *w)
{
	_Unwind_Backtrace(frame, w);
}

uint64_t djp_callee_saved_reg(const struct djp_hit *hit, int dwarf_reg)
{
	struct walk w = { .dwarf_reg = dwarf_reg };
	uint8_t *area = arch_vector_area_on_stack();
	arch_hit_call_frame(hit, &w.key, &w.view);
	if (area)
		arch_vector_save(area);
	walk(&w);
	if (area)
		arch_vector_restore(area);
	return w.found ? w.val : 0;
}

/* libgcc sets up its register table once, through pthread_once: done here,
 * at connect time, and not in the first handler that asks. */
static _Unwind_Reason_Code stop(struct _Unwind_Context *ctx, void *arg)
{
	(void)ctx, (void)arg;
	return _URC_NORMAL_STOP;
}

void djp_callee_saved_prepare(void)
{
	_Unwind_Backtrace(stop, NULL);
}
