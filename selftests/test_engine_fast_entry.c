/*
 * The fast entry is a capability of the engine, not of the recorder: any
 * lean handler connected with a plan function (djp__connect) gets its entry
 * called by a prefetching trampoline, with the site's arguments loaded and
 * its plan as data; a second handler on the site takes the site back to the
 * ordinary call, and the plan is asked again when the list changes.
 */
#include <errno.h>
#include <stdatomic.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "harness.h"
#include "kernel/engine.h"

static atomic_long fast_hits, fast_sum, plain_hits, plans;
static void *fast_data_seen;
static int the_data;

__attribute__((noinline)) static void fast_site(int i, long j)
{
	MARK(fast_entry_site, "i=%d j=%ld", i, j);
	__asm__ volatile("" ::: "memory");
}

static void entry(const struct djp_hit *hit, void *plan, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	const struct djp_fast_plan *p = plan;
	(void)hit, (void)a2, (void)a3;
	fast_data_seen = p->data;
	atomic_fetch_add(&fast_hits, 1);
	atomic_fetch_add(&fast_sum, (long)(int)a0 + (long)a1);
}

static djp_fast_entry_fn plan_fn(void *data, const struct djp_site *s, struct djp_fast_plan *plan)
{
	atomic_fetch_add(&plans, 1);
	*plan = (struct djp_fast_plan){ .data = data, .id = s->id, .nargs = s->m->nargs };
	return entry;
}

static void plain(const struct djp_hit *hit, void *data)
{
	(void)data;
	atomic_fetch_add(&plain_hits, 1);
	(void)djp_hit_arg(hit, 0);
}

TEST(fast_entry_is_any_handlers_capability)
{
	struct djp_connect_opts o = { .plan = plan_fn };
	long expect = 0;
	int id, other;

	id = djp__connect("fast_entry_site", plain, &the_data, DJP_GPR_ONLY, &o);
	CHECK(id >= 0);
	CHECK(atomic_load(&plans) >= 1);
	/* a thread's first hit registers it on the slow path, which calls the
	 * handler itself */
	fast_site(0, 0);
	atomic_store(&fast_hits, 0);
	atomic_store(&fast_sum, 0);
	atomic_store(&plain_hits, 0);
	for (int i = 0; i < 100; i++) {
		fast_site(i, 3 * i);
		expect += 4 * i;
	}
	/* the entry ran, with the prefetched arguments and the plan's data */
	CHECK_EQ(atomic_load(&fast_hits), 100);
	CHECK_EQ(atomic_load(&fast_sum), expect);
	CHECK(fast_data_seen == &the_data);
	CHECK_EQ(atomic_load(&plain_hits), 0);

	/* two handlers: the ordinary list call, both run */
	other = djp_connect("fast_entry_site", plain, NULL, DJP_GPR_ONLY);
	CHECK(other >= 0);
	fast_site(1, 1);
	CHECK_EQ(atomic_load(&fast_hits), 100);
	CHECK_EQ(atomic_load(&plain_hits), 2);

	/* alone again: the plan is asked again and the entry used */
	long before = atomic_load(&plans);
	CHECK_EQ(djp_disconnect(other), 0);
	CHECK(atomic_load(&plans) > before);
	fast_site(2, 2);
	CHECK_EQ(atomic_load(&fast_hits), 101);
	CHECK_EQ(atomic_load(&plain_hits), 2);
	CHECK_EQ(djp_disconnect(id), 0);
	fast_site(3, 3);
	CHECK_EQ(atomic_load(&fast_hits), 101);
}

/* A pending connect keeps a pattern nothing matches yet; a plain one does
 * not. */
TEST(pending_connect_keeps_an_unmatched_pattern)
{
	struct djp_connect_opts o = { .pending = true };
	int id;

	CHECK_EQ(djp_connect("no_such_marker_anywhere", plain, NULL, 0), -ENOENT);
	id = djp__connect("no_such_marker_anywhere", plain, NULL, 0, &o);
	CHECK(id >= 0);
	CHECK_EQ(djp_disconnect(id), 0);
}

/* A site with one argument in memory off %rsp and one in %rax: the
 * trampoline computes the site's %rsp in %rax for its view, so the
 * prefetch must read %rax from where the pushes saved it, not from the
 * register (a stack address came back for %rax once). */
static atomic_long rsp_rax_bad, rsp_rax_hits;

__attribute__((noinline)) static void rsp_rax_site(long in_memory, long in_rax)
{
	long mem = in_memory;
	register long rax __asm__("rax") = in_rax;
	__asm__ volatile("" : "+m"(mem), "+r"(rax));
	MARK(rsp_rax_site, "mem=%ld rax=%ld", mem, rax);
	__asm__ volatile("" ::"r"(rax) : "memory");
}

static void rsp_rax_entry(const struct djp_hit *hit, void *plan, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	(void)hit, (void)plan, (void)a2, (void)a3;
	atomic_fetch_add(&rsp_rax_hits, 1);
	if ((long)a1 != (long)a0 * 7)
		atomic_fetch_add(&rsp_rax_bad, 1);
}

static djp_fast_entry_fn rsp_rax_plan(void *data, const struct djp_site *s, struct djp_fast_plan *plan)
{
	*plan = (struct djp_fast_plan){ .data = data, .id = s->id, .nargs = s->m->nargs };
	return rsp_rax_entry;
}

TEST(prefetch_reads_rax_when_the_view_needs_rsp)
{
	struct djp_connect_opts o = { .plan = rsp_rax_plan };
	int id = djp__connect("rsp_rax_site", plain, NULL, DJP_GPR_ONLY, &o);

	CHECK(id >= 0);
	rsp_rax_site(1, 7); /* the thread's first hit: the slow path */
	atomic_store(&rsp_rax_hits, 0);
	for (long i = 1; i <= 1000; i++)
		rsp_rax_site(i, 7 * i);
	CHECK_EQ(atomic_load(&rsp_rax_hits), 1000);
	CHECK_EQ(atomic_load(&rsp_rax_bad), 0);
	CHECK_EQ(djp_disconnect(id), 0);
}
