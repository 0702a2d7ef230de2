/* Instruction probes (kernel/points.c): djp_connect_at at function entries,
 * at every instruction of a hand-written function (each run out of line:
 * rip-relative, jcc, call, push/pop, ret), by address and by source line;
 * refusals that leave the text alone; threads running the probed code
 * while it is armed and disarmed; fork. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
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
static const int pt_glob_two_line = __LINE__ + 1; /* its declaration's line */
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
	/* pt_add(long a, long b): its parameters, from this file's DWARF */
	if (djp_hit_nargs(hit) != 2 || djp_hit_arg(hit, 0) != seen_rdi || djp_hit_arg(hit, 1) != seen_rsi)
		atomic_fetch_add(&bad_reg, 1);
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

static void function_entry(unsigned flags)
{
	uint8_t before[16];
	int id;

	reset();
	memcpy(before, (void *)pt_add, sizeof(before));
	id = djp_connect_at(OPTS(.func = "pt_add"), args, NULL, flags);
	CHECK(id >= 0);
	/* a jump over its first instructions, or the int3 asked for */
	CHECK_EQ(*(uint8_t *)pt_add, flags & DJP_FORCE_INT3 ? 0xcc : 0xe9);
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

TEST(points_function_entry)
{
	function_entry(0);		/* a jump, the full trampoline */
	function_entry(DJP_GPR_ONLY);	/* a jump, the lean one */
	function_entry(DJP_FORCE_INT3); /* int3, the instruction run out of line */
}

/*
 * Every instruction of pt_asm in turn, each run out of line by an int3 or
 * displaced into a jump's trampoline.  A jump covers whole instructions
 * up to 5 bytes or more, and never one the jae lands inside (30 is its
 * target, so 26 and 27 stay int3), nor the function's last byte.
 */
static const bool pt_asm_jump[] = { true, true, true, true, true, true, true, false, false, false };

static void every_instruction(unsigned flags)
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
		id = djp_connect_at(OPTS(.func = "pt_asm", .offset = off), count, NULL, flags);
		CHECK(id >= 0);
		if (*(uint8_t *)((uintptr_t)pt_asm + off) != (pt_asm_jump[k] && !(flags & DJP_FORCE_INT3) ? 0xe9 : 0xcc))
			djp_test_fail(__FILE__, __LINE__, "pt_asm+%u armed as %#x", off, *(uint8_t *)((uintptr_t)pt_asm + off));
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

TEST(points_every_instruction_runs_out_of_line)
{
	every_instruction(DJP_FORCE_INT3);
}

/* (A point inside an idle site's range leaves that site an int3 probe for
 * good, so each flavour starts from a fresh process.) */
TEST(points_every_instruction_displaced_into_a_jump)
{
	every_instruction(0);
}

TEST(points_every_instruction_displaced_into_a_lean_jump)
{
	every_instruction(DJP_GPR_ONLY);
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
	CHECK_EQ(*(uint8_t *)((uintptr_t)pt_asm + 11), 0xe9); /* still armed: add and cmp jumped over */
	pt_asm(1);
	CHECK_EQ(atomic_load(&hits), 201);
	CHECK_EQ(djp_disconnect(b), 0);
	CHECK_EQ(*(uint8_t *)((uintptr_t)pt_asm + 11), 0x48); /* add %rdi,%rax: REX.W */
	CHECK_EQ(atomic_load(&bad_reg), 0);
}

/* Connect `func`, call the three pt_glob_ functions once each (their
 * results exact), disconnect: want of them were hit. */
static void check_glob_hits(const char *func, long want)
{
	int id;

	reset();
	id = djp_connect_at(OPTS(.func = func), count, NULL, DJP_GPR_ONLY);
	CHECK(id >= 0);
	CHECK_EQ(pt_glob_one(1) + pt_glob_two(1) + pt_glob_three(1), 9);
	CHECK_EQ(atomic_load(&hits), want);
	CHECK_EQ(djp_disconnect(id), 0);
}

TEST(points_glob)
{
	check_glob_hits("pt_glob_*", 3);
}

/* stap's function("GLOB@FILE:LINE"): only the functions declared in FILE,
 * at LINE or with code around it; a qualifier that is no FILE:LINE is
 * refused, one that names no function's file matches nothing. */
TEST(points_source_qualifier)
{
	char spec[96];

	snprintf(spec, sizeof(spec), "pt_glob_*@test_engine_points.c:%d", pt_glob_two_line);
	check_glob_hits(spec, 1); /* pt_glob_two alone */
	/* a line inside its body: the function whose code spans it */
	snprintf(spec, sizeof(spec), "pt_glob_*@selftests/test_engine_points.c:%d-%d", pt_glob_two_line + 2,
		 pt_glob_two_line + 3);
	check_glob_hits(spec, 1);
	check_glob_hits("pt_glob_*@test_engine_*.c", 3);
	CHECK_EQ(djp_connect_at(OPTS(.func = "pt_glob_*@engine_points.c"), count, NULL, 0), -ENOENT);
	CHECK_EQ(djp_connect_at(OPTS(.func = "pt_glob_*@test_engine_points.c:12x"), count, NULL, 0), -EINVAL);
	CHECK_EQ(djp_connect_at(OPTS(.func = "pt_glob_*@test_engine_points.c:9-3"), count, NULL, 0), -EINVAL);
	CHECK_EQ(djp_connect_at(OPTS(.func = "@test_engine_points.c"), count, NULL, 0), -EINVAL);
	CHECK_EQ(*(uint8_t *)pt_glob_two, *(uint8_t *)pt_glob_one); /* the text is back */
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
	CHECK_EQ(*(uint8_t *)pt_add, 0xe9);
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

TEST_TIMEOUT(points_stress_arm_disarm_while_running, 300)
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
		/* disarmed once the runners have gone through it, not after a
		 * time a loaded machine may spend elsewhere */
		for (long h = atomic_load(&hits), tries = 0; atomic_load(&hits) < h + 2; tries++) {
			CHECK(tries < 100000000);
			sched_yield();
		}
		CHECK_EQ(djp_disconnect(round & 2 ? a : b), 0);
		CHECK_EQ(djp_disconnect(round & 2 ? b : a), 0);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(atomic_load(&wrong), 0);
	CHECK(atomic_load(&hits) >= 2 * 300);
	CHECK(memcmp(before_asm, (void *)pt_asm, sizeof(before_asm)) == 0);
	CHECK(memcmp(before_add, (void *)pt_add, sizeof(before_add)) == 0);
}

/*
 * pt_park(tgid, tid, sig) with %eax = the system call: a 2-byte nop, the
 * syscall, two nops, ret.  A jump at its entry would cover [0, 5): the
 * syscall's return address, 4, is inside.
 */
__asm__(".pushsection .text\n"
	".globl pt_park\n"
	".type pt_park,@function\n"
	"pt_park:\n"
	"	.byte 0x66, 0x90\n"
	"	syscall\n"
	"	nop\n"
	"	nop\n"
	"	ret\n"
	".size pt_park, .-pt_park\n"
	".popsection\n");
void pt_park(void);

static atomic_int parked, release;
static atomic_long park_calls;

static void spin_handler(int sig)
{
	(void)sig;
	if (atomic_load(&release))
		return;
	atomic_store(&parked, 1);
	while (!atomic_load(&release))
		usleep(100);
}

/* tgkill(self, SIGUSR1) from inside pt_park: its handler spins with the
 * interrupted %rip at pt_park + 4, inside the range. */
static void park_call(void)
{
	long tid = syscall(SYS_gettid);
	__asm__ volatile("mov $234, %%eax\n\tcall pt_park" ::"D"((long)getpid()), "S"(tid), "d"((long)SIGUSR1)
			 : "rax", "rcx", "r11", "memory");
	atomic_fetch_add(&park_calls, 1);
}

static void *parker(void *arg)
{
	(void)arg;
	park_call();
	while (!atomic_load(&stop))
		park_call();
	return NULL;
}

/* A thread whose signal handler waits with its interrupted %rip inside the
 * range a jump would cover: the jump waits for it, then the site stays an
 * int3 probe, and the thread, let go, returns into intact code. */
TEST_TIMEOUT(points_jump_kept_out_while_a_thread_is_inside, 60)
{
	struct sigaction sa = { .sa_handler = spin_handler };
	uint8_t before[8];
	pthread_t t;
	long calls, armed_at;
	int id;

	memcpy(before, (void *)pt_park, sizeof(before));
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&release, 1);
	park_call(); /* the handler returns at once: the premise runs */
	/* with nobody inside, the entry becomes a jump */
	id = djp_connect_at(OPTS(.func = "pt_park"), count, NULL, 0);
	CHECK(id >= 0);
	CHECK_EQ(*(uint8_t *)pt_park, 0xe9);
	CHECK_EQ(djp_disconnect(id), 0);
	CHECK(memcmp(before, (void *)pt_park, sizeof(before)) == 0);

	atomic_store(&release, 0);
	atomic_store(&stop, 0);
	CHECK_EQ(pthread_create(&t, NULL, parker, NULL), 0);
	while (!atomic_load(&parked))
		usleep(100);
	reset();
	armed_at = atomic_load(&park_calls); /* the parker's first is not over */
	id = djp_connect_at(OPTS(.func = "pt_park"), count, NULL, 0);
	CHECK(id >= 0);
	CHECK_EQ(*(uint8_t *)pt_park, 0xcc); /* kept out: an int3 probe */
	CHECK(memcmp((uint8_t *)pt_park + 1, before + 1, sizeof(before) - 1) == 0);
	atomic_store(&release, 1);
	calls = atomic_load(&park_calls);
	while (atomic_load(&park_calls) < calls + 100)
		usleep(100);
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	/* every call that entered pt_park after the arming hit the probe:
	 * all but the one already inside */
	CHECK_EQ(atomic_load(&hits), atomic_load(&park_calls) - armed_at - 1);
	CHECK_EQ(djp_disconnect(id), 0);
	CHECK(memcmp(before, (void *)pt_park, sizeof(before)) == 0);
}

/*
 * pt_block(fd, buf, n) with %eax = 0: read(2) inside the range.  A thread
 * blocked there is interrupted by the check's signal with its %rip on the
 * syscall (the read restarts): inside, so no jump.
 */
__asm__(".pushsection .text\n"
	".globl pt_block\n"
	".type pt_block,@function\n"
	"pt_block:\n"
	"	.byte 0x66, 0x90\n"
	"	syscall\n"
	"	nop\n"
	"	nop\n"
	"	ret\n"
	".size pt_block, .-pt_block\n"
	".popsection\n");
void pt_block(void);

static int block_fd;
static atomic_int block_tid;
static void *blocker(void *arg)
{
	char c;
	long r;
	(void)arg;
	atomic_store(&block_tid, (int)syscall(SYS_gettid));
	__asm__ volatile("xor %%eax, %%eax\n\tcall pt_block"
			 : "=a"(r)
			 : "D"((long)block_fd), "S"(&c), "d"(1L)
			 : "rcx", "r11", "memory");
	return (void *)r;
}

TEST_TIMEOUT(points_jump_kept_out_while_a_thread_blocks_inside, 60)
{
	char path[64], state = 0;
	int fds[2], id;
	pthread_t t;
	void *r;

	CHECK_EQ(pipe(fds), 0);
	block_fd = fds[0];
	CHECK_EQ(pthread_create(&t, NULL, blocker, NULL), 0);
	/* until the thread sleeps in its read */
	for (int i = 0; i < 10000 && state != 'S'; i++) {
		FILE *f;
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", atomic_load(&block_tid));
		usleep(100);
		if ((f = fopen(path, "r"))) {
			if (fscanf(f, "%*d %*s %c", &state) != 1)
				state = 0;
			fclose(f);
		}
	}
	CHECK_EQ(state, 'S');
	id = djp_connect_at(OPTS(.func = "pt_block"), count, NULL, 0);
	CHECK(id >= 0);
	CHECK_EQ(*(uint8_t *)pt_block, 0xcc);
	CHECK_EQ(write(fds[1], "x", 1), 1); /* the read, restarted, completes */
	pthread_join(t, &r);
	CHECK_EQ((long)r, 1);
	CHECK_EQ(djp_disconnect(id), 0);
	close(fds[0]);
	close(fds[1]);
}

/*
 * pt_flags(a, b): the status flags of a + b, read by pushfq right after
 * the add.  A jump at the pushfq covers pushfq, pop and the and: its
 * trampoline must give the flags back exactly (they are live there), or
 * the result changes.
 */
__asm__(".pushsection .text\n"
	".globl pt_flags\n"
	".type pt_flags,@function\n"
	"pt_flags:\n"
	"	mov %rdi,%rax\n"
	"	add %rsi,%rax\n"
	"	pushfq\n"
	"	pop %rax\n"
	"	and $0x8d5,%eax\n"
	"	ret\n"
	".size pt_flags, .-pt_flags\n"
	".popsection\n");
long pt_flags(long a, long b);

TEST(points_jump_keeps_live_flags)
{
	static const long pairs[][2] = { { 0x7fffffffffffffffL, 1 }, { -1, 1 }, { 0, 0 }, { 1, 2 }, { 0xf, 1 },
					 { -5, 3 }, { 0x4000000000000000L, 0x4000000000000000L }, { 3, 4 } };
	long want[8];
	int id;

	for (int i = 0; i < 8; i++)
		want[i] = pt_flags(pairs[i][0], pairs[i][1]);
	CHECK(want[0] != want[1] && want[1] != want[2]); /* the premise: flags differ */
	for (int mode = 0; mode < 2; mode++) {
		reset();
		id = djp_connect_at(OPTS(.func = "pt_flags", .offset = 6), count, NULL, mode ? DJP_GPR_ONLY : 0);
		CHECK(id >= 0);
		CHECK_EQ(*(uint8_t *)((uintptr_t)pt_flags + 6), 0xe9);
		for (int r = 0; r < 1000; r++)
			for (int i = 0; i < 8; i++)
				CHECK_EQ(pt_flags(pairs[i][0], pairs[i][1]), want[i]);
		CHECK_EQ(atomic_load(&hits), 8000);
		CHECK_EQ(djp_disconnect(id), 0);
	}
}

/* The engine's own paths call into libc (errno, syscall() for its sync and
 * its registration): probing those functions must neither recurse nor
 * stop the program, int3 or jump. */
TEST(points_on_the_engines_own_libc_functions)
{
	static const unsigned modes[] = { DJP_FORCE_INT3, DJP_GPR_ONLY, 0 };
	for (int m = 0; m < 3; m++) {
		int a, b;
		reset();
		a = djp_connect_at(OPTS(.object = "libc.so*", .func = "syscall"), count, NULL, modes[m]);
		b = djp_connect_at(OPTS(.object = "libc.so*", .func = "__errno_location"), count, NULL, modes[m]);
		CHECK(a >= 0 && b >= 0);
		for (int i = 0; i < 100; i++) {
			errno = 0;
			CHECK_EQ(syscall(SYS_getpid), getpid());
			CHECK_EQ(close(-1), -1);
			CHECK_EQ(errno, EBADF);
		}
		CHECK(atomic_load(&hits) >= 100); /* syscall() at least: errno's is const, called once a loop */
		CHECK_EQ(djp_disconnect(a), 0);
		CHECK_EQ(djp_disconnect(b), 0);
	}
}

/* An assembly label without a size: where its instructions end is not
 * known (the signal restorer is one), so it is refused. */
__asm__(".pushsection .text\n"
	".globl pt_label\n"
	".type pt_label,@function\n"
	"pt_label:\n"
	"	ret\n"
	".popsection\n");

TEST(points_refuse_a_function_without_a_size)
{
	CHECK_EQ(djp_connect_at(OPTS(.func = "pt_label"), count, NULL, 0), -ENOTSUP);
}

/*
 * long pt_hidden(long x): 0, after x turns of a loop whose head is 3 bytes
 * into the function (x > 0).  A symbol, pt_hidden_inner, starts at the
 * loop's jne's second byte: the object's branch map, which restarts its
 * decode at every function start, sees there `cli; ret` and not the jne
 * back into the entry's run, and the jne's decode, cut short at
 * pt_hidden_inner, fails.  The map knows the function whole only with no
 * such failure inside (arch/x86/branch_targets.c): otherwise its own
 * decode finds the jne, and the entry stays an int3.  A jump there would
 * land the loop in the middle of its jmp.
 */
__asm__(".pushsection .text\n"
	".globl pt_hidden\n"
	".type pt_hidden,@function\n"
	"pt_hidden:\n"
	"	mov %rdi,%rax\n"
	"1:	sub $1,%rax\n"
	"	.byte 0x75\n" /* jne 1b */
	".globl pt_hidden_inner\n"
	".type pt_hidden_inner,@function\n"
	"pt_hidden_inner:\n"
	"	.byte 0xfa\n"
	"	ret\n"
	".size pt_hidden_inner, .-pt_hidden_inner\n"
	".size pt_hidden, .-pt_hidden\n"
	".popsection\n");
long pt_hidden(long x);

TEST(points_branch_the_map_cannot_see_keeps_the_entry_an_int3)
{
	int id;
	CHECK_EQ(pt_hidden(7), 0);
	for (int mode = 0; mode < 2; mode++) {
		reset();
		id = djp_connect_at(OPTS(.func = "pt_hidden"), count, NULL, mode ? DJP_GPR_ONLY : 0);
		CHECK(id >= 0);
		CHECK_EQ(*(uint8_t *)pt_hidden, 0xcc);
		for (long i = 1; i <= 100; i++)
			CHECK_EQ(pt_hidden(i), 0);
		CHECK_EQ(atomic_load(&hits), 100);
		CHECK_EQ(djp_disconnect(id), 0);
	}
}

/* A point at pt_hidden_inner would put its int3 on the jne's displacement
 * (the symbol starts inside pt_hidden's instruction): refused, the text
 * left alone.  A glob over both probes pt_hidden and skips the other. */
TEST(points_inside_another_functions_instruction_are_refused)
{
	uint8_t before[10];
	int id;

	memcpy(before, (void *)pt_hidden, sizeof(before));
	for (int mode = 0; mode < 2; mode++)
		CHECK_EQ(djp_connect_at(OPTS(.func = "pt_hidden_inner"), count, NULL, mode ? DJP_FORCE_INT3 : 0), -EINVAL);
	CHECK(memcmp(before, (void *)pt_hidden, sizeof(before)) == 0);
	reset();
	id = djp_connect_at(OPTS(.func = "pt_hidden*"), count, NULL, 0);
	CHECK(id >= 0);
	CHECK_EQ(((uint8_t *)pt_hidden)[8], 0xfa);
	for (long i = 1; i <= 50; i++)
		CHECK_EQ(pt_hidden(i), 0);
	CHECK_EQ(atomic_load(&hits), 50);
	CHECK_EQ(djp_disconnect(id), 0);
	CHECK(memcmp(before, (void *)pt_hidden, sizeof(before)) == 0);
}

/*
 * long pt_outer(long x): x + 3, through a symbol that starts at one of its
 * instruction boundaries, pt_outer_mid: a point there is an instruction of
 * both, and is probed.
 */
__asm__(".pushsection .text\n"
	".globl pt_outer\n"
	".type pt_outer,@function\n"
	"pt_outer:\n"
	"	lea 1(%rdi),%rax\n"
	".globl pt_outer_mid\n"
	".type pt_outer_mid,@function\n"
	"pt_outer_mid:\n"
	"	add $1,%rax\n"
	"	add $1,%rax\n"
	"	ret\n"
	".size pt_outer_mid, .-pt_outer_mid\n"
	".size pt_outer, .-pt_outer\n"
	".popsection\n");
long pt_outer(long x);

TEST(points_at_a_symbol_on_another_functions_boundary_are_probed)
{
	uint8_t before[16];
	int id;

	memcpy(before, (void *)pt_outer, sizeof(before));
	for (int mode = 0; mode < 2; mode++) {
		reset();
		id = djp_connect_at(OPTS(.func = "pt_outer_mid"), count, NULL, mode ? DJP_FORCE_INT3 : 0);
		CHECK(id >= 0);
		for (long i = 0; i < 100; i++)
			CHECK_EQ(pt_outer(i), i + 3);
		CHECK_EQ(atomic_load(&hits), 100);
		CHECK_EQ(djp_disconnect(id), 0);
		CHECK(memcmp(before, (void *)pt_outer, sizeof(before)) == 0);
	}
}
