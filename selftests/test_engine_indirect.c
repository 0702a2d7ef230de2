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

#include "selftests/every_reg_asm.h"
#include "selftests/indirect_asm.h"

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

/* The switch on a field compared in memory (PostgreSQL's
 * CommitTransaction has one). */
TEST(indirect_switch_on_a_field_site_becomes_a_jump)
{
	int id = connect_addr(swm_site, 0);

	CHECK(id >= 0);
	CHECK_EQ(*(const uint8_t *)swm_site, 0xe9);
	atomic_store(&hits, 0);
	for (long i = 0; i < 3000; i++) {
		int op = (int)(i % 3);
		CHECK_EQ(swm_run(&op, i), op == 0 ? i + 10 : op == 1 ? 3 * i + 7 : -1);
	}
	CHECK_EQ(atomic_load(&hits), 1000);
	CHECK_EQ(djp_disconnect(id), 0);
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

/*
 * long igj_run(const unsigned char *prog, long acc): ig_run's tail-merged
 * dispatch, with one path into the tail that brings no address loaded
 * from the table: op 1 jumps to whatever acc holds (never run here).  The
 * tail's `jmp *%rdx` may then go anywhere, so the function keeps no jump:
 * igj_site, which a jump could cover in ig_run, stays an int3.  Ops: 0
 * acc += 3, 2 return.
 */
__asm__(".pushsection .text\n"
	".globl igj_run\n"
	".type igj_run,@function\n"
	"igj_run:\n"
	"	mov %rsi,%rax\n"
	"	lea igj_table(%rip),%rcx\n"
	"	movzbl (%rdi),%edx\n"
	"	mov (%rcx,%rdx,8),%rdx\n"
	"igj_tail:\n"
	"	xchg %ax,%ax\n"
	"	jmp *%rdx\n"
	"igj_op_add:\n"
	"	add $3,%rax\n"
	".globl igj_site\n"
	"igj_site:\n"
	"	add $1,%rdi\n"
	"	movzbl (%rdi),%edx\n"
	"	mov (%rcx,%rdx,8),%rdx\n"
	"	jmp igj_tail\n"
	"igj_op_any:\n"
	"	mov %rax,%rdx\n"
	"	jmp igj_tail\n"
	"igj_op_end:\n"
	"	ret\n"
	".size igj_run, .-igj_run\n"
	".section .data.rel.ro,\"aw\"\n"
	".balign 8\n"
	"igj_table:\n"
	"	.quad igj_op_add, igj_op_any, igj_op_end\n"
	".popsection\n");
long igj_run(const unsigned char *prog, long acc);
extern const char igj_site[];

TEST(indirect_join_that_brings_no_table_address_keeps_the_refusal)
{
	static const unsigned char prog[] = { 0, 0, 0, 2 };
	int id = connect_addr(igj_site, 0);

	CHECK(id >= 0);
	CHECK_EQ(*(const uint8_t *)igj_site, 0xcc);
	atomic_store(&hits, 0);
	for (long i = 0; i < 1000; i++)
		CHECK_EQ(igj_run(prog, i), i + 9);
	CHECK_EQ(atomic_load(&hits), 3000);
	CHECK_EQ(djp_disconnect(id), 0);
}

/*
 * void swr_run(long op, long *out): a switch whose case 1 sets every
 * general register and the flags (0x1111 < 0x2222: CF and SF set), then
 * at swr_site, between the case labels, stores them all, the flags last
 * with pushfq.  A jump at swr_site must leave every one as it was.
 */
__asm__(".pushsection .text\n"
	".globl swr_run\n"
	".type swr_run,@function\n"
	"swr_run:\n"
	"	cmp $1,%rdi\n"
	"	ja 9f\n"
	"	lea swr_table(%rip),%rdx\n"
	"	movslq (%rdx,%rdi,4),%rax\n"
	"	add %rdx,%rax\n"
	"	jmp *%rax\n"
	"swr_case0:\n"
	"	ret\n"
	"swr_case1:\n"
	EVERY_REG_SAVE
	"	mov %rsi,%r15\n"
	EVERY_REG_SET
	"	mov $0xeeee,%r14\n"
	"	cmp %rbx,%rax\n"
	".globl swr_site\n"
	"swr_site:\n"
	EVERY_REG_STORE
	"9:	ret\n"
	".size swr_run, .-swr_run\n"
	".section .rodata\n"
	".balign 4\n"
	"swr_table:\n"
	"	.long swr_case0-swr_table, swr_case1-swr_table\n"
	".popsection\n");
void swr_run(long op, long *out);
extern const char swr_site[];

/* Every general register, %rsp and the status flags are as unprobed after
 * a jump-armed site between a switch's cases, lean and full. */
TEST(indirect_site_keeps_every_register_and_flag)
{
	long want[16], got[16];

	memset(want, 0, sizeof(want));
	swr_run(1, want);
	CHECK_EQ(want[0], 0x1111);
	CHECK((want[15] & 0x81) == 0x81); /* the premise: CF and SF set */
	for (int m = 0; m < 2; m++) {
		int id = connect_addr(swr_site, m ? DJP_GPR_ONLY : 0);
		CHECK(id >= 0);
		CHECK_EQ(*(const uint8_t *)swr_site, 0xe9);
		atomic_store(&hits, 0);
		for (int i = 0; i < 1000; i++) {
			memset(got, 0, sizeof(got));
			swr_run(1, got);
			for (int r = 0; r < 16; r++)
				CHECK_EQ(got[r], want[r]);
		}
		CHECK_EQ(atomic_load(&hits), 1000);
		CHECK_EQ(djp_disconnect(id), 0);
	}
}
