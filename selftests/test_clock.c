/* The trace clock: monotonic, and within 1 % of CLOCK_MONOTONIC over 100 ms,
 * on the TSC and on the vDSO fallback. */
#include "harness.h"
#include "lib/clock.h"

/* A raw reading and the CLOCK_MONOTONIC time it was taken at, bracketed
 * tightly: a preemption between the two readings, which a loaded machine
 * may take for milliseconds, would otherwise look like clock error. */
static void sample(uint64_t *raw, uint64_t *ns)
{
	for (int tries = 0; tries < 100000; tries++) {
		uint64_t a = djp_clock_monotonic_ns();
		*raw = djp_clock_raw();
		uint64_t b = djp_clock_monotonic_ns();
		*ns = a + (b - a) / 2;
		if (b - a < 20000)
			return;
	}
	CHECK(!"no undisturbed clock reading in 100000 tries");
}

static void check_clock(void)
{
	const struct djp_clock_params *p = djp_clock_params();
	uint64_t prev = djp_clock_raw(), raw0, raw1, ns0, ns1, d_clock, d_mono;
	struct timespec nap = { 0, 100000000 };

	for (int i = 0; i < 1000000; i++) {
		uint64_t now = djp_clock_raw();
		CHECK(now >= prev);
		prev = now;
	}
	sample(&raw0, &ns0);
	nanosleep(&nap, NULL);
	sample(&raw1, &ns1);
	d_clock = djp_clock_to_ns(p, raw1) - djp_clock_to_ns(p, raw0);
	d_mono = ns1 - ns0;
	CHECK(d_mono >= 99000000ull);
	CHECK(d_clock * 100 >= d_mono * 99 && d_clock * 100 <= d_mono * 101);
	/* and the absolute value is CLOCK_MONOTONIC, give or take 1 ms */
	CHECK(djp_clock_to_ns(p, raw1) + 1000000 >= ns1 && djp_clock_to_ns(p, raw1) <= ns1 + 1000000);
}

TEST(clock_default_monotonic_and_accurate)
{
	int kind = djp_clock_init();
	CHECK(kind == DJP_CLOCK_TSC || kind == DJP_CLOCK_MONOTONIC);
	CHECK_EQ(djp_clock_params()->kind, kind);
	CHECK_EQ(djp_clock_use_tsc, kind == DJP_CLOCK_TSC);
	if (kind == DJP_CLOCK_TSC)
		CHECK(djp_clock_params()->raw_hz > 100000000ull);
	check_clock();
}

TEST(clock_vdso_fallback)
{
	setenv("DJP_CLOCK", "monotonic", 1);
	CHECK_EQ(djp_clock_init(), DJP_CLOCK_MONOTONIC);
	CHECK_EQ(djp_clock_use_tsc, 0);
	check_clock();
}

TEST(clock_conversion_arithmetic)
{
	struct djp_clock_params p = { .kind = DJP_CLOCK_TSC, .shift = 32, .mult = 1ull << 31, /* 0.5 ns a tick */
				      .raw_base = 1000, .ns_base = 5000 };
	CHECK_EQ(djp_clock_to_ns(&p, 1000), 5000);
	CHECK_EQ(djp_clock_to_ns(&p, 3000), 6000);
	CHECK_EQ(djp_clock_to_ns(&p, 0), 4500);
	/* a century of ticks at 4 GHz does not overflow */
	CHECK(djp_clock_to_ns(&p, 1000 + 4000000000ull * 3600 * 24 * 36500) ==
	      5000 + 2000000000ull * 3600 * 24 * 36500);
}
