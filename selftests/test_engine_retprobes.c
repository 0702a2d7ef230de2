/* Return probes (kernel/retprobes.c): the handlers run once per return,
 * with the return value, after jump and int3 entries; the program's
 * return values (integer, double, long double) and control flow are
 * untouched; recursion 10,000 deep; longjmp across probed frames;
 * pthread_exit and pthread_cancel unwinding through them; threads that
 * exit inside them; threads running them while return probes come and go;
 * and the text as it was after the last disconnect. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "harness.h"

/* The functions that leave by longjmp or pthread_exit at the bottom of
 * their recursion look endless to the compiler. */
#pragma GCC diagnostic ignored "-Winfinite-recursion"

#define OPTS(...) (&(struct djp_point_opts){ .sz = sizeof(struct djp_point_opts), __VA_ARGS__ })

__attribute__((noinline)) long rp_add(long a, long b)
{
	__asm__ volatile("" ::: "memory");
	return a * 3 + b;
}

/* Recursion the compiler cannot turn into a loop. */
__attribute__((noinline)) long rp_rec(long n)
{
	long r;
	__asm__ volatile("" ::: "memory");
	if (!n)
		return 0;
	r = rp_rec(n - 1);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

__attribute__((noinline)) double rp_double(double x)
{
	__asm__ volatile("" ::: "memory");
	return x * 1.5 + 0.25;
}

__attribute__((noinline)) long double rp_ldouble(long double x)
{
	__asm__ volatile("" ::: "memory");
	return x * 2.5L + 0.125L;
}

static atomic_long rets, bad;
static long last_ret;
static const char *want_name;

static void on_return(const struct djp_hit *hit, void *data)
{
	unsigned n = djp_hit_nargs(hit);
	(void)data;
	atomic_fetch_add(&rets, 1);
	if (!n)
		atomic_fetch_add(&bad, 1);
	else
		last_ret = djp_hit_arg(hit, n - 1);
	if (want_name && strcmp(djp_hit_name(hit), want_name))
		atomic_fetch_add(&bad, 1);
}

/* A handler that uses the vector and x87 registers a return value may be
 * in, as any C may. */
static void on_return_fp(const struct djp_hit *hit, void *data)
{
	char buf[64];
	volatile long double ld = 3.0L;
	(void)data;
	(void)hit;
	snprintf(buf, sizeof(buf), "%f %Lf", sqrt((double)atomic_load(&rets) + 2.0), ld * ld);
	atomic_fetch_add(&rets, 1);
}

static void reset(const char *name)
{
	atomic_store(&rets, 0);
	atomic_store(&bad, 0);
	last_ret = 0;
	want_name = name;
}

static void returns_of_add(unsigned flags)
{
	uint8_t before[16];
	int id;

	reset("rp_add%return");
	memcpy(before, (void *)rp_add, sizeof(before));
	id = djp_connect_at(OPTS(.func = "rp_add", .retprobe = true), on_return, NULL, flags);
	CHECK(id >= 0);
	CHECK_EQ(*(uint8_t *)rp_add, flags & DJP_FORCE_INT3 ? 0xcc : 0xe9);
	for (long i = 0; i < 20000; i++) {
		CHECK_EQ(rp_add(i, 7), i * 3 + 7);
		CHECK_EQ(last_ret, i * 3 + 7);
	}
	CHECK_EQ(atomic_load(&rets), 20000);
	CHECK_EQ(atomic_load(&bad), 0);
	CHECK_EQ(djp_disconnect(id), 0);
	CHECK(memcmp(before, (void *)rp_add, sizeof(before)) == 0);
	rp_add(1, 1);
	CHECK_EQ(atomic_load(&rets), 20000);
}

TEST(retprobe_counts_every_return_with_its_value)
{
	returns_of_add(0);
	returns_of_add(DJP_GPR_ONLY);
	returns_of_add(DJP_FORCE_INT3);
}

/* An entry probe and a return probe of one function share its entry. */
static atomic_long entries;
static void on_entry(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add(&entries, 1);
}

TEST(retprobe_and_entry_probe_of_one_function)
{
	int a, b, c;
	reset(NULL);
	atomic_store(&entries, 0);
	a = djp_connect_at(OPTS(.func = "rp_add"), on_entry, NULL, 0);
	b = djp_connect_at(OPTS(.func = "rp_add", .retprobe = true), on_return, NULL, 0);
	c = djp_connect_at(OPTS(.func = "rp_add", .retprobe = true), on_return, NULL, 0);
	CHECK(a >= 0 && b >= 0 && c >= 0);
	for (long i = 0; i < 1000; i++)
		CHECK_EQ(rp_add(i, 1), i * 3 + 1);
	CHECK_EQ(atomic_load(&entries), 1000);
	CHECK_EQ(atomic_load(&rets), 2000); /* two probes, each once a return */
	CHECK_EQ(djp_disconnect(b), 0);
	for (long i = 0; i < 1000; i++)
		rp_add(i, 1);
	CHECK_EQ(atomic_load(&rets), 3000);
	CHECK_EQ(djp_disconnect(c), 0);
	rp_add(1, 1);
	CHECK_EQ(atomic_load(&rets), 3000);
	CHECK_EQ(atomic_load(&entries), 2001);
	CHECK_EQ(djp_disconnect(a), 0);
}

TEST(retprobe_recursion_ten_thousand_deep)
{
	int id;
	reset("rp_rec%return");
	id = djp_connect_at(OPTS(.func = "rp_rec", .retprobe = true), on_return, NULL, 0);
	CHECK(id >= 0);
	CHECK_EQ(rp_rec(10000), 10000);
	CHECK_EQ(atomic_load(&rets), 10001);
	CHECK_EQ(last_ret, 10000); /* the outermost returns last */
	CHECK_EQ(rp_rec(10), 10);
	CHECK_EQ(atomic_load(&rets), 10012);
	CHECK_EQ(atomic_load(&bad), 0);
	CHECK_EQ(djp_disconnect(id), 0);
}

TEST(retprobe_keeps_floating_point_return_values)
{
	int a, b;
	reset(NULL);
	a = djp_connect_at(OPTS(.func = "rp_double", .retprobe = true), on_return_fp, NULL, 0);
	b = djp_connect_at(OPTS(.func = "rp_ldouble", .retprobe = true), on_return_fp, NULL, DJP_FORCE_INT3);
	CHECK(a >= 0 && b >= 0);
	for (int i = 0; i < 1000; i++) {
		CHECK(rp_double(i) == i * 1.5 + 0.25);
		CHECK(rp_ldouble(i) == i * 2.5L + 0.125L);
	}
	CHECK_EQ(atomic_load(&rets), 2000);
	CHECK_EQ(djp_disconnect(a), 0);
	CHECK_EQ(djp_disconnect(b), 0);
}

/* longjmp out of probed frames: their returns never come, and the frames
 * after them return to the right place, counted. */
static jmp_buf jb;
__attribute__((noinline)) long rp_jump_down(long n)
{
	__asm__ volatile("" ::: "memory");
	long r;
	if (!n)
		longjmp(jb, 1);
	r = rp_jump_down(n - 1);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

TEST(retprobe_longjmp_across_probed_frames)
{
	int id;
	reset("rp_jump_down%return");
	id = djp_connect_at(OPTS(.func = "rp_jump_down", .retprobe = true), on_return, NULL, 0);
	CHECK(id >= 0);
	/* more skipped frames than the stack of pending returns holds: the
	 * stale ones make room */
	for (int round = 0; round < 400; round++) {
		volatile int jumped = 0;
		if (!setjmp(jb))
			rp_jump_down(50);
		else
			jumped = 1;
		CHECK(jumped);
		CHECK_EQ(rp_rec(3), 3); /* unprobed, between */
	}
	CHECK_EQ(atomic_load(&rets), 0);
	/* the same function returning normally now: depth 5 from a stack
	 * full of stale entries */
	CHECK_EQ(djp_disconnect(id), 0);
	id = djp_connect_at(OPTS(.func = "rp_rec", .retprobe = true), on_return, NULL, 0);
	want_name = "rp_rec%return";
	CHECK(id >= 0);
	CHECK_EQ(rp_rec(5), 5);
	CHECK_EQ(atomic_load(&rets), 6);
	CHECK_EQ(atomic_load(&bad), 0);
	CHECK_EQ(djp_disconnect(id), 0);
}

/* pthread_exit and pthread_cancel unwind through probed frames with
 * libgcc's unwinder, which must see the real return addresses. */
static atomic_int in_cancel_point;
__attribute__((noinline)) long rp_exit_inside(long n)
{
	__asm__ volatile("" ::: "memory");
	long r;
	if (!n)
		pthread_exit((void *)7);
	r = rp_exit_inside(n - 1);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

__attribute__((noinline)) long rp_cancel_inside(long n)
{
	__asm__ volatile("" ::: "memory");
	if (!n) {
		atomic_store(&in_cancel_point, 1);
		for (;;)
			pause(); /* a cancellation point */
	}
	long r = rp_cancel_inside(n - 1);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

static void *exit_thread(void *arg)
{
	(void)arg;
	rp_exit_inside(20);
	return NULL;
}

static void *cancel_thread(void *arg)
{
	(void)arg;
	rp_cancel_inside(20);
	return NULL;
}

TEST_TIMEOUT(retprobe_thread_exit_and_cancel_through_probed_frames, 60)
{
	int a, b;
	reset(NULL);
	a = djp_connect_at(OPTS(.func = "rp_exit_inside", .retprobe = true), on_return, NULL, 0);
	b = djp_connect_at(OPTS(.func = "rp_cancel_inside", .retprobe = true), on_return, NULL, DJP_FORCE_INT3);
	CHECK(a >= 0 && b >= 0);
	for (int i = 0; i < 20; i++) {
		pthread_t t;
		void *rv;
		CHECK_EQ(pthread_create(&t, NULL, exit_thread, NULL), 0);
		CHECK_EQ(pthread_join(t, &rv), 0);
		CHECK(rv == (void *)7);
		atomic_store(&in_cancel_point, 0);
		CHECK_EQ(pthread_create(&t, NULL, cancel_thread, NULL), 0);
		while (!atomic_load(&in_cancel_point))
			usleep(100);
		CHECK_EQ(pthread_cancel(t), 0);
		CHECK_EQ(pthread_join(t, &rv), 0);
		CHECK(rv == PTHREAD_CANCELED);
	}
	CHECK_EQ(atomic_load(&rets), 0); /* no frame returned */
	CHECK_EQ(djp_disconnect(a), 0);
	CHECK_EQ(djp_disconnect(b), 0);
}

/* Threads that run probed functions (and end inside them) while return
 * probes are connected and disconnected, more threads than cores. */
static atomic_bool stop;
static atomic_long wrong;

static void *runner(void *arg)
{
	long k = (long)(intptr_t)arg;
	while (!atomic_load(&stop)) {
		if (rp_add(k, 5) != k * 3 + 5 || rp_rec(k % 40) != k % 40)
			atomic_fetch_add(&wrong, 1);
		k++;
	}
	return NULL;
}

static void on_return_quiet(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add(&rets, 1);
}

TEST_TIMEOUT(retprobe_stress_connect_disconnect_while_running, 300)
{
	enum { NT = 8 };
	pthread_t t[NT];
	uint8_t add_before[16], rec_before[16];
	reset(NULL);
	atomic_store(&stop, false);
	atomic_store(&wrong, 0);
	memcpy(add_before, (void *)rp_add, sizeof(add_before));
	memcpy(rec_before, (void *)rp_rec, sizeof(rec_before));
	for (long i = 0; i < NT; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, runner, (void *)(intptr_t)(i * 1000)), 0);
	for (int round = 0; round < 300; round++) {
		unsigned fl = round % 3 == 0 ? DJP_FORCE_INT3 : round % 3 == 1 ? DJP_GPR_ONLY : 0;
		int a = djp_connect_at(OPTS(.func = "rp_add", .retprobe = true), on_return_quiet, NULL, fl);
		int b = djp_connect_at(OPTS(.func = "rp_rec", .retprobe = true), on_return_quiet, NULL, fl);
		CHECK(a >= 0 && b >= 0);
		usleep(1000);
		CHECK_EQ(djp_disconnect(a), 0);
		CHECK_EQ(djp_disconnect(b), 0);
	}
	atomic_store(&stop, true);
	for (int i = 0; i < NT; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
	CHECK_EQ(atomic_load(&wrong), 0);
	CHECK(atomic_load(&rets) > 0);
	CHECK(memcmp(add_before, (void *)rp_add, sizeof(add_before)) == 0);
	CHECK(memcmp(rec_before, (void *)rp_rec, sizeof(rec_before)) == 0);
}

TEST(retprobe_refusals)
{
	/* an offset with a return probe, or a line: not a function's return */
	CHECK_EQ(djp_connect_at(OPTS(.func = "rp_add", .offset = 4, .retprobe = true), on_return, NULL, 0), -EINVAL);
	CHECK_EQ(djp_connect_at(OPTS(.line = "x.c:1", .retprobe = true), on_return, NULL, 0), -EINVAL);
	CHECK_EQ(djp_connect_at(OPTS(.func = "rp_no_such_function", .retprobe = true), on_return, NULL, 0), -ENOENT);
}
