/*
 * Every kind of argument location an SDT probe can name, with values the
 * program knows: the target of the argument-location tests, and of any
 * tool that wants to check its reading of SDT arguments (bpftrace reads
 * the same notes).  Plain C and inline assembly, nothing of djprobe.
 *
 *   argkinds_target [-w] [N]
 *
 * fires each probe of provider `argkinds` N times (default 3) and, after
 * each firing, prints what its arguments must read, as signed decimal
 * numbers, one line a firing:
 *
 *   argkinds:NAME V1 V2 ...
 *
 * then "done".  Its output is the same every run.  With -w it first
 * prints "ready PID" and waits for a line on stdin (for a tool to attach
 * with -x), and after "done" waits for the end of its input.  The probes:
 *
 *   reg_s reg_u reg_cs reg_hi   registers of every width and both signs
 *                               (%al, %bx, %ecx, %rdx, %sil, %r8d, %r12,
 *                               %r15b, %ah, %bh, ...)
 *   rsp rbp                     N@off(%rsp), N@off(%rbp)
 *   rip                         N@sym(%rip), N@sym+off(%rip)
 *   abs                         N@sym: a symbol's absolute address
 *   imm                         N@$imm, printed as the compiler would
 *   index                       N@off(%base,%index,scale)
 *   dirty                       base and index registers the first
 *                               arguments are in (%rcx, %rdx)
 *   many                        six arguments of mixed kinds
 *   symidx                      N@sym(,%index,scale), N@sym(%base,%index,
 *                               scale): only where the program is not
 *                               position independent (-no-pie)
 *   params (not a probe)        ak_params(a..h), eight parameters, two
 *                               on the stack; the line "tag: params-call"
 *                               is in it; prints "argkinds:params a b c d e
 *                               f g h RET"
 *
 * Each probe's site and note are written out in assembly, with the
 * argument string by hand, and the registers and memory it names are set
 * just before it from values computed in C: the compiler chooses none of
 * them.  The assembly steps over the red zone and keeps a frame of its
 * own (%rbp), and tells the call-frame information so.  After each site
 * come a few instructions that can be run elsewhere and change no flag
 * but read them, so that an engine may widen the 1-byte nop into a jump
 * over them, and must keep the flags when it does.
 *
 * Built three ways (selftests/trace.mk): argkinds_target (SDT probes, a
 * 1-byte nop each, as <sys/sdt.h> makes them), argkinds_target-mark
 * (-DARGKINDS_MARK: djprobe markers, a 6-byte nop and a .markers record
 * with the same argument strings and an empty format) and
 * argkinds_target-nopie (-no-pie, with symidx).  And twice more, as
 * argkinds_engine and argkinds_engine-mark (-DARGKINDS_ENGINE, linked
 * with libdjprobe.a): the first argument, "full", "lean" or "int3",
 * connects a handler of that kind to every probe in the process, which
 * reads each argument with djp_hit_arg; before each expected line the
 * program prints what the handler read:
 *
 *   hit NAME V1 V2 ...
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "selftests/sdt_note_asm.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* The note of <sys/sdt.h>, version 3, with the arguments as given. */
#define AK_NOTE(name, args) SDT_BASE_ASM SDT_NOTE_ASM("argkinds", name, "0", args)

#ifdef ARGKINDS_MARK
/* A djprobe marker (docs/ABI.md, record version 1) with the same note. */
#define AK_SITE(name, nargs, args)                                                           \
	"990: %{disp8%} nopw 0x0(%%rax,%%rax,1)\n"                                             \
	".pushsection .markers,\"aR?\",@progbits\n"                                          \
	".balign 8\n"                                                                        \
	"991: .2byte 1\n"                                                                    \
	".2byte 992f-991b\n"                                                                 \
	".byte 6, " STR(nargs) "\n"                                                          \
	".2byte 0\n"                                                                         \
	".8byte 990b-.\n"                                                                    \
	".asciz \"" name "\"\n"                                                              \
	".asciz \"" args "\"\n"                                                              \
	".asciz \"\"\n"                                                                      \
	".balign 8, 0\n"                                                                     \
	"992:\n"                                                                             \
	".popsection\n" AK_NOTE(name, args)
#else
#define AK_SITE(name, nargs, args) "990: nop\n" AK_NOTE(name, args)
#endif

/* Below the red zone, a frame: %rbp at its top, 64 bytes from %rsp. */
#define AK_ENTER                                                                             \
	"lea -128(%%rsp),%%rsp\n"                                                            \
	".cfi_adjust_cfa_offset 128\n"                                                       \
	"push %%rbp\n"                                                                       \
	".cfi_adjust_cfa_offset 8\n"                                                         \
	"mov %%rsp,%%rbp\n"                                                                  \
	"sub $64,%%rsp\n"                                                                    \
	".cfi_adjust_cfa_offset 64\n"
/* No flag written, nothing that cannot run elsewhere; the flags read
 * (pushfq) before anything writes them, so that a jump over the site
 * must keep them, as after python's gc__start, whose nop a jmp follows. */
#define AK_LEAVE                                                                             \
	"lea 64(%%rsp),%%rsp\n"                                                              \
	".cfi_adjust_cfa_offset -64\n"                                                       \
	"pushfq\n"                                                                           \
	".cfi_adjust_cfa_offset 8\n"                                                         \
	"popfq\n"                                                                            \
	".cfi_adjust_cfa_offset -8\n"                                                        \
	"pop %%rbp\n"                                                                        \
	".cfi_adjust_cfa_offset -8\n"                                                        \
	"lea 128(%%rsp),%%rsp\n"                                                             \
	".cfi_adjust_cfa_offset -128\n"

/* The globals the rip, abs, many and symidx probes read. */
volatile int64_t ak_g64;
volatile int32_t ak_g32;
volatile uint16_t ak_g16;
volatile uint8_t ak_gb[2];
volatile int64_t ak_arr[8];
volatile long ak_sink;

static int64_t ext(uint64_t v, int size)
{
	unsigned sh = 64 - 8 * (unsigned)(size < 0 ? -size : size);
	if (sh == 0)
		return (int64_t)v;
	return size < 0 ? (int64_t)(v << sh) >> sh : (int64_t)((v << sh) >> sh);
}

/* The `size` bytes at p, extended as a size prefix says (-4: signed). */
static int64_t at(const volatile void *p, int size)
{
	uint64_t v = 0;
	memcpy(&v, (const void *)p, (size_t)(size < 0 ? -size : size));
	return ext(v, size);
}

#ifdef ARGKINDS_ENGINE
#include "djprobe/djprobe.h"

/* What the last hit read: written by a handler that may run in a lean
 * trampoline (general registers only), printed by print() after it. */
static const char *hit_name;
static int64_t hit_arg[12];
static unsigned hit_nargs;

__attribute__((target("general-regs-only"))) static void on_hit(const struct djp_hit *hit, void *data)
{
	(void)data;
	hit_name = djp_hit_name(hit);
	hit_nargs = djp_hit_nargs(hit);
	for (unsigned i = 0; i < hit_nargs && i < 12; i++)
		hit_arg[i] = djp_hit_arg(hit, i);
}

static void print_hit(void)
{
	if (!hit_name)
		return;
	printf("hit %s", hit_name);
	for (unsigned i = 0; i < hit_nargs; i++)
		printf(" %lld", (long long)hit_arg[i]);
	printf("\n");
	hit_name = NULL;
}
#else
static void print_hit(void)
{
}
#endif

static void print(const char *name, int n, const int64_t *e)
{
	print_hit();
	printf("argkinds:%s", name);
	for (int i = 0; i < n; i++)
		printf(" %lld", (long long)e[i]);
	printf("\n");
}

__attribute__((noinline)) void ak_reg_s(const int64_t *v)
{
	__asm__ __volatile__(AK_ENTER
			     "mov 0(%0),%%rax\n"
			     "mov 8(%0),%%rbx\n"
			     "mov 16(%0),%%rcx\n"
			     "mov 24(%0),%%rdx\n"
			     AK_SITE("reg_s", 4, "-1@%%al -2@%%bx -4@%%ecx -8@%%rdx")
			     AK_LEAVE
			     :
			     : "r"(v)
			     : "rax", "rbx", "rcx", "rdx", "memory");
	print("reg_s", 4, (int64_t[]){ ext(v[0], -1), ext(v[1], -2), ext(v[2], -4), v[3] });
}

__attribute__((noinline)) void ak_reg_u(const int64_t *v)
{
	__asm__ __volatile__(AK_ENTER
			     "mov 0(%0),%%rsi\n"
			     "mov 8(%0),%%rdi\n"
			     "mov 16(%0),%%r8\n"
			     "mov 24(%0),%%r9\n"
			     AK_SITE("reg_u", 4, "1@%%sil 2@%%di 4@%%r8d 8@%%r9")
			     AK_LEAVE
			     :
			     : "r"(v)
			     : "rsi", "rdi", "r8", "r9", "memory");
	print("reg_u", 4, (int64_t[]){ ext(v[0], 1), ext(v[1], 2), ext(v[2], 4), v[3] });
}

/* Callee-saved registers: a view keeps them only where an argument reads
 * them. */
__attribute__((noinline)) void ak_reg_cs(const int64_t *v)
{
	__asm__ __volatile__(AK_ENTER
			     "mov 0(%0),%%r12\n"
			     "mov 8(%0),%%r13\n"
			     "mov 16(%0),%%r14\n"
			     "mov 24(%0),%%r15\n"
			     AK_SITE("reg_cs", 4, "-8@%%r12 4@%%r13d -2@%%r14w 1@%%r15b")
			     AK_LEAVE
			     :
			     : "r"(v)
			     : "r12", "r13", "r14", "r15", "memory");
	print("reg_cs", 4, (int64_t[]){ v[0], ext(v[1], 4), ext(v[2], -2), ext(v[3], 1) });
}

/* The second byte of a register (%ah): no prefetch can load it. */
__attribute__((noinline)) void ak_reg_hi(const int64_t *v)
{
	__asm__ __volatile__(AK_ENTER
			     "mov 0(%0),%%rax\n"
			     "mov 8(%0),%%rbx\n"
			     "mov 16(%0),%%r10\n"
			     "mov 24(%0),%%r11\n"
			     AK_SITE("reg_hi", 4, "1@%%ah -1@%%bh -4@%%r10d 2@%%r11w")
			     AK_LEAVE
			     :
			     : "r"(v)
			     : "rax", "rbx", "r10", "r11", "memory");
	print("reg_hi", 4,
	      (int64_t[]){ ext((uint64_t)v[0] >> 8, 1), ext((uint64_t)v[1] >> 8, -1), ext(v[2], -4), ext(v[3], 2) });
}

__attribute__((noinline)) void ak_rsp(const int64_t *v)
{
	int64_t e[4];
	__asm__ __volatile__(AK_ENTER
			     "mov 0(%0),%%rax\n"
			     "mov %%rax,8(%%rsp)\n"
			     "mov 8(%0),%%rax\n"
			     "mov %%rax,16(%%rsp)\n"
			     "mov 16(%0),%%rax\n"
			     "mov %%rax,24(%%rsp)\n"
			     "mov 24(%0),%%rax\n"
			     "mov %%rax,32(%%rsp)\n"
			     AK_SITE("rsp", 4, "-1@8(%%rsp) 2@16(%%rsp) -4@24(%%rsp) 8@32(%%rsp)")
			     AK_LEAVE
			     :
			     : "r"(v)
			     : "rax", "memory");
	e[0] = ext(v[0], -1), e[1] = ext(v[1], 2), e[2] = ext(v[2], -4), e[3] = v[3];
	print("rsp", 4, e);
}

__attribute__((noinline)) void ak_rbp(const int64_t *v)
{
	__asm__ __volatile__(AK_ENTER
			     "mov 0(%0),%%rax\n"
			     "mov %%rax,-8(%%rbp)\n"
			     "mov 8(%0),%%rax\n"
			     "mov %%rax,-16(%%rbp)\n"
			     "mov 16(%0),%%rax\n"
			     "mov %%rax,-24(%%rbp)\n"
			     "mov 24(%0),%%rax\n"
			     "mov %%rax,-32(%%rbp)\n"
			     AK_SITE("rbp", 4, "4@-8(%%rbp) -8@-16(%%rbp) 1@-24(%%rbp) -2@-32(%%rbp)")
			     AK_LEAVE
			     :
			     : "r"(v)
			     : "rax", "memory");
	print("rbp", 4, (int64_t[]){ ext(v[0], 4), v[1], ext(v[2], 1), ext(v[3], -2) });
}

static void set_globals(const int64_t *v)
{
	ak_g64 = v[0];
	ak_g32 = (int32_t)v[1];
	ak_g16 = (uint16_t)v[2];
	ak_gb[0] = (uint8_t)v[3];
	ak_gb[1] = (uint8_t)(v[3] >> 8);
}

__attribute__((noinline)) void ak_rip(const int64_t *v)
{
	set_globals(v);
	__asm__ __volatile__(AK_ENTER
			     AK_SITE("rip", 4, "8@ak_g64(%%rip) -4@ak_g32(%%rip) 2@ak_g16(%%rip) -1@ak_gb+1(%%rip)")
			     AK_LEAVE
			     :
			     :
			     : "memory");
	print("rip", 4, (int64_t[]){ at(&ak_g64, 8), at(&ak_g32, -4), at(&ak_g16, 2), at(&ak_gb[1], -1) });
}

__attribute__((noinline)) void ak_abs(const int64_t *v)
{
	set_globals(v);
	__asm__ __volatile__(AK_ENTER
			     AK_SITE("abs", 4, "-8@ak_g64 4@ak_g32 -2@ak_g16 1@ak_gb")
			     AK_LEAVE
			     :
			     :
			     : "memory");
	print("abs", 4, (int64_t[]){ at(&ak_g64, -8), at(&ak_g32, 4), at(&ak_g16, -2), at(&ak_gb[0], 1) });
}

/* Immediates as GCC prints them: the signed value of the operand's mode,
 * whatever the type ("1@$-56" for a uint8_t 200). */
__attribute__((noinline)) void ak_imm(void)
{
	__asm__ __volatile__(AK_ENTER
			     AK_SITE("imm", 4, "-4@$-5 4@$-1294967296 1@$-56 -8@$-9000000000000000000")
			     AK_LEAVE
			     :
			     :
			     : "memory");
	print("imm", 4, (int64_t[]){ -5, 3000000000LL, 200, -9000000000000000000LL });
}

static void set_array(const int64_t *v)
{
	for (int i = 0; i < 8; i++)
		ak_arr[i] = v[i % 4] ^ ((int64_t)i << 56);
}

__attribute__((noinline)) void ak_index(const int64_t *v)
{
	const volatile char *a = (const volatile char *)ak_arr;
	set_array(v);
	__asm__ __volatile__(AK_ENTER
			     "lea ak_arr(%%rip),%%rdi\n"
			     "mov $1,%%esi\n"
			     "mov $3,%%edx\n"
			     "lea 32(%%rdi),%%rcx\n"
			     AK_SITE("index", 4,
				     "-4@8(%%rdi,%%rsi,4) 8@(%%rdi,%%rdx,8) -2@-2(%%rcx,%%rsi,2) 1@5(%%rdi)")
			     AK_LEAVE
			     :
			     :
			     : "rdi", "rsi", "rdx", "rcx", "memory");
	print("index", 4, (int64_t[]){ at(a + 12, -4), at(a + 24, 8), at(a + 32, -2), at(a + 5, 1) });
}

/* Registers an earlier argument's load may have overwritten: an engine
 * that loads the arguments into %rdx, %rcx, ... reads the later ones' base
 * and index from elsewhere. */
__attribute__((noinline)) void ak_dirty(const int64_t *v)
{
	const volatile char *a = (const volatile char *)ak_arr;
	set_array(v);
	__asm__ __volatile__(AK_ENTER
			     "mov 8(%0),%%rax\n"
			     "mov %%rax,12(%%rsp)\n"
			     "mov $3,%%ecx\n"
			     "mov $1,%%edx\n"
			     "lea ak_arr(%%rip),%%rdi\n"
			     AK_SITE("dirty", 4, "8@%%rcx -4@8(%%rsp,%%rdx,4) 2@(%%rdi,%%rcx,2) -8@%%rdx")
			     AK_LEAVE
			     :
			     : "r"(v)
			     : "rax", "rcx", "rdx", "rdi", "memory");
	print("dirty", 4, (int64_t[]){ 3, ext(v[1], -4), at(a + 6, 2), 1 });
}

/* More than four: another trampoline flavour than the others'. */
__attribute__((noinline)) void ak_many(const int64_t *v)
{
	const volatile char *a = (const volatile char *)ak_arr;
	set_globals(v);
	set_array(v);
	__asm__ __volatile__(AK_ENTER
			     "mov 0(%0),%%rdi\n"
			     "mov 8(%0),%%rax\n"
			     "mov %%rax,16(%%rsp)\n"
			     "mov 16(%0),%%rax\n"
			     "mov %%rax,-8(%%rbp)\n"
			     "lea ak_arr(%%rip),%%rsi\n"
			     "mov $2,%%edx\n"
			     AK_SITE("many", 6,
				     "-4@%%edi 8@16(%%rsp) -2@-8(%%rbp) 4@ak_g32(%%rip) 1@$200 -8@8(%%rsi,%%rdx,8)")
			     AK_LEAVE
			     :
			     : "r"(v)
			     : "rax", "rdi", "rsi", "rdx", "memory");
	print("many", 6, (int64_t[]){ ext(v[0], -4), v[1], ext(v[2], -2), at(&ak_g32, 4), 200, at(a + 24, -8) });
}

#ifndef __PIE__
/* A symbol's absolute address as displacement, as code that is not
 * position independent indexes an array. */
__attribute__((noinline)) void ak_symidx(const int64_t *v)
{
	const volatile char *a = (const volatile char *)ak_arr;
	set_array(v);
	__asm__ __volatile__(AK_ENTER
			     "mov $1,%%esi\n"
			     "mov $2,%%edx\n"
			     "mov $8,%%ecx\n"
			     AK_SITE("symidx", 4,
				     "-4@ak_arr(,%%rsi,4) 8@ak_arr+8(,%%rdx,8) -2@ak_arr(%%rcx,%%rsi,2) "
				     "4@ak_arr+4(%%rcx)")
			     AK_LEAVE
			     :
			     :
			     : "rsi", "rdx", "rcx", "memory");
	print("symidx", 4, (int64_t[]){ at(a + 4, -4), at(a + 24, 8), at(a + 10, -2), at(a + 12, 4) });
}
#endif

__attribute__((noinline)) void ak_opaque(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/* Eight parameters: g and h come on the stack, and stay there across the
 * call (for a probe on its line, or the return's). */
__attribute__((noipa)) long ak_params(long a, long b, long c, long d, long e, long f, long g, long h)
{
	ak_sink = a + b + c + d + e + f;
	ak_opaque(); /* tag: params-call */
	return ak_sink ^ g ^ h;
}

int main(int argc, char **argv)
{
	char line[64];
	int a = 1, wait = a < argc && !strcmp(argv[a], "-w"), n;

	a += wait;
#ifdef ARGKINDS_ENGINE
	{
		const char *mode = a < argc ? argv[a++] : "full";
		unsigned flags = !strcmp(mode, "lean") ? DJP_GPR_ONLY : !strcmp(mode, "int3") ? DJP_FORCE_INT3 : 0;
		if (djp_connect("*", on_hit, NULL, flags) < 0) {
			perror("argkinds_engine: djp_connect");
			return 1;
		}
	}
#endif
	n = a < argc ? atoi(argv[a]) : 3;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (wait) {
		printf("ready %d\n", (int)getpid());
		if (!fgets(line, sizeof(line), stdin))
			return 1;
	}
	for (int i = 0; i < n; i++) {
		int64_t v[4];
		long r;
		for (int k = 0; k < 4; k++)
			v[k] = (int64_t)(0x9e3779b97f4a7c15ULL * (uint64_t)(4 * i + k + 1));
		ak_reg_s(v);
		ak_reg_u(v);
		ak_reg_cs(v);
		ak_reg_hi(v);
		ak_rsp(v);
		ak_rbp(v);
		ak_rip(v);
		ak_abs(v);
		ak_imm();
		ak_index(v);
		ak_dirty(v);
		ak_many(v);
#ifndef __PIE__
		ak_symidx(v);
#endif
		r = ak_params(v[0], v[1], v[2], v[3], -1 - i, 2 + i, v[0] ^ v[3], -(int64_t)(1000 + i));
		printf("argkinds:params %ld %ld %ld %ld %ld %ld %ld %ld %ld\n", (long)v[0], (long)v[1], (long)v[2],
		       (long)v[3], (long)(-1 - i), (long)(2 + i), (long)(v[0] ^ v[3]), (long)(-1000 - i), r);
	}
	printf("done\n");
	while (wait && fgets(line, sizeof(line), stdin))
		;
	return 0;
}
