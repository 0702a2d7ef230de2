/*
 * A function or line probe that reads no argument (DJP_NO_ARGS) makes its
 * sites without reading their functions' parameters from the DWARF; a
 * probe that reads them and comes to the same site later has them read
 * then, while the first probe's hits go on (kernel/points.c).  Each test
 * fails without one part of that: the arguments read for the late probe;
 * the trampolines made before them keeping the registers those arguments
 * are in (kernel/arm.c); and the prefetching trampoline made before them,
 * which loads no argument, never serving a fast entry that wants some
 * (kernel/dispatch.c).  Threads call the functions all along, more of
 * them than the machine has cores.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "djprobe/djprobe.h"
#include "harness.h"
#include "kernel/engine.h"
#include "kernel/probes.h"

#define LA_THREADS 4
#define LA_FAR 1000 /* la_pair's b is a + LA_FAR in every call here */

__attribute__((noinline)) long la_pair(long a, long b)
{
	__asm__ volatile("" ::: "memory");
	return a * 7 + b;
}

__attribute__((noipa)) long la_other(long x)
{
	__asm__ volatile("" ::: "memory");
	return x ^ 0x55;
}

/* x lives across the call, in a callee-saved register, where the line
 * below reads it (the test checks that premise) */
static const int la_keep_line = __LINE__ + 4;
__attribute__((noinline)) long la_keep(long x)
{
	long y = la_other(x);
	return x * 5 + y;
}

static atomic_long quiet_hits, quiet_nargs, late_hits, late_bad, fast_hits, fast_bad;
static atomic_bool stop;

#define OPTS(...) (&(struct djp_point_opts){ .sz = sizeof(struct djp_point_opts), __VA_ARGS__ })

static void reset(void)
{
	atomic_store(&quiet_hits, 0);
	atomic_store(&quiet_nargs, 0);
	atomic_store(&late_hits, 0);
	atomic_store(&late_bad, 0);
	atomic_store(&fast_hits, 0);
	atomic_store(&fast_bad, 0);
	atomic_store(&stop, false);
}

/* The probe that reads nothing: counts, and what nargs said. */
static void quiet(const struct djp_hit *hit, void *data)
{
	(void)data;
	atomic_fetch_add(&quiet_hits, 1);
	atomic_fetch_add(&quiet_nargs, djp_hit_nargs(hit));
}

/* la_pair's probe that reads its two parameters. */
static void pair_args(const struct djp_hit *hit, void *data)
{
	(void)data;
	atomic_fetch_add(&late_hits, 1);
	if (djp_hit_nargs(hit) != 2 || djp_hit_arg(hit, 1) != djp_hit_arg(hit, 0) + LA_FAR ||
	    djp_hit_arg(hit, 0) != (int64_t)djp_hit_reg(hit, 5))
		atomic_fetch_add(&late_bad, 1);
}

static void *pair_caller(void *arg)
{
	long sum = 0;
	(void)arg;
	for (long i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++)
		sum += la_pair(i, i + LA_FAR);
	return (void *)sum;
}

static void callers_start(pthread_t *th, void *(*fn)(void *))
{
	atomic_store(&stop, false);
	for (int i = 0; i < LA_THREADS; i++)
		CHECK_EQ(pthread_create(&th[i], NULL, fn, NULL), 0);
}

static void callers_stop(pthread_t *th)
{
	atomic_store(&stop, true);
	for (int i = 0; i < LA_THREADS; i++)
		CHECK_EQ(pthread_join(th[i], NULL), 0);
}

/* Hits of `counter` keep coming while the callers run: wait for n more. */
static void wait_hits(atomic_long *counter, long n)
{
	long want = atomic_load(counter) + n;
	for (int i = 0; i < 20000 && atomic_load(counter) < want; i++)
		usleep(100);
	CHECK(atomic_load(counter) >= want);
}

TEST_TIMEOUT(late_args_are_read_for_the_probe_that_reads_them, 60)
{
	uint8_t before[16];
	pthread_t th[LA_THREADS];
	int quiet_id, late_id;

	reset();
	memcpy(before, (void *)la_pair, sizeof(before));
	quiet_id = djp_connect_at(OPTS(.func = "la_pair"), quiet, NULL, DJP_GPR_ONLY | DJP_NO_ARGS);
	CHECK(quiet_id >= 0);
	CHECK_EQ(*(uint8_t *)la_pair, 0xe9);
	callers_start(th, pair_caller);
	wait_hits(&quiet_hits, 1000);
	/* the premise: the site was made without its arguments */
	CHECK_EQ(atomic_load(&quiet_nargs), 0);
	late_id = djp_connect_at(OPTS(.func = "la_pair"), pair_args, NULL, DJP_GPR_ONLY);
	CHECK(late_id >= 0);
	wait_hits(&late_hits, 20000);
	wait_hits(&quiet_hits, 1000);
	callers_stop(th);
	CHECK_EQ(atomic_load(&late_bad), 0);
	CHECK_EQ(djp_disconnect(late_id), 0);
	CHECK_EQ(djp_disconnect(quiet_id), 0);
	CHECK(memcmp(before, (void *)la_pair, sizeof(before)) == 0);
}

/* la_keep's line probe that reads x, by its name in the site's format;
 * it notes the register the DWARF puts x in there (the engine's own view
 * of the site), for the test's premise. */
static atomic_int keep_reg = DJP_REG_NONE;
static void keep_args(const struct djp_hit *hit, void *data)
{
	const struct djp_site *s = djp__hit_site(hit);
	const char *fmt = s->m->format, *at = fmt ? strstr(fmt, "x=") : NULL;
	unsigned k = 0;
	(void)data;
	atomic_fetch_add(&late_hits, 1);
	for (const char *c = fmt; at && c < at; c++)
		k += *c == '%';
	if (at && k < s->m->nargs && s->m->arg[k].kind == DJP_LOC_REG)
		atomic_store(&keep_reg, s->m->arg[k].reg);
	/* the caller passed x with a tag in its high half */
	if (!at || k >= djp_hit_nargs(hit) || (djp_hit_arg(hit, k) >> 32) != 0x5eed)
		atomic_fetch_add(&late_bad, 1);
}

static void *keep_caller(void *arg)
{
	long sum = 0;
	(void)arg;
	for (long i = 0; !atomic_load_explicit(&stop, memory_order_relaxed); i++)
		sum += la_keep(0x5eedl << 32 | (i & 0xffff));
	return (void *)sum;
}

TEST_TIMEOUT(late_args_in_callee_saved_registers_are_in_the_view, 60)
{
	pthread_t th[LA_THREADS];
	char spec[64];
	int quiet_id, late_id, reg;

	snprintf(spec, sizeof(spec), "test_engine_late_args.c:%d", la_keep_line);
	reset();
	quiet_id = djp_connect_at(OPTS(.line = spec), quiet, NULL, DJP_GPR_ONLY | DJP_NO_ARGS);
	CHECK(quiet_id >= 0);
	callers_start(th, keep_caller);
	wait_hits(&quiet_hits, 1000);
	CHECK_EQ(atomic_load(&quiet_nargs), 0);
	/* the lean trampoline the quiet probe's hits run is the late one's */
	late_id = djp_connect_at(OPTS(.line = spec), keep_args, NULL, DJP_GPR_ONLY);
	CHECK(late_id >= 0);
	wait_hits(&late_hits, 20000);
	callers_stop(th);
	/* the premise: x is in a callee-saved register there */
	reg = atomic_load(&keep_reg);
	if (reg == DJP_REG_NONE || !(ARCH_CALLEE_SAVED & (1u << reg)))
		djp_test_fail(__FILE__, __LINE__, "x is not in a callee-saved register at line %d (register %d)",
			      la_keep_line, reg);
	CHECK_EQ(atomic_load(&late_bad), 0);
	CHECK_EQ(djp_disconnect(late_id), 0);
	CHECK_EQ(djp_disconnect(quiet_id), 0);
}

/* A fast entry (kernel/dispatch.c) that reads la_pair's two parameters
 * from the registers the prefetching trampoline loaded them into. */
static void pair_fast(const struct djp_hit *hit, void *plan, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	const struct djp_fast_plan *p = plan;
	(void)hit, (void)a2, (void)a3;
	atomic_fetch_add(&fast_hits, 1);
	if (p->nargs && (p->nargs != 2 || a1 != a0 + LA_FAR))
		atomic_fetch_add(&fast_bad, 1);
}

static djp_fast_entry_fn pair_plan(void *data, const struct djp_site *s, struct djp_fast_plan *plan)
{
	*plan = (struct djp_fast_plan){ .data = data, .id = s->id, .nargs = s->m->nargs };
	return pair_fast;
}

static int connect_planned(unsigned flags, djp_handler_fn fn)
{
	struct djp_connect_opts o = { .plan = pair_plan };
	CHECK_EQ(djp__point_parse("func:la_pair", &o.point), 0);
	return djp__connect(NULL, fn, NULL, DJP_GPR_ONLY | flags, &o);
}

TEST_TIMEOUT(late_args_never_prefetch_through_a_trampoline_made_before_them, 60)
{
	pthread_t th[LA_THREADS];
	int quiet_id, late_id;

	reset();
	/* a fast entry alone: the prefetching trampoline, made with nothing
	 * to load */
	quiet_id = connect_planned(DJP_NO_ARGS, quiet);
	CHECK(quiet_id >= 0);
	callers_start(th, pair_caller);
	wait_hits(&fast_hits, 1000);
	CHECK_EQ(atomic_load(&fast_bad), 0);
	/* one that reads them joins (two handlers: the ordinary call), then
	 * it is left alone: its fast entry would want the prefetching
	 * trampoline, which still loads nothing */
	late_id = connect_planned(0, pair_args);
	CHECK(late_id >= 0);
	CHECK_EQ(djp_disconnect(quiet_id), 0);
	atomic_store(&fast_hits, 0);
	wait_hits(&late_hits, 20000);
	callers_stop(th);
	CHECK_EQ(atomic_load(&late_bad), 0);
	CHECK_EQ(atomic_load(&fast_bad), 0);
	CHECK_EQ(atomic_load(&fast_hits), 0);
	CHECK_EQ(djp_disconnect(late_id), 0);
}

/* la_pair's return probe: its entry's two arguments, kept at the entry,
 * then the return value. */
static void pair_return(const struct djp_hit *hit, void *data)
{
	int64_t a = djp_hit_arg(hit, 0), b = djp_hit_arg(hit, 1);
	(void)data;
	atomic_fetch_add(&late_hits, 1);
	if (djp_hit_nargs(hit) != 3 || b != a + LA_FAR || djp_hit_arg(hit, 2) != a * 7 + b)
		atomic_fetch_add(&late_bad, 1);
}

TEST_TIMEOUT(late_args_for_a_return_probe_after_an_entry_that_read_none, 60)
{
	pthread_t th[LA_THREADS];
	int quiet_id, ret_id;

	reset();
	quiet_id = djp_connect_at(OPTS(.func = "la_pair"), quiet, NULL, DJP_GPR_ONLY | DJP_NO_ARGS);
	CHECK(quiet_id >= 0);
	callers_start(th, pair_caller);
	wait_hits(&quiet_hits, 1000);
	CHECK_EQ(atomic_load(&quiet_nargs), 0);
	/* a return probe reads its entry's arguments, DJP_NO_ARGS or not */
	ret_id = djp_connect_at(OPTS(.func = "la_pair", .retprobe = 1), pair_return, NULL, DJP_NO_ARGS);
	CHECK(ret_id >= 0);
	wait_hits(&late_hits, 20000);
	callers_stop(th);
	CHECK_EQ(atomic_load(&late_bad), 0);
	CHECK_EQ(djp_disconnect(ret_id), 0);
	CHECK_EQ(djp_disconnect(quiet_id), 0);
}
