/*
 * Built-in functions of time.  A probe's clock is its event's timestamp,
 * so that a replay's output does not depend on when it runs; outside an
 * event (begin, end, timers), the source's clock.  stap's per-CPU clocks
 * (local_clock_*, cpu_clock_*) are that same clock here: events carry one
 * time base, and cpu_clock_*(cpu) reads its argument only to evaluate it
 * (cpu_clock_ns does not even that, as before).
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tapset.h"
#include "tools/djp/script/run/interp.h"

/* gettimeofday_* and local_clock_* (its rows name these too): the source's
 * clock, which is the hit's for a live source */
int64_t bi_gettimeofday_ns(struct run *r, struct node *n)
{
	return (int64_t)now_ns(r);
}

int64_t bi_gettimeofday_us(struct run *r, struct node *n)
{
	return (int64_t)(now_ns(r) / 1000);
}

int64_t bi_gettimeofday_ms(struct run *r, struct node *n)
{
	return (int64_t)(now_ns(r) / 1000000);
}

int64_t bi_gettimeofday_s(struct run *r, struct node *n)
{
	return (int64_t)(now_ns(r) / 1000000000);
}

int64_t bi_cpu_clock_ns(struct run *r, struct node *n)
{
	return (int64_t)now_ns(r);
}

int64_t bi_cpu_clock_us(struct run *r, struct node *n)
{
	eval_n(r, n->args[0]);
	return (int64_t)(now_ns(r) / 1000);
}

int64_t bi_cpu_clock_ms(struct run *r, struct node *n)
{
	eval_n(r, n->args[0]);
	return (int64_t)(now_ns(r) / 1000000);
}

int64_t bi_cpu_clock_s(struct run *r, struct node *n)
{
	eval_n(r, n->args[0]);
	return (int64_t)(now_ns(r) / 1000000000);
}

int64_t bi_get_cycles(struct run *r, struct node *n)
{
	return (int64_t)__builtin_ia32_rdtsc();
}

int64_t bi_jiffies(struct run *r, struct node *n)
{
	return (int64_t)(now_ns(r) / (1000000000u / (uint64_t)sysconf(_SC_CLK_TCK)));
}

int64_t bi_hz(struct run *r, struct node *n)
{
	return sysconf(_SC_CLK_TCK);
}

/* ctime(secs) in UTC, ctime() now; tz_ctime in the local zone, named */
static const char *ctime_of(struct run *r, struct node *n, bool local)
{
	char *buf = arena_alloc(r, 64);
	int64_t secs = n->nargs ? eval_n(r, n->args[0]) : (int64_t)(now_ns(r) / 1000000000u);
	tapset_ctime(secs, local, buf, 64);
	return buf;
}

const char *bi_ctime(struct run *r, struct node *n)
{
	return ctime_of(r, n, false);
}

const char *bi_tz_ctime(struct run *r, struct node *n)
{
	return ctime_of(r, n, true);
}

/* tz_gmtoff(), tz_name(): the tool's local time zone, as stap's are
 * staprun's (tapset/tzinfo.stp): seconds west of UTC, and the zone's
 * abbreviation. */
static struct tm local_now(void)
{
	time_t t = time(NULL);
	struct tm tm;

	if (!localtime_r(&t, &tm))
		memset(&tm, 0, sizeof(tm));
	return tm;
}

int64_t bi_tz_gmtoff(struct run *r, struct node *n)
{
	return -(int64_t)local_now().tm_gmtoff;
}

const char *bi_tz_name(struct run *r, struct node *n)
{
	struct tm tm = local_now();
	const char *z = tm.tm_zone ? tm.tm_zone : "UTC";

	return arena_strn(r, z, strlen(z));
}
