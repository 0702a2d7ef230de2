/*
 * Register and red-zone preservation across an armed marker.
 *
 * regs_site_run (asm below) loads known values into every general register
 * but %rsp, into xmm0-15 and the upper halves of ymm0-15, executes a marker
 * site, and stores what it finds afterwards.  The handlers clobber every
 * caller-saved general register (lean) and every vector register too
 * (full), so a trampoline or trap path that forgot to save one shows up as
 * a changed value.  redzone_site_run keeps 128 bytes of data below %rsp,
 * as a leaf function may, across another marker.  Each runs 10^6 hits in
 * jump mode and in int3 mode.
 */
#include <cpuid.h>
#include <stdatomic.h>

#include "djprobe/djprobe.h"
#include "harness.h"
#include "vec_site.h"

#define RECORD DJP_TEST_RECORD

#define GPR_PATTERN(i) "0x5a5a0000000000" #i

/* regs_site_run keeps an x87 value on the register stack across the site
 * (so the full trampoline must take its XSAVE path); regs_site_run_nox87
 * does not (its explicit vector-save path). */
#define REGS_SITE_FN(fn, x87_before, x87_after) __asm__(".text\n" \
	".globl " fn "\n" \
	".type " fn ",@function\n" \
	" " fn ":\n" \
	"push %rbx\npush %rbp\npush %r12\npush %r13\npush %r14\npush %r15\n" \
	"push %rdi\npush %rsi\n" \
	/* vectors: ymmN = 4 x (0x1111111111111111 * (N+1)) */ \
	".irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n" \
	"mov $(0x1111111111111111 * (\\n + 1)), %rax\n" \
	"vmovq %rax, %xmm\\n\n" \
	"vpbroadcastq %xmm\\n, %ymm\\n\n" \
	".endr\n" \
	/* an x87 value live across the site, and a non-default MXCSR */ \
	x87_before \
	"sub $8, %rsp\nstmxcsr (%rsp)\nxorl $0x6000, (%rsp)\nldmxcsr (%rsp)\nadd $8, %rsp\n" \
	"movabs $0x5a5a000000000001, %rax\n" \
	"movabs $0x5a5a000000000002, %rbx\n" \
	"movabs $0x5a5a000000000003, %rcx\n" \
	"movabs $0x5a5a000000000004, %rdx\n" \
	"movabs $0x5a5a000000000005, %rsi\n" \
	"movabs $0x5a5a000000000006, %rdi\n" \
	"movabs $0x5a5a000000000007, %rbp\n" \
	"movabs $0x5a5a000000000008, %r8\n" \
	"movabs $0x5a5a000000000009, %r9\n" \
	"movabs $0x5a5a00000000000a, %r10\n" \
	"movabs $0x5a5a00000000000b, %r11\n" \
	"movabs $0x5a5a00000000000c, %r12\n" \
	"movabs $0x5a5a00000000000d, %r13\n" \
	"movabs $0x5a5a00000000000e, %r14\n" \
	"movabs $0x5a5a00000000000f, %r15\n" \
	"990: .byte 0x66,0x0f,0x1f,0x44,0x00,0x00\n" RECORD("regs_site") \
	"push %rax\npush %rbx\npush %rcx\npush %rdx\npush %rsi\npush %rdi\npush %rbp\n" \
	"push %r8\npush %r9\npush %r10\npush %r11\npush %r12\npush %r13\npush %r14\npush %r15\n" \
	"mov 120(%rsp), %rsi\n" /* ymm_out */ \
	".irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n" \
	"vmovdqu %ymm\\n, (\\n * 32)(%rsi)\n" \
	".endr\n" \
	x87_after /* the x87 value, after the ymm area */ \
	"stmxcsr 520(%rsi)\n" /* MXCSR, then back to the default */ \
	"sub $8, %rsp\nstmxcsr (%rsp)\nxorl $0x6000, (%rsp)\nldmxcsr (%rsp)\nadd $8, %rsp\n" \
	"mov 128(%rsp), %rdi\n" /* gpr_out, in order r15 ... rax */ \
	".irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14\n" \
	"pop %rax\nmov %rax, (\\n * 8)(%rdi)\n" \
	".endr\n" \
	"add $16, %rsp\n" \
	"pop %r15\npop %r14\npop %r13\npop %r12\npop %rbp\npop %rbx\n" \
	"vzeroupper\n" \
	"ret\n" \
	".size " fn ", .-" fn "\n");
REGS_SITE_FN("regs_site_run", "fldpi\n", "fstpl 512(%rsi)\n")
REGS_SITE_FN("regs_site_run_nox87", "", "fldpi\nfstpl 512(%rsi)\n")
void regs_site_run(uint64_t *gpr_out, uint8_t *ymm_out);
void regs_site_run_nox87(uint64_t *gpr_out, uint8_t *ymm_out);

/* A leaf that keeps 16 words below %rsp across the site; returns the number
 * of words that changed. */
__asm__(".text\n"
	".globl redzone_site_run\n"
	".type redzone_site_run,@function\n"
	"redzone_site_run:\n"
	".irp n,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\n"
	"movabs $(0x7e7e7e7e00000000 + \\n), %rax\n"
	"mov %rax, -(\\n * 8)(%rsp)\n"
	".endr\n"
	"990: .byte 0x66,0x0f,0x1f,0x44,0x00,0x00\n" RECORD("redzone_site")
	"xor %eax, %eax\n"
	".irp n,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\n"
	"movabs $(0x7e7e7e7e00000000 + \\n), %rdx\n"
	"cmp %rdx, -(\\n * 8)(%rsp)\n"
	"setne %dl\nmovzbl %dl, %edx\nadd %edx, %eax\n"
	".endr\n"
	"ret\n"
	".size redzone_site_run, .-redzone_site_run\n");
int redzone_site_run(void);

static atomic_long hits;

static void clobber_gprs(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
	__asm__ volatile("mov $-1, %%rax\nmov $-1, %%rcx\nmov $-1, %%rdx\nmov $-1, %%rsi\nmov $-1, %%rdi\n"
			 "mov $-1, %%r8\nmov $-1, %%r9\nmov $-1, %%r10\nmov $-1, %%r11\n" ::
				 : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "cc");
}

static void clobber_all(const struct djp_hit *hit, void *data)
{
	unsigned mxcsr = 0x1f80;
	clobber_gprs(hit, data);
	/* x87 reset (empties the register stack), default MXCSR */
	__asm__ volatile("fninit\nldmxcsr %0" ::"m"(mxcsr));
	__asm__ volatile(".irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
			 "vpcmpeqd %%ymm\\n, %%ymm\\n, %%ymm\\n\n"
			 ".endr\n" ::
				 : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
				   "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
}

static int have_avx2(void)
{
	unsigned a, b, c, d;
	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2);
}

static void check_fp(const uint8_t *ymm, unsigned mxcsr_default, long i);

static void check_regs(unsigned flags, djp_handler_fn fn, long n)
{
	uint64_t gpr[15];
	uint8_t ymm[16 * 32 + 16];
	unsigned mxcsr_default;
	__asm__ volatile("stmxcsr %0" : "=m"(mxcsr_default));
	int id;

	if (!have_avx2())
		SKIP("no AVX2");
	atomic_store(&hits, 0);
	id = djp_connect("regs_site", fn, NULL, flags);
	CHECK(id >= 0);
	for (long i = 0; i < n; i++) {
		if (i & 1)
			regs_site_run(gpr, ymm);
		else
			regs_site_run_nox87(gpr, ymm);
		/* gpr[] holds r15 first, rax last: pattern 15 .. 1 */
		for (int r = 0; r < 15; r++)
			if (gpr[r] != 0x5a5a000000000000ull + (uint64_t)(15 - r))
				djp_test_fail(__FILE__, __LINE__, "hit %ld: register %d is %#lx", i, 15 - r,
					      (unsigned long)gpr[r]);
		if (!(flags & DJP_GPR_ONLY))
			check_fp(ymm, mxcsr_default, i);
		for (int v = 0; v < 16; v++)
			for (int q = 0; q < 4; q++) {
				uint64_t got;
				memcpy(&got, ymm + v * 32 + q * 8, 8);
				if (got != 0x1111111111111111ull * (uint64_t)(v + 1))
					djp_test_fail(__FILE__, __LINE__, "hit %ld: ymm%d word %d is %#lx", i, v, q,
						      (unsigned long)got);
			}
	}
	CHECK_EQ(atomic_load(&hits), n);
	CHECK_EQ(djp_disconnect(id), 0);
}

/* The x87 value and MXCSR that regs_site_run kept across the site. */
static void check_fp(const uint8_t *ymm, unsigned mxcsr_default, long i)
{
	double pi;
	unsigned mxcsr;
	memcpy(&pi, ymm + 512, 8);
	memcpy(&mxcsr, ymm + 520, 4);
	if (pi != 3.141592653589793)
		djp_test_fail(__FILE__, __LINE__, "hit %ld: x87 st0 is %g", i, pi);
	if (mxcsr != (mxcsr_default ^ 0x6000))
		djp_test_fail(__FILE__, __LINE__, "hit %ld: MXCSR is %#x", i, mxcsr);
}

static void check_redzone(unsigned flags, long n)
{
	int id = djp_connect("redzone_site", clobber_gprs, NULL, flags);
	CHECK(id >= 0);
	atomic_store(&hits, 0);
	for (long i = 0; i < n; i++)
		if (redzone_site_run())
			djp_test_fail(__FILE__, __LINE__, "hit %ld: red zone data changed", i);
	CHECK_EQ(atomic_load(&hits), n);
	CHECK_EQ(djp_disconnect(id), 0);
}

TEST_TIMEOUT(regs_preserved_jump_lean, 120)
{
	check_regs(DJP_GPR_ONLY, clobber_gprs, 1000000);
}

TEST_TIMEOUT(regs_preserved_jump_full, 120)
{
	check_regs(0, clobber_all, 1000000);
}

TEST_TIMEOUT(regs_preserved_int3, 300)
{
	check_regs(DJP_FORCE_INT3, clobber_all, 1000000);
}

TEST_TIMEOUT(redzone_preserved_jump, 120)
{
	check_redzone(DJP_GPR_ONLY, 1000000);
	check_redzone(0, 1000000);
}

TEST_TIMEOUT(redzone_preserved_int3, 300)
{
	check_redzone(DJP_FORCE_INT3, 1000000);
}
