/*
 * The lean trampoline: what a jump-armed site runs for handlers that touch
 * general registers only.
 *
 * What a hit costs is, to first order, what it stores and how the front
 * end fetches it: the nine caller-saved registers and the return address,
 * as in any hand-written patch, and here only the two stores of the RCU
 * read side besides.  So the trampoline builds nothing it does not need:
 *
 *   lea  -(128+F)(%rsp),%rsp    step over the SysV red zone (a leaf may
 *                               keep live data below %rsp) and leave room
 *                               for the view's slots above the pushes
 *                               that an argument reads (F: 0 or 8, or 72
 *                               more)
 *   push %r11 ... push %rax     the nine caller-saved registers: struct
 *                               djp_regs puts them first
 *   mov  %reg,off(%rsp)         callee-saved ones, %rsp, %rip: only where
 *                               the site's arguments live in them
 *   [load the arguments]        DJP_LEAN_PREFETCH only (tramp_args.c)
 *   mov  %fs:reader,%rsi        the RCU fast path (kernel/rcu.h): a
 *   cmpl $0,(%rsi) ; jne slow   registered thread outside every read-side
 *   mov  %rsp,%fs:entry_sp      section notes where the section's frame
 *   lea  ret(%rip),%rax         is and the return address the call will
 *   mov  %rax,-8(%rsp)          push (so that a section left by a jump is
 *                               told from a live one: kernel/rcu.c), then
 *   movabs gp_ctr,%rax          enters by storing the grace-period
 *   mov  %rax,(%rsi)            counter (phase and a count of one) in
 *                               its reader word
 *   movabs handlers,%rax        the site's list, NULL when it has none
 *   test %rax,%rax ; jz leave
 *   mov  %rsp,%rdi              fn(hit, data) from the list's fast-call
 *   mov  8(%rax),%rsi           words: the only handler, or the function
 *   call *(%rax)                that runs a longer list
 * leave:
 *   mov  %fs:reader,%rsi ; movq $0,(%rsi)
 * back:
 *   pop  %rax ... pop %r11
 *   lea  (128+F)(%rsp),%rsp
 *   jmp  site+6
 *
 * The slow stub (a call of the C dispatcher, for a thread the fast path
 * does not serve) comes first in the slot, so that the branches to it are
 * short, and the entry starts on a 64-byte boundary: the front end then
 * fetches the hot path in the fewest windows (measured: up to 0.3 ns a
 * hit between alignments).
 *
 * No register is spent on aligning the stack: the site's call-frame
 * information (lib/markers_elf.c) says what %rsp is modulo 16 there, and F
 * is chosen so that the call finds it 16-byte aligned.  Where it does not
 * say, the trampoline aligns at run time and keeps the old %rsp above the
 * view (two more stores).  The word below the view is the return address
 * of the call, which names the site (regs.h): the code is laid out so that
 * it is even, its tag bit clear.
 *
 * The flags need no saving: an asm statement clobbers them on x86, so the
 * compiler holds nothing in them across a marker.
 */
#include "arch/x86/tramp.h"

/* mov %fs:reader,%rsi: the thread's RCU reader pointer (in %rsi, which
 * carries the handler's data only later, so that the prefetched arguments
 * can stay in %rdx, %rcx, %r8 and %r9). */
static void load_reader(struct emit *e)
{
	EMIT(e, "\x64\x48\x8b\x34\x25"), b4(e, (uint32_t)(int32_t)djp_tramp_ops.reader_tls);
}

/* Save the registers into the view; %rax is free afterwards. */
void djp_tramp_save_view(struct emit *e, const struct frame *f, uint32_t save, const struct djp_tramp_req *r)
{
	for (int i = 0; i < 16; i++)
		if (i != DJP_REG_RSP && (save & (1u << i)))
			mov_rsp(e, i, f->view + 8 * i, 1);
	if (r->regs_used & (1u << DJP_REG_RSP)) {
		if (f->saved_rsp < 0) {
			lea_rsp(e, DJP_REG_RAX, f->to_site_rsp);
		} else {
			mov_rsp(e, DJP_REG_RAX, f->saved_rsp, 0);
			EMIT(e, "\x48\x05"), b4(e, (uint32_t)f->to_site_rsp); /* add $n,%rax */
		}
		mov_rsp(e, DJP_REG_RAX, f->view + 8 * DJP_REG_RSP, 1);
	}
	if (r->regs_used & (1u << DJP_REG_RIP)) {
		EMIT(e, "\x48\x8d\x05"), rel32(e, tramp_pc(r)); /* lea site(%rip),%rax */
		mov_rsp(e, DJP_REG_RAX, f->view + 8 * DJP_REG_RIP, 1);
	}
}

/*
 * The RCU fast path and the call of the fast handler found `off` bytes
 * into the site's published list, with the hit at hit(%rsp); a thread the
 * fast path does not serve goes to the stub at `slow`.
 */
void djp_tramp_fast_call(struct emit *e, const struct djp_tramp_req *r, size_t slow, int32_t hit, int32_t off)
{
	size_t to_leave, ret_rel;
	load_reader(e);
	EMIT(e, "\x83\x3e\x00"); /* cmpl $0,(%rsi) */
	jcc_back(e, JNE8, slow);
	/* The section's frame, before the section begins: %rsp and, where
	 * the call will put it, its return address (filled in below). */
	EMIT(e, "\x64\x48\x89\x24\x25"), b4(e, (uint32_t)(int32_t)djp_tramp_ops.entry_sp_tls); /* mov %rsp,%fs:entry_sp */
	EMIT(e, "\x48\x8d\x05"), ret_rel = e->n, b4(e, 0);				/* lea ret(%rip),%rax */
	EMIT(e, "\x48\x89\x44\x24\xf8");						/* mov %rax,-8(%rsp) */
	EMIT(e, "\x48\xa1"), b8(e, (uintptr_t)djp_tramp_ops.gp_ctr);  /* movabs gp_ctr,%rax */
	EMIT(e, "\x48\x89\x06");			     /* mov %rax,(%rsi) */
	if (djp_tramp_ops.need_mb)
		EMIT(e, "\x0f\xae\xf0"); /* mfence */
	EMIT(e, "\x48\xa1"), b8(e, (uintptr_t)r->list); /* movabs handlers,%rax */
	EMIT(e, "\x48\x85\xc0");			/* test %rax,%rax */
	b1(e, JZ8), b1(e, 0), to_leave = e->n - 1;
	if (hit) {
		lea_rsp(e, DJP_REG_RDI, hit);
	} else if ((e->at + e->n + 3 + 4 + (off ? 3 : 2)) & 1) {
		/* mov %rsp,%rdi or lea (%rsp),%rdi: whichever leaves the
		 * call's return address (the lean hit's key) even */
		EMIT(e, "\x48\x8d\x3c\x24");
	} else {
		EMIT(e, "\x48\x89\xe7");
	}
	EMIT(e, "\x48\x8b\x70"), b1(e, (uint8_t)(off + 8)); /* mov off+8(%rax),%rsi */
	if (off)
		EMIT(e, "\xff\x50"), b1(e, (uint8_t)off); /* call *off(%rax) */
	else
		EMIT(e, "\xff\x10"); /* call *(%rax) */
	memcpy(e->buf + ret_rel, &(int32_t){ (int32_t)(e->n - (ret_rel + 4)) }, 4);
	if (!hit)
		key_check(e);
	e->buf[to_leave] = (uint8_t)(e->n - (to_leave + 1));
	if (djp_tramp_ops.need_mb)
		EMIT(e, "\x0f\xae\xf0");
	load_reader(e);
	EMIT(e, "\x48\xc7\x06\x00\x00\x00\x00"); /* movq $0,(%rsi) */
}

/*
 * The lean flavour.  The slow stub comes first, so that the fast path's
 * branches to it are short; the view is built by nine pushes (the caller-
 * saved registers lead struct djp_regs) below the room for the rest.
 */
size_t djp_tramp_gen_lean(struct emit *e, const struct djp_tramp_req *r, uintptr_t *entry, int prefetch)
{
	struct frame f = { 0, -1, 0, 0 };
	const int32_t upper = VIEW - 8 * (DJP_REG_R11 + 1); /* the view above the pushes */
	size_t slow, to_back, back;
	/* %rsp mod 16 where the frame starts: the site's, less the flags an
	 * instruction probe's trampoline keeps first */
	const int sp_align = r->sp_align < 0 ? -1 : (int)((r->sp_align - point_pre(r)) & 15);

	/* slow: the C dispatcher decides (%rsp is the hit) */
	slow = emit_slow_stub(e, HDR_LEAN, &to_back);

	/* The entry on a 64-byte boundary: the front end fetches the hot
	 * path in the fewest windows (measured: up to 0.3 ns a hit). */
	while (e->n < 64)
		b1(e, 0xcc);
	*entry = e->at + e->n;
	point_prologue(e, r);
	if (sp_align == 0 || sp_align == 8) {
		/* Static alignment: the view at %rsp, 16-byte aligned after the
		 * pushes.  Slots above the pushes that no argument reads need no
		 * room: nothing ever reads them. */
		int32_t above = (r->regs_used & ~ARCH_CALLER_SAVED) ? upper : 0;
		int32_t pad = (sp_align - RED_ZONE - above - 8 * (DJP_REG_R11 + 1)) & 15;
		f.size = RED_ZONE + pad + above;
		f.to_site_rsp = f.size + 8 * (DJP_REG_R11 + 1) + point_pre(r);
		lea_rsp(e, DJP_REG_RSP, -f.size);
	} else {
		/* Step over the red zone, align, keep the old %rsp just above
		 * the view (at VIEW from it, once the pushes are done). */
		lea_rsp(e, DJP_REG_RSP, -RED_ZONE);
		b1(e, 0x50);
		lea_rsp(e, DJP_REG_RAX, 8);
		EMIT(e, "\x48\x83\xe4\xf0"); /* and $-16,%rsp */
		lea_rsp(e, DJP_REG_RSP, -(upper + 8));
		mov_rsp(e, DJP_REG_RAX, upper, 1);
		EMIT(e, "\x48\x8b\x40\xf8"); /* mov -8(%rax),%rax */
		f.saved_rsp = VIEW;
		f.to_site_rsp = RED_ZONE + point_pre(r);
	}
	for (int i = DJP_REG_R11; i >= DJP_REG_RAX; i--)
		push_pop(e, i, 0);
	djp_tramp_save_view(e, &f, r->regs_used & ~(ARCH_CALLER_SAVED | 1u << DJP_REG_RSP | 1u << DJP_REG_RIP), r);
	if (prefetch && !arch_tramp_prefetches(r->args, r->nargs))
		e->overflow = 1; /* cannot: this flavour is not to be made */
	else if (prefetch)
		djp_tramp_prefetch(e, r, &f);

	djp_tramp_fast_call(e, r, slow, 0, prefetch ? (int32_t)djp_tramp_ops.prefetch_call : 0);
	back = e->n;
	for (int i = DJP_REG_RAX; i <= DJP_REG_R11; i++)
		push_pop(e, i, 1);
	if (f.saved_rsp < 0) {
		lea_rsp(e, DJP_REG_RSP, f.size);
	} else {
		mov_rsp(e, DJP_REG_RSP, upper, 0);
		lea_rsp(e, DJP_REG_RSP, RED_ZONE);
	}
	tramp_return(e, r);
	/* the slow stub's jmp back */
	memcpy(e->buf + to_back, &(int32_t){ (int32_t)(back - (to_back + 4)) }, 4);
	return e->n;
}

