/*
 * Arming a probe on every function of a program: 5,000 functions, armed
 * with one djp_connect_at glob (what process("PATH").function("*") asks),
 * each called once armed, results and hit count checked, then disarmed.
 * Prints how long arming and disarming take, how many functions became
 * jumps, and whether the program still computes what it did.  Then the
 * same over a real program, python3.11 (its own functions, the DWARF of
 * its debug file read for their parameters): bench/targets/pyarm.c,
 * preloaded, times the connect in python's own process.
 */
#include <libgen.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "djprobe/djprobe.h"

#define F(n)                                                                                        \
	__attribute__((noinline)) long af_##n(long x)                                              \
	{                                                                                           \
		return (x * (n + 1)) ^ ((x >> 3) + n);                                             \
	}
#define F10(n) F(n##0) F(n##1) F(n##2) F(n##3) F(n##4) F(n##5) F(n##6) F(n##7) F(n##8) F(n##9)
#define F100(n) F10(n##0) F10(n##1) F10(n##2) F10(n##3) F10(n##4) F10(n##5) F10(n##6) F10(n##7) F10(n##8) F10(n##9)
#define F1000(n) F100(n##0) F100(n##1) F100(n##2) F100(n##3) F100(n##4) F100(n##5) F100(n##6) F100(n##7) F100(n##8) F100(n##9)
F1000(1) F1000(2) F1000(3) F1000(4) F1000(5)

#define P(n) af_##n,
#define P10(n) P(n##0) P(n##1) P(n##2) P(n##3) P(n##4) P(n##5) P(n##6) P(n##7) P(n##8) P(n##9)
#define P100(n) P10(n##0) P10(n##1) P10(n##2) P10(n##3) P10(n##4) P10(n##5) P10(n##6) P10(n##7) P10(n##8) P10(n##9)
#define P1000(n) P100(n##0) P100(n##1) P100(n##2) P100(n##3) P100(n##4) P100(n##5) P100(n##6) P100(n##7) P100(n##8) P100(n##9)
static long (*const fns[])(long) = { P1000(1) P1000(2) P1000(3) P1000(4) P1000(5) };
#define NFUNCS (sizeof(fns) / sizeof(fns[0]))

static atomic_long hits;
static void count(const struct djp_hit *hit, void *data)
{
	(void)hit;
	(void)data;
	atomic_fetch_add_explicit(&hits, 1, memory_order_relaxed);
}

static long run_all(long x)
{
	long s = 0;
	for (size_t i = 0; i < NFUNCS; i++)
		s += fns[i](x + (long)i);
	return s;
}

/* function("*") over python3.11, timed in its process: the best of three
 * runs (a run that waits for a core is the machine's, not the arming's);
 * `mode` is pyarm.c's: a probe that counts, or one that reads arguments. */
static void python_row(const char *mode, const char *what, double bound)
{
	char exe[PATH_MAX], cmd[2 * PATH_MAX + 256], line[256];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	double best = -1;
	char lim[32] = "-";

	if (bound > 0)
		snprintf(lim, sizeof(lim), "<= %.0f", bound);
	if (n <= 0 || access("/usr/bin/python3.11", X_OK)) {
		printf("function(\"*\") over python3.11: %s | skipped: no /usr/bin/python3.11 | %s | -\n", what, lim);
		return;
	}
	exe[n] = 0;
	snprintf(cmd, sizeof(cmd),
		 "DJP_AGENT=0 DJP_BENCH_PYARM=%s LD_PRELOAD=%s/../bench-targets/libbench_pyarm.so /usr/bin/python3.11 -c "
		 "pass 2>&1",
		 mode, dirname(exe));
	for (int r = 0; r < 3; r++) {
		FILE *p = popen(cmd, "r");
		double ms;
		while (p && fgets(line, sizeof(line), p))
			if (sscanf(line, "pyarm: armed %lf ms", &ms) == 1 && (best < 0 || ms < best))
				best = ms;
		if (p)
			pclose(p);
	}
	if (best < 0)
		printf("function(\"*\") over python3.11: %s | not run | %s | error\n", what, lim);
	else if (bound > 0)
		printf("function(\"*\") over python3.11: %s | %.1f ms | %s | %s\n", what, best, lim,
		       best <= bound ? "ok" : "over");
	else
		printf("function(\"*\") over python3.11: %s | %.1f ms | - | -\n", what, best);
}

int main(void)
{
	long want = run_all(7), got;
	unsigned jumps = 0;
	double t0, t1, t2;
	int id;

	t0 = now_ns() / 1e6;
	id = djp_connect_at(&(struct djp_point_opts){ .sz = sizeof(struct djp_point_opts), .func = "af_*" }, count, NULL,
			    DJP_GPR_ONLY);
	t1 = now_ns() / 1e6;
	if (id < 0) {
		printf("function(\"*\"): arm %zu functions | not run: connect_at %d | - | error\n", NFUNCS, id);
		return 1;
	}
	for (size_t i = 0; i < NFUNCS; i++)
		jumps += *(const unsigned char *)fns[i] == 0xe9;
	got = run_all(7);
	t2 = now_ns() / 1e6;
	djp_disconnect(id);
	t2 = now_ns() / 1e6 - t2;
	printf("function(\"*\"): arm %zu functions, one connect | %.1f ms | <= 200 | %s\n", NFUNCS, t1 - t0,
	       t1 - t0 <= 200 ? "ok" : "over");
	printf("function(\"*\"): of them armed as jumps | %u | - | -\n", jumps);
	printf("function(\"*\"): disarm them all | %.1f ms | - | -\n", t2);
	python_row("count", "arm its functions for a count, one connect", 200);
	python_row("args", "arm them reading every parameter, one connect", 0);
	printf("function(\"*\"): every function probed: results and hits exact | %s | same | %s\n",
	       got == want && atomic_load(&hits) == (long)NFUNCS ? "same" : "differ",
	       got == want && atomic_load(&hits) == (long)NFUNCS ? "ok" : "error");
	return got == want && atomic_load(&hits) == (long)NFUNCS ? 0 : 1;
}
