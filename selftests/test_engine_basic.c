/* The engine end to end in this process: connect, hit, disconnect, restore,
 * in jump mode (lean and full) and int3 mode, in both sync modes. */
#include <errno.h>
#include <stdatomic.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "harness.h"

static atomic_long hits, argsum;
static uintptr_t site_seen;

__attribute__((noinline)) static void hot(int i, long j)
{
	MARK(eng_basic_hot, "i=%d j=%ld", i, j);
	__asm__ volatile("" ::: "memory");
}

static void count(const struct djp_hit *hit, void *data)
{
	(void)data;
	atomic_fetch_add(&hits, 1);
	atomic_fetch_add(&argsum, djp_hit_arg(hit, 0) + djp_hit_arg(hit, 1));
	site_seen = djp_hit_site(hit);
}

static void run_mode(unsigned flags)
{
	static const uint8_t nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	long expect = 0;
	int id;

	atomic_store(&hits, 0);
	atomic_store(&argsum, 0);
	for (int i = 0; i < 10; i++)
		hot(i, 1); /* nobody listens: no hits */
	CHECK_EQ(atomic_load(&hits), 0);
	id = djp_connect("eng_basic_*", count, NULL, flags);
	CHECK(id >= 0);
	for (int i = 0; i < 1000; i++) {
		hot(i, -2 * i);
		expect += i - 2 * i;
	}
	CHECK_EQ(atomic_load(&hits), 1000);
	CHECK_EQ(atomic_load(&argsum), expect);
	CHECK(site_seen != 0);
	if (flags & DJP_FORCE_INT3)
		CHECK_EQ(*(uint8_t *)site_seen, 0xcc);
	else
		CHECK_EQ(*(uint8_t *)site_seen, 0xe9);
	CHECK_EQ(djp_disconnect(id), 0);
	CHECK(memcmp((void *)site_seen, nop6, 6) == 0);
	hot(1, 1);
	CHECK_EQ(atomic_load(&hits), 1000);
	CHECK_EQ(djp_disconnect(id), -ENOENT);
}

TEST(engine_jump_full)
{
	run_mode(0);
}

TEST(engine_jump_lean)
{
	run_mode(DJP_GPR_ONLY);
}

TEST(engine_int3)
{
	run_mode(DJP_FORCE_INT3);
}

TEST(engine_jump_shootdown_sync)
{
	setenv("DJP_SYNC", "shootdown", 1);
	run_mode(0);
	run_mode(DJP_FORCE_INT3);
}

TEST(engine_procmem_writes)
{
	setenv("DJP_TEXT", "mem", 1);
	run_mode(DJP_GPR_ONLY);
	run_mode(DJP_FORCE_INT3);
}

TEST(engine_no_match_is_enoent)
{
	CHECK_EQ(djp_connect("no_such_marker_*", count, NULL, 0), -ENOENT);
	CHECK_EQ(errno, ENOENT);
	CHECK_EQ(djp_connect("x", NULL, NULL, 0), -EINVAL);
}
