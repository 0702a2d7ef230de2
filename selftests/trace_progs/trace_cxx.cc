/*
 * A C++ target whose exceptions fire libstdc++'s SDT probes
 * (libstdcxx:throw, libstdcxx:catch), for the provider-pattern tests.  It
 * has one djprobe marker of its own (cxx_ready); built with
 * -DTRACE_CXX_SDT_ONLY (trace_cxx_sdt) it has none, as a program that only
 * links a library with SDT probes.  It prints "ready PID", then reads
 * commands from stdin:
 *
 *   throw N    throw and catch N exceptions: "thrown N"
 *   deep N D   N times: an exception thrown D + 1 calls of cxx_deep down,
 *              through each of their frames (whose destructors run), and
 *              caught in cxx_catches; then cxx_deep called D + 1 deep
 *              returning normally: "deep N caught C dtors K sum S"
 *
 * and exits at end of input.
 */
#include <djprobe/marker.h>
#include <stdio.h>
#include <unistd.h>

/* The unwinding tests' functions (return probes divert their returns,
 * and the unwinder must still find every frame). */
static long dtors;
struct counted {
	~counted() { dtors++; }
};

__attribute__((noinline)) long cxx_deep(long d, bool do_throw)
{
	counted c;
	if (!d) {
		if (do_throw)
			throw d;
		return 0;
	}
	long r = cxx_deep(d - 1, do_throw);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

__attribute__((noinline)) long cxx_catches(long d)
{
	try {
		return cxx_deep(d, true);
	} catch (long) {
		return -1;
	}
}

int main()
{
	char line[128];
	long n, depth;
#ifndef TRACE_CXX_SDT_ONLY
	MARK(cxx_ready);
#endif
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		if (sscanf(line, "throw %ld", &n) == 1) {
			long caught = 0;
			for (long i = 0; i < n; i++) {
				try {
					throw i;
				} catch (long v) {
					caught += v == i;
				}
			}
			printf("thrown %ld\n", caught);
		} else if (sscanf(line, "deep %ld %ld", &n, &depth) == 2) {
			long caught = 0, sum = 0;
			dtors = 0;
			for (long i = 0; i < n; i++) {
				caught += cxx_catches(depth) == -1;
				sum += cxx_deep(depth, false);
			}
			printf("deep %ld caught %ld dtors %ld sum %ld\n", n, caught, dtors, sum);
		}
	}
	return 0;
}
