/* Jumps in functions with indirect jumps (arch/x86/indirect_targets.c):
 * a computed-goto interpreter and a switch table, probed in the middle of
 * their blocks and hammered by threads while armed and disarmed; a run
 * that would cover a place only a table names stays an int3. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "harness.h"

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

static long ig_ref(const unsigned char *p, long acc)
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

static long sw_ref(long op, long x)
{
	static const long add[] = { 10, 0, 0, 101, 100 };
	if (op < 0 || op > 4)
		return -1;
	return op == 1 ? 3 * x + 7 : op == 2 ? -x : x + add[op];
}

/* Each op several times, the probed ones in the middle of others. */
static const unsigned char ig_prog[] = { 0, 1, 2, 4, 3, 0, 0, 1, 4, 2, 3, 1, 0, 4, 2, 5 };

static atomic_long hits;

static void count(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add(&hits, 1);
}

#define OPTS(...) (&(struct djp_point_opts){ .sz = sizeof(struct djp_point_opts), __VA_ARGS__ })

static int connect_addr(const void *a, unsigned flags)
{
	return djp_connect_at(OPTS(.addr = (uintptr_t)a), count, NULL, flags);
}

static long ops_in_prog(unsigned char op)
{
	long n = 0;
	for (size_t i = 0; ig_prog[i] != 5; i++)
		n += ig_prog[i] == op;
	return n;
}

/* Armed alone, one thread: the sites are what the proofs allow, every hit
 * is counted and every result is the unprobed one. */
TEST(indirect_computed_goto_sites_become_jumps)
{
	const void *sites[] = { ig_add_site, ig_mul_site, ig_op_inc2 };
	const unsigned char op[] = { 0, 1, 2 }, want[] = { 0xe9, 0xe9, 0xcc };
	uint8_t before[64];

	memcpy(before, (void *)ig_run, sizeof(before));
	for (int s = 0; s < 3; s++)
		for (int m = 0; m < 2; m++) {
			int id = connect_addr(sites[s], m ? DJP_GPR_ONLY : 0);
			CHECK(id >= 0);
			CHECK_EQ(*(const uint8_t *)sites[s], want[s]);
			atomic_store(&hits, 0);
			for (long i = 0; i < 10000; i++)
				CHECK_EQ(ig_run(ig_prog, i), ig_ref(ig_prog, i));
			CHECK_EQ(atomic_load(&hits), 10000 * ops_in_prog(op[s]));
			CHECK_EQ(djp_disconnect(id), 0);
		}
	CHECK(memcmp(before, (void *)ig_run, sizeof(before)) == 0);
}

TEST(indirect_switch_table_sites_become_jumps)
{
	const void *sites[] = { sw_site, sw_case3 };
	const uint8_t want[] = { 0xe9, 0xcc };
	uint8_t before[64];

	memcpy(before, (void *)sw_run, sizeof(before));
	for (int s = 0; s < 2; s++)
		for (int m = 0; m < 2; m++) {
			int id = connect_addr(sites[s], m ? DJP_GPR_ONLY : 0);
			CHECK(id >= 0);
			CHECK_EQ(*(const uint8_t *)sites[s], want[s]);
			atomic_store(&hits, 0);
			for (long i = 0; i < 12000; i++)
				CHECK_EQ(sw_run(i % 6, i), sw_ref(i % 6, i));
			CHECK_EQ(atomic_load(&hits), 2000); /* op 1, op 3: a sixth of the calls */
			CHECK_EQ(djp_disconnect(id), 0);
		}
	CHECK(memcmp(before, (void *)sw_run, sizeof(before)) == 0);
}

/* Four threads run both functions while their sites are armed and
 * disarmed: every result stays the unprobed one. */
static atomic_int stop;
static atomic_long wrong, runs;

static void *runner(void *arg)
{
	long seed = (long)(intptr_t)arg, n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		long x = seed * 1000003 + n++;
		if (ig_run(ig_prog, x) != ig_ref(ig_prog, x) || sw_run(x % 6, x) != sw_ref(x % 6, x))
			atomic_fetch_add(&wrong, 1);
	}
	atomic_fetch_add(&runs, n);
	return NULL;
}

TEST_TIMEOUT(indirect_sites_armed_and_disarmed_under_four_threads, 300)
{
	const void *sites[] = { ig_add_site, ig_mul_site, ig_op_inc2, sw_site, sw_case3 };
	uint8_t before_ig[64], before_sw[64];
	pthread_t t[4];
	long last = 0;

	memcpy(before_ig, (void *)ig_run, sizeof(before_ig));
	memcpy(before_sw, (void *)sw_run, sizeof(before_sw));
	atomic_store(&hits, 0);
	for (long i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, runner, (void *)(intptr_t)i), 0);
	for (int round = 0; round < 200; round++) {
		int a = connect_addr(sites[round % 5], round & 1 ? DJP_GPR_ONLY : 0);
		int b = connect_addr(sites[(round + 2) % 5], 0);
		long h;
		CHECK(a >= 0 && b >= 0);
		/* wait for hits, not for time: the threads ran the sites armed */
		while ((h = atomic_load(&hits)) < last + 50)
			sched_yield();
		last = h;
		CHECK_EQ(djp_disconnect(round & 2 ? a : b), 0);
		CHECK_EQ(djp_disconnect(round & 2 ? b : a), 0);
		last = atomic_load(&hits);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(atomic_load(&wrong), 0);
	CHECK(atomic_load(&runs) > 0);
	CHECK(memcmp(before_ig, (void *)ig_run, sizeof(before_ig)) == 0);
	CHECK(memcmp(before_sw, (void *)sw_run, sizeof(before_sw)) == 0);
}

/*
 * long ij_unknown(long (*f)(void *, long), long x): a tail call through a
 * register the function never loads (its argument): where it goes is not
 * known, so no jump goes anywhere in the function, not even over its
 * first two instructions, which no branch targets.
 */
__asm__(".pushsection .text\n"
	".globl ij_unknown\n"
	".type ij_unknown,@function\n"
	"ij_unknown:\n"
	"	mov %rsi,%rax\n"
	"	add $1,%rax\n"
	"	jmp *%rdi\n"
	".size ij_unknown, .-ij_unknown\n"
	".popsection\n");
long ij_unknown(long (*f)(void *, long), long x);

__attribute__((noinline)) static long ij_callee(void *self, long x)
{
	(void)self;
	return 2 * x;
}

TEST(indirect_jump_not_understood_keeps_the_refusal)
{
	int id = connect_addr(ij_unknown, 0);

	CHECK(id >= 0);
	CHECK_EQ(*(const uint8_t *)ij_unknown, 0xcc);
	atomic_store(&hits, 0);
	for (long i = 0; i < 1000; i++)
		CHECK_EQ(ij_unknown(ij_callee, i), 2 * i);
	CHECK_EQ(atomic_load(&hits), 1000);
	CHECK_EQ(djp_disconnect(id), 0);
}
