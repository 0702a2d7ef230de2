/*
 * Two functions with indirect jumps, in assembly so that their bytes are
 * known (selftests/test_engine_indirect.c and the stress program probe
 * them): GCC's computed-goto dispatch and its position-independent switch.
 */
#ifndef DJP_SELFTESTS_INDIRECT_ASM_H
#define DJP_SELFTESTS_INDIRECT_ASM_H

/*
 * long ig_run(const unsigned char *prog, long acc): a threaded interpreter
 * as GCC makes of computed gotos, its table of whole addresses in
 * .data.rel.ro (relocated).  Ops: 0 acc += 3, 1 acc *= 7, 2 acc += 2
 * (running on into op 3), 3 acc += 1, 4 acc ^= 0x55, 5 return.  Op 1 and
 * op 4 end in one tail-merged `jmp *%rdx`, each bringing its own load of
 * %rdx, as CPython's dispatch does.
 *  - ig_add_site, in the middle of op 0's block: a jump may cover it;
 *  - ig_op_inc2: its 5 bytes would cover ig_op_inc1, which only the table
 *    names: stays an int3.
 */
__asm__(".pushsection .text\n"
	".globl ig_run\n"
	".type ig_run,@function\n"
	"ig_run:\n"
	"	mov %rsi,%rax\n"
	"	lea ig_table(%rip),%rcx\n"
	"	movzbl (%rdi),%edx\n"
	"	jmp *(%rcx,%rdx,8)\n"
	"ig_op_add:\n"
	"	add $3,%rax\n"
	".globl ig_add_site\n"
	"ig_add_site:\n"
	"	add $1,%rdi\n"
	"	movzbl (%rdi),%edx\n"
	"	jmp *(%rcx,%rdx,8)\n"
	"ig_op_mul:\n"
	"	imul $7,%rax,%rax\n"
	".globl ig_mul_site\n"
	"ig_mul_site:\n"
	"	add $1,%rdi\n"
	"	movzbl (%rdi),%edx\n"
	"	mov (%rcx,%rdx,8),%rdx\n"
	"ig_tail:\n"
	"	xchg %ax,%ax\n"
	"	jmp *%rdx\n"
	".globl ig_op_inc2\n"
	"ig_op_inc2:\n"
	"	add $1,%rax\n"
	"ig_op_inc1:\n"
	"	add $1,%rax\n"
	"	add $1,%rdi\n"
	"	movzbl (%rdi),%edx\n"
	"	jmp *(%rcx,%rdx,8)\n"
	"ig_op_xor:\n"
	"	xor $0x55,%rax\n"
	"	add $1,%rdi\n"
	"	movzbl (%rdi),%edx\n"
	"	mov (%rcx,%rdx,8),%rdx\n"
	"	jmp ig_tail\n"
	"ig_op_end:\n"
	"	ret\n"
	".size ig_run, .-ig_run\n"
	".section .data.rel.ro,\"aw\"\n"
	".balign 8\n"
	"ig_table:\n"
	"	.quad ig_op_add, ig_op_mul, ig_op_inc2, ig_op_inc1, ig_op_xor, ig_op_end\n"
	".popsection\n");
long ig_run(const unsigned char *prog, long acc);
extern const char ig_add_site[], ig_mul_site[], ig_op_inc2[];

/*
 * long sw_run(long op, long x): GCC's position-independent switch, its
 * table of offsets from the table in .rodata, bounded by cmp/ja.  0: x+10,
 * 1: 3x+7, 2: -x, 3: x+101 (running on into case 4), 4: x+100, else -1.
 *  - sw_site, between case 1's label and case 2's: a jump may cover it;
 *  - sw_case3: its 5 bytes would cover sw_case4, which only the table
 *    names: stays an int3.
 */
__asm__(".pushsection .text\n"
	".globl sw_run\n"
	".type sw_run,@function\n"
	"sw_run:\n"
	"	cmp $4,%rdi\n"
	"	ja 9f\n"
	"	lea sw_table(%rip),%rdx\n"
	"	movslq (%rdx,%rdi,4),%rax\n"
	"	add %rdx,%rax\n"
	"	jmp *%rax\n"
	"sw_case0:\n"
	"	lea 10(%rsi),%rax\n"
	"	ret\n"
	"sw_case1:\n"
	"	imul $3,%rsi,%rax\n"
	".globl sw_site\n"
	"sw_site:\n"
	"	add $7,%rax\n"
	"	ret\n"
	"sw_case2:\n"
	"	mov %rsi,%rax\n"
	"	neg %rax\n"
	"	ret\n"
	".globl sw_case3\n"
	"sw_case3:\n"
	"	add $1,%rsi\n"
	"sw_case4:\n"
	"	lea 100(%rsi),%rax\n"
	"	ret\n"
	"9:	mov $-1,%rax\n"
	"	ret\n"
	".size sw_run, .-sw_run\n"
	".section .rodata\n"
	".balign 4\n"
	"sw_table:\n"
	"	.long sw_case0-sw_table, sw_case1-sw_table, sw_case2-sw_table, sw_case3-sw_table, sw_case4-sw_table\n"
	".popsection\n");
long sw_run(long op, long x);
extern const char sw_site[], sw_case3[];

/*
 * long swm_run(const int *op, long x): the same switch on a field, as GCC
 * makes of `switch (p->field)`: compared in memory, then loaded.  0: x+10,
 * 1: 3x+7, else -1.  swm_site, between case 1's label and the default's:
 * a jump may cover it.
 */
__asm__(".pushsection .text\n"
	".globl swm_run\n"
	".type swm_run,@function\n"
	"swm_run:\n"
	"	cmpl $1,(%rdi)\n"
	"	ja 9f\n"
	"	mov (%rdi),%eax\n"
	"	lea swm_table(%rip),%rdx\n"
	"	movslq (%rdx,%rax,4),%rax\n"
	"	add %rdx,%rax\n"
	"	jmp *%rax\n"
	"swm_case0:\n"
	"	lea 10(%rsi),%rax\n"
	"	ret\n"
	"swm_case1:\n"
	"	imul $3,%rsi,%rax\n"
	".globl swm_site\n"
	"swm_site:\n"
	"	add $7,%rax\n"
	"	ret\n"
	"9:	mov $-1,%rax\n"
	"	ret\n"
	".size swm_run, .-swm_run\n"
	".section .rodata\n"
	".balign 4\n"
	"swm_table:\n"
	"	.long swm_case0-swm_table, swm_case1-swm_table\n"
	".popsection\n");
long swm_run(const int *op, long x);
extern const char swm_site[];

static inline long ig_ref(const unsigned char *p, long acc)
{
	for (;; p++)
		switch (*p) {
		case 0: acc += 3; break;
		case 1: acc *= 7; break;
		case 2: acc += 2; break;
		case 3: acc += 1; break;
		case 4: acc ^= 0x55; break;
		default: return acc;
		}
}

static inline long sw_ref(long op, long x)
{
	static const long add[] = { 10, 0, 0, 101, 100 };
	if (op < 0 || op > 4)
		return -1;
	return op == 1 ? 3 * x + 7 : op == 2 ? -x : x + add[op];
}

#endif
