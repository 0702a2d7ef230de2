/*
 * What every benchmark here shares: the loop that calls the function under
 * test and the plain-NOP baseline (64-byte aligned and never inlined, so
 * code placement does not decide a result), a monotonic clock in ns,
 * medians, and a value a command prints.
 */
#ifndef DJP_BENCH_H
#define DJP_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ALIGNED __attribute__((noinline, aligned(64)))

typedef void (*fn_t)(int, long);

static ALIGNED __attribute__((unused)) void loop(fn_t fn, long n)
{
	for (long i = 0; i < n; i++)
		fn((int)i, i);
}

/* The baseline: the marker's 6-byte NOP with nothing around it. */
static ALIGNED __attribute__((unused)) void hit_nop(int a, long b)
{
	(void)a;
	(void)b;
	__asm__ __volatile__(".byte 0x66,0x0f,0x1f,0x44,0x00,0x00");
}

static inline double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* ns per call of fn over `batches` timed batches of `batch` calls, with
 * `between(fn)` run untimed after each (to drain a ring, say). */
static inline __attribute__((unused)) double timed_batches(fn_t fn, int batches, long batch, void (*between)(fn_t))
{
	double total = 0;
	for (int b = 0; b < batches; b++) {
		double t0 = now_ns();
		loop(fn, batch);
		total += now_ns() - t0;
		between(fn);
	}
	return total / (batches * (double)batch);
}

/* Sorts v. */
static inline double median_of(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* Run a shell command (a target under a tracer, say): the number after
 * `key` in the last line of its output that has it, or -1 (no such line,
 * or the command failed). */
static inline __attribute__((unused)) double run_value(const char *cmd, const char *key)
{
	char line[1024];
	double v = -1;
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char *k = strstr(line, key);
		if (k)
			v = atof(k + strlen(key));
	}
	return pclose(p) == 0 ? v : -1;
}

#endif
