/*
 * `djp trace` on a pre-fork workload (bench-targets/forker), side by side in
 * one run:
 *  - a hundred processes hitting a marker 10,000 times a second each (a
 *    million events a second in all) for two seconds, under one tool that
 *    follows every fork and writes every event (to /dev/null): the events
 *    lost, summed over the processes' summaries (target 0).  Median of 3.
 *  - the cost of a recorded hit in a child of fork against its parent's,
 *    each over the same loop untraced (target: the child within 10%).
 *    Median of 5.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"

#define RUNS_MANY 3
#define RUNS_COST 5
#define NPROC 100
#define PER_PROC 20000
#define RATE 10000
#define COST_CALLS 2000000

static char dir[PATH_MAX];

/* Run a shell command; its output (stdout and stderr) in buf. */
static int run(const char *cmd, char *buf, size_t sz)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	if (!p)
		return -1;
	while (n + 1 < sz && fgets(buf + n, (int)(sz - n), p))
		n += strlen(buf + n);
	buf[n] = 0;
	return pclose(p);
}

/* Events and lost events over every process block of a summary. */
static void sum_summary(const char *s, unsigned long long *events, unsigned long long *lost)
{
	*events = *lost = 0;
	while ((s = strstr(s, "djp trace: process "))) {
		unsigned long long e, l;
		const char *c = strstr(s, "): ");
		if (c && sscanf(c, "): %llu events, %llu lost", &e, &l) == 2) {
			*events += e;
			*lost += l;
		}
		s++;
	}
}

static int many(double *lost_out, double *events_out)
{
	static char buf[1 << 20];
	char cmd[3 * PATH_MAX];
	unsigned long long ev, lost;
	snprintf(cmd, sizeof(cmd), "%s/djp trace -c '%s/bench-targets/forker many %d %d %d' -o /dev/null bench_many 2>&1",
		 dir, dir, NPROC, PER_PROC, RATE);
	if (run(cmd, buf, sizeof(buf)))
		return -1;
	sum_summary(buf, &ev, &lost);
	*lost_out = (double)lost;
	*events_out = (double)ev;
	return 0;
}

static int cost(const char *prefix, double *parent, double *child)
{
	char cmd[3 * PATH_MAX], buf[4096];
	const char *p, *c;
	snprintf(cmd, sizeof(cmd), "%s%s/bench-targets/forker cost %d%s 2>/dev/null", prefix, dir, COST_CALLS,
		 *prefix ? "' bench_many" : "");
	if (run(cmd, buf, sizeof(buf)) || !(p = strstr(buf, "parent ns/call ")) || !(c = strstr(buf, "child ns/call ")))
		return -1;
	*parent = atof(p + 15);
	*child = atof(c + 14);
	return 0;
}

int main(void)
{
	char exe[PATH_MAX], traced[2 * PATH_MAX];
	double lost[RUNS_MANY], events[RUNS_MANY], ratio[RUNS_COST], par[RUNS_COST], chi[RUNS_COST];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	double m;

	if (n <= 0)
		return 1;
	exe[n] = 0;
	snprintf(dir, sizeof(dir), "%s/..", dirname(exe));
	for (int r = 0; r < RUNS_MANY; r++)
		if (many(&lost[r], &events[r])) {
			printf("trace: %d processes, 1 M events/s in all, events lost | - | 0 | error\n", NPROC);
			return 1;
		}
	m = median_of(lost, RUNS_MANY);
	printf("trace: %d processes, 1 M events/s in all, events lost (of %.0f) | %.0f | 0 | %s\n", NPROC,
	       median_of(events, RUNS_MANY) + m, m, m == 0 ? "ok" : "over");

	snprintf(traced, sizeof(traced), "%s/djp trace -o /dev/null -c '", dir);
	for (int r = 0; r < RUNS_COST; r++) {
		double p0, c0, p1, c1;
		if (cost("", &p0, &c0) || cost(traced, &p1, &c1)) {
			printf("trace: recorded hit in a child of fork / in its parent | - | <= 1.10 | error\n");
			return 1;
		}
		par[r] = p1 - p0;
		chi[r] = c1 - c0;
		ratio[r] = chi[r] / par[r];
	}
	m = median_of(ratio, RUNS_COST);
	printf("trace: recorded hit, ns over the loop: parent | %.2f | - | -\n", median_of(par, RUNS_COST));
	printf("trace: recorded hit, ns over the loop: child of fork | %.2f | - | -\n", median_of(chi, RUNS_COST));
	printf("trace: recorded hit in a child of fork / in its parent | %.3f | <= 1.10 | %s\n", m,
	       m <= 1.10 ? "ok" : "over");
	return 0;
}
