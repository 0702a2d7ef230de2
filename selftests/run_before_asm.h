/*
 * Functions whose probed instruction has too few bytes after it for a
 * jump, in assembly so that their bytes are known (selftests/
 * test_engine_run_before.c and the stress program probe them): the run a
 * jump replaces there starts at an earlier instruction (kernel/
 * func_code.c, arch/x86/insn_reloc.c's djp_insn_jump_runs_before).
 */
#ifndef DJP_SELFTESTS_RUN_BEFORE_ASM_H
#define DJP_SELFTESTS_RUN_BEFORE_ASM_H

#include "selftests/every_reg_asm.h"

/*
 * Where each run starts and each site is, as offsets from the function
 * (rb_offsets_ok checks them).  A test names a site by its function and
 * offset, never by a label's address, which C code would compute with a
 * rip-relative lea: a code address the program holds, which may be
 * jumped to, so that no run could hold it (arch/x86/branch_targets.c).
 */
#define RB_END_RUN 5
#define RB_END_SITE 9
#define RB_JOIN_RUN 13
#define RB_JOIN_SITE 17
#define RB_TRAP_BEFORE 13
#define RB_TRAP_SITE 20
#define RR_RUN_START 109
#define RR_SITE 119

/*
 * long rb_end(long x): 5 * (x + 3).  the site (RB_END_SITE) is two bytes before the
 * function's end (pop, ret); the run starts at the imul before it, 4
 * bytes back.  At the site %rbx is x + 3, %rax 5 * (x + 3), and %rsp one
 * push below the call's.
 */
__asm__(".pushsection .text\n"
	".globl rb_end\n"
	".type rb_end,@function\n"
	"rb_end:\n"
	"	push %rbx\n"
	"	lea 3(%rdi),%rbx\n"
	".Lrb_end_run:\n"
	"	imul $5,%rbx,%rax\n"
	".Lrb_end_site:\n"
	"	pop %rbx\n"
	"	ret\n"
	".size rb_end, .-rb_end\n"
	".popsection\n");
long rb_end(long x);

/*
 * long rb_join(long x, long y): a site right after a branch target.  The
 * run from the site (RB_JOIN_SITE) would cover the loop's head, 3 bytes on; the run
 * that starts at the branch target before it (4 bytes back) holds no
 * other.  At the site %rax is x (+ 100 when x is odd) + 7, %rdi x.
 */
__asm__(".pushsection .text\n"
	".globl rb_join\n"
	".type rb_join,@function\n"
	"rb_join:\n"
	"	mov %rdi,%rax\n"
	"	test $1,%dil\n"
	"	jz .Lrb_join_run\n"
	"	add $100,%rax\n"
	".Lrb_join_run:\n"
	"	lea 7(%rax),%rax\n"
	".Lrb_join_site:\n"
	"	add %rax,%rax\n"
	"1:	sub $1,%rax\n"
	"	test $1,%sil\n"
	"	jz 2f\n"
	"	xor %esi,%esi\n"
	"	jmp 1b\n"
	"2:	ret\n"
	".size rb_join, .-rb_join\n"
	".popsection\n");
long rb_join(long x, long y);

/*
 * long rb_trap(long x): x + (x odd ? 102 : 1).  the site (RB_TRAP_SITE) is the
 * function's last byte (ret); every run that could end past it holds
 * the join, where an even x's branch lands, strictly inside: a jump
 * there would send that branch into the middle of its bytes.  No run is
 * allowed, and the site stays an int3.
 */
__asm__(".pushsection .text\n"
	".globl rb_trap\n"
	".type rb_trap,@function\n"
	"rb_trap:\n"
	"	mov %rdi,%rax\n"
	"	test $1,%dil\n"
	"	jz .Lrb_trap_join\n"
	"	add $100,%rax\n"
	".Lrb_trap_before:\n"
	"	add $1,%rax\n"
	".Lrb_trap_join:\n"
	"	inc %rax\n"
	".Lrb_trap_site:\n"
	"	ret\n"
	".size rb_trap, .-rb_trap\n"
	".popsection\n");
long rb_trap(long x);

/*
 * void rr_run(long op, long *out): with op 1, sets every general register
 * (%r15 keeps out) and the flags (0x1111 - 0x2222: CF and SF set), then at
 * the site (RR_SITE), a nop right before a place that op 0 branches to, stores them
 * all into out[0..15] as selftests/every_reg_asm.h says.  The run a jump takes
 * starts at the mov into %r14, 10 bytes before the site: the handler must
 * see every register as the site has it, and the code after the site
 * every register and flag as unprobed.
 */
#define RR_RAX 0x1111
#define RR_RBX 0x2222
#define RR_RCX 0x3333
#define RR_RDX 0x4444
#define RR_RSI 0x5555
#define RR_RDI 0x6666
#define RR_RBP 0x7777
#define RR_R8 0x8888
#define RR_R9 0x9999
#define RR_R10 0xaaaa
#define RR_R11 0xbbbb
#define RR_R12 0xcccc
#define RR_R13 0xdddd
#define RR_R14 0xeeee
__asm__(".pushsection .text\n"
	".globl rr_run\n"
	".type rr_run,@function\n"
	"rr_run:\n"
	EVERY_REG_SAVE
	"	mov %rsi,%r15\n"
	"	test %rdi,%rdi\n"
	"	jz .Lrr_after\n"
	EVERY_REG_SET
	".Lrr_run_start:\n"
	"	mov $0xeeee,%r14\n"
	"	cmp %rbx,%rax\n"
	".Lrr_site:\n"
	"	nop\n"
	".Lrr_after:\n"
	EVERY_REG_STORE
	".size rr_run, .-rr_run\n"
	".popsection\n");
void rr_run(long op, long *out);

/* The instructions at those offsets are the ones named above. */
static inline int rb_offsets_ok(void)
{
	static const struct {
		const void *fn;
		unsigned off;
		const char *bytes;
		unsigned n;
	} at[] = {
		{ rb_end, RB_END_RUN, "\x48\x6b\xc3\x05\x5b\xc3", 6 },
		{ rb_join, RB_JOIN_RUN, "\x48\x8d\x40\x07\x48\x01\xc0", 7 },
		{ rb_trap, RB_TRAP_BEFORE, "\x48\x83\xc0\x01\x48\xff\xc0\xc3", 8 },
		{ rr_run, RR_RUN_START, "\x49\xc7\xc6\xee\xee\x00\x00\x48\x39\xd8\x90", 11 },
	};
	for (unsigned i = 0; i < sizeof(at) / sizeof(at[0]); i++)
		if (__builtin_memcmp((const char *)at[i].fn + at[i].off, at[i].bytes, at[i].n))
			return 0;
	return 1;
}

static inline long rb_end_ref(long x)
{
	return 5 * (x + 3);
}

static inline long rb_join_ref(long x, long y)
{
	return 2 * (x + (x & 1 ? 100 : 0) + 7) - 1 - (y & 1);
}

static inline long rb_trap_ref(long x)
{
	return x + (x & 1 ? 102 : 1);
}

#endif
