/* Instruction probes (kernel/points.c): djp_connect_at at function entries,
 * at every instruction of a hand-written function (each run out of line:
 * rip-relative, jcc, call, push/pop, ret), by address and by source line;
 * refusals that leave the text alone; threads running the probed code
 * while it is armed and disarmed; fork. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "harness.h"

/*
 * long pt_asm(long x): pt_var + x, plus pt_callee()'s 100 when x < 5.
 * Offsets: 0 endbr64, 4 mov rip-relative, 11 add, 14 cmp, 18 jae (rel8),
 * 20 push, 21 call rel32, 26 pop, 27 add, 30 ret (the jae's target).
 */
__asm__(".pushsection .text\n"
	".globl pt_asm\n"
	".type pt_asm,@function\n"
	"pt_asm:\n"
	"	endbr64\n"
	"	mov pt_var(%rip),%rax\n"
	"	add %rdi,%rax\n"
	"	cmp $5,%rdi\n"
	"	jae 1f\n"
	"	push %rax\n"
	"	call pt_callee\n"
	"pt_asm_after_call:\n"
	"	pop %rdx\n"
	"	add %rdx,%rax\n"
	"1:	ret\n"
	".size pt_asm, .-pt_asm\n"
	".popsection\n");
long pt_asm(long x);
extern const char pt_asm_after_call[];
static const unsigned pt_asm_offsets[] = { 0, 4, 11, 14, 18, 20, 21, 26, 27, 30 };

long pt_var = 1000;
void *pt_ret_seen;

__attribute__((noinline, used)) long pt_callee(void)
{
	pt_ret_seen = __builtin_return_address(0);
	return 100;
}

__attribute__((noinline)) long pt_add(long a, long b)
{
	__asm__ volatile("" ::: "memory");
	return a * 3 + b;
}

__attribute__((noinline)) long pt_glob_one(long a)
{
	__asm__ volatile("" ::: "memory");
	return a + 1;
}
__attribute__((noinline)) long pt_glob_two(long a)
{
	__asm__ volatile("" ::: "memory");
	return a + 2;
}
__attribute__((noinline)) long pt_glob_three(long a)
{
	__asm__ volatile("" ::: "memory");
	return a + 3;
}

static atomic_long hits;
static atomic_long bad_reg;
static uintptr_t want_rip;
static const char *want_name;

static void count(const struct djp_hit *hit, void *data)
{
	(void)data;
	atomic_fetch_add(&hits, 1);
	if (want_rip && djp_hit_reg(hit, 16) != want_rip)
		atomic_fetch_add(&bad_reg, 1);
	if (want_rip && djp_hit_site(hit) != want_rip)
		atomic_fetch_add(&bad_reg, 1);
	if (want_name && strcmp(djp_hit_name(hit), want_name))
		atomic_fetch_add(&bad_reg, 1);
}

static long seen_rdi, seen_rsi;
static void args(const struct djp_hit *hit, void *data)
{
	(void)data;
	atomic_fetch_add(&hits, 1);
	seen_rdi = (long)djp_hit_reg(hit, 5);
	seen_rsi = (long)djp_hit_reg(hit, 4);
	/* at the entry the return address is at the top of the stack */
	if (*(uintptr_t *)djp_hit_reg(hit, 7) == 0)
		atomic_fetch_add(&bad_reg, 1);
}

static void reset(void)
{
	atomic_store(&hits, 0);
	atomic_store(&bad_reg, 0);
	want_rip = 0;
	want_name = NULL;
}

#define OPTS(...) (&(struct djp_point_opts){ .sz = sizeof(struct djp_point_opts), __VA_ARGS__ })

TEST(points_function_entry)
{
	uint8_t before[16];
	int id;

	reset();
	memcpy(before, (void *)pt_add, sizeof(before));
	id = djp_connect_at(OPTS(.func = "pt_add"), args, NULL, 0);
	CHECK(id >= 0);
	CHECK_EQ(*(uint8_t *)pt_add, 0xcc);
	for (long i = 0; i < 20000; i++)
		CHECK_EQ(pt_add(i, 7), i * 3 + 7);
	CHECK_EQ(atomic_load(&hits), 20000);
	CHECK_EQ(seen_rdi, 19999);
	CHECK_EQ(seen_rsi, 7);
	CHECK_EQ(atomic_load(&bad_reg), 0);
	CHECK_EQ(djp_disconnect(id), 0);
	CHECK(memcmp(before, (void *)pt_add, sizeof(before)) == 0);
	pt_add(1, 1);
	CHECK_EQ(atomic_load(&hits), 20000);
}

/* Every instruction of pt_asm in turn, each run out of line. */
TEST(points_every_instruction_runs_out_of_line)
{
	long want[10];
	uint8_t before[32];
	char name[64];

	memcpy(before, (void *)pt_asm, sizeof(before));
	for (long x = 0; x < 10; x++)
		want[x] = pt_asm(x);
	CHECK_EQ(want[0], 1100); /* the test's own premise: the call ran */
	CHECK(pt_ret_seen == (void *)pt_asm_after_call);
	for (size_t k = 0; k < sizeof(pt_asm_offsets) / sizeof(pt_asm_offsets[0]); k++) {
		unsigned off = pt_asm_offsets[k];
		long calls = 0;
		int id;

		reset();
		want_rip = (uintptr_t)pt_asm + off;
		if (off)
			snprintf(name, sizeof(name), "pt_asm+%#x", off);
		else
			snprintf(name, sizeof(name), "pt_asm");
		want_name = name;
		id = djp_connect_at(OPTS(.func = "pt_asm", .offset = off), count, NULL, 0);
		CHECK(id >= 0);
		for (int round = 0; round < 1000; round++)
			for (long x = 0; x < 10; x++) {
				pt_ret_seen = NULL;
				CHECK_EQ(pt_asm(x), want[x]);
				if (x < 5) /* the callee returns into the original code */
					CHECK(pt_ret_seen == (void *)pt_asm_after_call);
				calls++;
			}
		/* the instructions after the jae run for x < 5 only */
		CHECK_EQ(atomic_load(&hits), off >= 20 && off < 30 ? calls / 2 : calls);
		CHECK_EQ(atomic_load(&bad_reg), 0);
		CHECK_EQ(djp_disconnect(id), 0);
		CHECK(memcmp(before, (void *)pt_asm, sizeof(before)) == 0);
	}
}

TEST(points_by_address_and_shared_site)
{
	int a, b;

	reset();
	want_rip = (uintptr_t)pt_asm + 11;
	a = djp_connect_at(OPTS(.addr = (uintptr_t)pt_asm + 11), count, NULL, 0);
	CHECK(a >= 0);
	b = djp_connect_at(OPTS(.func = "pt_asm", .offset = 11), count, NULL, 0);
	CHECK(b >= 0);
	for (long x = 0; x < 100; x++)
		pt_asm(x);
	CHECK_EQ(atomic_load(&hits), 200); /* one site, two handlers */
	CHECK_EQ(djp_disconnect(a), 0);
	CHECK_EQ(*(uint8_t *)((uintptr_t)pt_asm + 11), 0xcc);
	pt_asm(1);
	CHECK_EQ(atomic_load(&hits), 201);
	CHECK_EQ(djp_disconnect(b), 0);
	CHECK_EQ(*(uint8_t *)((uintptr_t)pt_asm + 11), 0x48); /* add %rdi,%rax: REX.W */
	CHECK_EQ(atomic_load(&bad_reg), 0);
}

TEST(points_glob)
{
	int id;

	reset();
	id = djp_connect_at(OPTS(.func = "pt_glob_*"), count, NULL, DJP_GPR_ONLY);
	CHECK(id >= 0);
	CHECK_EQ(pt_glob_one(1) + pt_glob_two(1) + pt_glob_three(1), 9);
	CHECK_EQ(atomic_load(&hits), 3);
	CHECK_EQ(djp_disconnect(id), 0);
}

/* A line of pt_line_target's body, by its file and line. */
static int pt_line_no;
__attribute__((noinline)) long pt_line_target(long x)
{
	__asm__ volatile("" ::: "memory");
	pt_line_no = __LINE__; long y = x * 5 + pt_var;
	__asm__ volatile("" : "+r"(y)::"memory");
	return y;
}

TEST(points_source_line)
{
	char spec[64];
	int id;

	pt_line_target(0); /* sets pt_line_no */
	snprintf(spec, sizeof(spec), "test_engine_points.c:%d", pt_line_no);
	reset();
	id = djp_connect_at(OPTS(.line = spec), count, NULL, 0);
	CHECK(id >= 0);
	for (long x = 0; x < 50; x++)
		CHECK_EQ(pt_line_target(x), x * 5 + 1000);
	CHECK(atomic_load(&hits) >= 50);
	CHECK_EQ(atomic_load(&hits) % 50, 0);
	CHECK_EQ(djp_disconnect(id), 0);
	/* a line with no code */
	snprintf(spec, sizeof(spec), "test_engine_points.c:%d", 1);
	CHECK_EQ(djp_connect_at(OPTS(.line = spec), count, NULL, 0), -ENOENT);
}

TEST(points_refused_leave_the_text_alone)
{
	uint8_t before[32];
	struct {
		struct djp_point_opts o;
		uint64_t later; /* a field of a later version, set */
	} big = { { .sz = sizeof(big), .func = "pt_asm" }, 1 };

	memcpy(before, (void *)pt_asm, sizeof(before));
	/* not an instruction boundary (inside the rip-relative mov) */
	CHECK_EQ(djp_connect_at(OPTS(.func = "pt_asm", .offset = 5), count, NULL, 0), -EINVAL);
	/* past the function's end */
	CHECK_EQ(djp_connect_at(OPTS(.func = "pt_asm", .offset = 31), count, NULL, 0), -EINVAL);
	CHECK_EQ(djp_connect_at(OPTS(.func = "pt_no_such_function"), count, NULL, 0), -ENOENT);
	CHECK_EQ(djp_connect_at(OPTS(.func = "pt_asm", .addr = (uintptr_t)pt_asm), count, NULL, 0), -EINVAL);
	CHECK_EQ(djp_connect_at(OPTS(.addr = (uintptr_t)pt_asm, .offset = 4), count, NULL, 0), -EINVAL);
	CHECK_EQ(djp_connect_at(&big.o, count, NULL, 0), -EINVAL);
	CHECK_EQ(djp_connect_at(NULL, count, NULL, 0), -EINVAL);
	CHECK_EQ(djp_connect_at(OPTS(.func = "pt_asm"), NULL, NULL, 0), -EINVAL);
	CHECK(memcmp(before, (void *)pt_asm, sizeof(before)) == 0);
}

/* Somebody else's breakpoint at a function: -EBUSY, and it stays. */
TEST(points_foreign_int3_is_busy)
{
	uintptr_t page = (uintptr_t)pt_glob_two & ~(uintptr_t)4095;
	uint8_t was = *(uint8_t *)pt_glob_two;

	CHECK_EQ(mprotect((void *)page, 8192, PROT_READ | PROT_WRITE | PROT_EXEC), 0);
	*(volatile uint8_t *)pt_glob_two = 0xcc;
	CHECK_EQ(djp_connect_at(OPTS(.func = "pt_glob_two"), count, NULL, 0), -EBUSY);
	CHECK_EQ(*(uint8_t *)pt_glob_two, 0xcc);
	*(volatile uint8_t *)pt_glob_two = was;
	CHECK_EQ(mprotect((void *)page, 8192, PROT_READ | PROT_EXEC), 0);
}

TEST(points_fork_child_runs_the_original)
{
	uint8_t before[16];
	pid_t pid;
	int st, id;

	memcpy(before, (void *)pt_add, sizeof(before));
	id = djp_connect_at(OPTS(.func = "pt_add"), count, NULL, 0);
	CHECK(id >= 0);
	pid = fork();
	if (pid == 0)
		_exit(memcmp(before, (void *)pt_add, sizeof(before)) || pt_add(2, 3) != 9 ? 1 : 0);
	CHECK(pid > 0);
	CHECK_EQ(waitpid(pid, &st, 0), pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(*(uint8_t *)pt_add, 0xcc);
	CHECK_EQ(djp_disconnect(id), 0);
}

/* More threads than cores run the probed code while it is armed and
 * disarmed, entry and inner points at once: every result stays right. */
static atomic_int stop;
static atomic_long wrong, calls;

static void *runner(void *arg)
{
	long seed = (long)(intptr_t)arg, n = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		long x = (seed + n++) % 10;
		if (pt_asm(x) != 1000 + x + (x < 5 ? 100 : 0) || pt_add(x, seed) != x * 3 + seed)
			atomic_fetch_add(&wrong, 1);
	}
	atomic_fetch_add(&calls, n);
	return NULL;
}

TEST_TIMEOUT(points_stress_arm_disarm_while_running, 120)
{
	pthread_t t[6];
	uint8_t before_asm[32], before_add[16];

	memcpy(before_asm, (void *)pt_asm, sizeof(before_asm));
	memcpy(before_add, (void *)pt_add, sizeof(before_add));
	reset();
	for (long i = 0; i < 6; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, runner, (void *)(intptr_t)i), 0);
	for (int round = 0; round < 300; round++) {
		unsigned off = pt_asm_offsets[round % 10];
		int a = djp_connect_at(OPTS(.func = "pt_asm", .offset = off), count, NULL, round & 1 ? DJP_GPR_ONLY : 0);
		int b = djp_connect_at(OPTS(.func = "pt_add"), count, NULL, 0);
		CHECK(a >= 0 && b >= 0);
		usleep(200);
		CHECK_EQ(djp_disconnect(round & 2 ? a : b), 0);
		CHECK_EQ(djp_disconnect(round & 2 ? b : a), 0);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(atomic_load(&wrong), 0);
	CHECK(atomic_load(&hits) > 0);
	CHECK(memcmp(before_asm, (void *)pt_asm, sizeof(before_asm)) == 0);
	CHECK(memcmp(before_add, (void *)pt_add, sizeof(before_add)) == 0);
}
