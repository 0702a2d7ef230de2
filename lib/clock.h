/*
 * The trace clock: a raw timestamp that is cheap to take in a probe handler,
 * and the parameters that turn it into CLOCK_MONOTONIC nanoseconds.
 *
 * Producers store raw values (TSC ticks, or nanoseconds when the TSC cannot
 * be trusted); the parameters travel in the ring region's header, so the
 * consumer, in another process, converts with djp_clock_to_ns().
 */
#ifndef DJP_LIB_CLOCK_H
#define DJP_LIB_CLOCK_H

#include <stdint.h>
#include <time.h>

enum djp_clock_kind {
	DJP_CLOCK_NONE = 0,	/* not initialised */
	DJP_CLOCK_MONOTONIC = 1, /* raw values are CLOCK_MONOTONIC ns (vDSO) */
	DJP_CLOCK_TSC = 2,	/* raw values are TSC ticks */
};

/* ns = ns_base + ((raw - raw_base) * mult) >> shift, in 128-bit arithmetic.
 * Shared with other processes: fixed layout, 48 bytes. */
struct djp_clock_params {
	uint32_t kind;	   /* enum djp_clock_kind */
	uint32_t shift;
	uint64_t mult;
	uint64_t raw_base; /* a raw reading ... */
	uint64_t ns_base;  /* ... and CLOCK_MONOTONIC ns at the same moment */
	uint64_t raw_hz;   /* ticks per second (1e9 for the monotonic kind) */
	uint64_t reserved;
};

/* Set once by djp_clock_init(); zero means "use clock_gettime". */
/* Hidden: the hit path reads it PC-relative, not through the GOT. */
extern int djp_clock_use_tsc __attribute__((visibility("hidden")));

/*
 * Choose the clock and, for the TSC, calibrate it against CLOCK_MONOTONIC
 * (about 15 ms, once per process).  The TSC is used when it is invariant
 * (CPUID 0x80000007 EDX bit 8, or "constant_tsc" and "nonstop_tsc" in
 * /proc/cpuinfo) and the environment does not say DJP_CLOCK=monotonic.
 * Returns the kind chosen.  Thread-safe; not async-signal-safe.
 */
int djp_clock_init(void);

/* The TSC rate (mult, shift, raw_hz of a kind DJP_CLOCK_TSC) measured by
 * another process of this machine, to be taken instead of calibrating when
 * djp_clock_init() finds the TSC invariant; ignored once it has run, or when
 * it makes no sense. */
void djp_clock_hint_rate(const struct djp_clock_params *rate);

/* The parameters chosen by djp_clock_init() (which it calls if needed). */
const struct djp_clock_params *djp_clock_params(void);

static inline uint64_t djp_clock_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The TSC itself, for a caller that knows it is the clock (or calibrates
 * it).  Not serialising: see clock.c. */
static inline uint64_t djp_clock_tsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* The fast path: one rdtsc, or a vDSO clock_gettime. */
static inline uint64_t djp_clock_raw(void)
{
	if (__builtin_expect(djp_clock_use_tsc, 1))
		return djp_clock_tsc();
	return djp_clock_monotonic_ns();
}

static inline uint64_t djp_clock_to_ns(const struct djp_clock_params *p, uint64_t raw)
{
	if (raw >= p->raw_base)
		return p->ns_base + (uint64_t)(((unsigned __int128)(raw - p->raw_base) * p->mult) >> p->shift);
	return p->ns_base - (uint64_t)(((unsigned __int128)(p->raw_base - raw) * p->mult) >> p->shift);
}

/* The inverse: the raw value that djp_clock_to_ns() turns into ns (to
 * within one raw unit), for events stamped by another clock reader, the
 * kernel's (bpf_ktime_get_ns is CLOCK_MONOTONIC), to sort among the
 * rings' own.  ns itself when the parameters are not set. */
static inline uint64_t djp_clock_from_ns(const struct djp_clock_params *p, uint64_t ns)
{
	if (!p->mult)
		return ns;
	if (ns >= p->ns_base)
		return p->raw_base + (uint64_t)(((unsigned __int128)(ns - p->ns_base) << p->shift) / p->mult);
	return p->raw_base - (uint64_t)(((unsigned __int128)(p->ns_base - ns) << p->shift) / p->mult);
}

#endif
