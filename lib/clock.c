/*
 * The trace clock.
 *
 * A probe handler needs a timestamp in a few nanoseconds, from any thread,
 * even inside a signal handler, and the consumer needs to put events of all
 * threads on one time line that matches CLOCK_MONOTONIC (so that it lines up
 * with logs and with other tracers).  LTTng-UST solves this with a raw
 * per-event clock plus conversion parameters published once; so do we.
 *
 * Where the TSC is invariant (it ticks at a constant rate whatever the
 * P-state, and keeps ticking in deep C-states: CPUID 0x80000007 EDX bit 8,
 * which Linux reports as "constant_tsc nonstop_tsc"), an event stores the
 * raw rdtsc value.  rdtsc is not serialising and we do not make it so: a
 * probe only needs the time at which it ran, give or take a few cycles, and
 * the events of one ring are written in program order by one thread.  The
 * kernel keeps the TSCs of all cores in step on such machines (it would
 * otherwise have marked the TSC unstable, and we would see no constant_tsc
 * in a guest that cannot promise it).
 *
 * To convert, we calibrate once per process against CLOCK_MONOTONIC: take a
 * (tsc, ns) pair, wait about 15 ms, take another.  Each pair is the tightest
 * of several tries (the tsc read before and after clock_gettime, keeping the
 * try with the shortest window and its midpoint), so a pair is good to well
 * under a microsecond and the rate to better than 0.01 %.  The result is
 * ns = ns_base + ((raw - raw_base) * mult) >> shift with 128-bit
 * intermediate, so there is no overflow however long the trace runs, and the
 * parameters go into the region header for the consumer.
 *
 * The rate is the machine's, not the process's: a process the tool traces
 * is told the tool's (the RING request carries it), checks that its own
 * TSC is invariant too, and takes only its two bases, one pair read at
 * once, so that attaching to a process costs it no 15 ms of waiting, and
 * every process of a trace converts at the same rate.  A process in
 * another time namespace reads its own CLOCK_MONOTONIC for its bases, so
 * it lines up with itself as before.
 *
 * Otherwise (no invariant TSC, or DJP_CLOCK=monotonic in the environment)
 * an event stores CLOCK_MONOTONIC nanoseconds read through the vDSO, and
 * the parameters are the identity.
 */
#include <cpuid.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

int djp_clock_use_tsc;

static struct djp_clock_params params;
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;
static struct djp_clock_params hint; /* a rate from elsewhere (kind TSC), or none */

#define CALIBRATE_NS 15000000ull
#define SHIFT 32

static int cpuinfo_has_flags(void)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char line[8192];
	int ok = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5))
			continue;
		ok = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
		break;
	}
	fclose(f);
	return ok;
}

static int tsc_is_invariant(void)
{
	unsigned a, b, c, d;

	if (__get_cpuid_max(0x80000000, NULL) >= 0x80000007) {
		__cpuid(0x80000007, a, b, c, d);
		if (d & (1u << 8))
			return 1;
	}
	return cpuinfo_has_flags();
}

/* A (tsc, ns) pair: the tightest of a few tries. */
static void read_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 16; i++) {
		uint64_t t0 = djp_clock_tsc();
		uint64_t n = djp_clock_monotonic_ns();
		uint64_t t1 = djp_clock_tsc();
		if (t1 - t0 < best) {
			best = t1 - t0;
			*tsc = t0 + (t1 - t0) / 2;
			*ns = n;
		}
	}
}

/* The rate given (djp_clock_hint_rate), this process's bases. */
static void take_hint(void)
{
	read_pair(&params.raw_base, &params.ns_base);
	params.kind = DJP_CLOCK_TSC;
	params.shift = hint.shift;
	params.mult = hint.mult;
	params.raw_hz = hint.raw_hz;
	__atomic_store_n(&djp_clock_use_tsc, 1, __ATOMIC_RELEASE);
}

static void calibrate_tsc(void)
{
	uint64_t tsc0, ns0, tsc1, ns1;
	struct timespec nap = { 0, CALIBRATE_NS };

	if (hint.kind == DJP_CLOCK_TSC) {
		take_hint();
		return;
	}
	read_pair(&tsc0, &ns0);
	nanosleep(&nap, NULL);
	read_pair(&tsc1, &ns1);
	if (tsc1 <= tsc0 || ns1 <= ns0)
		return; /* nonsense: stay on the monotonic clock */
	params.kind = DJP_CLOCK_TSC;
	params.shift = SHIFT;
	params.mult = (uint64_t)((((unsigned __int128)(ns1 - ns0) << SHIFT) + (tsc1 - tsc0) / 2) / (tsc1 - tsc0));
	params.raw_base = tsc1;
	params.ns_base = ns1;
	params.raw_hz = (uint64_t)((unsigned __int128)(tsc1 - tsc0) * 1000000000u / (ns1 - ns0));
	__atomic_store_n(&djp_clock_use_tsc, 1, __ATOMIC_RELEASE);
}

static void clock_init_once(void)
{
	const char *env = getenv("DJP_CLOCK");

	params.kind = DJP_CLOCK_MONOTONIC;
	params.shift = 0;
	params.mult = 1;
	params.raw_base = 0;
	params.ns_base = 0;
	params.raw_hz = 1000000000u;
	if (env && !strcmp(env, "monotonic"))
		return;
	if (tsc_is_invariant())
		calibrate_tsc();
}

void djp_clock_hint_rate(const struct djp_clock_params *rate)
{
	/* a rate of nonsense (none, or off by more than ten from any TSC
	 * made: 10 MHz .. 100 GHz) is no hint */
	if (rate->kind != DJP_CLOCK_TSC || rate->shift != SHIFT || !rate->mult || rate->raw_hz < 10000000u ||
	    rate->raw_hz > 100000000000ull)
		return;
	hint = *rate;
}

int djp_clock_init(void)
{
	pthread_once(&clock_once, clock_init_once);
	return (int)params.kind;
}

const struct djp_clock_params *djp_clock_params(void)
{
	djp_clock_init();
	return &params;
}
