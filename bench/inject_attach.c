/*
 * `djp trace -x` on a process that does not have the agent: the time from
 * starting the tool to the first event it prints, which covers loading
 * libdjprobe.so into the target through ptrace (tools/djp/attach/inject.c), the
 * session and arming.  The target (bench-targets/threads) has 50 idle
 * threads and fires its marker every 100 us; a fresh one is started for
 * each run, since a process keeps the agent once it has it.  Median of 5
 * (target 100 ms).
 */
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

#define RUNS 5

static char dir[PATH_MAX];

/* Start argv with stdout on a pipe; *out gets its read end. */
static pid_t start(char *const argv[], FILE **out)
{
	int p[2];
	pid_t pid;
	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(p[1], 1);
		if (null >= 0)
			dup2(null, 2); /* the tool's summary */
		close(p[0]);
		close(p[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	*out = fdopen(p[0], "r");
	return pid;
}

/* ms from starting djp trace -x to its first event, or -1 */
static double one_run(void)
{
	char target[PATH_MAX + 32], djp[PATH_MAX + 8], line[512], spid[16];
	FILE *tout, *dout;
	pid_t t, d;
	double t0, ms = -1;

	snprintf(target, sizeof(target), "%s/bench-targets/threads", dir);
	snprintf(djp, sizeof(djp), "%s/djp", dir);
	if ((t = start((char *const[]){ target, NULL }, &tout)) < 0 || !fgets(line, sizeof(line), tout))
		return -1;
	snprintf(spid, sizeof(spid), "%d", (int)t);
	t0 = now_ns();
	if ((d = start((char *const[]){ djp, "trace", "-x", spid, "bench_tick", NULL }, &dout)) > 0) {
		if (fgets(line, sizeof(line), dout) && strstr(line, "bench_tick"))
			ms = (now_ns() - t0) / 1e6;
		kill(d, SIGINT);
		while (fgets(line, sizeof(line), dout))
			;
		waitpid(d, NULL, 0);
		fclose(dout);
	}
	kill(t, SIGKILL);
	waitpid(t, NULL, 0);
	fclose(tout);
	return ms;
}

int main(void)
{
	char exe[PATH_MAX];
	double v[RUNS], m;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return 1;
	exe[n] = 0;
	snprintf(dir, sizeof(dir), "%s/..", dirname(exe));
	for (int r = 0; r < RUNS; r++)
		if ((v[r] = one_run()) < 0) {
			printf("inject: djp trace -x, no agent, 50 threads: start to first event | - | <= 100 ms | error\n");
			return 1;
		}
	m = median_of(v, RUNS);
	printf("inject: djp trace -x, no agent, 50 threads: start to first event | %.1f ms | <= 100 ms | %s\n", m,
	       m <= 100 ? "ok" : "over");
	return 0;
}
