/*
 * Handlers left by a jump.  A handler that siglongjmp's out, or a signal
 * handler that interrupted one and jumps back to the application, never
 * ends its read-side section.  Before the engine recognised such sections
 * (kernel/rcu.c), every later hit of that thread was a miss, connect and
 * disconnect on it returned -EDEADLK for good, and djp_disconnect in any
 * other thread waited forever.  And the other side: a live handler, however
 * slow, is never taken for one left by a jump.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "harness.h"

static sigjmp_buf env;
static atomic_int handled;

__attribute__((noinline)) static void jump_site(int i)
{
	MARK(eng_longjmp_site, "i=%d", i);
	__asm__ volatile("" ::: "memory");
}

/* A call chain deeper than jump_site's, which overwrites the stack where
 * an abandoned section's frame was. */
__attribute__((noinline)) static void deeper(int n)
{
	volatile char pad[512];
	pad[0] = (char)n;
	if (n > 0)
		deeper(n - 1);
	jump_site(pad[0]);
}

static void jump_out(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add(&handled, 1);
	siglongjmp(env, 1);
}

static void on_usr1(int sig)
{
	(void)sig;
	siglongjmp(env, 1);
}

/* Leaves through a signal handler that interrupted it. */
static void raise_and_jump(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add(&handled, 1);
	pthread_kill(pthread_self(), SIGUSR1);
}

/* Hit the site `rounds` times, each time at a different depth, every
 * handler leaving by a jump; returns how many ran. */
static int hit_and_jump(int rounds)
{
	atomic_store(&handled, 0);
	for (volatile int i = 0; i < rounds; i++)
		if (!sigsetjmp(env, 1))
			deeper(i % 3);
	return atomic_load(&handled);
}

static void check_flavour(unsigned flags, djp_handler_fn fn)
{
	int id = djp_connect("eng_longjmp_*", fn, NULL, flags);
	CHECK(id >= 0);
	/* every hit after a jump runs its handler again */
	CHECK_EQ(hit_and_jump(6), 6);
	/* and the thread may connect and disconnect */
	int id2 = djp_connect("eng_longjmp_*", jump_out, NULL, flags);
	CHECK(id2 >= 0);
	CHECK_EQ(djp_disconnect(id2), 0);
	CHECK_EQ(djp_disconnect(id), 0);
}

TEST(handler_left_by_siglongjmp_runs_again_at_next_hit)
{
	check_flavour(0, jump_out);
	check_flavour(DJP_GPR_ONLY, jump_out); /* siglongjmp touches no vector state */
	check_flavour(DJP_FORCE_INT3, jump_out);
}

TEST(handler_left_through_a_signal_handler_runs_again)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
	check_flavour(0, raise_and_jump);
	check_flavour(DJP_GPR_ONLY, raise_and_jump);
	check_flavour(DJP_FORCE_INT3, raise_and_jump);
}

/* The jumping thread then blocks, never to hit again: another thread's
 * disconnect must still return (the grace period asks the thread), and the
 * blocked read must not see EINTR. */
static int pipefd[2];
static atomic_int reader_state; /* 1: jumped and about to block; 2: read returned */
static ssize_t read_result;
static int read_errno;

static atomic_int reader_tid;

/* Whether thread tid is in read(2) now (/proc/self/task/TID/syscall). */
static bool in_read(pid_t tid)
{
	char path[64];
	long nr = -2;
	FILE *f;
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	if (!(f = fopen(path, "r")))
		return false;
	if (fscanf(f, "%ld", &nr) != 1)
		nr = -2;
	fclose(f);
	return nr == SYS_read;
}

static void *jump_then_block(void *arg)
{
	char c;
	(void)arg;
	atomic_store(&reader_tid, (int)syscall(SYS_gettid));
	if (!sigsetjmp(env, 1))
		jump_site(1);
	atomic_store(&reader_state, 1);
	read_result = read(pipefd[0], &c, 1);
	read_errno = errno;
	atomic_store(&reader_state, 2);
	return NULL;
}

TEST_TIMEOUT(disconnect_elsewhere_after_a_jump_returns, 60)
{
	pthread_t t;
	int id = djp_connect("eng_longjmp_*", jump_out, NULL, 0);
	CHECK(id >= 0);
	CHECK_EQ(pipe(pipefd), 0);
	atomic_store(&handled, 0);
	CHECK_EQ(pthread_create(&t, NULL, jump_then_block, NULL), 0);
	while (atomic_load(&reader_state) != 1)
		usleep(1000);
	/* blocked in its read, as the kernel says, not after a time */
	for (int tries = 0; !in_read(atomic_load(&reader_tid)); tries++) {
		CHECK(tries < 20000);
		usleep(500);
	}
	CHECK_EQ(atomic_load(&handled), 1);
	CHECK_EQ(djp_disconnect(id), 0); /* hung for good before */
	CHECK_EQ(atomic_load(&reader_state), 1);
	CHECK_EQ(write(pipefd[1], "x", 1), 1);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK_EQ(read_result, 1); /* not EINTR */
	(void)read_errno;
}

/* A live handler that takes long, on a thread that has an alternate
 * signal stack: disconnect waits for it to return. */
static atomic_int slow_done;

static void slow(const struct djp_hit *hit, void *data)
{
	struct timespec end;
	(void)hit;
	(void)data;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_nsec += 300 * 1000000L;
	if (end.tv_nsec >= 1000000000L)
		end.tv_sec++, end.tv_nsec -= 1000000000L;
	atomic_store(&slow_done, 1);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL) == EINTR)
		;
	atomic_store(&slow_done, 2);
}

static void *hit_slowly(void *arg)
{
	static char altstack[64 * 1024];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	(void)arg;
	sigaltstack(&ss, NULL);
	jump_site(2);
	return NULL;
}

TEST_TIMEOUT(live_slow_handler_is_waited_for, 60)
{
	for (int round = 0; round < 3; round++) {
		pthread_t t;
		int id = djp_connect("eng_longjmp_*", slow, NULL, round == 2 ? DJP_FORCE_INT3 : 0);
		CHECK(id >= 0);
		atomic_store(&slow_done, 0);
		CHECK_EQ(pthread_create(&t, NULL, hit_slowly, NULL), 0);
		while (atomic_load(&slow_done) != 1)
			usleep(100);
		CHECK_EQ(djp_disconnect(id), 0);
		/* returned only once the handler had */
		if (atomic_load(&slow_done) != 2)
			djp_test_fail(__FILE__, __LINE__, "round %d: disconnect returned while the handler ran", round);
		CHECK_EQ(atomic_load(&slow_done), 2);
		CHECK_EQ(pthread_join(t, NULL), 0);
	}
}
