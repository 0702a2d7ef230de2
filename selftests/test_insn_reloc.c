/*
 * Instruction relocation (arch/x86/insn_reloc.c), by running it.
 *
 * Each case is a small hand-written function that starts with the class of
 * instruction under test.  The test asks djp_insn_jump_range which run a
 * jump would displace, relocates that run into a buffer mapped within
 * +-2 GiB of the function, and then calls the copy (which jumps back into
 * the original after the run) and the original alike, a million times,
 * through a thunk that loads canaries into every register: the two must
 * leave the same registers, flags and memory, keep the callee-saved
 * registers and the stack pointer, and a callee called from the copy must
 * see the original return address.  Then the refusals, the map and the
 * range checks, each on instructions whose encoding the assembler chose.
 */
#include <errno.h>
#include <sys/mman.h>

#include "arch/x86/arch.h"
#include "harness.h"

struct ir_regs {
	unsigned long rax, rbx, rcx, rdx, rsi, rdi, rbp, r8, r9, r10, r11, r12, r13, r14, r15;
	unsigned long flags, rsp_after, rsp_before;
};

#define HID __attribute__((visibility("hidden")))
#define IR_FN(n) HID extern const uint8_t n[], n##_end[], n##_run[]

HID extern unsigned long ir_thunk(const void *fn, unsigned long a, unsigned long b, struct ir_regs *out);
HID extern uint8_t ir_mem[], ir_mem_end[];
HID extern unsigned long ir_d0, ir_d2;
HID extern const uint8_t ir_call_ret[], ir_icall_reg_ret[], ir_icall_rip_ret[];

HID volatile uintptr_t ir_seen_ret;

/* What the call cases call: it notes the return address it was given. */
HID __attribute__((noinline, used)) unsigned long ir_callee(unsigned long a)
{
	ir_seen_ret = (uintptr_t)__builtin_return_address(0);
	return a * 3 + 1;
}

#define CANARY(n) "movabs $0x" #n #n #n #n #n #n #n #n ", "

__asm__(".pushsection .text\n"
	".macro IRFN name\n"
	"	.p2align 4\n"
	"	.globl \\name\n"
	"	.hidden \\name\n"
	"	.type \\name,@function\n"
	"\\name:\n"
	".endm\n"
	".macro IRLABEL name\n"
	"	.globl \\name\n"
	"	.hidden \\name\n"
	"\\name:\n"
	".endm\n"
	".macro IREND name\n"
	"	IRLABEL \\name\\()_end\n"
	"	.size \\name, . - \\name\n"
	".endm\n"

	/* ir_thunk(fn, a, b, out): canaries in, every register out. */
	"IRFN ir_thunk\n"
	"	push %rbx; push %rbp; push %r12; push %r13; push %r14; push %r15\n"
	"	push %rcx\n"
	"	mov %rsp, 136(%rcx)\n"
	"	push %rdi\n" /* fn, called through the stack: every register holds a canary */
	"	sub $8, %rsp\n"
	"	mov %rsi, %rdi\n"
	"	mov %rdx, %rsi\n"
	"	" CANARY(0a) "%rax\n"
	"	" CANARY(1b) "%rbx\n"
	"	" CANARY(2b) "%rbp\n"
	"	" CANARY(3c) "%rcx\n"
	"	" CANARY(4d) "%rdx\n"
	"	" CANARY(58) "%r8\n"
	"	" CANARY(69) "%r9\n"
	"	" CANARY(7a) "%r10\n"
	"	" CANARY(8b) "%r11\n"
	"	" CANARY(c1) "%r12\n"
	"	" CANARY(c2) "%r13\n"
	"	" CANARY(c3) "%r14\n"
	"	" CANARY(c4) "%r15\n"
	"	call *8(%rsp)\n"
	"	lea 16(%rsp), %rsp\n" /* not add: the flags are the function's */
	"	pushfq\n"
	"	push %rax\n"
	"	mov 16(%rsp), %rax\n"
	"	mov %rbx, 8(%rax); mov %rcx, 16(%rax); mov %rdx, 24(%rax); mov %rsi, 32(%rax)\n"
	"	mov %rdi, 40(%rax); mov %rbp, 48(%rax); mov %r8, 56(%rax); mov %r9, 64(%rax)\n"
	"	mov %r10, 72(%rax); mov %r11, 80(%rax); mov %r12, 88(%rax); mov %r13, 96(%rax)\n"
	"	mov %r14, 104(%rax); mov %r15, 112(%rax)\n"
	"	pop %rbx; mov %rbx, 0(%rax)\n"
	"	pop %rbx; mov %rbx, 120(%rax)\n"
	"	mov %rsp, 128(%rax)\n"
	"	mov 0(%rax), %rax\n"
	"	add $8, %rsp\n"
	"	pop %r15; pop %r14; pop %r13; pop %r12; pop %rbp; pop %rbx\n"
	"	ret\n"
	"IREND ir_thunk\n"

	/* ---- the relocation table; IRLABEL x_run ends the run a jump displaces ---- */
	"IRFN ir_load\n"
	"	mov ir_d0(%rip), %rax\n"
	"IRLABEL ir_load_run\n"
	"	add %rdi, %rax\n"
	"	ret\n"
	"IREND ir_load\n"

	"IRFN ir_store\n"
	"	mov %rdi, ir_d1(%rip)\n"
	"IRLABEL ir_store_run\n"
	"	lea (%rdi,%rsi), %rax\n"
	"	ret\n"
	"IREND ir_store\n"

	"IRFN ir_store_imm\n" /* 48 c7 05 disp32 imm32: the disp is not at the end */
	"	movq $-0x12345678, ir_d3(%rip)\n"
	"IRLABEL ir_store_imm_run\n"
	"	mov %rsi, %rax\n"
	"	ret\n"
	"IREND ir_store_imm\n"

	"IRFN ir_lea\n"
	"	lea ir_d2(%rip), %rax\n"
	"IRLABEL ir_lea_run\n"
	"	ret\n"
	"IREND ir_lea\n"

	"IRFN ir_cmp\n" /* 81 3d disp32 imm32 */
	"	cmpl $0x12345, ir_d2(%rip)\n"
	"IRLABEL ir_cmp_run\n"
	"	sete %al\n"
	"	movzbl %al, %eax\n"
	"	ret\n"
	"IREND ir_cmp\n"

	"IRFN ir_cmp8\n" /* 48 83 3d disp32 imm8 */
	"	cmpq $7, ir_d0(%rip)\n"
	"IRLABEL ir_cmp8_run\n"
	"	sbb %eax, %eax\n"
	"	ret\n"
	"IREND ir_cmp8\n"

	"IRFN ir_jcc8\n"
	"	test %rdi, %rdi\n"
	"	jne 1f\n"
	"IRLABEL ir_jcc8_run\n"
	"	mov $2, %eax\n"
	"	ret\n"
	"1:	mov $1, %eax\n"
	"	ret\n"
	"IREND ir_jcc8\n"

	"IRFN ir_jcc32\n"
	"	test %rdi, %rdi\n"
	"	.byte 0x0f, 0x85\n" /* jne rel32 */
	"	.long 1f - 2f\n"
	"2:\n"
	"IRLABEL ir_jcc32_run\n"
	"	mov $2, %eax\n"
	"	ret\n"
	"1:	mov $1, %eax\n"
	"	ret\n"
	"IREND ir_jcc32\n"

	"IRFN ir_jcc_mid\n" /* a jcc rel8 in the middle of the run */
	"	test %edi, %edi\n"
	"	je 1f\n"
	"	lea 1(%rdi), %eax\n"
	"IRLABEL ir_jcc_mid_run\n"
	"	ret\n"
	"1:	mov $-1, %eax\n"
	"	ret\n"
	"IREND ir_jcc_mid\n"

	"IRFN ir_jmp8\n"
	"	mov %rdi, %rax\n"
	"	jmp 1f\n"
	"IRLABEL ir_jmp8_run\n"
	"	mov $-1, %rax\n"
	"	ret\n"
	"1:	add $5, %rax\n"
	"	ret\n"
	"IREND ir_jmp8\n"

	"IRFN ir_jmp32\n"
	"	mov %rdi, %rax\n"
	"	.byte 0xe9\n"
	"	.long 1f - 2f\n"
	"2:\n"
	"IRLABEL ir_jmp32_run\n"
	"	mov $-1, %rax\n"
	"	ret\n"
	"1:	add $7, %rax\n"
	"	ret\n"
	"IREND ir_jmp32\n"

	"IRFN ir_call\n"
	"	sub $8, %rsp\n"
	"	call ir_callee\n"
	"IRLABEL ir_call_run\n"
	"IRLABEL ir_call_ret\n"
	"	add $8, %rsp\n"
	"	ret\n"
	"IREND ir_call\n"

	"IRFN ir_icall_reg\n" /* b is ir_callee */
	"	push %rbx\n"
	"	mov %rsi, %rax\n"
	"	call *%rax\n"
	"IRLABEL ir_icall_reg_run\n"
	"IRLABEL ir_icall_reg_ret\n"
	"	pop %rbx\n"
	"	ret\n"
	"IREND ir_icall_reg\n"

	"IRFN ir_icall_rip\n"
	"	sub $8, %rsp\n"
	"	call *ir_fptr(%rip)\n"
	"IRLABEL ir_icall_rip_run\n"
	"IRLABEL ir_icall_rip_ret\n"
	"	add $8, %rsp\n"
	"	ret\n"
	"IREND ir_icall_rip\n"

	"IRFN ir_tailjmp\n" /* indirect: jump_range refuses the function, relocate does not */
	"	jmp *ir_fptr(%rip)\n"
	"IRLABEL ir_tailjmp_run\n"
	"IREND ir_tailjmp\n"

	"IRFN ir_pushpop\n"
	"	push %rdi\n"
	"	pop %rax\n"
	"	push %rsi\n"
	"	pop %rdx\n"
	"	add %rdx, %rax\n"
	"IRLABEL ir_pushpop_run\n"
	"	ret\n"
	"IREND ir_pushpop\n"

	"IRFN ir_endbr\n"
	"	endbr64\n"
	"	lea 1(%rdi), %rax\n"
	"IRLABEL ir_endbr_run\n"
	"	ret\n"
	"IREND ir_endbr\n"

	"IRFN ir_retlast\n"
	"	lea 2(%rdi), %rax\n"
	"	ret\n"
	"IRLABEL ir_retlast_run\n"
	"IREND ir_retlast\n"

	"IRFN ir_avx\n"
	"	vmovdqu ir_vec(%rip), %ymm0\n"
	"IRLABEL ir_avx_run\n"
	"	vmovdqu %ymm0, ir_vout(%rip)\n"
	"	vzeroupper\n"
	"	ret\n"
	"IREND ir_avx\n"

	/* ---- refusals ---- */
	"IRFN ir_r_jin\n" /* the loop's jnz lands 2 bytes into the run */
	"	xor %eax, %eax\n"
	"1:	inc %eax\n"
	"	inc %eax\n"
	"	dec %edi\n"
	"	jnz 1b\n"
	"	ret\n"
	"IREND ir_r_jin\n"

	"IRFN ir_r_jt\n" /* a switch through a jump table */
	"	mov %edi, %eax\n"
	"	and $3, %eax\n"
	"	lea .Lir_tab(%rip), %rdx\n"
	"	movslq (%rdx,%rax,4), %rax\n"
	"	add %rdx, %rax\n"
	"	jmp *%rax\n"
	".Lir_c0: mov $10, %eax; ret\n"
	".Lir_c1: mov $11, %eax; ret\n"
	".Lir_c2: mov $12, %eax; ret\n"
	".Lir_c3: mov $13, %eax; ret\n"
	"IREND ir_r_jt\n"
	".pushsection .rodata\n"
	".p2align 2\n"
	".Lir_tab: .long .Lir_c0 - .Lir_tab, .Lir_c1 - .Lir_tab, .Lir_c2 - .Lir_tab, .Lir_c3 - .Lir_tab\n"
	".popsection\n"

	"IRFN ir_r_callmid\n"
	"	push %rbx\n"
	"	call *%rdi\n"
	"	mov %eax, %ebx\n"
	"	mov %ebx, %eax\n"
	"	pop %rbx\n"
	"	ret\n"
	"IREND ir_r_callmid\n"

	"IRFN ir_r_ret\n"
	"	ret\n"
	"IREND ir_r_ret\n"

	"IRFN ir_r_xor\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	"IREND ir_r_xor\n"

	"IRFN ir_r_loop\n" /* the loop's target is the run's end, not inside it */
	"	loop 1f\n"
	"	xor %eax, %eax\n"
	"	inc %eax\n"
	"1:	ret\n"
	"IREND ir_r_loop\n"

	"IRFN ir_r_jrcxz\n"
	"	jrcxz 1f\n"
	"	xor %eax, %eax\n"
	"	inc %eax\n"
	"1:	ret\n"
	"IREND ir_r_jrcxz\n"

	"IRFN ir_r_int3\n"
	"	int3\n"
	"	nop; nop; nop; nop\n"
	"	ret\n"
	"IREND ir_r_int3\n"

	"IRFN ir_r_retmid\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	"	nop; nop; nop; nop\n"
	"	ret\n"
	"IREND ir_r_retmid\n"

	"IRFN ir_r_undec\n"
	"	mov %rdi, %rax\n"
	"	inc %rax\n"
	"	ret\n"
	"	.byte 0x06\n" /* push %es: invalid in 64-bit mode */
	"IREND ir_r_undec\n"

	".pushsection .data\n"
	".p2align 3\n"
	"IRLABEL ir_fptr\n"
	"	.quad ir_callee\n"
	".p2align 5\n"
	"IRLABEL ir_mem\n"
	"IRLABEL ir_d0\n"
	"	.quad 0\n"
	"IRLABEL ir_d1\n"
	"	.quad 0\n"
	"IRLABEL ir_d2\n"
	"	.quad 0\n"
	"IRLABEL ir_d3\n"
	"	.quad 0\n"
	"IRLABEL ir_vec\n"
	"	.fill 32\n"
	"IRLABEL ir_vout\n"
	"	.fill 32\n"
	"IRLABEL ir_mem_end\n"
	".popsection\n"
	".popsection\n");

IR_FN(ir_load);
IR_FN(ir_store);
IR_FN(ir_store_imm);
IR_FN(ir_lea);
IR_FN(ir_cmp);
IR_FN(ir_cmp8);
IR_FN(ir_jcc8);
IR_FN(ir_jcc32);
IR_FN(ir_jcc_mid);
IR_FN(ir_jmp8);
IR_FN(ir_jmp32);
IR_FN(ir_call);
IR_FN(ir_icall_reg);
IR_FN(ir_icall_rip);
IR_FN(ir_tailjmp);
IR_FN(ir_pushpop);
IR_FN(ir_endbr);
IR_FN(ir_retlast);
IR_FN(ir_avx);
IR_FN(ir_r_jin);
IR_FN(ir_r_jt);
IR_FN(ir_r_callmid);
IR_FN(ir_r_ret);
IR_FN(ir_r_xor);
IR_FN(ir_r_loop);
IR_FN(ir_r_jrcxz);
IR_FN(ir_r_int3);
IR_FN(ir_r_retmid);
IR_FN(ir_r_undec);

struct ir_case {
	const char *name;
	const uint8_t *fn, *end, *run;
	const uint8_t *ret;  /* a call case: the return address the callee must see */
	int indirect_jump;   /* jump_range refuses the function (-EBUSY): relocate up to `run` anyway */
	int avx;
	int b_is_callee;
};

#define C(n, ...) { .name = #n, .fn = n, .end = n##_end, .run = n##_run, __VA_ARGS__ }
static const struct ir_case cases[] = {
	C(ir_load),
	C(ir_store),
	C(ir_store_imm),
	C(ir_lea),
	C(ir_cmp),
	C(ir_cmp8),
	C(ir_jcc8),
	C(ir_jcc32),
	C(ir_jcc_mid),
	C(ir_jmp8),
	C(ir_jmp32),
	C(ir_call, .ret = ir_call_ret),
	C(ir_icall_reg, .ret = ir_icall_reg_ret, .b_is_callee = 1),
	C(ir_icall_rip, .ret = ir_icall_rip_ret),
	C(ir_tailjmp, .indirect_jump = 1),
	C(ir_pushpop),
	C(ir_endbr),
	C(ir_retlast),
	C(ir_avx, .avx = 1),
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

#define CASE_CHECK(c, cond)                                                                        \
	do {                                                                                       \
		if (!(cond))                                                                       \
			djp_test_fail(__FILE__, __LINE__, "%s: CHECK(%s) failed", (c)->name, #cond); \
	} while (0)

/* A page within +-1 GiB of `near`, read-write, or NULL. */
static uint8_t *map_near(uintptr_t near, size_t size)
{
	for (uintptr_t step = 1; step < 64; step++) {
		for (int s = -1; s <= 1; s += 2) {
			uintptr_t hint = (near & ~(uintptr_t)0xffff) + (uintptr_t)(s * (long)step * (16l << 20));
			void *p = mmap((void *)hint, size, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (p == (void *)hint)
				return p;
			if (p != MAP_FAILED)
				munmap(p, size);
		}
	}
	return NULL;
}

static int skip_case(const struct ir_case *c)
{
	return c->avx && !__builtin_cpu_supports("avx");
}

/* The run a jump would displace at the function's entry, checked against the assembler's label. */
static unsigned run_len(const struct ir_case *c)
{
	const char *why = NULL;
	unsigned len = 0;
	int err = djp_insn_jump_range(c->fn, c->end - c->fn, (uintptr_t)c->fn, (uintptr_t)c->fn, &len, &why);

	if (c->indirect_jump) {
		CASE_CHECK(c, err == -EBUSY && why);
		return c->run - c->fn;
	}
	if (err)
		djp_test_fail(__FILE__, __LINE__, "%s: jump_range: %d (%s)", c->name, err, why ? why : "?");
	CASE_CHECK(c, len == (unsigned)(c->run - c->fn));
	return len;
}

static unsigned long mix(unsigned long i, unsigned long k)
{
	unsigned long x = (i + 1) * 0x9e3779b97f4a7c15ul ^ (k + 1) * 0xbf58476d1ce4e5b9ul;
	return x ^ (x >> 29);
}

/* Memory in a state that depends on i, sometimes the one a compare looks for. */
static void reset_mem(unsigned long i)
{
	unsigned long *w = (unsigned long *)ir_mem;
	for (size_t k = 0; k < (size_t)(ir_mem_end - ir_mem) / 8; k++)
		w[k] = mix(i, k);
	if (i % 2)
		ir_d2 = (ir_d2 & ~0xfffffffful) | 0x12345;
	if (i % 4 == 0)
		ir_d0 = i % 13;
	ir_seen_ret = 0;
}

static void call_and_record(const struct ir_case *c, const void *fn, unsigned long i, struct ir_regs *r,
			    uint8_t *mem)
{
	unsigned long a = i % 3 == 0 ? 0 : mix(i, 100), b = c->b_is_callee ? (uintptr_t)ir_callee : mix(i, 101);

	reset_mem(i);
	memset(r, 0, sizeof(*r));
	ir_thunk(fn, a, b, r);
	memcpy(mem, ir_mem, ir_mem_end - ir_mem);
	if (r->rbx != 0x1b1b1b1b1b1b1b1bul || r->rbp != 0x2b2b2b2b2b2b2b2bul || r->r12 != 0xc1c1c1c1c1c1c1c1ul ||
	    r->r13 != 0xc2c2c2c2c2c2c2c2ul || r->r14 != 0xc3c3c3c3c3c3c3c3ul || r->r15 != 0xc4c4c4c4c4c4c4c4ul)
		djp_test_fail(__FILE__, __LINE__, "%s (%s): a callee-saved register changed", c->name,
			      fn == c->fn ? "original" : "copy");
	if (r->rsp_after != r->rsp_before)
		djp_test_fail(__FILE__, __LINE__, "%s: rsp moved by %ld", c->name, (long)(r->rsp_after - r->rsp_before));
	if (c->ret && ir_seen_ret != (uintptr_t)c->ret)
		djp_test_fail(__FILE__, __LINE__, "%s (%s): the callee returns to %#lx, not %p", c->name,
			      fn == c->fn ? "original" : "copy", (unsigned long)ir_seen_ret, (const void *)c->ret);
	r->flags &= 0xcd5; /* CF PF AF ZF SF DF OF */
}

static void run_case(const struct ir_case *c, long iters)
{
	uint8_t mem1[128], mem2[128], map[64];
	struct ir_regs r1, r2;
	const char *why = NULL;
	unsigned len = run_len(c);
	uint8_t *buf = map_near((uintptr_t)c->fn, 4096);
	ssize_t n;

	CASE_CHECK(c, ir_mem_end - ir_mem <= (long)sizeof(mem1));
	CASE_CHECK(c, buf);
	n = djp_insn_relocate(c->fn, len, (uintptr_t)c->fn, (uintptr_t)buf, buf, 4096, map, &why);
	if (n <= 0)
		djp_test_fail(__FILE__, __LINE__, "%s: relocate: %zd (%s)", c->name, n, why ? why : "?");
	CASE_CHECK(c, mprotect(buf, 4096, PROT_READ | PROT_EXEC) == 0);
	for (long i = 0; i < iters; i++) {
		call_and_record(c, c->fn, i, &r1, mem1);
		call_and_record(c, buf, i, &r2, mem2);
		if (memcmp(&r1, &r2, sizeof(r1))) {
			const unsigned long *x = (const unsigned long *)&r1, *y = (const unsigned long *)&r2;
			size_t k = 0;
			while (x[k] == y[k])
				k++;
			djp_test_fail(__FILE__, __LINE__, "%s: iteration %ld: register slot %zu: original %#lx, copy %#lx",
				      c->name, i, k, x[k], y[k]);
		}
		if (memcmp(mem1, mem2, ir_mem_end - ir_mem))
			djp_test_fail(__FILE__, __LINE__, "%s: iteration %ld: memory differs", c->name, i);
	}
	munmap(buf, 4096);
}

static long iterations(void)
{
	const char *s = getenv("DJP_INSN_RELOC_ITERS"); /* fewer under valgrind */
	return s ? atol(s) : 1000000;
}

TEST_TIMEOUT(insn_reloc_run, 300)
{
	int ran = 0;
	for (size_t k = 0; k < NCASES; k++) {
		if (skip_case(&cases[k]))
			continue;
		run_case(&cases[k], iterations());
		ran++;
	}
	/* every case ran, but ir_avx (the one that needs AVX) where the CPU
	 * has none */
	CHECK_EQ(ran, (int)NCASES - !__builtin_cpu_supports("avx"));
}

/* Is this what a call to `target` with return address `ret` became?  Its length, or 0. */
static unsigned is_push_jmp(const uint8_t *p, uintptr_t at, uintptr_t ret, uintptr_t target)
{
	int32_t lo, hi, rel;
	uint64_t v;
	unsigned n = 5;

	if (p[0] != 0x68)
		return 0;
	memcpy(&lo, p + 1, 4);
	v = (uint64_t)(int64_t)lo;
	if (p[5] == 0xc7 && p[6] == 0x44 && p[7] == 0x24 && p[8] == 0x04) {
		memcpy(&hi, p + 9, 4);
		v = (v & 0xffffffffu) | (uint64_t)(uint32_t)hi << 32;
		n = 13;
	}
	if (v != ret)
		return 0;
	if (!target) /* an indirect call: jmp *operand, checked by the caller */
		return n;
	if (p[n] != 0xe9)
		return 0;
	memcpy(&rel, p + n + 1, 4);
	return at + n + 5 + rel == target ? n + 5 : 0;
}

/* Every boundary maps to the copy of its instruction, the copies are contiguous, the end to the jump back. */
static void check_map(const struct ir_case *c)
{
	uint8_t out[256], map[64];
	const char *why = NULL;
	unsigned len = run_len(c);
	uintptr_t from = (uintptr_t)c->fn, to = from + 0x10000000; /* not executed: anywhere in reach */
	ssize_t n = djp_insn_relocate(c->fn, len, from, to, out, sizeof(out), map, &why);
	unsigned k, o = 0;
	int32_t rel;

	CASE_CHECK(c, n > 0 && len < sizeof(map));
	for (k = 0; k < len;) {
		struct djp_insn in, cp;
		unsigned m;

		CASE_CHECK(c, djp_insn_decode(c->fn + k, len - k, from + k, &in) == 0);
		for (unsigned j = k + 1; j < k + in.len; j++)
			CASE_CHECK(c, map[j] == 0xff);
		if (map[k] != o)
			djp_test_fail(__FILE__, __LINE__, "%s: map[%u] = %u, the copy is at %u", c->name, k, map[k], o);
		CASE_CHECK(c, djp_insn_decode(out + o, n - o, to + o, &cp) == 0);
		switch (in.kind) {
		case DJP_INSN_PLAIN:
		case DJP_INSN_RET:
			CASE_CHECK(c, cp.kind == in.kind && cp.len == in.len && !memcmp(out + o, c->fn + k, in.len));
			m = in.len;
			break;
		case DJP_INSN_RIPREL:
		case DJP_INSN_JMP_IND:
			CASE_CHECK(c, cp.kind == in.kind && cp.len == in.len && cp.target == in.target);
			m = in.len;
			break;
		case DJP_INSN_JMP_REL:
			CASE_CHECK(c, cp.kind == in.kind && cp.len == 5 && out[o] == 0xe9 && cp.target == in.target);
			m = 5;
			break;
		case DJP_INSN_JCC_REL:
			CASE_CHECK(c, cp.kind == in.kind && cp.len == 6 && out[o] == 0x0f && cp.target == in.target);
			CASE_CHECK(c, (out[o + 1] & 0xf) == (c->fn[k] == 0x0f ? c->fn[k + 1] : c->fn[k]) % 16);
			m = 6;
			break;
		case DJP_INSN_CALL_REL:
			m = is_push_jmp(out + o, to + o, from + k + in.len, in.target);
			CASE_CHECK(c, m);
			break;
		case DJP_INSN_CALL_IND:
			m = is_push_jmp(out + o, to + o, from + k + in.len, 0);
			CASE_CHECK(c, m);
			CASE_CHECK(c, djp_insn_decode(out + o + m, n - o - m, to + o + m, &cp) == 0);
			CASE_CHECK(c, cp.kind == DJP_INSN_JMP_IND && cp.len == in.len && cp.target == in.target);
			m += in.len;
			break;
		default:
			djp_test_fail(__FILE__, __LINE__, "%s: kind %d in a relocated run", c->name, in.kind);
		}
		o += m;
		k += in.len;
	}
	CASE_CHECK(c, map[len] == o && o + 5 == (unsigned)n && out[o] == 0xe9);
	memcpy(&rel, out + o + 1, 4);
	CASE_CHECK(c, to + o + 5 + rel == from + len);
}

TEST(insn_reloc_map)
{
	for (size_t k = 0; k < NCASES; k++)
		check_map(&cases[k]);
}

static void expect_refusal(const char *name, const uint8_t *fn, const uint8_t *end, uintptr_t addr, int err,
			   const char *why_has)
{
	const char *why = NULL;
	unsigned len = 0;
	int r = djp_insn_jump_range(fn, end - fn, (uintptr_t)fn, addr, &len, &why);

	if (r != err || !why || (why_has && !strstr(why, why_has)))
		djp_test_fail(__FILE__, __LINE__, "%s: jump_range: %d (%s), expected %d (%s)", name, r,
			      why ? why : "no why", err, why_has ? why_has : "any why");
}

#define REFUSED(f, err, has) expect_refusal(#f, f, f##_end, (uintptr_t)f, err, has)

TEST(insn_reloc_refuse)
{
	REFUSED(ir_r_jin, -EBUSY, "lands inside");
	REFUSED(ir_r_jt, -EBUSY, "indirect jump");
	REFUSED(ir_r_callmid, -EBUSY, "call in the middle");
	REFUSED(ir_r_ret, -ERANGE, "function's end");
	REFUSED(ir_r_xor, -ERANGE, "function's end");
	REFUSED(ir_r_loop, -ENOTSUP, "loop");
	REFUSED(ir_r_jrcxz, -ENOTSUP, "loop/jrcxz");
	REFUSED(ir_r_int3, -ENOTSUP, "int3");
	REFUSED(ir_r_retmid, -ENOTSUP, "middle");
	REFUSED(ir_r_undec, -EILSEQ, "undecodable");
	/* Not a boundary; outside the function. */
	expect_refusal("ir_load+1", ir_load, ir_load_end, (uintptr_t)ir_load + 1, -EINVAL, "boundary");
	expect_refusal("ir_load_end", ir_load, ir_load_end, (uintptr_t)ir_load_end, -EINVAL, NULL);
	/* Past the jump, the same function is fine from a later boundary. */
	{
		unsigned len = 0;
		CHECK_EQ(djp_insn_jump_range(ir_r_jin, ir_r_jin_end - ir_r_jin, (uintptr_t)ir_r_jin,
					     (uintptr_t)ir_r_jin + 2, &len, NULL),
			 0);
		CHECK_EQ(len, 6); /* inc, inc, dec: the jnz lands at the site itself */
	}
	/* The jump table's function works: the refusal was about the analysis, not the asm. */
	CHECK_EQ(((int (*)(int))(uintptr_t)ir_r_jt)(6), 12);
}

/* Instructions djp_insn_relocate refuses on its own, with what djp_insn_decode says of them. */
TEST(insn_reloc_decode)
{
	static const struct {
		const char *name;
		uint8_t bytes[16];
		uint8_t len;
		int kind;
		int err;
		const char *why_has;
	} bad[] = {
		{ "call *8(%rsp)", { 0xff, 0x54, 0x24, 0x08 }, 4, DJP_INSN_BAD, -ENOTSUP, "%rsp" },
		{ "call *%rsp", { 0xff, 0xd4 }, 2, DJP_INSN_BAD, -ENOTSUP, "%rsp" },
		{ "loop .", { 0xe2, 0xfe }, 2, DJP_INSN_BAD, -ENOTSUP, "loop" },
		{ "jrcxz .", { 0xe3, 0xfe }, 2, DJP_INSN_BAD, -ENOTSUP, "jrcxz" },
		{ "int3", { 0xcc }, 1, DJP_INSN_BAD, -ENOTSUP, "int3" },
		{ "xbegin", { 0xc7, 0xf8, 0, 0, 0, 0 }, 6, DJP_INSN_BAD, -ENOTSUP, "xbegin" },
		{ "ud2", { 0x0f, 0x0b }, 2, DJP_INSN_BAD, -ENOTSUP, "ud2" },
		{ "push %es", { 0x06 }, 1, -1, -EILSEQ, "undecodable" },
		{ "mov x(%rip),%rax cut", { 0x48, 0x8b, 0x05, 0, 0 }, 5, -1, -ENOTSUP, "crosses" },
	};
	const uintptr_t at = 0x400000;

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct djp_insn in;
		uint8_t out[64];
		const char *why = NULL;
		int d = djp_insn_decode(bad[k].bytes, bad[k].len, at, &in);
		ssize_t n = djp_insn_relocate(bad[k].bytes, bad[k].len, at, at + 0x1000, out, sizeof(out), NULL, &why);

		if (bad[k].kind < 0 ? d != -EILSEQ : d != 0 || in.kind != bad[k].kind || !in.why)
			djp_test_fail(__FILE__, __LINE__, "%s: decode %d kind %d", bad[k].name, d, d ? -1 : in.kind);
		if (n != bad[k].err || !why || !strstr(why, bad[k].why_has))
			djp_test_fail(__FILE__, __LINE__, "%s: relocate %zd (%s)", bad[k].name, n, why ? why : "no why");
	}

	/* What decode reports of the ones that relocate. */
	{
		struct djp_insn in;
		CHECK_EQ(djp_insn_decode(ir_load, ir_load_end - ir_load, (uintptr_t)ir_load, &in), 0);
		CHECK(in.kind == DJP_INSN_RIPREL && in.len == 7 && in.target == (uintptr_t)&ir_d0);
		CHECK_EQ(djp_insn_decode(ir_cmp, ir_cmp_end - ir_cmp, (uintptr_t)ir_cmp, &in), 0);
		CHECK(in.kind == DJP_INSN_RIPREL && in.len == ir_cmp_run - ir_cmp && in.target == (uintptr_t)&ir_d2);
		CHECK_EQ(djp_insn_decode(ir_call + 4, 5, (uintptr_t)ir_call + 4, &in), 0);
		CHECK(in.kind == DJP_INSN_CALL_REL && in.target == (uintptr_t)ir_callee);
		CHECK_EQ(djp_insn_decode(ir_icall_rip + 4, 6, (uintptr_t)ir_icall_rip + 4, &in), 0);
		CHECK_EQ(in.kind, DJP_INSN_CALL_IND);
		CHECK_EQ(djp_insn_decode(ir_jcc8 + 3, 2, (uintptr_t)ir_jcc8 + 3, &in), 0);
		CHECK(in.kind == DJP_INSN_JCC_REL && in.target > (uintptr_t)ir_jcc8_run && in.target < (uintptr_t)ir_jcc8_end);
		CHECK_EQ(djp_insn_decode(ir_r_ret, 1, (uintptr_t)ir_r_ret, &in), 0);
		CHECK_EQ(in.kind, DJP_INSN_RET);
		CHECK_EQ(djp_insn_decode(ir_endbr, 4, (uintptr_t)ir_endbr, &in), 0);
		CHECK(in.kind == DJP_INSN_PLAIN && in.len == 4);
	}
}

/* Out of rel32 reach, to the byte. */
TEST(insn_reloc_erange)
{
	uint8_t out[64];
	const char *why = NULL;
	uintptr_t f = (uintptr_t)ir_load, t = (uintptr_t)&ir_d0;
	const uintptr_t far = 3ul << 30;

	CHECK_EQ(djp_insn_relocate(ir_load, 7, f, f + far, out, sizeof(out), NULL, &why), -ERANGE);
	CHECK(why);
	CHECK_EQ(djp_insn_relocate(ir_load, 7, f, f - far, out, sizeof(out), NULL, &why), -ERANGE);
	/* No rip-relative operand: the jcc's target, then the jump back. */
	why = NULL;
	CHECK_EQ(djp_insn_relocate(ir_jcc8, 5, (uintptr_t)ir_jcc8, (uintptr_t)ir_jcc8 + far, out, sizeof(out), NULL,
				   &why),
		 -ERANGE);
	CHECK(why);
	why = NULL;
	CHECK_EQ(djp_insn_relocate(ir_pushpop, 7, (uintptr_t)ir_pushpop, (uintptr_t)ir_pushpop - far, out, sizeof(out),
				   NULL, &why),
		 -ERANGE);
	CHECK(why && strstr(why, "back"));
	why = NULL;
	CHECK_EQ(djp_insn_relocate(ir_call, 9, (uintptr_t)ir_call, (uintptr_t)ir_call + far, out, sizeof(out), NULL,
				   &why),
		 -ERANGE);
	CHECK(why);

	/* The operand exactly at +INT32_MAX from the copy's end is in reach; one byte further is not. */
	if (t > f + 16) {
		uintptr_t to = t - 7 - INT32_MAX;
		int32_t disp;
		CHECK_EQ(djp_insn_relocate(ir_load, 7, f, to, out, sizeof(out), NULL, &why), 12);
		memcpy(&disp, out + 3, 4);
		CHECK_EQ(disp, INT32_MAX);
		CHECK(!memcmp(out, ir_load, 3));
		why = NULL;
		CHECK_EQ(djp_insn_relocate(ir_load, 7, f, to - 1, out, sizeof(out), NULL, &why), -ERANGE);
		CHECK(why && strstr(why, "rip-relative"));
	}
}

/* The output buffer, to the byte; the imm after a disp32 stays what it was. */
TEST(insn_reloc_enospc)
{
	uint8_t out[64];
	const char *why = NULL;
	uintptr_t f = (uintptr_t)ir_store_imm;
	unsigned len = ir_store_imm_run - ir_store_imm;
	ssize_t n = djp_insn_relocate(ir_store_imm, len, f, f + 4096, out, sizeof(out), NULL, &why);

	CHECK_EQ(n, len + 5);
	CHECK(!memcmp(out, ir_store_imm, 3) && !memcmp(out + 7, ir_store_imm + 7, 4)); /* prefix, opcode, imm32 */
	CHECK_EQ(djp_insn_relocate(ir_store_imm, len, f, f + 4096, out, n, NULL, &why), n);
	why = NULL;
	CHECK_EQ(djp_insn_relocate(ir_store_imm, len, f, f + 4096, out, n - 1, NULL, &why), -ENOSPC);
	CHECK(why);
	CHECK_EQ(djp_insn_relocate(ir_store_imm, len, f, f + 4096, out, 4, NULL, &why), -ENOSPC);
}
