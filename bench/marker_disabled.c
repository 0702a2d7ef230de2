/*
 * What a disabled marker costs.  Two loops call a noinline function: in one
 * the function holds a 2-argument MARK, in the other a plain 6-byte NOP
 * with no operands.  A disabled marker is meant to be exactly that NOP, so
 * the two must run at the same speed.  Timing: one process, the two loops
 * interleaved run by run (so frequency changes and noise hit both alike),
 * the median of each taken, their ratio reported against the 1.02 target.
 * Both functions and both loops are 64-byte aligned so that code placement
 * does not decide the result.
 *
 * The exact claim, one instruction per pass, is measured by counting rather
 * than timing: the program runs itself under callgrind with N and 2N passes
 * of the marker loop and of a loop around an empty function, so start-up
 * costs cancel in the difference, and reports instructions per pass added
 * by the marker.  Without valgrind that row says so.
 *
 * Output: rows "name | value | target | status" for bench/run.sh.  The
 * status is "ok" or "over"; a loaded machine gives "over", never a failure.
 */
#include <djprobe/marker.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"


ALIGNED void with_marker(int a, long b)
{
	MARK(bench_disabled, "a=%d b=%ld", a, b);
}

ALIGNED void with_nop(int a, long b)
{
	(void)a;
	(void)b;
	__asm__ __volatile__(".byte 0x66,0x0f,0x1f,0x44,0x00,0x00");
}

ALIGNED void with_nothing(int a, long b)
{
	(void)a;
	(void)b;
	__asm__ __volatile__("");
}





/* Total instructions of `self --count N which` under callgrind; -1 if it
 * cannot be measured. */
static long long callgrind_ir(const char *self, const char *which, long n)
{
	char out[] = "/tmp/djp-bench-cg-XXXXXX", cmd[4096], nbuf[32];
	int fd = mkstemp(out);
	if (fd < 0)
		return -1;
	close(fd);
	snprintf(nbuf, sizeof(nbuf), "%ld", n);
	snprintf(cmd, sizeof(cmd),
		 "valgrind --tool=callgrind --callgrind-out-file=%s %s --count %s %s >/dev/null 2>&1", out, self, nbuf,
		 which);
	long long ir = -1;
	if (system(cmd) == 0) {
		FILE *f = fopen(out, "r");
		char line[512];
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "summary:", 8) || !strncmp(line, "totals:", 7))
				ir = strtoll(strchr(line, ':') + 1, NULL, 10);
		if (f)
			fclose(f);
	}
	unlink(out);
	return ir;
}

int main(int argc, char **argv)
{
	const long n = 20 * 1000 * 1000;
	enum { RUNS = 11 };
	double mark[RUNS], nop[RUNS];

	if (argc == 4 && !strcmp(argv[1], "--count")) {
		fn_t fn = !strcmp(argv[3], "marker") ? with_marker : with_nothing;
		loop(fn, atol(argv[2]));
		return 0;
	}

	loop(with_marker, n / 10); /* warm up */
	loop(with_nop, n / 10);
	for (int r = 0; r < RUNS; r++) {
		double t0 = now_ns();
		loop(r & 1 ? with_nop : with_marker, n);
		double t1 = now_ns();
		loop(r & 1 ? with_marker : with_nop, n);
		double t2 = now_ns();
		mark[r] = (r & 1 ? t2 - t1 : t1 - t0) / n;
		nop[r] = (r & 1 ? t1 - t0 : t2 - t1) / n;
	}
	qsort(mark, RUNS, sizeof(double), cmp_double);
	qsort(nop, RUNS, sizeof(double), cmp_double);
	double ratio = mark[RUNS / 2] / nop[RUNS / 2];
	printf("disabled MARK(2 args), ns per call (median of %d) | %.3f | - | -\n", RUNS, mark[RUNS / 2]);
	printf("plain 6-byte NOP, ns per call (median of %d) | %.3f | - | -\n", RUNS, nop[RUNS / 2]);
	printf("disabled MARK / NOP time ratio | %.4f | <= 1.02 | %s\n", ratio, ratio <= 1.02 ? "ok" : "over");

	const long cn = 100000;
	long long m1 = callgrind_ir(argv[0], "marker", cn), m2 = callgrind_ir(argv[0], "marker", 2 * cn);
	long long e1 = callgrind_ir(argv[0], "empty", cn), e2 = callgrind_ir(argv[0], "empty", 2 * cn);
	if (m1 < 0 || m2 < 0 || e1 < 0 || e2 < 0) {
		printf("instructions per pass added by a disabled MARK | n/a (no valgrind) | == 1 | skipped\n");
		return 0;
	}
	double delta = (double)((m2 - m1) - (e2 - e1)) / cn;
	printf("instructions per pass added by a disabled MARK (callgrind) | %.3f | == 1 | %s\n", delta,
	       delta > 0.999 && delta < 1.001 ? "ok" : "over");
	return 0;
}
