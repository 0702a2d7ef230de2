/* Runs that start before their site (kernel/func_code.c): a site two bytes
 * before its function's end, a site right after a branch target, a run
 * whose start must be checked against the branch targets, the handler's
 * view against an int3's, and four threads running the sites while they
 * are armed and disarmed. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "djprobe/djprobe.h"
#include "harness.h"

#include "selftests/run_before_asm.h"

#define OPTS(...) (&(struct djp_point_opts){ .sz = sizeof(struct djp_point_opts), __VA_ARGS__ })
/* A place in a function, by its offset from the function's address made
 * opaque, so that the compiler cannot fold the sum into a rip-relative lea
 * of the place itself (run_before_asm.h says why). */
static const char *at(const void *fn, size_t off)
{
	uintptr_t a = (uintptr_t)fn;
	__asm__("" : "+r"(a));
	return (const char *)(a + off);
}
#define AT(fn, off) at((const void *)(fn), (off))

static atomic_long hits, bad;

/* The registers at each site, checked from what the site's code was given
 * (%rdi) and did before it; the probe's pc is the site's. */
static void at_end(const struct djp_hit *hit, void *data)
{
	uint64_t x = djp_hit_reg(hit, 5);
	(void)data;
	atomic_fetch_add(&hits, 1);
	if (djp_hit_reg(hit, 3) != x + 3 || djp_hit_reg(hit, 0) != 5 * (x + 3) ||
	    djp_hit_reg(hit, 16) != (uintptr_t)AT(rb_end, RB_END_SITE) || djp_hit_site(hit) != (uintptr_t)AT(rb_end, RB_END_SITE))
		atomic_fetch_add(&bad, 1);
}

static void at_join(const struct djp_hit *hit, void *data)
{
	uint64_t x = djp_hit_reg(hit, 5);
	(void)data;
	atomic_fetch_add(&hits, 1);
	if (djp_hit_reg(hit, 0) != x + (x & 1 ? 100 : 0) + 7 || djp_hit_reg(hit, 16) != (uintptr_t)AT(rb_join, RB_JOIN_SITE))
		atomic_fetch_add(&bad, 1);
}

static void count(const struct djp_hit *hit, void *data)
{
	(void)hit, (void)data;
	atomic_fetch_add(&hits, 1);
}

/* rr_run's view: every register the site has, by DWARF number */
static const uint64_t rr_want[] = { RR_RAX, RR_RDX, RR_RCX, RR_RBX, RR_RSI, RR_RDI, RR_RBP, 0,
				    RR_R8,  RR_R9,  RR_R10, RR_R11, RR_R12, RR_R13, RR_R14 };
static uint64_t rr_seen[17];
/* where rr_run stores each register, by DWARF number (every_reg_asm.h) */
static const int rr_out[15] = { 0, 3, 2, 1, 4, 5, 6, 14, 7, 8, 9, 10, 11, 12, 13 };

static void at_rr(const struct djp_hit *hit, void *data)
{
	(void)data;
	atomic_fetch_add(&hits, 1);
	for (unsigned r = 0; r < 17; r++)
		rr_seen[r] = djp_hit_reg(hit, r);
}

static void at_rr_check(const struct djp_hit *hit, void *data)
{
	(void)data;
	atomic_fetch_add(&hits, 1);
	for (unsigned r = 0; r < 15; r++)
		if (r != 7 && djp_hit_reg(hit, r) != rr_want[r])
			atomic_fetch_add(&bad, 1);
	if (djp_hit_reg(hit, 16) != (uintptr_t)AT(rr_run, RR_SITE))
		atomic_fetch_add(&bad, 1);
}

/* The site armed lean and full in turn, one thread: the jump is written
 * at the run's start, every hit is counted with the site's registers, and
 * every result is the unprobed one; the text is as it was after. */
static void arm_and_run(const char *site, const char *run, djp_handler_fn fn, long (*call)(long), long (*ref)(long))
{
	uint8_t before[32];

	memcpy(before, run, sizeof(before));
	for (int m = 0; m < 2; m++) {
		int id = djp_connect_at(OPTS(.addr = (uintptr_t)site), fn, NULL, m ? DJP_GPR_ONLY : 0);
		CHECK(id >= 0);
		CHECK_EQ(*(const uint8_t *)run, 0xe9);
		atomic_store(&hits, 0);
		atomic_store(&bad, 0);
		for (long i = 0; i < 10000; i++)
			CHECK_EQ(call(i - 5000), ref(i - 5000));
		CHECK_EQ(atomic_load(&hits), 10000);
		CHECK_EQ(atomic_load(&bad), 0);
		CHECK_EQ(djp_disconnect(id), 0);
		CHECK(memcmp(before, run, sizeof(before)) == 0);
	}
}

TEST(run_before_site_two_bytes_before_the_function_end)
{
	CHECK(rb_offsets_ok());
	arm_and_run(AT(rb_end, RB_END_SITE), AT(rb_end, RB_END_RUN), at_end, rb_end, rb_end_ref);
}

static long join_odd_y(long x)
{
	return rb_join(x, x >> 1);
}

static long join_odd_y_ref(long x)
{
	return rb_join_ref(x, x >> 1);
}

TEST(run_before_site_right_after_a_branch_target)
{
	arm_and_run(AT(rb_join, RB_JOIN_SITE), AT(rb_join, RB_JOIN_RUN), at_join, join_odd_y, join_odd_y_ref);
}

/* An armed site whose run starts before it, joined by a handler that asks
 * for an int3: the int3 is at the run's start, and enters the trampoline,
 * which runs the instructions before the site first, so that both
 * handlers see the site's registers; the jump comes back when that
 * handler goes. */
static atomic_long forced_hits;

static void at_end_forced(const struct djp_hit *hit, void *data)
{
	atomic_fetch_add(&forced_hits, 1);
	at_end(hit, data);
}

TEST(run_before_int3_asked_of_an_armed_site_enters_its_trampoline)
{
	const char *run = AT(rb_end, RB_END_RUN), *site = AT(rb_end, RB_END_SITE);
	uint8_t before[16];
	int a, b;

	memcpy(before, rb_end, sizeof(before));
	a = djp_connect_at(OPTS(.addr = (uintptr_t)site), at_end, NULL, DJP_GPR_ONLY);
	CHECK(a >= 0);
	CHECK_EQ(*(const uint8_t *)run, 0xe9);
	b = djp_connect_at(OPTS(.addr = (uintptr_t)site), at_end_forced, NULL, DJP_FORCE_INT3);
	CHECK(b >= 0);
	/* the int3 at the run's start, the instructions after it the program's */
	CHECK_EQ(*(const uint8_t *)run, 0xcc);
	CHECK(memcmp(run + 1, before + RB_END_RUN + 1, RB_END_SITE + 2 - RB_END_RUN - 1) == 0);
	atomic_store(&hits, 0);
	atomic_store(&bad, 0);
	for (long i = 0; i < 1000; i++)
		CHECK_EQ(rb_end(i), rb_end_ref(i));
	CHECK_EQ(atomic_load(&hits), 2000); /* both handlers, each hit */
	CHECK_EQ(atomic_load(&forced_hits), 1000);
	CHECK_EQ(atomic_load(&bad), 0);
	CHECK_EQ(djp_disconnect(b), 0);
	CHECK_EQ(*(const uint8_t *)run, 0xe9);
	atomic_store(&hits, 0);
	for (long i = 0; i < 1000; i++)
		CHECK_EQ(rb_end(i), rb_end_ref(i));
	CHECK_EQ(atomic_load(&hits), 1000);
	CHECK_EQ(djp_disconnect(a), 0);
	CHECK(memcmp(before, rb_end, sizeof(before)) == 0);
}

/* A point at the start of an idle site's run before it: that site is
 * narrowed to its own instruction for good (kernel/site_narrow.c), and
 * each is an int3 on its own instruction, neither inside the other's
 * bytes.  (The narrowing lasts: each test runs in a process of its own.) */
TEST(run_before_point_at_the_runs_start_narrows_the_site)
{
	const char *run = AT(rb_end, RB_END_RUN), *site = AT(rb_end, RB_END_SITE);
	uint8_t before[16];
	int a, b;

	memcpy(before, rb_end, sizeof(before));
	a = djp_connect_at(OPTS(.addr = (uintptr_t)site), at_end, NULL, 0);
	CHECK(a >= 0);
	CHECK_EQ(*(const uint8_t *)run, 0xe9);
	CHECK_EQ(djp_disconnect(a), 0);
	b = djp_connect_at(OPTS(.addr = (uintptr_t)run), count, NULL, 0);
	CHECK(b >= 0);
	a = djp_connect_at(OPTS(.addr = (uintptr_t)site), at_end, NULL, 0);
	CHECK(a >= 0);
	CHECK_EQ(*(const uint8_t *)run, 0xcc);
	CHECK_EQ(*(const uint8_t *)site, 0xcc);
	atomic_store(&hits, 0);
	atomic_store(&bad, 0);
	for (long i = 0; i < 1000; i++)
		CHECK_EQ(rb_end(i), rb_end_ref(i));
	CHECK_EQ(atomic_load(&hits), 2000);
	CHECK_EQ(atomic_load(&bad), 0);
	CHECK_EQ(djp_disconnect(a), 0);
	CHECK_EQ(djp_disconnect(b), 0);
	CHECK(memcmp(before, rb_end, sizeof(before)) == 0);
}

/* Every run that ends past rb_trap's site holds the place where a
 * branch lands, strictly inside: the run's start is checked against the
 * branch targets as the rest of it is, and the site stays an int3 (its
 * int3 on the site itself, the instructions before it untouched). */
TEST(run_before_start_checked_against_branch_targets)
{
	uint8_t before[RB_TRAP_SITE + 1];
	int id;

	memcpy(before, rb_trap, sizeof(before));
	id = djp_connect_at(OPTS(.func = "rb_trap", .offset = RB_TRAP_SITE), count, NULL, 0);
	CHECK(id >= 0);
	/* both ways in: an even x branches to the join */
	atomic_store(&hits, 0);
	for (long i = 0; i < 1000; i++)
		CHECK_EQ(rb_trap(i), rb_trap_ref(i));
	CHECK_EQ(atomic_load(&hits), 1000);
	CHECK_EQ(*(const uint8_t *)AT(rb_trap, RB_TRAP_SITE), 0xcc);
	CHECK(memcmp(before, rb_trap, RB_TRAP_SITE) == 0);
	CHECK_EQ(djp_disconnect(id), 0);
	CHECK(memcmp(before, rb_trap, sizeof(before)) == 0);
}

/* The handler sees every register as the site has it (pc the site's, %rsp
 * the one the code stores after it), lean, full and through an int3 on the
 * site itself; the code after the site finds every register and flag as
 * unprobed. */
TEST(run_before_view_is_the_sites_as_an_int3_sees_it)
{
	const struct {
		const char *what;
		unsigned flags;
		const char *at;
		uint8_t byte;
	} way[] = {
		{ "lean jump", DJP_GPR_ONLY, AT(rr_run, RR_RUN_START), 0xe9 },
		{ "full jump", 0, AT(rr_run, RR_RUN_START), 0xe9 },
		/* last: an int3 asked for narrows the site to its nop for good */
		{ "int3", DJP_FORCE_INT3, AT(rr_run, RR_SITE), 0xcc },
	};
	long want[16], got[16];
	uint64_t views[3][17];

	memset(want, 0, sizeof(want));
	rr_run(1, want);
	CHECK_EQ(want[0], RR_RAX);
	CHECK((want[15] & 0x81) == 0x81); /* the premise: CF and SF set */
	for (unsigned w = 0; w < 3; w++) {
		int id = djp_connect_at(OPTS(.addr = (uintptr_t)AT(rr_run, RR_SITE)), at_rr, NULL, way[w].flags);
		CHECK(id >= 0);
		if (*(const uint8_t *)way[w].at != way[w].byte)
			djp_test_fail(__FILE__, __LINE__, "%s: %#x at the run's start, not %#x", way[w].what,
				      *(const uint8_t *)way[w].at, way[w].byte);
		atomic_store(&hits, 0);
		for (int i = 0; i < 100; i++) {
			memset(got, 0, sizeof(got));
			memset(rr_seen, 0, sizeof(rr_seen));
			rr_run(1, got);
			for (int r = 0; r < 16; r++)
				if (got[r] != want[r])
					djp_test_fail(__FILE__, __LINE__, "%s: register %d %#lx after the site, not %#lx",
						      way[w].what, r, got[r], want[r]);
			for (int r = 0; r < 15; r++)
				if (rr_seen[r] != (uint64_t)want[rr_out[r]])
					djp_test_fail(__FILE__, __LINE__, "%s: the handler saw register %d %#lx, not %#lx",
						      way[w].what, r, (long)rr_seen[r], want[rr_out[r]]);
			if (rr_seen[15] != (uintptr_t)got || rr_seen[16] != (uintptr_t)AT(rr_run, RR_SITE))
				djp_test_fail(__FILE__, __LINE__, "%s: the handler saw %%r15 %#lx and pc %#lx", way[w].what,
					      (long)rr_seen[15], (long)rr_seen[16]);
		}
		memcpy(views[w], rr_seen, sizeof(rr_seen));
		CHECK_EQ(atomic_load(&hits), 100);
		CHECK_EQ(djp_disconnect(id), 0);
	}
	/* (the last %r15 of each way is its own `got`: the same array) */
	CHECK(memcmp(views[0], views[2], sizeof(views[0])) == 0);
	CHECK(memcmp(views[1], views[2], sizeof(views[0])) == 0);
}

/* Four threads (more than the cores) run the sites while they are armed
 * and disarmed 2,000 times (two sites a round), lean and full, so that hits come through the
 * jumps, the int3 of each arming and disarming (which enters the
 * trampoline at the run's start, or skips the run), and the threads found
 * inside a run: every result and every view stays exact. */
static atomic_int stop;
static atomic_long wrong, calls;

static void *runner(void *arg)
{
	long seed = (long)(intptr_t)arg, n = 0;
	long out[16];
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		long x = seed * 1000003 + n++;
		if (rb_end(x) != rb_end_ref(x) || rb_join(x, x >> 1) != rb_join_ref(x, x >> 1) ||
		    rb_trap(x) != rb_trap_ref(x))
			atomic_fetch_add(&wrong, 1);
		rr_run(1, out);
		if (out[0] != RR_RAX || out[13] != RR_R14 || (out[15] & 0x81) != 0x81)
			atomic_fetch_add(&wrong, 1);
	}
	atomic_fetch_add(&calls, n);
	return NULL;
}

TEST_TIMEOUT(run_before_armed_and_disarmed_under_four_threads, 600)
{
	const struct {
		const char *site;
		djp_handler_fn fn;
	} sites[] = { { AT(rb_end, RB_END_SITE), at_end },
		      { AT(rb_join, RB_JOIN_SITE), at_join },
		      { AT(rr_run, RR_SITE), at_rr_check } };
	uint8_t text[3][32];
	const char *fns[3] = { (const char *)rb_end, (const char *)rb_join, (const char *)rr_run };
	pthread_t t[4];
	long last = 0;

	for (int f = 0; f < 3; f++)
		memcpy(text[f], fns[f], sizeof(text[f]));
	atomic_store(&hits, 0);
	atomic_store(&bad, 0);
	for (long i = 0; i < 4; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, runner, (void *)(intptr_t)i), 0);
	for (int round = 0; round < 1000; round++) {
		int a = djp_connect_at(OPTS(.addr = (uintptr_t)sites[round % 3].site), sites[round % 3].fn, NULL,
				       round & 1 ? DJP_GPR_ONLY : 0);
		int b = djp_connect_at(OPTS(.addr = (uintptr_t)sites[(round + 1) % 3].site), sites[(round + 1) % 3].fn,
				       NULL, round & 2 ? DJP_GPR_ONLY : 0);
		long h;
		CHECK(a >= 0 && b >= 0);
		/* wait for hits, not for time: the threads ran the sites armed */
		while ((h = atomic_load(&hits)) < last + 10)
			sched_yield();
		CHECK_EQ(djp_disconnect(round & 4 ? a : b), 0);
		CHECK_EQ(djp_disconnect(round & 4 ? b : a), 0);
		last = atomic_load(&hits);
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	if (atomic_load(&wrong) || atomic_load(&bad))
		djp_test_fail(__FILE__, __LINE__, "%ld wrong results, %ld wrong views, of %ld calls and %ld hits",
			      atomic_load(&wrong), atomic_load(&bad), atomic_load(&calls), atomic_load(&hits));
	CHECK(atomic_load(&calls) > 0);
	for (int f = 0; f < 3; f++)
		CHECK(memcmp(text[f], fns[f], sizeof(text[f])) == 0);
}
