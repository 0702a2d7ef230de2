/*
 * A C++ target whose exceptions fire libstdc++'s SDT probes
 * (libstdcxx:throw, libstdcxx:catch), for the provider-pattern tests.  It
 * has one djprobe marker of its own (cxx_ready); built with
 * -DTRACE_CXX_SDT_ONLY (trace_cxx_sdt) it has none, as a program that only
 * links a library with SDT probes.  It prints "ready PID", then reads
 * commands from stdin:
 *
 *   throw N    throw and catch N exceptions: "thrown N"
 *
 * and exits at end of input.
 */
#include <djprobe/marker.h>
#include <stdio.h>
#include <unistd.h>

int main()
{
	char line[128];
	long n;
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
		}
	}
	return 0;
}
